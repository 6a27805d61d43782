"""Kafka's min-cost flow port: the vectorised cycle cancelling equals Kafka's plain loop, and is optimal."""

from __future__ import annotations

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics.streams import mincost_flow
from heuristics.streams.mincost_flow import VECTOR_MIN_EDGES, Graph, java_int


@st.composite
def assignment_graphs(draw: st.DrawFn) -> tuple[int, int, list[list[int]], list[int], bool]:
    """Kafka's task -> client graphs: a current placement (each task on one client) and costs."""
    n_tasks = draw(st.integers(1, 40))
    n_clients = draw(st.integers(1, 12))
    costs = [[draw(st.integers(-3, 30)) for _ in range(n_clients)] for _ in range(n_tasks)]
    place = [draw(st.integers(0, n_clients - 1)) for _ in range(n_tasks)]
    return n_tasks, n_clients, costs, place, draw(st.booleans())


def build(n_tasks: int, n_clients: int, costs: list[list[int]], place: list[int]) -> Graph:
    """MinTrafficGraphConstructor's shape: source -1, tasks, clients, sink; flows = the placement."""
    g = Graph()
    for t in range(n_tasks):
        g.add_edge(-1, t, 1, 0, 1)
        for c in range(n_clients):
            g.add_edge(t, n_tasks + c, 1, costs[t][c], 1 if place[t] == c else 0)
    sink = n_tasks + n_clients
    for c in range(n_clients):
        cap = place.count(c)
        g.add_edge(n_tasks + c, sink, cap, 0, cap)
    g.set_source_sink(-1, sink)
    return g


def flows(g: Graph) -> dict[tuple[int, int], int]:
    return {(u, e.destination): e.flow for u in sorted(g.adj) for e in g.edges(u)}


def networkx_optimum(n_tasks: int, n_clients: int, costs: list[list[int]], place: list[int]) -> int:
    h = nx.DiGraph()
    for t in range(n_tasks):
        h.add_edge("s", ("t", t), capacity=1, weight=0)
        for c in range(n_clients):
            h.add_edge(("t", t), ("c", c), capacity=1, weight=costs[t][c])
    for c in range(n_clients):
        h.add_edge(("c", c), "k", capacity=place.count(c), weight=0)
    h.nodes["s"]["demand"] = -n_tasks
    h.nodes["k"]["demand"] = n_tasks
    return int(nx.cost_of_flow(h, nx.min_cost_flow(h)))


@settings(max_examples=80, deadline=None)
@given(assignment_graphs())
def test_vectorised_equals_plain_loop_and_is_optimal(case: tuple[int, int, list[list[int]], list[int], bool]) -> None:
    n_tasks, n_clients, costs, place, _ = case
    plain = build(n_tasks, n_clients, costs, place)
    plain.solve_min_cost_flow_reference()
    for threshold in (0, 10**9):  # force the vectorised rounds, then the list-based ones
        fast = build(n_tasks, n_clients, costs, place)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(mincost_flow, "VECTOR_MIN_EDGES", threshold)
            fast.solve_min_cost_flow()
        assert flows(fast) == flows(plain)  # the same optimum, not just the same cost
    assert fast.total_cost() == networkx_optimum(n_tasks, n_clients, costs, place)
    # every task still placed once, every client keeps its count
    for t in range(n_tasks):
        assert sum(e.flow for e in fast.edges(t)) == 1
    for c in range(n_clients):
        assert sum(fast.adj[t][n_tasks + c].flow for t in range(n_tasks)) == place.count(c)


def test_large_graphs_take_the_vectorised_path() -> None:
    # 40 tasks x 12 clients: ~1,000 residual edges, above the threshold
    n_tasks, n_clients = 40, 12
    assert 2 * n_tasks * (n_clients + 1) >= VECTOR_MIN_EDGES
    costs = [[(t * 7 + c * 13) % 11 for c in range(n_clients)] for t in range(n_tasks)]
    place = [t % n_clients for t in range(n_tasks)]
    fast, plain = build(n_tasks, n_clients, costs, place), build(n_tasks, n_clients, costs, place)
    fast.solve_min_cost_flow()
    plain.solve_min_cost_flow_reference()
    assert flows(fast) == flows(plain)
    assert fast.total_cost() == networkx_optimum(n_tasks, n_clients, costs, place)


def test_max_flow_breadth_first() -> None:
    # two tasks both allowed on client node 2 only one of them fits; Kafka's BFS takes task 0 first
    g = Graph()
    g.add_edge(-1, 0, 1, 0, 0)
    g.add_edge(-1, 1, 1, 0, 0)
    g.add_edge(0, 2, 1, 0, 0)
    g.add_edge(1, 2, 1, 0, 0)
    g.add_edge(1, 3, 1, 0, 0)
    g.add_edge(2, 4, 1, 0, 0)
    g.add_edge(3, 4, 1, 0, 0)
    g.set_source_sink(-1, 4)
    assert g.calculate_max_flow() == 2
    assert flows(g) == {(-1, 0): 1, (-1, 1): 1, (0, 2): 1, (1, 2): 0, (1, 3): 1, (2, 4): 1, (3, 4): 1}


def test_java_int_and_edge_checks() -> None:
    assert java_int(2**31) == -(2**31)
    assert java_int(-(2**31) - 1) == 2**31 - 1
    g = Graph()
    g.add_edge(0, 1, 1, 0, 0)
    for args, msg in (((1, 0, 1, 0, 0), "already an edge"), ((2, 3, -1, 0, 0), "negative"),
                      ((2, 3, 1, 0, 2), "cannot exceed")):
        try:
            g.add_edge(*args)
        except ValueError as e:
            assert msg in str(e)
        else:
            raise AssertionError(args)
