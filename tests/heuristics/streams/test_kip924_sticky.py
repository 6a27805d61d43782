"""KIP-924's public ``StickyTaskAssignor``: Kafka's own CustomStickyTaskAssignorTest cases, KAFKA-20198, properties.

The cases below are those of Kafka's ``CustomStickyTaskAssignorTest`` (Streams, 4.4 branch) with rack awareness
off: clients ``processId(i)`` are the UUIDs ``0...0i`` (a ``HashMap`` walks them in the test's order), tasks
``TASK_0_p`` are ``0_p``.  Kafka's tests mark tasks stateless while giving previous standbys; with no standby
replicas the flag changes nothing, and kassign takes standbys of stateful tasks only, so they are stateful here.
The Kafka fixture files are checked in ``tests/heuristics/test_kafka_fixture_versions.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics.streams.kip924_sticky import kip924_sticky_assign
from solver.io import parse_instance
from solver.kafka_version import KafkaVersion, KafkaVersionError
from solver.model import Instance
from solver.registry import UnsupportedInstanceError, get
from solver.result import Params
from solver.streams.format import streams_instance_to_dict


def pid(i: int) -> str:
    """Kafka's test ``processId(i)``: ``new UUID(0, i)``."""
    return f"00000000-0000-0000-0000-{i:012x}"


def group(tasks: int, clients: list[tuple[int, list[int], list[int]]], standbys: int = 0,
          stateful: bool = True) -> Instance:
    """``tasks`` tasks ``0_p``; clients ``(threads, previous actives, previous standbys)`` named ``c1``, ``c2`` ..."""
    return parse_instance({
        "format": "kassign/v1", "protocol": "streams",
        "tasks": [{"id": f"0_{p}", "stateful": stateful} for p in range(tasks)],
        "clients": [{"id": f"c{k + 1}", "process_id": pid(k + 1), "capacity": threads,
                     "active": [f"0_{p}" for p in act], "standby": [f"0_{p}" for p in sb]}
                    for k, (threads, act, sb) in enumerate(clients)],
        "config": {"num_standby_replicas": standbys}})


def active(inst: Instance, version: str = "4.4") -> dict[str, set[str]]:
    a = kip924_sticky_assign(inst, KafkaVersion.parse(version))
    return {c: set(ca.active) for c, ca in a.clients.items()}


@pytest.mark.parametrize("version", ["3.8", "4.3", "4.4"])
def test_kafka_custom_sticky_task_assignor_tests(version: str) -> None:
    # shouldAssignOneActiveTaskToEachProcessWhenTaskCountSameAsProcessCount
    got = active(group(3, [(1, [], []), (1, [], []), (1, [], [])], stateful=False), version)
    assert all(len(v) == 1 for v in got.values())
    # shouldNotMigrateActiveTaskToOtherProcess (both runs)
    got = active(group(3, [(1, [0], []), (1, [1], [])], stateful=False), version)
    assert "0_0" in got["c1"] and "0_1" in got["c2"]
    got = active(group(3, [(1, [1], []), (1, [0], [])], stateful=False), version)
    assert "0_1" in got["c1"] and "0_0" in got["c2"]
    # shouldMigrateActiveTasksToNewProcessWithoutChangingAllAssignments
    got = active(group(3, [(1, [0, 2], []), (1, [1], []), (1, [], [])], stateful=False), version)
    assert [len(got[c]) for c in ("c1", "c2", "c3")] == [1, 1, 1] and "0_1" in got["c2"]
    # shouldAssignTasksToClientWithPreviousStandbyTasks
    got = active(group(3, [(1, [], [2]), (1, [], [1]), (1, [], [0])]), version)
    assert got == {"c1": {"0_2"}, "c2": {"0_1"}, "c3": {"0_0"}}
    # shouldAssignBasedOnCapacityWhenMultipleClientHaveStandbyTasks
    got = active(group(3, [(1, [0], [1]), (2, [2], [1])]), version)
    assert got == {"c1": {"0_0"}, "c2": {"0_1", "0_2"}}


def test_kafka_20198_retains_fair_share_when_scaling_up() -> None:
    """CustomStickyTaskAssignorTest.shouldRetainFairShareOfPreviousTasksWhenScalingUp: 450 tasks, 10 + 10 threads,
    client 1 ran the first half; from 4.4 it keeps all 225, before it keeps 10 x floor(450 / 20) = 220 and
    loses 5 (they go to client 2, whose previous share was nothing)."""
    inst = group(450, [(10, list(range(225)), []), (10, [], [])], stateful=False)
    first_half = {f"0_{p}" for p in range(225)}
    assert len(active(inst, "4.4")["c1"] & first_half) == 225
    assert len(active(inst, "4.3")["c1"] & first_half) < 225


def _rounds_to_converge(version: str, max_rounds: int) -> int | None:
    prev: list[list[int]] = [list(range(450)), []]
    for r in range(1, max_rounds + 1):
        got = active(group(450, [(10, prev[0], []), (10, prev[1], [])], stateful=False), version)
        new = [sorted(int(t.split("_")[1]) for t in got[c]) for c in ("c1", "c2")]
        if new == prev:
            return r
        prev = new
    return None


