"""The gap front door (``solver.gaps``): the rule chosen by protocol, the defined rule, the fallback, settle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import solver
from solver import gaps as front
from solver.consumer import gaps as consumer
from solver.errors import InfeasibleError
from solver.io import parse_instance
from solver.model import Assignment
from solver.result import Params
from spark_runner.assignors import get

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _consumer() -> tuple[Any, Any, Any, dict[str, Any]]:
    inst = solver.read_instance(EXAMPLES / "clickstream-group.json")
    opt = solver.solve(inst, Params())
    rng = get("range").run(inst, Params())
    return inst, opt, rng.assignment, solver.score(inst, rng.assignment)


def test_consumer_gaps_are_gap_metrics_for_a_valid_assignment() -> None:
    inst, opt, asg, s = _consumer()
    assert s["outcome"] == "valid"
    got = front.gaps(inst, asg, opt, scores=s)
    assert got == consumer.gap_metrics(inst, asg, opt, scores=s)
    assert got["max_load_gap"] > 0 and set(got) == set(front.CONSUMER_GAPS)


def test_the_fallback_keeps_the_balance_gaps_when_nothing_is_as_balanced(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the fewest moves at this balance are infeasible, the balance gaps stay and excess_moves is None."""
    inst, opt, asg, s = _consumer()
    want = consumer.gap_metrics(inst, asg, opt, scores=s)
    real = consumer.gap_metrics
    calls: list[bool] = []

    def infeasible_when_valid(*a: Any, **k: Any) -> dict[str, Any]:
        calls.append(bool(k["scores"].get("valid")))
        if k["scores"].get("valid"):
            raise InfeasibleError("no assignment as balanced")
        return real(*a, **k)

    monkeypatch.setattr(consumer, "gap_metrics", infeasible_when_valid)
    got = front.consumer_gaps(inst, asg, opt, scores=s)
    assert calls == [True, False]
    assert got == {"max_load_gap": want["max_load_gap"], "sum_sq_gap": want["sum_sq_gap"], "excess_moves": None,
                   "excess_moves_proven": False}


@pytest.mark.parametrize("outcome", ["invalid", "split"])
def test_no_gaps_for_an_assignment_that_is_not_valid(outcome: str) -> None:
    inst, opt, asg, s = _consumer()
    got = front.gaps(inst, asg, opt, scores={**s, "outcome": outcome})
    assert got == dict.fromkeys(front.CONSUMER_GAPS)
    streams = front.streams_gaps({"outcome": outcome, "max_active_load": 1.0}, {})
    assert streams == {**dict.fromkeys(front.STREAMS_GAPS), "balance_optimal": False}


def test_streams_gaps_against_the_optimum_of_the_same_instance() -> None:
    inst = solver.read_instance(EXAMPLES / "streams-app.json")
    opt = get("optimal-streams").run(inst, Params())
    heur = get("high-availability").run(inst, Params())
    from solver.streams.scoring import score_streams

    s, o = score_streams(inst, heur.assignment), score_streams(inst, opt.assignment)
    got = front.gaps(inst, heur.assignment, opt, scores=s)
    assert got == front.streams_gap_metrics(s, o) == front.gaps(inst, heur.assignment, opt, scores=s, optimum_scores=o)
    assert abs(got["active_balance_gap"] - (s["max_active_load"] - o["max_active_load"])) <= front.EPS
    assert got["restoration_gap"] == s["restoration_cost"] - o["restoration_cost"]
    # the optimum against itself: every gap 0, balance optimal
    mine = front.gaps(inst, opt.assignment, opt, scores=o)
    assert mine["balance_optimal"] is True
    assert [mine[k] for k in ("active_balance_gap", "total_balance_gap", "restoration_gap")] == [0.0, 0.0, 0.0]


def test_settle_is_what_cooperative_assignors_are_measured_with() -> None:
    """The settled assignment is the one measured: cooperative-sticky reports its rounds under SETTLE."""
    inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4}, "members": [
        {"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}, "generation": 1}, {"id": "b", "topics": ["T"]}]})
    spec = get("cooperative-sticky")
    first = spec.run(inst, Params())
    settled = spec.run(inst, Params(options=dict(front.SETTLE)))
    assert settled.extra.get("rounds") == 2 and first.extra.get("rounds", 1) == 1
    assert isinstance(settled.assignment, Assignment)
    assert solver.score(inst, settled.assignment)["unassigned"] == 0 < solver.score(
        inst, first.assignment)["unassigned"]
