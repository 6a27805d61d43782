"""A sweep resumed after a hard crash (driver, JVM and Python workers killed mid-batch) has exactly the rows
of an uninterrupted run: no duplicates from the crashed job's uncommitted task output, none lost."""

from __future__ import annotations

import contextlib
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
from spark_runner.sweep.grid import read_grid
from spark_runner.sweep.report import load_rows
from spark_runner.sweep.store import clear_uncommitted

REPO = Path(__file__).resolve().parents[3]
#: Columns that differ between two runs of the same scenario (wall time), left out of the comparison.
TIMING = ("seconds",)

GRID = {
    "name": "crash",
    "seeds": 8,
    "assignors": ["range"],
    "solver_time_limit": 1,
    # weighted partitions: the exact engine takes a few tenths of a second a step, so a batch stays open long enough
    # for the crash to land between its first committed task and its job commit, even on a busy machine
    "params": {"members": 4, "topics": 2, "partitions_min": 30, "partitions_max": 60, "steps": 2,
               "events": ["join", "leave", "crash"], "weights": "lognormal"},
}


def _raw_rows(out: Path) -> int:
    return int(ds.dataset(str(out / "rows"), format="parquet", partitioning="hive").count_rows())


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, grandchildren ...), read from /proc."""
    parent: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(stat.parent.name)] = int(fields[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def _freeze(root: int) -> list[int]:
    """SIGSTOP ``root``'s process group and every process below it, until no new one appears; returns them all.

    Stopped processes write nothing more, so what is on disk can be read without a race against Spark's commit.
    """
    with contextlib.suppress(ProcessLookupError):
        os.killpg(root, signal.SIGSTOP)
    stopped: set[int] = set()
    while True:
        new = [p for p in descendants(root) if p not in stopped]
        if not new:
            return sorted(stopped)
        for pid in new:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        stopped.update(new)


def _signal_all(root: int, below: list[int], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(root, sig)
    for pid in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _batch_half_done(out: Path) -> bool:
    """An earlier batch is published and the running one has committed tasks but no job commit yet.

    ``_SUCCESS`` marks a finished job commit: parquet files alone appear while the first batch's own job commit
    is moving them out of ``_temporary``, which is not a later batch in progress.
    """
    rows = out / "rows"
    committed = (rows / "_SUCCESS").exists() and any(rows.glob("assignor=*/*.parquet"))
    return committed and any((rows / "_temporary").glob("*/task_*"))


def _kill_mid_batch(grid: Path, out: Path) -> str:
    """Run the sweep CLI in its own process group; SIGKILL it and every process below it (Spark's JVM runs in a
    session of its own, and its Python workers with it) once a later batch has committed tasks.

    The state is checked with every process stopped: checking while Spark runs races its job commit, which can
    land between the check and the kill (it did in CI, and the crash then left nothing to recover from).
    Returns how it ended (for a failure's message).
    """
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    log = (out.parent / "crash.log").open("w")  # 8 scenarios in 2 batches of 4 tasks on 2 cores
    proc = subprocess.Popen(
        [sys.executable, "-m", "spark_runner", "sweep", str(grid), "--out", str(out), "--master", "local[2]",
         "--batch-size", "4", "--partitions", "4", "--no-report", "--progress-every", "60"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 240
    how = "no batch half done within 240 s"
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if _batch_half_done(out):
                below = _freeze(proc.pid)
                if _batch_half_done(out):
                    how = "killed mid-batch, every process stopped"
                    break  # killed below, while still stopped
                _signal_all(proc.pid, below, signal.SIGCONT)  # the commit landed meanwhile: go on
            time.sleep(0.02)
        if proc.poll() is not None:
            how = f"the sweep ended by itself (exit {proc.returncode})"
    finally:
        below = []
        if proc.poll() is None:
            below = _freeze(proc.pid)
            _signal_all(proc.pid, below, signal.SIGKILL)
        proc.wait(timeout=30)
        # proc is kassign's watchdog parent: the sweep itself (which holds the output's lock) is its child, and
        # may still be exiting when the parent has been reaped; wait until every killed process has exited
        _wait_exited(below, 30)
        log.close()
    return how


def _wait_exited(pids: list[int], seconds: float) -> None:
    """Until none of ``pids`` runs any more (gone, or a zombie: its files, locks included, are released)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.append(pid)
        if not alive:
            return
        time.sleep(0.05)


@pytest.mark.spark
def test_resume_after_a_hard_crash_has_the_rows_of_a_clean_run(spark: object, tmp_path: Path) -> None:
    known = {s.name for s in load_registry()}
    if not {"range", "optimal"} <= known:
        pytest.skip("range and optimal must be registered")
    grid_file = tmp_path / "grid.yaml"
    grid_file.write_text(yaml.safe_dump(GRID))
    grid = read_grid(grid_file)
    clean = tmp_path / "clean"
    # the set-up, a crash that leaves a batch half done, races Spark on a loaded machine: up to three tries, each
    # on a fresh output directory; what is asserted is the resume after it
    for attempt in range(3):
        crashed = tmp_path / f"crashed-{attempt}"
        how = _kill_mid_batch(grid_file, crashed)
        leftovers = list((crashed / "rows" / "_temporary").glob("*/task_*"))
        if leftovers:
            break
    on_disk = sorted(str(p.relative_to(crashed)) for p in crashed.rglob("*") if not p.name.startswith("."))
    assert leftovers, (f"the crash left no uncommitted task output ({how}); on disk: {on_disk}\n"
                       f"{(tmp_path / 'crash.log').read_text()}")
    published = any((crashed / "rows").glob("assignor=*/*.parquet"))
    assert published, "no batch was committed before the crash"

    run_sweep(grid, crashed, spark=spark, batch_size=4, partitions=4, log=lambda _s: None)  # the resume
    run_sweep(grid, clean, spark=spark, batch_size=4, partitions=4, log=lambda _s: None)

    assert not (crashed / "rows" / "_temporary").exists()
    expected = len(load_rows(clean))  # rows of the clean run, one per (scenario, step, assignor)
    assert expected >= len(grid.scenarios()) * len(grid.evaluated)
    assert _raw_rows(clean) == expected
    assert _raw_rows(crashed) == expected  # no duplicated file was published, none lost
    a, b = (load_rows(d).drop(columns=list(TIMING)).sort_values(list(ROW_KEY)).reset_index(drop=True)
            for d in (crashed, clean))
    assert len(a) == expected
    assert a.equals(b)


def test_clear_uncommitted_removes_only_spark_leftovers(tmp_path: Path) -> None:
    rows = tmp_path / "rows"
    (rows / "_temporary" / "0" / "task_1" / "assignor=range").mkdir(parents=True)
    (rows / ".spark-staging-abc").mkdir(parents=True)
    (rows / "assignor=range").mkdir(parents=True)
    (rows / "assignor=range" / "part-0.parquet").write_bytes(b"x")
    assert clear_uncommitted(tmp_path) == 2
    assert sorted(p.name for p in rows.iterdir()) == ["assignor=range"]
    assert clear_uncommitted(tmp_path / "nowhere") == 0


@pytest.mark.spark
def test_the_sweep_command_shows_kassigns_lines_only_and_keeps_sparks_in_a_log(tmp_path: Path) -> None:
    """Spark's banner, log4j's default-profile lines and the JVM's warnings go to OUT/spark.log, not the user."""
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml.safe_dump({**GRID, "seeds": 1}))
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    r = subprocess.run([sys.executable, "-m", "spark_runner", "sweep", str(grid), "--out", str(out), "--master",
                        "local[1]", "--no-report"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert lines and all(x.startswith("[sweep] ") for x in lines), lines
    assert "log4j" in (out / "spark.log").read_text()
