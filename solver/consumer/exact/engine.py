"""The exact engine's stage driver: lexicographic stages over class counts, primal search first.

``solve_exact`` composes the parts (``docs/algorithms.md``, "The exact engine"):

1. :mod:`.data` -- loads per capacity and move costs as exact integers;
2. :mod:`.large` -- every stage by primal search (:mod:`.primal`) beside bounds
   valid for every assignment (:mod:`.bounds`).  On a model too large for one
   CP-SAT model (over ``max_vars`` class-member variables) that is the answer;
   otherwise it gets a share of the time (:data:`PRIMAL_SHARE`) and, unless every stage is
   already proven, its solution starts
3. the CP-SAT stages over :class:`.model.ClassModel` (this module): each stage's
   objective is minimised from the previous solution as a complete hint, then its
   domain narrowed (to its value when proven, else to ``<=`` the value found).
   ``max_load`` followed by a linear stage runs as one *probe*: the next stage is
   minimised with ``Z`` fixed to its lower bound, so a solution proves both; a
   proof of infeasibility raises the bound by one.  A stage whose current value
   meets a bound valid for every assignment is proven without a search
   (*certificate*).  Linear stages the CP-SAT share leaves open on small models
   go to HiGHS (:mod:`.mip`); ``backend="highs"`` / ``"scip"`` runs them there only.

Stages other orders need (a moves budget, a load cap, ``topic_balance`` first, a
MIP backend) run the CP-SAT stages alone; above ``max_vars`` the model keeps a
neighbourhood of members per class and only bounds valid for the full model are
reported.

Time and determinism: ``deadline`` is a ``time.perf_counter()`` instant that
bounds the whole solve, model building included.  With ``deterministic`` every
stage gets a fixed share of ``time_limit`` in CP-SAT's *deterministic* time (the
primal steps in counted work) and one worker, so the same seed gives the same
assignment on every run; otherwise the stages share what is left of the clock.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from solver.consumer.exact.bounds import max_load_bound, moves_bound, sum_sq_bound
from solver.consumer.exact.budgets import (
    COLGEN_SHARE,
    CPSAT_SHARE,
    HYBRID_PATIENCE,
    LEVEL_SHARE,
    LOCAL_SHARE,
    MAX_VARS,
    MIP_MAX_VARS,
    PLAIN_VARS,
    PRIMAL_SHARE,
    SMALL_VARS,
    STRICT_SHARE,
)
from solver.consumer.exact.data import Scaled, levelled, local_data, scale
from solver.consumer.exact.large import TAKES as LARGE_TAKES
from solver.consumer.exact.large import solve_large
from solver.consumer.exact.model import MAX_SQUARED, ClassModel, Solution, candidates
from solver.consumer.exact.primal.local import MAX_ITEMS, improve
from solver.consumer.exact.primal.search import STEPS_PER_SECOND
from solver.consumer.exact.topic_balance import topic_balance_terms, topic_balance_value
from solver.consumer.items import ItemClasses
from solver.consumer.weighted_cpsat import CpsatOutcome, StageReport, greedy
from solver.errors import InfeasibleError

STAGES = ("max_load", "sum_sq", "moves", "racks", "topic_balance")
#: Stages with a linear objective (the probe and the MIP backends take these).
LINEAR = ("max_load", "moves", "racks", "topic_balance")
#: Stages the MIP backends take.
MIP_STAGES = ("max_load", "moves", "racks")
__all__ = ["STAGES", "solve_exact", "topic_balance_terms", "topic_balance_value"]


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
    start: Sequence[tuple[int, int, int]] | None = None,
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
        Random seed (CP-SAT and the primal search).
    deterministic
        Fixed deterministic shares per stage, one worker: reproducible.
    workers
        CP-SAT workers when not deterministic.
    backend
        ``"cpsat"``, ``"highs"`` or ``"scip"`` (the latter two for linear stages).
    tolerance
        ``EPS >= 0``: after ``max_load`` (which must come first), later stages
        keep every load at most ``(1 + EPS)`` times the max load found.
    load_cap
        Hard upper bound on every load per capacity (original units).
    moves_cap
        Hard upper bound on the moved cost (original units).
    max_vars
        Neighbourhood restriction threshold.
    start
        A known assignment as ``(class, member, count)`` flows that keeps the hard caps (the answer of a
        tighter setting: the frontier's previous point); the CP-SAT stages start from it and no stage
        returns worse than it.  Used where the CP-SAT stages run alone (a load cap, a moves budget).

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
    common: dict[str, Any] = {"seed": seed, "deterministic": deterministic, "workers": workers, "backend": backend,
                              "max_vars": max_vars}
    if (stages[:2] == ["max_load", "moves"] and (tolerance is not None or len(stages) > 2)
            and load_cap is None and moves_cap is None and "topic_balance" not in stages):
        return _two_phases(ic, capacities, member_racks, stages, t_start=t_start, time_limit=time_limit,
                           deadline=deadline, tolerance=tolerance, common=common)
    return _solve(ic, capacities, member_racks, stages=stages, time_limit=time_limit, deadline=deadline,
                  tolerance=tolerance, load_cap=load_cap, moves_cap=moves_cap, t_start=t_start,
                  start_flows=start, **common)


def _two_phases(ic: ItemClasses, capacities: Sequence[float] | np.ndarray, member_racks: Sequence[str | None],
                stages: list[str], *, t_start: float, time_limit: float, deadline: float, tolerance: float | None,
                common: dict[str, Any]) -> CpsatOutcome:
    """The strict ``max_load, moves`` solve first, then the later stages seeded with its answer.

    The first phase is the same computation with or without a balance tolerance (the same share of the
    time limit, the same work budgets), so a tolerance run holds the strict run's answer and only looks
    for better inside its window: its moved cost is never above the strict run's (monotone by
    construction).  Without a tolerance the second phase runs ``sum_sq, racks`` within the first
    phase's max load and moved cost.
    """
    n_vars_full = sum(len(ic.eligsets[int(e)]) for e in ic.cls_elig.tolist())
    strict = STRICT_SHARE["small" if n_vars_full <= SMALL_VARS else "mid"]
    first = _solve(ic, capacities, member_racks, stages=["max_load", "moves"], tolerance=None, load_cap=None,
                   moves_cap=None, time_limit=time_limit * strict,
                   deadline=t_start + strict * (deadline - t_start), t_start=t_start,
                   colgen="strict", **common)
    sc = scale(ic, np.asarray(capacities, dtype=np.float64).tolist())
    x = _counts(ic, first.flows)
    w_arr = np.asarray(sc.wint, dtype=np.int64)
    z = int(((w_arr @ x) * np.asarray(sc.ratio, dtype=np.int64)).max(initial=0))
    moved = _moved(ic, sc, first.flows)
    if tolerance is None:
        rest, zcap, mcap = stages[2:], z, moved
    else:
        rest, zcap, mcap = stages[1:], window_cap(z, tolerance), None
    second = _solve(ic, capacities, member_racks, stages=rest, tolerance=None, load_cap=None, moves_cap=None,
                    time_limit=time_limit * (1 - strict), deadline=deadline, t_start=time.perf_counter(),
                    given=(x, zcap, mcap),
                    colgen="strict" if tolerance is None else "window", **common)
    flows = second.flows
    if _moved(ic, sc, flows) > moved:  # never worse than the answer it started from (a bug if it were)
        raise AssertionError("the second phase moved more than the solution it started from")
    reports = first.stages[:1] + (first.stages[1:2] if tolerance is None else []) + second.stages
    info = dict(first.info)
    for key in ("mip_fallbacks", "mip_proofs"):
        info[key] = int(first.info.get(key, 0)) + int(second.info.get(key, 0))  # type: ignore[call-overload]
    done_first: list[float] = first.info.get("stage_done_at", [])  # type: ignore[assignment]
    done_second: list[float] = second.info.get("stage_done_at", [])  # type: ignore[assignment]
    info["stage_done_at"] = done_first[:len(reports) - len(second.stages)] + done_second
    info["phases"] = [first.info.get("backend"), second.info.get("backend")]
    return CpsatOutcome(flows=flows, stages=reports, exact=first.exact and second.exact,
                        restricted=first.restricted or second.restricted, seconds=time.perf_counter() - t_start,
                        info=info, balanced=first.flows if tolerance is not None else None)


def window_cap(z: int, tolerance: float) -> int:
    """The largest scaled load within ``(1 + tolerance)`` times ``z`` (never below ``z``)."""
    return max(z, math.floor(Fraction(z) * (1 + Fraction(tolerance).limit_denominator(10**9))))


def _moved(ic: ItemClasses, sc: Scaled, flows: list[tuple[int, int, int]]) -> int:
    """The scaled moved cost of ``flows``."""
    return sum(k * (sc.owned[c] - sc.own[c].get(m, 0)) for c, m, k in flows)


def _solve(ic: ItemClasses, capacities: Sequence[float] | np.ndarray, member_racks: Sequence[str | None], *,
           stages: list[str], time_limit: float, deadline: float, seed: int, deterministic: bool, workers: int,
           backend: str, tolerance: float | None, load_cap: float | None, moves_cap: float | None, max_vars: int,
           t_start: float, given: tuple[np.ndarray, int, int | None] | None = None,
           start_flows: Sequence[tuple[int, int, int]] | None = None,
           colgen: str = "strict") -> CpsatOutcome:
    """One solve of ``stages`` (see :func:`solve_exact`); ``given``: a start and the caps it sets
    (:func:`.engine._two_phases`), the stages then leave out ``max_load``."""
    caps = np.asarray(capacities, dtype=np.float64)
    racks = list(member_racks)
    sc = scale(ic, caps.tolist())
    n_vars_full = sum(len(ic.eligsets[int(e)]) for e in ic.cls_elig.tolist())
    restricted = n_vars_full > max_vars
    start: np.ndarray | None = None if given is None else given[0]
    window_hint: np.ndarray | None = None
    known: dict[int, int] = {}
    size = "small" if n_vars_full <= SMALL_VARS else "mid"
    if (set(stages) <= set(LARGE_TAKES) and load_cap is None and (given is not None or stages[0] == "max_load")
            and moves_cap is None and backend == "cpsat" and ic.total_items <= MAX_ITEMS
            and (restricted or n_vars_full > PLAIN_VARS)):
        # primal search beside valid bounds, stage by stage: the whole answer when one CP-SAT model would be
        # too large; else a first share of the time, with CP-SAT then proving what it leaves open
        share = 1.0 if restricted else PRIMAL_SHARE[size]
        out = solve_large(ic, sc, racks, stages, time_limit=time_limit * share,
                          deadline=t_start + share * (deadline - t_start), seed=seed,
                          deterministic=deterministic, workers=workers, tolerance=tolerance,
                          topic_balance=lambda flows: topic_balance_value(ic, flows), restricted=restricted,
                          patience=HYBRID_PATIENCE["large" if restricted else size], given=given,
                          colgen_seconds=COLGEN_SHARE[colgen, "large" if restricted else size] * time_limit)
        if restricted or all(r.proven for r in out.stages):
            out.seconds = time.perf_counter() - t_start
            return out
        # CP-SAT's max-load stage starts from the primal max-load solution (as without a tolerance, so both
        # runs reach the same max load); the window's solution is the hint of the stages after it
        start = _counts(ic, out.balanced if out.balanced is not None else out.flows)
        known = dict(out.info.get("moves_bounds", {}))  # type: ignore[call-overload]
        if out.balanced is not None and given is None:
            window_hint = _counts(ic, out.flows)
        if deterministic and size == "small":
            # the primal share less what the primal stages were given (counted: the same on every run) goes
            # on to CP-SAT, where a small model's open stage is proven (its primal stages often stop at their
            # starts); larger models keep the fixed share: there the CP-SAT stages spend it without a proof
            # (ws411-6: seconds more of wall time for the same answer, docs/benchmarks.md)
            used = float(out.info.get("counted_seconds", time_limit * share))  # type: ignore[arg-type]
            time_limit -= min(time_limit * share, used)
        elif deterministic:
            time_limit *= 1 - share
    if start is None and start_flows is not None:
        start = _counts(ic, list(start_flows))
    return _CpsatStages(ic, sc, racks, stages, caps, start=start, restricted=restricted, t_start=t_start,
                        time_limit=time_limit, deadline=deadline, seed=seed, deterministic=deterministic,
                        workers=workers, backend=backend, tolerance=tolerance, load_cap=load_cap,
                        moves_cap=moves_cap, max_vars=max_vars, window_hint=window_hint,
                        given=None if given is None else given[1:], known=known).run()


def _counts(ic: ItemClasses, flows: list[tuple[int, int, int]]) -> np.ndarray:
    out = np.zeros((ic.n_classes, ic.n_members), dtype=np.int64)
    for c, m, k in flows:
        out[c, m] = k
    return out


class _CpsatStages:
    """The CP-SAT stages of one solve: the model, the current solution, the budget, the reports."""

    def __init__(self, ic: ItemClasses, sc: Scaled, racks: list[str | None], stages: list[str], caps: np.ndarray,
                 *, start: np.ndarray | None, restricted: bool, t_start: float, time_limit: float, deadline: float,
                 seed: int, deterministic: bool, workers: int, backend: str, tolerance: float | None,
                 load_cap: float | None, moves_cap: float | None, max_vars: int,
                 window_hint: np.ndarray | None = None, given: tuple[int, int | None] | None = None,
                 known: dict[int, int] | None = None) -> None:
        self.ic, self.sc, self.racks, self.stages = ic, sc, racks, stages
        self.restricted, self.t_start, self.time_limit, self.deadline = restricted, t_start, time_limit, deadline
        #: Moved-cost bounds the primal stages' column generation proved, by cap (valid for every assignment).
        self.known = dict(known or {})
        self.seed, self.deterministic, self.workers, self.backend = seed, deterministic, workers, backend
        self.tolerance = tolerance
        W, ratio = sc.wint, sc.ratio
        self.lb_z = max_load_bound(ic, W, ratio)
        hint = greedy(ic, caps) if start is None else start
        n_vars_full = sum(len(ic.eligsets[int(e)]) for e in ic.cls_elig.tolist())
        self.small = n_vars_full <= SMALL_VARS
        if start is None and ic.total_items <= MAX_ITEMS and n_vars_full > PLAIN_VARS:
            # start near the max-load bound, moving little: the probe often only has to confirm it, and a
            # restricted model (neighbourhoods only) keeps most of what its start decides
            data = local_data(ic, sc)
            if deterministic:  # a step budget instead of the clock: the same start on every run
                local = improve(data, self.lb_z, max_steps=int(LOCAL_SHARE * time_limit * STEPS_PER_SECOND))
            else:
                local = improve(data, self.lb_z, deadline=t_start + LOCAL_SHARE * (deadline - t_start))
            w_arr = np.asarray(W, dtype=np.int64)  # loads as w @ counts: no classes x members temporary
            if ((w_arr @ local) * ratio).max(initial=0) <= ((w_arr @ hint) * ratio).max(initial=0):
                hint = local
        self.cand = candidates(ic, hint, restricted, max_vars, seed)
        cap_z = sum(W[c] * int(ic.count[c]) for c in range(ic.n_classes)) * max(ratio, default=1)
        if load_cap is not None:
            cap_z = min(cap_z, math.floor(Fraction(load_cap) / sc.load_unit))
        cap_m = None if moves_cap is None else math.floor(Fraction(moves_cap) / sc.move_unit + Fraction(1, 10**9))
        if given is not None:  # the caps an earlier phase set (its solution keeps them)
            cap_z = min(cap_z, given[0])
            if given[1] is not None:
                cap_m = given[1] if cap_m is None else min(cap_m, given[1])
        if cap_z < self.lb_z:
            raise InfeasibleError("no assignment keeps every load within the cap")
        self.cap_z = cap_z
        self.m = ClassModel(ic, sc, self.cand, racks, lb_z=self.lb_z, cap_z=cap_z, moves_cap=cap_m,
                            topic_balance="topic_balance" in stages, total_row=self.small,
                            interleave_moves=self.small)
        current: Solution = {(c, m): int(hint[c, m]) for c in range(ic.n_classes) for m in self.cand[c] if hint[c, m]}
        # a start that breaks a cap (max load, moved cost) is no answer: never returned as one
        self.current: Solution | None = current if self.m.fits(current) else None
        self.reports: list[StageReport] = []
        self.done_at: list[float] = []
        self.stats = {"mip_fallbacks": 0, "mip_proofs": 0}
        self.mips: dict[str, Any] = {}
        self.z_opt: int | None = None
        #: Under a tolerance: a solution found for the window (by the primal stages), the hint of the stages
        #: after ``max_load`` when it fits the window CP-SAT settles and moves less than CP-SAT's solution.
        self.window_hint: Solution | None = None
        if window_hint is not None:
            self.window_hint = {(c, m): int(window_hint[c, m]) for c in range(ic.n_classes) for m in self.cand[c]
                                if window_hint[c, m]}

    # ---- budget, solves, reports
    def budget(self, weight: float) -> float:
        """Seconds for the next solve: a share of what is left (fixed shares when deterministic)."""
        if self.deterministic:
            left = max(0.05, float(self.time_limit) - self.m.det_spent)
        else:
            left = max(0.02, self.deadline - time.perf_counter())
        return max(0.02, left * weight)

    def solve(self, stage: str | None, seconds: float) -> tuple[str, int | None, int | None, float]:
        """One CP-SAT solve from the current solution; keeps the solution it returns."""
        st, sol, val, bnd, dt = self.m.solve(stage, self.current, seconds, seed=self.seed, workers=self.workers,
                                             deterministic=self.deterministic)
        if sol is not None:
            self.current = sol
        return st, val, bnd, dt

    def report(self, name: str, value: int, bnd: int, proven: bool, dt: float) -> None:
        f = self.m.to_orig[name]
        exact_here = self.sc.exact and (name != "sum_sq" or self.m.sq_exact) and not (self.restricted and not proven)
        self.reports.append(StageReport(name, float(value * f), float(bnd * f), proven and exact_here, dt))
        self.done_at.append(time.perf_counter())

    def valid_bound(self, name: str, zcap: int) -> int:
        """A bound valid for every assignment with all loads within ``zcap`` (0 where there is none)."""
        ic, sc = self.ic, self.sc
        if name == "moves":
            # a bound at a cap holds at every tighter cap too
            cg = max((b for z, b in self.known.items() if z >= zcap), default=0)
            return max(cg, moves_bound(ic, sc.wint, sc.ratio, sc.owned, sc.own, zcap))
        if name == "sum_sq":
            bound = sum_sq_bound(sum(sc.wint[c] * int(ic.count[c]) for c in range(ic.n_classes)), sc.ratio)
            return bound // self.m.sq_coarse ** 2  # squares of coarser loads: that unit, rounded down
        return 0

    def certified(self, name: str, zcap: int) -> int | None:
        """The current value of stage ``name`` when it meets a bound valid for every assignment within ``zcap``
        and the settled caps (so it is optimal without a search), else ``None``."""
        if self.current is None or name not in ("moves", "racks", "sum_sq"):
            return None
        got = self.m.values(self.current)
        if got["max_load"] > zcap or any(got[k] > int(self.m.dom[k][1]) for k in ("moves", "racks")):
            return None
        if name == "sum_sq" and int(self.m.z_dom[1]) > MAX_SQUARED:  # coarse squares: not comparable
            return None
        return int(got[name]) if got[name] <= self.valid_bound(name, zcap) else None

    def mip(self, which: str) -> Any:
        if which not in self.mips:
            from solver.consumer.exact.mip import MipModel

            ic, sc, cand = self.ic, self.sc, self.cand
            self.mips[which] = MipModel(
                which, ic, cand, sc.wint, sc.ratio,
                mv_terms=[(c, m, sc.owned[c] - sc.own[c].get(m, 0)) for c in range(ic.n_classes) for m in cand[c]],
                racks=[(c, m, ic.rack_cost(c, self.racks[m])) for c in range(ic.n_classes) for m in cand[c]],
                seed=self.seed)
        return self.mips[which]

    def linear(self, name: str, seconds: float, zcap: int) -> tuple[str, int | None, int | None, float]:
        """One linear stage: the chosen backend, or CP-SAT first and HiGHS on what CP-SAT leaves open.

        Measured on the weighted-realistic records (docs/benchmarks.md): CP-SAT proves most probes
        fastest, but its time on some packing-like instances varies by 10x with the seed where HiGHS's
        LP-based search does not; the share below gives each its chance within the same budget.
        """
        fixed = {k: (int(d[0]), int(d[1])) for k, d in self.m.dom.items()}
        if self.backend in ("highs", "scip"):
            mip = self.mip(self.backend)
            st, val, bnd, dt = mip.solve_stage(name, self.current, seconds, zcap=zcap, fixed=fixed)
            if st in ("optimal", "feasible") and mip.last is not None:
                self.current = mip.last
            return st, val, bnd, dt
        # HiGHS has no deterministic work limit: whether it proves in its wall-clock share depends on the
        # machine's load, so deterministic mode (the default) leaves the whole share to CP-SAT
        fallback = (name in MIP_STAGES and "sum_sq" not in self.m.objs and self.m.n_vars <= MIP_MAX_VARS
                    and not self.restricted and not self.deterministic)
        d0 = self.m.det_spent
        st, val, bnd, dt = self.solve(name, seconds * (CPSAT_SHARE if fallback else 1.0))
        if not fallback or st in ("optimal", "infeasible"):
            return st, val, bnd, dt
        left = seconds - ((self.m.det_spent - d0) if self.deterministic else dt)
        if left <= 0.05:
            return st, val, bnd, dt
        self.stats["mip_fallbacks"] += 1
        mip = self.mip("highs")
        # deterministic mode keeps HiGHS only when it proves its stage, so give it room to finish
        st2, val2, bnd2, dt2 = mip.solve_stage(name, self.current, left * (4.0 if self.deterministic else 1.0),
                                               zcap=zcap, fixed=fixed)
        if self.deterministic:
            self.m.det_spent += min(left, dt2)
        if st2 == "optimal" and mip.last is not None:
            self.stats["mip_proofs"] += 1
            self.current = mip.last
            return "optimal", val2, val2, dt + dt2
        if st2 == "infeasible":
            return "infeasible", None, None, dt + dt2
        best_bnd = max((b for b in (bnd, bnd2) if b is not None), default=None)
        # an unproven MIP incumbent depends on the wall clock: kept only outside deterministic mode
        if (not self.deterministic and st2 == "feasible" and mip.last is not None and val2 is not None
                and (val is None or val2 < val)):
            self.current = mip.last
            return "feasible", val2, best_bnd, dt + dt2
        if val is None:
            return st, None, None, dt + dt2
        return st, val, min(val, best_bnd) if best_bnd is not None else bnd, dt + dt2

    # ---- the stages
    def run(self) -> CpsatOutcome:
        stages = self.stages
        i = 0
        while i < len(stages):
            weight = 0.5 if i == 0 and len(stages) > 1 else 1.0 / (len(stages) - i)
            if stages[i] == "max_load":
                i += self.max_load(stages[i + 1] if i + 1 < len(stages) else None, weight)
            else:
                self.stage(i, weight)
                i += 1
        if self.current is None:
            raise InfeasibleError("no assignment found within the time limit")
        sc = self.sc
        info: dict[str, object] = {"load_unit": float(sc.load_unit), "move_unit": float(sc.move_unit),
                                   "variables": self.m.n_vars, "lower_bound_max_load": float(self.lb_z * sc.load_unit),
                                   "backend": self.backend, "stage_done_at": self.done_at, **self.stats}
        if self.z_opt is not None:
            info["optimal_max_load"] = float(self.z_opt * sc.load_unit)
        notes = list(sc.notes)
        if not self.m.sq_exact:
            notes.append("sum_sq on a coarser load scale (squares would overflow)")
        if notes:
            info["notes"] = notes
        return CpsatOutcome(flows=[(c, m, k) for (c, m), k in sorted(self.current.items())], stages=self.reports,
                            exact=sc.exact, restricted=self.restricted, seconds=time.perf_counter() - self.t_start,
                            info=info)

    def max_load(self, nxt: str | None, weight: float) -> int:
        """The ``max_load`` stage (with the probe of ``nxt`` when it applies); returns the stages settled."""
        m = self.m
        z_dom = m.z_dom
        lo = int(z_dom[0])
        if self.tolerance is not None:
            # the next stage runs in the window above the max load found, not at it: the probe only asks
            # whether the bound is reached (the same test, on the same budget, as without a tolerance, so
            # both runs settle on the same max load and the window sits EPS above the strict run's)
            nxt = None
        if (self.small and (nxt is None or nxt in LINEAR) and self.current is not None
                and m.values(self.current)["max_load"] <= lo):
            # the start reaches the bound: proven without a search, and the next stage gets its whole budget
            # in one solve (a probe would split it in two solves that each start over); small models only
            # (on larger ones the one solve spends the budget without a proof, in more wall time: ws411-6)
            self.report("max_load", lo, lo, True, 0.0)
            z_dom[0] = z_dom[1] = lo
            self.z_opt = lo
            if self.tolerance is not None:
                self._window(lo)
            return 1
        if nxt is None or nxt in LINEAR:
            # the bound as a hard cap: a solution proves it reached (and optimises the next stage)
            z_dom[1] = lo
            t_b = self.budget(0.5 if nxt is not None or self.tolerance is not None else 0.9)
            cert = self.certified(nxt, lo) if nxt is not None else None
            val: int | None
            bnd: int | None
            if cert is not None:  # the start reaches both bounds: proven without a search
                st, val, bnd, dt = "optimal", cert, cert, 0.0
            elif nxt is not None:
                st, val, bnd, dt = self.linear(nxt, t_b, lo)
            else:
                st, val, bnd, dt = self.solve(None, t_b)
            if st in ("optimal", "feasible"):
                self.report("max_load", lo, lo, True, dt)
                z_dom[0] = z_dom[1] = lo
                self.z_opt = lo
                if self.tolerance is not None:
                    self._window(lo)
                    return 1
                if nxt is None:
                    return 1
                assert val is not None and bnd is not None
                # a restricted model's own bound (or optimum) says nothing of the full model
                bnd = max(0 if self.restricted else bnd, self.valid_bound(nxt, lo))
                proven = (st == "optimal" and not self.restricted) or bnd >= val
                if not proven:  # the next stage gets its own budget, from the probe's solution
                    return 1
                m.fix(nxt, val, proven)
                self.report(nxt, val, min(bnd, val), proven, 0.0)
                return 2
            z_dom[1] = max(lo, self.cap_z)
            if st == "infeasible" and not self.restricted:
                z_dom[0] = lo + 1
                if lo + 1 > self.cap_z:
                    raise InfeasibleError("no assignment keeps every load within the cap")
        st, val, bnd, dt = self.solve("max_load", self.budget(weight))
        if val is None or bnd is None:
            if self.current is None:
                raise InfeasibleError("no assignment found within the time limit")
            val, bnd, st = m.values(self.current)["max_load"], int(z_dom[0]), "feasible"
        bnd = min(val, max(0 if self.restricted else bnd, int(z_dom[0]), self.lb_z))
        proven = (st == "optimal" and not self.restricted) or val == bnd
        self.report("max_load", val, val if proven else bnd, proven, dt)
        self.z_opt = val if proven else None
        if self.tolerance is not None:
            self._window(val)
        else:
            m.fix("max_load", val, proven)
        return 1

    def _window(self, z: int) -> None:
        """Later stages keep every load within EPS above the max load ``z`` found (proven or not): never empty."""
        assert self.tolerance is not None
        self.m.z_dom[0] = self.lb_z
        self.m.z_dom[1] = max(z, math.floor(Fraction(z) * (1 + Fraction(self.tolerance).limit_denominator(10**9))))
        hint = self.window_hint  # used when complete (every item inside its candidates) and within the window
        if hint is None or sum(hint.values()) != self.ic.total_items or not self.m.fits(hint):
            return
        if self.current is None or self.m.values(hint)["moves"] < self.m.values(self.current)["moves"]:
            self.current = hint

    def stage(self, i: int, weight: float) -> None:
        """Stage ``stages[i]`` other than ``max_load``."""
        name, m = self.stages[i], self.m
        zcap = int(m.z_dom[1])
        if name in ("moves", "racks", "topic_balance") and int(m.dom[name][1]) == 0:
            # nothing to optimise (no term can be non-zero): proven at once
            self.report(name, 0, 0, True, 0.0)
            return
        if name == "sum_sq":
            m.sum_sq()
        cert = self.certified(name, zcap)
        if cert is not None:  # the current solution meets a bound valid for every assignment
            m.fix(name, cert, True)
            self.report(name, cert, cert, True, 0.0)
            return
        t_b = self.budget(weight)
        if name == "sum_sq" and self.current is not None and set(self.stages[:i]) <= {"max_load", "moves"}:
            # a levelled hint within the earlier stages' caps: CP-SAT then mostly has to close the bound
            t_l = time.perf_counter()
            self.current = levelled(self.current, self.cand, self.ic, self.sc, zcap, int(m.dom["moves"][1]),
                                     None if self.deterministic else t_l + LEVEL_SHARE * t_b,
                                     int(LEVEL_SHARE * t_b * STEPS_PER_SECOND) if self.deterministic else None)
            if not self.deterministic:
                t_b = max(0.02, t_b - (time.perf_counter() - t_l))
        if name in LINEAR and name != "topic_balance":
            st, val, bnd, dt = self.linear(name, t_b, zcap)
        else:
            st, val, bnd, dt = self.solve(name, t_b)
        if val is None or bnd is None:
            if self.current is None:
                raise InfeasibleError("no assignment found within the time limit")
            if name == "topic_balance":
                raise InfeasibleError("no solution for the topic_balance stage within the time limit")
            val, bnd, st = m.model_value(name, self.current), 0, "feasible"
        # the best valid bound: the solver's (full models only) or one valid for every assignment
        bnd = min(val, max(0 if self.restricted else bnd, self.valid_bound(name, zcap)))
        proven = (st == "optimal" and not self.restricted) or bnd == val
        m.fix(name, val, proven)
        self.report(name, val, bnd, proven, dt)

