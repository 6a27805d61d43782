"""Fewest moved cost at a load cap by column generation: a Dantzig-Wolfe bound and an assignment from its columns.

At a cap on every member's load, fewest moves is a generalised assignment
problem: each member holds a set of items that fits it, each item is held
once, the moved cost is minimised.  Its *Dantzig-Wolfe* relaxation -- one
column per member and set of items that fits it -- is far stronger than the
LP relaxation of the assignment model or the per-owner covers of
:mod:`..bounds.moves`: a member's column respects its own packing, so an item
too large for any member's free room must push others out, and those must
land somewhere too.  On the visible weighted-scale set it proves the 1%
tolerance answers of ws411-5, -16, -19 and -21 optimal (15, 47, 13 and 16
moved), where the cover bounds stopped at 11, 45, 0 and 15 (and -16's answer
was 51).

:func:`fewest_moves_at` runs, within a budget:

1. :func:`.problem.reduce` -- cost fixing against the start's moved cost;
2. :func:`.generate.lower_bound` -- column generation (:mod:`.master` on
   HiGHS, :mod:`.pricing` by a dynamic programme) to a bound valid for every
   assignment within the cap;
3. :mod:`.integer` -- when the bound does not meet the start, assignments from
   the columns (CP-SAT): a compact model over the LP optimum's support, then
   the cheapest choice of columns;
4. another pass from an answer far cheaper than its start (cost fixing then
   leaves a much smaller problem).

Everything is counted work in deterministic mode (the same input gives the
same answer), the wall clock only as a safety net.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver.consumer.exact.colgen.generate import Meter, lower_bound
from solver.consumer.exact.colgen.integer import build_cost, cheapest_of, cheapest_on_support
from solver.consumer.exact.colgen.master import Master
from solver.consumer.exact.colgen.pricing import Column, Pricer, grid_for
from solver.consumer.exact.colgen.problem import MovesProblem, cost_matrix, reduce
from solver.consumer.exact.data import Scaled
from solver.consumer.items import ItemClasses

__all__ = ["MovesAtCap", "fewest_moves_at"]

#: Share of the budget the column generation may take before the integer models get the rest, and the share of
#: that rest for the model over the LP optimum's support (:func:`.integer.cheapest_on_support`).
BOUND_SHARE = 0.8
SUPPORT_SHARE = 0.5
#: Another pass starts from a pass's answer when it moves less than this share of its start, while this share of the
#: budget is left.
RESTART_GAIN = 2.0
RESTART_LEFT = 0.1


@dataclass(frozen=True)
class MovesAtCap:
    """What :func:`fewest_moves_at` found.

    Attributes
    ----------
    bound
        Lower bound on the moved cost of every assignment within the caps (scaled integers).
    solution
        ``[class, member]`` counts of the best assignment known (the start when nothing cheaper was found).
    cost
        Its moved cost (scaled).
    seconds
        Budget used (counted seconds in deterministic mode).
    exact_grid
        Whether pricing was exact (else the bound is that of weights rounded down, still valid).
    rounds
        Pricing rounds of the column generation.
    """

    bound: int
    solution: np.ndarray
    cost: int
    seconds: float
    exact_grid: bool
    rounds: int

    @property
    def proven(self) -> bool:
        return self.cost <= self.bound


def moved(ic: ItemClasses, sc: Scaled, x: np.ndarray) -> int:
    """The scaled moved cost of ``[class, member]`` counts."""
    return int((cost_matrix(ic, sc) * x).sum())


def _nl(sc: Scaled, x: np.ndarray) -> np.ndarray:
    return (np.asarray(sc.wint, dtype=np.int64) @ x) * np.asarray(sc.ratio, dtype=np.int64)


def _columns(prob: MovesProblem, pricer: Pricer, x: np.ndarray) -> list[Column]:
    """The members' sets of a ``[class, member]`` solution that are columns of the reduced problem (a solution
    that moved an item cost fixing keeps home is not an answer of it, but its other members' sets may be)."""
    free = prob.free_counts(x)
    out = []
    for m in range(prob.n_members):
        idx = np.flatnonzero(free[m])
        if idx.size and prob.allowed[m, idx].all():
            col = pricer.column(m, idx, free[m, idx])
            if col.load <= int(prob.room[m]):
                out.append(col)
    return out


def fewest_moves_at(ic: ItemClasses, sc: Scaled, zcap: int, start: np.ndarray, *, seconds: float,
                    deterministic: bool = True, seed: int = 0, workers: int = 1,
                    others: Sequence[np.ndarray] = ()) -> MovesAtCap:
    """Fewest moved cost with every ``NL_m <= zcap``, from ``start``.

    Parameters
    ----------
    ic, sc
        Item classes and their integer data (:func:`..data.scale`).
    zcap
        The cap on every member's load per capacity (scaled).
    start
        ``[class, member]`` counts of an assignment within the caps.
    seconds
        Budget (counted seconds when ``deterministic``).
    deterministic, seed, workers
        As for the exact engine.
    others
        Further assignments within the caps: their members' sets are first columns too (a master that starts
        with more than one set a member converges sooner).

    Returns
    -------
    MovesAtCap
    """
    out = _one_pass(ic, sc, zcap, start, seconds=seconds, deterministic=deterministic, seed=seed,
                    workers=workers, others=others)
    used = out.seconds
    ub = moved(ic, sc, start)
    # a pass that found a far cheaper assignment starts another from it: cost fixing against its moved cost
    # leaves a much smaller problem (ws411-2 at 1%: the support model took 30,976 moved to 28)
    while (not out.proven and out.cost * RESTART_GAIN < ub and seconds - used > RESTART_LEFT * seconds):
        ub = out.cost
        nxt = _one_pass(ic, sc, zcap, out.solution, seconds=seconds - used, deterministic=deterministic, seed=seed,
                        workers=workers, others=others)
        used += nxt.seconds
        keep = nxt if nxt.cost < out.cost else out
        out = MovesAtCap(max(out.bound, nxt.bound), keep.solution, keep.cost, used, out.exact_grid and nxt.exact_grid,
                         out.rounds + nxt.rounds)
    return out


