"""The CP-SAT engine against brute force on tiny weighted / capacity / co-partition instances."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings

from solver.consumer.optimal import solve
from solver.io import parse_instance
from solver.model.scoring import score
from solver.result import Params, Status
from tests.solver.consumer.brute_force import all_assignments, lexmin, small
from tests.solver.consumer.optimal_strategies import instances


def _brute(inst):
    """Lexicographic (max load, sum of squares, moves) over every assignment."""
    return lexmin(all_assignments(inst), ("max_load", "sum_sq", "moves"))


def _small(inst) -> bool:
    return small(inst, 4000)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(inst=instances(max_topics=2, max_partitions=4, max_members=3, weights=True, capacities=True))
def test_cpsat_equals_brute_force_weighted_with_capacities(inst):
    if not _small(inst):
        return
    res = solve(inst, Params(time_limit=20, objective=("max_load", "sum_sq", "moves")), engine="cpsat")
    assert res.status is Status.OPTIMAL
    assert res.bound == res.objective
    obj = dict(zip(res.extra["stages"], res.objective, strict=True))
    assert score(inst, res.assignment)["valid"]
    mx, sq, mv = _brute(inst)
    assert math.isclose(obj["max_load"], mx, abs_tol=1e-9)
    assert math.isclose(obj["sum_sq"], sq, abs_tol=1e-6)
    assert obj["moves"] == mv


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_topics=3, max_partitions=3, max_members=3, copartition="any"))
def test_cpsat_equals_brute_force_with_mixed_copartition_units(inst):
    if not _small(inst):
        return
    res = solve(inst, Params(time_limit=20, objective=("max_load", "sum_sq", "moves")))
    s = score(inst, res.assignment)
    assert s["valid"] and s["copartition_violations"] == 0
    obj = dict(zip(res.extra["stages"], res.objective, strict=True))
    mx, sq, mv = _brute(inst)
    assert (obj["max_load"], obj["sum_sq"], obj["moves"]) == (mx, sq, mv)


def test_same_seed_same_answer():
    rng = np.random.default_rng(7)
    doc = {"format": "kassign/v1",
           "topics": {"T": {"partitions": 60, "weights": np.round(rng.lognormal(0, 1, 60), 3).tolist()}},
           "members": [{"id": f"m{i}", "topics": ["T"], "owned": {"T": list(range(i, 60, 7))}, "generation": 1}
                       for i in range(6)]}
    inst = parse_instance(doc)
    runs = [solve(inst, Params(time_limit=2, seed=3, options={"deterministic": True})) for _ in range(2)]
    assert runs[0].assignment == runs[1].assignment
    assert runs[0].objective == runs[1].objective
    assert runs[0].extra["engine"] == "exact"
    for r in runs:
        assert set(r.extra) >= {"engine", "gap", "stage_gaps", "stages", "stage_seconds"}
        assert all(b <= v + 1e-9 for v, b in zip(r.objective, r.bound, strict=True))


def test_capacities_balance_load_per_capacity():
    inst = parse_instance({"format": "kassign/v1", "topics": {"T": 9},
                           "members": [{"id": "big", "topics": ["T"], "capacity": 2.0},
                                       {"id": "small", "topics": ["T"], "capacity": 1.0}]})
    res = solve(inst, Params())
    assert res.status is Status.OPTIMAL
    counts = {m: res.assignment.partitions_of(m) for m in ("big", "small")}
    assert counts == {"big": 6, "small": 3}
    assert res.objective[0] == 3.0


def test_unit_without_eligible_member_is_infeasible():
    import pytest

    from solver.errors import InfeasibleError

    inst = parse_instance({"format": "kassign/v1", "topics": {"a": 2, "b": 2}, "copartition": [["a", "b"]],
                           "members": [{"id": "x", "topics": ["a"]}, {"id": "y", "topics": ["b"]}]})
    with pytest.raises(InfeasibleError, match="no member subscribes to all"):
        solve(inst, Params())
