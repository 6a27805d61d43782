"""Kafka's limits and kassign's documented numeric limits (docs/format.md#limits), each with its JSON path."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from solver.errors import InstanceError
from solver.io import parse_instance

INT32 = "(Kafka holds it in a 32-bit int)"
BASE: dict[str, Any] = {
    "format": "kassign/v1",
    "topics": {"T1": 4, "T2": {"partitions": 4}},
    "members": [{"id": "C1", "topics": ["T1", "T2"]}, {"id": "C2", "topics": ["T1", "T2"]}],
}
STREAMS: dict[str, Any] = {
    "format": "kassign/v1", "protocol": "streams",
    "tasks": [{"id": "0_1"}],
    "clients": [{"id": "c1", "process_id": "00000000-0000-0000-0000-000000000001"}],
}


def problems(doc: dict[str, Any]) -> list[str]:
    with pytest.raises(InstanceError) as e:
        parse_instance(doc, "in.json")
    assert e.value.exit_code == 65
    return [str(p) for p in e.value.problems]


def mutated(base: dict[str, Any], fn: Any) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    fn(doc)
    return doc


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: d["topics"].update(T1=2**31), f"topics.T1.partitions: Input should be less than or equal to "
                                             f"2147483647 {INT32}"),
    (lambda d: d["topics"].update(T1=10**12), "topics.T1.partitions: Input should be less than or equal to"),
    (lambda d: d["topics"]["T2"].update(partitions=2**63), "topics.T2.partitions: Input should be less than"),
    (lambda d: d["members"][0].update(generation=2**70), f"members[0].generation: Input should be less than or "
                                                         f"equal to 2147483647 {INT32}"),
    (lambda d: d["members"][0].update(owned={"T1": [2**64]}), "members[0].owned.T1[0]: Input should be less than "
                                                              "or equal to 2147483647"),
    (lambda d: d["members"][0].update(owned={"T1": [2**64, 2**64]}), "members[0].owned.T1[0]: Input should be"),
    (lambda d: d["topics"]["T2"].update(id="not-a-uuid"), "topics.T2.id: Value error, 'not-a-uuid' is not a topic "
                                                          "id"),
    (lambda d: d.update(copartition=[["T1", "T1", "T2"]]), "copartition[0][1]: topic 'T1' listed twice (also "
                                                           "copartition[0][0])"),
    (lambda d: d["topics"]["T2"].update(weights=[1e308] * 4), "topics.T2.weights: the weights of the document sum "
                                                              "to more than 1e+100"),
    (lambda d: d["topics"]["T2"].update(move_costs=[1e100] * 4), "topics.T2.move_costs: the move_costs of the "
                                                                "document sum to more than 1e+100"),
    (lambda d: d["members"][0].update(capacity=1e-300), "members[0].capacity: Input should be greater than or "
                                                        "equal to 0.000001 (the capacity range is 1e-06..1e+06)"),
    (lambda d: d["members"][0].update(capacity=1e7), "members[0].capacity: Input should be less than or equal to"),
])
def test_consumer_limits(mutate: Any, expected: str) -> None:
    found = problems(mutated(BASE, mutate))
    assert any(p.startswith(expected) for p in found), found


def test_topic_ids_in_kafka_forms_are_accepted() -> None:
    for tid in ("MSLsJ2pqSNqWPf3TcNi_dg", "-SLsJ2pqSNqWPf3TcNi_dg", "0b5f0c6e-3b1a-4d3c-9a55-6b6f2c7e2a10"):
        inst = parse_instance(mutated(BASE, lambda d, t=tid: d["topics"]["T2"].update(id=t)))
        assert inst.topics["T2"].id == tid


def test_largest_int32_values_are_accepted() -> None:
    doc = mutated(BASE, lambda d: (d["topics"].update(T1=2**31 - 1), d["members"][0].update(generation=2**31 - 1)))
    inst = parse_instance(doc)
    assert inst.topics["T1"].partitions == 2**31 - 1  # valid; the memory guard decides whether a command can run


@pytest.mark.parametrize(("mutate", "expected"), [
    (lambda d: d.update(tasks=[{"id": "0_1"}, {"id": "00_01"}]),
     "tasks[1].id: duplicate task id '00_01' (also tasks[0], the same TaskId as '0_1')"),
    (lambda d: d.update(tasks=[{"id": f"0_{2**40}"}]),
     f"tasks[0].id: task id '0_{2**40}': partition above 2147483647 (Kafka's TaskId holds a 32-bit int)"),
    (lambda d: d.update(tasks=[{"id": "9" * 5000 + "_1"}]), "tasks[0].id: task id '9999"),
    (lambda d: (d.pop("tasks"), d.update(subtopologies=[{"id": 0, "source_topics": {"a": 10**12}}])),
     f"subtopologies[0].source_topics.a: Input should be less than or equal to 2147483647 {INT32}"),
    (lambda d: d.update(config={"num_standby_replicas": 2**31}), "config.num_standby_replicas: Input should be"),
    (lambda d: d["clients"][0].update(capacity=2**40), "clients[0].capacity: Input should be less than or equal"),
])
def test_streams_limits(mutate: Any, expected: str) -> None:
    found = problems(mutated(STREAMS, mutate))
    assert any(p.startswith(expected) for p in found), found


@pytest.mark.parametrize("protocol", ["consumer", "streams"])
def test_a_document_of_too_many_problems_says_how_many_without_describing_each(protocol: str) -> None:
    """Was: two million unknown keys took minutes (pydantic describes each error in about 12 microseconds, then
    every line was printed)."""
    import time

    from solver.model.schema import MAX_LISTED_PROBLEMS

    doc: dict[str, Any] = {"format": "kassign/v1", "protocol": protocol,
                           **{f"k{i}": i for i in range(MAX_LISTED_PROBLEMS + 1)}}
    t0 = time.perf_counter()
    with pytest.raises(InstanceError) as e:
        parse_instance(doc, "big.json")
    assert time.perf_counter() - t0 < 10
    assert [str(p) for p in e.value.problems] == [
        f"{MAX_LISTED_PROBLEMS + 1 + (protocol == 'consumer'):,} problems, too many to list (is this a kassign/v1 "
        f"document? see docs/format.md)"]


def test_rendering_stops_after_ten_thousand_lines() -> None:
    from solver.errors import Problem

    e = InstanceError("f.json", [Problem(f"a[{i}]", "bad") for i in range(10_005)])
    lines = e.render().splitlines()
    assert len(lines) == 10_001 and lines[-1] == "f.json: ... and 5 more problems" and lines[0] == "f.json: a[0]: bad"
