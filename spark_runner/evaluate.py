"""Evaluate one scenario: every selected assignor and the optimum, carried through every step.

:func:`evaluate_scenario` is a pure function of ``(params, seed, assignors,
solver_time_limit)``: it generates the scenario, runs each assignor on the
initial group, then applies each event with *that assignor's own* previous
output as the members' claims (so each assignor lives with its own history),
and scores every result.  The optimum (``optimal``) is carried the same way.
Spark only parallelises this function over scenarios; everything is testable
without Spark.

Cooperative assignors run their follow-up rounds until the assignment is
stable (option ``rounds="settle"``); ``moved`` then counts from the claims
before the first round to the settled assignment, and ``rounds`` how many
rebalances that took (1 for assignors without follow-up rounds).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from solver.errors import InfeasibleError
from solver.gaps import gap_metrics
from solver.model import Assignment, Instance
from solver.registry import AssignorSpec
from solver.result import Params, Result
from solver.scoring import score
from spark_runner.scenarios import Event, ScenarioParams, apply_event, generate

OPTIMAL = "optimal"

#: Options given to every heuristic: cooperative assignors settle their rounds.
SETTLE: Mapping[str, Any] = MappingProxyType({"rounds": "settle"})

#: Tolerance for "optimal on balance" (loads are floats).
EPS = 1e-9

# --------------------------------------------------------------------------- row schema

#: Identity of a row.
ID_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scenario_id", "string"),
    ("seed", "long"),
    ("step", "int"),
    ("event", "string"),
    ("event_detail", "string"),
    ("assignor", "string"),
)

#: Size of the instance at that step and how the run went.
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("members", "int"),
    ("topics", "int"),
    ("partitions", "long"),
    ("status", "string"),
    ("seconds", "double"),
    ("rounds", "int"),
    ("error", "string"),
)

#: Every metric of :func:`solver.scoring.score`, ``violations`` flattened.
SCORE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("valid", "boolean"),
    ("violations", "int"),
    ("violation_first", "string"),
    ("unassigned", "long"),
    ("not_joinable", "long"),
    ("copartition_violations", "long"),
    ("max_load", "double"),
    ("min_load", "double"),
    ("spread", "double"),
    ("sum_sq_load", "double"),
    ("weighted_max_load", "double"),
    ("moved", "long"),
    ("moved_cost", "double"),
    ("cross_rack", "long"),
    ("locally_balanced", "boolean"),
)

#: Gaps against the optimum of the same step.
GAP_COLUMNS: tuple[tuple[str, str], ...] = (
    ("max_load_gap", "double"),
    ("sum_sq_gap", "double"),
    ("excess_moves", "double"),
    ("excess_moves_proven", "boolean"),
    ("balance_optimal", "boolean"),
    ("opt_status", "string"),
)


def _param_type(name: str) -> str:
    default = {f.name: f.type for f in fields(ScenarioParams)}[name]
    text = str(default)
    if name == "events":
        return "string"
    if "int" in text:
        return "long"
    if "float" in text:
        return "double"
    return "string"


#: Generator parameters, one column each (``events`` comma-joined), plus the JSON.
PARAM_COLUMNS: tuple[tuple[str, str], ...] = (
    *((f"param_{f.name}", _param_type(f.name)) for f in fields(ScenarioParams)),
    ("params_json", "string"),
)

#: Every column of a row, in order, with its Spark SQL type.
ROW_SCHEMA: tuple[tuple[str, str], ...] = ID_COLUMNS + RUN_COLUMNS + SCORE_COLUMNS + GAP_COLUMNS + PARAM_COLUMNS
COLUMNS: tuple[str, ...] = tuple(n for n, _ in ROW_SCHEMA)


# --------------------------------------------------------------------------- gaps


# --------------------------------------------------------------------------- one run


@dataclass
class _Run:
    """One assignor at one step."""

    instance: Instance
    result: Result | None
    metrics: dict[str, Any] | None
    error: str | None


def _run(spec: AssignorSpec, instance: Instance, time_limit: float | None) -> _Run:
    # solvers get the time limit; heuristics the settle option (ignored by non-cooperative ones)
    params = Params(time_limit=time_limit, seed=0) if spec.kind == "solver" else Params(seed=0, options=SETTLE)
    try:
        result = spec.run(instance, params)
        if not isinstance(result.assignment, Assignment):
            raise TypeError(f"{spec.name} returned {type(result.assignment).__name__}, not a consumer Assignment")
        metrics = score(instance, result.assignment)
    except Exception as e:  # one failing assignor must not sink the scenario: the row records it
        last = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
        where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
        return _Run(instance, None, None, f"{type(e).__name__}: {e}{where}")
    return _Run(instance, result, metrics, None)


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _gaps(run: _Run, opt: _Run, time_limit: float | None) -> dict[str, Any]:
    """The gap metrics of ``solver.gaps`` against the optimum of the same step.

    ``excess_moves`` is ``None`` for an invalid assignment, for one that
    splits a co-partition unit, and when no assignment that respects the
    optimum's hard constraints is as balanced as this one (then "fewest moves
    at this balance" is undefined).
    """
    out: dict[str, Any] = {"max_load_gap": None, "sum_sq_gap": None, "excess_moves": None,
                           "excess_moves_proven": None, "balance_optimal": None}
    if run.result is None or opt.result is None or run.metrics is None:
        return out
    scores = dict(run.metrics)
    if scores.get("copartition_violations"):
        # fewest moves are counted over assignments that keep co-partitioning (as the optimum does); an
        # assignment that splits a unit is outside that set, so its excess moves are undefined
        scores["valid"] = False
    try:
        try:
            g = gap_metrics(run.instance, run.result.assignment, opt.result, scores=scores,
                            time_limit=time_limit if time_limit is not None else 10.0)
        except InfeasibleError:
            g = gap_metrics(run.instance, run.result.assignment, opt.result,
                            scores={**scores, "valid": False})  # balance gaps only
    except Exception as e:  # recorded in the row's error column, like a failing assignor
        out["error"] = f"gap_metrics: {type(e).__name__}: {e}"
        return out
    mx, sq, ex = _finite(g.get("max_load_gap")), _finite(g.get("sum_sq_gap")), _finite(g.get("excess_moves"))
    out.update(max_load_gap=mx, sum_sq_gap=sq, excess_moves=ex,
               excess_moves_proven=None if ex is None else bool(g.get("excess_moves_proven")),
               balance_optimal=None if mx is None or sq is None else (mx <= EPS and sq <= EPS))
    return out


def _score_columns(metrics: Mapping[str, Any] | None) -> dict[str, Any]:
    if metrics is None:
        return {name: None for name, _ in SCORE_COLUMNS}
    out: dict[str, Any] = {}
    for name, typ in SCORE_COLUMNS:
        if name == "violations":
            out[name] = sum(1 for v in metrics["violations"] if not str(v).startswith("... and ")) + _more(
                metrics["violations"])
        elif name == "violation_first":
            out[name] = str(metrics["violations"][0]) if metrics["violations"] else None
        elif typ == "double":
            out[name] = _finite(metrics[name])
        elif typ == "boolean":
            out[name] = bool(metrics[name])
        else:
            out[name] = int(metrics[name])
    return out


def _more(listing: Sequence[Any]) -> int:
    """The count hidden in the scorer's trailing ``"... and N more"`` line."""
    if listing and str(listing[-1]).startswith("... and "):
        try:
            return int(str(listing[-1]).split()[2])
        except (IndexError, ValueError):
            return 0
    return 0


