"""Faults and hostile input, end to end through the console script: outputs that cannot be written, inputs that
never end, option values at their limits, low memory, signals.  Every case ends with a documented exit code and a
one-line message -- never exit 1, a traceback, a death by signal -- and leaves no output, half or whole."""

from __future__ import annotations

import gzip
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.spark_runner.cli.test_cli import REPO, kassign

EXAMPLES = REPO / "examples"
ORDERS = EXAMPLES / "orders-group.json"
EXE = Path(sys.executable).parent / "kassign"
CMD = [str(EXE)] if EXE.exists() else [sys.executable, "-m", "spark_runner"]


def _clean(r: subprocess.CompletedProcess[str], *codes: int) -> None:
    assert r.returncode in codes, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-2000:]


def _files(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def weighted_group(partitions: int, members: int, seed: int = 7) -> dict[str, object]:
    """Lognormal loads, scattered owners: the exact engine works on it for its whole time limit."""
    rng = np.random.default_rng(seed)
    w = np.round(rng.lognormal(0.0, 1.0, partitions) * 1000).clip(1).astype(int).tolist()
    owned: list[list[int]] = [[] for _ in range(members + 5)]
    for p in range(partitions):
        owned[int(rng.integers(members + 5))].append(p)
    return {"format": "kassign/v1", "name": "busy", "topics": {"T": {"partitions": partitions, "weights": w}},
            "members": [{"id": f"m{i:03d}", "topics": ["T"], "owned": {"T": owned[i]}, "generation": 1}
                        for i in range(members)]}


# --------------------------------------------------------------------------- outputs


@pytest.fixture
def places(tmp_path: Path) -> Path:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    return tmp_path


UNWRITABLE = {  # name -> (path below the test directory, exit code, what the message says)
    "a directory": ("dir", 2, "is a directory; give a file name"),
    "newdir/": ("newdir/", 2, "is a directory; give a file name"),
    "below a regular file": ("file/out", 73, "Not a directory"),
    "a symlink loop": ("l1", 73, "Too many levels of symbolic links"),
    "a name too long": ("a" * 300, 73, "File name too long"),
}


@pytest.mark.parametrize("case", sorted(UNWRITABLE))
@pytest.mark.parametrize("command", ["assign", "frontier -o", "frontier --plot", "plan --plot", "decode -o"])
def test_unwritable_outputs_fail_before_any_work_and_write_nothing(places: Path, case: str, command: str) -> None:
    rel, code, message = UNWRITABLE[case]
    target = f"{places}/{rel}"
    args = {"assign": ["assign", str(ORDERS), "-a", "range", "-o", target],
            "frontier -o": ["frontier", str(ORDERS), "-o", target],
            "frontier --plot": ["frontier", str(ORDERS), "--plot", target],
            "plan --plot": ["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000", "--plot", target],
            "decode -o": ["decode-subscription", str(EXAMPLES / "subscriptions" / "host-a-thread-1.bin"), "-o",
                          target]}[command]
    before = _files(places)
    r = kassign(*args)
    _clean(r, code)
    assert message in r.stderr and (target in r.stderr or target.rstrip("/") in r.stderr), r.stderr
    assert r.stderr.count("\n") == 1
    assert _files(places) == before  # no file named newdir, no temporary, no 0-byte PNG


def test_invalid_input_leaves_no_output(tmp_path: Path) -> None:
    out, png = tmp_path / "out.json", tmp_path / "f.png"
    for args in (["assign", str(EXAMPLES / "bad-instance.json"), "-a", "range", "-o", str(out)],
                 ["frontier", str(EXAMPLES / "bad-instance.json"), "-o", str(out), "--plot", str(png)]):
        _clean(kassign(*args), 65)
    assert _files(tmp_path) == []


@pytest.mark.parametrize("args", [["frontier", str(ORDERS), "--points", "3", "-o", "{d}/same.png", "--plot",
                                   "{d}/./same.png"],
                                  ["capture", "--bootstrap-server", "127.0.0.1:1", "--group", "g", "-o", "{d}/a.json",
                                   "--current", "{d}/link.json"]], ids=["frontier", "capture"])
def test_two_outputs_naming_one_file_are_exit_2_before_any_work(tmp_path: Path, args: list[str]) -> None:
    """Was: the second file was published over the first, then exit 73 saying nothing was written."""
    (tmp_path / "link.json").symlink_to(tmp_path / "a.json")
    r = kassign(*[a.format(d=tmp_path) for a in args])
    _clean(r, 2)
    assert r.stderr.strip().endswith("name the same file; give each its own"), r.stderr
    assert _files(tmp_path) == ["link.json"]


def test_validate_names_inputs_that_cannot_be_read(places: Path) -> None:
    """Was exit 1: validate asked Path.exists(), which raises for a name too long."""
    long = places / ("a" * 300 + ".json")
    r = kassign("validate", str(long), str(places / "l1"), str(places / "nope.jsonl"), str(ORDERS))
    _clean(r, 66)  # a missing file wins, as documented
    assert r.stderr.splitlines()[:3] == [f"{long}: cannot read: File name too long",
                                         f"{places / 'l1'}: cannot read: Too many levels of symbolic links",
                                         f"{places / 'nope.jsonl'}: no such file"]
    assert r.stdout == f"{ORDERS}: valid (consumer, 4 members, 3 topics, 12 partitions)\n"
    _clean(kassign("validate", str(long)), 65)


def test_an_empty_sweep_out_is_a_usage_error() -> None:
    r = kassign("sweep", str(EXAMPLES / "sweep-small.yaml"), "--out", "", "--dry-run")
    _clean(r, 2)
    assert r.stderr.strip() == "error: --out must name a directory (it is empty)"


@pytest.mark.parametrize(("out", "reason"), [
    ("file", "exists and is not a directory (--out names a directory)"), ("file/x", "Not a directory"),
    ("l1", "Too many levels of symbolic links"), ("a" * 300, "File name too long"),
    ("dangling", "a symbolic link to a directory that does not exist"),
    ("/dev/null", "exists and is not a directory (--out names a directory)"),
])
@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "run"])
def test_a_sweep_out_that_cannot_be_a_directory_is_exit_73_before_spark(places: Path, out: str, reason: str,
                                                                         dry: bool) -> None:
    """Was: a name too long was exit 1 (an OSError from Path.exists), a link loop or a dangling link passed."""
    (places / "dangling").symlink_to(places / "nowhere" / "x")
    before = _files(places)
    target = out if out.startswith("/") else str(places / out)
    r = kassign("sweep", str(EXAMPLES / "sweep-small.yaml"), "--out", target, *(["--dry-run"] if dry else []))
    _clean(r, 73)
    assert r.stderr.startswith(f"error: cannot write {target}: {reason}"), r.stderr
    assert _files(places) == before


