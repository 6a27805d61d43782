"""The exact engine for items of different loads: lexicographic stages over class counts.

Model (``docs/algorithms.md``, "Weighted instances")
----------------------------------------------------
Items are aggregated into classes (:mod:`solver.consumer.items`); for every
class ``c`` and eligible member ``m`` an integer ``x[c, m]`` counts the items
of ``c`` on ``m``, ``sum_m x[c, m] = n_c``.  Loads, capacities and move costs
are exact integers (:mod:`.scaling`): ``NL_m = r_m * sum_c W_c x[c, m]`` is
the load per capacity times ``P / unit``.  Stages:

* ``max_load``: ``Z >= NL_m``; ``Z`` starts at the LP bound rounded up
  (:func:`.bounds.max_load_bound`), a valid bound because every ``NL_m`` is
  an integer;
* ``moves``: ``sum x[c, m] (owned_c - owned_c(m))``, the scorer's
  ``moved_cost`` (per topic-partition);
* ``sum_sq``: ``sum_m NL_m**2`` (order encoding for short ranges, else an
  exact product with tangent cuts);
* ``racks``: cross-rack topic-partitions;
* ``topic_balance``: topic-partitions above the even share of their topic
  (see :func:`topic_balance_terms`).

Each stage's objective is a variable whose domain is narrowed once the stage
is done (to its value when proven, else to ``<=`` the value found), and the
next stage starts from the previous solution as a complete hint.

``max_load`` followed by a linear stage runs as one *probe*: the next stage
is minimised with ``Z`` fixed to its lower bound.  A solution proves both the
bound (it is reached) and the next stage; a proof of infeasibility raises the
bound by one unit and the ordinary stage follows.  On realistic rebalances the
bound is nearly always reached, which makes the lexicographic optimum one
short solve.

Backends: CP-SAT by default (measured faster on the stages of these models,
``docs/benchmarks.md``); HiGHS or SCIP through ``pywraplp`` for the linear
stages with ``backend="highs"`` / ``"scip"`` (:mod:`.mip`).

Time and determinism: ``deadline`` is a ``time.perf_counter()`` instant that
bounds the whole solve, model building included.  With ``deterministic``
every stage gets a fixed share of ``time_limit`` in CP-SAT's *deterministic*
time and one worker, so the same seed gives the same assignment on every run
(the wall clock may then overrun by the documented slack); otherwise the
stages share what is left of the wall-clock budget.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from solver.consumer.cpsat import CpsatOutcome, StageReport, greedy
from solver.consumer.exact.bounds import max_load_bound, moves_bound, sum_sq_bound
from solver.consumer.exact.data import Scaled, local_data, scale
from solver.consumer.exact.large import TAKES as LARGE_TAKES
from solver.consumer.exact.large import solve_large
from solver.consumer.exact.primal.local import MAX_ITEMS, improve, level
from solver.consumer.items import ItemClasses
from solver.errors import InfeasibleError

STAGES = ("max_load", "sum_sq", "moves", "racks", "topic_balance")
#: Stages with a linear objective (the probe and the MIP backends take these).
LINEAR = ("max_load", "moves", "racks", "topic_balance")
#: Stages the MIP backends take.
MIP_STAGES = ("max_load", "moves", "racks")
#: CP-SAT's share of a linear stage's budget before HiGHS takes what it left open (auto backend).
CPSAT_SHARE = 0.4
#: Largest model handed to the HiGHS fallback (HiGHS can overrun its time limit by far on larger ones).
MIP_MAX_VARS = 2_000
#: Largest scaled load per capacity whose square enters the sum_sq stage exactly.
MAX_SQUARED = 2**28
#: Above this many x[c, m] variables, classes keep only a neighbourhood of members.
MAX_VARS = 60_000
#: Member load ranges up to this many levels get the order encoding of the square.
ORDER_ENCODING_MAX = 600
#: Share of the time limit the local search may take before a restricted model (it usually ends sooner).
LOCAL_SHARE = 0.4
#: Local-search steps per second of the time limit in deterministic mode (about a second's work on 2 cores).
LOCAL_STEPS_PER_SECOND = 20_000
#: Share of the time limit the primal stages take before CP-SAT, on models small enough for one CP-SAT model.
PRIMAL_SHARE = 0.3
#: Share of the sum_sq stage's budget its levelling local search may take.
LEVEL_SHARE = 0.2


def topic_balance_terms(ic: ItemClasses) -> list[tuple[list[int], int, list[int]]]:
    """Per topic: (its classes, even share, members that may hold it).

    ``topic_balance`` counts, over topics ``t`` and members ``m``, the
    topic-partitions of ``t`` on ``m`` above ``ceil(P_t / S_t)``, where
    ``P_t`` is the number of ``t``'s items and ``S_t`` the number of members
    eligible for them; a co-partition group counts as one topic whose units
    weigh their topic-partitions.  Zero means every topic is spread as evenly
    as its subscribers allow.  Needs classes built per topic
    (``build_classes(..., per_topic=True)``).
    """
    if ic.cls_topic is None:
        raise ValueError("topic_balance needs classes built per topic")
    fam: dict[int, list[int]] = {}
    for c in range(ic.n_classes):
        if ic.count[c] > 0:
            fam.setdefault(int(ic.cls_topic[c]), []).append(c)
    out: list[tuple[list[int], int, list[int]]] = []
    for _t, cls in sorted(fam.items()):
        n = sum(int(ic.count[c]) for c in cls)
        members = sorted(set().union(*(set(ic.eligsets[int(ic.cls_elig[c])].tolist()) for c in cls)))
        out.append((cls, -(-n // max(1, len(members))), members))
    return out


def topic_balance_value(ic: ItemClasses, flows: Sequence[tuple[int, int, int]]) -> int:
    """The ``topic_balance`` of a solution given as ``(class, member, count)`` triples."""
    per: dict[tuple[int, int], int] = {}
    for c, m, k in flows:
        per[c, m] = per.get((c, m), 0) + k
    total = 0
    for cls, share, members in topic_balance_terms(ic):
        size = int(ic.size[cls[0]])
        for m in members:
            held = sum(per.get((c, m), 0) for c in cls)
            total += size * max(0, held - share)
    return total


def solve_exact(
    ic: ItemClasses,
    capacities: Sequence[float] | np.ndarray,
    member_racks: Sequence[str | None],
    *,
    stages: Sequence[str] = ("max_load", "moves", "sum_sq", "racks"),
    time_limit: float = 30.0,
    deadline: float | None = None,
    seed: int = 0,
    deterministic: bool = False,
    workers: int = 1,
    backend: str = "cpsat",
    tolerance: float | None = None,
    load_cap: float | None = None,
    moves_cap: float | None = None,
    max_vars: int = MAX_VARS,
) -> CpsatOutcome:
    """Lexicographic optimum over class counts.

    Parameters
    ----------
    ic
        Item classes (``per_topic`` classes when ``topic_balance`` is a stage).
    capacities
        Member capacities (``> 0``).
    member_racks
        Member racks (``None`` if unknown).
    stages
        Stage names from :data:`STAGES`, in priority order.
    time_limit
        Seconds for the whole solve (see ``deadline``).
    deadline
        ``time.perf_counter()`` instant by which the solve must end (default:
        now + ``time_limit``); the caller's model building counts against it.
    seed
        CP-SAT random seed.
    deterministic
        Fixed deterministic-time shares per stage, one worker: reproducible.
    workers
        CP-SAT workers when not deterministic.
    backend
        ``"cpsat"``, ``"highs"`` or ``"scip"`` (the latter two for linear stages).
    tolerance
        ``EPS >= 0``: after ``max_load`` (which must come first), later stages
        keep every load at most ``(1 + EPS)`` times the optimal max load.
    load_cap
        Hard upper bound on every load per capacity (original units).
    moves_cap
        Hard upper bound on the moved cost (original units).
    max_vars
        Neighbourhood restriction threshold.

    Returns
    -------
    CpsatOutcome

    Raises
    ------
    InfeasibleError
        No assignment satisfies the hard constraints, or none was found in time.
    """
    t_start = time.perf_counter()
    if deadline is None:
        deadline = t_start + float(time_limit)
    stages = list(stages)
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ValueError(f"unknown stages {unknown}")
    if tolerance is not None and (not stages or stages[0] != "max_load"):
        raise ValueError("a balance tolerance needs max_load as the first stage")
    n = ic.n_members
    nc = ic.n_classes
    caps = np.asarray(capacities, dtype=np.float64)
    racks = list(member_racks)
    sc = scale(ic, caps.tolist())
    W = sc.wint
    ratio = sc.ratio

    # ---- candidate members per class (all of them unless the model would be too large)
    n_vars_full = sum(len(ic.eligsets[int(e)]) for e in ic.cls_elig.tolist())
    restricted = n_vars_full > max_vars
    primal_start: np.ndarray | None = None
    if (stages[0] == "max_load" and set(stages) <= set(LARGE_TAKES) and load_cap is None
            and moves_cap is None and backend == "cpsat" and ic.total_items <= MAX_ITEMS):
        # primal search beside valid bounds, stage by stage: the whole answer when one CP-SAT model would be
        # too large; else a first share of the time, with CP-SAT then proving what it leaves open
        share = 1.0 if restricted else PRIMAL_SHARE
        out = solve_large(ic, sc, racks, stages, time_limit=time_limit * share,
                          deadline=t_start + share * (deadline - t_start), seed=seed,
                          deterministic=deterministic, workers=workers, tolerance=tolerance,
                          topic_balance=lambda flows: topic_balance_value(ic, flows), restricted=restricted)
        if restricted or all(r.proven for r in out.stages):
            out.seconds = time.perf_counter() - t_start
            return out
        primal_start = np.zeros((nc, n), dtype=np.int64)
        for c, m, k in out.flows:
            primal_start[c, m] = k
        if deterministic:
            time_limit *= 1 - PRIMAL_SHARE
    lb_z = max_load_bound(ic, W, ratio)
    hint = greedy(ic, caps) if primal_start is None else primal_start
    if ic.total_items <= MAX_ITEMS and primal_start is None:
        # start from a solution near the max-load bound that moves little: CP-SAT's probe often only has to
        # confirm it, and a restricted model (neighbourhoods only) keeps most of what its start decides
        data = local_data(ic, sc, [ic.eligsets[int(e)].tolist() for e in ic.cls_elig.tolist()])
        if deterministic:  # a step budget instead of the clock: the same start on every run
            start = improve(data, lb_z, max_steps=int(LOCAL_SHARE * time_limit * LOCAL_STEPS_PER_SECOND))
        else:
            start = improve(data, lb_z, deadline=t_start + LOCAL_SHARE * (deadline - t_start))
        w_arr = np.asarray(W, dtype=np.int64)  # loads as w @ counts: no classes x members temporary
        if ((w_arr @ start) * ratio).max(initial=0) <= ((w_arr @ hint) * ratio).max(initial=0):
            hint = start
    rng = np.random.default_rng(seed)
    cand: list[list[int]] = []
    per_class = max(4, max_vars // max(1, nc)) if restricted else 0
    elig_lists = [e.tolist() for e in ic.eligsets]
    elig_sets = [set(e) for e in elig_lists]
    for c in range(nc):
        e = int(ic.cls_elig[c])
        members = elig_lists[e]
        if not restricted or len(members) <= per_class:
            cand.append(members)
            continue
        keep = set(np.nonzero(hint[c])[0].tolist()) | ({o for o, _ in ic.owners[c]} & elig_sets[e])
        # random others, drawn with replacement and deduplicated (cheap; a few short of per_class is fine)
        picks = rng.integers(0, len(members), size=max(0, per_class - len(keep)))
        cand.append(sorted(keep | {members[j] for j in picks.tolist()}))

    total_nl = sum(W[c] * int(ic.count[c]) for c in range(nc)) * max(ratio, default=1)
    cap_z = total_nl
    if load_cap is not None:
        cap_z = min(cap_z, math.floor(Fraction(load_cap) / sc.load_unit))
        if cap_z < lb_z:
            raise InfeasibleError("no assignment keeps every load within the cap")

    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    xs: list[list[tuple[int, Any]]] = []
    load_terms: list[list[tuple[int, Any]]] = [[] for _ in range(n)]
    load_hi = [0] * n
    mv_terms: list[tuple[int, Any]] = []
    rk_terms: list[tuple[int, Any]] = []
    for c in range(nc):
        row = []
        cnt = int(ic.count[c])
        for m in cand[c]:
            v = model.new_int_var(0, cnt, f"x{c}_{m}") if cnt > 1 else model.new_bool_var(f"x{c}_{m}")
            row.append((m, v))
            if W[c]:
                load_terms[m].append((W[c], v))
                load_hi[m] += W[c] * cnt
            mvc = sc.owned[c] - sc.own[c].get(m, 0)
            if mvc:
                mv_terms.append((mvc, v))
            rkc = ic.rack_cost(c, racks[m])
            if rkc:
                rk_terms.append((rkc, v))
        model.add(sum(v for _, v in row) == cnt)
        xs.append(row)
    nl_hi = [min(cap_z, load_hi[m] * ratio[m]) for m in range(n)]
    nl = []
    for m in range(n):
        v = model.new_int_var(0, max(0, nl_hi[m]), f"nl{m}")
        model.add(v == ratio[m] * sum(w * x for w, x in load_terms[m]))
        nl.append(v)
    if cap_z < lb_z:
        raise InfeasibleError("no assignment keeps every load within the cap")
    z = model.new_int_var(lb_z, max(lb_z, cap_z), "z")
    for v in nl:
        model.add(z >= v)
    z_dom = model.proto.variables[z.index].domain

    objs: dict[str, Any] = {"max_load": z}
    dom: dict[str, Any] = {"max_load": z_dom}

    def linear_obj(name: str, terms: list[tuple[int, Any]], hi: int) -> None:
        v = model.new_int_var(0, max(0, hi) if terms else 0, name)
        if terms:
            model.add(v == sum(k * x for k, x in terms))
        else:
            model.add(v == 0)
        objs[name] = v
        dom[name] = model.proto.variables[v.index].domain

    mv_hi = sum(k * int(ic.count[c]) for c in range(nc) for k in [sc.owned[c]])
    linear_obj("moves", mv_terms, mv_hi)
    if moves_cap is not None:
        cap_m = math.floor(Fraction(moves_cap) / sc.move_unit + Fraction(1, 10**9))
        dom["moves"][1] = max(0, min(mv_hi, cap_m))
    linear_obj("racks", rk_terms, sum(k * int(ic.count[c]) for c in range(nc) for k in [int(ic.size[c])]))
    if "topic_balance" in stages:
        tb_terms: list[tuple[int, Any]] = []
        by_member: list[dict[int, Any]] = [{} for _ in range(nc)]
        for c, row in enumerate(xs):
            by_member[c] = dict(row)
        for cls, share, members in topic_balance_terms(ic):
            k = int(ic.size[cls[0]])  # topic-partitions per item (a co-partition unit: one per topic)
            top = sum(int(ic.count[c]) for c in cls)
            if top <= share:
                continue
            for m in members:
                held = [by_member[c][m] for c in cls if m in by_member[c]]
                if not held:
                    continue
                over = model.new_int_var(0, top - share, f"tb{m}")
                model.add(over >= sum(held) - share)
                tb_terms.append((k, over))
        linear_obj("topic_balance", tb_terms, sum(int(ic.size[c]) * int(ic.count[c]) for c in range(nc)))

    to_orig = {"max_load": sc.load_unit, "sum_sq": sc.load_unit * sc.load_unit, "moves": sc.move_unit,
               "racks": Fraction(1), "topic_balance": Fraction(1)}
    sq_exact = [True]
    sq_coarse = [1]

    def sum_sq_obj() -> Any:
        """Sum of squared loads per capacity, built once the max load is known."""
        zhi = int(z_dom[1])
        coarse = 1
        if zhi > MAX_SQUARED:
            coarse = -(-zhi // MAX_SQUARED)
            sq_exact[0] = False
            sq_coarse[0] = coarse
        terms: list[Any] = []
        base = 0
        for m in range(n):
            hi = min(nl_hi[m], zhi)
            if hi <= 0:
                continue
            step = ratio[m]
            k0, k1 = 0, hi // step
            if coarse == 1 and 0 <= k1 - k0 <= ORDER_ENCODING_MAX:
                # NL = step (k0 + sum_k b_k); (step k)^2 - (step (k - 1))^2 = step^2 (2k - 1)
                bs = [model.new_bool_var(f"b{m}_{k}") for k in range(k0 + 1, k1 + 1)]
                for k, b in enumerate(bs, start=k0 + 1):
                    aux_hints.append((b.index, lambda v, m=m, k=k, step=step: int(v[m] >= step * k)))
                for a, b in itertools.pairwise(bs):
                    model.add_implication(b, a)
                model.add(nl[m] == step * (k0 + sum(bs)))
                base += (step * k0) ** 2
                terms.append(sum(step * step * (2 * k - 1) * b for k, b in enumerate(bs, start=k0 + 1)))
                continue
            src = nl[m]
            top = hi
            if coarse > 1:
                # y = floor(NL / coarse): the square of a coarser load (inexact, never claimed proven)
                y = model.new_int_var(0, hi // coarse, f"y{m}")
                aux_hints.append((y.index, lambda v, m=m: v[m] // coarse))
                model.add(coarse * y <= nl[m])
                model.add(nl[m] <= coarse * y + coarse - 1)
                src, top = y, hi // coarse
            sq = model.new_int_var(0, top * top, f"sq{m}")
            aux_hints.append((sq.index, lambda v, m=m: (v[m] // coarse) ** 2))
            model.add_multiplication_equality(sq, [src, src])
            for pt in _tangent_points(top, 48):
                model.add(sq >= 2 * pt * src - pt * pt)
            terms.append(sq)
        v = model.new_int_var(0, sum(min(nl_hi[m], zhi) ** 2 // (coarse * coarse) for m in range(n)) or 0, "sumsq")
        aux_hints.append((v.index, lambda nlv: sum((x // coarse) ** 2 for x in nlv)))
        model.add(v == base + (sum(terms) if terms else 0))
        dom["sum_sq"] = model.proto.variables[v.index].domain
        to_orig["sum_sq"] = sc.load_unit * sc.load_unit * coarse * coarse
        return v

    # ---- hint and solution bookkeeping
    def counts_of(sol: dict[tuple[int, int], int]) -> dict[str, Any]:
        load = [0] * n
        mv = rk = 0
        for (c, m), k in sol.items():
            load[m] += k * W[c]
            mv += k * (sc.owned[c] - sc.own[c].get(m, 0))
            rk += k * ic.rack_cost(c, racks[m])
        norm = [load[m] * ratio[m] for m in range(n)]
        return {"max_load": max(norm, default=0), "sum_sq": sum(v * v for v in norm), "moves": mv, "racks": rk,
                "nl": norm}

    current: dict[tuple[int, int], int] | None = {
        (c, m): int(hint[c, m]) for c in range(nc) for m in cand[c] if hint[c, m]}
    assert current is not None
    if counts_of(current)["max_load"] > cap_z:
        current = None

    hint_vars = [v.index for row in xs for _, v in row]
    aux_hints: list[tuple[int, Any]] = []  # (variable index, its value from the members' NL)
    hint_keys = [(c, m) for c, row in enumerate(xs) for m, _ in row]

    def set_hint(sol: dict[tuple[int, int], int] | None) -> None:
        """A complete hint (every x), written into the proto in bulk."""
        model.clear_hints()
        if sol is None:
            return
        h = model.proto.solution_hint
        h.vars.extend(hint_vars)
        h.values.extend([sol.get(key, 0) for key in hint_keys])
        # the derived variables too (loads, max, stage objectives, the sum_sq encoding): a complete hint is
        # taken as a solution at once instead of being repaired by a search
        got = counts_of(sol)
        nlv: list[int] = got["nl"]
        extra: dict[int, int] = {v.index: nlv[m] for m, v in enumerate(nl)}
        extra[z.index] = got["max_load"]
        for name in ("moves", "racks"):
            extra[objs[name].index] = got[name]
        for idx, fn in aux_hints:
            extra[idx] = fn(nlv)
        h.vars.extend(list(extra))
        h.values.extend(list(extra.values()))

    def certified(name: str, zcap: int) -> int | None:
        """The current solution's value of stage ``name`` when it equals a lower bound valid for every
        assignment with all loads within ``zcap`` (so it is optimal without a search), else ``None``."""
        if current is None or name not in ("moves", "racks", "sum_sq"):
            return None
        got = counts_of(current)
        if got["max_load"] > zcap or any(got[k] > int(dom[k][1]) for k in ("moves", "racks") if k in dom):
            return None
        if name == "sum_sq":
            if int(z_dom[1]) > MAX_SQUARED:  # squares on a coarser scale: not comparable with the bound
                return None
            bound = sum_sq_bound(sum(W[c] * int(ic.count[c]) for c in range(nc)), ratio)
        elif name == "moves":
            bound = moves_bound(ic, W, ratio, sc.owned, sc.own, zcap)
        else:
            bound = 0
        return int(got[name]) if got[name] <= bound else None

    reports: list[StageReport] = []
    done_at: list[float] = []  # perf_counter() when each stage was settled
    n_stages = len(stages)
    det_spent = [0.0]

    def budget(weight: float) -> float:
        """Seconds for the next solve: a share of what is left (fixed shares when deterministic)."""
        if deterministic:
            left = max(0.05, float(time_limit) - det_spent[0])
        else:
            left = max(0.02, deadline - time.perf_counter())
        return max(0.02, left * weight)

    def run(objective: Any, seconds: float) -> tuple[str, int | None, int | None, float]:
        """One CP-SAT solve; returns (status, value, bound, seconds) and updates ``current``."""
        nonlocal current
        model.minimize(objective) if objective is not None else model.clear_objective()
        set_hint(current)
        solver = cp_model.CpSolver()
        p = solver.parameters
        p.random_seed = int(seed)
        p.num_workers = 1 if deterministic else max(1, int(workers))
        p.max_deterministic_time = seconds
        p.max_time_in_seconds = seconds * 20.0 + 1.0 if deterministic else seconds
        t0 = time.perf_counter()
        st = solver.solve(model)
        dt = time.perf_counter() - t0
        det_spent[0] += min(seconds, solver.deterministic_time)
        name = {cp_model.OPTIMAL: "optimal", cp_model.FEASIBLE: "feasible",
                cp_model.INFEASIBLE: "infeasible"}.get(st, "unknown")
        if name in ("optimal", "feasible"):
            prev = current
            current = {(c, m): int(solver.value(v)) for c, row in enumerate(xs) for m, v in row if solver.value(v)}
            if objective is None:
                return name, 0, 0, dt
            val = round(solver.objective_value)
            bnd = math.ceil(solver.best_objective_bound - 1e-6)
            # a short (deterministic) budget can end before CP-SAT even takes its hint: never return worse
            # than the solution it was given
            stage = next((k for k, v in objs.items() if v is objective), None)
            if name == "feasible" and prev is not None and stage in ("max_load", "moves", "racks") and fits(prev):
                before = counts_of(prev)[stage]
                if before < val:
                    current, val = prev, before
            return name, val, (val if name == "optimal" else bnd), dt
        return name, None, None, dt

    def fits(sol: dict[tuple[int, int], int]) -> bool:
        """Whether ``sol`` keeps the caps the stages so far have set."""
        got = counts_of(sol)
        return got["max_load"] <= int(z_dom[1]) and all(got[k] <= int(dom[k][1]) for k in ("moves", "racks"))

    def fix(name: str, value: int, proven: bool) -> None:
        d = dom[name]
        if proven:
            d[0] = value
        d[1] = value

    def report(name: str, value: int, bnd: int, proven: bool, dt: float) -> None:
        f = to_orig[name]
        exact_here = sc.exact and (name != "sum_sq" or sq_exact[0]) and not (restricted and not proven)
        reports.append(StageReport(name, float(value * f), float(bnd * f), proven and exact_here, dt))
        done_at.append(time.perf_counter())

    mips: dict[str, Any] = {}

    def get_mip(which: str) -> Any:
        if which not in mips:
            from solver.consumer.exact.mip import MipModel

            mips[which] = MipModel(which, ic, cand, W, ratio,
                                   mv_terms=[(c, m, sc.owned[c] - sc.own[c].get(m, 0)) for c in range(nc)
                                             for m in cand[c]],
                                   racks=[(c, m, ic.rack_cost(c, racks[m])) for c in range(nc) for m in cand[c]],
                                   seed=seed)
        return mips[which]

    n_vars = sum(len(r) for r in xs)
    stats: dict[str, int] = {"mip_fallbacks": 0, "mip_proofs": 0}

    def solve_linear(name: str, seconds: float, zcap: int) -> tuple[str, int | None, int | None, float]:
        """One linear stage: the chosen backend, or CP-SAT first and HiGHS on what CP-SAT leaves open.

        Measured on the weighted-realistic records (docs/benchmarks.md): CP-SAT proves most probes
        fastest, but its time on some packing-like instances varies by 10x with the seed where HiGHS's
        LP-based search does not; the share below gives each its chance within the same budget.
        """
        nonlocal current
        if backend in ("highs", "scip"):
            mip = get_mip(backend)
            st, val, bnd, dt = mip.solve_stage(name, current, seconds, zcap=zcap, fixed=_fixed(dom))
            if st in ("optimal", "feasible") and mip.last is not None:
                current = mip.last
            return st, val, bnd, dt
        fallback = name in MIP_STAGES and "sum_sq" not in objs and n_vars <= MIP_MAX_VARS and not restricted
        d0 = det_spent[0]
        st, val, bnd, dt = run(objs[name], seconds * (CPSAT_SHARE if fallback else 1.0))
        if not fallback or st in ("optimal", "infeasible"):
            return st, val, bnd, dt
        left = seconds - ((det_spent[0] - d0) if deterministic else dt)
        if left <= 0.05:
            return st, val, bnd, dt
        stats["mip_fallbacks"] += 1
        mip = get_mip("highs")
        # deterministic mode keeps HiGHS only when it proves its stage, so give it room to finish
        st2, val2, bnd2, dt2 = mip.solve_stage(name, current, left * (4.0 if deterministic else 1.0), zcap=zcap,
                                               fixed=_fixed(dom))
        if deterministic:
            det_spent[0] += min(left, dt2)
        if st2 == "optimal" and mip.last is not None:
            stats["mip_proofs"] += 1
            current = mip.last
            return "optimal", val2, val2, dt + dt2
        if st2 == "infeasible":
            return "infeasible", None, None, dt + dt2
        best_bnd = max(b for b in (bnd, bnd2) if b is not None) if (bnd is not None or bnd2 is not None) else None
        # an unproven MIP incumbent depends on the wall clock: kept only outside deterministic mode
        if (not deterministic and st2 == "feasible" and mip.last is not None and val2 is not None
                and (val is None or val2 < val)):
            current = mip.last
            return "feasible", val2, best_bnd, dt + dt2
        if val is None:
            return st, None, None, dt + dt2
        return st, val, min(val, best_bnd) if best_bnd is not None else bnd, dt + dt2

    z_opt: int | None = None
    i = 0
    while i < n_stages:
        name = stages[i]
        weight = 0.5 if i == 0 and n_stages > 1 else 1.0 / (n_stages - i)
        if name == "max_load":
            nxt = stages[i + 1] if i + 1 < n_stages else None
            probe = tolerance is None and (nxt is None or nxt in LINEAR)
            lo = int(z_dom[0])
            if probe:
                # the bound as a hard cap: a solution proves it reached (and optimises the next stage)
                z_dom[1] = lo
                obj = objs[nxt] if nxt is not None else None
                t_b = budget(0.5 if nxt is not None else 0.9)
                cert = certified(nxt, lo) if nxt is not None else None
                if cert is not None:  # the start reaches both bounds: proven without a search
                    done: tuple[str, int | None, int | None, float] = ("optimal", cert, cert, 0.0)
                    st, val, bnd, dt = done
                elif nxt is not None:
                    st, val, bnd, dt = solve_linear(nxt, t_b, lo)
                else:
                    st, val, bnd, dt = run(obj, t_b)
                if st in ("optimal", "feasible"):
                    report("max_load", lo, lo, True, dt)
                    z_dom[0] = z_dom[1] = lo
                    z_opt = lo
                    if nxt is not None:
                        assert val is not None and bnd is not None
                        # a restricted model's own bound (or optimum) says nothing of the full model
                        bnd = max(0 if restricted else bnd, _valid_bound(nxt, ic, sc, lo, ratio, W))
                        proven = (st == "optimal" and not restricted) or bnd >= val
                        fix(nxt, val, proven)
                        report(nxt, val, min(bnd, val), proven, 0.0)
                        i += 2
                    else:
                        i += 1
                    continue
                z_dom[1] = max(lo, cap_z)
                if st == "infeasible" and not restricted:
                    z_dom[0] = lo + 1
                    if lo + 1 > cap_z:
                        raise InfeasibleError("no assignment keeps every load within the cap")
            st, val, bnd, dt = run(z, budget(weight))
            if val is None or bnd is None:
                if current is None:
                    raise InfeasibleError("no assignment found within the time limit")
                val = counts_of(current)["max_load"]
                bnd = int(z_dom[0])
                st = "feasible"
            proven = st == "optimal" and not restricted
            bnd = min(val, max(0 if restricted else bnd, int(z_dom[0]), lb_z))
            proven = proven or val == bnd
            if proven:
                bnd = val
            report("max_load", val, bnd, proven, dt)
            z_opt = val if proven else None
            if tolerance is not None:
                # the window is EPS above the max load found (proven or not): never empty
                ref = val
                z_dom[0] = lb_z
                z_dom[1] = max(val, math.floor(Fraction(ref) * (1 + Fraction(tolerance).limit_denominator(10**9))))
            else:
                fix("max_load", val, proven)
            i += 1
            continue
        if name in ("moves", "racks", "topic_balance") and int(dom[name][1]) == 0:
            # nothing to optimise (no term can be non-zero): proven at once
            report(name, 0, 0, True, 0.0)
            i += 1
            continue
        if name == "sum_sq" and "sum_sq" not in objs:
            objs["sum_sq"] = sum_sq_obj()
        if name in ("moves", "racks", "sum_sq"):
            cert = certified(name, int(z_dom[1]))
            if cert is not None:  # the current solution meets a bound valid for every assignment
                fix(name, cert, True)
                report(name, cert, cert, True, 0.0)
                i += 1
                continue
        obj = objs[name]
        t_b = budget(weight)
        if name == "sum_sq" and current is not None and set(stages[:i]) <= {"max_load", "moves"}:
            # a levelled hint within the earlier stages' caps: CP-SAT then mostly has to close the bound
            t_l = time.perf_counter()
            current = _levelled(current, cand, ic, sc, int(z_dom[1]), int(dom["moves"][1]),
                                None if deterministic else t_l + LEVEL_SHARE * t_b,
                                int(LEVEL_SHARE * t_b * LOCAL_STEPS_PER_SECOND) if deterministic else None)
            if not deterministic:
                t_b = max(0.02, t_b - (time.perf_counter() - t_l))
        if name in LINEAR and name != "topic_balance":
            st, val, bnd, dt = solve_linear(name, t_b, int(z_dom[1]))
        else:
            st, val, bnd, dt = run(obj, t_b)
        if val is None or bnd is None:
            if current is None:
                raise InfeasibleError("no assignment found within the time limit")
            if name == "topic_balance":
                raise InfeasibleError("no solution for the topic_balance stage within the time limit")
            val = counts_of(current)[name]
            bnd = 0
            st = "feasible"
        proven = st == "optimal" and not restricted
        # the best valid bound: the solver's (full models only) or one valid for every assignment
        valid = _valid_bound(name, ic, sc, int(z_dom[1]), ratio, W)
        if name == "sum_sq" and not sq_exact[0]:  # squares of coarser loads: the bound in that unit, rounded down
            valid //= sq_coarse[0] ** 2
        bnd = min(val, max(0 if restricted else bnd, valid))
        proven = proven or bnd == val
        fix(name, val, proven)
        report(name, val, bnd, proven, dt)
        i += 1

    if current is None:
        raise InfeasibleError("no assignment found within the time limit")
    flows = [(c, m, k) for (c, m), k in sorted(current.items())]
    info: dict[str, object] = {"load_unit": float(sc.load_unit), "move_unit": float(sc.move_unit),
                               "variables": sum(len(r) for r in xs), "lower_bound_max_load": float(lb_z * sc.load_unit),
                               "backend": backend, "stage_done_at": done_at, **stats}
    if z_opt is not None:
        info["optimal_max_load"] = float(z_opt * sc.load_unit)
    notes = list(sc.notes)
    if not sq_exact[0]:
        notes.append("sum_sq on a coarser load scale (squares would overflow)")
    if notes:
        info["notes"] = notes
    return CpsatOutcome(flows=flows, stages=reports, exact=sc.exact, restricted=restricted,
                        seconds=time.perf_counter() - t_start, info=info)


def _levelled(sol: dict[tuple[int, int], int], cand: list[list[int]], ic: ItemClasses, sc: Scaled, zcap: int,
              moves_cap: int, deadline: float | None, max_steps: int | None) -> dict[tuple[int, int], int]:
    """``sol`` with a lower sum of squares (:func:`.local.level`), items kept inside their candidate members."""
    nc = ic.n_classes
    if ic.total_items > MAX_ITEMS:
        return sol
    counts = np.zeros((nc, ic.n_members), dtype=np.int64)
    for (c, m), k in sol.items():
        counts[c, m] = k
    out = level(local_data(ic, sc, cand), counts, zcap, moves_cap, deadline=deadline, max_steps=max_steps)
    return {(int(c), int(m)): int(out[c, m]) for c, m in zip(*np.nonzero(out), strict=True)}


def _fixed(dom: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {k: (int(d[0]), int(d[1])) for k, d in dom.items()}


def _tangent_points(hi: int, k: int) -> list[int]:
    if hi <= k:
        return list(range(1, hi + 1))
    return sorted({max(1, round(hi * i / k)) for i in range(1, k + 1)})


def _valid_bound(name: str, ic: ItemClasses, sc: Scaled, zcap: int, ratio: list[int], W: list[int]) -> int:
    """A bound valid for the full model when the solve ran on a restricted one."""
    if name == "moves":
        return moves_bound(ic, W, ratio, sc.owned, sc.own, zcap)
    if name == "sum_sq":
        return sum_sq_bound(sum(W[c] * int(ic.count[c]) for c in range(ic.n_classes)), ratio)
    return 0
