"""``spark_runner.run_sweep``: the grid is checked before Spark starts; a tiny grid runs and gets its report."""

from __future__ import annotations

from pathlib import Path

import pytest

import spark_runner
from solver.errors import InstanceError
from spark_runner.sweep.api import Sweep


def _grid() -> dict:
    return {"name": "api-tiny", "seeds": 1, "assignors": ["range"], "solver_time_limit": 5,
            "params": {"members": 3, "topics": 1, "partitions_min": 3, "partitions_max": 4, "steps": 1,
                       "events": ["join"]}}


def test_bad_grid_fails_before_spark(tmp_path: Path) -> None:
    with pytest.raises(InstanceError) as e:
        spark_runner.run_sweep({**_grid(), "nope": 1}, tmp_path / "out", master="no-such-master")
    assert [str(p) for p in e.value.problems] == ["nope: unknown key"]
    assert not (tmp_path / "out").exists()


@pytest.mark.spark
def test_tiny_grid_writes_rows_and_report(tmp_path: Path) -> None:
    lines: list[str] = []
    out = spark_runner.run_sweep(_grid(), tmp_path / "out", master="local[1]", log=lines.append)
    assert isinstance(out, Sweep)
    s = out.summary
    assert (s.scenarios, s.evaluated, s.skipped) == (1, 1, 0)
    assert s.rows_total == 2 * 2  # 2 steps x (range, optimal)
    assert out.report == tmp_path / "out" / "report" / "index.html" and out.report.exists()
    again = spark_runner.run_sweep(_grid(), tmp_path / "out", master="local[1]", report=False, log=lines.append)
    assert (again.summary.skipped, again.summary.evaluated, again.report) == (1, 0, None)


def test_progress_before_spark_starts_a_stage_says_starting_not_0_of_0() -> None:
    from types import SimpleNamespace

    from spark_runner.sweep.batches import Progress

    class Tracker:
        def __init__(self) -> None:
            self.stages: dict[int, object] = {}

        def getActiveStageIds(self) -> list[int]:
            return list(self.stages)

        def getStageInfo(self, sid: int) -> object:
            return self.stages[sid]

    tracker = Tracker()
    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=lambda: tracker))
    lines: list[str] = []
    prog = Progress(spark, 20, lines.append)
    prog.batch = (1, 1, 20)
    prog.line()
    assert "0/0" not in lines[-1] and "batch 1/1: starting (20 scenario(s)); scenarios 0/20 done" in lines[-1]
    tracker.stages = {3: SimpleNamespace(numTasks=8, numCompletedTasks=4, numActiveTasks=2, numFailedTasks=0)}
    prog.line()
    assert "tasks 4/8 done, 2 running, 0 failed; scenarios ~10/20" in lines[-1]
