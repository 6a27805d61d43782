"""The optimal assignor: picks the exact engine and reports a certified result.

``solve(instance, params)`` uses the min-cost flow engine (:mod:`solver.consumer.flow`)
when every item has the same load and all members the same capacity (unit
weights, co-partition units all of one size), and the CP-SAT engine
(:mod:`solver.consumer.cpsat`) otherwise.  Registered as ``optimal``; ``optimal-flow``
and ``optimal-cpsat`` force one engine.

Objective (``params.objective`` or ``--objective``)
---------------------------------------------------
* A lexicographic order of criteria, e.g. ``("balance", "moves", "racks")``
  (the default).  ``balance`` is the most balanced load vector: for the flow,
  minimal sum of squared loads (equivalently the decreasingly-minimal load
  vector, which also has the least maximum); for CP-SAT two stages, maximum
  load then sum of squares.  ``max_load`` and ``sum_sq`` may be named
  separately (CP-SAT).  ``moves`` is the moved cost (``move_costs``, default
  1 per topic-partition), ``racks`` the cross-rack topic-partitions.
  Criteria left out are not optimised.
* A weighted sum, ``"weighted:balance=1,moves=0.1"``: minimise
  ``1 * sum_sq + 0.1 * moved_cost`` (+ ``racks=w`` for cross-rack).

Result
------
``objective`` and ``bound`` hold one value per stage, in original units,
named by ``extra["stages"]`` (default ``max_load, sum_sq, moves, racks``).
``extra`` also has ``engine``, ``gap`` (relative gap of the first stage),
``stage_gaps`` and engine facts.  ``status``: ``optimal`` when every stage
is proven, else ``feasible``.  Infeasible or unsupported inputs raise
:class:`~solver.errors.InfeasibleError` (exit code 3).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from solver.consumer.cpsat import MAX_VARS, STAGE_NAMES, solve_cpsat
from solver.consumer.flow import CRITERIA, solve_flow
from solver.consumer.items import ItemClasses, build_classes, expand
from solver.errors import InfeasibleError, KassignError
from solver.model import Assignment, Instance
from solver.model.semantics import GroupView
from solver.registry import register
from solver.result import Params, Result, Status

DEFAULT_ORDER = ("balance", "moves", "racks")


class ObjectiveError(KassignError):
    """A malformed ``--objective`` (a usage error, exit code 2)."""

    exit_code = 2

#: Default CP-SAT time limit (seconds) when ``params.time_limit`` is None.
DEFAULT_TIME_LIMIT = 30.0


def parse_objective(objective: Sequence[str] | str | None) -> tuple[tuple[str, ...], dict[str, float] | None]:
    """Parse ``params.objective`` into (order, weights).

    Examples
    --------
    >>> parse_objective(None)
    (('balance', 'moves', 'racks'), None)
    >>> parse_objective(("moves", "balance"))
    (('moves', 'balance'), None)
    >>> parse_objective(("weighted:balance=1", "moves=0.1"))
    (('balance', 'moves', 'racks'), {'balance': 1.0, 'moves': 0.1})
    """
    if objective is None or len(objective) == 0:
        return DEFAULT_ORDER, None
    parts = [objective] if isinstance(objective, str) else list(objective)
    text = ",".join(p.strip() for p in parts)
    if text.startswith("weighted:"):
        weights: dict[str, float] = {}
        for item in text[len("weighted:"):].split(","):
            if not item.strip():
                continue
            key, sep, val = item.partition("=")
            key = key.strip()
            if not sep or key not in CRITERIA:
                raise ObjectiveError(f"bad weighted objective term {item!r}: expected one of "
                                      f"{', '.join(CRITERIA)} as name=weight")
            try:
                w = float(val)
            except ValueError:
                raise ObjectiveError(f"bad weight in {item!r}") from None
            if not w >= 0:
                raise ObjectiveError(f"weights must be >= 0: {item!r}")
            weights[key] = w
        if not weights:
            raise ObjectiveError("weighted objective without terms")
        return DEFAULT_ORDER, weights
    order = tuple(p.strip() for p in text.split(",") if p.strip())
    known = {*CRITERIA, "max_load", "sum_sq"}
    bad = [o for o in order if o not in known]
    if bad or len(set(order)) != len(order):
        raise ObjectiveError(f"bad objective {text!r}: stages must be distinct names from {sorted(known)}")
    return order, None


def cpsat_stages(order: Sequence[str]) -> tuple[str, ...]:
    """Expand ``balance`` into CP-SAT's ``max_load, sum_sq`` stages."""
    out: list[str] = []
    for o in order:
        for s in (("max_load", "sum_sq") if o == "balance" else (o,)):
            if s not in out:
                out.append(s)
    return tuple(out)


