"""Kafka's own StickyAssignor / CooperativeStickyAssignor output (shared/scenarios/kafka): exact match.

Every record of ``small`` and ``medium`` for ``sticky`` and
``cooperative-sticky`` is run through the registered assignor (first round,
as Kafka's ``assign``) and its canonical assignment must equal Kafka's.
"""

from __future__ import annotations

import itertools

import pytest

from solver.registry import get
from solver.result import Params
from tests.conftest import kafka_mismatches, kafka_records


@pytest.mark.parametrize("assignor", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("filename", ["small.jsonl.gz", "medium.jsonl.gz"])
def test_sticky_assignors_match_kafka(filename: str, assignor: str, registry_loaded: None) -> None:
    total, failures = kafka_mismatches(filename, assignor)
    assert total > 0
    assert not failures, "\n".join(failures[:20])


def test_cooperative_follow_up_rounds_assign_what_was_withheld(registry_loaded: None) -> None:
    """A round-0 record followed by its round-1 record: what Kafka withheld is assigned next round."""
    records = [r for r in kafka_records("small.jsonl.gz") if r.raw["assignor"] == "cooperative-sticky"]
    spec = get("cooperative-sticky")
    pairs = 0
    for first, second in itertools.pairwise(records):
        if second.raw["tags"]["round"] != first.raw["tags"]["round"] + 1:
            continue
        res = spec.run(first.instance, Params())
        assert res.extra["withheld"] > 0, first.id
        # the follow-up instance owns exactly what Kafka handed out in the first round
        for m in second.instance.members:
            owned = {t: a.tolist() for t, a in m.owned.items() if a.size}
            assert owned == first.raw["expected"][m.id], (second.id, m.id)
        pairs += 1
    assert pairs > 10
