"""Kafka's own HighAvailabilityTaskAssignor output (shared/scenarios/kafka/streams-*.jsonl.gz): exact match.

Active sets must be equal, ``standby + warmup`` must equal Kafka's standby set
(Kafka reports warm-ups as standbys) and ``probing_rebalance`` must agree; in the
rack-aware files (KIP-925) also whether Kafka turned rack awareness on
(``expected.rack_aware``).
"""

from __future__ import annotations

from typing import Any

import pytest

from solver.registry import get
from solver.result import Params
from tests.conftest import kafka_records


def _mismatch(expected: dict[str, Any], result: Any) -> str | None:
    asg = result.assignment
    if "rack_aware" in expected and expected["rack_aware"] != result.extra["rack_aware"]:
        return f"rack_aware {result.extra['rack_aware']}, Kafka {expected['rack_aware']}"
    if expected["probing_rebalance"] != asg.probing_rebalance:
        return f"probing_rebalance {asg.probing_rebalance}, Kafka {expected['probing_rebalance']}"
    if set(expected["assignment"]) != set(asg.clients):
        return "different clients"
    for cid, exp in expected["assignment"].items():
        got = asg.get(cid)
        if set(got.active) != set(exp["active"]):
            return f"{cid}: active {sorted(got.active)}, Kafka {exp['active']}"
        if set(got.standby) | set(got.warmup) != set(exp["standby"]):
            return f"{cid}: standby+warmup {sorted(set(got.standby) | set(got.warmup))}, Kafka {exp['standby']}"
    return None


@pytest.mark.parametrize("filename", ["streams-small.jsonl.gz", "streams-medium.jsonl.gz",
                                      "streams-rack-small.jsonl.gz", "streams-rack-medium.jsonl.gz"])
def test_high_availability_matches_kafka(filename: str, registry_loaded: None) -> None:
    records = kafka_records(filename)
    spec = get("high-availability")
    failures = []
    total = 0
    for rec in records:
        assert rec.raw["assignor"] == "high-availability"
        total += 1
        why = _mismatch(rec.raw["expected"], spec.run(rec.instance, Params()))
        if why:
            failures.append(f"{rec.id}: {why}")
    print(f"\n{filename} high-availability: matched {total - len(failures)}/{total}")
    assert total > 0
    assert not failures, "\n".join(failures[:20])


def test_rack_fixtures_exercise_both_strategies_and_both_outcomes(registry_loaded: None) -> None:
    # the rack files are only a check if rack awareness is on (and off) in them, under both strategies
    seen = set()
    for name in ("streams-rack-small.jsonl.gz", "streams-rack-medium.jsonl.gz"):
        for rec in kafka_records(name):
            seen.add((rec.instance.streams.config.rack_aware_assignment_strategy, rec.raw["expected"]["rack_aware"]))
    assert seen == {(s, on) for s in ("min_traffic", "balance_subtopology") for on in (True, False)}


@pytest.mark.parametrize("filename", ["streams-sticky-small.jsonl.gz", "streams-sticky-medium.jsonl.gz"])
def test_sticky_task_matches_kafka(filename: str, registry_loaded: None) -> None:
    """Kafka's LegacyStickyTaskAssignor (record assignor ``sticky-task``): actives, standbys, no probing."""
    records = kafka_records(filename)
    spec = get("sticky-task")
    failures = []
    for rec in records:
        assert rec.raw["assignor"] == "sticky-task"
        why = _mismatch(rec.raw["expected"], spec.run(rec.instance, Params()))
        if why:
            failures.append(f"{rec.id}: {why}")
    total = len(records)
    print(f"\n{filename} sticky-task: matched {total - len(failures)}/{total}")
    assert total == {"streams-sticky-small.jsonl.gz": 500, "streams-sticky-medium.jsonl.gz": 75}[filename]
    assert not failures, "\n".join(failures[:20])
