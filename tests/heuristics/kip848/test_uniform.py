"""KIP-848 UniformAssignor: Java orders (checked with jshell), hand-derived cases of both builders, Kafka's own
UniformHomogeneousAssignmentBuilderTest cases (data/uniform_homogeneous_kafka_tests.json), properties; the
homogeneous builder at Kafka 4.0.0 and from 4.0.1 (KAFKA-18688)."""

from __future__ import annotations

import doctest
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import heuristics.kip848.java_order as kip848
import heuristics.kip848.uniform as uniform_mod
from heuristics.kip848.java_order import (
    int_hashset_order,
    member_map_order,
    subscribed_id_order,
    topic_id_map,
    topic_uuid,
    uuid_compare_key,
    uuid_hash,
)
from heuristics.kip848.uniform import _Balancer, least_loaded_sequence, uniform_assign
from solver.io import parse_instance


def inst(topics: dict[str, Any], members: list[dict[str, Any]]) -> Any:
    return parse_instance({"format": "kassign/v1", "topics": topics, "members": members})


def canon(i: Any, stable_extra: bool = True) -> dict[str, dict[str, list[int]]]:
    return uniform_assign(i, stable_extra).canonical(i.member_ids)


def uid(n: int) -> str:
    return f"00000000-0000-0000-0000-{n:012x}"


# --- Java semantics (values printed by jshell 17 with java.util.UUID / HashSet / HashMap) -----

def test_uuid_hash_and_signed_compare() -> None:
    assert uuid_hash(topic_uuid("t", "446efd34-e1e8-44b6-9bde-fbabaa2fc00e")) == -1804107225
    assert uuid_hash(topic_uuid("t", "fa5ab70b-b6be-44ea-a545-fefdea9f03b9")) == 54398629
    # compareTo at that commit: signed longs, so an id starting with f sorts first
    neg = topic_uuid("t", "fa5ab70b-b6be-44ea-a545-fefdea9f03b9")
    pos = topic_uuid("t", "6c187b88-f037-4169-842f-fc6b49281a39")
    assert uuid_compare_key(neg) < uuid_compare_key(pos)


def test_hashset_orders() -> None:
    assert int_hashset_order(np.array([1, 5, 17, 30])) == [1, 17, 5, 30]
    ids = {"audit168": "39dc41b9-51b6-46de-a272-7a70b21f8ffa", "audit757": "f50223c5-4b5f-438b-8d39-62c292c79646",
           "audit781": "6c187b88-f037-4169-842f-fc6b49281a39", "clicks568": "a9104804-286c-4196-8a66-907df9b82829",
           "impressions933": "fa5ab70b-b6be-44ea-a545-fefdea9f03b9",
           "orders383": "871bc8d1-1bb4-4f5e-a0ae-1b0502d7517e",
           "payments887": "c7b924c0-e32e-4443-92e5-c61e6f8ef4aa",
           "topic_522": "36355aa9-4037-4636-ae3c-2281dfa1d6cd"}
    i = inst({t: {"partitions": 1, "id": v} for t, v in ids.items()}, [{"id": "m", "topics": sorted(ids)}])
    # new HashSet<>(ids filled from a HashSet<String> of names): three ids share bucket 11
    assert subscribed_id_order(i, 0, topic_id_map(i)) == [
        "orders383", "clicks568", "audit757", "audit168", "impressions933", "payments887", "audit781", "topic_522"]


def test_member_map_order() -> None:
    ids = ["consumer-billing-0-310d70c3-5dd3-4cf5-898e-53e0c517a35a",
           "consumer-billing-1-3d235422-5376-46b2-8949-837378c02b33",
           "consumer-billing-2-6c1bfcd6-6765-4e61-8a8b-c116a32e6908",
           "consumer-billing-3-77bc394e-6e1e-4334-901a-254a3551084a",
           "consumer-billing-4-a6fbad9d-1c5d-452b-b635-19c64de5effa"]
    i = inst({"t": 1}, [{"id": m, "topics": ["t"]} for m in ids])
    assert member_map_order(i) == [1, 2, 3, 0, 4]


# --- homogeneous builder --------------------------------------------------------------------

