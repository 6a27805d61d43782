"""kassign's parent process (``spark_runner/cli/watchdog.py``): signals end a command even while its thread
keeps the GIL in native code, a worker that dies by a signal is a documented exit code, and exit codes,
outputs and messages are otherwise what the command itself gave."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.spark_runner.cli.test_faults import CMD, EXAMPLES, ORDERS, REPO, _clean, _files

#: Runs the console script with the atomic writer's publish step replaced by a native loop that keeps the GIL
#: (catastrophic backtracking in the regex engine: minutes, no bytecode in between): the temporary file is on
#: disk, the command's thread never lets the main thread run a signal handler.
STUCK = """
import re, sys
import solver.model.files as files

def _stuck(staged):
    re.match(r"(a+)+b", "a" * 64)

files._publish = _stuck
from spark_runner.cli.entry import main
sys.argv[0] = "kassign"
main()
"""

#: Runs the console script with the command's first solve replaced by a native crash (``os.abort``, what
#: ``std::bad_alloc`` escaping a C++ library does).
ABORTS = """
import os, sys
import solver.model.files as files

def _abort(*_a, **_k):
    os.abort()

files.read_document = _abort
from spark_runner.cli.entry import main
sys.argv[0] = "kassign"
main()
"""


def _start(script: str, args: list[str], **kw: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO, **kw)  # type: ignore[call-overload]


def _wait_for_temp(d: Path, p: subprocess.Popen[str]) -> Path:
    for _ in range(1200):
        temps = [f for f in d.iterdir() if f.name.endswith(".tmp")]
        if temps:
            return temps[0]
        assert p.poll() is None, p.communicate()
        time.sleep(0.05)
    raise AssertionError("the command never staged its output")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_a_command_whose_thread_keeps_the_gil(tmp_path: Path, sig: int) -> None:
    out = tmp_path / "out.json"
    out.write_text("previous")
    p = _start(STUCK, ["assign", str(ORDERS), "-a", "range", "-o", str(out)])
    try:
        temp = _wait_for_temp(tmp_path, p)
        worker = int(temp.name.split(".")[-2])  # .out.json.PID.tmp: the worker process's id
        time.sleep(0.3)  # well inside the native loop
        t0 = time.monotonic()
        p.send_signal(sig)
        _, err = p.communicate(timeout=30)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 128 + sig, (p.returncode, err)
    assert err.strip() == f"interrupted ({signal.Signals(sig).name}); nothing was written", err
    assert took < 2.0  # the grace is 0.5 s and the parent's margin 0.5 s; the rest is a loaded machine's slack
    assert out.read_text() == "previous" and _files(tmp_path) == ["out.json"]  # the temporary file removed
    assert not Path(f"/proc/{worker}").exists()  # the stuck worker was killed and reaped


def test_ctrl_c_reaches_the_whole_process_group_and_counts_once(tmp_path: Path) -> None:
    """A terminal's Ctrl-C (or ``timeout``, ``kill -- -PGID``) signals parent and worker together: one stop,
    one message, exit 130 -- not the "second signal" that would skip a sweep's clean stop."""
    out = tmp_path / "out.json"
    p = _start(STUCK, ["assign", str(ORDERS), "-a", "range", "-o", str(out)], start_new_session=True)
    try:
        _wait_for_temp(tmp_path, p)
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130 and err == "interrupted (SIGINT); nothing was written\n", (p.returncode, err)
    assert _files(tmp_path) == []


@pytest.mark.parametrize(("args", "code"), [
    (["validate", str(ORDERS)], 0),
    (["validate", str(EXAMPLES / "bad-instance.json")], 65),
    (["validate", "/nonexistent/x.json"], 66),
    (["no-such-command"], 2),
])
def test_exit_codes_and_output_pass_through(args: list[str], code: int) -> None:
    r = subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    _clean(r, code)
    one = subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert (one.stdout, one.stderr) == (r.stdout, r.stderr)


