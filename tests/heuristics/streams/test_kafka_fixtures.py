"""Kafka's own HighAvailabilityTaskAssignor output (shared/scenarios/kafka/streams-*.jsonl.gz): exact match.

Active sets must be equal, ``standby + warmup`` must equal Kafka's standby set
(Kafka reports warm-ups as standbys) and ``probing_rebalance`` must agree.
"""

from __future__ import annotations

from typing import Any

import pytest

from solver.registry import get
from solver.result import Params
from tests.conftest import kafka_records


def _mismatch(expected: dict[str, Any], result: Any) -> str | None:
    asg = result.assignment
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


@pytest.mark.parametrize("filename", ["streams-small.jsonl.gz", "streams-medium.jsonl.gz"])
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
