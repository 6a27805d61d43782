"""RangeAssignor: Kafka's documented examples, MemberInfo order, KIP-881 rack rules, the seeds."""

from __future__ import annotations

import doctest
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import heuristics.range as range_mod
from heuristics.range import member_info_order, range_assign, range_owners
from solver.io import parse_instance
from tests.conftest import seed_records


def inst(topics: dict[str, Any], members: list[dict[str, Any]]) -> Any:
    return parse_instance({"format": "kassign/v1", "topics": topics, "members": members})


def canon(i: Any) -> dict[str, dict[str, list[int]]]:
    return range_assign(i).canonical(i.member_ids)


def test_javadoc_example() -> None:
    # RangeAssignor javadoc: C0 [t0p0, t0p1, t1p0, t1p1], C1 [t0p2, t1p2]
    i = inst({"t0": 3, "t1": 3}, [{"id": "C1", "topics": ["t0", "t1"]}, {"id": "C0", "topics": ["t0", "t1"]}])
    assert canon(i) == {"C0": {"t0": [0, 1], "t1": [0, 1]}, "C1": {"t0": [2], "t1": [2]}}


def test_static_members_first_by_instance_id() -> None:
    i = inst({"t": 5}, [
        {"id": "a", "topics": ["t"]},
        {"id": "b", "topics": ["t"], "instance_id": "I2"},
        {"id": "c", "topics": ["t"], "instance_id": "I1"},
    ])
    assert [i.members[k].id for k in member_info_order(i)] == ["c", "b", "a"]
    assert canon(i) == {"a": {"t": [4]}, "b": {"t": [2, 3]}, "c": {"t": [0, 1]}}


def test_member_ids_compare_as_java_utf16() -> None:
    # U+1F600 is a surrogate pair (0xD83D...) in UTF-16 and sorts before U+FFFF in Java
    i = inst({"t": 3}, [{"id": "\uffff", "topics": ["t"]}, {"id": "\U0001F600", "topics": ["t"]}])
    assert canon(i) == {"\U0001F600": {"t": [0, 1]}, "\uffff": {"t": [2]}}


def test_per_topic_subscribers_and_more_members_than_partitions() -> None:
    i = inst({"x": 2, "y": 4}, [
        {"id": "m1", "topics": ["x"]},
        {"id": "m2", "topics": ["x", "y"]},
        {"id": "m3", "topics": ["x", "y"]},
    ])
    assert canon(i) == {"m1": {"x": [0]}, "m2": {"x": [1], "y": [0, 1]}, "m3": {"y": [2, 3]}}


def test_owned_partitions_are_ignored() -> None:
    members = [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}]
    owned = [{**members[0], "owned": {"t": [2, 3]}, "generation": 5}, {**members[1], "owned": {"t": [0, 1]}}]
    assert canon(inst({"t": 4}, owned)) == canon(inst({"t": 4}, members)) == {"a": {"t": [0, 1]}, "b": {"t": [2, 3]}}


def test_range_owners_vectorised_rule() -> None:
    assert range_owners(7, __import__("numpy").array([5, 3, 9])).tolist() == [5, 5, 5, 3, 3, 9, 9]
    assert range_owners(0, __import__("numpy").array([1])).tolist() == []


# --- KIP-881 rack-aware path ---------------------------------------------------------------

def test_rack_matching_single_topic() -> None:
    # p0 only on rack b, p1 only on rack a: plain range would give C0 p0; rack matching swaps them
    i = inst({"t": {"partitions": 2, "racks": [["b"], ["a"]]}},
             [{"id": "C0", "topics": ["t"], "rack": "a"}, {"id": "C1", "topics": ["t"], "rack": "b"}])
    assert canon(i) == {"C0": {"t": [1]}, "C1": {"t": [0]}}


def test_no_rack_path_when_every_partition_has_every_rack() -> None:
    i = inst({"t": {"partitions": 2, "racks": [["a", "b"], ["a", "b"]]}},
             [{"id": "C0", "topics": ["t"], "rack": "b"}, {"id": "C1", "topics": ["t"], "rack": "a"}])
    assert canon(i) == {"C0": {"t": [0]}, "C1": {"t": [1]}}


def test_copartitioned_topics_follow_partition_number() -> None:
    # t1, t2: same subscribers and partition count -> partition i of both goes to one member
    racks = [["b"], ["a"], ["b"], ["a"]]
    i = inst({"t1": {"partitions": 4, "racks": racks}, "t2": {"partitions": 4, "racks": racks}},
             [{"id": "C0", "topics": ["t1", "t2"], "rack": "a"}, {"id": "C1", "topics": ["t1", "t2"], "rack": "b"}])
    assert canon(i) == {"C0": {"t1": [1, 3], "t2": [1, 3]}, "C1": {"t1": [0, 2], "t2": [0, 2]}}