def flow_fits(instance: Instance, ic: ItemClasses, order: Sequence[str]) -> str | None:
    """Why the flow engine cannot take this instance (``None`` if it can)."""
    caps = {m.capacity for m in instance.members}
    if len(caps) > 1:
        return "members have different capacities"
    w = set(ic.weight[ic.count > 0].tolist())
    if len(w) > 1:
        return "items have different loads (weights or co-partition units of several sizes)"
    if any(o in ("max_load", "sum_sq") for o in order):
        return "max_load / sum_sq stages are CP-SAT stages"
    return None


def _loads(instance: Instance, ic: ItemClasses, flows: list[tuple[int, int, int]]) -> np.ndarray:
    load = np.zeros(len(instance.members), dtype=np.float64)
    for c, m, k in flows:
        load[m] += k * float(ic.weight[c])
    caps = np.array([m.capacity for m in instance.members], dtype=np.float64)
    return load / caps if caps.size else load


def _values(instance: Instance, ic: ItemClasses, flows: list[tuple[int, int, int]]) -> dict[str, float]:
    """Every stage value of a flow decomposition, in original units."""
    loads = _loads(instance, ic, flows)
    racks = [m.rack for m in instance.members]
    moved = 0.0
    cross = 0
    owner_cost = [dict(o) for o in ic.owners]
    for c, m, k in flows:
        moved += k * (float(ic.owned_cost[c]) - owner_cost[c].get(m, 0.0))
        cross += k * ic.rack_cost(c, racks[m])
    return {
        "max_load": float(loads.max()) if loads.size else 0.0,
        "sum_sq": float((loads**2).sum()),
        "moves": moved,
        "racks": float(cross),
        "loads": loads,  # type: ignore[dict-item]
    }


def _empty(instance: Instance, t0: float) -> Result:
    owners = {t: np.full(tp.partitions, -1, dtype=np.int64) for t, tp in instance.topics.items()}
    a = Assignment.from_owners(instance.member_ids, owners)
    stages = list(STAGE_NAMES)
    return Result(a, Status.OPTIMAL, (0.0,) * 4, (0.0,) * 4, time.perf_counter() - t0,
                  {"engine": "none", "gap": 0.0, "stages": stages})


def _gap(v: float, b: float) -> float:
    if v == b:
        return 0.0
    return abs(v - b) / max(abs(v), 1e-12)


