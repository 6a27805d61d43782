"""RoundRobinAssignor: Kafka's javadoc examples, member order, the KIP-49 seed, a literal-loop oracle."""

from __future__ import annotations

import doctest
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import heuristics.roundrobin as rr_mod
from heuristics._java import java_string_key
from heuristics.range import member_info_key
from heuristics.roundrobin import roundrobin_assign
from solver.io import parse_instance
from tests.conftest import seed_records


def inst(topics: dict[str, Any], members: list[dict[str, Any]]) -> Any:
    return parse_instance({"format": "kassign/v1", "topics": topics, "members": members})


def canon(i: Any) -> dict[str, dict[str, list[int]]]:
    return roundrobin_assign(i).canonical(i.member_ids)


def test_javadoc_identical_subscriptions() -> None:
    # C0: [t0p0, t0p2, t1p1], C1: [t0p1, t1p0, t1p2]
    i = inst({"t0": 3, "t1": 3}, [{"id": "C1", "topics": ["t1", "t0"]}, {"id": "C0", "topics": ["t0", "t1"]}])
    assert canon(i) == {"C0": {"t0": [0, 2], "t1": [1]}, "C1": {"t0": [1], "t1": [0, 2]}}


def test_javadoc_different_subscriptions() -> None:
    # C0: [t0p0], C1: [t1p0], C2: [t1p1, t2p0, t2p1, t2p2]
    i = inst({"t0": 1, "t1": 2, "t2": 3}, [
        {"id": "C0", "topics": ["t0"]},
        {"id": "C1", "topics": ["t0", "t1"]},
        {"id": "C2", "topics": ["t0", "t1", "t2"]},
    ])
    assert canon(i) == {"C0": {"t0": [0]}, "C1": {"t1": [0]}, "C2": {"t1": [1], "t2": [0, 1, 2]}}


def test_static_members_lead_the_circle() -> None:
    i = inst({"t": 3}, [{"id": "a", "topics": ["t"]}, {"id": "z", "topics": ["t"], "instance_id": "i"}])
    assert canon(i) == {"a": {"t": [1]}, "z": {"t": [0, 2]}}


def test_topics_in_java_string_order() -> None:
    # TreeSet<String>: "T" (0x54) before "a" (0x61); the circle continues across topics
    i = inst({"a": 1, "T": 1}, [{"id": "m1", "topics": ["a", "T"]}, {"id": "m2", "topics": ["a", "T"]}])
    assert canon(i) == {"m1": {"T": [0]}, "m2": {"a": [0]}}


def test_kip49_seed() -> None:
    recs = [r for r in seed_records() if "roundrobin" in r.instance.meta.get("expected", {})]
    assert recs, "the KIP-49 seed states a round-robin table"
    for rec in recs:
        assert canon(rec.instance) == rec.instance.meta["expected"]["roundrobin"], rec.id


def literal_roundrobin(i: Any) -> dict[str, dict[str, list[int]]]:
    """Kafka's loop, one partition at a time, with a circular iterator (the oracle)."""
    members = sorted(i.members, key=member_info_key)
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in i.members}
    topics = sorted({t for m in members for t in m.topics}, key=java_string_key)
    cur = 0
    for t in topics:
        for p in range(i.topics[t].partitions):
            while t not in members[cur % len(members)].topics:
                cur += 1
            out[members[cur % len(members)].id].setdefault(t, []).append(p)
            cur += 1
    return {m: {t: sorted(v) for t, v in sorted(tp.items())} for m, tp in sorted(out.items())}


@st.composite
def groups(draw: Any) -> Any:
    n_topics = draw(st.integers(1, 5))
    topics = {f"t{k}": draw(st.integers(0, 9)) for k in range(n_topics)}
    members = []
    for m in range(draw(st.integers(1, 7))):
        subs = draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, max_size=n_topics, unique=True))
        spec: dict[str, Any] = {"id": f"m{draw(st.integers(0, 99))}-{m}", "topics": subs}
        if draw(st.booleans()):
            spec["instance_id"] = f"i{draw(st.integers(0, 99))}-{m}"
        members.append(spec)
    return inst(topics, members)


@settings(max_examples=150, deadline=None)
@given(groups())
def test_matches_literal_loop_and_is_valid(i: Any) -> None:
    got = canon(i)
    assert got == literal_roundrobin(i)
    for t, topic in i.topics.items():
        holders = [(m.id, p) for m in i.members for p in got[m.id].get(t, [])]
        subscribed = any(t in m.topics for m in i.members)
        assert sorted(p for _, p in holders) == (list(range(topic.partitions)) if subscribed else [])
        assert all(t in i.member(mid).topics for mid, _ in holders)


def test_doctests() -> None:
    assert doctest.testmod(rr_mod).failed == 0
