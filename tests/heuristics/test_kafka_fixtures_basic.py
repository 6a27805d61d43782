"""Kafka's own range / roundrobin / uniform / server-range output (shared/scenarios/kafka): exact match.

Every record of ``small`` and ``medium`` for each assignor is run through the
registered assignor; its canonical assignment must equal Kafka's
(commit 1eb7644349cb).  The matched/total figures are printed (``pytest -s``).
"""

from __future__ import annotations

import pytest

from solver.registry import get
from solver.result import Params
from tests.conftest import kafka_records

ASSIGNORS = ["range", "roundrobin", "uniform", "server-range"]


@pytest.mark.parametrize("assignor", ASSIGNORS)
@pytest.mark.parametrize("filename", ["small.jsonl.gz", "medium.jsonl.gz"])
def test_assignor_matches_kafka_exactly(filename: str, assignor: str, registry_loaded: None) -> None:
    spec = get(assignor)
    total = 0
    failures = []
    for rec in kafka_records(filename):
        if rec.raw["assignor"] != assignor:
            continue
        total += 1
        got = spec.run(rec.instance, Params()).assignment.canonical(rec.instance.member_ids)
        if got != rec.raw["expected"]:
            diff = [m for m in rec.raw["expected"] if rec.raw["expected"][m] != got.get(m)]
            failures.append(f"{rec.id} ({rec.raw['tags']}): members differing {diff[:3]}")
    print(f"\n{filename} {assignor}: matched {total - len(failures)}/{total}")
    assert total > 0, f"no {assignor} records in {filename}"
    assert not failures, "\n".join(failures[:20])