def test_extra_partition_goes_to_first_member_in_map_order_at_4_0_0() -> None:
    i = inst({"t": {"partitions": 3, "id": uid(1)}}, [{"id": "b", "topics": ["t"]}, {"id": "a", "topics": ["t"]}])
    assert canon(i, stable_extra=False) == {"a": {"t": [0, 1]}, "b": {"t": [2]}}


def test_extra_partition_goes_to_last_member_in_map_order_from_4_0_1() -> None:
    # KAFKA-18688: a member whose kept partitions do not fill the extra slot gives it up for a later one
    i = inst({"t": {"partitions": 3, "id": uid(1)}}, [{"id": "b", "topics": ["t"]}, {"id": "a", "topics": ["t"]}])
    assert canon(i) == {"a": {"t": [0]}, "b": {"t": [1, 2]}}


def test_free_partitions_follow_topic_hashset_order() -> None:
    # zzz's id hashes to bucket 1, aaa's to bucket 2: zzz is handed out first
    i = inst({"aaa": {"partitions": 2, "id": uid(2)}, "zzz": {"partitions": 2, "id": uid(1)}},
             [{"id": "a", "topics": ["aaa", "zzz"]}, {"id": "b", "topics": ["aaa", "zzz"]}])
    assert canon(i) == {"a": {"zzz": [0, 1]}, "b": {"aaa": [0, 1]}}


def test_sticky_up_to_quota_and_revocation_in_hashset_order() -> None:
    # 32 partitions, 16 members: quota 2.  "a" owns {1, 5, 17, 30}; as a HashSet they iterate
    # 1, 17, 5, 30, so it keeps 1 and 17; 5 and 30 are revoked and handed out last.
    names = [chr(c) for c in range(ord("a"), ord("q"))]
    members = [{"id": n, "topics": ["t"]} for n in names]
    members[0]["owned"] = {"t": [1, 5, 17, 30]}
    got = canon(inst({"t": {"partitions": 32, "id": uid(7)}}, members))
    free = [p for p in range(32) if p not in (1, 5, 17, 30)] + [5, 30]
    expected = {"a": {"t": [1, 17]}}
    for k, n in enumerate(names[1:]):
        expected[n] = {"t": sorted(free[2 * k:2 * k + 2])}
    assert got == expected


def test_owned_partitions_of_dropped_topics_are_revoked() -> None:
    i = inst({"t": {"partitions": 2, "id": uid(1)}, "old": {"partitions": 2, "id": uid(2)}},
             [{"id": "a", "topics": ["t"], "owned": {"old": [0, 1], "t": [1]}}, {"id": "b", "topics": ["t"]}])
    assert canon(i) == {"a": {"t": [1]}, "b": {"t": [0]}}


# --- heterogeneous builder ------------------------------------------------------------------

def test_topic_order_and_least_loaded_fill() -> None:
    # t1: 4 partitions / 2 subscribers = 2.0, t2: 2 / 1 = 2.0 -> tie, fewer subscribers first: t2.
    # B takes t2's two partitions, then t1 fills A (0 -> 1 -> 2) before B gets t1p3.
    i = inst({"t1": {"partitions": 4, "id": uid(1)}, "t2": {"partitions": 2, "id": uid(2)}},
             [{"id": "A", "topics": ["t1"]}, {"id": "B", "topics": ["t1", "t2"]}])
    assert canon(i) == {"A": {"t1": [0, 1, 2]}, "B": {"t1": [3], "t2": [0, 1]}}


def test_balancing_moves_the_last_partitions_of_the_most_loaded() -> None:
    i = inst({"t1": {"partitions": 4, "id": uid(1)}, "t2": {"partitions": 1, "id": uid(2)}},
             [{"id": "A", "topics": ["t1"], "owned": {"t1": [0, 1, 2, 3]}},
              {"id": "B", "topics": ["t1"]}, {"id": "C", "topics": ["t2"]}])
    assert canon(i) == {"A": {"t1": [0, 1]}, "B": {"t1": [2, 3]}, "C": {"t2": [0]}}


