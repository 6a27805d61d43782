"""The min-cost flow engine against the networkx formulation and brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.consumer.flow import solve_flow, water_fill
from solver.consumer.items import build_classes, expand
from solver.consumer.optimal import solve
from solver.io import parse_instance
from solver.model.scoring import score
from solver.result import Params, Status
from tests.solver.consumer.brute_force import all_assignments, small
from tests.solver.consumer.flow_nx import nx_items, nx_solve
from tests.solver.consumer.optimal_strategies import instances

#: The brute force's names of the flow engine's criteria (balance: the sum of squared item counts).
BRUTE_FORCE_NAMES = {"balance": "sum_sq_items", "moves": "moves", "racks": "racks"}

ORDERS = [("balance", "moves", "racks"), ("moves", "balance", "racks"), ("racks", "balance", "moves"),
          ("balance", "racks", "moves")]


def _engine(inst, order):
    ic = build_classes(inst)
    out = solve_flow(ic, [m.rack for m in inst.members], order=order)
    a = expand(ic, inst, out.flows)
    return ic, out, a


def _check_valid(inst, a):
    s = score(inst, a)
    assert s["valid"], s["violations"]
    assert s["copartition_violations"] == 0


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_topics=3, max_partitions=6, max_members=5, racks=True), order=st.sampled_from(ORDERS))
def test_flow_equals_networkx(inst, order):
    _ic, out, a = _engine(inst, order)
    _check_valid(inst, a)
    ref = nx_solve(inst, order)
    assert out.sum_sq_items == ref["sum_sq_items"]
    assert out.moved_cost_int == ref["moves"]
    assert out.cross_rack == ref["racks"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_topics=3, max_partitions=4, max_members=4, copartition="equal", racks=True))
def test_flow_equals_networkx_with_copartition_units(inst):
    _ic, out, a = _engine(inst, ("balance", "moves", "racks"))
    _check_valid(inst, a)
    ref = nx_solve(inst)
    assert (out.sum_sq_items, out.moved_cost_int, out.cross_rack) == (ref["sum_sq_items"], ref["moves"], ref["racks"])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_topics=2, max_partitions=3, max_members=3, racks=True), order=st.sampled_from(ORDERS))
def test_flow_and_networkx_equal_brute_force(inst, order):
    if not small(inst, 20_000):
        return
    bf = min(all_assignments(inst), key=lambda row: tuple(row[BRUTE_FORCE_NAMES[c]] for c in order))
    _, out, _ = _engine(inst, order)
    ref = nx_solve(inst, order)
    assert (out.sum_sq_items, out.moved_cost_int, out.cross_rack) == (bf["sum_sq_items"], bf["moves"], bf["racks"])
    assert (ref["sum_sq_items"], ref["moves"], ref["racks"]) == (bf["sum_sq_items"], bf["moves"], bf["racks"])


@settings(max_examples=60, deadline=None)
@given(inst=instances(max_topics=3, max_partitions=8, max_members=5))
def test_most_balanced_loads_are_decreasingly_minimal(inst):
    """Sum-of-squares minimum = dec-min: no other assignment has a smaller sorted load vector."""
    if math.prod(len(it.eligible) for it in nx_items(inst)) > 20_000:
        return
    import itertools

    items = nx_items(inst)
    _, out, _ = _engine(inst, ("balance",))
    mine = sorted(out.counts.tolist(), reverse=True)
    for combo in itertools.product(*[it.eligible for it in items]):
        loads = np.bincount(np.array(combo, dtype=np.int64), minlength=len(inst.members))
        assert sorted(loads.tolist(), reverse=True) >= mine


def test_window_widening_reaches_skewed_optimum():
    # one member alone on a big topic: its optimal load is far from the water level of the rest
    doc = {"format": "kassign/v1", "topics": {"big": 40, "small": 6},
           "members": [{"id": "solo", "topics": ["big"]}] + [
               {"id": f"m{i}", "topics": ["small", "big"]} for i in range(5)]}
    inst = parse_instance(doc)
    _ic, out, a = _engine(inst, ("balance", "moves"))
    _check_valid(inst, a)
    assert sorted(out.counts.tolist()) == [7, 7, 8, 8, 8, 8]
    assert out.sum_sq_items == nx_solve(inst)["sum_sq_items"]


def test_water_fill_estimate_is_the_average_for_equal_subscriptions():
    inst = parse_instance({"format": "kassign/v1", "topics": {"a": 10, "b": 11},
                           "members": [{"id": f"m{i}", "topics": ["a", "b"]} for i in range(3)]})
    assert np.allclose(water_fill(build_classes(inst)), 7.0)


def test_rebalance_keeps_every_partition_it_can():
    # 3 members owned 4 each; one leaves: its 4 spread, nobody else moves
    owned = {"m0": [0, 1, 2, 3], "m1": [4, 5, 6, 7], "m2": [8, 9, 10, 11]}
    doc = {"format": "kassign/v1", "topics": {"T": 12},
           "members": [{"id": m, "topics": ["T"], "owned": {"T": p}, "generation": 1}
                       for m, p in owned.items() if m != "m2"] + [{"id": "m3", "topics": ["T"]}]}
    inst = parse_instance(doc)
    res = solve(inst, Params())
    assert res.status is Status.OPTIMAL and res.extra["engine"] == "flow"
    s = score(inst, res.assignment)
    assert s["moved"] == 0 and s["max_load"] == 4 and s["min_load"] == 4
    assert res.objective == res.bound == (4.0, 48.0, 0.0, 0.0)


def test_weighted_objective_trades_balance_for_moves():
    doc = {"format": "kassign/v1", "topics": {"T": 4},
           "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}, "generation": 1},
                       {"id": "b", "topics": ["T"]}]}
    inst = parse_instance(doc)
    # moving one partition lowers sum_sq by 16 - 10 = 6 and the next by 10 - 8 = 2; each move costs 5
    res = solve(inst, Params(objective=("weighted:balance=1", "moves=5")))
    assert score(inst, res.assignment)["moved"] == 1
    res = solve(inst, Params(objective=("weighted:balance=1", "moves=1")))
    assert score(inst, res.assignment)["moved"] == 2


def test_flow_forced_on_weights_is_refused():
    from solver.errors import InfeasibleError

    inst = parse_instance({"format": "kassign/v1", "topics": {"T": {"partitions": 2, "weights": [1, 2]}},
                           "members": [{"id": "a", "topics": ["T"]}]})
    with pytest.raises(InfeasibleError, match="different loads"):
        solve(inst, Params(), engine="flow")
