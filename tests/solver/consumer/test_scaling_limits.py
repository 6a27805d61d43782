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


def _bytes_group(weights: list[int], costs: list[int]) -> dict:
    n = len(weights)
    return {"format": "kassign/v1", "units": {"weights": "bytes/s", "move_costs": "bytes"},
            "topics": {"T": {"partitions": n, "weights": weights, "move_costs": costs}},
            "members": [{"id": f"m{i}", "topics": ["T"], "owned": {"T": list(range(i, n, 5))}, "generation": 1}
                        for i in range(5)] + [{"id": "new", "topics": ["T"]}]}


def test_bytes_per_second_near_1e12_and_sums_past_2_63() -> None:
    """Weights near 1e12 bytes/s (sum ~2e13: rounded to a resolution, said so), and weights whose sum and
    squares pass 2**63 (one of them the 13380906374407309893 that once raised a TypeError): valid answers,
    honest stage values, no optimality claimed where the scale was rounded."""
    import random

    rng = random.Random(7)
    near = _bytes_group([rng.randint(10**11, 10**12) for _ in range(40)], [rng.randint(1, 10**12) for _ in range(40)])
    past = _bytes_group([13380906374407309893] + [rng.randint(10**17, 4 * 10**18) for _ in range(39)],
                        [2**70] + [rng.randint(1, 10**6) for _ in range(39)])
    for doc in (near, past):
        inst = parse_instance(doc)
        for eps in (None, 0.01):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                res = get("optimal").run(inst, Params(time_limit=3, seed=0, balance_tolerance=eps))
            metrics = score(inst, res.assignment)
            assert metrics["valid"]
            obj = dict(zip(res.extra["stages"], res.objective, strict=True))
            # the reported values are the assignment's own (the scorer's units)
            assert abs(obj["max_load"] - metrics["weighted_max_load"]) <= 1e-9 * metrics["weighted_max_load"]
            assert abs(obj["moves"] - metrics["moved_cost"]) <= 1e-9 * max(1.0, metrics["moved_cost"])
            assert all(b <= v * (1 + 1e-12) for v, b in zip(res.objective, res.bound, strict=True))
            if not res.extra.get("exact_scaling", True):
                assert res.status is Status.FEASIBLE and res.extra.get("notes")