def test_topic_id_ties_use_signed_uuid_order() -> None:
    # x and y tie on partitions per subscriber and subscriber count; x's id is negative as a
    # signed long, so x is filled first and its partition goes to A (member number 0)
    i = inst({"x": {"partitions": 1, "id": "f0000000-0000-0000-0000-000000000000"},
              "y": {"partitions": 1, "id": "10000000-0000-0000-0000-000000000000"},
              "z": {"partitions": 1, "id": uid(3)}},
             [{"id": "A", "topics": ["x", "y"]}, {"id": "B", "topics": ["x", "y"]}, {"id": "C", "topics": ["z"]}])
    assert canon(i) == {"A": {"x": [0]}, "B": {"y": [0]}, "C": {"z": [0]}}


def test_no_members_and_no_topics() -> None:
    assert uniform_assign(inst({"t": 2}, [])).canonical() == {}
    i = inst({"t": 2}, [{"id": "a", "topics": []}, {"id": "b", "topics": []}])
    assert canon(i) == {"a": {}, "b": {}}


# --- properties -----------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=8), st.integers(0, 30))
def test_vectorised_fill_equals_kafka_balancer(sizes: list[int], count: int) -> None:
    members = np.arange(len(sizes), dtype=np.int64)
    live = np.array(sizes, dtype=np.int64)
    balancer = _Balancer(live)
    balancer.initialize(members)
    literal = []
    for _ in range(count):
        m = balancer.next_least_loaded()
        literal.append(m)
        live[m] += 1
    assert least_loaded_sequence(np.array(sizes, dtype=np.int64), members, count).tolist() == literal


@st.composite
def groups(draw: Any) -> Any:
    n_topics = draw(st.integers(1, 4))
    topics = {f"t{k}": {"partitions": draw(st.integers(0, 12)), "id": str(draw(st.uuids()))} for k in range(n_topics)}
    n_members = draw(st.integers(1, 6))
    same = draw(st.booleans())
    subs_all = sorted(topics)
    members: list[dict[str, Any]] = []
    for m in range(n_members):
        subs = subs_all if same else draw(st.lists(st.sampled_from(subs_all), min_size=1, unique=True))
        members.append({"id": f"c{draw(st.integers(0, 999))}-{m}", "topics": subs, "owned": {}})
    # a disjoint previous assignment (possibly on topics a member no longer subscribes to)
    for t, spec in topics.items():
        for p in range(spec["partitions"]):
            k = draw(st.integers(-1, n_members - 1))
            if k >= 0:
                members[k]["owned"].setdefault(t, []).append(p)
    return inst(topics, members)


