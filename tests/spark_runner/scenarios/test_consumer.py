"""Scenario generator: determinism, validation, event semantics, invariants (hypothesis)."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.io import instance_to_dict, parse_instance
from solver.model import Assignment, Instance, Member, OwnedMap, Topic, frozen_array
from spark_runner.scenarios.consumer import (
    EVENT_KINDS,
    SUBSCRIPTIONS,
    WEIGHTS,
    Event,
    NewMember,
    ScenarioParams,
    apply_event,
    generate,
    scenario_id,
)


def _events_equal(a: tuple[Event, ...], b: tuple[Event, ...]) -> bool:
    return a == b and [e.topic_facts() for e in a] == [e.topic_facts() for e in b]


# --------------------------------------------------------------------------- determinism


@pytest.mark.parametrize("sub", SUBSCRIPTIONS)
@pytest.mark.parametrize("weights", WEIGHTS)
def test_same_params_and_seed_give_the_same_scenario(sub: str, weights: str) -> None:
    p = ScenarioParams(members=5, topics=4, subscription=sub, weights=weights, racks=3, copartition=1,
                       static=0.5, steps=12)
    a = generate(p, 11)
    np.random.seed(1)  # global random state must not matter
    random.seed(2)
    b = generate(p, 11)
    assert a.id == b.id == scenario_id(p, 11)
    assert a.initial == b.initial
    assert _events_equal(a.events, b.events)
    assert a.states() == b.states()


def test_different_seeds_give_different_scenarios() -> None:
    p = ScenarioParams(members=5, topics=3, steps=8, subscription="random")
    a, b = generate(p, 1), generate(p, 2)
    assert a.id != b.id
    assert a.initial != b.initial or not _events_equal(a.events, b.events)


def test_params_are_part_of_the_scenario_id() -> None:
    assert scenario_id(ScenarioParams(members=5), 0) != scenario_id(ScenarioParams(members=6), 0)
    p = ScenarioParams(events=("join", "leave"))
    assert ScenarioParams.from_dict(p.to_dict()) == p


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "field", "text"),
    [
        ({"members": 0}, "members", "must be >= 1"),
        ({"topics": 2.5}, "topics", "expected an integer"),
        ({"partitions_min": 5, "partitions_max": 3}, "partitions_max", "must be >= partitions_min (5)"),
        ({"subscription": "all"}, "subscription", "must be one of identical, random, two-groups, skewed"),
        ({"density": 0.0}, "density", "must be > 0.0"),
        ({"weights": "pareto"}, "weights", "must be one of"),
        ({"copartition": 2, "topics": 3}, "copartition", "2 group(s) need at least 4 topics"),
        ({"copartition": 1, "topics": 2, "subscription": "two-groups"}, "copartition", "at least 3 topics"),
        ({"events": ("join", "explode")}, "events", "unknown event kind(s) 'explode'"),
        ({"events": ()}, "events", "non-empty"),
        ({"events": ("weight-drift",)}, "events", "weight-drift alone needs weighted partitions"),
        ({"max_members": 3, "members": 4}, "max_members", "must be >= members (4)"),
        ({"static": 1.5}, "static", "must be <= 1.0"),
    ],
)
def test_invalid_params_are_rejected_with_the_field(kwargs: dict, field: str, text: str) -> None:
    with pytest.raises(ValueError) as e:
        ScenarioParams(**kwargs)
    assert f"{field}: " in str(e.value)
    assert text in str(e.value)


def test_unknown_parameter_in_dict() -> None:
    with pytest.raises(ValueError, match="unknown parameter"):
        ScenarioParams.from_dict({"members": 3, "consumers": 4})


def test_negative_seed_rejected() -> None:
    with pytest.raises(ValueError, match="seed"):
        generate(ScenarioParams(), -1)


# --------------------------------------------------------------------------- event semantics


def _group() -> Instance:
    topics = {"a": Topic("a", 4), "b": Topic("b", 2, None, frozen_array([1.0, 3.0], np.float64))}
    members = (
        Member("m1", ("a", "b"), OwnedMap.from_lists({}), -1, None, "r1"),
        Member("m2", ("a",), OwnedMap.from_lists({}), -1, "i-m2", "r2"),
        Member("m3", ("a", "b"), OwnedMap.from_lists({}), -1, None, None),
    )
    return Instance("g", "consumer", topics, members)


ASSIGNED = Assignment.from_lists({"m1": {"a": [0], "b": [0, 1]}, "m2": {"a": [1, 2]}, "m3": {"a": [3]}})


def _owned(inst: Instance) -> dict[str, dict[str, list[int]]]:
    return {m.id: {t: a.tolist() for t, a in m.owned.items()} for m in inst.members}


def test_survivors_claim_their_assignment_at_the_next_generation() -> None:
    inst = apply_event(_group(), Event("leave", remove=("m2",)), ASSIGNED)
    assert inst.member_ids == ("m1", "m3")
    assert _owned(inst) == {"m1": {"a": [0], "b": [0, 1]}, "m3": {"a": [3]}}
    assert [m.generation for m in inst.members] == [1, 1]
    again = apply_event(inst, Event("join", add=(NewMember("m4", ("a",)),)), ASSIGNED)
    assert [m.generation for m in again.members] == [2, 2, -1]  # generation incremented, newcomer has none
    assert len(again.member("m4").owned) == 0


def test_crash_keeps_the_member_but_loses_its_claims() -> None:
    inst = apply_event(_group(), Event("crash", clear=("m1",)), ASSIGNED)
    assert inst.member_ids == ("m1", "m2", "m3")
    m1 = inst.member("m1")
    assert len(m1.owned) == 0 and m1.generation == -1 and m1.rack == "r1"
    assert _owned(inst)["m2"] == {"a": [1, 2]}


def test_restart_gives_a_new_id_at_the_end_without_claims() -> None:
    ev = Event("rolling-restart", remove=("m2",), add=(NewMember("m2-new", ("a",), "i-m2", "r2"),))
    inst = apply_event(_group(), ev, ASSIGNED)
    assert inst.member_ids == ("m1", "m3", "m2-new")
    new = inst.member("m2-new")
    assert (new.instance_id, new.rack, new.topics, len(new.owned), new.generation) == ("i-m2", "r2", ("a",), 0, -1)


def test_subscription_change_drops_claims_on_unsubscribed_topics() -> None:
    inst = apply_event(_group(), Event("subscription-change", subscriptions=(("m1", ("a",)),)), ASSIGNED)
    assert inst.member("m1").topics == ("a",)
    assert _owned(inst)["m1"] == {"a": [0]}


def test_topic_added_and_partition_expansion_keep_claims() -> None:
    ev = Event("topic-added", topics=(Topic("c", 3),), subscriptions=(("m3", ("a", "b", "c")),))
    inst = apply_event(_group(), ev, ASSIGNED)
    assert list(inst.topics) == ["a", "b", "c"] and inst.member("m3").topics == ("a", "b", "c")
    grown = apply_event(inst, Event("partition-expansion", topics=(Topic("a", 6),)), ASSIGNED)
    assert grown.topics["a"].partitions == 6
    assert _owned(grown)["m2"] == {"a": [1, 2]}


def test_claims_on_partitions_that_no_longer_exist_are_dropped() -> None:
    shrunk = apply_event(_group(), Event("partition-expansion", topics=(Topic("a", 2),)), ASSIGNED)
    assert _owned(shrunk)["m2"] == {"a": [1]}
    assert _owned(shrunk)["m3"] == {}


def test_apply_event_does_not_modify_its_inputs() -> None:
    g = _group()
    before = instance_to_dict(g)
    apply_event(g, Event("leave", remove=("m1",)), ASSIGNED)
    assert instance_to_dict(g) == before


def test_rolling_restart_restarts_every_member_once_in_order() -> None:
    p = ScenarioParams(members=4, topics=2, steps=4, events=("rolling-restart",))
    s = generate(p, 3)
    assert [e.kind for e in s.events] == ["rolling-restart"] * 4
    originals = list(s.initial.member_ids)
    assert [e.remove[0] for e in s.events] == originals
    clients = [m.split("-")[0] for m in originals]
    assert [e.add[0].id.split("-")[0] for e in s.events] == clients  # same client, new member id
    assert not set(s.states()[-1].member_ids) & set(originals)


def test_scale_out_and_in_by_k() -> None:
    p = ScenarioParams(members=6, topics=2, steps=6, events=("scale-out", "scale-in"), scale_k=3)
    s = generate(p, 5)
    sizes = [len(st.members) for st in s.states()]
    for ev, before, after in zip(s.events, sizes, sizes[1:], strict=False):
        assert after - before == (3 if ev.kind == "scale-out" else -3)
    assert min(sizes) >= p.member_floor and max(sizes) <= p.member_cap


def test_two_groups_rolling_update_moves_members_to_the_new_subscription() -> None:
    p = ScenarioParams(members=5, topics=3, steps=5, subscription="two-groups", events=("subscription-change",))
    s = generate(p, 0)
    marker = "t02"
    states = s.states()
    old_counts = [sum(marker not in m.topics for m in st.members) for st in states]
    for a, b in itertools.pairwise(old_counts):
        assert b == a - 1 or (a == 0 and b == 1)


def test_weight_drift_changes_weights_only() -> None:
    p = ScenarioParams(members=3, topics=2, steps=1, weights="lognormal", events=("weight-drift",))
    s = generate(p, 4)
    before, after = s.states()
    for name, t in before.topics.items():
        u = after.topics[name]
        assert u.partitions == t.partitions
        assert not np.array_equal(u.weights, t.weights)
        assert (u.weights > 0).all()


def test_hot_partitions_are_placed() -> None:
    p = ScenarioParams(members=3, topics=3, weights="hot", hot_partitions=4, hot_factor=25.0, steps=0)
    w = np.concatenate([t.weight_array() for t in generate(p, 9).initial.topics.values()])
    assert Counter(w.tolist()) == Counter({1.0: w.size - 4, 25.0: 4})


def test_partition_cap_is_respected() -> None:
    p = ScenarioParams(members=3, topics=3, partitions_min=5, partitions_max=10, steps=30, max_partitions=40,
                       copartition=1, events=("topic-added", "partition-expansion", "join"))
    for seed in range(20):
        sizes = [st.total_partitions for st in generate(p, seed).states()]
        assert max(sizes) <= 40


def test_steps_end_early_when_no_event_applies() -> None:
    p = ScenarioParams(members=1, topics=1, steps=5, events=("leave",))
    assert generate(p, 0).events == ()


# --------------------------------------------------------------------------- invariants (hypothesis)


def _valid(d: dict) -> bool:
    try:
        ScenarioParams(**d)
    except ValueError:
        return False
    return True


params_strategy = st.fixed_dictionaries({
    "members": st.integers(1, 8),
    "topics": st.integers(2, 5),
    "partitions_min": st.integers(1, 4),
    "partitions_max": st.integers(4, 9),
    "subscription": st.sampled_from(SUBSCRIPTIONS),
    "density": st.floats(0.1, 1.0),
    "weights": st.sampled_from(WEIGHTS),
    "racks": st.integers(0, 3),
    "copartition": st.integers(0, 1),
    "static": st.sampled_from([0.0, 0.5, 1.0]),
    "steps": st.integers(0, 8),
    "events": st.lists(st.sampled_from(EVENT_KINDS), min_size=1, max_size=5, unique=True).map(tuple),
    "scale_k": st.integers(1, 3),
}).filter(_valid).map(lambda d: ScenarioParams(**d))


def _round_robin(inst: Instance) -> Assignment:
    """A simple valid assignment: partitions dealt to subscribers in member order."""
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in inst.members}
    k = 0
    for name, t in inst.topics.items():
        subs = [m.id for m in inst.members if name in m.topics]
        for p in range(t.partitions):
            if subs:
                out[subs[k % len(subs)]].setdefault(name, []).append(p)
                k += 1
    return Assignment.from_lists(out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(p=params_strategy, seed=st.integers(0, 2**32))
def test_generated_states_are_valid_instances(p: ScenarioParams, seed: int) -> None:
    s = generate(p, seed)
    assert len(s.events) <= p.steps
    assert all(e.kind in p.events for e in s.events)
    inst = s.initial
    for step, ev in enumerate((None, *s.events)):
        if ev is not None:
            assignment = _round_robin(inst)
            nxt = apply_event(inst, ev, assignment, step)
            # claims are exactly the previous output for members that stay and keep their topics
            for m in nxt.members:
                if m.id in inst.member_ids and m.id not in ev.clear:
                    held = assignment.members.get(m.id, {})
                    kept = {t: [x for x in held[t].tolist() if x < nxt.topics[t].partitions]
                            for t in m.topics if t in held}
                    assert {t: a.tolist() for t, a in m.owned.items()} == {t: v for t, v in kept.items() if v}
                    assert m.generation == step
            inst = nxt
        # round trip through the kassign/v1 format validates every field
        assert parse_instance(instance_to_dict(inst)) == inst
        ids = inst.member_ids
        assert len(set(ids)) == len(ids) and 1 <= len(ids) <= p.member_cap
        for m in inst.members:
            assert m.topics and set(m.topics) <= set(inst.topics)
            for group in inst.copartition:  # co-partitioned topics are subscribed together
                assert set(group) <= set(m.topics) or not set(group) & set(m.topics)
        for group in inst.copartition:
            assert len({inst.topics[t].partitions for t in group}) == 1
        if p.racks:
            assert all(m.rack is not None for m in inst.members)
        assert all((t.weights is None) == (p.weights == "uniform") for t in inst.topics.values())
