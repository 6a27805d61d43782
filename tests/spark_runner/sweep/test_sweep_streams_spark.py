"""Kafka Streams sweeps: grid validation (no Spark) and one tiny mixed grid on local[2]."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from spark_runner.scenarios.streams import StreamsScenarioParams, protocol_of
from spark_runner.sweep.batches import run_sweep
from spark_runner.sweep.evaluate import OPTIMAL, STREAMS_OPTIMAL, evaluate_scenario
from spark_runner.sweep.grid import parse_grid, plan, read_grid
from spark_runner.sweep.report import build_report, load_rows
from tests.spark_runner.sweep.conftest import comparable, grid_problems, need_registered

REPO = Path(__file__).resolve().parents[3]
STREAMS = ("high-availability", "sticky-task", "state-store-weighted")


def _grid(**over: object) -> dict:
    doc: dict = {
        "name": "tiny-streams",
        "seeds": 2,
        "assignors": ["high-availability"],
        "solver_time_limit": 5,
        "params": {"protocol": "streams", "clients": [2, 3], "subtopologies": 1, "partitions_min": 2,
                   "partitions_max": 4, "initial": "mixed", "steps": 3,
                   "events": ["join", "leave", "crash", "lag-drift"]},
    }
    doc.update(over)
    return doc


# --------------------------------------------------------------------------- grid validation (no Spark)


def test_streams_grid_expands_with_its_own_optimum() -> None:
    need_registered(*STREAMS, optimum=STREAMS_OPTIMAL)
    g = parse_grid(_grid(), "g.yaml")
    assert len(g.points) == 2 and all(isinstance(p, StreamsScenarioParams) for p in g.points)
    assert g.points[0].events == ("join", "leave", "crash", "lag-drift")
    assert g.evaluated == ("high-availability", STREAMS_OPTIMAL)
    assert {w.evaluate for w in plan(g, set())} == {("high-availability", STREAMS_OPTIMAL)}
    everything = parse_grid(_grid(assignors="all"), "g.yaml")
    assert set(STREAMS) <= set(everything.assignors) and "range" not in everything.assignors


def test_mixed_grid_evaluates_each_protocol_with_its_assignors() -> None:
    need_registered(*STREAMS, "range", optimum=STREAMS_OPTIMAL)
    doc = _grid(assignors=["range", "sticky-task"],
                params=[{"members": 3, "steps": 2}, _grid()["params"]])
    g = parse_grid(doc, "g.yaml")
    assert g.evaluated == ("range", OPTIMAL, "sticky-task", STREAMS_OPTIMAL)
    by_proto = {("streams" if isinstance(w.params, StreamsScenarioParams) else "consumer"): w.evaluate
                for w in plan(g, set())}
    assert by_proto == {"consumer": ("range", OPTIMAL), "streams": ("sticky-task", STREAMS_OPTIMAL)}
    # a consumer block may say so explicitly: the same scenario ids as without the key
    explicit = parse_grid(_grid(assignors=["range"], params={"protocol": "consumer", "members": 3, "steps": 2}),
                          "g.yaml")
    implicit = parse_grid(_grid(assignors=["range"], params={"members": 3, "steps": 2}), "g.yaml")
    assert explicit.scenarios() == implicit.scenarios()


def test_streams_grid_errors_name_their_yaml_path() -> None:
    need_registered(*STREAMS, "range", optimum=STREAMS_OPTIMAL)
    p = _grid()["params"]
    assert grid_problems(_grid(params={**p, "clients": [2, 0], "initial": "warm"})) == [
        "params.clients[1]: must be >= 1, got 0",
        "params.initial: must be one of fresh, caught-up, near, far, mixed; got 'warm'",
    ]
    assert grid_problems(_grid(params=[{"members": 2}, {**p, "members": 3}]))[0].startswith(
        "params[1].members: unknown Streams parameter")
    assert grid_problems(_grid(params={**p, "events": ["join", "topic-added"]}))[0].startswith(
        "params.events: unknown Streams event kind(s) 'topic-added'")
    assert grid_problems(_grid(params={**p, "protocol": ["consumer", "streams"]})) == [
        "params.protocol: one protocol per params mapping (a list of mappings mixes protocols)"]
    assert grid_problems(_grid(params={**p, "threads_min": [1, 3], "threads_max": 2})) == [
        "params.threads_max: must be >= threads_min (3) (combination clients=2, threads_min=3)",
        "params.threads_max: must be >= threads_min (3) (combination clients=3, threads_min=3)"]
    # assignors of a protocol without scenarios, and scenarios without assignors of their protocol
    assert grid_problems(_grid(assignors=["range", "high-availability"])) == [
        "assignors[0]: 'range' is a consumer assignor but no params mapping generates consumer scenarios"]
    assert grid_problems(_grid(assignors=["high-availability"], params={"members": 3})) == [
        "assignors[0]: 'high-availability' is a streams assignor but no params mapping generates streams "
        "scenarios (add protocol: streams)",
        "assignors: no consumer assignor listed for the consumer scenarios"]


def test_example_streams_grid_is_valid() -> None:
    need_registered(*STREAMS, optimum=STREAMS_OPTIMAL)
    g = read_grid(REPO / "examples" / "sweep-streams-small.yaml")
    assert len(g.scenarios()) == 12
    assert g.evaluated == (*STREAMS, STREAMS_OPTIMAL)


# --------------------------------------------------------------------------- Spark


@pytest.mark.spark
def test_streams_sweep_rows_and_report(spark: object, tmp_path: Path) -> None:
    need_registered("high-availability", "range", optimum=STREAMS_OPTIMAL)
    # one Streams block and one consumer block: both protocols in one Parquet dataset
    doc = _grid(seeds=1, assignors=["high-availability", "range"],
                params=[_grid()["params"], {"members": 3, "topics": 1, "partitions_min": 2, "partitions_max": 3,
                                            "steps": 1, "events": ["join"]}])
    g = parse_grid(doc, "g.yaml")
    out = tmp_path / "sweep"
    s1 = run_sweep(g, out, spark=spark, log=lambda _: None)
    want = pd.DataFrame([r for _sid, seed, p in g.scenarios()
                         for r in evaluate_scenario(p, seed, g.evaluated_for(protocol_of(p)), g.solver_time_limit)])
    df = load_rows(out)
    assert s1.evaluated == 3 and s1.rows_total == len(want) == len(df)
    assert sorted(p.name for p in (out / "rows").iterdir() if p.is_dir()) == [
        "assignor=high-availability", f"assignor={OPTIMAL}", f"assignor={STREAMS_OPTIMAL}", "assignor=range"]
    pd.testing.assert_frame_equal(comparable(df[want.columns]), comparable(want), check_dtype=False)
    streams = df[df["protocol"] == "streams"]
    assert set(streams["assignor"]) == {"high-availability", STREAMS_OPTIMAL}
    assert streams["active_balance_gap"].notna().all() and streams["max_load"].isna().all()
    assert set(df[df["protocol"] == "consumer"]["assignor"]) == {"range", OPTIMAL}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["assignors"] == ["range", OPTIMAL, "high-availability", STREAMS_OPTIMAL]

    # re-run: nothing left to do
    s2 = run_sweep(g, out, spark=spark, log=lambda _: None)
    assert (s2.evaluated, s2.skipped, s2.rows_total) == (0, 3, len(want))

    build_report(out)
    folder = out / "report"
    for f in ("index.html", "summary.md", "summary.csv", "summary_streams.csv", "streams_gaps.png", "gaps.png"):
        assert (folder / f).stat().st_size > 0, f
    md = (folder / "summary.md").read_text()
    assert "## Streams summary" in md and "## Overview" in md
    assert f"| {STREAMS_OPTIMAL} |" in md and "| high-availability |" in md
    summary = pd.read_csv(folder / "summary_streams.csv")
    assert list(summary["assignor"]) == ["high-availability", STREAMS_OPTIMAL]
    assert summary.set_index("assignor").loc[STREAMS_OPTIMAL, "balance_optimal_share"] == 1.0