def solve(instance: Instance, params: Params, engine: str = "auto") -> Result:
    """Optimal assignment of a consumer-protocol instance.

    Parameters
    ----------
    instance
        The group state.
    params
        ``objective`` (see module docstring), ``time_limit`` (CP-SAT, seconds;
        default 30), ``seed``, ``options`` (``workers``: CP-SAT workers, 1 =
        deterministic; ``interleave``: deterministic interleaved portfolio;
        ``max_vars``: CP-SAT neighbourhood threshold).
    engine
        ``"auto"``, ``"flow"`` or ``"cpsat"``.

    Returns
    -------
    Result

    Raises
    ------
    InfeasibleError
        Infeasible, unsupported (flow forced on an instance it cannot model),
        or no solution within the time limit.
    """
    t0 = time.perf_counter()
    if instance.protocol != "consumer":
        raise InfeasibleError("the optimal consumer solver needs a consumer-protocol instance")
    order, weights = parse_objective(params.objective)
    view = GroupView(instance)
    ic = build_classes(instance, view)
    if ic.total_items == 0 or not instance.members:
        return _empty(instance, t0)
    why = flow_fits(instance, ic, order)
    use = engine
    if engine == "auto":
        use = "flow" if why is None else "cpsat"
    elif engine == "flow" and why is not None:
        raise InfeasibleError(f"unsupported by the flow engine: {why}")
    racks = [m.rack for m in instance.members]
    extra: dict[str, Any] = {}
    if use == "flow":
        w = float(ic.weight[ic.count > 0][0])
        cap = instance.members[0].capacity
        out = solve_flow(ic, racks, order=[o for o in order if o in CRITERIA], weights=weights,
                         load_unit=w / cap)
        flows = out.flows
        stage_names = list(cpsat_stages(order)) if weights is None else ["weighted"]
        vals = _values(instance, ic, flows)
        if weights is None:
            objective = tuple(vals[s] for s in stage_names)
        else:
            objective = (sum(weights.get(k, 0.0) * vals[s]
                             for k, s in (("balance", "sum_sq"), ("moves", "moves"), ("racks", "racks"))),)
        bound = objective
        status = Status.OPTIMAL
        extra.update({"engine": "flow", "solves": out.solves, "nodes": out.n_nodes, "arcs": out.n_arcs,
                      "classes": ic.n_classes})
    else:
        stage_names = list(cpsat_stages(order)) if weights is None else ["weighted"]
        tl = params.time_limit if params.time_limit is not None else DEFAULT_TIME_LIMIT
        opts = params.options or {}
        cout = solve_cpsat(ic, [m.capacity for m in instance.members], racks,
                           stages=stage_names if weights is None else STAGE_NAMES, weights=weights,
                           time_limit=tl, seed=params.seed, workers=int(opts.get("workers", 1)),
                           interleave=bool(opts.get("interleave", False)),
                           deterministic=bool(opts.get("deterministic", False)),
                           max_vars=int(opts.get("max_vars", MAX_VARS)))
        flows = cout.flows
        vals = _values(instance, ic, flows)
        objective_l: list[float] = []
        bound_l: list[float] = []
        proven_all = True
        for rep in cout.stages:
            v: float
            if rep.name == "weighted":
                wts = weights or {}
                v = float(sum(wts.get(k, 0.0) * vals[s]
                              for k, s in (("balance", "sum_sq"), ("moves", "moves"), ("racks", "racks"))))
            else:
                v = float(vals[rep.name])
            b = min(rep.bound, v)
            if cout.restricted:
                # CP-SAT's bound is for a restricted model: keep only globally valid bounds
                b = _obvious_bound(rep.name, instance, ic, cout.info)
            proven = rep.proven and cout.exact and not cout.restricted
            if not proven and abs(v - b) <= 1e-9 * max(1.0, abs(v)):
                proven = True
            if proven:
                b = v
            proven_all = proven_all and proven
            objective_l.append(v)
            bound_l.append(b)
        objective = tuple(objective_l)
        bound = tuple(bound_l)
        status = Status.OPTIMAL if proven_all else Status.FEASIBLE
        extra.update({"engine": "cpsat", "exact_scaling": cout.exact, "restricted": cout.restricted,
                      "classes": ic.n_classes, "stage_seconds": [round(r.seconds, 4) for r in cout.stages],
                      "stage_proven": [r.proven for r in cout.stages]})
        if why is not None:
            extra["why_cpsat"] = why
    assignment = expand(ic, instance, flows)
    gaps = [_gap(v, b) for v, b in zip(objective, bound, strict=True)]
    extra.update({"gap": gaps[0] if gaps else 0.0, "stage_gaps": gaps, "stages": stage_names})
    return Result(assignment, status, objective, bound, time.perf_counter() - t0, extra)


def _obvious_bound(stage: str, instance: Instance, ic: ItemClasses, info: dict[str, Any]) -> float:
    """Globally valid lower bounds when CP-SAT ran on a restricted model."""
    caps = np.array([m.capacity for m in instance.members], dtype=np.float64)
    total = float((ic.weight * ic.count).sum())
    if stage == "max_load":
        return float(info.get("lower_bound_max_load", total / caps.sum()))
    if stage == "sum_sq":
        # Cauchy-Schwarz: sum (l_m / c_m)^2 >= (sum l_m)^2 / sum c_m^2
        return total * total / float((caps**2).sum())
    return 0.0


@register("optimal", kind="solver", protocol="consumer",
          summary="Proven optimum: balance, then moves, then rack locality (flow or CP-SAT)",
          source="design.md Objectives; min-cost flow / CP-SAT")
def optimal(instance: Instance, params: Params) -> Result:
    """The optimal assignor (engine chosen automatically)."""
    return solve(instance, params, "auto")


@register("optimal-flow", kind="solver", protocol="consumer",
          summary="Proven optimum by min-cost flow only (unit weights, equal capacities)",
          source="design.md Solvers")
def optimal_flow(instance: Instance, params: Params) -> Result:
    """The optimal assignor, min-cost flow engine forced."""
    return solve(instance, params, "flow")


@register("optimal-cpsat", kind="solver", protocol="consumer",
          summary="Optimum by CP-SAT only (weights, capacities, mixed co-partition units)",
          source="design.md Solvers")
def optimal_cpsat(instance: Instance, params: Params) -> Result:
    """The optimal assignor, CP-SAT engine forced."""
    return solve(instance, params, "cpsat")