def test_report_of_a_directory_that_cannot_be_read_is_65_or_66(places: Path) -> None:
    long = places / ("a" * 300)
    r = kassign("report", str(long))
    _clean(r, 65)
    assert r.stderr.strip() == f"{long}: cannot read: File name too long"
    _clean(kassign("report", str(places / "l1")), 65)
    _clean(kassign("report", str(places / "nowhere")), 66)
    junk = places / "dir" / "rows" / "assignor=range"
    junk.mkdir(parents=True)
    (junk / "part-0.parquet").write_text("not parquet")
    for args in (["report", str(places / "dir")],
                 ["sweep", str(EXAMPLES / "sweep-small.yaml"), "--out", str(places / "dir"), "--dry-run"]):
        r = kassign(*args)
        _clean(r, 65)
        # every part's schema is checked first (issue 34): the message names the part that is not rows
        assert r.stderr.startswith(f"{junk / 'part-0.parquet'}: not a Parquet file of sweep rows"), r.stderr


def test_an_unknown_plot_format_is_a_usage_error(tmp_path: Path) -> None:
    r = kassign("frontier", str(ORDERS), "--plot", str(tmp_path / "f.xyz"))
    _clean(r, 2)
    assert "unknown plot format '.xyz'" in r.stderr and _files(tmp_path) == []


@pytest.mark.parametrize("args", [["list"], ["assign", str(ORDERS), "-a", "range"],
                                  ["compare", str(ORDERS), "--json", "--assignors", "range"]])
