"""The public API of ``solver``: protocol dispatch, errors, and a cheap ``import solver``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import solver
from solver.model.scoring import score as score_consumer
from solver.streams.model import StreamsAssignment
from solver.streams.scoring import score_streams

REPO = Path(__file__).resolve().parents[2]
ORDERS = REPO / "examples" / "orders-group.json"
STREAMS = REPO / "examples" / "streams-app.json"


def test_solve_and_score_dispatch_by_protocol() -> None:
    inst = solver.read_instance(ORDERS)
    res = solver.solve(inst)
    assert isinstance(res.assignment, solver.Assignment) and res.status is solver.Status.OPTIMAL
    assert solver.score(inst, res.assignment) == score_consumer(inst, res.assignment)
    s_inst = solver.read_instance(STREAMS)
    s_res = solver.solve(s_inst)
    assert isinstance(s_res.assignment, StreamsAssignment) and s_res.extra["stages"][0] == "active_balance"
    assert solver.score(s_inst, s_res.assignment) == score_streams(s_inst, s_res.assignment)


def test_forced_engines_and_bad_arguments() -> None:
    inst = solver.read_instance(ORDERS)
    assert solver.solve(inst, solver.Params(time_limit=20), solver="cpsat").extra["engine"] == "cpsat"
    with pytest.raises(ValueError, match="unknown solver"):
        solver.solve(inst, solver="gurobi")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="consumer engine"):
        solver.solve(solver.read_instance(STREAMS), solver="flow")
    with pytest.raises(ValueError, match="max_points"):
        solver.frontier(inst, max_points=1)


def test_score_refuses_the_other_protocols_assignment() -> None:
    inst = solver.read_instance(ORDERS)
    s_inst = solver.read_instance(STREAMS)
    with pytest.raises(TypeError, match="StreamsAssignment"):
        solver.score(s_inst, solver.solve(inst).assignment)
    with pytest.raises(TypeError, match="an Assignment"):
        solver.score(inst, solver.solve(s_inst).assignment)
    # the model's scorer knows only the consumer protocol: the dispatch is solver.score's
    with pytest.raises(TypeError, match=r"use solver\.score"):
        score_consumer(s_inst, solver.solve(inst).assignment)


def test_frontier_dispatches_by_protocol() -> None:
    assert solver.frontier(solver.read_instance(STREAMS))["protocol"] == "streams"
    doc = solver.frontier(solver.read_instance(ORDERS))
    assert "max_load" in doc["points"][0] and doc["optimum_moves"] == doc["points"][-1]["budget"]


def test_plan_compares_with_kafka_only_when_registered() -> None:
    inst = solver.read_instance(REPO / "examples" / "plan-orders.json")
    doc = solver.plan(inst, 5_000_000, kafka=None, range=(6, 6))
    assert (doc["min_instances"], doc["kafka_assignor"]) == (6, None)
    import heuristics  # noqa: F401  (registers cooperative-sticky)

    assert solver.plan(inst, 5_000_000, range=(6, 6))["kafka_assignor"] == "cooperative-sticky"


_PROBE = """
import json, sys
import solver
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("ortools", "pandas", "heuristics", "pyspark",
                                                                 "solver.consumer", "solver.streams",
                                                                 "solver.planning")))))
"""


def test_import_solver_loads_no_engine() -> None:
    out = subprocess.run([sys.executable, "-c", _PROBE], check=True, capture_output=True, text=True, cwd=REPO)
    assert json.loads(out.stdout) == []


def test_public_names() -> None:
    assert sorted(solver.__all__) == ["Assignment", "Instance", "Params", "Result", "Status", "frontier", "plan",
                                      "read_instance", "score", "solve"]
    for name in solver.__all__:
        obj = getattr(solver, name)
        assert isinstance(obj, type) or "Examples" in (obj.__doc__ or ""), name
