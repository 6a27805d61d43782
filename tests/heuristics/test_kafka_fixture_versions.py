"""Kafka's own answers at the release each file was made with (shared/scenarios/kafka, README's version table).

``uniform-4.3``, ``streams-server-sticky-4.3`` and ``streams-kip924-sticky-4.3`` are Kafka 4.3.1's answers;
``streams-server-sticky-4.4`` and ``streams-kip924-sticky-4.4`` Kafka 4.4's.  Every record runs at its own
``kafka_version`` (given explicitly, and again as the instance carries it when read), and the 4.4 files also with
no version at all (the default is 4.4).  The same records at the *other* release differ exactly as often as the
README says Kafka's classes differ, so the version switch does what Kafka's releases do.

Five records name two processes alike (a defect of the files: the client name is only a label, Kafka keys
processes by process id): the instance gets the second one renamed (``tests.conftest.kafka_records``), and
Kafka's answer under that name is the union of both (``streams-server-sticky``, whose members are compared one
by one anyway) or the last one's (``streams-kip924-sticky``, whose file kept only that one).
"""

from __future__ import annotations

import collections
from dataclasses import replace
from typing import Any

import pytest

from solver.io import Record
from solver.model import Instance
from solver.registry import get
from solver.result import Params
from tests.conftest import fixture_version, kafka_records

#: file -> (assignor, records, the Kafka version every record carries)
FILES = {
    "uniform-4.3.jsonl.gz": ("uniform", 300, "4.3.1"),
    "streams-server-sticky-4.3.jsonl.gz": ("streams-server-sticky", 300, "4.3.1"),
    "streams-kip924-sticky-4.3.jsonl.gz": ("kip924-sticky", 300, "4.3.1"),
    "streams-server-sticky-4.4.jsonl.gz": ("streams-server-sticky", 300, "4.4.0-SNAPSHOT"),
    "streams-kip924-sticky-4.4.jsonl.gz": ("kip924-sticky", 300, "4.4.0-SNAPSHOT"),
}


def prepared(rec: Record) -> tuple[Instance, dict[str, str]]:
    """The instance to run (KIP-924's standby walk order from the record), and renamed client -> Kafka's name."""
    inst, old = rec.instance, dict(rec.raw.get("renamed_clients", {}))
    order = rec.raw["expected"].get("standby_task_order") if isinstance(rec.raw["expected"], dict) else None
    if order is not None:
        inst = replace(inst, streams=replace(inst.streams, standby_task_order=tuple(order)))
    return inst, old


def mismatch(rec: Record, inst: Instance, old: dict[str, str], result: Any, actives_only: bool = False) -> str | None:
    """Why ``result`` is not Kafka's answer in ``rec`` (``None`` when it is)."""
    expected = rec.raw["expected"]
    if inst.protocol == "consumer":
        got = result.assignment.canonical(inst.member_ids)
        differing = [m for m in expected if expected[m] != got.get(m)]
        return f"members differing: {differing[:3]}" if differing else None
    doc = result.assignment.to_json_dict()
    kinds = ("active",) if actives_only else ("active", "standby")
    if "members" in expected:
        for m, exp in expected["members"].items():
            for kind in kinds:
                if set(doc["members"][m][kind]) != set(exp[kind]):
                    return f"member {m}: {kind} {doc['members'][m][kind]}, Kafka {exp[kind]}"
    union = rec.raw["assignor"] == "streams-server-sticky"
    view: dict[str, dict[str, set[str]]] = collections.defaultdict(lambda: {"active": set(), "standby": set()})
    for c, tasks in doc["assignment"].items():
        name = old.get(c, c)
        if not union:
            view[name] = {"active": set(), "standby": set()}  # the file kept the last client of a name
        view[name]["active"] |= set(tasks["active"])
        view[name]["standby"] |= set(tasks["standby"]) | set(tasks["warmup"])
    for c, exp in expected["assignment"].items():
        for kind in kinds:
            if view[c][kind] != set(exp[kind]):
                return f"{c}: {kind} {sorted(view[c][kind])}, Kafka {exp[kind]}"
    if not actives_only and doc["probing_rebalance"] != expected["probing_rebalance"]:
        return "probing_rebalance differs"
    return None