def test_kafka_20198_converges_within_two_rounds_when_scaling_up() -> None:
    """CustomStickyTaskAssignorTest.shouldConvergeWithinTwoRoundsWhenScalingUp (the reporter's scenario: 450 tasks,
    10 + 10 threads, one client ran everything); 4.3's floor took more rounds."""
    assert _rounds_to_converge("4.4", 2) is not None
    assert _rounds_to_converge("4.3", 2) is None


def test_releases_before_3_8_do_not_have_it(registry_loaded: None) -> None:
    inst = group(2, [(1, [], []), (1, [], [])])
    with pytest.raises(KafkaVersionError, match=r"assignor 'kip924-sticky' is not in Kafka 3\.7\.2: kassign models "
                                                r"it from Kafka 3\.8\.0$"):
        get("kip924-sticky").run(inst, Params(kafka_version="3.7"))
    assert get("kip924-sticky").run(inst, Params(kafka_version="3.8.0")).extra["kafka_version"] == "3.8.0"


def test_standby_walk_order_without_standby_task_order_is_task_order() -> None:
    inst = group(6, [(1, [0, 1], []), (1, [2, 3], []), (1, [4, 5], [])], standbys=1)
    doc = streams_instance_to_dict(inst)
    given_order = parse_instance({**doc, "standby_task_order": [f"0_{p}" for p in range(6)]})
    assert kip924_sticky_assign(inst) == kip924_sticky_assign(given_order)
    other = parse_instance({**doc, "standby_task_order": [f"0_{p}" for p in (5, 3, 1, 0, 2, 4)]})
    a, b = kip924_sticky_assign(inst), kip924_sticky_assign(other)
    assert {c: ca.active for c, ca in a.clients.items()} == {c: ca.active for c, ca in b.clients.items()}


def test_rack_aware_optimisation_is_refused() -> None:
    doc = streams_instance_to_dict(group(2, [(1, [], []), (1, [], [])]))
    doc["config"]["rack_aware_assignment_strategy"] = "min_traffic"
    doc["tasks"] = [{**t, "source_racks": [["r1"]], "changelog_racks": [["r2"]]} for t in doc["tasks"]]
    doc["clients"] = [{**c, "rack": "r1"} for c in doc["clients"]]
    with pytest.raises(UnsupportedInstanceError, match="rack-aware optimisation"):
        kip924_sticky_assign(parse_instance(doc))


# --- properties ---------------------------------------------------------------------------------------------

@st.composite
def sticky_groups(draw: Any) -> tuple[Instance, list[set[str]]]:
    tasks = [{"id": f"{s}_{p}", "stateful": draw(st.booleans())} for s in range(draw(st.integers(1, 3)))
             for p in range(draw(st.integers(1, 10)))]
    n = draw(st.integers(1, 6))
    prev: list[set[str]] = [set() for _ in range(n)]
    standby: list[set[str]] = [set() for _ in range(n)]
    for t in tasks:
        owner = draw(st.integers(-1, n - 1))
        if owner >= 0:
            prev[owner].add(t["id"])
        if t["stateful"]:
            for c in draw(st.lists(st.integers(0, n - 1), max_size=2, unique=True)):
                if c != owner:
                    standby[c].add(t["id"])
    stateful = [t["id"] for t in tasks if t["stateful"]]
    doc = {"format": "kassign/v1", "protocol": "streams", "tasks": tasks,
           "clients": [{"id": f"c{k}", "process_id": str(draw(st.uuids())), "capacity": draw(st.integers(1, 6)),
                        "active": sorted(prev[k]), "standby": sorted(standby[k])} for k in range(n)],
           "config": {"num_standby_replicas": draw(st.integers(0, 2))}}
    if stateful and draw(st.booleans()):
        doc["standby_task_order"] = draw(st.permutations(stateful))
    return parse_instance(doc), prev


@settings(max_examples=150, deadline=None)
@given(sticky_groups(), st.sampled_from(["3.8", "4.3.2", "4.4"]))
def test_valid_sticky_within_its_limit_and_deterministic(data: tuple[Instance, list[set[str]]], version: str) -> None:
    inst, prev = data
    spec = inst.streams
    a = kip924_sticky_assign(inst, KafkaVersion.parse(version))
    assert sorted(t for ca in a.clients.values() for t in ca.active) == sorted(spec.task_ids)
    need = min(spec.config.num_standby_replicas, len(spec.clients) - 1)
    for t in spec.tasks:
        assert sum(t.id in ca.standby for ca in a.clients.values()) == (need if t.stateful else 0)
    for ca in a.clients.values():
        assert not set(ca.active) & set(ca.standby)
    # a client keeps at least min(its previous actives, its limit) of them: 4.4 ceil(tasks x threads / total),
    # before threads x floor(tasks / total)
    total = sum(c.capacity for c in spec.clients)
    for k, c in enumerate(spec.clients):
        if version == "4.4":
            limit = -(-len(spec.tasks) * c.capacity // total)
        else:
            limit = c.capacity * (len(spec.tasks) // total)
        assert len(prev[k] & set(a.get(c.id).active)) >= min(len(prev[k]), limit)
    again = parse_instance(streams_instance_to_dict(inst))
    assert kip924_sticky_assign(again, KafkaVersion.parse(version)) == a
