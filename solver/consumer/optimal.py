"""The optimal assignor: picks the exact engine and reports a certified result.

``solve(instance, params)`` uses the min-cost flow engine
(:mod:`solver.consumer.flow`) when every item has the same load and all
members the same capacity (unit weights, co-partition units all of one
size), and the exact class-count engine (:mod:`solver.consumer.exact`,
CP-SAT; HiGHS / SCIP on request) otherwise.  Registered as ``optimal``;
``optimal-flow`` and ``optimal-cpsat`` force one engine.

Objective (``params.objective`` or ``--objective``)
---------------------------------------------------
* A lexicographic order of criteria.  Default for unit items:
  ``balance, moves, racks``; for instances whose items differ in load
  (weights, heterogeneous capacities, co-partition units of several sizes):
  ``max_load, moves, sum_sq, racks`` -- the bottleneck member first, then the
  moved state, then evenness among the other members.  ``balance`` is the
  most balanced load vector (for the flow, minimal sum of squared loads,
  which also has the least maximum; for the exact engine the two stages
  ``max_load, sum_sq``).  ``moves`` is the moved cost (``move_costs``,
  default 1 per topic-partition, counted per topic-partition as the
  scorer's ``moved_cost``), ``racks`` the cross-rack topic-partitions,
  ``topic_balance`` the topic-partitions above their topic's even share per
  member (:func:`solver.consumer.exact.engine.topic_balance_terms`).
  Criteria left out are not optimised.
* A weighted sum, ``"weighted:balance=1,moves=0.1"``: minimise
  ``1 * sum_sq + 0.1 * moved_cost`` (+ ``racks=w`` for cross-rack).

``params.balance_tolerance`` (``--balance-tolerance EPS``): the max load is
first minimised, then kept at most ``(1 + EPS)`` times that optimum while
the remaining stages run with ``moves`` first: the fewest moves among
assignments within the tolerance.

Result
------
``objective`` and ``bound`` hold one value per stage, in original units,
named by ``extra["stages"]``.  ``extra`` also has ``engine``, ``gap``
(the largest relative gap of any stage: 0 exactly when every stage is proven), ``stage_gaps``, ``stage_proven`` and
engine facts.  ``status``: ``optimal`` when every stage is proven, else
``feasible``.  Infeasible or unsupported inputs raise
:class:`~solver.errors.InfeasibleError` (exit code 3).

Time: ``params.time_limit`` (default 30 s) bounds the whole solve, model
building included, within the slack documented in ``docs/algorithms.md``.
Option ``deterministic`` (set by the CLI when ``--seed`` is given): stage
budgets in CP-SAT deterministic time only, so the same seed gives the same
assignment whatever the machine's load.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from solver.consumer.exact import solve_exact
from solver.consumer.flow import CRITERIA, solve_flow
from solver.consumer.items import ItemClasses, build_classes, expand
from solver.consumer.weighted_cpsat import MAX_VARS, STAGE_NAMES, solve_cpsat
from solver.errors import InfeasibleError, KassignError, OptionError
from solver.model import Assignment, Instance
from solver.model.semantics import GroupView
from solver.options import OBJECTIVE_WEIGHT
from solver.registry import register
from solver.result import Params, Result, Status

#: Default order when every item has the same load and capacities are equal.
UNIT_ORDER = ("balance", "moves", "racks")
#: Default order when items differ in load (weights, capacities, mixed co-partition units).
WEIGHTED_ORDER = ("max_load", "moves", "sum_sq", "racks")
#: Every stage name ``--objective`` accepts.
STAGE_CHOICES = (*CRITERIA, "max_load", "sum_sq", "topic_balance")
#: Backends of the exact engine (``-O backend=...``).
BACKENDS = ("cpsat", "highs", "scip")


class ObjectiveError(KassignError):
    """A malformed ``--objective`` (a usage error, exit code 2)."""

    exit_code = 2

#: Relative difference between a stage's value and bound read as float rounding (both are exact integers
#: times a unit in the engines; sums of squares near 1e12 still differ by whole units above this).
FLOAT_SLACK = 1e-12
#: The balance tolerance used where kassign recommends an answer to deploy on weighted groups (compare's
#: deployable row, the live assignor, plan): the fewest moves within 1% of the best max load found.
DEFAULT_BALANCE_TOLERANCE = 0.01
#: Default time limit (seconds) when ``params.time_limit`` is None.
DEFAULT_TIME_LIMIT = 30.0


def parse_objective(objective: Sequence[str] | str | None) -> tuple[tuple[str, ...] | None, dict[str, float] | None]:
    """Parse ``params.objective`` into (order, weights); ``(None, None)`` is the default order.

    Examples
    --------
    >>> parse_objective(None)
    (None, None)
    >>> parse_objective(("moves", "balance"))
    (('moves', 'balance'), None)
    >>> parse_objective(("weighted:balance=1", "moves=0.1"))
    (('balance', 'moves', 'racks'), {'balance': 1.0, 'moves': 0.1})
    """
    if objective is None or len(objective) == 0:
        return None, None
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
            try:
                weights[key] = OBJECTIVE_WEIGHT.check(w)  # finite, 0..1e6 (solver.options)
            except OptionError as e:
                raise ObjectiveError(f"{e} (in {item.strip()!r})") from None
        if not weights:
            raise ObjectiveError("weighted objective without terms")
        return UNIT_ORDER, weights
    order = tuple(p.strip() for p in text.split(",") if p.strip())
    bad = [o for o in order if o not in STAGE_CHOICES]
    if bad or len(set(order)) != len(order):
        raise ObjectiveError(f"bad objective {text!r}: stages must be distinct names from {sorted(STAGE_CHOICES)}")
    return order, None


def cpsat_stages(order: Sequence[str]) -> tuple[str, ...]:
    """Expand ``balance`` into the exact engine's ``max_load, sum_sq`` stages."""
    out: list[str] = []
    for o in order:
        for s in (("max_load", "sum_sq") if o == "balance" else (o,)):
            if s not in out:
                out.append(s)
    return tuple(out)


