"""KIP-49 ``fair``: the seed's Fair table, hand-derived cases, and properties against a naive oracle."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics._java import java_string_key
from heuristics.fair import _fill, fair, topic_order
from solver import registry
from solver.io import parse_instance
from solver.model import Instance
from solver.model.scoring import score
from solver.result import Params
from tests.conftest import seed_records


def run(inst: Instance) -> dict[str, dict[str, list[int]]]:
    return fair(inst, Params()).assignment.canonical(inst.member_ids)


def make(topics: dict, members: list[dict]) -> Instance:
    return parse_instance({"format": "kassign/v1", "topics": topics, "members": members})


# --- the seed ---------------------------------------------------------------------------


def test_kip49_seed_fair_table_exactly():
    rec = next(r for r in seed_records() if r.instance.name == "kip49-fair-example")
    assert run(rec.instance) == rec.raw["expected"]["fair"]
    # and what the seed shows: 2 partitions each where range and roundrobin leave members empty
    s = score(rec.instance, fair(rec.instance, Params()).assignment)
    assert (s["valid"], s["max_load"], s["min_load"]) == (True, 2.0, 2.0)


def test_kip49_seed_topic_order():
    rec = next(r for r in seed_records() if r.instance.name == "kip49-fair-example")
    # T2, T4: 2 subscribers, 1 partition each (name breaks the tie); then the 4-subscriber topics
    assert topic_order(rec.instance) == ["T2", "T4", "T1", "T3", "T5"]


def test_registered():
    spec = registry.get("fair")
    inst = make({"t": 2}, [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}])
    assert spec.run(inst).assignment.canonical() == {"a": {"t": [0]}, "b": {"t": [1]}}


# --- hand-derived cases -----------------------------------------------------------------


def test_fewest_subscribers_first_author_example():
    # KIP author's javadoc example: t1 (only C1) goes first, so C0 ends with all of t0.
    inst = make({"t0": 3, "t1": 3}, [{"id": "C0", "topics": ["t0"]}, {"id": "C1", "topics": ["t0", "t1"]}])
    assert run(inst) == {"C0": {"t0": [0, 1, 2]}, "C1": {"t1": [0, 1, 2]}}


def test_more_partitions_first_on_subscriber_tie():
    # a:1, b:2, both subscribed by X and Y: b goes first (more partitions): b0->X, b1->Y, a0->X.
    # (name order would give a0->X, b0->Y, b1->X)
    inst = make({"a": 1, "b": 2}, [{"id": "X", "topics": ["a", "b"]}, {"id": "Y", "topics": ["a", "b"]}])
    assert run(inst) == {"X": {"a": [0], "b": [0]}, "Y": {"b": [1]}}


def test_least_loaded_uses_running_total_over_topics():
    # z (only M) first: M gets z0, z1. Then t (K, M): K has 0, M 2 -> K, K, then tie at 2 -> K (id), then M.
    inst = make({"t": 4, "z": 2}, [{"id": "M", "topics": ["t", "z"]}, {"id": "K", "topics": ["t"]}])
    assert run(inst) == {"K": {"t": [0, 1, 2]}, "M": {"t": [3], "z": [0, 1]}}


def test_member_tie_break_is_java_string_order_not_input_order():
    # Java compares UTF-16 units: the emoji (surrogates 0xD83D...) sorts before U+FFFF.
    emoji, high = "\U0001f600", "\uffff"
    inst = make({"t": 1}, [{"id": high, "topics": ["t"]}, {"id": emoji, "topics": ["t"]}])
    assert run(inst) == {emoji: {"t": [0]}, high: {}}
    # input order does not matter
    inst2 = make({"t": 1}, [{"id": emoji, "topics": ["t"]}, {"id": high, "topics": ["t"]}])
    assert run(inst2) == run(inst)


def test_ignores_owned_and_weights():
    members = [
        {"id": "a", "topics": ["t"], "owned": {"t": [0, 1, 2]}, "generation": 5},
        {"id": "b", "topics": ["t"]},
    ]
    inst = parse_instance({"format": "kassign/v1", "topics": {"t": {"partitions": 3, "weights": [9, 1, 1]}},
                           "members": members})
    assert run(inst) == {"a": {"t": [0, 2]}, "b": {"t": [1]}}


def test_unsubscribed_topics_and_idle_members():
    inst = make({"t": 2, "orphan": 3}, [{"id": "a", "topics": ["t"]}, {"id": "idle", "topics": []}])
    assert run(inst) == {"a": {"t": [0, 1]}, "idle": {}}
    assert topic_order(inst) == ["t"]


def test_empty_group():
    assert run(make({"t": 3}, [])) == {}


def test_fill_small_cases():
    # counts 1,0,0 -> levels: (0,r1) (0,r2) (1,r0) (1,r1) (1,r2)
    assert _fill(np.array([1, 0, 0]), np.array([0, 1, 2]), 5).tolist() == [1, 2, 0, 1, 2]
    # rank, not position, breaks ties
    assert _fill(np.array([0, 0]), np.array([1, 0]), 3).tolist() == [1, 0, 1]
    assert _fill(np.array([5, 0]), np.array([0, 1]), 4).tolist() == [1, 1, 1, 1]
    assert _fill(np.array([2]), np.array([0]), 0).tolist() == []


def test_documented_weakness_topic_lookahead_only():
    # docs/algorithms.md (fair): c2 can only take t0, but t0 goes first by name to c0.
    inst = make({"t0": 1, "t1": 1, "t2": 1}, [{"id": "c0", "topics": ["t0", "t1", "t2"]},
                                             {"id": "c1", "topics": ["t1", "t2"]}, {"id": "c2", "topics": ["t0"]}])
    assert run(inst) == {"c0": {"t0": [0], "t2": [0]}, "c1": {"t1": [0]}, "c2": {}}


def test_documented_weakness_not_sticky():
    members = [{"id": "a", "topics": ["t"]},
               {"id": "b", "topics": ["t"], "owned": {"t": [0, 1, 2]}, "generation": 1},
               {"id": "c", "topics": ["t"], "owned": {"t": [3, 4, 5]}, "generation": 1}]
    inst = make({"t": 6}, members)
    assert run(inst) == {"a": {"t": [0, 3]}, "b": {"t": [1, 4]}, "c": {"t": [2, 5]}}
    assert score(inst, fair(inst, Params()).assignment)["moved"] == 4


# --- properties ---------------------------------------------------------------------------


def naive_fair(inst: Instance) -> dict[str, dict[str, list[int]]]:
    """KIP-49 spelled out one partition at a time (the oracle)."""
    subs = {t: [m.id for m in inst.members if t in m.topics] for t in inst.topics}
    topics = sorted((t for t in inst.topics if subs[t]),
                    key=lambda t: (len(subs[t]), -inst.topics[t].partitions, java_string_key(t)))
    count = {m.id: 0 for m in inst.members}
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in inst.members}
    for t in topics:
        for p in range(inst.topics[t].partitions):
            who = min(subs[t], key=lambda m: (count[m], java_string_key(m)))
            count[who] += 1
            out[who].setdefault(t, []).append(p)
    return {m: dict(sorted(v.items())) for m, v in sorted(out.items())}


@st.composite
def instances(draw, identical: bool = False) -> Instance:
    n_topics = draw(st.integers(1, 5))
    topics = {f"t{i}": draw(st.integers(0, 9)) for i in range(n_topics)}
    n_members = draw(st.integers(0, 6))
    ids = draw(st.lists(st.sampled_from(["a", "b", "B", "c1", "c10", "c2", "\uffff", "\U0001f600", "zz"]),
                        min_size=n_members, max_size=n_members, unique=True))
    if identical:
        sub = draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True))
        members = [{"id": m, "topics": sub} for m in ids]
    else:
        members = [{"id": m, "topics": draw(st.lists(st.sampled_from(sorted(topics)), unique=True))} for m in ids]
    return make(topics, members)


@settings(max_examples=200, deadline=None)
@given(instances())
def test_matches_naive_oracle_and_is_valid(inst):
    got = run(inst)
    assert got == naive_fair(inst)
    s = score(inst, fair(inst, Params()).assignment)
    assert s["valid"], s["violations"]


@settings(max_examples=100, deadline=None)
@given(instances(identical=True))
def test_identical_subscriptions_cycle_members_like_roundrobin(inst):
    # With identical subscriptions the least-loaded choice cycles through the members in id
    # order: the k-th partition in fair's topic order goes to member k mod n; loads differ by <= 1.
    ids = sorted(inst.member_ids, key=java_string_key)
    got = run(inst)
    owner = {(t, p): m for m, tp in got.items() for t, ps in tp.items() for p in ps}
    seq = [(t, p) for t in topic_order(inst) for p in range(inst.topics[t].partitions)]
    assert [owner[tp] for tp in seq] == [ids[k % len(ids)] for k in range(len(seq))]
    loads = [sum(len(ps) for ps in got[m].values()) for m in ids]
    if loads:
        assert max(loads) - min(loads) <= 1


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=1, max_size=8), st.integers(0, 40), st.randoms())
def test_fill_matches_one_by_one_greedy(counts, n, rnd):
    ranks = list(range(len(counts)))
    rnd.shuffle(ranks)
    c = list(counts)
    expect = []
    for _ in range(n):
        i = min(range(len(c)), key=lambda k: (c[k], ranks[k]))
        c[i] += 1
        expect.append(i)
    assert _fill(np.array(counts), np.array(ranks), n).tolist() == expect