@settings(max_examples=200, deadline=None)
@given(groups(), st.booleans())
def test_valid_and_balanced(i: Any, stable_extra: bool) -> None:
    got = canon(i, stable_extra)
    for t, topic in i.topics.items():
        subs = [m.id for m in i.members if t in m.topics]
        held = [(mid, p) for mid in got for p in got[mid].get(t, [])]
        assert sorted(p for _, p in held) == (list(range(topic.partitions)) if subs else [])
        assert all(mid in subs for mid, _ in held)
    if len({frozenset(m.topics) for m in i.members}) == 1:
        loads = [sum(len(v) for v in got[m].values()) for m in got]
        assert max(loads) - min(loads) <= 1
        # sticky: every member keeps min(owned still subscribed, its quota) of what it had
        total = sum(i.topics[t].partitions for t in set(i.members[0].topics))
        quota_hi = -(-total // len(i.members))
        for m in i.members:
            kept = sum(len(set(m.owned[t].tolist()) & set(got[m.id].get(t, []))) for t in m.owned if t in m.topics)
            assert kept >= min(sum(m.owned[t].size for t in m.owned if t in m.topics), quota_hi - 1)


def test_doctests() -> None:
    assert doctest.testmod(uniform_mod).failed == 0
    assert doctest.testmod(kip848).failed == 0


def test_4_0_0_moves_in_an_already_balanced_group_and_4_0_1_does_not() -> None:
    # docs/algorithms: at 4.0.0 a comes first in HashMap order, takes the quota of 2, and b hands over
    # partition 1; KAFKA-18688 (4.0.1) lets b keep its extra partition
    i = inst({"t": {"partitions": 3, "id": uid(1)}},
             [{"id": "a", "topics": ["t"], "owned": {"t": [2]}}, {"id": "b", "topics": ["t"], "owned": {"t": [0, 1]}}])
    assert canon(i, stable_extra=False) == {"a": {"t": [1, 2]}, "b": {"t": [0]}}
    assert canon(i) == {"a": {"t": [2]}, "b": {"t": [0, 1]}}


def test_documented_weakness_per_topic_balance_is_not_group_balance() -> None:
    i = inst({"A": {"partitions": 4, "id": uid(1)}, "B": {"partitions": 5, "id": uid(2)}},
             [{"id": "m1", "topics": ["A"]}, {"id": "m2", "topics": ["A", "B"]}, {"id": "m3", "topics": ["B"]}])
    assert canon(i) == {"m1": {"A": [0, 1, 2, 3]}, "m2": {"B": [0, 2, 4]}, "m3": {"B": [1, 3]}}


def literal_homogeneous(i: Any, stable_extra: bool) -> dict[str, dict[str, list[int]]]:
    """UniformHomogeneousAssignmentBuilder step by step, with Java's orders from the helpers (the oracle);
    ``stable_extra``: ``maybeRevokePartitions`` as changed by KAFKA-18688 (4.0.1).  A member's current
    assignment is the coordinator's in-memory map: a ``HashMap`` filled by ``put`` in ``owned`` order, each
    topic's partitions a ``new HashSet<>()`` grown by ``add`` in the listed order (:class:`JavaHashMap`, resizes
    and ``treeifyBin``'s doubling included) -- not ``new HashSet<>(list)``'s copy, whose Java 17 table is twice
    as large at 12, 24, 48... partitions."""
    from heuristics._java import JavaHashMap, java_int_hash

    ids = topic_id_map(i)
    order = member_map_order(i)
    topics = subscribed_id_order(i, order[0], ids)
    claimed = {(t, int(p)) for m in i.members for t, ps in m.owned.items() for p in ps}
    unassigned = [(t, p) for t in topics for p in range(i.topics[t].partitions) if (t, p) not in claimed]
    total = sum(i.topics[t].partitions for t in topics)
    min_quota, extra = divmod(total, len(order))
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in i.members}
    unfilled = []
    for index, k in enumerate(order):
        m = i.members[k]
        has_extra = extra > 0
        quota = min_quota + (1 if has_extra else 0)
        if not stable_extra:
            extra = max(0, extra - 1)
        # the assignment map is filled in `owned` order, each set from the partitions as listed
        names = [t for t, ps in m.owned.items() if ps.size]
        by_id = {ids[t]: t for t in names}
        assignment_map = JavaHashMap(uuid_hash)
        for u in by_id:
            assignment_map.put(u)
        for u in assignment_map.order():
            t = by_id[u]
            if t not in topics:
                continue
            parts = m.owned.listed(t)
            if parts.size <= quota:
                quota -= parts.size
                out[m.id].setdefault(t, []).extend(parts.tolist())
                continue
            partition_set = JavaHashMap(java_int_hash)
            for p in parts.tolist():
                partition_set.put(p)
            for p in partition_set.order():
                if quota > 0:
                    quota -= 1
                    out[m.id].setdefault(t, []).append(p)
                else:
                    unassigned.append((t, p))
        if stable_extra:
            if quota > 0 and has_extra and len(order) - index > extra:
                quota -= 1  # give the extra slot up for a later member
                has_extra = False
            if has_extra:
                extra -= 1
        if quota > 0:
            unfilled.append((m.id, quota))
    pos = 0
    for mid, q in unfilled:
        for t, p in unassigned[pos:pos + q]:
            out[mid].setdefault(t, []).append(p)
        pos += q
    return {m: {t: sorted(set(v)) for t, v in sorted(tp.items()) if v} for m, tp in sorted(out.items())}