def _param_values(params: ScenarioParams) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(ScenarioParams):
        v = getattr(params, f.name)
        out[f"param_{f.name}"] = ",".join(v) if f.name == "events" else v
    out["params_json"] = params.canonical_json()
    return out


# --------------------------------------------------------------------------- the pure function


Lookup = Callable[[str], AssignorSpec]


def load_registry() -> list[AssignorSpec]:
    """Every registered spec, the optimum included.

    ``spark_runner.assignors.load_all`` imports the heuristics; the optimum
    registers itself in ``solver.optimal``, imported here in case the
    registry's list of registrant modules does not name it.
    """
    from spark_runner.assignors import load_all

    with contextlib.suppress(ImportError):
        importlib.import_module("solver.optimal")
    return load_all()


def _default_lookup(name: str) -> AssignorSpec:
    from solver import registry

    load_registry()
    return registry.get(name)


def evaluate_scenario(
    params: ScenarioParams | Mapping[str, Any],
    seed: int,
    assignors: Sequence[str],
    solver_time_limit: float | None = None,
    *,
    lookup: Lookup | None = None,
) -> list[dict[str, Any]]:
    """Carry every assignor and the optimum through one scenario and score each step.

    Parameters
    ----------
    params
        Generator parameters (a :class:`ScenarioParams` or its dict form).
    seed
        Scenario seed.
    assignors
        Registry names of the assignors to evaluate; the optimum
        (``"optimal"``) is always evaluated too, as the reference of the gaps.
    solver_time_limit
        Seconds the optimum may use per step (``None``: no limit).
    lookup
        Name -> :class:`~solver.registry.AssignorSpec`; the complete registry
        by default (tests pass their own).

    Returns
    -------
    list of dict
        One row per (step, assignor), steps ascending, assignors in the given
        order then ``optimal``; keys are :data:`COLUMNS`.

    Notes
    -----
    At step 0 every assignor sees the initial group without claims; at step
    ``n > 0`` it sees the group after event ``n`` with its own step ``n - 1``
    output as the claims (see :func:`spark_runner.scenarios.apply_event`).
    A run that raises is recorded in ``error`` with empty metrics; that
    assignor's members then enter the next step without claims.
    """
    p = params if isinstance(params, ScenarioParams) else ScenarioParams.from_dict(params)
    scenario = generate(p, seed)
    find = lookup or _default_lookup
    names = list(dict.fromkeys([*assignors, OPTIMAL]))
    specs = {n: find(n) for n in names}
    base = {"scenario_id": scenario.id, "seed": int(seed), **_param_values(p)}

    rows: list[dict[str, Any]] = []
    current: dict[str, Instance] = {n: scenario.initial for n in names}
    steps: list[Event | None] = [None, *scenario.events]
    runs_prev: dict[str, _Run] = {}
    for step, event in enumerate(steps):
        runs: dict[str, _Run] = {}
        for n in names:
            if event is not None:
                prev = runs_prev[n]
                assignment = prev.result.assignment if prev.result is not None else None
                current[n] = apply_event(prev.instance, event, assignment, step)
            runs[n] = _run(specs[n], current[n], solver_time_limit)
        opt = runs[OPTIMAL]
        opt_status = opt.result.status.value if opt.result is not None else "error"
        for n in names:
            run = runs[n]
            inst = run.instance
            res = run.result
            gaps = _gaps(run, opt, solver_time_limit)
            gap_error = gaps.pop("error", None)
            row: dict[str, Any] = {
                **base,
                "step": step,
                "event": "initial" if event is None else event.kind,
                "event_detail": "initial assignment" if event is None else event.detail,
                "assignor": n,
                "members": len(inst.members),
                "topics": len(inst.topics),
                "partitions": inst.total_partitions,
                "status": res.status.value if res is not None else "error",
                "seconds": float(res.seconds) if res is not None else None,
                "rounds": int(res.extra.get("rounds", 1)) if res is not None else None,
                "error": run.error or gap_error,
                **_score_columns(run.metrics),
                **gaps,
                "opt_status": opt_status,
            }
            rows.append({c: row.get(c) for c in COLUMNS})
        runs_prev = runs
    return rows
