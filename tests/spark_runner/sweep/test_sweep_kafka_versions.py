"""Sweeps and Kafka releases (grid ``kafka_version``, ``NAME@X.Y.Z`` assignors, resume safety) and KIP-1071
scenarios (processes of several members, member events), without Spark except the last test."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from solver.kafka_version import KafkaVersionError
from spark_runner.scenarios.streams import StreamsScenarioParams, generate_streams
from spark_runner.sweep.batches import run_sweep
from spark_runner.sweep.evaluate import STREAMS_OPTIMAL, evaluate_scenario
from spark_runner.sweep.grid import parse_grid, read_grid, with_kafka_version
from spark_runner.sweep.report import load_rows
from spark_runner.sweep.store import ReleaseMismatchError, check_release
from tests.spark_runner.sweep.conftest import assert_row_types, grid_problems, need_registered

REPO = Path(__file__).resolve().parents[3]
KIP1071 = {"protocol": "streams", "kip1071": True, "clients": 3, "threads_min": 1, "threads_max": 3,
           "subtopologies": 2, "partitions_min": 2, "partitions_max": 5, "standby_replicas": 1, "initial": "mixed",
           "steps": 6, "events": ["join", "crash", "rolling-restart", "member-join", "member-leave",
                                  "member-restart", "partition-expansion"]}


def _grid(**over: object) -> dict:
    doc: dict = {"name": "kv", "seeds": 1, "assignors": ["streams-server-sticky", "streams-server-sticky@4.3.1"],
                 "solver_time_limit": 5, "params": KIP1071}
    doc.update(over)
    return doc


def test_grid_release_and_versioned_assignors() -> None:
    need_registered("streams-server-sticky", optimum=STREAMS_OPTIMAL)
    g = parse_grid(_grid(kafka_version="4.3"), "g.yaml")
    assert g.kafka_version == "4.3.2"
    assert g.evaluated == ("streams-server-sticky", "streams-server-sticky@4.3.1", STREAMS_OPTIMAL)
    assert parse_grid(_grid(assignors=["streams-server-sticky@4.4"]), "g.yaml").assignors == (
        "streams-server-sticky@4.4.0",)
    assert grid_problems(_grid(kafka_version="9.9")) == [
        "kafka_version: unknown Kafka version '9.9'; kassign knows 3.0.0-3.0.2; 3.1.0-3.1.2; 3.2.0-3.2.3; "
        "3.3.0-3.3.2; 3.4.0-3.4.1; 3.5.0-3.5.2; 3.6.0-3.6.2; 3.7.0-3.7.2; 3.8.0-3.8.1; 3.9.0-3.9.2; 4.0.0-4.0.2; "
        "4.1.0-4.1.2; 4.2.0-4.2.2; 4.3.0-4.3.2; 4.4.0 (X.Y: the newest release of that line)"]
    assert grid_problems(_grid(assignors=["streams-server-sticky@4.1", "state-store-weighted@4.4"])) == [
        "assignors[0]: assignor 'streams-server-sticky' is not in Kafka 4.1.2: kassign models it from Kafka 4.2.0 "
        "(the Streams rebalance protocol (KIP-1071) was early access in 4.1 with another assignor (task pairs); "
        "generally available from 4.2.0)",
        "assignors[1]: 'state-store-weighted' is not named after a Kafka assignor: it has no Kafka release"]
    assert grid_problems(_grid(kafka_version="4.1", assignors=["streams-server-sticky", "high-availability"])) == [
        "assignors[0]: 'streams-server-sticky' is not in Kafka 4.1.2 (kafka_version)"]
    # `all` takes the assignors the release has
    every = parse_grid(_grid(kafka_version="3.8", assignors="all"), "g.yaml").assignors
    assert "kip924-sticky" in every and "streams-server-sticky" not in every


def test_the_flag_overrides_the_grid_and_checks_the_assignors() -> None:
    need_registered("streams-server-sticky", optimum=STREAMS_OPTIMAL)
    g = parse_grid(_grid(kafka_version="4.3"), "g.yaml")
    assert with_kafka_version(g, "4.4").kafka_version == "4.4.0"
    with pytest.raises(KafkaVersionError, match=r"--kafka-version 4\.1: assignor 'streams-server-sticky' is not in"):
        with_kafka_version(g, "4.1")


def test_a_directory_of_another_release_is_not_resumed(tmp_path: Path) -> None:
    need_registered("streams-server-sticky", optimum=STREAMS_OPTIMAL)
    (tmp_path / "rows").mkdir()
    (tmp_path / "manifest.json").write_text(json.dumps({"kafka_version": "4.3.1"}))
    check_release(tmp_path, parse_grid(_grid(kafka_version="4.3.1"), "g.yaml"))  # same release: fine
    with pytest.raises(ReleaseMismatchError, match=r"holds rows made following Kafka 4\.3\.1; this sweep follows "
                                                   r"Kafka 4\.4\.0"):
        check_release(tmp_path, parse_grid(_grid(), "g.yaml"))


def test_kip1071_scenarios_carry_members_through_every_event() -> None:
    need_registered("streams-server-sticky", "high-availability", optimum=STREAMS_OPTIMAL)
    p = StreamsScenarioParams(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in KIP1071.items()})
    s = generate_streams(p, 4)
    assert {e.kind for e in s.events} & {"member-join", "member-leave", "member-restart"}
    for c in s.initial.streams.clients:
        assert c.members is not None and len(c.members) == c.capacity
        assert all(len(m.id) == 22 for m in c.members)
    rows = evaluate_scenario(p, 4, ["streams-server-sticky", "streams-server-sticky@4.3.1", "high-availability"],
                             5, kafka_version="4.4")
    assert_row_types(rows)
    assert {(r["assignor"], r["kafka_version"]) for r in rows} == {
        ("streams-server-sticky", "4.4.0"), ("streams-server-sticky@4.3.1", "4.3.1"),
        ("high-availability", "4.4.0"), (STREAMS_OPTIMAL, None)}
    for r in rows:
        assert r["error"] is None, r
        per_member = r["assignor"].startswith("streams-server-sticky") or r["assignor"] == STREAMS_OPTIMAL
        assert (r["max_member_tasks"] is not None) == per_member
        if r["assignor"] == STREAMS_OPTIMAL:
            assert r["member_spread"] <= 1 and r["member_balance_gap"] == 0.0
    again = evaluate_scenario(p, 4, ["streams-server-sticky"], 5)  # the default release is 4.4: the same rows
    assert ([r["max_member_tasks"] for r in again if r["assignor"] == "streams-server-sticky"]
            == [r["max_member_tasks"] for r in rows if r["assignor"] == "streams-server-sticky"])


def test_member_events_need_kip1071() -> None:
    need_registered("high-availability", optimum=STREAMS_OPTIMAL)
    params = {**KIP1071, "kip1071": False}
    assert grid_problems(_grid(assignors=["high-availability"], params=params)) == [
        "params.events: member-join, member-leave, member-restart need kip1071: true (processes with members) "
        "(combination all values)", "params: every one of the 1 combination(s) is invalid"]


def test_kip1071_example_grid_is_valid() -> None:
    need_registered("streams-server-sticky", "kip924-sticky", "high-availability", optimum=STREAMS_OPTIMAL)
    g = read_grid(REPO / "examples" / "sweep-kip1071-small.yaml")
    assert len(g.scenarios()) == 12 and g.kafka_version == "4.4.0"
    assert g.evaluated == ("streams-server-sticky", "streams-server-sticky@4.3.1", "kip924-sticky",
                           "high-availability", STREAMS_OPTIMAL)


@pytest.mark.spark
def test_kip1071_sweep_on_spark(spark: object, tmp_path: Path) -> None:
    need_registered("streams-server-sticky", optimum=STREAMS_OPTIMAL)
    g = parse_grid(_grid(params={**KIP1071, "steps": 3}), "g.yaml")
    out = tmp_path / "sweep"
    s = run_sweep(g, out, spark=spark, log=lambda _: None)
    df = load_rows(out)
    assert s.rows_total == len(df) == 3 * 4
    assert set(df["assignor"]) == {"streams-server-sticky", "streams-server-sticky@4.3.1", STREAMS_OPTIMAL}
    assert set(df.loc[df["assignor"] != STREAMS_OPTIMAL, "kafka_version"]) == {"4.4.0", "4.3.1"}
    assert pd.notna(df.loc[df["assignor"] == STREAMS_OPTIMAL, "member_spread"]).all()
    assert json.loads((out / "manifest.json").read_text())["kafka_version"] == "4.4.0"
    with pytest.raises(ReleaseMismatchError):
        run_sweep(parse_grid(_grid(params={**KIP1071, "steps": 3}, kafka_version="4.3.1"), "g.yaml"), out,
                  spark=spark, log=lambda _: None)