def test_stdout_on_dev_full_is_exit_74(args: list[str]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        r = subprocess.run([*CMD, *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300, cwd=REPO)
    _clean(r, 74)
    assert r.stderr.strip().endswith("error: cannot write stdout: No space left on device (what was written before "
                                     "may be incomplete)"), r.stderr


def test_a_closed_stdout_pipe_is_a_quiet_exit_141() -> None:
    p = subprocess.Popen([*CMD, "list", "--format", "tsv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=REPO)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.close()  # the reader goes away before kassign writes
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 141 and err == ""


def _sh(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300, cwd=REPO)


@pytest.mark.parametrize("args", [["list"], ["assign", str(ORDERS), "-a", "range"], ["--version"]])
@pytest.mark.parametrize("how", [">&-", "1</dev/null"], ids=["closed", "read-only"])
def test_a_stdout_that_cannot_be_written_is_exit_74(args: list[str], how: str) -> None:
    """Was: a closed stdout (sys.stdout None) was exit 1 with a traceback; a read-only one exit 73."""
    r = _sh(f"exec {' '.join(CMD)} {' '.join(args)} {how}")
    _clean(r, 74)
    assert r.stderr == "error: cannot write stdout: Bad file descriptor (what was written before may be incomplete)\n"


def test_closed_standard_descriptors_are_never_taken_by_an_output_file(tmp_path: Path) -> None:
    """With fd 1 and 2 closed, the temporary file of ``-o`` would get one of them (and every diagnostic of a
    library); /dev/null holds them instead."""
    out = tmp_path / "out.json"
    r = _sh(f"exec {' '.join(CMD)} assign {ORDERS} -a range -o {out} >&- 2>&-")
    _clean(r, 0)
    assert json.loads(out.read_text())["assignor"] == "range"


@pytest.mark.parametrize(("args", "code"), [(["assign", str(ORDERS), "-a", "range", "-o", "{d}/o.json"], 0),
                                            (["validate", str(EXAMPLES / "bad-instance.json")], 65),
                                            (["compare", str(ORDERS), "--time-limit", "1"], 0)])
def test_a_stderr_that_cannot_be_written_changes_nothing(tmp_path: Path, args: list[str], code: int) -> None:
    """Was: exit 1 when a diagnostic could not be written (``2>/dev/full``)."""
    r = _sh(f"{' '.join(CMD)} {' '.join(a.format(d=tmp_path) for a in args)} 2>/dev/full >/dev/null; echo rc=$?")
    assert r.stdout.strip() == f"rc={code}"


@pytest.mark.parametrize("name", [b"out\xff.json", b"\xfe\xff", b"\xff" * 250])
def test_output_names_that_are_not_utf8_are_written(tmp_path: Path, name: bytes) -> None:
    """Was: exit 1 (UnicodeEncodeError measuring the name for the temporary file's)."""
    target = os.path.join(os.fsencode(tmp_path), name)
    r = subprocess.run([*CMD, "assign", str(ORDERS), "-a", "range", "-o", os.fsdecode(target)], capture_output=True,
                       text=True, timeout=300, cwd=REPO)
    _clean(r, 0)
    assert json.loads(Path(os.fsdecode(target)).read_text())["assignor"] == "range"
    assert os.listdir(os.fsencode(tmp_path)) == [name]


def _big_instance(tmp_path: Path) -> Path:
    f = tmp_path / "big.json"
    f.write_text(json.dumps({"format": "kassign/v1", "topics": {f"T{i}": 2000 for i in range(20)},
                             "members": [{"id": f"c{i}", "topics": [f"T{j}" for j in range(20)]}
                                         for i in range(50)]}))
    return f


def test_a_file_size_limit_is_exit_74_and_keeps_the_previous_output(tmp_path: Path) -> None:
    """``ulimit -f``: the unprivileged stand-in for a full disk (the write fails with EFBIG, SIGXFSZ is ignored)."""
    out = tmp_path / "out.json"
    out.write_text("previous")
    big = _big_instance(tmp_path)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))

    r = subprocess.run([*CMD, "assign", str(big), "-a", "range", "-o", str(out)], capture_output=True, text=True,
                       timeout=300, cwd=REPO, preexec_fn=limit)
    _clean(r, 74)
    assert f"cannot write {out}: File too large" in r.stderr
    assert out.read_text() == "previous" and _files(tmp_path) == ["big.json", "out.json"]


def test_a_full_tmpfs_is_exit_74_and_keeps_the_previous_output(tmp_path: Path) -> None:
    """A real full disk: a 64 KiB tmpfs mounted in a user and mount namespace (``unshare -rm``), where the
    kernel allows unprivileged ones; otherwise skipped (the file size limit above covers the same path)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare")
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k none {tmp_path}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.strip()}")
    big = _big_instance(tmp_path)
    disk = tmp_path / "disk"
    disk.mkdir()
    script = (f"mount -t tmpfs -o size=64k none {disk} && echo previous > {disk}/out.json && "
              f"{' '.join(CMD)} assign {big} -a range -o {disk}/out.json; echo rc=$?; "
              f"cat {disk}/out.json; ls -A {disk}")
    r = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=300,
                       cwd=REPO)
    assert "rc=74" in r.stdout, (r.stdout, r.stderr)
    assert f"cannot write {disk}/out.json: No space left on device" in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout.splitlines()[1:] == ["previous", "out.json"]  # the old file, and no temporary beside it


# --------------------------------------------------------------------------- inputs


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
@pytest.mark.parametrize("name", ["in.json", "in.yaml", "in.jsonl"])
def test_endless_devices_are_refused_at_once(tmp_path: Path, device: str, name: str) -> None:
    link = tmp_path / name
    link.symlink_to(device)
    t0 = time.monotonic()
    for args in (["validate", str(link)], ["assign", str(link), "-a", "range"]):
        r = kassign(*args)
        _clean(r, 65)
        assert r.stderr.startswith(f"{link}: ")
    assert time.monotonic() - t0 < 60


def test_stdin_from_dev_zero_is_refused() -> None:
    with open("/dev/zero", "rb") as zero:
        r = subprocess.run([*CMD, "validate", "-"], stdin=zero, capture_output=True, text=True, timeout=120,
                           cwd=REPO)
    _clean(r, 65)
    assert r.stderr.startswith("-: a NUL byte at offset 0")


@pytest.fixture(scope="module")
def bomb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1 GiB of blank lines in about 1 MB of gzip."""
    f = tmp_path_factory.mktemp("bomb") / "bomb.jsonl.gz"
    with gzip.open(f, "wb", compresslevel=9) as out:
        chunk = b" " * ((1 << 20) - 1) + b"\n"
        for _ in range(1024):
            out.write(chunk)
    return f


def _peak(args: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], int]:
    """Run kassign under a fresh wrapper process; return the result and kassign's peak memory (KiB)."""
    wrapper = ("import resource, subprocess, sys, json\n"
               "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "print(json.dumps([r.returncode, r.stderr, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))\n")
    out = subprocess.run([sys.executable, "-c", wrapper, *CMD, *args], capture_output=True, text=True, timeout=300,
                         cwd=REPO, env=env)
    code, err, peak = json.loads(out.stdout)
    return subprocess.CompletedProcess(args, code, "", err), peak


def test_a_gzip_bomb_stops_at_the_input_limit(bomb: Path) -> None:
    t0 = time.monotonic()
    r, peak = _peak(["validate", str(bomb)])
    _clean(r, 65)
    assert f"{bomb}: after line 64: more than 64.0 MB of text (the input limit" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 60 and peak < 1 << 20  # under 1 GiB: the bomb was not expanded


def test_raising_the_input_limit_reads_further(bomb: Path) -> None:
    r, _ = _peak(["validate", str(bomb)], env={**os.environ, "KASSIGN_INPUT_LIMIT": "2M"})
    _clean(r, 65)
    assert "after line 2: more than 2.0 MB of text" in r.stderr


@pytest.mark.parametrize("damage", ["truncated", "bad-crc", "trailing-garbage"])
def test_broken_gzip_batches_are_format_errors(tmp_path: Path, damage: str) -> None:
    line = json.dumps({"format": "kassign/v1", "topics": {"T": 4}, "members": [{"id": "a", "topics": ["T"]}]})
    good = gzip.compress((line + "\n").encode() * 200)
    data = {"truncated": good[: len(good) - 20], "bad-crc": good[:-8] + bytes([good[-8] ^ 1]) + good[-7:],
            "trailing-garbage": good + b"\x00garbage"}[damage]
    f = tmp_path / "batch.jsonl.gz"
    f.write_bytes(data)
    out = tmp_path / "out.jsonl"
    for args in (["validate", str(f)], ["assign", str(f), "-a", "range", "-o", str(out)]):
        r = kassign(*args)
        _clean(r, 65)
        assert "not a valid gzip file" in r.stderr and str(f) in r.stderr
    assert not out.exists()


# --------------------------------------------------------------------------- option values


HOSTILE_OPTIONS = [
    ["assign", str(ORDERS), "-a", "optimal", "--balance-tolerance", "1e308"],
    ["assign", str(ORDERS), "-a", "optimal", "--balance-tolerance", "nan"],
    ["assign", str(ORDERS), "-a", "optimal", "--balance-tolerance", "-1"],
    ["assign", str(ORDERS), "-a", "optimal", "--time-limit", "1e308"],
    ["assign", str(ORDERS), "-a", "optimal", "--time-limit", "-0"],
    ["assign", str(ORDERS), "-a", "optimal", "-O", "workers=1e400"],
    ["assign", str(ORDERS), "-a", "optimal", "-O", "workers=" + "9" * 5000],
    ["assign", str(ORDERS), "-a", "optimal", "-O", "workers=" + "[" * 5000 + "]" * 5000],
    ["assign", str(ORDERS), "-a", "optimal", "-O", "max_vars=99999999999999"],
    ["assign", str(ORDERS), "-a", "optimal", "-O", "workers=1", "-O", "workers=2"],
    ["assign", str(ORDERS), "-a", "optimal", "--objective", "weighted:balance=1e308"],
    ["assign", str(ORDERS), "-a", "cooperative-sticky", "--settle", "-O", "settle=false"],
    ["assign", str(ORDERS), "-a", "cooperative-sticky", "-O", "rounds=settle", "-O", "settle=0"],
    ["assign", str(EXAMPLES / "streams-app.json"), "-a", "optimal-streams", "-O", "full_restore_lag=1e30"],
    ["compare", str(ORDERS), "--balance-tolerance", "inf"],
    ["score", str(ORDERS), str(ORDERS), "--time-limit", "nan"],
    ["frontier", str(ORDERS), "--points", "1000000000"],
    *[["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", v] for v in
      ("0", "-0", "1e308", "inf", "nan", "-5", "5e-324", "1e-310")],
    ["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000", "--active-load", "1e308"],
    ["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000", "--new-capacity", "0"],
    ["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000", "--catch-up-seconds", "inf"],
    ["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000", "--lag-threshold", "nan"],
    ["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000", "--resilience", "1000"],
    ["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000", "--resilience", "8", "--range", "3:8"],
    ["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000", "--range", "1:99999999999"],
    ["sweep", str(EXAMPLES / "sweep-small.yaml"), "--out", "/tmp/x", "--dry-run", "--progress-every", "inf"],
    ["sweep", str(EXAMPLES / "sweep-small.yaml"), "--out", "/tmp/x", "--dry-run", "--batch-size", "0"],
    ["capture", "--bootstrap-server", "127.0.0.1:1", "--group", "g", "--timeout", "nan"],
    ["decode-subscription", str(EXAMPLES / "subscriptions" / "host-a-thread-1.bin"), "--acceptable-recovery-lag",
     str(2**64)],
]


@pytest.mark.parametrize("args", HOSTILE_OPTIONS, ids=lambda a: " ".join(a[:1] + a[3:])[:60])
def test_option_values_out_of_range_are_usage_errors(args: list[str]) -> None:
    t0 = time.monotonic()
    r = kassign(*args)
    _clean(r, 2)
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize(("value", "code"), [("abc", 2), ("0", 2), ("12", 2), ("9" * 40 + "T", 2), ("1P", 0),
                                             ("4G", 0)])
def test_memory_limit_variable(value: str, code: int) -> None:
    r = subprocess.run([*CMD, "assign", str(ORDERS), "-a", "optimal"], capture_output=True, text=True, timeout=300,
                       cwd=REPO, env={**os.environ, "KASSIGN_MEMORY_LIMIT": value})
    _clean(r, code)
    if code:
        assert r.stderr.startswith("error: KASSIGN_MEMORY_LIMIT="), r.stderr


def test_score_refuses_another_format_version(tmp_path: Path) -> None:
    asg = tmp_path / "asg.json"
    asg.write_text(json.dumps({"format": "kassign/v2", "assignor": "range", "assignment": {"C1": {}}}))
    r = kassign("score", str(ORDERS), str(asg), "--no-gaps")
    _clean(r, 65)
    assert r.stderr.strip() == f"{asg}: format: expected 'kassign/v1'"


@pytest.mark.parametrize("inst", [ORDERS, EXAMPLES / "streams-app.json"], ids=["consumer", "streams"])
@pytest.mark.parametrize("fmt", [None, "", 1, "KASSIGN/V1"])
def test_score_refuses_a_format_that_is_given_and_not_v1(tmp_path: Path, inst: Path, fmt: object) -> None:
    asg = tmp_path / "asg.json"
    asg.write_text(json.dumps({"format": fmt, "assignor": "x", "assignment": {}}))
    r = kassign("score", str(inst), str(asg), "--no-gaps")
    _clean(r, 65)
    assert r.stderr.strip() == f"{asg}: format: expected 'kassign/v1'"


@pytest.fixture(scope="module")
def clickstream_optimum(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    out = tmp_path_factory.mktemp("opt") / "opt.json"
    r = kassign("assign", str(EXAMPLES / "clickstream-group.json"), "-a", "optimal", "-o", str(out))
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text())  # type: ignore[no-any-return]


@pytest.mark.parametrize(("stats", "message"), [
    (None, "stats: must be an object, got NoneType"), ([], "stats: must be an object, got list"),
    ("x", "stats: must be an object, got str"),
    ({"objective": 5}, "stats.objective: Input should be a valid list"),
    ({"seconds": "x"}, "stats.seconds: Input should be a valid number"),
    ({"seconds": [1]}, "stats.seconds: Input should be a valid number"),
    ({"stages": 5}, "stats.stages: Input should be a valid list"),
    ({"status": 3}, "stats.status: Input should be a valid string"),
])
def test_score_optimum_with_bad_stats_is_exit_65_naming_the_path(tmp_path: Path, clickstream_optimum: dict[str, object],
                                                                 stats: object, message: str) -> None:
    opt = tmp_path / "opt.json"
    opt.write_text(json.dumps({**clickstream_optimum, "stats": stats}))
    r = kassign("score", str(EXAMPLES / "clickstream-group.json"), str(opt), "--optimum", str(opt), "--no-cache")
    _clean(r, 65)
    assert r.stderr.strip().startswith(f"{opt}: {message}"), r.stderr


def test_score_optimum_is_measured_from_its_assignment_not_its_stated_objective(
        tmp_path: Path, clickstream_optimum: dict[str, object]) -> None:
    """A stated objective that contradicts the assignment (edited, or of another instance) cannot make a wrong gap."""
    inst = str(EXAMPLES / "clickstream-group.json")
    rr = tmp_path / "range.json"
    assert kassign("assign", inst, "-a", "range", "-o", str(rr)).returncode == 0
    honest = tmp_path / "honest.json"
    honest.write_text(json.dumps(clickstream_optimum))
    stats = dict(clickstream_optimum["stats"])  # type: ignore[call-overload]
    stats["objective"] = [0.0 for _ in stats["objective"]]
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({**clickstream_optimum, "stats": stats}))
    a = kassign("score", inst, str(rr), "--optimum", str(honest), "--no-cache", "--json")
    b = kassign("score", inst, str(rr), "--optimum", str(forged), "--no-cache", "--json")
    _clean(a, 0)
    _clean(b, 0)
    assert json.loads(a.stdout) == json.loads(b.stdout)
    assert json.loads(b.stdout)["max_load_gap"] == 14_500_000


# --------------------------------------------------------------------------- memory


def _under_ulimit_v(args: list[str], megabytes: int) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))

    return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=600, cwd=REPO, preexec_fn=limit)


