"""The file layer: every output atomic (or absent) with a located error, every input bounded and checked as text."""

from __future__ import annotations

import errno
import gzip
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from solver import runtime
from solver.errors import InstanceError, Interrupted, MissingFileError, OptionError, OutputError
from solver.model.files import (
    INPUT_ENV,
    check_distinct_outputs,
    check_output_path,
    check_plot_path,
    drawing,
    input_limit,
    iter_lines,
    read_document,
    read_text,
    transaction,
    write_atomic,
    write_files,
)


def _listing(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir())


# --------------------------------------------------------------------------- outputs


@pytest.mark.parametrize("case", ["dir", "slash", "below-file", "loop", "too-long"])
def test_unwritable_paths_fail_before_and_during_the_write_naming_the_path(tmp_path: Path, case: str) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    target, kind, code = {
        "dir": (str(tmp_path / "sub"), OptionError, 2),
        "slash": (f"{tmp_path}/newdir/", OptionError, 2),
        "below-file": (str(tmp_path / "file" / "x.json"), OutputError, 73),
        "loop": (str(tmp_path / "l1"), OutputError, 73),
        "too-long": (str(tmp_path / ("a" * 300)), OutputError, 73),
    }[case]
    before = _listing(tmp_path)
    for attempt in (lambda: check_output_path(target), lambda: write_atomic(target, "{}")):
        with pytest.raises(kind) as e:
            attempt()
        assert e.value.exit_code == code
        shown = str(e.value)
        assert target in shown or target.rstrip("/") in shown
    assert _listing(tmp_path) == before  # nothing created, not even a temporary file
    assert not (tmp_path / "newdir").exists()


def test_a_read_only_directory_is_a_clean_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into read-only directories")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(OutputError, match="Permission denied") as e:
            check_output_path(ro / "x.json")
        assert e.value.exit_code == 73
    finally:
        ro.chmod(0o700)


