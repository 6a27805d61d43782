"""Kafka's own range / roundrobin / uniform / server-range output (shared/scenarios/kafka): exact match.

Every record of ``small``, ``medium`` and ``uniform-owned-order`` for each
assignor is run through the registered assignor at the Kafka version the file
was made with (commit 1eb7644349cb, 4.0.0-SNAPSHOT: ``uniform`` then follows
4.0.0's rule); its canonical assignment must equal Kafka's.  The matched/total
figures are printed (``pytest -s``).  The newer files are checked in
``test_kafka_fixture_versions.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from solver.io import parse_instance
from solver.registry import get
from solver.result import Params
from tests.conftest import fixture_version, kafka_mismatches, kafka_records

ASSIGNORS = ["range", "roundrobin", "uniform", "server-range"]


@pytest.mark.parametrize("assignor", ASSIGNORS)
@pytest.mark.parametrize("filename", ["small.jsonl.gz", "medium.jsonl.gz"])
def test_assignor_matches_kafka_exactly(filename: str, assignor: str, registry_loaded: None) -> None:
    total, failures = kafka_mismatches(filename, assignor)
    assert total > 0, f"no {assignor} records in {filename}"
    assert not failures, "\n".join(failures[:20])


#: The uniform records whose answer depends on the order of a member's ``owned`` topics (scenarios README).
ORDER_SENSITIVE = {"s103-5-uniform-1-0", "s103-23-uniform-1-0", "s103-23-uniform-3-0", "s103-24-uniform-1-0",
                   "s103-24-uniform-3-0", "s103-43-uniform-3-0"}


@pytest.mark.parametrize("assignor", ["uniform", "server-range"])
def test_owned_order_records_match_kafka(assignor: str, registry_loaded: None) -> None:
    """``owned`` topics inserted into Kafka's map in a random order per member: the instance's order is used."""
    spec = get(assignor)
    records = [r for r in kafka_records("uniform-owned-order.jsonl.gz") if r.raw["assignor"] == assignor]
    failures = [r.id for r in records
                if spec.run(r.instance, Params(kafka_version=fixture_version(r))).assignment.canonical(
                    r.instance.member_ids) != r.raw["expected"]]
    print(f"\nuniform-owned-order.jsonl.gz {assignor}: matched {len(records) - len(failures)}/{len(records)}")
    assert len(records) == 192
    assert not failures, failures[:20]


def test_owned_order_is_what_decides_the_sensitive_records(registry_loaded: None) -> None:
    """Another insertion order of the same ``owned`` changes kassign's answer where it changes Kafka's."""
    spec = get("uniform")
    records = {r.id: r for r in kafka_records("uniform-owned-order.jsonl.gz")}
    assert set(records) >= ORDER_SENSITIVE

    def run(raw: dict[str, Any], order: Callable[[list[str]], list[str]]) -> dict[str, Any]:
        members = [{**m, "owned": {t: m["owned"][t] for t in order(list(m.get("owned", {})))}}
                   for m in raw["members"]]
        inst = parse_instance({**raw, "members": members})
        return spec.run(inst, Params(kafka_version="4.0.0")).assignment.canonical(inst.member_ids)

    for rid in sorted(ORDER_SENSITIVE):
        raw, expected = records[rid].raw["instance"], records[rid].raw["expected"]
        assert run(raw, lambda ts: ts) == expected
        others = [run(raw, order) for order in (sorted, lambda ts: sorted(ts, reverse=True), lambda ts: ts[::-1])]
        assert any(got != expected for got in others), rid