def failures(filename: str, version: str | None, *, strip_version: bool = False,
             actives_only: bool = False) -> tuple[int, list[str]]:
    """Run every record of ``filename`` (at ``version``; ``None``: no flag) and list the records that differ."""
    assignor, _, _ = FILES.get(filename, ("uniform", 0, ""))
    spec = get(assignor)
    records = [r for r in kafka_records(filename) if r.raw["assignor"] == spec.name]
    out = []
    for rec in records:
        inst, old = prepared(rec)
        if strip_version:
            inst = replace(inst, kafka_version=None)
        why = mismatch(rec, inst, old, spec.run(inst, Params(kafka_version=version)), actives_only)
        if why:
            out.append(f"{rec.id}: {why}")
    return len(records), out


@pytest.mark.parametrize("filename", sorted(FILES))
def test_every_record_matches_kafka_at_its_own_version(filename: str, registry_loaded: None) -> None:
    assignor, count, version = FILES[filename]
    records = kafka_records(filename)
    assert len(records) == count and {fixture_version(r) for r in records} == {version}
    assert all(r.instance.kafka_version == version for r in records)  # the record's version reaches the instance
    total, bad = failures(filename, version)
    print(f"\n{filename} {assignor} at {version}: matched {total - len(bad)}/{total}")
    assert total == count
    assert not bad, "\n".join(bad[:20])


@pytest.mark.parametrize("filename", ["uniform-4.3.jsonl.gz", "streams-server-sticky-4.3.jsonl.gz",
                                      "streams-kip924-sticky-4.4.jsonl.gz"])
def test_the_version_the_instance_carries_is_followed_without_a_flag(filename: str, registry_loaded: None) -> None:
    total, bad = failures(filename, None)
    assert total == 300 and not bad, "\n".join(bad[:20])


@pytest.mark.parametrize("filename", ["streams-server-sticky-4.4.jsonl.gz", "streams-kip924-sticky-4.4.jsonl.gz"])
@pytest.mark.parametrize("version", [None, "4.4"])
def test_4_4_files_match_by_default_and_at_4_4(filename: str, version: str | None, registry_loaded: None) -> None:
    total, bad = failures(filename, version, strip_version=True)
    print(f"\n{filename} at {version or 'the default'}: matched {total - len(bad)}/{total}")
    assert total == 300 and not bad, "\n".join(bad[:20])


#: (file, the other version, records whose answer differs there): the README's figures for Kafka's own classes.
OTHER_RELEASE = [
    ("small.jsonl.gz", "uniform", "4.3.1", 52, False),
    ("medium.jsonl.gz", "uniform", "4.3.1", 4, False),
    ("uniform-owned-order.jsonl.gz", "uniform", "4.3.1", 70, False),
    ("uniform-4.3.jsonl.gz", "uniform", "4.0.0", 95, False),
    ("streams-server-sticky-4.3.jsonl.gz", "streams-server-sticky", "4.4", 77, False),
    ("streams-server-sticky-4.4.jsonl.gz", "streams-server-sticky", "4.3.1", 218, False),
    ("streams-kip924-sticky-4.3.jsonl.gz", "kip924-sticky", "4.4", 86, True),
    ("streams-kip924-sticky-4.4.jsonl.gz", "kip924-sticky", "4.3.1", 133, True),
]


@pytest.mark.parametrize(("filename", "assignor", "version", "differ", "actives_only"), OTHER_RELEASE)
def test_another_release_differs_where_kafka_does(filename: str, assignor: str, version: str, differ: int,
                                                  actives_only: bool, registry_loaded: None) -> None:
    spec = get(assignor)
    records = [r for r in kafka_records(filename) if r.raw["assignor"] == assignor]
    n = 0
    for rec in records:
        inst, old = prepared(rec)
        n += mismatch(rec, inst, old, spec.run(inst, Params(kafka_version=version)), actives_only) is not None
    print(f"\n{filename} {assignor} at {version}: {n}/{len(records)} differ")
    assert n == differ


def test_kafka_4_4_process_order_decides_40_answers(registry_loaded: None) -> None:
    """The README's rule no release note mentions: 4.4's computeIfAbsent process map (40 of 300 answers)."""
    from heuristics.streams import server_sticky

    def run(rule: server_sticky.ReleaseRules, inst: Instance) -> Any:
        from solver.result import Result

        return Result(server_sticky.assign_with_rule(inst, rule))

    n = 0
    put_order = server_sticky.ReleaseRules(skip_holders_with_task=True, current_and_offsets=True,
                                           compute_if_absent=False)
    for rec in kafka_records("streams-server-sticky-4.4.jsonl.gz"):
        inst, old = prepared(rec)
        n += mismatch(rec, inst, old, run(put_order, inst)) is not None
    assert n == 40
