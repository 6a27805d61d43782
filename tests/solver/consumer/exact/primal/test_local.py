"""The local search of the exact engine: valid starts, levelling within caps, honest results, the bound reached."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings

from benchmarks.bench_weighted import large_instance
from solver.consumer.exact.bounds import max_load_bound
from solver.consumer.exact.primal.data import Data
from solver.consumer.exact.primal.local import improve, level
from solver.consumer.optimal import solve
from solver.model.scoring import score
from solver.result import Params
from tests.solver.consumer.brute_force import all_assignments, small
from tests.solver.consumer.optimal_strategies import engine_data as _data
from tests.solver.consumer.optimal_strategies import instances

ORDER = ("max_load", "moves", "sum_sq")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_topics=3, max_partitions=8, max_members=5, weights=True, capacities=True,
                      move_costs=True, copartition="any"))
def test_every_item_placed_once_on_an_eligible_member(inst):
    ic, sc, d = _data(inst)
    counts = improve(d, max_load_bound(ic, sc.wint, sc.ratio))
    assert counts.shape == (ic.n_classes, ic.n_members)
    assert counts.min() >= 0
    assert counts.sum(axis=1).tolist() == ic.count.tolist()
    for c in range(ic.n_classes):
        outside = set(range(ic.n_members)) - set(d.eligible[c])
        assert all(counts[c, m] == 0 for m in outside)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(inst=instances(max_topics=2, max_partitions=4, max_members=3, weights=True, capacities=True,
                      move_costs=True))
def test_restricted_model_claims_only_what_brute_force_confirms(inst):
    """Forced onto the restricted path (local search start): bounds hold, proven stages are the optimum."""
    if not small(inst, 3000):
        return
    res = solve(inst, Params(time_limit=10, objective=ORDER, options={"max_vars": 0, "deterministic": True}))
    assert res.extra["restricted"]
    assert score(inst, res.assignment)["valid"]
    rows = all_assignments(inst)
    obj = _obj(res)
    bound = dict(zip(res.extra["stages"], res.bound, strict=True))
    proven = dict(zip(res.extra["stages"], res.extra["stage_proven"], strict=True))
    best = min(r["max_load"] for r in rows)
    assert bound["max_load"] <= best + 1e-9 <= obj["max_load"] + 2e-9
    for k in range(1, len(ORDER) + 1):
        if not all(proven[s] for s in ORDER[:k]):
            break
        want = min(tuple(r[s] for s in ORDER[:k]) for r in rows)
        assert np.allclose([obj[s] for s in ORDER[:k]], want, rtol=1e-9, atol=1e-6), (k, obj, want)


def test_ten_percent_leave_reaches_the_max_load_bound():
    """1,200 lognormal partitions, 40 members after 3 left: the start alone reaches the LP bound exactly."""
    inst = large_instance(seed=3, n=1200, members=40, leave=3)
    res = solve(inst, Params(time_limit=3, options={"max_vars": 1000, "deterministic": True}))
    obj = _obj(res)
    bound = dict(zip(res.extra["stages"], res.bound, strict=True))
    proven = dict(zip(res.extra["stages"], res.extra["stage_proven"], strict=True))
    assert res.extra["restricted"]
    assert proven["max_load"] and obj["max_load"] == bound["max_load"]
    # a later stage is proven only where its value meets a bound valid for the full model
    if proven["sum_sq"]:
        loads = sorted(_member_loads(inst, res).tolist())
        assert loads[-1] - loads[0] <= 1
    # the moved cost is far below moving everything the members that left did not own
    moved = obj["moves"]
    assert 0 < moved < 0.05 * sum(float(np.sum(t.move_costs)) for t in inst.topics.values() if t.move_costs is not None)


def _obj(res):
    return dict(zip(res.extra["stages"], res.objective, strict=True))


def _member_loads(inst, res):
    from solver.consumer.gaps import member_loads

    return member_loads(inst, res.assignment)


def test_moves_only_what_balance_needs():
    """Two equal members keep everything when the orphans fill both to the bound."""
    d = Data(weights=[6, 6, 3, 3], counts=[1, 1, 1, 1], eligible=[[0, 1]] * 4,
             cost=[{0: 0}, {0: 0}, {}, {}], ratio=[1, 1], default_cost=[5, 5, 0, 0])
    counts = improve(d, 9)
    loads = (counts * np.array([6, 6, 3, 3])[:, None]).sum(axis=0).tolist()
    assert loads == [9, 9]
    moved = sum(int(counts[c, m]) * d.cost[c].get(m, d.default_cost[c])  # type: ignore[index]
                for c, m in itertools.product(range(4), range(2)))
    assert moved == 5  # one of the owned items had to go


def _loads(d, counts):
    return (counts * np.asarray(d.weights)[:, None]).sum(axis=0) * np.asarray(d.ratio)


def _moved(d, counts):
    return sum(int(counts[c, m]) * d.cost[c].get(m, d.default_cost[c])
               for c, m in zip(*np.nonzero(counts), strict=True))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_topics=3, max_partitions=8, max_members=5, weights=True, capacities=True,
                      move_costs=True))
def test_levelling_lowers_the_squares_within_both_caps(inst):
    ic, sc, d = _data(inst)
    start = improve(d, max_load_bound(ic, sc.wint, sc.ratio))
    cap = int(_loads(d, start).max())
    budget = _moved(d, start) + 3
    out = level(d, start, cap, budget)
    assert out.sum(axis=1).tolist() == ic.count.tolist()
    assert all(out[c, m] == 0 for c in range(ic.n_classes) for m in set(range(ic.n_members)) - set(d.eligible[c]))
    before, after = _loads(d, start), _loads(d, out)
    assert int(after.max()) <= cap
    assert _moved(d, out) <= budget
    assert sum(int(x) ** 2 for x in after) <= sum(int(x) ** 2 for x in before)


def test_a_pair_swap_when_no_single_step_fits():
    """Member 0 owns 12, 3, 5, 3, 1 (24), member 1 owns 5, 5 (10): 17/17 needs two items to cross at once."""
    w = [5, 5, 12, 3, 5, 3, 1]
    d = Data(weights=w, counts=[1] * 7, eligible=[[0, 1]] * 7,
             cost=[{1: 0}, {1: 0}, {0: 0}, {0: 0}, {0: 0}, {0: 0}, {0: 0}], ratio=[1, 1],
             default_cost=[5, 2, 1, 5, 1, 1, 1])
    counts = improve(d, 17)
    assert _loads(d, counts).tolist() == [17, 17]  # single moves and swaps alone stop at 18
