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

import numpy as np

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
    ("balance_optimal", "boolean"),
    ("opt_status", "string"),
    ("gap_source", "string"),
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


GapFn = Callable[..., Mapping[str, Any]]


def _gap_metrics_fn() -> GapFn | None:
    """``solver.gaps.gap_metrics`` when the optimal-solver package provides it."""
    try:
        from solver.gaps import gap_metrics
    except ImportError:
        return None
    return gap_metrics  # type: ignore[no-any-return]


def _weighted_sum_sq(instance: Instance, assignment: Assignment) -> float:
    index = {m.id: i for i, m in enumerate(instance.members)}
    loads = np.zeros(len(instance.members))
    for mid, per in assignment.members.items():
        i = index.get(mid)
        if i is None:
            continue
        for t, parts in per.items():
            if t in instance.topics:
                w = instance.topics[t].weights
                loads[i] += float(w[parts].sum()) if w is not None else float(parts.size)
    caps = np.array([m.capacity for m in instance.members])
    return float(((loads / caps) ** 2).sum()) if loads.size else 0.0


def fallback_gaps(
    instance: Instance,
    assignment: Assignment,
    metrics: Mapping[str, Any],
    opt_instance: Instance,
    opt_assignment: Assignment,
    opt_metrics: Mapping[str, Any],
) -> dict[str, float | None]:
    """TEMPORARY FALLBACK while ``solver.gaps`` is absent: gaps from the optimum's row.

    Balance is measured as the optimum measures it: weighted loads when the
    instance has weights, topic-partition counts otherwise.  ``excess_moves``
    needs a flow problem that only ``solver.gaps`` solves, so it is ``None``.
    """
    if instance.has_weights:
        mx = metrics["weighted_max_load"] - opt_metrics["weighted_max_load"]
        sq = _weighted_sum_sq(instance, assignment) - _weighted_sum_sq(opt_instance, opt_assignment)
    else:
        mx = metrics["max_load"] - opt_metrics["max_load"]
        sq = metrics["sum_sq_load"] - opt_metrics["sum_sq_load"]
    return {"max_load_gap": float(mx), "sum_sq_gap": float(sq), "excess_moves": None}


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


def _gaps(run: _Run, opt: _Run, gap_fn: GapFn | None) -> dict[str, Any]:
    empty = {"max_load_gap": None, "sum_sq_gap": None, "excess_moves": None, "balance_optimal": None,
             "gap_source": None}
    if run.result is None or opt.result is None or run.metrics is None or opt.metrics is None:
        return empty
    if gap_fn is not None:
        g = dict(gap_fn(run.instance, run.result.assignment, opt.result))
        source = "gaps"
    else:
        g = fallback_gaps(run.instance, run.result.assignment, run.metrics,
                          opt.instance, opt.result.assignment, opt.metrics)
        source = "fallback"
    mx, sq, ex = _finite(g.get("max_load_gap")), _finite(g.get("sum_sq_gap")), _finite(g.get("excess_moves"))
    bal = None if mx is None or sq is None else (mx <= EPS and sq <= EPS)
    return {"max_load_gap": mx, "sum_sq_gap": sq, "excess_moves": ex, "balance_optimal": bal, "gap_source": source}


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
    gap_fn = _gap_metrics_fn()
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
                "error": run.error,
                **_score_columns(run.metrics),
                **_gaps(run, opt, gap_fn),
                "opt_status": opt_status,
            }
            rows.append({c: row.get(c) for c in COLUMNS})
        runs_prev = runs
    return rows