def differs_in_load(instance: Instance, ic: ItemClasses) -> str | None:
    """Why the items of ``instance`` differ in load per capacity (``None``: they do not)."""
    caps = {m.capacity for m in instance.members}
    if len(caps) > 1:
        return "members have different capacities"
    w = set(ic.weight[ic.count > 0].tolist())
    if len(w) > 1:
        return "items have different loads (weights or co-partition units of several sizes)"
    return None


def items_differ(instance: Instance) -> bool:
    """Whether the instance's items differ in load per capacity (a *weighted* group: max load first).

    >>> from solver.io import parse_instance
    >>> items_differ(parse_instance({"format": "kassign/v1", "topics": {"T": {"partitions": 2, "weights": [1, 3]}},
    ...                              "members": [{"id": "a", "topics": ["T"]}]}))
    True
    """
    ic = build_classes(instance, GroupView(instance))
    return ic.total_items > 0 and differs_in_load(instance, ic) is not None


def default_order(instance: Instance, ic: ItemClasses) -> tuple[str, ...]:
    """The default stage order: :data:`WEIGHTED_ORDER` when items differ in load, else :data:`UNIT_ORDER`."""
    return WEIGHTED_ORDER if differs_in_load(instance, ic) else UNIT_ORDER


def flow_fits(instance: Instance, ic: ItemClasses, order: Sequence[str]) -> str | None:
    """Why the flow engine cannot take this instance (``None`` if it can)."""
    why = differs_in_load(instance, ic)
    if why is not None:
        return why
    if any(o in ("max_load", "sum_sq", "topic_balance") for o in order):
        return "max_load / sum_sq / topic_balance stages are exact-engine stages"
    return None