@st.composite
def homogeneous_groups(draw: Any) -> Any:
    n_topics = draw(st.integers(1, 14))
    # Uuid.hashCode() of these ids is the drawn 0..7 (msb ^ lsb folded): colliding ids are common
    topics = {f"t{k}": {"partitions": draw(st.integers(0, 40)),
                        "id": f"00000000-0000-{k:04x}-0000-{k:04x}{draw(st.integers(0, 7)):08x}"}
              for k in range(n_topics)}
    subs = draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True))
    members: list[dict[str, Any]] = []
    for m in range(draw(st.integers(1, 12))):
        owned: dict[str, list[int]] = {}
        # random claims, overlaps and unsubscribed topics included, topics and partitions in random order
        for t in draw(st.permutations(sorted(topics))):
            if topics[t]["partitions"] and draw(st.booleans()):
                owned[t] = draw(st.lists(st.integers(0, topics[t]["partitions"] - 1), unique=True, max_size=24))
        members.append({"id": f"c{draw(st.integers(0, 10**6))}-{m}", "topics": subs, "owned": owned})
    return inst(topics, members)


@settings(max_examples=80, deadline=None)
@given(homogeneous_groups(), st.booleans())
def test_vectorised_homogeneous_builder_equals_step_by_step_port(i: Any, stable_extra: bool) -> None:
    assert canon(i, stable_extra) == literal_homogeneous(i, stable_extra)


# --- Kafka's own tests, and KAFKA-18688's stability ----------------------------------------------

def _kafka_cases() -> list[dict[str, Any]]:
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parent / "data" / "uniform_homogeneous_kafka_tests.json").read_text())["cases"]


@pytest.mark.parametrize("case", _kafka_cases(), ids=lambda c: c["kafka_test"].rsplit(".", 1)[-1])
def test_kafka_homogeneous_builder_tests(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                         registry_loaded: None) -> None:
    """The cases of Kafka's UniformHomogeneousAssignmentBuilderTest at the release they were written for."""
    from solver.registry import get
    from solver.result import Params

    if case.get("owned_order") == "insertion":  # the test's LinkedHashMap: members' topics walked as listed
        monkeypatch.setattr(kip848.TopicHashes, "iteration_order", lambda self, topics: np.arange(topics.size))
    i = parse_instance(case["instance"])
    res = get("uniform").run(i, Params(kafka_version=case["kafka_version"]))
    assert res.assignment.canonical(i.member_ids) == case["expected"]
    assert res.extra["kafka_version"] == "4.3.1"


def test_kafka_18688_case_fails_at_4_0_0() -> None:
    """KAFKA-18688's own test is what 4.0.0 got wrong: its balanced group moves there."""
    case = next(c for c in _kafka_cases() if c["kafka_test"].endswith("WhenAlreadyBalanced"))
    i = parse_instance(case["instance"])
    assert canon(i) == case["expected"]
    assert canon(i, stable_extra=False) != case["expected"]


@settings(max_examples=150, deadline=None)
@given(homogeneous_groups())
def test_own_output_is_a_fixed_point_from_4_0_1(i: Any) -> None:
    """Kafka's CommonAssignorTests.testReassignmentStickiness / testAssignmentReuse for the homogeneous builder:
    given its own (valid) assignment back, in any member order (here: under any member ids), 4.0.1+ moves
    nothing -- from a fresh group, and from the drawn claims when they leave every partition to one member."""
    fresh = inst({t: {"partitions": v.partitions, "id": v.id} for t, v in i.topics.items()},
                 [{"id": m.id, "topics": list(m.topics)} for m in i.members])
    _check_fixed_point(fresh)
    first = canon(i)
    held = sorted((t, p) for v in first.values() for t, ps in v.items() for p in ps)
    if held == sorted({(t, p) for t in i.members[0].topics for p in range(i.topics[t].partitions)}):
        _check_fixed_point(i)


def _check_fixed_point(i: Any) -> None:
    first = canon(i)
    again = inst({t: {"partitions": v.partitions, "id": v.id} for t, v in i.topics.items()},
                 [{"id": m.id, "topics": list(m.topics), "owned": first[m.id]} for m in i.members])
    assert canon(again) == first
    renamed = inst({t: {"partitions": v.partitions, "id": v.id} for t, v in i.topics.items()},
                   [{"id": f"x{k}-{m.id}", "topics": list(m.topics), "owned": first[m.id]}
                    for k, m in enumerate(reversed(i.members))])
    assert {m.removeprefix("x").split("-", 1)[1]: v for m, v in canon(renamed).items()} == first


# --- owned order: Kafka's assignment map is filled in the instance's `owned` order -----------

