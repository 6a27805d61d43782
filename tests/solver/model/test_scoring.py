"""The scorer: the seeds' stated facts, every metric on hand cases, isBalanced against a naive version."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.io import parse_instance
from solver.model import Assignment
from solver.model.scoring import METRIC_NAMES, score
from tests.conftest import seed_records


def seed(name: str):
    for r in seed_records():
        if r.instance.name == name:
            return r
    raise AssertionError(f"seed {name} missing")


def test_kip315_range_after_d_leaves_moves_four_topic_partitions():
    rec = seed("kip315-join-member-leaves")
    s = score(rec.instance, Assignment.from_lists(rec.raw["expected"]["range"]))
    facts = rec.raw["facts"]
    assert s["valid"] is True
    assert s["moved"] == facts["range_moved_partitions"] == 4
    assert s["copartition_violations"] == 0
    assert s["max_load"] == 8.0


def test_kip315_stream_join_expected_keeps_everything():
    rec = seed("kip315-join-member-leaves")
    s = score(rec.instance, Assignment.from_lists(rec.raw["expected"]["stream-join-sticky"]))
    assert (s["valid"], s["moved"], s["max_load"], s["copartition_violations"]) == (True, 0, 8.0, 0)
    assert s["moved"] == rec.raw["facts"]["optimal_moved_partitions"]
    assert s["max_load"] == rec.raw["facts"]["optimal_max_load"]


def test_seed_expected_assignments_are_valid():
    for rec in seed_records():
        for name, expected in rec.raw.get("expected", {}).items():
            s = score(rec.instance, Assignment.from_lists(expected))
            assert s["valid"], (rec.instance.name, name, s["violations"])


def test_kafka12464_facts_on_a_constructed_answer():
    rec = seed("kafka12464-new-member")
    # C0 keeps 0-3, C1 keeps 5-7, C2 gets 4, 8, 9: the seed's 3 moves and loads 4/3/3.
    a = Assignment.from_lists({"C0": {"t1": [0, 1, 2, 3]}, "C1": {"t1": [5, 6, 7]}, "C2": {"t1": [4, 8, 9]}})
    s = score(rec.instance, a)
    assert s["moved"] == rec.raw["facts"]["optimal_moved_partitions"] == 3
    assert (s["max_load"], s["min_load"], s["spread"], s["sum_sq_load"]) == (4.0, 3.0, 1.0, 34.0)


def inst(**over):
    doc = {
        "format": "kassign/v1",
        "topics": {"A": 4, "B": {"partitions": 2, "weights": [3.0, 1.0], "move_costs": [10, 20],
                                 "racks": [["r1"], ["r2", "r3"]]}},
        "members": [
            {"id": "m1", "topics": ["A", "B"], "owned": {"A": [0, 1], "B": [0]}, "generation": 5, "rack": "r2"},
            {"id": "m2", "topics": ["A", "B"], "owned": {"A": [2, 3], "B": [1]}, "generation": 5, "rack": "r1",
             "capacity": 2.0},
            {"id": "m3", "topics": ["A"]},
            {"id": "idle", "topics": []},
        ],
    }
    doc.update(over)
    return parse_instance(doc)


def test_every_metric_on_a_hand_case():
    a = Assignment.from_lists({"m1": {"A": [0], "B": [1]}, "m2": {"A": [1, 2], "B": [0]}, "m3": {"A": [3]}})
    s = score(inst(), a)
    assert list(s) == list(METRIC_NAMES)
    assert s["valid"] is True and s["violations"] == []
    # loads: m1 2/1, m2 3/2, m3 1/1; idle subscribes to nothing and is left out of max/min.
    assert (s["max_load"], s["min_load"], s["spread"]) == (2.0, 1.0, 1.0)
    assert s["sum_sq_load"] == pytest.approx(4 + 2.25 + 1)
    # weights: m1 = 1 (A-0) + 1 (B-1) = 2; m2 = (2 + 3) / 2 = 2.5; m3 = 1.
    assert s["weighted_max_load"] == 2.5
    # m1 -> m2, B-1: m2 -> m1, B-0: m1 -> m2, A-3: m2 -> m3.
    assert s["moved"] == 4
    assert s["moved_cost"] == 1 + 20 + 10 + 1
    # B-1 on m1 (rack r2, replicas r2/r3): local; B-0 on m2 (rack r1, replica r1): local.
    assert s["cross_rack"] == 0
    # isBalanced counts partitions, not capacity-scaled load: m3 (1) could take A-1 from m2 (3).
    assert s["locally_balanced"] is False


def test_cross_rack_counts_members_with_a_rack_only():
    a = Assignment.from_lists({"m1": {"A": [0, 1, 2, 3], "B": [0]}, "m2": {"B": [1]}})
    s = score(inst(), a)
    assert s["cross_rack"] == 2  # B-0 on r2 (replica r1) and B-1 on r1 (replicas r2, r3)


def test_violations_make_the_assignment_invalid():
    a = Assignment.from_lists({
        "m1": {"A": [0, 1, 9], "B": [0]},
        "m2": {"A": [1]},
        "m3": {"B": [1]},
        "ghost": {"A": [2]},
    })
    s = score(inst(), a)
    assert s["valid"] is False
    assert s["violations"] == [
        "m1 holds non-existent partitions A-9",
        "B-1 assigned to m3, which does not subscribe to B",
        "member 'ghost' is not in the instance but holds 1 partitions",
        "A-1 assigned to more than one member",
        "A-2, A-3 unassigned",
    ]
    assert s["unassigned"] == 2


def test_previous_owner_tie_means_nothing_moves():
    doc = {"format": "kassign/v1", "topics": {"T": 2}, "members": [
        {"id": "a", "topics": ["T"], "owned": {"T": [0, 1]}, "generation": 4},
        {"id": "b", "topics": ["T"], "owned": {"T": [0]}, "generation": 4},
        {"id": "c", "topics": ["T"], "owned": {"T": [1]}, "generation": 3}]}
    s = score(parse_instance(doc), Assignment.from_lists({"b": {"T": [0]}, "c": {"T": [1]}}))
    # T-0: tie at generation 4 -> no previous owner; T-1: a (gen 4) beats c (gen 3) -> moved.
    assert s["moved"] == 1


def test_unsubscribed_claims_are_dropped():
    doc = {"format": "kassign/v1", "topics": {"T": 1, "U": 1}, "members": [
        {"id": "a", "topics": ["U"], "owned": {"T": [0]}, "generation": 9},
        {"id": "b", "topics": ["T", "U"], "owned": {"T": [0]}, "generation": 1}]}
    s = score(parse_instance(doc), Assignment.from_lists({"b": {"T": [0]}, "a": {"U": [0]}}))
    assert s["moved"] == 0  # a's stale claim on T (no longer subscribed) does not beat b's


def copart(**over):
    doc = {"format": "kassign/v1", "topics": {"x": 3, "y": 2}, "copartition": [["x", "y"]],
           "members": [{"id": "a", "topics": ["x", "y"]}, {"id": "b", "topics": ["x", "y"]}]}
    doc.update(over)
    return parse_instance(doc)


def test_not_joinable_partitions_are_not_violations():
    s = score(copart(), Assignment.from_lists({"a": {"x": [0], "y": [0]}, "b": {"x": [1], "y": [1]}}))
    assert (s["valid"], s["unassigned"], s["not_joinable"], s["copartition_violations"]) == (True, 0, 1, 0)


def test_split_unit_is_a_copartition_violation():
    s = score(copart(), Assignment.from_lists({"a": {"x": [0, 1, 2], "y": [1]}, "b": {"y": [0]}}))
    assert (s["valid"], s["not_joinable"], s["copartition_violations"]) == (True, 0, 1)


def test_locally_balanced_false_when_a_partition_could_move():
    doc = {"format": "kassign/v1", "topics": {"T": 4, "U": 1}, "members": [
        {"id": "a", "topics": ["T"]}, {"id": "b", "topics": ["T", "U"]}, {"id": "c", "topics": ["U"]}]}
    i = parse_instance(doc)
    # a holds 4 of T, b holds nothing, c holds U-0: b could take a T partition from a (0 + 1 < 4).
    assert score(i, Assignment.from_lists({"a": {"T": [0, 1, 2, 3]}, "b": {"U": [0]}}))["locally_balanced"] is False
    # a: 3, b: 1, c: 1 (U-0); b could still take one of a's (1 + 1 < 3).
    assert score(i, Assignment.from_lists({"a": {"T": [0, 1, 2]}, "b": {"T": [3]},
                                           "c": {"U": [0]}}))["locally_balanced"] is False
    # a: 2, b: 2, c: 0 with U on b: c could take U-0 from b (0 + 1 < 2).
    assert score(i, Assignment.from_lists({"a": {"T": [0, 1]}, "b": {"T": [2, 3], "U": [0]}}))[
        "locally_balanced"] is False


def naive_is_balanced(instance, assignment) -> bool:
    counts = {m.id: assignment.partitions_of(m.id) for m in instance.members}
    if max(counts.values()) - min(counts.values()) <= 1:
        return True
    owner = {(t, p): mid for mid, tp in assignment.members.items() for t, ps in tp.items() for p in ps.tolist()}
    for m in instance.members:
        for t in m.topics:
            for p in range(instance.topics[t].partitions):
                o = owner.get((t, p))
                if o is not None and o != m.id and counts[m.id] + 1 < counts[o]:
                    return False
    return True


@st.composite
def group_and_assignment(draw):
    n_topics = draw(st.integers(1, 3))
    topics = {f"t{i}": draw(st.integers(0, 5)) for i in range(n_topics)}
    n_members = draw(st.integers(1, 4))
    members = [{"id": f"m{j}", "topics": draw(st.lists(st.sampled_from(sorted(topics)), unique=True))}
               for j in range(n_members)]
    instance = parse_instance({"format": "kassign/v1", "topics": topics, "members": members})
    asg: dict[str, dict[str, list[int]]] = {m["id"]: {} for m in members}
    for t, n in topics.items():
        subs = [m["id"] for m in members if t in m["topics"]]
        for p in range(n):
            if subs:
                who = draw(st.sampled_from(subs))
                asg[who].setdefault(t, []).append(p)
    return instance, Assignment.from_lists(asg)


@settings(max_examples=300)
@given(group_and_assignment())
def test_locally_balanced_matches_the_naive_definition(case):
    instance, assignment = case
    s = score(instance, assignment)
    assert s["valid"]
    assert s["locally_balanced"] == naive_is_balanced(instance, assignment)


def test_sum_sq_is_minimal_only_for_balanced_counts():
    # Exhaustive over a 2-member, 3-partition group: sum of squares is smallest exactly at spread 1.
    i = parse_instance({"format": "kassign/v1", "topics": {"T": 3},
                        "members": [{"id": "a", "topics": ["T"]}, {"id": "b", "topics": ["T"]}]})
    seen = {}
    for owners in itertools.product("ab", repeat=3):
        a = Assignment.from_lists({m: {"T": [p for p, o in enumerate(owners) if o == m]} for m in "ab"})
        s = score(i, a)
        seen[s["spread"]] = s["sum_sq_load"]
    assert seen == {1.0: 5.0, 3.0: 9.0}
