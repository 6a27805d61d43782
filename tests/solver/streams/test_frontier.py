"""The Streams balance-movement frontier against brute force, and its invariants on a real example."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.io import parse_instance
from solver.result import Params
from solver.streams.frontier import compute_streams_frontier, forced_moves
from solver.streams.optimal import solve_streams
from solver.streams.problem import StreamsProblem

REPO = Path(__file__).resolve().parents[3]
UID = "00000000-0000-0000-0000-{:012d}".format


def _stateless(caps: list[int], prev: list[int | None]) -> dict[str, Any]:
    """Stateless tasks (no standbys, every client may run them); ``prev[t]``: client index or None."""
    clients = [{"id": f"c{c}", "process_id": UID(c + 1), "capacity": cap,
                "active": [f"0_{t}" for t, p in enumerate(prev) if p == c]} for c, cap in enumerate(caps)]
    return {"format": "kassign/v1", "protocol": "streams",
            "tasks": [{"id": f"0_{t}", "stateful": False} for t in range(len(prev))], "clients": clients}


def _brute(caps: list[int], prev: list[int | None]) -> dict[int, float]:
    """Budget -> smallest max active tasks per thread with at most that many moved actives."""
    best: dict[int, float] = {}
    for assign in itertools.product(range(len(caps)), repeat=len(prev)):
        moved = sum(1 for p, a in zip(prev, assign, strict=True) if p is not None and p != a)
        load = max(assign.count(c) / cap for c, cap in enumerate(caps))
        best[moved] = min(best.get(moved, load), load)
    out: dict[int, float] = {}
    running = float("inf")
    for b in range(len(prev) + 1):
        running = min(running, best.get(b, float("inf")))
        out[b] = running
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(caps=st.lists(st.integers(1, 3), min_size=1, max_size=3),
       prev=st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=1, max_size=5))
def test_every_point_is_the_best_balance_within_its_budget(caps: list[int], prev: list[int | None]) -> None:
    prev = [p if p is None or p < len(caps) else None for p in prev]
    inst = parse_instance(_stateless(caps, prev))
    doc = compute_streams_frontier(inst, Params())
    brute = _brute(caps, prev)
    assert doc["points"][0]["budget"] == 0
    for p in doc["points"]:
        assert p["proven"] and p["moved"] <= p["budget"]
        assert p["max_active_load"] == pytest.approx(brute[p["budget"]]), (p, brute)
        assert p["max_total_load"] == pytest.approx(p["max_active_load"])  # no standbys
    # the last budget is the optimum's moves: its balance is the optimum's
    assert doc["points"][-1]["max_active_load"] == pytest.approx(min(brute.values()))


def test_example_frontier_ends_at_the_optimum_and_never_rises() -> None:
    from solver.io import read_instance

    inst = read_instance(REPO / "examples" / "streams-app.json")
    doc = compute_streams_frontier(inst, Params())
    opt = solve_streams(inst, Params())
    pts = doc["points"]
    assert doc["optimum_moves"] == opt.objective[3] == pts[-1]["budget"]
    assert (pts[-1]["max_active_load"], pts[-1]["max_total_load"]) == (opt.objective[0], opt.objective[1])
    for a, b in itertools.pairwise(pts):
        assert (b["max_active_load"], b["max_total_load"]) <= (a["max_active_load"], a["max_total_load"])
    assert all(p["proven"] and p["moved"] <= p["budget"] for p in pts)


def test_sampled_budgets_keep_both_ends() -> None:
    inst = parse_instance(_stateless([1, 1], [0, 0, 0, 0]))
    assert forced_moves(StreamsProblem.of(inst)) == 0  # the previous active is always caught up
    pts = compute_streams_frontier(inst, Params(), max_points=2)["points"]
    assert [p["budget"] for p in pts] == [0, 2] and [p["max_active_load"] for p in pts] == [4.0, 2.0]


def test_a_streams_assignor_moving_more_than_the_frontier_needs_is_off_it():
    # streams-app: the frontier reaches (2 actives, 3 replicas per thread) with 2 moved actives;
    # state-store-weighted gets the same balance with 3, so a frontier point dominates it (it was marked
    # on the frontier: only the balance at its budget was compared)
    from solver.consumer.frontier import dominating
    from solver.io import read_instance
    from solver.streams.frontier import place_streams
    from spark_runner.assignors import load_all

    inst = read_instance(REPO / "examples" / "streams-app.json")
    doc = compute_streams_frontier(inst, Params())
    specs = [s for s in load_all() if s.protocol == "streams" and s.kind == "heuristic"]
    placed = {h["assignor"]: h for h in place_streams(inst, doc, specs, Params())}
    ssw = placed["state-store-weighted"]
    keys = ("moved", "max_active_load", "max_total_load")
    best = dominating(ssw, doc["points"], keys)
    assert ssw["valid"] and best is not None and best["moved"] < ssw["moved"]
    assert ssw["on_frontier"] is False
    for h in placed.values():
        assert h["on_frontier"] == (h["valid"] and dominating(h, doc["points"], keys) is None), h["assignor"]


def test_a_client_of_2_31_threads_gets_a_frontier_not_an_invalid_model() -> None:
    """Was: the average-load bound za * total capacity passed int64 (MODEL_INVALID, exit 1)."""
    inst = parse_instance(_stateless([2, 2, 2**31 - 1], [0, 0, 1, 1, 2, None]))
    doc = compute_streams_frontier(inst, Params(time_limit=2.0), max_points=3)
    assert doc["points"] and all(p["max_active_load"] >= 0 for p in doc["points"])