def test_colliding_topic_ids_iterate_in_owned_order() -> None:
    # Uuid.hashCode() is 1 for both ids: same bucket, so the map iterates them in insertion order;
    # with a quota of 1 the member keeps the first topic and the second is revoked to b
    x, y = "00000000-0000-0000-0000-000000000001", "00000000-0000-0001-0000-000100000001"
    assert uuid_hash(topic_uuid("x", x)) == uuid_hash(topic_uuid("y", y)) == 1
    topics = {"x": {"partitions": 1, "id": x}, "y": {"partitions": 1, "id": y}}
    for owned, kept in (({"x": [0], "y": [0]}, "x"), ({"y": [0], "x": [0]}, "y")):
        i = inst(topics, [{"id": "a", "topics": ["x", "y"], "owned": owned}, {"id": "b", "topics": ["x", "y"]}])
        assert canon(i)["a"] == {kept: [0]}


def test_colliding_partitions_iterate_in_listed_order() -> None:
    # new HashSet<>([17, 1]) has 16 buckets: 17 and 1 share bucket 1, so 17 comes first
    topics = {"t": {"partitions": 18, "id": uid(1)}}
    others = [{"id": f"m{k:02d}", "topics": ["t"]} for k in range(17)]
    for listed, kept in (([17, 1], 17), ([1, 17], 1)):
        i = inst(topics, [{"id": "a", "topics": ["t"], "owned": {"t": listed}}, *others])
        assert canon(i)["a"] == {"t": [kept]}
        assert i.members[0].owned.listed("t").tolist() == listed  # the model keeps the order given
        assert i.members[0].owned["t"].tolist() == sorted(listed)


def test_assignment_map_iteration_equals_java() -> None:
    """40 maps printed by OpenJDK 17 (HashMap of Uuid-hashed keys, HashSet<Integer> values; colliding
    ids, resizes and colliding partitions included) against TopicHashes / hashset_rank for copies on Java 17
    (the maps were built with ``new HashSet<>(list)``)."""
    import json
    from pathlib import Path

    data = json.loads((Path(__file__).parent / "data" / "java_assignment_map_orders.json").read_text())
    for case in data["cases"]:
        ids = [u for u, _ in case["inserted"]]
        i = inst({f"t{k}": {"partitions": 1, "id": u} for k, u in enumerate(ids)}, [])
        perm = kip848.TopicHashes(i, topic_id_map(i)).iteration_order(np.arange(len(ids))).tolist()
        got = []
        for k in perm:
            parts = np.array(case["inserted"][k][1], dtype=np.int64)
            rank = kip848.hashset_rank(np.zeros(parts.size, dtype=np.int64), parts, copied_on=17)
            got.append([k, parts[rank].tolist()])
        assert got == case["java_iteration"]


def test_a_grown_set_and_a_java_17_copy_iterate_differently_at_twelve() -> None:
    """12 partitions: a set grown by ``add`` (and a Java 19+ copy) has 16 buckets, where partition 16 shares
    partition 0's bucket; Java 17's ``new HashSet<>(list)`` has 32 and iterates them ascending."""
    parts = np.array([*range(11), 16], dtype=np.int64)
    zeros = np.zeros(parts.size, dtype=np.int64)
    grown = parts[kip848.hashset_rank(zeros, parts)].tolist()
    assert grown == [0, 16, *range(1, 11)]
    assert parts[kip848.hashset_rank(zeros, parts, copied_on=21)].tolist() == grown
    assert parts[kip848.hashset_rank(zeros, parts, copied_on=17)].tolist() == sorted(parts.tolist())


# --- regressions found by the properties, answers from Apache Kafka's own classes (java/harness) ---

def _twelve_owned_group() -> Any:
    """The shrunk group of ``--hypothesis-seed=138892643372455137406766851808012406454``: c0-6 owns 12 partitions
    of t0 listed ``0..6, 16, 7..10``; in a set grown by ``add`` (16 buckets) 16 shares partition 0's bucket and
    comes second, where Java 17's ``new HashSet<>(list)`` (32 buckets) would walk it last."""
    topics: dict[str, Any] = {"t0": {"partitions": 17, "id": uid(0)}}
    topics.update({f"t{k}": {"partitions": 1, "id": f"00000000-0000-{k:04x}-0000-{k:04x}00000000"}
                   for k in range(1, 12)})
    members: list[dict[str, Any]] = [{"id": f"c0-{k}", "topics": ["t0"]} for k in range(5)]
    members.append({"id": "c0-5", "topics": ["t0"], "owned": {"t8": []}})
    members.append({"id": "c0-6", "topics": ["t0"], "owned": {"t0": [0, 1, 2, 3, 4, 5, 6, 16, 7, 8, 9, 10]}})
    return inst(topics, members)


