"""Rack-aware Streams assignment (KIP-925): when Kafka turns it on, and what its optimisations keep."""

from __future__ import annotations

import copy
import math
from typing import Any

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import heuristics.streams.mincost_flow as kafka_graph
from heuristics.streams.client_state import ClientState, StreamsContext
from heuristics.streams.rack_aware import RackAwareTasks
from solver.io import parse_instance
from solver.registry import get
from solver.result import Params
from tests.heuristics.streams.checks import assert_actives_and_standbys

PIDS = [f"{i:08x}-0000-4000-8000-000000000000" for i in range(1, 13)]
RACKS = ["r1", "r2", "r3"]


@st.composite
def rack_docs(draw: st.DrawFn, strategy: str | None = None) -> dict[str, Any]:
    n_sub = draw(st.integers(1, 3))
    tasks = []
    for s in range(n_sub):
        stateful = draw(st.booleans())
        for p in range(draw(st.integers(1, 6))):
            t: dict[str, Any] = {"id": f"{s}_{p}", "stateful": stateful,
                                 "source_racks": draw(st.lists(racks_of, min_size=1, max_size=3))}
            if stateful:
                t["changelog_racks"] = draw(st.lists(racks_of, min_size=1, max_size=2))
            tasks.append(t)
    clients = [{"id": f"c{i}", "process_id": PIDS[i], "capacity": draw(st.integers(1, 3)),
                "rack": draw(st.sampled_from(RACKS))} for i in range(draw(st.integers(1, 7)))]
    return {"format": "kassign/v1", "protocol": "streams", "tasks": tasks, "clients": clients,
            "config": {"num_standby_replicas": draw(st.integers(0, 2)),
                       "rack_aware_assignment_strategy": strategy or draw(st.sampled_from(
                           ["min_traffic", "balance_subtopology"])),
                       "rack_aware_assignment_traffic_cost": draw(st.integers(0, 20)),
                       "rack_aware_assignment_non_overlap_cost": draw(st.integers(0, 5))}}


racks_of = st.lists(st.sampled_from(RACKS), min_size=1, max_size=2, unique=True)


def run(doc: dict[str, Any]) -> Any:
    return get("high-availability").run(parse_instance(doc), Params())


def base_doc() -> dict[str, Any]:
    return {"format": "kassign/v1", "protocol": "streams",
            "tasks": [{"id": f"0_{p}", "source_racks": [["r1"] if p % 2 else ["r2"]],
                       "changelog_racks": [["r2"]]} for p in range(4)]
            + [{"id": "1_0", "stateful": False, "source_racks": [["r1"]]}],
            "clients": [{"id": "a", "process_id": PIDS[0], "rack": "r1"},
                        {"id": "b", "process_id": PIDS[1], "rack": "r2"}],
            "config": {"num_standby_replicas": 1, "rack_aware_assignment_strategy": "min_traffic"}}


def test_when_kafka_turns_rack_awareness_on(registry_loaded: None) -> None:
    assert run(base_doc()).extra["rack_aware"] is True
    cases = []
    d = base_doc()
    d["config"]["rack_aware_assignment_strategy"] = "none"
    cases.append(d)
    d = base_doc()
    del d["clients"][1]["rack"]  # one client without a rack
    cases.append(d)
    d = base_doc()
    del d["tasks"][4]["source_racks"]  # a (stateless) task without source rack data
    cases.append(d)
    d = base_doc()
    del d["tasks"][0]["changelog_racks"]  # standbys wanted, a changelog without rack data
    cases.append(d)
    for d in cases:
        plain = copy.deepcopy(d)
        plain["config"]["rack_aware_assignment_strategy"] = "none"
        got = run(d)
        assert got.extra["rack_aware"] is False
        assert got.assignment == run(plain).assignment  # off means exactly the plain assignor
    d = base_doc()
    del d["tasks"][0]["changelog_racks"]
    d["config"]["num_standby_replicas"] = 0  # no standbys: changelogs are not consulted
    assert run(d).extra["rack_aware"] is True


def test_actives_follow_their_source_racks(registry_loaded: None) -> None:
    # odd partitions read from r1 only, even ones from r2 only: with a traffic cost above the
    # non-overlap cost every stateful active ends on its source's rack, two per client
    d = base_doc()
    d["config"]["num_standby_replicas"] = 0
    asg = run(d).assignment
    assert set(asg.get("a").active) - {"1_0"} == {"0_1", "0_3"}
    assert set(asg.get("b").active) - {"1_0"} == {"0_0", "0_2"}


def _cost(ra: RackAwareTasks, states: list[ClientState], tasks: list[int], traffic: int, non_overlap: int,
          before: list[ClientState], kind: str) -> int:
    total = 0
    for t in tasks:
        for c, st_ in enumerate(states):
            if t in getattr(st_, kind):
                total += ra.cost(t, c, t in getattr(before[c], kind), traffic, non_overlap, kind == "standby")
    return total


