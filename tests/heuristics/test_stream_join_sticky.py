"""KIP-315 ``stream-join-sticky``: the seed example, hand-derived drafts, and properties."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics.stream_join_sticky import draft, resolve_claims, stream_join_sticky, unit_groups
from solver import registry
from solver.io import parse_instance
from solver.model import Assignment, Instance
from solver.model.scoring import score
from solver.model.semantics import GroupView
from solver.result import Params
from tests.conftest import seed_records


def make(topics: dict, members: list[dict], copartition: list[list[str]] | None = None) -> Instance:
    doc = {"format": "kassign/v1", "topics": topics, "members": members}
    if copartition:
        doc["copartition"] = copartition
    return parse_instance(doc)


def run(inst: Instance) -> tuple[dict[str, dict[str, list[int]]], int]:
    res = stream_join_sticky(inst, Params())
    return res.assignment.canonical(inst.member_ids), res.extra["epoch"]


def both(parts: list[int]) -> dict[str, list[int]]:
    return {"clicks": parts, "impressions": parts}


def seed(name: str):
    return next(r for r in seed_records() if r.instance.name == name)


# --- the seed ---------------------------------------------------------------------------


def test_kip315_seed_after_d_leaves_exactly():
    rec = seed("kip315-join-member-leaves")
    got, epoch = run(rec.instance)
    assert got == rec.raw["expected"]["stream-join-sticky"]
    assert got == {"A": both([0, 1, 2, 9]), "B": both([3, 4, 5]), "C": both([6, 7, 8])}
    assert epoch == 2  # every member claimed at epoch (generation) 1
    s = score(rec.instance, stream_join_sticky(rec.instance, Params()).assignment)
    assert (s["valid"], s["moved"], s["copartition_violations"], s["max_load"]) == (True, 0, 0, 8.0)
    assert s["moved"] == rec.raw["facts"]["optimal_moved_partitions"]


def test_kip315_seed_initial_assignment():
    # No previous owners: every unit is unowned and the draft hands them out one per member per
    # round in member-id order, lowest unowned first: A 0,4,8; B 1,5,9; C 2,6; D 3,7.
    rec = seed("kip315-join-initial")
    got, epoch = run(rec.instance)
    assert got == {"A": both([0, 4, 8]), "B": both([1, 5, 9]), "C": both([2, 6]), "D": both([3, 7])}
    assert epoch == 1
    s = score(rec.instance, stream_join_sticky(rec.instance, Params()).assignment)
    assert (s["valid"], s["copartition_violations"], s["max_load"], s["min_load"]) == (True, 0, 6.0, 4.0)


def test_seed_initial_then_d_leaves_keeps_everything_owned():
    # Carry the initial output forward (owned = output, generation = epoch), then D leaves:
    # D's units 3 and 7 become unowned.  R0: A0 B1 C2; R1: A4 B5 C6; R2: holders A8 B9, then C
    # (nothing left of its own) takes unowned 3; R3: A (id order) takes unowned 7.  No moves.
    rec = seed("kip315-join-initial")
    res = stream_join_sticky(rec.instance, Params())
    first = res.assignment.canonical()
    members = [{"id": m, "topics": ["impressions", "clicks"], "owned": first[m], "generation": res.extra["epoch"]}
               for m in ("A", "B", "C")]
    inst = make({"impressions": 10, "clicks": 10}, members, [["impressions", "clicks"]])
    got, epoch = run(inst)
    assert got == {"A": both([0, 4, 7, 8]), "B": both([1, 5, 9]), "C": both([2, 3, 6])}
    assert epoch == 2
    assert score(inst, stream_join_sticky(inst, Params()).assignment)["moved"] == 0


def test_registered():
    spec = registry.get("stream-join-sticky")
    rec = seed("kip315-join-member-leaves")
    res = spec.run(rec.instance)
    assert res.assignment.canonical() == rec.raw["expected"]["stream-join-sticky"]
    assert res.stats()["epoch"] == 2


# --- hand-derived cases -----------------------------------------------------------------

JOIN = {"a": 6, "b": 6}
SUB = ["a", "b"]


def ab(parts: list[int]) -> dict[str, list[int]]:
    return {"a": parts, "b": parts} if parts else {}


def test_higher_epoch_beats_a_zombie_claim():
    # B is a zombie at epoch 4 claiming 0-3; A (epoch 5) holds 0,1 and C (epoch 5) holds 2,3.
    # A and C win; units 4,5 are unowned. Draft order: holders A, C, then B.
    # Round 0: A0 C2 B4; round 1: A1 C3 B5.
    members = [
        {"id": "A", "topics": SUB, "owned": {"a": [0, 1], "b": [0, 1]}, "generation": 5},
        {"id": "B", "topics": SUB, "owned": {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3]}, "generation": 4},
        {"id": "C", "topics": SUB, "owned": {"a": [2, 3], "b": [2, 3]}, "generation": 5},
    ]
    got, epoch = run(make(JOIN, members, [SUB]))
    assert got == {"A": ab([0, 1]), "B": ab([4, 5]), "C": ab([2, 3])}
    assert epoch == 6


def test_higher_epoch_claim_wins_and_is_then_stolen_from_fairly():
    # Now B's claim is the newest (epoch 6): B previously owns 0-3, A and C nothing; unowned 4,5.
    # Round 0: B0, A4, C5. Round 1: B1; A must steal: B is the only one with unselected
    # units {2,3} and loses its highest, 3; C steals 2.
    members = [
        {"id": "A", "topics": SUB, "owned": {"a": [0, 1], "b": [0, 1]}, "generation": 5},
        {"id": "B", "topics": SUB, "owned": {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3]}, "generation": 6},
        {"id": "C", "topics": SUB, "owned": {"a": [2, 3], "b": [2, 3]}, "generation": 5},
    ]
    got, epoch = run(make(JOIN, members, [SUB]))
    assert got == {"A": ab([3, 4]), "B": ab([0, 1]), "C": ab([2, 5])}
    assert epoch == 7


def test_same_epoch_double_claim_leaves_the_unit_unowned():
    # Y and Z both claim unit 0 at epoch 3: nobody previously owns it. Y also owns 2, X owns 1.
    # Unowned 0, 3. Round 0 (holders X, Y first): X1 Y2 Z0; round 1: X takes 3.
    # (Had the first claimant in id order, Y, kept unit 0: X1 Y0 Z3, then Y2.)
    members = [
        {"id": "X", "topics": ["t"], "owned": {"t": [1]}, "generation": 3},
        {"id": "Y", "topics": ["t"], "owned": {"t": [0, 2]}, "generation": 3},
        {"id": "Z", "topics": ["t"], "owned": {"t": [0]}, "generation": 3},
    ]
    got, _ = run(make({"t": 4}, members))
    assert got == {"X": {"t": [1, 3]}, "Y": {"t": [2]}, "Z": {"t": [0]}}


def test_steal_from_the_longest_list_first():
    # A owned 0-3, B 4-6, C new; 7 units for 3 members.
    # R0: A0 B4, C steals from A (3 left vs 2) its highest 3.  R1: A1 B5, C steals: A {2} and
    # B {6} tie at 1, A had the longer list -> 2.  R2: holder B takes 6.
    members = [
        {"id": "A", "topics": ["t"], "owned": {"t": [0, 1, 2, 3]}, "generation": 1},
        {"id": "B", "topics": ["t"], "owned": {"t": [4, 5, 6]}, "generation": 1},
        {"id": "C", "topics": ["t"]},
    ]
    inst = make({"t": 7}, members)
    got, _ = run(inst)
    assert got == {"A": {"t": [0, 1]}, "B": {"t": [4, 5, 6]}, "C": {"t": [2, 3]}}
    assert score(inst, stream_join_sticky(inst, Params()).assignment)["moved"] == 2


def test_not_joinable_partitions_stay_unassigned():
    # a has 4 partitions, b 6: units 0-3 only; b-4, b-5 are not joinable. x's claim on b-5 is dropped.
    members = [{"id": "x", "topics": SUB, "owned": {"b": [5]}, "generation": 2}, {"id": "y", "topics": SUB}]
    inst = make({"a": 4, "b": 6}, members, [SUB])
    got, epoch = run(inst)
    assert got == {"x": ab([0, 2]), "y": ab([1, 3])}
    assert epoch == 3
    s = score(inst, stream_join_sticky(inst, Params()).assignment)
    assert (s["valid"], s["not_joinable"], s["unassigned"], s["copartition_violations"]) == (True, 2, 0, 0)


def test_partial_subscription_leaves_the_drafters_missing_topics_unassigned():
    # KIP step 5: y drafts unit 1 but subscribes only to a, so b-1 stays unassigned.
    members = [{"id": "x", "topics": SUB}, {"id": "y", "topics": ["a"]}]
    inst = make({"a": 2, "b": 2}, members, [SUB])
    got, _ = run(inst)
    assert got == {"x": ab([0]), "y": {"a": [1]}}
    s = score(inst, stream_join_sticky(inst, Params()).assignment)
    assert (s["valid"], s["unassigned"], s["copartition_violations"]) == (False, 1, 0)


def test_lone_topics_are_their_own_unit_groups_and_balance_across_groups():
    # join (a, b) with 3 units: x 0,2 (4 topic-partitions), y 1 (2). Then lone topic s (3
    # partitions): y has the lower load and drafts first: y0 x1 y2 -> loads x 5, y 4.
    members = [{"id": "x", "topics": ["a", "b", "s"]}, {"id": "y", "topics": ["a", "b", "s"]}]
    inst = make({"a": 3, "b": 3, "s": 3}, members, [["a", "b"]])
    assert [g.topics for g in unit_groups(inst)] == [("a", "b"), ("s",)]
    got, _ = run(inst)
    assert got == {"x": {"a": [0, 2], "b": [0, 2], "s": [1]}, "y": {"a": [1], "b": [1], "s": [0, 2]}}


def test_epoch_without_any_generation_is_one():
    _, epoch = run(make({"t": 1}, [{"id": "m", "topics": ["t"]}]))
    assert epoch == 1
    _, epoch = run(make({"t": 1}, []))
    assert epoch == 1


def test_more_members_than_units():
    members = [{"id": m, "topics": ["t"]} for m in "pqrs"]
    members[3]["owned"] = {"t": [1]}
    members[3]["generation"] = 0
    got, _ = run(make({"t": 2}, members))
    # s holds 1 and drafts first; p takes the unowned 0; q and r get nothing.
    assert got == {"p": {"t": [0]}, "q": {}, "r": {}, "s": {"t": [1]}}


def test_draft_function_directly():
    assert draft(10, [0, 1, 2], np.array([0, 0, 0, 1, 1, 1, 2, 2, -1, -1])).tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 0]
    # base order decides the extra unit: member 2 first
    assert draft(3, [2, 0], np.array([-1, -1, -1])).tolist() == [2, 0, 2]
    assert draft(0, [0, 1], np.zeros(0, dtype=np.int64)).tolist() == []


def test_resolve_claims_epochs_ties_and_limit():
    epochs = np.array([3, 3, 1, 7])
    # unit 0: 3 beats 1; unit 1: tie at 3 -> none; unit 2: member 1; unit 3: member 2 (twice, one claim);
    # unit 9 is beyond the limit
    who = np.array([0, 0, 1, 1, 1, 2, 2, 2])
    units = np.array([0, 1, 1, 2, 9, 0, 3, 3])
    assert resolve_claims(4, who, units, epochs).tolist() == [0, -1, 1, 2]
    # a newer claim (epoch 7) settles the tie
    assert resolve_claims(4, np.append(who, 3), np.append(units, 1), epochs).tolist() == [0, 3, 1, 2]
    assert resolve_claims(0, who, units, epochs).tolist() == []
    assert resolve_claims(2, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), epochs).tolist() == [-1, -1]


def test_documented_weakness_narrow_subscription():
    inst = make({"a": 2, "b": 2}, [{"id": "x", "topics": ["a", "b"]}, {"id": "y", "topics": ["a"]}])
    got, _ = run(inst)
    assert got == {"x": {"a": [0], "b": [0, 1]}, "y": {"a": [1]}}


def test_documented_weakness_partition_expansion_idles_new_partitions():
    members = [{"id": "A", "topics": ["imp", "clk"], "owned": {"imp": [0, 1], "clk": [0, 1]}, "generation": 3},
               {"id": "B", "topics": ["imp", "clk"], "owned": {"imp": [2, 3], "clk": [2, 3]}, "generation": 3}]
    inst = make({"imp": 4, "clk": 6}, members, [["imp", "clk"]])
    got, epoch = run(inst)
    assert got == {"A": {"clk": [0, 1], "imp": [0, 1]}, "B": {"clk": [2, 3], "imp": [2, 3]}}
    assert epoch == 4
    s = score(inst, stream_join_sticky(inst, Params()).assignment)
    assert (s["valid"], s["not_joinable"], s["moved"]) == (True, 2, 0)


# --- properties ---------------------------------------------------------------------------


@st.composite
def instances(draw, full_subscriptions: bool = False) -> Instance:
    n_topics = draw(st.integers(1, 5))
    names = [f"t{i}" for i in range(n_topics)]
    topics = {t: draw(st.integers(0, 8)) for t in names}
    # disjoint co-partition groups of 2+ topics
    shuffled = draw(st.permutations(names))
    groups: list[list[str]] = []
    k = 0
    while k < len(shuffled) - 1 and draw(st.booleans()):
        size = draw(st.integers(2, len(shuffled) - k))
        groups.append(list(shuffled[k:k + size]))
        k += size
    n_members = draw(st.integers(0, 6))
    members = []
    for i in range(n_members):
        sub = draw(st.lists(st.sampled_from(names), unique=True))
        if full_subscriptions:  # a member in a join subscribes to all of it
            sub = sorted({t for t in sub} | {t for g in groups if set(g) & set(sub) for t in g})
        owned = {}
        for t in sub:
            parts = draw(st.lists(st.integers(0, max(0, topics[t] - 1)), unique=True, max_size=topics[t]))
            if parts:
                owned[t] = parts
        members.append({"id": f"m{i}", "topics": sub, "owned": owned, "generation": draw(st.integers(-1, 3))})
    return make(topics, members, groups)


def check_structure(inst: Instance, a: Assignment) -> None:
    """Every assigned partition has a subscriber; every unit of a group below its limit goes whole
    (all group topics its drafter subscribes) to one drafter; nothing at or above the limit."""
    view = GroupView(inst)
    owner = {t: np.full(tp.partitions, -1) for t, tp in inst.topics.items()}
    for m, tp in a.members.items():
        i = view.index[m]
        for t, ps in tp.items():
            assert t in inst.members[i].topics
            assert (owner[t][ps] == -1).all()
            owner[t][ps] = i
    for g in unit_groups(inst):
        drafters = {i for i, m in enumerate(inst.members) if set(m.topics) & set(g.topics)}
        for t in g.topics:
            assert (owner[t][g.limit:] == -1).all()
        for p in range(g.limit if drafters else 0):
            holders = {int(owner[t][p]) for t in g.topics} - {-1}
            assert len(holders) == 1, (g, p, holders)
            (h,) = holders
            for t in g.topics:
                assert (owner[t][p] == h) == (t in inst.members[h].topics)


def unit_counts(inst: Instance, a: Assignment) -> list[list[int]]:
    """Per unit group: units held by each drafter."""
    out = []
    for g in unit_groups(inst):
        counts = []
        for m in inst.members:
            if set(m.topics) & set(g.topics):
                held: set[int] = set()
                for t in g.topics:
                    held |= set(a.members[m.id].get(t, np.zeros(0, dtype=np.int64)).tolist())
                counts.append(len(held))
        out.append(counts)
    return out


@settings(max_examples=200, deadline=None)
@given(instances())
def test_units_whole_balanced_and_only_kip_losses(inst):
    a = stream_join_sticky(inst, Params()).assignment
    check_structure(inst, a)
    for counts in unit_counts(inst, a):
        if counts:
            assert max(counts) - min(counts) <= 1
    s = score(inst, a)
    assert s["copartition_violations"] == 0


@settings(max_examples=200, deadline=None)
@given(instances(full_subscriptions=True))
def test_valid_when_joins_are_fully_subscribed(inst):
    a = stream_join_sticky(inst, Params()).assignment
    s = score(inst, a)
    assert s["valid"], s["violations"]
    assert s["copartition_violations"] == 0
    view = GroupView(inst)
    expect_nj = sum(inst.topics[t].partitions - view.limits[t] for t in view.group_of if view.subscribers[t])
    assert s["not_joinable"] == expect_nj


@settings(max_examples=200, deadline=None)
@given(instances())
def test_nothing_changes_when_nothing_changed(inst):
    res = stream_join_sticky(inst, Params())
    first = res.assignment.canonical(inst.member_ids)
    members = [{"id": m.id, "topics": list(m.topics), "owned": first[m.id], "generation": res.extra["epoch"]}
               for m in inst.members]
    again = make({t: tp.partitions for t, tp in inst.topics.items()}, members,
                 [list(g) for g in inst.copartition])
    res2 = stream_join_sticky(again, Params())
    assert res2.assignment.canonical(again.member_ids) == first
    # the epoch advances when somebody carried the previous one (an empty group stays at 1)
    assert res2.extra["epoch"] == res.extra["epoch"] + (1 if inst.members else 0)
    assert score(again, res2.assignment)["moved"] == 0


def naive_draft(limit: int, order: list[int], prev_owner: np.ndarray) -> list[int]:
    """KIP-315 step 4 spelled out pick by pick (the oracle for the batched draft)."""
    remaining = {m: [u for u in range(limit) if prev_owner[u] == m] for m in order}
    original = {m: len(v) for m, v in remaining.items()}
    unowned = [u for u in range(limit) if prev_owner[u] < 0]
    out = [-1] * limit
    drafted = 0
    while drafted < limit:
        round_order = [m for m in order if remaining[m]] + [m for m in order if not remaining[m]]
        for m in round_order:
            if drafted == limit:
                break
            if remaining[m]:
                unit = remaining[m].pop(0)
            elif unowned:
                unit = unowned.pop(0)
            else:
                victim = min(order, key=lambda v: (-len(remaining[v]), -original[v], order.index(v)))
                unit = remaining[victim].pop()
            out[unit] = m
            drafted += 1
    return out


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.integers(1, 7), st.data())
def test_batched_draft_matches_pick_by_pick(limit, n, data):
    order = data.draw(st.permutations(list(range(n))))
    pool = data.draw(st.sampled_from([[-1], list(range(n)), [-1, *range(n)], [0], [0, 1, -1]]))
    pool = [m for m in pool if m < n]
    prev = np.array(data.draw(st.lists(st.sampled_from(pool), min_size=limit, max_size=limit)), dtype=np.int64)
    assert draft(limit, order, prev).tolist() == naive_draft(limit, order, prev)
