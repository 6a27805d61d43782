"""CP-SAT's integer scaling at the documented limits: huge and tiny weights, move costs and capacities."""

from __future__ import annotations

import warnings

from solver.io import parse_instance
from solver.model.scoring import score
from solver.result import Params, Status
from spark_runner.assignors import get


def test_values_at_the_limits_solve_without_overflow() -> None:
    inst = parse_instance({
        "format": "kassign/v1",
        "topics": {"T1": {"partitions": 4, "weights": [2.4e99, 1e-300, 3, 2.4e99],
                          "move_costs": [2e99, 0, 1e-300, 1]}, "T2": 3},
        "members": [{"id": "C1", "topics": ["T1", "T2"], "capacity": 1e-6, "owned": {"T1": [0]}},
                    {"id": "C2", "topics": ["T1", "T2"], "capacity": 1e6}],
    })
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid cast on the way
        res = get("optimal").run(inst, Params(time_limit=5, seed=0))
    assert res.status in (Status.OPTIMAL, Status.FEASIBLE)
    metrics = score(inst, res.assignment)
    assert metrics["valid"]
    if not res.extra.get("exact_scaling", True):
        assert res.status is Status.FEASIBLE  # rounded model: no optimality claimed
