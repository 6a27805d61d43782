"""The column generation loop: duals from the master, columns from pricing, the Lagrangian bound.

For any duals ``pi >= 0``, every assignment's moved cost is at least the
*Lagrangian bound*

    ``fixed_cost + sum_c pi_c n_c - sum_m v_m(pi)``,

``v_m`` the value of member ``m``'s best column (at least 0: the empty one),
because the cost of each member's items is at least their worth at ``pi``
less ``v_m``.  Pricing gives an upper bound on each ``v_m``
(:mod:`.pricing`), so the bound is valid whether or not the master has
converged; at convergence it is the master's LP value (the Dantzig-Wolfe
bound, at least the LP relaxation of the assignment model).

The duals priced are smoothed (Wentges): a convex combination of the master's
and of the duals that gave the best bound so far (the *centre*), which starts
at each class's cost of moving; when that finds no column the weight of the
centre is halved (a *mis-price*) down to the master's own duals.  Quick columns
(:meth:`.Pricer.greedy_all`) are tried first; the exact programme runs, and the
bound is computed, when they find few.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from solver import runtime
from solver.consumer.exact.colgen.master import Master
from solver.consumer.exact.colgen.pricing import CELL_COST, MEMBER_COST, PIECE_COST, Column, Pricer
from solver.consumer.exact.colgen.problem import MovesProblem
from solver.runtime import SAFETY_FACTOR, SAFETY_SECONDS

__all__ = ["Bound", "Meter", "lower_bound"]

#: Weight of the centre in the smoothed duals.
SMOOTHING = 0.7
#: Work in seconds (measured on this 2-core machine, as :mod:`.pricing`'s): per simplex iteration and master row,
#: per quick column.
LP_ROW_SECONDS = 1e-7
GREEDY_SECONDS = 1.1e-4
#: The master keeps at most ``PRUNE_AT`` columns a row, and at least :data:`PRUNE_MIN` columns: past that its
#: non-basic columns of the largest reduced cost go, down to ``PRUNE_TO`` a row (and not below ``PRUNE_MIN``).
PRUNE_AT = 6
PRUNE_TO = 3
#: Columns a master always keeps: pruning is for large masters, whose solve time grows with their columns
#: (ws411-3 at 1%: 93 ms a solve at 6,000).  A small one loses nothing by keeping them and its integer models
#: choose from them: pruned past 6 a row, a 43-class tight group (test_phases's generator, lognormal, seed 4)
#: answered 10 moved against its proven 6, unproven after 5 s; unpruned, 6 proven in 0.3 s.
PRUNE_MIN = 4_000
#: Exact pricing every round while an exact round costs at most this many greedy rounds.
EXACT_EVERY = 4.0


@dataclass
class Meter:
    """Work spent against a budget of ``seconds``: counted (deterministic) or on the clock."""

    seconds: float
    deterministic: bool = True
    spent: float = 0.0
    t0: float = 0.0

    def __post_init__(self) -> None:
        self.t0 = time.perf_counter()

    def charge(self, seconds: float) -> None:
        self.spent += seconds

    def used(self) -> float:
        """Seconds used: counted work in deterministic mode, else the clock."""
        return self.spent if self.deterministic else time.perf_counter() - self.t0

    def out(self) -> bool:
        wall = time.perf_counter() - self.t0
        if self.deterministic:
            # the wall clock only as the engine's safety net, far enough out that a loaded machine does not
            # change the answer (:data:`solver.runtime.SAFETY_FACTOR`)
            return self.spent >= self.seconds or wall >= SAFETY_FACTOR * self.seconds + SAFETY_SECONDS
        return wall >= self.seconds


@dataclass
class Bound:
    """The outcome of :func:`lower_bound`.

    Attributes
    ----------
    value
        The best Lagrangian bound on the total moved cost (a float; ``-inf`` before any exact pricing).
    converged
        Whether the master converged (the bound is then the Dantzig-Wolfe bound).
    rounds, exact_rounds
        Pricing rounds, and those with the exact programme.
    duals, values
        The duals of the best bound and each member's best column value there (``v_m``; the reduced-cost
        filter of :func:`.integer.cheapest_of` reads them).
    """

    value: float
    converged: bool
    rounds: int
    exact_rounds: int
    duals: np.ndarray | None = None
    values: dict[int, float] | None = None

    def gaps(self, columns: Sequence[Column]) -> np.ndarray:
        """Per column, how much any assignment that uses it costs above the bound (its reduced cost at the
        bound's duals plus its member's best column value): at least 0, and a column whose gap exceeds
        ``ub - bound`` is in no assignment cheaper than ``ub``."""
        if self.duals is None or self.values is None:
            return np.zeros(len(columns))
        d = self.duals
        return np.array([c.cost - float(d[c.idx] @ c.cnt) + self.values.get(c.member, 0.0) for c in columns])

    def integer(self) -> int:
        """The bound rounded up to the next integer cost (costs are integers), less a float tolerance."""
        v = self.value
        if not math.isfinite(v):  # no exact pricing yet: no bound
            return 0
        return max(0, math.ceil(v - 1e-7 * max(1.0, abs(v))))


def lower_bound(prob: MovesProblem, pricer: Pricer, master: Master, meter: Meter, *,
                target: int | None = None) -> Bound:
    """Column generation until the bound reaches ``target`` (proves it), the master converges or the budget
    runs out.  ``master`` must already hold a feasible set of columns (the incumbent's)."""
    active = [m for m in range(prob.n_members) if prob.allowed[m].any()]
    if not active:  # nothing can move: the fixed items are the whole answer
        return Bound(float(prob.fixed_cost), True, 0, 0)
    N = np.asarray(prob.count, dtype=np.float64)
    # the centre starts at each class's cost of moving: there every member's best column keeps what of its own
    # fits, so the bound there is the sum of the per-owner least-cost covers of the excess (bounds/moves.py),
    # and the first exact round prices the centre itself
    center = np.where(prob.allowed, prob.cost, 0).max(axis=0).astype(np.float64)
    out = Bound(-math.inf, False, 0, 0)
    # exact pricing every round while it costs little beside a round of quick columns (see the loop)
    exact_only = pricer.estimate(active, center) <= EXACT_EVERY * GREEDY_SECONDS * len(active)
    alpha = SMOOTHING
    while not meter.out():
        runtime.check()
        its = master.iterations
        z, pi, mu = master.solve()
        lp_cost = LP_ROW_SECONDS * (master.iterations - its) * master.n_rows
        meter.charge(lp_cost)
        out.rounds += 1

        def improving(col: Column, pi: np.ndarray = pi, mu: np.ndarray = mu) -> bool:
            """Whether ``col`` has a negative reduced cost at the master's duals (it enters the master)."""
            reduced = float(col.cost - pi[col.idx] @ col.cnt - mu[col.member])
            return bool(col.idx.size) and reduced < -1e-7 * (1.0 + abs(col.cost))

        # this round's weight of the centre (halved on a mis-price); the first prices the centre itself, whose
        # bound is the per-owner covers' (:mod:`..bounds.moves`), so the bound starts there
        a = alpha if out.exact_rounds else 1.0
        while True:
            s_pi = a * center + (1 - a) * pi
            new: list[Column] = []
            first = out.exact_rounds == 0
            if not (exact_only or first):
                new = [col for col in pricer.greedy_all(active, s_pi) if improving(col)]
                meter.charge(GREEDY_SECONDS * len(active))
            if exact_only or first or len(new) < max(1, len(active) // 20):
                out.exact_rounds += 1
                cells, pieces = pricer.cells, pricer.pieces
                lb = prob.fixed_cost + float(s_pi @ N)
                values: dict[int, float] = {}
                g = N.copy()  # the subgradient at the smoothed duals: items short of their cover
                for m, (v, col) in zip(active, pricer.exact_all(active, s_pi), strict=True):
                    lb -= v
                    values[m] = v
                    g[col.idx] -= col.cnt
                    if improving(col):
                        new.append(col)
                if a > 0.0:
                    # automatic smoothing (Pessoa et al. 2018): smooth less when the master's duals lie
                    # uphill from the centre, more when not
                    alpha = max(0.0, alpha - 0.1) if float(g @ (pi - center)) > 0 else min(0.9, alpha + 0.1)
                cost_exact = (CELL_COST * (pricer.cells - cells) + PIECE_COST * (pricer.pieces - pieces)
                              + MEMBER_COST * len(active))
                meter.charge(cost_exact)
                # an exact round that costs little more than a round with quick columns (its master solve
                # included) runs every round: its columns are each member's best; on wide grids quick columns
                # go first (ws411-21 at 1%: 4,096 cells a member, proven in 8 rounds)
                exact_only = cost_exact <= EXACT_EVERY * (GREEDY_SECONDS * len(active) + lp_cost)
                if lb > out.value:
                    out.value, out.duals, out.values = lb, s_pi.copy(), values
                    center = s_pi.copy()
                if target is not None and out.integer() >= target:
                    return out
                if out.integer() >= Bound(z + prob.fixed_cost, False, 0, 0).integer():
                    # the bound has reached the master's value rounded up: the LP optimum, which lies between,
                    # rounds up to it too, so no later round raises the integer bound (ws411-16 at 1%: at
                    # round 34, where the loop had gone on to 91 for nothing)
                    out.converged = True
                    return out
                if not new and a == 0.0:
                    out.converged = True
            if new or a == 0.0 or meter.out():
                break
            a = 0.0 if a < 0.1 else a / 2  # a mis-price: nearer the master's own duals
        if out.converged or not new:
            break
        if len(master.columns) > max(PRUNE_MIN, PRUNE_AT * master.n_rows):
            master.prune(max(PRUNE_MIN, PRUNE_TO * master.n_rows))
        master.add(new)
    return out
