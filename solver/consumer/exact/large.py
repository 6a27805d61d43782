"""The stage driver for models too large for one CP-SAT model: primal search beside valid bounds.

Each stage gets its value from the primal side (:mod:`.primal.search`) and
its bound from :mod:`.bounds`; a stage is proven exactly when the two meet,
so nothing here trusts a solver status.

* ``max_load``: :func:`.primal.search.lower_max_load` against
  :func:`.bounds.max_load_bound`.
* ``moves``: at the cap -- the max load found, or ``(1 + EPS)`` times it
  under a balance tolerance -- :func:`.primal.search.fewer_moves_at` against
  :func:`.bounds.moves_bound` at that cap.
* ``sum_sq``: levelling within the caps (:func:`.primal.local.level`)
  against the even split (:func:`.bounds.sum_sq_bound`).
* ``racks`` / ``topic_balance``: the value of the solution reached; proven
  only at zero (their bound here is 0).

Budget shares of the time limit: ``max_load`` 35%, ``moves`` 50%, the rest
to the remaining stages; a stage that proves early leaves its time to the next.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from fractions import Fraction

import numpy as np

from solver.consumer.exact.bounds import max_load_bound, moves_bound, sum_sq_bound
from solver.consumer.exact.colgen import fewest_moves_at
from solver.consumer.exact.data import Scaled, local_data
from solver.consumer.exact.primal.local import level
from solver.consumer.exact.primal.search import Work, fewer_moves_at, lower_max_load, moved_cost, nl_max
from solver.consumer.items import ItemClasses
from solver.consumer.weighted_cpsat import CpsatOutcome, StageReport

#: Share of the time limit for each stage (what a stage leaves goes to the next).
SHARES = {"max_load": 0.35, "moves": 0.5}
#: Stages this driver takes (``max_load`` first).
TAKES = ("max_load", "moves", "sum_sq", "racks", "topic_balance")


def solve_large(ic: ItemClasses, sc: Scaled, racks: Sequence[str | None], stages: Sequence[str], *,
                time_limit: float, deadline: float, seed: int, deterministic: bool, workers: int,
                tolerance: float | None, topic_balance: Callable[[list[tuple[int, int, int]]], int] | None = None,
                restricted: bool = True, patience: int | None = None,
                given: tuple[np.ndarray, int, int | None] | None = None,
                colgen_seconds: float = 0.0) -> CpsatOutcome:
    """Every stage of ``stages`` (``max_load`` first) by primal search and valid bounds.

    Parameters
    ----------
    ic, sc
        Item classes and their integer data.
    racks
        Member racks.
    stages
        Stage names, ``max_load`` first.
    time_limit, deadline
        Seconds for the whole solve and the ``time.perf_counter()`` instant it must end by.
    seed
        Seeds the windows and the random choices.
    deterministic
        Work counted in steps and windows instead of the clock (reproducible).
    workers
        CP-SAT workers per window (wall-clock mode).
    tolerance
        ``EPS``: later stages keep every load within ``(1 + EPS)`` times the max load found.
    topic_balance
        The ``topic_balance`` value of a solution given as flows (needed when that stage is asked for).
    restricted
        Reported as ``CpsatOutcome.restricted``: whether one CP-SAT model was too large.
    patience
        Stop the moves search after this many windows in a row without a gain (``None``: use the whole
        share; the engine sets it, :data:`.budgets.HYBRID_PATIENCE`).
    given
        ``(counts, zcap, moves_cap)``: a solution found by an earlier solve, the max-load cap and the
        moved-cost cap (scaled; ``None``: none) the later stages keep; ``stages`` then leaves out
        ``max_load`` and the search starts from that solution (kept unless something better is found).
    colgen_seconds
        Budget of the moves stage's column generation (:mod:`.colgen`: a bound and an assignment from its
        columns), before the window search; counted seconds in deterministic mode, else its share of the
        clock left (``0``: none).

    Returns
    -------
    CpsatOutcome
    """
    t0 = time.perf_counter()
    data = local_data(ic, sc)
    handed: list[float] = []  # deterministic mode: the counted work handed to the searches (Work.ledger)
    W = sc.wint
    ratio = sc.ratio
    reports: list[StageReport] = []
    done_at: list[float] = []

    def work(name: str) -> Work:
        share = SHARES.get(name, 1.0)
        if deterministic:
            return Work(max(0.05, time_limit * share), True, 1, ledger=handed)
        left = max(0.02, deadline - time.perf_counter())
        if name == "max_load":
            # work counted from the time limit (not from what is left: that varies), the clock only a safety
            # net: a run with a balance tolerance reaches the max load of the run without one
            return Work(max(0.02, time_limit * share), False, max(1, workers), counted=True)
        rest = sum(SHARES.get(s, 0.15) for s in stages[stages.index(name):])
        return Work(max(0.02, left * share / max(share, rest)), False, max(1, workers))

    units = {"max_load": sc.load_unit, "moves": sc.move_unit, "sum_sq": sc.load_unit * sc.load_unit,
             "racks": Fraction(1), "topic_balance": Fraction(1)}
    total = int(sum(W[c] * int(ic.count[c]) for c in range(ic.n_classes)))

    def values(y: np.ndarray) -> dict[str, int]:
        """Every asked stage's value of ``y`` (scaled integers)."""
        nl = (np.asarray(W, dtype=np.int64) @ y) * np.asarray(ratio, dtype=np.int64)
        out = {"max_load": int(nl.max(initial=0)), "moves": moved_cost(data, y)}
        if "sum_sq" in stages:
            out["sum_sq"] = int(sum(int(v) * int(v) for v in nl.tolist()))
        if "racks" in stages:
            cs, ms = np.nonzero(y)
            out["racks"] = sum(int(y[c, m]) * ic.rack_cost(c, racks[m]) for c, m in zip(cs.tolist(), ms.tolist(),
                                                                                       strict=True))
        if "topic_balance" in stages:
            out["topic_balance"] = topic_balance(_flows(y)) if topic_balance is not None else 0
        return out

    stats = {"colgen_rounds": 0, "colgen_seconds": 0.0}
    moves_bounds: dict[int, int] = {}  # cap -> the column generation's bound there (the CP-SAT stages reuse it)
    fixed: dict[str, int] = {}  # each settled stage's cap: later stages may not make it worse
    bounds: dict[str, int] = {}
    seconds: dict[str, float] = {}

    def keeps(y: np.ndarray | None) -> bool:
        if y is None:
            return False
        v = values(y)
        return all(v[k] <= cap for k, cap in fixed.items())

    if given is None:
        # ---- max_load
        t_s = time.perf_counter()
        lb = max_load_bound(ic, W, ratio)
        pool = lower_max_load(data, lb, work("max_load"))
        x = pool[0]
        z = nl_max(data, x)
        bounds["max_load"] = lb
        zcap = z if tolerance is None else math.floor(Fraction(z) * (1 + Fraction(tolerance).limit_denominator(10**9)))
        seconds["max_load"] = time.perf_counter() - t_s
        done_at.append(time.perf_counter())
        later = list(stages[1:])
    else:
        x, zcap, moves_cap = given
        lb = max_load_bound(ic, W, ratio)
        z = nl_max(data, x)
        pool = [x]
        later = list(stages)
        if moves_cap is not None:
            fixed["moves"] = moves_cap
    fixed["max_load"] = zcap
    x_balanced = x
    for name in later:
        t_s = time.perf_counter()
        if name == "moves":
            bounds["moves"] = moves_bound(ic, W, ratio, sc.owned, sc.own, zcap)
            cg_seconds = colgen_seconds if deterministic else min(colgen_seconds,
                                                                      max(0.02, deadline - time.perf_counter()))

            def refine(best: np.ndarray, others: list[np.ndarray],
                       cg_seconds: float = cg_seconds) -> tuple[np.ndarray, int]:
                # the Dantzig-Wolfe bound, and an assignment from its columns, before the window search
                got = fewest_moves_at(ic, sc, zcap, best, seconds=cg_seconds, deterministic=deterministic,
                                      seed=seed, workers=workers, others=others)
                bounds["moves"] = max(bounds["moves"], got.bound)
                moves_bounds[zcap] = max(moves_bounds.get(zcap, 0), got.bound)
                stats["colgen_rounds"] += got.rounds
                stats["colgen_seconds"] += got.seconds
                return got.solution, got.bound

            got = fewer_moves_at(data, zcap, work("moves"), [p for p in pool if keeps(p)] or [x], seed=seed,
                                 floor=bounds["moves"], patience=patience,
                                 refine=refine if colgen_seconds > 0 else None)
            if keeps(got) and moved_cost(data, got) < moved_cost(data, x):  # type: ignore[arg-type]
                x = got  # type: ignore[assignment]
        elif name == "sum_sq":
            w = work("sum_sq")
            got = level(data, x, zcap, fixed.get("moves", 2**62), deadline=w.deadline(), max_steps=w.steps())
            if keeps(got) and values(got)["sum_sq"] < values(x)["sum_sq"]:
                x = got
            bounds["sum_sq"] = sum_sq_bound(total, ratio)
        elif name in ("racks", "topic_balance"):
            bounds[name] = 0  # not searched here: proven only at zero
        else:  # pragma: no cover - callers pass TAKES only
            raise ValueError(f"stage {name!r} is not taken by the large-model driver")
        fixed[name] = values(x)[name]
        seconds[name] = time.perf_counter() - t_s
        done_at.append(time.perf_counter())
    final = values(x)
    final["max_load"] = min(final["max_load"], z)  # under a tolerance the stage's value is the max load found
    for name in stages:
        v, b = final[name], min(bounds[name], final[name])
        reports.append(StageReport(name, float(v * units[name]), float(b * units[name]), v <= b and sc.exact,
                                   seconds[name]))
    info: dict[str, object] = {"load_unit": float(sc.load_unit), "move_unit": float(sc.move_unit),
                               "lower_bound_max_load": float(lb * sc.load_unit), "backend": "primal",
                               "stage_done_at": done_at, "mip_fallbacks": 0, "mip_proofs": 0, **stats,
                               "moves_bounds": moves_bounds}
    if deterministic:  # counted seconds given out (at least what was used): the engine passes the rest on
        info["counted_seconds"] = sum(handed) + float(stats["colgen_seconds"])
    if given is None and reports[0].proven:
        info["optimal_max_load"] = reports[0].value
    if sc.notes:
        info["notes"] = list(sc.notes)
    return CpsatOutcome(flows=_flows(x), stages=reports, exact=sc.exact, restricted=restricted,
                        seconds=time.perf_counter() - t0, info=info,
                        balanced=_flows(x_balanced) if tolerance is not None else None)


def _flows(x: np.ndarray) -> list[tuple[int, int, int]]:
    cs, ms = np.nonzero(x)
    return [(int(c), int(m), int(x[c, m])) for c, m in zip(cs.tolist(), ms.tolist(), strict=True)]
