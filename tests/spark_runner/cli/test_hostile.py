"""Hostile command lines and inputs: usage errors exit 2, invalid or too large data 65, never 1 or a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from solver.model.files import write_atomic
from tests.spark_runner.cli.test_fuzz import CONSUMER, _run

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def inst(tmp_path: Path) -> Path:
    f = tmp_path / "in.json"
    f.write_text(json.dumps(CONSUMER))
    return f


@pytest.mark.parametrize(("args", "message"), [
    (["--seed", "-1"], "--seed must be an integer between 0 and 2147483647, got -1"),
    (["--seed", "1" * 23], "--seed must be an integer between 0 and 2147483647, got 11111111111111111111111"),
    (["-O", "workers=abc"], '-O workers must be an integer between 1 and 64, got "abc"'),
    (["-O", "workers=0"], "-O workers must be an integer between 1 and 64, got 0"),
    (["-O", "colour=red"], "-O colour: unknown option for 'optimal' (its options: backend, deterministic, "
                           "interleave, max_vars, workers)"),
    (["--time-limit", "nan"], "--time-limit must be a number between 0.001 and 10000000 seconds, got nan"),
    (["--time-limit", "inf"], "--time-limit must be a number between 0.001 and 10000000 seconds, got inf"),
])
def test_bad_option_values_exit_2(inst: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str],
                                  registry_loaded: None) -> None:
    code, err = _run(["assign", str(inst), "-a", "optimal", *args], capsys)
    assert (code, err.strip()) == (2, f"error: {message}")


def test_heuristics_take_no_options_and_output_must_be_a_file(inst: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              registry_loaded: None) -> None:
    code, err = _run(["assign", str(inst), "-a", "range", "-O", "x=1"], capsys)
    assert (code, err.strip()) == (2, "error: -O x: unknown option for 'range' (its options: none)")
    code, err = _run(["assign", str(inst), "-a", "range", "-o", str(tmp_path)], capsys)
    assert (code, err.strip()) == (2, f"error: --output {tmp_path}: is a directory; give a file name")
    code, err = _run(["assign", str(inst), "-a", "optimal", "-O", "interleave=false", "-O", "workers=1"], capsys)
    assert code == 0, err


def test_compare_and_plan_validate_their_options(inst: Path, capsys: pytest.CaptureFixture[str],
                                                 registry_loaded: None) -> None:
    assert _run(["compare", str(inst), "--seed", "-3"], capsys)[0] == 2
    code, err = _run(["plan", str(inst), "--capacity", "10", "--range", "1:100000000"], capsys)
    assert (code, err.strip()) == (2, "error: --range 1:100000000 asks for 100000000 rows; at most 200 per plan "
                                      "(split the range)")
    assert _run(["plan", str(inst), "--capacity", "10", "--time-limit", "inf"], capsys)[0] == 2


def test_too_large_instances_exit_65_naming_file_and_path(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          registry_loaded: None) -> None:
    monkeypatch.setenv("KASSIGN_MEMORY_LIMIT", "1G")
    f = tmp_path / "big.json"
    f.write_text(json.dumps({"format": "kassign/v1", "topics": {"T1": 10**8},
                             "members": [{"id": "C1", "topics": ["T1"]}]}))
    for args in (["assign", str(f), "-a", "range"], ["compare", str(f)]):
        code, err = _run(args, capsys)
        assert code == 65 and err.startswith(f"{f}: topics"), (args, err)
        assert "1.0 GB is available" in err
    # plan's own item limit comes first: its packings run item by item, long before memory runs out
    code, err = _run(["plan", str(f), "--capacity", "9"], capsys)
    assert code == 65 and err.startswith(f"{f}: topics: plan of 100,000,000 items: at most 100,000"), err


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    stale = tmp_path / f".out.json.{dead.stdout.strip()}.tmp"  # what SIGKILL during a write leaves
    stale.write_text('{"half')
    alive = tmp_path / ".out.json.1.tmp"  # pid 1 is alive: another writer's file stays
    alive.write_text("")
    write_atomic(tmp_path / "out.json", '{"whole": true}\n')
    assert not stale.exists() and alive.exists()
    assert json.loads((tmp_path / "out.json").read_text()) == {"whole": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.json.1.tmp", "out.json"]
    odd = tmp_path / f".out.json.{dead.stdout.strip()}.tmp"  # a directory in a dead writer's place: not ours
    odd.mkdir()
    write_atomic(tmp_path / "out.json", "{}\n")  # was: OutputError (exit 73) removing it
    assert odd.is_dir() and (tmp_path / "out.json").read_text() == "{}\n"


def test_devices_and_links_are_written_through_not_replaced(tmp_path: Path) -> None:
    write_atomic("/dev/null", "x")
    assert Path("/dev/null").is_char_device()
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"


@pytest.mark.parametrize(("error", "limited", "code"), [
    (SystemError("error return without exception set"), True, 65), (SystemError("a bug"), False, 1),
    (OSError(12, "Cannot allocate memory"), False, 65), (OSError(5, "Input/output error"), False, 1)])
def test_errors_that_mean_no_memory_are_the_documented_refusal(monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str],
                                                               error: Exception, limited: bool, code: int) -> None:
    """Was exit 1: a C extension that failed to allocate under ulimit -v 450M (`frontier --plot`) returned without
    an exception (SystemError); an import listing a package's folder failed with OSError ENOMEM."""
    import solver.resources as res
    from spark_runner.cli import app

    def fail() -> None:
        raise error

    def exit_(status: int) -> None:
        raise SystemExit(status)

    monkeypatch.setattr(app, "app", fail)
    monkeypatch.setattr(app, "check_environment", lambda: None)
    monkeypatch.setattr(res, "_rlimits", lambda: [1 << 20] if limited else [])
    monkeypatch.setattr(app.os, "_exit", exit_)
    try:
        got = app._main()
    except SystemExit as e:
        got = e.code  # type: ignore[assignment]
    assert got == code
    err = capsys.readouterr().err
    assert err.startswith("error: out of memory" if code == 65 else "internal error: "), err