def test_a_512_mib_address_space_runs_small_instances_and_refuses_large_ones(tmp_path: Path) -> None:
    """``ulimit -v 512M``: the examples solve; a weighted group too large is refused (65), not std::bad_alloc."""
    busy = tmp_path / "busy.json"
    busy.write_text(json.dumps(weighted_group(10_000, 200)))
    for args in (["assign", str(ORDERS), "-a", "optimal"],
                 ["assign", str(EXAMPLES / "streams-app.json"), "-a", "optimal-streams"],
                 ["plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000"],
                 ["compare", str(ORDERS)]):
        _clean(_under_ulimit_v(args, 512), 0)
    r = _under_ulimit_v(["assign", str(busy), "-a", "optimal", "--time-limit", "10"], 512)
    _clean(r, 65)
    assert "needs about" in r.stderr and "is available" in r.stderr


@pytest.mark.parametrize("megabytes", [350, 400])
def test_validation_that_would_run_out_of_memory_is_refused_before_it_starts(tmp_path: Path, megabytes: int) -> None:
    """Was: SIGABRT ("memory allocation of 136 bytes failed": pydantic-core's Rust allocator aborts instead of
    raising) validating 200,000 weights under ulimit -v 350M, with the estimate saying they fit."""
    doc = {"format": "kassign/v1", "topics": {"T": {"partitions": 200_000,
                                                   "weights": [1 + i % 1013 for i in range(200_000)]}},
           "members": [{"id": f"m{i}", "topics": ["T"]} for i in range(300)]}
    f = tmp_path / "hw.json"
    f.write_text(json.dumps(doc))
    r = _under_ulimit_v(["assign", str(f), "-a", "optimal", "--time-limit", "5"], megabytes)
    _clean(r, 65)
    assert r.stderr.startswith(f"{f}: "), r.stderr


