"""CP-SAT model in stages: weighted-sum objectives and the gaps' single stages.

Weights, member capacities and co-partition units of several sizes are all
modelled.  The lexicographic optimum is the exact engine's
(:mod:`solver.consumer.exact`); it borrows this module's stage reports and
greedy hint.

Model (see ``docs/algorithms.md, "The optimal solver"``)
------------------------------------------
For every item class ``c`` (:mod:`solver.consumer.items`) and eligible member ``m``
an integer ``x[c, m] in [0, n_c]`` counts the items of ``c`` on ``m``, with
``sum_m x[c, m] = n_c``.  Then

* ``load_m = sum_c W_c x[c, m]`` (integer item loads, see *Scaling*),
* ``NL_m = load_m * (L / C_m)`` -- the load per capacity, made integral with
  ``L = lcm(C_m)``,
* stage ``max_load``: minimise ``Z >= NL_m``,
* stage ``sum_sq``: minimise ``sum_m NL_m**2`` (``AddMultiplicationEquality``),
* stage ``moves``: minimise ``sum x[c, m] (owned_c - owned_c(m))`` (move costs),
* stage ``racks``: minimise ``sum x[c, m] rack(c, m)``.

Stages run lexicographically: after a stage the model keeps
``stage <= best value found`` (``==`` the optimum when proven) and the next
stage starts from the previous solution as a complete hint.  The first stage
is hinted by a greedy LPT solution.  ``Z`` starts above the obvious bounds
(average load per capacity, largest item on its best member).

Scaling
-------
Weights ``w`` become ``W = floor(w * ws)`` with ``ws = 10**d`` the smallest
power of ten that makes every weight integral (``d <= 6``), lowered if needed
so that the scaled total load stays below ``2**26`` (squares must fit in 64
bits).  Flooring keeps CP-SAT's lower bounds valid lower bounds in the
original units.  When no rounding happens the model is exact; otherwise
(``extra["exact"] = False``) the solution is still valid, its objective is
recomputed in original units, and ``optimal`` is only claimed when the
original-unit objective meets the (valid) bound.  Capacities are made
integral the same way (``d <= 3``); their lcm is capped at ``10**6``.

Determinism: by default CP-SAT runs one worker with ``random_seed =
params.seed`` and a *deterministic* time limit (``max_deterministic_time``),
so the same input, seed and time limit give the same answer on every run.  A
wall-clock cap of 1.25x the stage budget keeps ``--time-limit`` honest on a
slow or busy machine; when that cap (not the deterministic limit) ends a
stage, the result may differ between runs; ``deterministic=True`` (option
``deterministic``) lifts the wall-clock cap to 20x for bit-reproducible runs.
``workers > 1`` runs CP-SAT's parallel portfolio (faster on hard models, not
reproducible) unless ``interleave`` is set.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solver.consumer.items import ItemClasses
from solver.errors import InfeasibleError
from solver.runtime import run_cpsat, set_work_budget
from solver.scaling import decimal_scale

STAGE_NAMES = ("max_load", "sum_sq", "moves", "racks")

#: Largest scaled total load (so that squared loads and their sum fit in 64 bits).
MAX_SCALED_TOTAL = 2**26
#: Largest scaled sum of previous owners' move costs in a CP-SAT model.
MAX_SCALED_MOVES = 2**40
#: Above this many x[c, m] variables, classes keep only a neighbourhood of members.
MAX_VARS = 60_000
#: Per-member load ranges up to this many levels get the linear order encoding of the square.
ORDER_ENCODING_MAX = 400


@dataclass
class StageReport:
    """One lexicographic stage: value and bound in original units, proven or not."""

    name: str
    value: float
    bound: float
    proven: bool
    seconds: float


@dataclass
class CpsatOutcome:
    """Result of the CP-SAT engine."""

    flows: list[tuple[int, int, int]]
    stages: list[StageReport]
    exact: bool
    restricted: bool
    seconds: float
    info: dict[str, object] = field(default_factory=dict)
    #: Under a balance tolerance, the max-load stage's own solution (``flows`` is the one in the window).
    balanced: list[tuple[int, int, int]] | None = None


def _lcm(values: Sequence[int]) -> int:
    out = 1
    for v in values:
        out = out * v // math.gcd(out, v)
    return out


def _int_cap(v: float) -> int:
    """Largest integer ``<= v``, reading a float within rounding error of an integer as that integer."""
    r = round(v)
    return r if abs(v - r) <= 1e-9 * max(1.0, abs(v)) else math.floor(v)


def _tangent_points(hi: int, k: int) -> list[int]:
    """Up to ``k`` integer points spread over ``[1, hi]`` (all of them when ``hi <= k``)."""
    if hi <= k:
        return list(range(1, hi + 1))
    return sorted({max(1, round(hi * i / k)) for i in range(1, k + 1)})


def greedy(ic: ItemClasses, caps: np.ndarray, *, sticky: bool = True) -> np.ndarray:
    """Largest-item-first greedy: returns ``counts[c, m]`` (dense, classes x members).

    Items go, heaviest first, to the eligible member whose load per capacity
    grows least; with ``sticky`` an item stays on its previous owner when that
    is no worse than the least-loaded choice plus the item itself.
    """
    n = ic.n_members
    counts = np.zeros((ic.n_classes, n), dtype=np.int64)
    loads = np.zeros(n, dtype=np.float64)
    order = np.argsort(-ic.weight, kind="stable")
    for c in order.tolist():
        members = ic.eligsets[int(ic.cls_elig[c])]
        w = float(ic.weight[c])
        owners = [o for o, _ in ic.owners[c] if o in set(members.tolist())]
        for _ in range(int(ic.count[c])):
            after = (loads[members] + w) / caps[members]
            j = int(np.argmin(after))
            m = int(members[j])
            if sticky and owners:
                o = owners[0]
                if (loads[o] + w) / caps[o] <= after[j] + w / caps[o]:
                    m = o
            counts[c, m] += 1
            loads[m] += w
    return counts


@dataclass
class _Scaling:
    """Integer loads, capacities and move costs of the older engine (decimal scaling, squares within 64 bits)."""

    wint: np.ndarray
    ratio_i: np.ndarray
    big_l: int
    cint: np.ndarray
    unit: float  # original load per capacity = NL * unit
    mscale: float
    owned_int: np.ndarray
    own_int: list[dict[int, int]]
    ws_f: float
    exact: bool


def _scaling(ic: ItemClasses, caps: np.ndarray) -> _Scaling:
    """Step 1: weights times the smallest power of ten that makes them integral, lowered until the scaled total
    load (times the largest ``L / C_m``) stays below :data:`MAX_SCALED_TOTAL`; capacities by their lcm; move
    costs like the weights.  Flooring keeps bounds valid lower bounds; ``exact`` says whether anything was
    rounded."""
    n, nc = ic.n_members, ic.n_classes
    total_w = float((ic.weight * ic.count).sum())
    ws = decimal_scale(ic.weight) if nc else 1
    cs = decimal_scale(caps, 3) if n else 1
    cint = np.maximum(1, np.round(caps * cs).astype(np.int64))
    big_l = _lcm(sorted(set(cint.tolist()))) if n else 1
    exact_caps = bool(np.allclose(cint / cs, caps)) and big_l <= 10**6
    if big_l > 10**6:
        cint = np.maximum(1, np.round(caps / caps.min() * 100).astype(np.int64))
        big_l = _lcm(sorted(set(cint.tolist())))
        if big_l > 10**6:
            big_l = int(cint.max())
            exact_caps = False
    ratio = np.array([big_l // c if big_l % c == 0 else big_l / c for c in cint.tolist()])
    if not np.all(np.equal(np.mod(ratio, 1), 0)):
        exact_caps = False
    ratio_i = np.ceil(ratio).astype(np.int64)
    max_ratio = int(ratio_i.max()) if n else 1
    while ws > 1 and total_w * ws * max_ratio > MAX_SCALED_TOTAL:
        ws //= 10
    if total_w * ws * max_ratio > MAX_SCALED_TOTAL:
        # weights too large even unscaled: divide (scaling them first would overflow int64)
        div = math.ceil(total_w * max_ratio / MAX_SCALED_TOTAL)
        wint = np.floor(ic.weight / div).astype(np.int64)
        ws_f = 1.0 / div
        exact_w = False
    else:
        wint = np.floor(ic.weight * ws + 1e-9).astype(np.int64)
        exact_w = bool(np.allclose(wint, ic.weight * ws))
        ws_f = float(ws)
    mscale: float = decimal_scale(np.array([c for own in ic.owners for _, c in own] + [1.0]))
    # move costs scaled to integers like the weights: the scaled total stays far inside int64 (huge or
    # many-decimal costs are rounded, and the optimum is then not claimed as proven)
    total_m = float(ic.owned_cost.sum()) if ic.owned_cost.size else 0.0
    while mscale > 1 and total_m * mscale > MAX_SCALED_MOVES:
        mscale //= 10
    if total_m * mscale > MAX_SCALED_MOVES:
        mscale = MAX_SCALED_MOVES / total_m
    owned_int = np.round(ic.owned_cost * mscale).astype(np.int64)
    exact_m = bool(np.allclose(owned_int, ic.owned_cost * mscale, rtol=0, atol=1e-6))
    own_int = [{o: round(oc * mscale) for o, oc in ic.owners[c]} for c in range(nc)]
    return _Scaling(wint, ratio_i, big_l, cint, cs / (ws_f * big_l), mscale, owned_int, own_int, ws_f,
                    exact_w and exact_caps and exact_m)


def _candidates(ic: ItemClasses, hint: np.ndarray, max_vars: int, seed: int) -> tuple[list[np.ndarray], bool]:
    """Step 2: per class, the members the model offers it -- all eligible ones, or above ``max_vars``
    variables a neighbourhood (where the hint puts it, its owners, random others)."""
    nc = ic.n_classes
    n_vars_full = sum(len(ic.eligsets[int(e)]) for e in ic.cls_elig.tolist())
    restricted = n_vars_full > max_vars
    rng = np.random.default_rng(seed)
    cand: list[np.ndarray] = []
    per_class = max(4, max_vars // max(1, nc)) if restricted else 0
    for c in range(nc):
        members = ic.eligsets[int(ic.cls_elig[c])]
        if not restricted or members.size <= per_class:
            cand.append(members)
            continue
        keep = set(np.nonzero(hint[c])[0].tolist()) | {o for o, _ in ic.owners[c] if o in set(members.tolist())}
        rest = np.setdiff1d(members, np.fromiter(keep, dtype=np.int64, count=len(keep)))
        extra = rng.choice(rest, size=min(rest.size, max(0, per_class - len(keep))), replace=False)
        cand.append(np.sort(np.concatenate([np.fromiter(keep, dtype=np.int64, count=len(keep)), extra])))
    return cand, restricted


class _Model:
    """Step 3: the CP-SAT model -- counts, loads, stage expressions, the sum of squares on demand."""

    def __init__(self, ic: ItemClasses, sc: _Scaling, cand: list[np.ndarray], racks: list[str | None],
                 tangents: int) -> None:
        from ortools.sat.python import cp_model  # imported here: it pulls in pandas, which the flow never needs

        n, nc = ic.n_members, ic.n_classes
        self.ic, self.sc, self.racks, self.tangents = ic, sc, racks, tangents
        self.model = model = cp_model.CpModel()
        self.xs: list[list[tuple[int, Any]]] = []
        load_terms: list[list[tuple[int, Any]]] = [[] for _ in range(n)]
        load_cls: list[list[int]] = [[] for _ in range(n)]
        mv_terms: list[tuple[int, Any]] = []
        rk_terms: list[tuple[int, Any]] = []
        for c in range(nc):
            row = []
            cnt = int(ic.count[c])
            for m in cand[c].tolist():
                v = model.new_int_var(0, cnt, f"x{c}_{m}") if cnt > 1 else model.new_bool_var(f"x{c}_{m}")
                row.append((m, v))
                load_terms[m].append((int(sc.wint[c]), v))
                load_cls[m].append(c)
                mvc = int(sc.owned_int[c]) - sc.own_int[c].get(m, 0)
                if mvc:
                    mv_terms.append((mvc, v))
                rkc = ic.rack_cost(c, racks[m])
                if rkc:
                    rk_terms.append((rkc, v))
            model.add(sum(v for _, v in row) == cnt)
            self.xs.append(row)
        ratio_i = sc.ratio_i
        max_ratio = int(ratio_i.max()) if n else 1
        self.max_nl = max_nl = int(sum(int(sc.wint[c]) * int(ic.count[c]) for c in range(nc))) * max_ratio
        self.nl = []
        for m in range(n):
            v = model.new_int_var(0, max_nl, f"nl{m}")
            model.add(v == sum(w * x for w, x in load_terms[m]) * int(ratio_i[m]))
            self.nl.append(v)
        # obvious bounds on the max
        lb_avg = math.ceil(int((sc.wint * ic.count).sum()) * sc.big_l / int(sc.cint.sum())) if n else 0
        lb_item = 0
        for c in range(nc):
            if ic.count[c] > 0:
                lb_item = max(lb_item, int(sc.wint[c]) * int(min(ratio_i[cand[c]])))
        self.lb = max(lb_avg, lb_item) if nc else 0
        self.z = model.new_int_var(self.lb, max_nl, "z")
        for v in self.nl:
            model.add(self.z >= v)
        # per-member largest possible normalised load
        self.nl_hi = [min(max_nl, sum(w * int(ic.count[c]) for c, (w, _) in zip(load_cls[m], load_terms[m],
                                                                                 strict=True)) * int(ratio_i[m]))
                      for m in range(n)]
        self.z_ub = max_nl
        self.mv_terms = mv_terms
        self.exprs: dict[str, Any] = {
            "max_load": self.z,
            "moves": sum(k * v for k, v in mv_terms) if mv_terms else 0,
            "racks": sum(k * v for k, v in rk_terms) if rk_terms else 0,
        }
        self.to_orig = {"max_load": sc.unit, "sum_sq": sc.unit * sc.unit, "moves": 1.0 / sc.mscale, "racks": 1.0}

    def sum_sq_expr(self) -> Any:
        """Sum of squared normalised loads, built once the max-load bound is known.

        Small ranges use the order encoding ``NL = sum_k b_k``, ``sum_k (2k - 1) b_k``
        (linear, with the flow's integral LP relaxation); large ranges an exact
        product plus tangent cuts ``sq >= 2 a NL - a**2``.
        """
        model, nl = self.model, self.nl
        terms = []
        for m in range(self.ic.n_members):
            hi = min(self.nl_hi[m], self.z_ub)
            if hi <= 0:
                continue
            step = int(self.sc.ratio_i[m])
            levels = hi // step
            if levels <= ORDER_ENCODING_MAX:
                bs = [model.new_bool_var(f"b{m}_{k}") for k in range(1, levels + 1)]
                for a, b in itertools.pairwise(bs):
                    model.add_implication(b, a)
                model.add(nl[m] == step * sum(bs))
                # (step k)^2 - (step (k-1))^2 = step^2 (2k - 1)
                terms.append(sum(step * step * (2 * k - 1) * b for k, b in enumerate(bs, start=1)))
            else:
                sq = model.new_int_var(0, hi * hi, f"sq{m}")
                model.add_multiplication_equality(sq, [nl[m], nl[m]])
                for pt in _tangent_points(hi, self.tangents):
                    model.add(sq >= 2 * pt * nl[m] - pt * pt)
                terms.append(sq)
        return sum(terms) if terms else 0

    def set_hint(self, sol: dict[tuple[int, int], int]) -> None:
        self.model.clear_hints()
        for c, row in enumerate(self.xs):
            for m, v in row:
                self.model.add_hint(v, sol.get((c, m), 0))

    def value(self, name: str, sol: dict[tuple[int, int], int]) -> int:
        """A stage's scaled value for a solution given as counts (used when CP-SAT found none)."""
        ic, sc = self.ic, self.sc
        load = np.zeros(ic.n_members, dtype=np.int64)
        mv = rk = 0
        for (c, m), k in sol.items():
            load[m] += k * int(sc.wint[c])
            mv += k * (int(sc.owned_int[c]) - sc.own_int[c].get(m, 0))
            rk += k * ic.rack_cost(c, self.racks[m])
        norm = load * sc.ratio_i
        return {"max_load": int(norm.max(initial=0)), "sum_sq": int((norm.astype(object) ** 2).sum()),
                "moves": mv, "racks": rk}[name]


def solve_cpsat(
    ic: ItemClasses,
    capacities: Sequence[float] | np.ndarray,
    member_racks: Sequence[str | None],
    *,
    stages: Sequence[str] = STAGE_NAMES,
    weights: dict[str, float] | None = None,
    time_limit: float = 30.0,
    seed: int = 0,
    workers: int = 1,
    interleave: bool = False,
    deterministic: bool = False,
    max_vars: int = MAX_VARS,
    load_cap: float | None = None,
    moves_cap: float | None = None,
    tangents: int = 64,
    sum_sq_cap: float | None = None,
) -> CpsatOutcome:
    """Solve lexicographic stages with CP-SAT.

    Composed of steps: the scaling (:func:`_scaling`), the candidate members
    (:func:`_candidates`), the model (:class:`_Model`), then the stages in
    order, each minimised from the previous solution as a hint and then capped.

    Parameters
    ----------
    ic
        Item classes.
    capacities
        Member capacities (``> 0``).
    member_racks
        Member racks (``None`` if unknown).
    stages
        Stage names from :data:`STAGE_NAMES`, in priority order.
    weights
        Weighted mode instead: one stage minimising
        ``balance * sum_sq + moves * moved + racks * cross_rack``.
    time_limit
        Total (deterministic) seconds over all stages.
    seed
        CP-SAT random seed.
    workers
        CP-SAT workers.  ``1`` (default) is deterministic; more run CP-SAT's
        parallel portfolio, which is not bit-reproducible unless ``interleave``.
    interleave
        Deterministic interleaved portfolio of ``workers`` subsolvers in one thread.
    deterministic
        Let only the deterministic time limit end a stage (the wall-clock cap
        becomes 20x): bit-reproducible results at the price of the time limit.
    max_vars
        Neighbourhood restriction threshold (see module docstring).
    load_cap
        Optional hard upper bound on every member's load per capacity (original
        units); used by the gap metrics.
    moves_cap
        Optional hard upper bound on the moved cost (the frontier's budget).
    sum_sq_cap
        Optional hard upper bound on the sum of squared loads per capacity
        (original units); with ``load_cap``, "at least as balanced" in the gap
        metrics.

    Returns
    -------
    CpsatOutcome

    Raises
    ------
    InfeasibleError
        When the model is infeasible or no solution is found in the limit.
    """
    from ortools.sat.python import cp_model

    t_start = time.perf_counter()
    caps = np.asarray(capacities, dtype=np.float64)
    racks = list(member_racks)
    sc = _scaling(ic, caps)
    hint = greedy(ic, caps)
    cand, restricted = _candidates(ic, hint, max_vars, seed)
    mdl = _Model(ic, sc, cand, racks, tangents)
    model = mdl.model
    if load_cap is not None:
        model.add(mdl.z <= math.floor(load_cap / sc.unit + 1e-9))
    if moves_cap is not None and mdl.mv_terms:
        model.add(sum(k * v for k, v in mdl.mv_terms) <= math.floor(moves_cap * sc.mscale + 1e-9))
    if sum_sq_cap is not None:
        model.add(mdl.sum_sq_expr() <= _int_cap(sum_sq_cap / (sc.unit * sc.unit)))
    current = {(c, m): int(hint[c, m]) for c in range(ic.n_classes) for m in cand[c].tolist() if hint[c, m]}
    mdl.set_hint(current)  # greedy counts outside the candidate set cannot happen (greedy members are kept)

    if weights is not None:
        coef = {"sum_sq": weights.get("balance", 0.0), "moves": weights.get("moves", 0.0),
                "racks": weights.get("racks", 0.0)}
        units = np.array([coef[k] * mdl.to_orig[k] for k in coef])
        nz = units[units > 0]
        norm = units / nz.min() if nz.size else units
        wscale = decimal_scale(norm, 3)
        ints = [round(float(u) * wscale) for u in norm]
        mdl.exprs["sum_sq"] = mdl.sum_sq_expr() if weights.get("balance", 0) > 0 else 0
        plan: list[tuple[str, Any]] = [("weighted", sum(i * mdl.exprs[k] for i, k in zip(ints, coef, strict=True)))]
    else:
        plan = [(s, None) for s in stages]

    reports: list[StageReport] = []
    budget = max(0.05, float(time_limit))
    spent = 0.0
    for i, (name, expr) in enumerate(plan):
        left = len(plan) - i
        # the first stage (the primary criterion) gets half the time, the rest share the remainder
        share = 0.5 if i == 0 and left > 1 else 1.0 / left
        stage_budget = max(0.05, (budget - spent) * share)
        if expr is None:
            expr = mdl.sum_sq_expr() if name == "sum_sq" else mdl.exprs[name]
        if isinstance(expr, int):
            reports.append(StageReport(name, 0.0, 0.0, True, 0.0))
            continue
        model.minimize(expr)
        solver = cp_model.CpSolver()
        # one worker is deterministic; more run a parallel portfolio (faster, not reproducible).  The wall
        # cap keeps --time-limit on a slow or busy machine: 1.25x in wall mode, a safety net otherwise
        set_work_budget(solver, stage_budget, wall_cap=stage_budget * (20.0 if deterministic else 1.25) + 0.2,
                        seed=seed, workers=workers, interleave=interleave)
        t0 = time.perf_counter()
        st = run_cpsat(solver, model)
        dt = time.perf_counter() - t0
        spent += min(dt, stage_budget)
        if st == cp_model.INFEASIBLE:
            raise InfeasibleError("no assignment satisfies the constraints (CP-SAT proved it infeasible)")
        f = mdl.to_orig.get(name, 1.0)
        if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            # no solution in the limit: keep the previous complete solution (greedy for the first
            # stage) when it satisfies the hard constraints, with only the obvious bound
            if load_cap is not None or moves_cap is not None or sum_sq_cap is not None or name == "weighted":
                raise InfeasibleError(
                    f"CP-SAT found no solution within the time limit (status {solver.status_name(st)})")
            val = mdl.value(name, current)
            bnd = mdl.lb if name == "max_load" else 0
            model.add(expr <= val)
            if name == "max_load":
                mdl.z_ub = val
            reports.append(StageReport(name, val * f, bnd * f, False, dt))
            continue
        val = round(solver.objective_value)
        bnd = math.ceil(solver.best_objective_bound - 1e-9)
        proven = st == cp_model.OPTIMAL
        current = {(c, m): int(solver.value(v)) for c, row in enumerate(mdl.xs) for m, v in row if solver.value(v)}
        mdl.set_hint(current)
        if proven:
            model.add(expr == val)
        else:
            model.add(expr <= val)
        if name == "max_load":
            mdl.z_ub = val
        reports.append(StageReport(name, val * f, bnd * f, proven, dt))

    return CpsatOutcome(
        flows=[(c, m, k) for (c, m), k in sorted(current.items())],
        stages=reports,
        exact=sc.exact,
        restricted=restricted,
        seconds=time.perf_counter() - t_start,
        info={"weight_scale": sc.ws_f, "capacity_lcm": sc.big_l, "variables": sum(len(r) for r in mdl.xs),
              "lower_bound_max_load": mdl.lb * sc.unit},
    )