def _one_pass(ic: ItemClasses, sc: Scaled, zcap: int, start: np.ndarray, *, seconds: float, deterministic: bool,
              seed: int, workers: int, others: Sequence[np.ndarray]) -> MovesAtCap:
    """One column generation from ``start`` and the integer models after it (see :func:`fewest_moves_at`)."""
    nl = _nl(sc, start)
    if int(nl.max(initial=0)) > zcap:
        raise ValueError("the start does not keep the cap")
    ub = moved(ic, sc, start)
    meter = Meter(seconds * BOUND_SHARE, deterministic)
    prob = reduce(ic, sc, zcap, ub) if ub > 0 else None
    if prob is None:  # nothing cheaper can exist (or nothing moves)
        return MovesAtCap(ub, start, ub, 0.0, True, 0)
    if prob.n_free == 0:  # cost fixing left one assignment: the fixed items where they are
        x = prob.full(np.zeros((prob.n_members, 0), dtype=np.int64))
        return MovesAtCap(prob.fixed_cost, x, prob.fixed_cost, 0.0, True, 0)
    grid = grid_for(prob)
    pricer = Pricer(prob, grid)
    master = Master(prob.count, prob.n_members)
    # the start's columns where they are columns of the reduced problem; a start that moved an item cost
    # fixing keeps home is not an answer of it, and the master then gets artificial columns, dear enough never to
    # be part of its optimum where anything else covers (cheap ones spoil the duals: on ws411-19 the bound stayed
    # at 0 after 98 rounds where it reaches 13 in 27 without them)
    init = _columns(prob, pricer, start)
    covered = np.zeros(prob.n_free, dtype=np.int64)
    for col in init:
        covered[col.idx] += col.cnt
    seen = {(col.member, col.idx.tobytes(), col.cnt.tobytes()) for col in init}
    extra = []
    for x in others:
        for col in _columns(prob, pricer, x):
            key = (col.member, col.idx.tobytes(), col.cnt.tobytes())
            if key not in seen:
                seen.add(key)
                extra.append(col)
    if (covered < prob.count).any():
        master.add_artificial(float(ub) * (1.0 + float(prob.count.sum())))
    master.add(init)
    master.protect()
    master.add(extra)
    b = lower_bound(prob, pricer, master, meter, target=ub)
    bound = min(ub, b.integer())
    best, best_cost = start, ub
    spent = meter.used()

    def offer(counts: np.ndarray | None) -> None:
        """Keep ``counts`` (free part) if it is a complete assignment within the caps, cheaper than the best."""
        nonlocal best, best_cost
        if counts is None:
            return
        x = prob.full(counts)
        nl = _nl(sc, x)
        cost = moved(ic, sc, x)
        if int(nl.max(initial=0)) <= zcap and cost < best_cost and (x.sum(axis=1) == np.asarray(ic.count)).all():
            best, best_cost = x, cost

    if bound < best_cost:
        # the LP optimum's support first: a compact model over where it puts items, which may combine parts of
        # its columns (ws411-16 at 1%: 47 at once, where the columns alone make 51)
        master.solve()
        values = master.values()
        used = [col for col, v in zip(master.columns, values.tolist(), strict=True) if v > 1e-7]
        if build_cost(used) < seconds - spent:
            counts, det = cheapest_on_support(prob, master.columns, values, prob.free_counts(best),
                                              seconds=max(0.05, (seconds - spent) * SUPPORT_SHARE),
                                              deterministic=deterministic, seed=seed, workers=workers,
                                              below=best_cost - prob.fixed_cost,
                                              bound=max(0, bound - prob.fixed_cost))
            spent += det if deterministic else 0.0
            offer(counts)
    # only columns that can be part of an assignment cheaper than the best (the reduced-cost filter), the
    # start's columns first
    gaps = b.gaps(master.columns) if bound < best_cost else np.zeros(0)
    keep = [k for k in range(len(gaps))
            if k < len(init) or gaps[k] <= (best_cost - 1 - b.value) + 1e-7 * max(1.0, abs(b.value))]
    if (bound < best_cost and best_cost * RESTART_GAIN >= ub  # (a far cheaper one: the next pass takes over)
            and build_cost([master.columns[k] for k in keep]) < seconds - spent):
        cols = [master.columns[k] for k in keep]
        counts, det = cheapest_of(prob, cols, list(range(len(init))), seconds=max(0.05, seconds - spent),
                                  deterministic=deterministic, seed=seed, workers=workers,
                                  below=best_cost - prob.fixed_cost, bound=max(0, bound - prob.fixed_cost))
        spent += det if deterministic else 0.0
        offer(counts)
    if not deterministic:
        spent = meter.used()
    return MovesAtCap(bound, best, best_cost, spent, grid.exact, b.rounds)