def _optimum(ra: RackAwareTasks, states: list[ClientState], tasks: list[int], traffic: int,
             non_overlap: int) -> int:
    h = nx.DiGraph()
    for t in tasks:
        h.add_edge("s", ("t", t), capacity=1, weight=0)
        for c, st_ in enumerate(states):
            h.add_edge(("t", t), ("c", c), capacity=1,
                       weight=ra.cost(t, c, t in st_.active, traffic, non_overlap, False))
    for c, st_ in enumerate(states):
        h.add_edge(("c", c), "k", capacity=sum(1 for t in tasks if t in st_.active), weight=0)
    h.nodes["s"]["demand"] = -len(tasks)
    h.nodes["k"]["demand"] = len(tasks)
    return int(nx.cost_of_flow(h, nx.min_cost_flow(h)))


@settings(max_examples=60, deadline=None)
@given(rack_docs(), st.randoms(use_true_random=False))
def test_active_optimisation_keeps_counts_and_min_traffic_is_optimal(doc: dict[str, Any], rnd: Any) -> None:
    ctx = StreamsContext.of(parse_instance(doc))
    ra = RackAwareTasks(ctx)
    assert ra.enabled
    tasks = list(range(len(ctx.tasks)))
    states = ctx.fresh_states()
    for t in tasks:
        states[rnd.randrange(len(states))].active.add(t)
    before = copy.deepcopy(states)
    traffic, non_overlap = ra.traffic_cost, ra.non_overlap_cost
    ra.optimize_active(tasks, states, traffic, non_overlap)
    assert [len(s.active) for s in states] == [len(s.active) for s in before]
    assert sorted(t for s in states for t in s.active) == tasks
    if ra.strategy == "min_traffic":
        cost_after = _cost(ra, states, tasks, traffic, non_overlap, before, "active")
        assert cost_after == _optimum(ra, before, tasks, traffic, non_overlap)
    else:
        # each client takes at most its share of every sub-topology (rounded up); cost may rise for it
        for c, st_ in enumerate(states):
            for group in ra.groups:
                share = math.ceil(len(before[c].active) / len(tasks) * len(group))
                assert sum(t in st_.active for t in group) <= share
    # Kafka's plain Bellman-Ford loop, and the vectorised rounds forced, find the very same assignment
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kafka_graph.Graph, "solve_min_cost_flow", kafka_graph.Graph.solve_min_cost_flow_reference)
        again = copy.deepcopy(before)
        ra.optimize_active(tasks, again, traffic, non_overlap)
    assert [s.active for s in again] == [s.active for s in states]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(kafka_graph, "VECTOR_MIN_EDGES", 0)
        again = copy.deepcopy(before)
        ra.optimize_active(tasks, again, traffic, non_overlap)
    assert [s.active for s in again] == [s.active for s in states]


@settings(max_examples=40, deadline=None)
@given(rack_docs("min_traffic"), st.randoms(use_true_random=False))
def test_standby_swaps_keep_counts_and_never_add_traffic(doc: dict[str, Any], rnd: Any) -> None:
    ctx = StreamsContext.of(parse_instance(doc))
    ra = RackAwareTasks(ctx)
    states = ctx.fresh_states()
    stateful = ctx.stateful()
    for t in stateful:
        holders = rnd.sample(range(len(states)), min(len(states), 2))
        states[holders[0]].active.add(t)
        for c in holders[1:]:
            states[c].standby.add(t)
    before = copy.deepcopy(states)
    ra.optimize_standby(states, ra.traffic_cost, 0)
    assert [len(s.standby) for s in states] == [len(s.standby) for s in before]
    assert [s.active for s in states] == [s.active for s in before]
    for t in stateful:
        assert sum(t in s.standby for s in states) == sum(t in s.standby for s in before)
        assert all(not (t in s.active and t in s.standby) for s in states)
    assert (_cost(ra, states, stateful, 1, 0, before, "standby")
            <= _cost(ra, before, stateful, 1, 0, before, "standby"))


@settings(max_examples=40, deadline=None)
@given(rack_docs())
def test_whole_assignor_keeps_streams_invariants(doc: dict[str, Any]) -> None:
    from spark_runner.assignors import load_all

    load_all()
    inst = parse_instance(doc)
    res = get("high-availability").run(inst, Params())
    assert res.extra["rack_aware"] is True
    # fresh clients (no state anywhere): no movement, so no warm-ups; standbys as required
    assert_actives_and_standbys(inst, res.assignment)


@settings(max_examples=30, deadline=None)
@given(rack_docs())
def test_sticky_task_with_racks_keeps_invariants_and_is_plain_when_off(doc: dict[str, Any]) -> None:
    from spark_runner.assignors import load_all

    load_all()
    sticky = get("sticky-task")
    inst = parse_instance(doc)
    res = sticky.run(inst, Params())
    assert_actives_and_standbys(inst, res.assignment)
    # the active optimisations keep each client's number of actives
    plain_doc = copy.deepcopy(doc)
    plain_doc["config"]["rack_aware_assignment_strategy"] = "none"
    plain = sticky.run(parse_instance(plain_doc), Params()).assignment
    for cid, ca in plain.clients.items():
        assert len(res.assignment.get(cid).active) == len(ca.active)
    no_rack = copy.deepcopy(doc)
    del no_rack["clients"][0]["rack"]
    no_rack_plain = copy.deepcopy(no_rack)
    no_rack_plain["config"]["rack_aware_assignment_strategy"] = "none"
    assert (sticky.run(parse_instance(no_rack), Params()).assignment
            == sticky.run(parse_instance(no_rack_plain), Params()).assignment)
