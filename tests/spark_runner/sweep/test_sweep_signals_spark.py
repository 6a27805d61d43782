"""Ctrl-C during a Spark sweep and two sweeps at once: the second sweep is refused (exit 75) while the first holds
``--out``; Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops Spark within seconds, exits
130 with what was written and how to resume, no traceback; the resume ends with the rows of a clean run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.dataset as ds
import pytest
import yaml

from spark_runner.sweep.batches import run_sweep
from spark_runner.sweep.evaluate import ROW_KEY, load_registry
from spark_runner.sweep.grid import plan, read_grid
from spark_runner.sweep.report import load_rows
from spark_runner.sweep.store import finished
from tests.spark_runner.sweep.test_sweep_crash_spark import TIMING, descendants

# unit loads: the flow engine answers them exactly, so the resumed rows equal a clean run's bit for bit even
# though the interrupted batch ran beside a second sweep and Spark starting (weighted rows are reproducible in
# CP-SAT's deterministic time only while no wall-clock cap ends a stage, which that load can do)
GRID = {"name": "signals", "seeds": 8, "assignors": ["range"], "solver_time_limit": 5,
        "params": {"members": 4, "topics": 2, "partitions_min": 10, "partitions_max": 40, "steps": 2,
                   "events": ["join", "leave", "crash"]}}

REPO = Path(__file__).resolve().parents[3]


def _sweep(grid: Path, out: Path, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    return subprocess.Popen(
        [sys.executable, "-m", "spark_runner", "sweep", str(grid), "--out", str(out), "--master", "local[2]",
         "--batch-size", "2", "--partitions", "2", "--no-report", "--progress-every", "60"],
        cwd=REPO, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def _ctrl_c(proc: subprocess.Popen[bytes]) -> float:
    """Ctrl-C (a terminal signals the whole foreground group): SIGINT to the sweep's group; seconds to its exit."""
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=60)
    return time.monotonic() - t0


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Kill the sweep's group if it is still running (a failed test leaves nothing behind)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _wait_for(what: str, test: object, proc: subprocess.Popen[bytes], log: Path, seconds: float = 240) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if test():  # type: ignore[operator]
            return
        if proc.poll() is not None:
            pytest.fail(f"the sweep ended before {what}:\n{log.read_text()}")
        time.sleep(0.05)
    pytest.fail(f"no {what} within {seconds} s:\n{log.read_text()}")


@pytest.mark.spark
def test_a_second_sweep_is_refused_and_ctrl_c_stops_the_first_cleanly(spark: object, tmp_path: Path) -> None:
    if not {"range", "optimal"} <= {s.name for s in load_registry()}:
        pytest.skip("range and optimal must be registered")
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump(GRID))
    grid = read_grid(grid_file)
    out, clean, log = tmp_path / "out", tmp_path / "clean", tmp_path / "first.log"
    first = _sweep(grid_file, out, log)
    below: list[int] = []
    try:
        _wait_for("Spark start", lambda: "starting Spark" in log.read_text(), first, log)
        second = subprocess.run([sys.executable, "-m", "spark_runner", "sweep", str(grid_file), "--out", str(out)],
                                cwd=REPO, capture_output=True, text=True, timeout=120,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
        assert second.returncode == 75, second.stderr
        assert f"another sweep is writing to this directory (pid {first.pid}" in second.stderr

        _wait_for("committed batch", lambda: any((out / "rows").glob("assignor=*/*.parquet")), first, log)
        below = descendants(first.pid)
        took = _ctrl_c(first)
    finally:
        _reap(first)
    text = log.read_text()
    assert first.returncode == 130, text
    assert took < 20, (took, text)
    for noise in ("Traceback", "py4j", "Py4J", "Exception", " ERROR "):  # no stack trace, no Spark error log
        assert noise not in text, text
    assert "interrupted (SIGINT): " in text and "run the same command again to resume" in text
    written = len(grid.scenarios()) - len(plan(grid, finished(out)))
    assert f"interrupted (SIGINT): {written} of {len(grid.scenarios())} scenario(s) are written" in text
    assert written >= 1  # the committed batch
    deadline = time.monotonic() + 30  # Spark's JVM and Python workers go with the driver
    while any(Path(f"/proc/{p}").exists() for p in below) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in below if Path(f"/proc/{p}").exists()]
    assert not (out / "rows" / "_temporary").exists()  # the cancelled job was aborted, not left half done

    run_sweep(grid, out, spark=spark, batch_size=2, partitions=2, log=lambda _s: None)  # the resume
    run_sweep(grid, clean, spark=spark, batch_size=2, partitions=2, log=lambda _s: None)
    expected = len(load_rows(clean))
    raw = int(ds.dataset(str(out / "rows"), format="parquet", partitioning="hive").count_rows())
    assert raw == expected  # every row once
    a, b = (load_rows(d).drop(columns=list(TIMING)).sort_values(list(ROW_KEY)).reset_index(drop=True)
            for d in (out, clean))
    assert a.equals(b)


@pytest.mark.spark
def test_ctrl_c_while_spark_starts_exits_at_once(tmp_path: Path) -> None:
    """Spark's start-up takes tens of seconds on a busy machine and has nothing to cancel: Ctrl-C then ends
    its JVM and exits 130 within seconds (it used to wait out the whole 15 s grace, with a note saying that
    Spark did not stop), saying that no batch had begun."""
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump(GRID))
    out, log = tmp_path / "out", tmp_path / "sweep.log"
    proc = _sweep(grid_file, out, log)
    below: list[int] = []
    try:
        _wait_for("Spark start", lambda: "starting Spark" in log.read_text(), proc, log)
        time.sleep(1.0)  # the JVM is launching: far from the first batch
        below = descendants(proc.pid)
        took = _ctrl_c(proc)
    finally:
        _reap(proc)
    text = log.read_text()
    assert proc.returncode == 130, text
    if "batch 1/" in text:
        pytest.skip("Spark started within a second: nothing left to test here")
    assert took < 8, (took, text)
    for noise in ("Traceback", "py4j", "Py4J", "Exception", " ERROR ", "did not stop"):
        assert noise not in text, text
    # from the sweep itself (its JVM ended) or, when the JVM was still launching, from the supervisor
    assert "interrupted (SIGINT): " in text and "Spark was still starting, no batch had begun" in text, text
    assert "run the same command again to resume" in text, text
    assert not (out / "rows").exists() or not any((out / "rows").glob("assignor=*/*.parquet"))
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{p}").exists() for p in below) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [p for p in below if Path(f"/proc/{p}").exists()]