def _write_under_fsize_limit(target: Path, data_size: int, limit: int) -> subprocess.CompletedProcess[str]:
    """Write ``data_size`` bytes to ``target`` in a child whose file size limit is ``limit`` (``ulimit -f``)."""
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
        "from solver.model.files import write_atomic\n"
        "from solver.errors import OutputError\n"
        "try:\n"
        f"    write_atomic({str(target)!r}, 'x' * {data_size})\n"
        "except OutputError as e:\n"
        "    print(e.exit_code, e, file=sys.stderr); sys.exit(e.exit_code)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_a_full_device_keeps_the_previous_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    """The unprivileged stand-in for a full disk: a file size limit makes the write fail with EFBIG."""
    target = tmp_path / "out.json"
    target.write_text("previous")
    r = _write_under_fsize_limit(target, 200_000, 65_536)
    assert r.returncode == 74, r.stderr
    assert f"cannot write {target}: File too large" in r.stderr
    assert target.read_text() == "previous"
    assert _listing(tmp_path) == ["out.json"]


def test_write_through_devices_and_full_device_errors() -> None:
    write_atomic("/dev/null", "x")
    assert Path("/dev/null").is_char_device()
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with pytest.raises(OutputError) as e:
        write_atomic("/dev/full", "x" * 10_000)
    assert e.value.exit_code == 74 and "No space left on device" in str(e.value)


def test_a_transaction_publishes_all_files_or_none(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.png"
    a.write_text("old a")
    with pytest.raises(OutputError), transaction():
        write_atomic(a, "new a")
        assert a.read_text() == "old a"  # staged, not yet published
        write_atomic(tmp_path / "a.json" / "nested", "x")  # fails: a.json is a file
    assert a.read_text() == "old a" and not b.exists()
    assert _listing(tmp_path) == ["a.json"]
    with transaction():
        write_atomic(a, "new a")
        write_atomic(b, b"\x89PNG")
    assert a.read_text() == "new a" and b.read_bytes() == b"\x89PNG"


def test_one_target_written_twice_in_a_transaction_is_published_once_with_the_last_data(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    with transaction():
        write_atomic(a, "first")
        write_atomic(tmp_path / "." / "a.json", "second")
    assert a.read_text() == "second" and _listing(tmp_path) == ["a.json"]
    write_files([(a, "x"), (a, "y")])
    assert a.read_text() == "y" and _listing(tmp_path) == ["a.json"]


def test_two_options_naming_one_file_are_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "real.png").write_text("x")
    (tmp_path / "link.png").symlink_to(tmp_path / "real.png")
    (tmp_path / "dangling.png").symlink_to(tmp_path / "new.png")
    for a, b in [("same.png", "same.png"), ("same.png", "./same.png"), ("link.png", "real.png"),
                 ("dangling.png", "new.png")]:
        with pytest.raises(OptionError, match=r" name the same file; give each its own$"):
            check_distinct_outputs(("--output", f"{tmp_path}/{a}"), ("--plot", f"{tmp_path}/{b}"))
    check_distinct_outputs(("--output", tmp_path / "a.json"), ("--plot", tmp_path / "a.png"), ("--x", None))
    check_distinct_outputs(("--output", "/dev/null"), ("--plot", "/dev/null"))  # written through, twice
    check_distinct_outputs(("--output", "-"), ("--current", "-"))


def test_nothing_is_published_after_a_stop_request(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("previous")
    runtime.reset()
    try:
        runtime.request_stop(signal.SIGTERM)
        with pytest.raises(Interrupted) as e:
            write_files([(target, "new")])
        assert e.value.exit_code == 143
    finally:
        runtime.reset()
    assert target.read_text() == "previous" and _listing(tmp_path) == ["out.json"]


def test_a_stop_during_publishing_waits_for_the_renames_and_the_line_names_them(tmp_path: Path) -> None:
    # a stop request that comes while the files are renamed into place takes effect after the last rename;
    # the run's line then says what is in place instead of "nothing was written"
    import threading

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    runtime.reset()
    try:
        stopper = threading.Thread(target=runtime.request_stop, args=(signal.SIGTERM,))
        real_replace = os.replace

        def replace_then_stop(src: str, dst: Path) -> None:  # the stop arrives between the two renames
            real_replace(src, dst)
            if not stopper.is_alive() and runtime.stop_requested() is None and dst == a:
                stopper.start()
                stopper.join(0.3)
                assert stopper.is_alive(), "the stop did not wait for the publishing"

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(os, "replace", replace_then_stop)
            write_files([(a, "1"), (b, "2")])
        stopper.join(5)
        assert runtime.stop_requested() == signal.SIGTERM
        assert a.read_text() == "1" and b.read_text() == "2" and _listing(tmp_path) == ["a.json", "b.json"]
        assert runtime.stopped_line(signal.SIGTERM) == (
            f"interrupted (SIGTERM) after {a}, {b} were written (complete); nothing else was written")
    finally:
        runtime.reset()
    assert runtime.stopped_line(signal.SIGTERM) == "interrupted (SIGTERM); nothing was written"


def test_plot_paths_name_a_format(tmp_path: Path) -> None:
    check_plot_path(tmp_path / "f.png")
    check_plot_path(tmp_path / "f.svg")
    check_plot_path(tmp_path / "f")
    with pytest.raises(OptionError, match=r"unknown plot format '\.xyz'"):
        check_plot_path(tmp_path / "f.xyz")


# --------------------------------------------------------------------------- inputs


@pytest.mark.parametrize(("device", "message"), [("/dev/zero", "a NUL byte at offset 0"),
                                                 ("/dev/urandom", "offset")])
def test_endless_devices_fail_on_their_first_chunk(tmp_path: Path, device: str, message: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    for name in ("x.json", "x.jsonl"):
        link = tmp_path / name
        link.symlink_to(device)
        reader = read_document if name.endswith(".json") else (lambda p: list(iter_lines(p)))
        with pytest.raises(InstanceError, match=message) as e:
            reader(link)
        assert e.value.source == str(link) and e.value.exit_code == 65


def test_the_cap_stops_a_gzip_bomb_after_decompressing_at_most_the_limit(tmp_path: Path) -> None:
    """256 MiB of blanks in about 250 KB: read with the default cap (64 MiB), in a child whose peak memory is
    measured -- the decompressor stops at the cap, so the peak stays far below what the bomb expands to."""
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        chunk = b" " * (1 << 20)
        for _ in range(256):
            f.write(chunk)
    assert bomb.stat().st_size < 1 << 20
    code = ("from solver.model.files import iter_lines\n"
            "from solver.errors import InstanceError\n"
            "try:\n"
            f"    list(iter_lines({str(bomb)!r}))\n"
            "except InstanceError as e:\n"
            "    print(e)\n"
            # VmHWM: this process's own peak (ru_maxrss would carry the forking pytest's over exec)
            "print([ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0])\n")
    env = {k: v for k, v in os.environ.items() if k != INPUT_ENV}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    message, peak_kb = r.stdout.strip().splitlines()
    assert message == (f"{bomb}: more than 64.0 MB of text (the input limit; set KASSIGN_INPUT_LIMIT, e.g. "
                       f"KASSIGN_INPUT_LIMIT=2G, to read larger files; see docs/format.md#limits)")
    assert int(peak_kb) < 300_000  # the 64 MiB read so far, not the 256 MiB the bomb expands to


@pytest.mark.parametrize("damage", ["truncated", "bad-crc", "trailing-garbage", "not-gzip"])
def test_broken_gzip_is_a_format_error_naming_the_file(tmp_path: Path, damage: str) -> None:
    good = gzip.compress(b'{"format": "kassign/v1", "topics": {"T": 2}, "members": []}\n' * 50)
    data = {"truncated": good[: len(good) // 2],
            "bad-crc": good[:-8] + bytes([good[-8] ^ 0xFF]) + good[-7:],
            "trailing-garbage": good + b"garbage!",
            "not-gzip": b"plain text, not gzip"}[damage]
    f = tmp_path / "batch.jsonl.gz"
    f.write_bytes(data)
    with pytest.raises(InstanceError) as e:
        list(iter_lines(f))
    assert e.value.source == str(f) and "not a valid gzip file" in str(e.value)


def test_gzip_data_under_another_name_and_bad_utf8_are_named(tmp_path: Path) -> None:
    f = tmp_path / "batch.jsonl"
    f.write_bytes(gzip.compress(b"{}\n"))
    with pytest.raises(InstanceError, match=r"gzip-compressed data in a file whose name does not end in \.gz"):
        list(iter_lines(f))
    g = tmp_path / "x.json"
    g.write_bytes(b'{"a": "\xff"}')
    with pytest.raises(InstanceError, match="not UTF-8 text: invalid byte 0xff at offset 7"):
        read_text(g)


def test_missing_files_and_directories(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError):
        read_text(tmp_path / "nope.json")
    with pytest.raises(InstanceError, match="cannot read: is a directory"):
        read_text(tmp_path)


@pytest.mark.parametrize(("value", "ok"), [("2G", True), ("1K", True), ("abc", False), ("0", False),
                                            ("999999T", False)])
def test_the_input_limit_variable_is_checked(value: str, ok: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(INPUT_ENV, value)
    if ok:
        assert input_limit() > 0
    else:
        with pytest.raises(OptionError, match=INPUT_ENV) as e:
            input_limit()
        assert e.value.exit_code == 2


def test_an_os_error_maps_to_its_exit_code() -> None:
    assert OutputError.from_os("p", OSError(errno.ENOSPC, "No space left on device")).exit_code == 74
    assert OutputError.from_os("p", OSError(errno.EROFS, "Read-only file system")).exit_code == 73


def test_memory_running_out_while_drawing_is_a_memory_error_never_a_traceback(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Under ``ulimit -v`` FreeType failed as ``RuntimeError: FT_Open_Face ... invalid stream operation`` (exit 1), and
    matplotlib's font callback printed an ignored MemoryError's traceback, then drew text without glyphs."""
    import solver.resources as res

    def ignored(exc: BaseException) -> None:  # an exception nobody can raise: Python hands it to sys.unraisablehook
        class Dying:
            def __del__(self) -> None:
                raise exc

        Dying()

    with pytest.raises(MemoryError, match=r"drawing p\.png: a font could not be loaded"), drawing("p.png"):
        ignored(MemoryError())
    monkeypatch.setattr(res, "_rlimits", lambda: [1 << 20])
    with pytest.raises(MemoryError, match=r"drawing p\.png: FT_Open_Face"), drawing("p.png"):
        raise RuntimeError("FT_Open_Face (ft2font.cpp line 200) failed with error 0x55: invalid stream operation")
    monkeypatch.setattr(res, "_rlimits", lambda: [])
    with pytest.raises(RuntimeError), drawing("p.png"):  # no memory limit: a bug, left alone
        raise RuntimeError("something else")
    with drawing("p.png"):
        ignored(ValueError("x"))
    assert capsys.readouterr().err == "warning: ignored ValueError while drawing p.png\n"