def test_stdout_closed_by_its_reader_is_141_without_a_message() -> None:
    r = subprocess.run(f"{' '.join(CMD)} list | head -c 1 >/dev/null; exit ${{PIPESTATUS[0]}}", shell=True,
                       executable="/bin/bash", capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode in (0, 141) and r.stderr == "", (r.returncode, r.stderr)


def test_a_worker_crash_is_exit_1_with_one_line_and_no_output(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    env = {k: v for k, v in os.environ.items() if k != "KASSIGN_MEMORY_LIMIT"}
    r = subprocess.run([sys.executable, "-c", ABORTS, "assign", str(ORDERS), "-a", "range", "-o", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert r.stderr == ("error: internal error: the worker process died by SIGABRT; nothing was written (please "
                        "report it with the command and its input)\n")
    assert _files(tmp_path) == []


def test_a_worker_aborting_under_a_memory_limit_is_the_out_of_memory_refusal(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-c", ABORTS, "assign", str(ORDERS), "-a", "range"], capture_output=True,
                       text=True, timeout=300, cwd=REPO, env={**os.environ, "KASSIGN_MEMORY_LIMIT": "4G"})
    _clean(r, 65)
    assert r.stdout == "" and r.stderr.startswith("error: out of memory: the command is too large for the memory "
                                                  "available"), r.stderr


def test_the_worker_stops_when_its_parent_is_killed(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    p = _start(STUCK, ["assign", str(ORDERS), "-a", "range", "-o", str(out)])
    temp = _wait_for_temp(tmp_path, p)
    worker = int(temp.name.split(".")[-2])
    p.kill()
    p.wait()
    for _ in range(200):
        if not Path(f"/proc/{worker}").exists():
            break
        time.sleep(0.05)
    assert not Path(f"/proc/{worker}").exists()
    assert not out.exists()


def streams_group(seed: int, tasks: int, clients: int, standbys: int) -> dict[str, object]:
    """A Streams group like the fault scripts': three subtopology sizes of stateful and stateless tasks with
    source and changelog racks, clients on three racks with actives, standbys and their lags."""
    import random

    rng = random.Random(seed)
    racks = ["r1", "r2", "r3"]
    specs: list[dict[str, object]] = []
    for i in range(tasks):
        sub, part = divmod(i, 30)
        stores = rng.choice([0, 1, 2])
        t: dict[str, object] = {"id": f"{sub}_{part}", "stateful": stores > 0, "stores": stores}
        if stores:
            t["source_racks"] = [[rng.choice(racks)] for _ in range(stores)]
            t["changelog_racks"] = [[rng.choice(racks)] for _ in range(stores)]
        specs.append(t)
    ids = [str(t["id"]) for t in specs]
    stateful = {str(t["id"]) for t in specs if t["stateful"]}
    rng.shuffle(ids)
    members = []
    for c in range(clients):
        mine = ids[c::clients]
        standby = [x for x in ids if x not in mine and x in stateful][:rng.randint(0, 6)]
        members.append({"id": f"host-{c}:8080", "process_id": f"00000000-0000-0000-0000-{c:012d}",
                        "capacity": rng.choice([1, 2]), "rack": rng.choice(racks), "active": mine[:len(mine) * 3 // 4],
                        "standby": standby, "lags": {x: rng.randint(0, 50_000) for x in standby}})
    return {"format": "kassign/v1", "protocol": "streams", "name": f"s{seed}", "tasks": specs, "clients": members,
            "config": {"num_standby_replicas": standbys, "acceptable_recovery_lag": 10_000, "max_warmup_replicas": 2,
                       "rack_aware_assignment_strategy": "min_traffic"}}


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "clients", "standbys"), [(2, 12, 2), (4, 40, 2)])
def test_plan_and_frontier_of_179_tasks_under_a_512_mib_address_space_end_as_documented(
        tmp_path: Path, seed: int, clients: int, standbys: int) -> None:
    """Was: ``plan`` died by SIGABRT (std::bad_alloc: CP-SAT started 4 workers in the 77 MB of address space left)
    and ``frontier`` exit 1 (a point CP-SAT left UNKNOWN in its time was an internal error)."""
    import json
    import resource

    f = tmp_path / "g.json"
    f.write_text(json.dumps(streams_group(seed, 179, clients, standbys)))

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))

    for args in (["plan", str(f), "--capacity", "20", "--time-limit", "10"],
                 ["plan", str(f), "--capacity", "20", "--resilience", "2", "--time-limit", "10"],
                 ["frontier", str(f), "--points", "4", "--time-limit", "2", "-o", str(tmp_path / "fr.json")]):
        r = subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=600, cwd=REPO, preexec_fn=limit)
        _clean(r, 0, 3, 65)
        assert "bad_alloc" not in r.stderr and "ended the worker" not in r.stderr, r.stderr[-2000:]
        assert r.returncode != 65 or "memory" in r.stderr, r.stderr[-2000:]
    assert sorted(p.name for p in tmp_path.iterdir()) in (["fr.json", "g.json"], ["g.json"])


def test_an_inherited_ignored_sigchld_does_not_lose_the_exit_code() -> None:
    """An ignored SIGCHLD reaps children by itself: the parent must still learn its child's exit code."""
    r = subprocess.run([*CMD, "validate", str(EXAMPLES / "bad-instance.json")], capture_output=True, text=True,
                       timeout=300, cwd=REPO, preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    _clean(r, 65)