@pytest.mark.parametrize("version", ["4.0.0", "4.0.1", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"])
def test_twelve_owned_partitions_iterate_as_a_grown_set(version: str, registry_loaded: None) -> None:
    """c0-6 keeps 0, 16 and 1 (its first three in grown-set order) at every release; the expected answers are
    Kafka's own (the released kafka-group-coordinator jars through java/harness, 2026-11-27)."""
    from solver.registry import get
    from solver.result import Params

    kafka_4_0_0 = {"c0-0": {"t0": [5, 6]}, "c0-1": {"t0": [3, 4]}, "c0-2": {"t0": [9, 10]},
                   "c0-3": {"t0": [7, 8]}, "c0-4": {"t0": [2, 14, 15]}, "c0-5": {"t0": [11, 12, 13]},
                   "c0-6": {"t0": [0, 1, 16]}}
    kafka_from_4_0_1 = {"c0-0": {"t0": [3, 4]}, "c0-1": {"t0": [2, 15]}, "c0-2": {"t0": [8, 9, 10]},
                        "c0-3": {"t0": [5, 6, 7]}, "c0-4": {"t0": [13, 14]}, "c0-5": {"t0": [11, 12]},
                        "c0-6": {"t0": [0, 1, 16]}}
    expected = kafka_4_0_0 if version == "4.0.0" else kafka_from_4_0_1
    i = _twelve_owned_group()
    assert get("uniform").run(i, Params(kafka_version=version)).assignment.canonical(i.member_ids) == expected
    assert literal_homogeneous(i, stable_extra=version != "4.0.0") == expected


def _treeify_cases() -> list[dict[str, Any]]:
    import json
    from pathlib import Path

    return json.loads((Path(__file__).parent / "data" / "uniform_treeify_kafka.json").read_text())["cases"]


@pytest.mark.parametrize("case", _treeify_cases(), ids=lambda c: c["name"])
def test_a_ninth_key_in_one_bucket_doubles_the_table_as_in_kafka(case: dict[str, Any], registry_loaded: None) -> None:
    """``treeifyBin``: Kafka's answers (data/uniform_treeify_kafka.json, every release 4.0.0-4.4.0) on a member's
    partition set, a member's assignment map and the member map whose tables a ninth colliding key doubled."""
    from solver.registry import get
    from solver.result import Params

    i = parse_instance(case["instance"])
    for version, expected in case["expected"].items():
        assert get("uniform").run(i, Params(kafka_version=version)).assignment.canonical(i.member_ids) == expected
        assert literal_homogeneous(i, stable_extra=version != "4.0.0") == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 15).map(lambda k: 16 * k + 3), unique=True, max_size=24)
                | st.lists(st.integers(0, 600), unique=True, max_size=30), max_size=4),
       st.sampled_from([None, 17, 21]))
def test_hashset_rank_equals_sets_built_step_by_step(runs: list[list[int]], copied_on: int | None) -> None:
    """Each run's order is a ``HashSet<Integer>`` built by ``add`` (``new HashSet<>(list)`` on Java
    ``copied_on``), ``treeifyBin``'s doublings included: the vectorised rank against :class:`JavaHashMap`."""
    from heuristics._java import JavaHashMap, copy_initial_capacity, java_int_hash

    segment = np.repeat(np.arange(len(runs)), [len(r) for r in runs]).astype(np.int64)
    parts = np.array([p for r in runs for p in r], dtype=np.int64)
    expected: list[int] = []
    for r in runs:
        table = JavaHashMap(java_int_hash, None if copied_on is None else copy_initial_capacity(len(r), copied_on))
        for p in r:
            table.put(p)
        expected.extend(table.order())
    assert parts[kip848.hashset_rank(segment, parts, copied_on)].tolist() == expected
