"""Sweeps: grid validation (no Spark), the Spark path on local[2], resume, fault tolerance, report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from solver.errors import InstanceError
from spark_runner.sweep.batches import _deal, run_sweep
from spark_runner.sweep.evaluate import OPTIMAL, load_registry
from spark_runner.sweep.grid import parse_grid, plan, read_grid
from spark_runner.sweep.report import build_report, load_rows
from spark_runner.sweep.store import finished
from tests.spark_runner.sweep.conftest import KEY, comparable, expected_rows, grid_problems, need_registered

REPO = Path(__file__).resolve().parents[3]


def _grid(**over: object) -> dict:
    doc: dict = {
        "name": "tiny",
        "seeds": 2,
        "assignors": ["range"],
        "solver_time_limit": 5,
        "params": {"members": [3, 4], "topics": 2, "partitions_min": 2, "partitions_max": 5, "steps": 3,
                   "events": ["join", "leave", "crash", "partition-expansion"]},
    }
    doc.update(over)
    return doc


# --------------------------------------------------------------------------- grid validation (no Spark)


def test_grid_expands_to_params_x_seeds() -> None:
    need_registered("range")
    g = parse_grid(_grid(), "g.yaml")
    assert len(g.points) == 2 and g.seeds == (0, 1)
    assert len(g.scenarios()) == 4
    assert g.evaluated == ("range", OPTIMAL)
    assert parse_grid(_grid(seeds={"start": 10, "count": 3}), "g.yaml").seeds == (10, 11, 12)
    blocks = parse_grid(_grid(params=[{"members": 3}, {"members": [5, 6], "subscription": ["random", "skewed"]}]),
                        "g.yaml")
    assert len(blocks.points) == 5
    grid_events = parse_grid(_grid(params={"events": [["join"], ["leave", "join"]]}), "g.yaml")
    assert [p.events for p in grid_events.points] == [("join",), ("leave", "join")]


def test_grid_errors_name_their_yaml_path() -> None:
    need_registered("range")
    assert grid_problems(_grid(nope=1)) == ["nope: unknown key"]
    assert grid_problems(_grid(params={"members": [3, 0], "subscription": "all"})) == [
        "params.members[1]: must be >= 1, got 0",
        "params.subscription: must be one of identical, random, two-groups, skewed; got 'all'",
    ]
    assert grid_problems(_grid(params=[{"members": 2}, {"consumers": 3}]))[0].startswith(
        "params[1].consumers: unknown parameter")
    assert grid_problems(_grid(assignors=["range", "nonesuch"]))[0].startswith(
        "assignors[1]: unknown assignor 'nonesuch'")
    combo = grid_problems(_grid(params={"partitions_min": [2, 8], "partitions_max": 5}))
    assert combo == ["params.partitions_max: must be >= partitions_min (8) (combination partitions_min=8)"]
    assert any(p.startswith("seeds") for p in grid_problems(_grid(seeds=0)))
    assert any(p.startswith("solver_time_limit") for p in grid_problems(_grid(solver_time_limit=-1)))
    assert grid_problems(["not", "a", "grid"]) == ["expected a mapping (the sweep grid)"]


def test_streams_assignors_are_refused() -> None:
    known = {s.name: s.protocol for s in load_registry()}
    streams = [n for n, p in known.items() if p == "streams"]
    if not streams:
        pytest.skip("no streams assignor registered")
    assert grid_problems(_grid(assignors=[streams[0]]))[0].startswith("assignors[0]:")


def test_bad_grid_exits_65_before_spark_starts(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("seeds: 2\nassignors: [range]\nparams:\n  members: [3, -1]\n  steps: two\n")
    proc = subprocess.run([sys.executable, "-m", "spark_runner", "sweep", str(bad), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 65, proc.stderr
    assert f"{bad}: params.members[1]: must be >= 1, got -1" in proc.stderr
    assert f"{bad}: params.steps: expected an integer, got 'two'" in proc.stderr
    assert "starting Spark" not in proc.stderr
    assert not (tmp_path / "o").exists()
    broken = tmp_path / "broken.yaml"
    broken.write_text("seeds: [1, 2\nassignors: x\n")
    proc = subprocess.run([sys.executable, "-m", "spark_runner", "sweep", str(broken), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 65 and "malformed YAML at line" in proc.stderr


def test_example_grids_are_valid() -> None:
    for name in ("sweep-small.yaml", "sweep-paper.yaml"):
        g = read_grid(REPO / "examples" / name)
        assert g.scenarios() and OPTIMAL in g.evaluated


# --------------------------------------------------------------------------- Spark


@pytest.mark.spark
def test_sweep_rows_resume_and_report(spark: object, tmp_path: Path) -> None:
    need_registered("range", "roundrobin")
    doc = _grid()
    out = tmp_path / "sweep"
    s1 = run_sweep(parse_grid(doc, "g.yaml"), out, spark=spark, log=lambda _: None)
    df = load_rows(out)
    want = expected_rows(doc)
    assert s1.evaluated == 4 and s1.rows_total == len(want) == len(df)
    assert not df.duplicated(KEY).any()
    manifest = json.loads((out / "manifest.json").read_text())
    assert (manifest["scenarios"], manifest["rows"], manifest["assignors"]) == (4, len(want), ["range", OPTIMAL])
    assert sorted(p.name for p in (out / "rows").iterdir() if p.is_dir()) == ["assignor=optimal", "assignor=range"]
    for col in ("assignor", "moved", "max_load", "max_load_gap", "sum_sq_gap", "excess_moves", "rounds", "seconds",
                "members", "partitions"):
        assert col in df.columns
    pd.testing.assert_frame_equal(comparable(df[want.columns]), comparable(want), check_dtype=False)

    # re-run: everything is done, nothing is evaluated or written again
    s2 = run_sweep(parse_grid(doc, "g.yaml"), out, spark=spark, log=lambda _: None)
    assert (s2.evaluated, s2.skipped, s2.rows_total) == (0, 4, len(want))

    # one more assignor: only its rows are added (the optimum runs again but is not written twice)
    more = _grid(assignors=["range", "roundrobin"])
    s3 = run_sweep(parse_grid(more, "g.yaml"), out, spark=spark, log=lambda _: None)
    df3 = load_rows(out)
    assert s3.evaluated == 4 and len(df3) == len(want) * 3 // 2
    assert not df3.duplicated(KEY).any()
    assert (df3["assignor"] == "roundrobin").sum() == len(want) // 2

    index = build_report(out)
    folder = out / "report"
    for f in ("index.html", "summary.md", "summary.csv", "gaps.png", "moves.png", "optimum.png"):
        assert (folder / f).stat().st_size > 0, f
    md = (folder / "summary.md").read_text()
    for name in ("range", "roundrobin", OPTIMAL):
        assert f"| {name} |" in md
    assert "<table>" in index.read_text()
    proc = subprocess.run([sys.executable, "-m", "spark_runner", "report", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "index.html" in proc.stderr

    # --overwrite starts over
    s4 = run_sweep(parse_grid(doc, "g.yaml"), out, spark=spark, overwrite=True, log=lambda _: None)
    assert s4.evaluated == 4 and s4.rows_total == len(want)
    assert not (out / "report").exists()


@pytest.mark.spark
def test_a_failed_task_attempt_loses_and_duplicates_no_rows(spark: object, tmp_path: Path) -> None:
    need_registered("range")
    doc = _grid(seeds=3)
    g = parse_grid(doc, "g.yaml")
    # one task holds every scenario; the failing one is evaluated last, after the task already yielded rows
    victim = _deal(plan(g, set()), 1)[-1].scenario_id
    marker = tmp_path / "failed-once"
    out = tmp_path / "sweep"
    summary = run_sweep(g, out, spark=spark, partitions=1, fail_once=f"{victim}@{marker}", log=lambda _: None)
    assert marker.exists(), "the injected failure did not happen"
    df = load_rows(out)
    want = expected_rows(doc)
    assert summary.rows_total == len(df) == len(want)
    assert not df.duplicated(KEY).any()
    assert set(df["scenario_id"]) == {sid for sid, _, _ in g.scenarios()}
    assert finished(out) == {(sid, a) for sid, _, _ in g.scenarios() for a in g.evaluated}


def test_report_refuses_an_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(InstanceError, match="no sweep rows"):
        build_report(tmp_path)


def test_dry_run_lists_pending_work(tmp_path: Path) -> None:
    need_registered("range")
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml.safe_dump(_grid()))
    proc = subprocess.run([sys.executable, "-m", "spark_runner", "sweep", str(grid), "--out", str(tmp_path / "o"),
                           "--dry-run"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "4 scenario(s)" in proc.stderr and "4 pending" in proc.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.spark
def test_a_foreign_pyspark_python_does_not_break_a_local_sweep(tmp_path: Path) -> None:
    """Issue 34: PYSPARK_PYTHON naming another interpreter (where Spark is installed) made every task fail: exit 1
    with Python and Java traces.  Local workers run kassign's own interpreter."""
    need_registered("range")
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml.safe_dump(_grid(seeds=1, params={**_grid()["params"], "members": 3, "steps": 1})))
    other = "/usr/bin/python3"
    env = {**os.environ, "PYSPARK_PYTHON": other}
    proc = subprocess.run([sys.executable, "-m", "spark_runner", "sweep", str(grid), "--out", str(tmp_path / "o"),
                           "--no-report"], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"not PYSPARK_PYTHON={other}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_grid_typos_get_did_you_mean_and_kafka_class_names_are_assignors(tmp_path: Path) -> None:
    """`kassign sweep grid.yaml --dry-run` with `stiky` and `memebrs`: exit 65, each with "did you mean";
    Kafka's class names select the assignor they name."""
    bad = tmp_path / "typo.yaml"
    bad.write_text("seeds: 2\nassignors: [stiky]\nparams:\n  memebrs: 3\n")
    proc = subprocess.run([sys.executable, "-m", "spark_runner", "sweep", str(bad), "--out", str(tmp_path / "o"),
                           "--dry-run"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 65, proc.stderr
    assert f"{bad}: params.memebrs: unknown parameter; did you mean 'members'?" in proc.stderr
    assert f"{bad}: assignors[0]: unknown assignor 'stiky'; did you mean 'sticky'?" in proc.stderr
    assert grid_problems(_grid(assignorz=["range"])) == ["assignorz: unknown key; did you mean 'assignors'?"]
    grid = parse_grid(_grid(assignors=["org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
                                       "org.apache.kafka.clients.consumer.RangeAssignor@3.9"]))
    assert grid.assignors == ("cooperative-sticky", "range@3.9.2")