def tolerance_stages(stages: Sequence[str]) -> tuple[str, ...]:
    """Stage order under a balance tolerance: ``max_load``, then ``moves``, then the rest.

    Examples
    --------
    >>> tolerance_stages(("max_load", "sum_sq", "moves", "racks"))
    ('max_load', 'moves', 'sum_sq', 'racks')
    """
    if not stages or stages[0] != "max_load":
        raise ObjectiveError("--balance-tolerance needs balance or max_load as the first objective stage")
    rest = [s for s in stages[1:] if s != "moves"]
    return ("max_load", "moves", *rest)


def _loads(instance: Instance, ic: ItemClasses, flows: list[tuple[int, int, int]]) -> np.ndarray:
    load = np.zeros(len(instance.members), dtype=np.float64)
    for c, m, k in flows:
        load[m] += k * float(ic.weight[c])
    caps = np.array([m.capacity for m in instance.members], dtype=np.float64)
    return load / caps if caps.size else load


def _values(instance: Instance, ic: ItemClasses, flows: list[tuple[int, int, int]]) -> dict[str, Any]:
    """Every stage value of a flow decomposition, in original units."""
    loads = _loads(instance, ic, flows)
    racks = [m.rack for m in instance.members]
    moved = 0.0
    cross = 0
    owner_cost = [dict(o) for o in ic.owners]
    for c, m, k in flows:
        moved += k * (float(ic.owned_cost[c]) - owner_cost[c].get(m, 0.0))
        cross += k * ic.rack_cost(c, racks[m])
    out: dict[str, Any] = {
        "max_load": float(loads.max()) if loads.size else 0.0,
        "sum_sq": float((loads**2).sum()),
        "moves": moved,
        "racks": float(cross),
        "loads": loads,
    }
    if ic.cls_topic is not None:
        from solver.consumer.exact.engine import topic_balance_value

        out["topic_balance"] = float(topic_balance_value(ic, flows))
    return out


def _empty(instance: Instance, t0: float) -> Result:
    owners = {t: np.full(tp.partitions, -1, dtype=np.int64) for t, tp in instance.topics.items()}
    a = Assignment.from_owners(instance.member_ids, owners)
    stages = list(STAGE_NAMES)
    return Result(a, Status.OPTIMAL, (0.0,) * 4, (0.0,) * 4, time.perf_counter() - t0,
                  {"engine": "none", "gap": 0.0, "stages": stages, "stage_gaps": [0.0] * 4,
                   "stage_proven": [True] * 4})


def _gap(v: float, b: float) -> float:
    if v == b:
        return 0.0
    return abs(v - b) / max(abs(v), 1e-12)


def _tolerance(params: Params) -> float | None:
    # in range already: Params checks it against solver.options.BALANCE_TOLERANCE
    return None if params.balance_tolerance is None else float(params.balance_tolerance)


