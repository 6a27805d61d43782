"""``spark_runner.compare``: every assignor of either protocol against its optimum, cooperative ones settled."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import solver
import spark_runner
from solver.registry import UnknownAssignorError
from spark_runner.assignors import load_all
from spark_runner.comparison import Comparison, compare

REPO = Path(__file__).resolve().parents[2]
ORDERS = REPO / "examples" / "orders-group.json"
STREAMS = REPO / "examples" / "streams-app.json"


def test_cooperative_sticky_is_settled_by_default() -> None:
    inst = solver.read_instance(ORDERS)
    c = compare(inst, ["cooperative-sticky", "sticky"])
    coop, eager = c.row("cooperative-sticky"), c.row("sticky")
    # the first round withholds the 6 partitions that change owner; the settled group holds them all
    assert coop["valid"] and coop["unassigned"] == 0 and coop["rounds"] == 2
    assert coop["excess_moves"] is not None and coop["max_load_gap"] >= 0
    # settled cooperative-sticky ends where eager sticky goes in one rebalance (same rules)
    assert {k: coop[k] for k in ("max_load", "sum_sq_load", "moved")} == {k: eager[k] for k in
                                                                          ("max_load", "sum_sq_load", "moved")}
    first = compare(inst, ["cooperative-sticky"], settle=False).row("cooperative-sticky")
    assert (first["valid"], first["unassigned"], first["rounds"]) == (False, 6, 1)


def test_consumer_rows_cover_every_heuristic_and_the_optimum_first() -> None:
    inst = solver.read_instance(ORDERS)
    c = compare(inst)
    heur = sorted(s.name for s in load_all() if s.protocol == "consumer" and s.kind == "heuristic")
    # a weighted group: the 1% tolerance row follows the strict optimum
    assert [r["assignor"] for r in c.rows] == ["optimal", "optimal~0.01", *heur]
    assert (c.protocol, c.reference, c.optimal["status"]) == ("consumer", "optimal", "optimal")
    for r in c.rows:
        assert r["valid"], r["assignor"]
        assert r["max_load_gap"] >= 0 and r["sum_sq_gap"] >= 0 and r["excess_moves"] >= 0, r["assignor"]
    assert json.loads(json.dumps(c.to_json_dict()))["rows"][0]["assignor"] == "optimal"


def test_streams_rows_carry_streams_metrics_and_gaps() -> None:
    inst = solver.read_instance(STREAMS)
    c = compare(inst)
    heur = sorted(s.name for s in load_all() if s.protocol == "streams" and s.kind == "heuristic")
    assert [r["assignor"] for r in c.rows] == ["optimal-streams", *heur]
    assert (c.protocol, c.reference, c.optimal["status"]) == ("streams", "optimal-streams", "optimal")
    opt = c.row("optimal-streams")
    assert (opt["active_balance_gap"], opt["total_balance_gap"], opt["restoration_gap"]) == (0, 0, 0)
    for r in c.rows:
        assert r["active_balance_gap"] == pytest.approx(r["max_active_load"] - opt["max_active_load"])
        assert r["total_balance_gap"] == pytest.approx(r["max_total_load"] - opt["max_total_load"])
        assert r["restoration_gap"] == r["restoration_cost"] - opt["restoration_cost"]
        # the optimum is proven and lexicographic: no valid assignment beats its first stage
        if r["valid"]:
            assert r["active_balance_gap"] >= 0, r
        assert r["rounds"] == 1 and "max_load" not in r


def test_names_are_checked_against_the_protocol() -> None:
    with pytest.raises(UnknownAssignorError, match="high-availability"):
        compare(solver.read_instance(ORDERS), ["high-availability"])
    c = compare(solver.read_instance(STREAMS), ["sticky-task", "optimal-streams"])
    assert [r["assignor"] for r in c.rows] == ["optimal-streams", "sticky-task"]


def test_a_refusing_assignor_is_a_row_with_its_error() -> None:
    from solver.registry import AssignorSpec

    def boom(instance: solver.Instance, params: solver.Params) -> solver.Result:
        raise RuntimeError("no")

    inst = solver.read_instance(ORDERS)
    seen: list[tuple[str, str]] = []
    from spark_runner import comparison

    spec = AssignorSpec("boom", boom, "heuristic", "consumer", "")
    rows = comparison._assignor_rows(inst, "optimal", solver.solve(inst), [spec], solver.Params(),
                                     lambda n, m: seen.append((n, m)))
    assert rows[-1] == {"assignor": "boom", "error": "RuntimeError: no"} and seen == [("boom", "RuntimeError: no")]


def test_package_names_are_lazy_and_stay_functions() -> None:
    probe = ("import sys, spark_runner; before = sorted(m for m in sys.modules if m.startswith(('pyspark', "
             "'spark_runner.', 'solver.consumer', 'heuristics'))); "
             "import spark_runner.cli.app, spark_runner.comparison; "
             "print(before, callable(spark_runner.compare), spark_runner.run_sweep.__name__)")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True, cwd=REPO)
    assert out.stdout.split() == ["[]", "True", "run_sweep"]
    assert spark_runner.compare is compare and spark_runner.Comparison is Comparison
    with pytest.raises(AttributeError):
        spark_runner.nope  # noqa: B018


def test_an_assignment_that_splits_join_units_has_its_own_outcome_and_no_gaps() -> None:
    # KIP-315's example: sticky keeps every partition where it was but splits 2 join units; against the
    # optimum (which keeps units together) its gaps would be negative, which is no gain
    inst = solver.read_instance(REPO / "examples" / "join-d-leaves.json")
    c = compare(inst, ["sticky", "range"])
    sticky, rng = c.row("sticky"), c.row("range")
    assert sticky["valid"] and sticky["copartition_violations"] == 2 and sticky["outcome"] == "split"
    assert [sticky[k] for k in ("max_load_gap", "sum_sq_gap", "excess_moves")] == [None, None, None]
    assert rng["outcome"] == "valid" and rng["max_load_gap"] == 0 and rng["excess_moves"] == 4
    assert c.row("optimal")["outcome"] == "valid"


def test_weighted_group_gets_the_tolerance_row_by_default() -> None:
    """1,000 lognormal partitions, 2 members join 30: the 1% row is the optimum under that tolerance --
    max load within 1% of the strict optimum's and no more moved cost; --balance-tolerance 0 leaves it out."""
    from benchmarks.bench_weighted import large_instance
    from solver.result import Params

    inst = large_instance(seed=4, n=1000, members=30, leave=0, join=2)
    params = Params(time_limit=3, seed=1, options={"deterministic": True})
    said: list[str] = []
    c = compare(inst, ["range"], params, progress=said.append)
    assert said == ["solving optimal", "solving optimal~0.01", "running range (1/1)", "gaps of range (1/1)"]
    strict, tol, rng = c.row("optimal"), c.row("optimal~0.01"), c.row("range")
    assert tol["weighted_max_load"] <= strict["weighted_max_load"] * 1.01 + 1e-9
    assert tol["moved_cost"] <= strict["moved_cost"]
    assert tol["valid"]
    # the tolerance answer is far more balanced than range: range wastes at least the difference in moves
    assert tol["weighted_max_load"] <= rng["weighted_max_load"]
    assert rng["excess_moves"] >= rng["moved_cost"] - tol["moved_cost"] > 0
    import dataclasses

    strict_only = compare(inst, ["range"], dataclasses.replace(params, balance_tolerance=0.0))
    assert [r["assignor"] for r in strict_only.rows] == ["optimal", "range"]