def test_copartitioning_wins_over_rack_alignment() -> None:
    # partition 0 lives on b for t1 but on a for t2: no member matches both, so p0 is left to
    # the plain range pass; p1 (rack a for both) goes to C0 first
    i = inst({"t1": {"partitions": 2, "racks": [["b"], ["a"]]}, "t2": {"partitions": 2, "racks": [["a"], ["a"]]}},
             [{"id": "C0", "topics": ["t1", "t2"], "rack": "a"}, {"id": "C1", "topics": ["t1", "t2"], "rack": "b"}])
    assert canon(i) == {"C0": {"t1": [1], "t2": [1]}, "C1": {"t1": [0], "t2": [0]}}


def test_member_without_rack_matches_every_partition() -> None:
    # C0 has no rack: it takes the first partitions in the rack pass; C1 (rack a) gets what matches a
    i = inst({"t": {"partitions": 4, "racks": [["a"], ["b"], ["b"], ["a"]]}},
             [{"id": "C0", "topics": ["t"]}, {"id": "C1", "topics": ["t"], "rack": "a"}])
    # rack pass gives C0 (no rack) p0, p1 (first two unassigned), C1 (rack a) p3 (only a-match left),
    # then the plain pass gives C1 the remaining p2
    assert canon(i) == {"C0": {"t": [0, 1]}, "C1": {"t": [2, 3]}}


def test_quota_kept_when_racks_are_lopsided() -> None:
    # every partition is on rack a; C1 (rack b) matches none, yet quotas stay 2/2
    i = inst({"t": {"partitions": 4, "racks": [["a"], ["a"], ["a"], ["a", "c"]]}},
             [{"id": "C0", "topics": ["t"], "rack": "b"}, {"id": "C1", "topics": ["t"], "rack": "a"}])
    assert canon(i) == {"C0": {"t": [2, 3]}, "C1": {"t": [0, 1]}}


def test_seed_expectations() -> None:
    """Every seed that states a range assignment (KIP-49 example, KIP-315 examples)."""
    checked = [r.id for r in seed_records() if "range" in r.instance.meta.get("expected", {})]
    for rec in seed_records():
        if "range" in rec.instance.meta.get("expected", {}):
            assert canon(rec.instance) == rec.instance.meta["expected"]["range"], rec.id
    assert len(checked) >= 3, checked


def test_doctests() -> None:
    assert doctest.testmod(range_mod).failed == 0


def literal_range(i: Any) -> dict[str, dict[str, list[int]]]:
    """The documented rule, topic by topic (the oracle for inputs without racks)."""
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in i.members}
    for t, topic in i.topics.items():
        subs = sorted((m for m in i.members if t in m.topics), key=range_mod.member_info_key)
        if not subs:
            continue
        q, extra = divmod(topic.partitions, len(subs))
        start = 0
        for k, m in enumerate(subs):
            n = q + (1 if k < extra else 0)
            if n:
                out[m.id][t] = list(range(start, start + n))
            start += n
    return {m: dict(sorted(tp.items())) for m, tp in sorted(out.items())}


@st.composite
def groups(draw: Any, racks: bool = False) -> Any:
    n_topics = draw(st.integers(1, 4))
    rack_names = ["a", "b", "c"]
    topics: dict[str, Any] = {}
    for k in range(n_topics):
        n = draw(st.integers(0, 8))
        if racks:
            topics[f"t{k}"] = {"partitions": n, "racks": [
                draw(st.lists(st.sampled_from(rack_names), max_size=3, unique=True)) for _ in range(n)]}
        else:
            topics[f"t{k}"] = n
    members = []
    for m in range(draw(st.integers(1, 6))):
        subs = draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, max_size=n_topics, unique=True))
        spec: dict[str, Any] = {"id": f"m{draw(st.integers(0, 99))}-{m}", "topics": subs}
        if draw(st.booleans()):
            spec["instance_id"] = f"i{draw(st.integers(0, 99))}-{m}"
        if racks and draw(st.booleans()):
            spec["rack"] = draw(st.sampled_from(rack_names))
        members.append(spec)
    return inst(topics, members)


@settings(max_examples=150, deadline=None)
@given(groups())
def test_matches_documented_rule_without_racks(i: Any) -> None:
    assert canon(i) == literal_range(i)


@settings(max_examples=150, deadline=None)
@given(groups(racks=True))
def test_rack_path_keeps_validity_and_per_topic_quotas(i: Any) -> None:
    """With racks the ranges move, but each topic still goes out in full with Kafka's per-topic quotas."""
    got = canon(i)
    for t, topic in i.topics.items():
        subs = [m for m in i.members if t in m.topics]
        held = sorted(p for m in i.members for p in got[m.id].get(t, []))
        assert held == (list(range(topic.partitions)) if subs else [])
        if subs:
            counts = sorted(len(got[m.id].get(t, [])) for m in subs)
            q, extra = divmod(topic.partitions, len(subs))
            assert counts == [q] * (len(subs) - extra) + [q + 1] * extra


def test_documented_weakness_extra_partitions_pile_up() -> None:
    both = ["x", "y", "z"]
    i = inst({"x": 3, "y": 3, "z": 3}, [{"id": "C0", "topics": both}, {"id": "C1", "topics": both}])
    assert canon(i) == {"C0": {"x": [0, 1], "y": [0, 1], "z": [0, 1]}, "C1": {"x": [2], "y": [2], "z": [2]}}