def solve(instance: Instance, params: Params, engine: str = "auto") -> Result:
    """Optimal assignment of a consumer-protocol instance.

    Parameters
    ----------
    instance
        The group state.
    params
        ``objective`` (see module docstring), ``balance_tolerance``,
        ``time_limit`` (seconds for the whole solve; default 30), ``seed``,
        ``options`` (``deterministic``: reproducible stage budgets;
        ``backend``: ``cpsat`` (default), ``highs`` or ``scip`` for the
        linear stages; ``workers``: CP-SAT workers when not deterministic;
        ``max_vars``: neighbourhood threshold).
    engine
        ``"auto"``, ``"flow"`` or ``"cpsat"`` (the exact class-count engine).

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
    order_given, weights = parse_objective(params.objective)
    eps = _tolerance(params)
    opts = params.options or {}
    backend = str(opts.get("backend", "cpsat"))
    if backend not in BACKENDS:
        raise ObjectiveError(f"option backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    tl = params.time_limit if params.time_limit is not None else DEFAULT_TIME_LIMIT
    deadline = t0 + tl
    deterministic = bool(opts.get("deterministic", True))
    view = GroupView(instance)
    per_topic = order_given is not None and "topic_balance" in order_given
    ic = build_classes(instance, view, per_topic=per_topic)
    if ic.total_items == 0 or not instance.members:
        return _empty(instance, t0)
    order = order_given if order_given is not None else default_order(instance, ic)
    if eps is not None and weights is not None:
        raise ObjectiveError("--balance-tolerance does not combine with a weighted objective")
    why = flow_fits(instance, ic, order)
    use = engine
    if engine == "auto":
        use = "flow" if why is None else "cpsat"
    elif engine == "flow" and why is not None:
        raise InfeasibleError(f"unsupported by the flow engine: {why}")
    racks = [m.rack for m in instance.members]
    extra: dict[str, Any] = {}
    stage_names = list(cpsat_stages(order)) if weights is None else ["weighted"]
    if eps is not None:
        stage_names = list(tolerance_stages(stage_names))
    if use == "flow":
        objective, bound, flows, status = _solve_flow(instance, ic, racks, order, weights, eps, stage_names, extra)
    elif weights is not None:
        objective, bound, flows, status = _solve_weighted_sum(instance, ic, racks, weights, params, tl, extra)
    else:
        cout = solve_exact(ic, [m.capacity for m in instance.members], racks, stages=stage_names,
                           time_limit=tl, deadline=deadline, seed=params.seed, deterministic=deterministic,
                           workers=int(opts.get("workers", 1)), backend=backend, tolerance=eps,
                           max_vars=int(opts.get("max_vars", MAX_VARS)))
        flows = cout.flows
        vals = _values(instance, ic, flows)
        objective_l: list[float] = []
        bound_l: list[float] = []
        proven_l: list[bool] = []
        for rep in cout.stages:
            v = float(vals[rep.name])
            b = min(rep.bound, v)
            proven = rep.proven or abs(v - b) <= FLOAT_SLACK * max(1.0, abs(v))
            if proven:
                b = v
            proven_l.append(proven)
            objective_l.append(v)
            bound_l.append(b)
        objective, bound = tuple(objective_l), tuple(bound_l)
        status = Status.OPTIMAL if all(proven_l) else Status.FEASIBLE
        extra.update({"engine": "exact", "backend": backend, "exact_scaling": cout.exact,
                      "restricted": cout.restricted, "classes": ic.n_classes,
                      "stage_seconds": [round(r.seconds, 4) for r in cout.stages], "stage_proven": proven_l,
                      # seconds from the call until each stage was settled (model building included)
                      "stage_done_s": [round(x - t0, 4) for x in cout.info.get("stage_done_at", [])],  # type: ignore[attr-defined]
                      "mip_fallbacks": cout.info.get("mip_fallbacks", 0)})
        if eps is not None:
            extra["balance_tolerance"] = {"eps": eps, "optimal_max_load": cout.stages[0].value,
                                          "optimal_max_load_proven": cout.stages[0].proven}
        for key in ("notes", "lower_bound_max_load"):
            if key in cout.info:
                extra[key] = cout.info[key]
        if why is not None:
            extra["why_exact"] = why
    assignment = expand(ic, instance, flows)
    gaps = [_gap(v, b) for v, b in zip(objective, bound, strict=True)]
    extra.setdefault("stage_proven", [g == 0.0 for g in gaps])
    # the worst stage's gap: 0 only when every stage is proven (the first stage alone said too little)
    extra.update({"gap": max(gaps, default=0.0), "stage_gaps": gaps, "stages": stage_names})
    return Result(assignment, status, objective, bound, time.perf_counter() - t0, extra)


def _solve_flow(instance: Instance, ic: ItemClasses, racks: list[str | None], order: Sequence[str],
                weights: dict[str, float] | None, eps: float | None, stage_names: list[str],
                extra: dict[str, Any],
                ) -> tuple[tuple[float, ...], tuple[float, ...], list[tuple[int, int, int]], Status]:
    """The min-cost flow path (exact, always proven)."""
    w = float(ic.weight[ic.count > 0][0])
    cap = instance.members[0].capacity
    crit = [o for o in order if o in CRITERIA]
    solves = 0
    if eps is not None:
        # the most balanced counts first, then each member may hold (1 + eps) x the optimal max
        first = solve_flow(ic, racks, order=("balance",), load_unit=w / cap)
        top = int(first.counts.max(initial=0))
        cap_items = int(np.floor(top * (1 + eps) + 1e-9))
        item_caps = np.full(ic.n_members, cap_items, dtype=np.int64)
        rest = ["moves", *[o for o in crit if o != "moves"]]
        out = solve_flow(ic, racks, order=rest, caps=item_caps, load_unit=w / cap)
        solves = first.solves + out.solves
        extra["balance_tolerance"] = {"eps": eps, "optimal_max_load": top * w / cap,
                                      "optimal_max_load_proven": True}
    else:
        out = solve_flow(ic, racks, order=crit, weights=weights, load_unit=w / cap)
        solves = out.solves
    flows = out.flows
    vals = _values(instance, ic, flows)
    if weights is None:
        objective = tuple(vals[s] for s in stage_names)
    else:
        objective = (sum(weights.get(k, 0.0) * vals[s]
                         for k, s in (("balance", "sum_sq"), ("moves", "moves"), ("racks", "racks"))),)
    extra.update({"engine": "flow", "solves": solves, "nodes": out.n_nodes, "arcs": out.n_arcs,
                  "classes": ic.n_classes})
    return objective, objective, flows, Status.OPTIMAL


def _solve_weighted_sum(instance: Instance, ic: ItemClasses, racks: list[str | None], weights: dict[str, float],
                        params: Params, tl: float, extra: dict[str, Any],
                        ) -> tuple[tuple[float, ...], tuple[float, ...], list[tuple[int, int, int]], Status]:
    """A weighted sum of criteria in one CP-SAT stage (:func:`solver.consumer.weighted_cpsat.solve_cpsat`)."""
    opts = params.options or {}
    cout = solve_cpsat(ic, [m.capacity for m in instance.members], racks, stages=STAGE_NAMES, weights=weights,
                       time_limit=tl, seed=params.seed, workers=int(opts.get("workers", 1)),
                       deterministic=bool(opts.get("deterministic", True)),
                       max_vars=int(opts.get("max_vars", MAX_VARS)))
    vals = _values(instance, ic, cout.flows)
    rep = cout.stages[0]
    v = float(sum(weights.get(k, 0.0) * vals[s]
                  for k, s in (("balance", "sum_sq"), ("moves", "moves"), ("racks", "racks"))))
    b = min(rep.bound, v)
    proven = rep.proven and cout.exact and not cout.restricted
    if proven or abs(v - b) <= FLOAT_SLACK * max(1.0, abs(v)):
        proven, b = True, v
    extra.update({"engine": "cpsat", "exact_scaling": cout.exact, "restricted": cout.restricted,
                  "classes": ic.n_classes, "stage_proven": [proven]})
    return (v,), (b,), cout.flows, Status.OPTIMAL if proven else Status.FEASIBLE


@register("optimal", kind="solver", protocol="consumer",
          summary="Proven optimum: balance (max load first for weighted items), then moves, then racks",
          source="docs/algorithms.md (objectives, exact models); min-cost flow / CP-SAT")
def optimal(instance: Instance, params: Params) -> Result:
    """The optimal assignor (engine chosen automatically)."""
    return solve(instance, params, "auto")


@register("optimal-flow", kind="solver", protocol="consumer",
          summary="Proven optimum by min-cost flow only (unit weights, equal capacities)",
          source="docs/algorithms.md (exact models)")
def optimal_flow(instance: Instance, params: Params) -> Result:
    """The optimal assignor, min-cost flow engine forced."""
    return solve(instance, params, "flow")


@register("optimal-cpsat", kind="solver", protocol="consumer",
          summary="Optimum by the exact class-count engine only (weights, capacities, mixed co-partition units)",
          source="docs/algorithms.md (exact models)")
def optimal_cpsat(instance: Instance, params: Params) -> Result:
    """The optimal assignor, CP-SAT engine forced."""
    return solve(instance, params, "cpsat")