@pytest.mark.parametrize("megabytes", [100, 200, 250, 300, 400, 450])
def test_lower_address_space_limits_end_cleanly(megabytes: int) -> None:
    """Was, besides: `list` and `sweep --dry-run` at 200 MB and `report` at 250 MB loaded OR-Tools from the command's
    thread and glibc aborted (exit 127, "cannot allocate memory for thread-local data"); at 100 MB hashlib logged
    a traceback per hash it could not load; an import failing with OSError ENOMEM was exit 1."""
    for args in (["assign", str(ORDERS), "-a", "optimal"], ["validate", str(ORDERS)], ["list"],
                 ["sweep", str(EXAMPLES / "sweep-small.yaml"), "--out", "/nonexistent/o", "--dry-run"],
                 ["report", "/nonexistent/o"]):
        r = _under_ulimit_v(args, megabytes)
        _clean(r, 0, 65, 66, 73)
        assert r.returncode >= 0  # not a death by signal
        assert r.returncode != 65 or "memory" in r.stderr, r.stderr


# --------------------------------------------------------------------------- signals


@pytest.fixture(scope="module")
def busy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    f = tmp_path_factory.mktemp("busy") / "busy.json"
    f.write_text(json.dumps(weighted_group(3000, 60)))
    return f


def _as_a_background_job() -> None:
    """How a shell script starts ``kassign ... &``: SIGINT ignored (and SIGHUP under nohup)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def _interrupt(args: list[str], sig: int, after: float) -> Iterator[float]:
    # started as a script's background job: the stricter case (SIGINT arrives already ignored)
    p = subprocess.Popen([*CMD, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                         preexec_fn=_as_a_background_job)
    try:
        time.sleep(after)
        assert p.poll() is None, "the command ended before the signal"
        t0 = time.monotonic()
        p.send_signal(sig)
        _out, err = p.communicate(timeout=60)
        yield time.monotonic() - t0
        assert p.returncode == 128 + sig, (p.returncode, err)
        assert err.strip() == f"interrupted ({signal.Signals(sig).name}); nothing was written", err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
# while starting up; while CP-SAT searches (on an idle machine the moves stage runs from about 1 s to 4.6 s of the
# process's life and a loaded one only starts it later: at 4 s the signal could come after the last stop point)
@pytest.mark.parametrize("after", [0.3, 2.5])
def test_a_signal_stops_a_solve_within_a_second_and_keeps_the_previous_output(busy: Path, tmp_path: Path,
                                                                               sig: int, after: float) -> None:
    out = tmp_path / "out.json"
    out.write_text("previous")
    for took in _interrupt(["assign", str(busy), "-a", "optimal", "--time-limit", "60", "-o", str(out)], sig,
                           after):
        assert took < 2.0  # the grace is 0.5 s; the rest is a loaded machine's slack
    assert out.read_text() == "previous" and _files(tmp_path) == ["out.json"]


def test_an_inherited_ignore_is_replaced_for_sigint_and_sigterm_and_kept_for_sighup() -> None:
    from spark_runner.cli.signals import takes_over

    assert takes_over(signal.SIGINT, signal.SIG_IGN) and takes_over(signal.SIGTERM, signal.SIG_IGN)
    assert not takes_over(signal.SIGHUP, signal.SIG_IGN)  # nohup
    assert takes_over(signal.SIGINT, signal.default_int_handler) and takes_over(signal.SIGHUP, signal.SIG_DFL)
    assert not takes_over(signal.SIGINT, lambda *_: None)  # a handler the embedding program installed


@pytest.mark.slow
def test_a_signal_stops_compare_and_prints_nothing(busy: Path) -> None:
    p = subprocess.Popen([*CMD, "compare", str(busy), "--time-limit", "60", "--json"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=REPO)
    time.sleep(4)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and out == "" and "Traceback" not in err
