"""Pricing: one member's best column for given duals, a bounded knapsack over the free classes.

For duals ``pi_c`` (what covering one item of class ``c`` is worth), member
``m``'s best column maximises ``sum_c (pi_c - cost_mc) y_c`` over counts
``0 <= y_c <= n_c`` with ``sum_c W_c y_c <= room_m``.  The value of the best
column bounds the Lagrangian bound, so it must never be underestimated:

* :class:`Grid` counts weights in a unit ``u``: ``floor(W / u)`` and
  ``floor(room / u)``.  Every set that fits in true weights fits on the grid,
  so the grid's optimum is at least the true one (exact when ``u`` divides every
  weight).
* :meth:`Pricer.exact` is a dynamic programme over the grid (binary splitting of
  the counts); :meth:`Pricer.greedy_all` quick columns by profit per weight,
  used before the exact ones are needed.
* A column is always checked in true weights; one the grid let overfill is
  :meth:`Pricer.repair`-ed (least profitable units dropped), so every column
  kept is a real assignment of that member.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.consumer.exact.colgen.problem import MovesProblem

__all__ = ["GRID_CELLS", "Column", "Grid", "Pricer", "grid_for"]

#: Grid cells per member of the dynamic programme: at least this many, more on small problems (up to
#: :data:`GRID_MAX`) while a member's programme over its classes stays within :data:`ROUND_CELLS` a round.  A grid
#: that rounds weights down bounds tight packings loosely (a 48-partition lognormal step at its least max load:
#: a unit of 5 thousandths of the loads left the bound at 0-5 against 3-20 moved).
GRID_CELLS = 4096
GRID_MAX = 2**17
ROUND_CELLS = 8_000_000
#: Seconds of one programme cell, of one piece of a class (its numpy calls) and of one member's column
#: (measured on this 2-core machine over ws411-5, -16, -19 and -21: the work count of :mod:`.generate`).
CELL_COST = 2.5e-9
PIECE_COST = 3e-5
MEMBER_COST = 2e-5


@dataclass(frozen=True)
class Column:
    """One member's set of items: free class indices, counts, true weight, moved cost."""

    member: int
    idx: np.ndarray
    cnt: np.ndarray
    load: int
    cost: int


@dataclass(frozen=True)
class Grid:
    """Weights counted in ``unit`` (rounded down); ``exact`` when the unit divides every weight."""

    unit: int
    exact: bool
    weight: np.ndarray
    room: np.ndarray


def grid_for(prob: MovesProblem, cells: int | None = None) -> Grid:
    """The grid of the pricing programme: the weights' gcd when the rooms fit in ``cells`` of it; else the gcd
    of the weights at least ``room / cells`` (exact for those, the small ones rounded down), if that is coarse
    enough; else ``room / cells``.  ``cells`` defaults to what the problem's size allows (:data:`GRID_CELLS`).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> p = SimpleNamespace(weight=np.array([50_000, 100_000, 1]), room=np.array([1_000_000, 400_000]))
    >>> g = grid_for(p, cells=100)   # the weight-1 item spoils the gcd; the others share 50,000
    >>> g.unit, g.exact, g.weight.tolist(), g.room.tolist()
    (50000, False, [1, 2, 0], [20, 8])
    """
    W = np.asarray(prob.weight, dtype=np.int64)
    room = np.maximum(np.asarray(prob.room, dtype=np.int64), 0)
    if cells is None:
        per_round = max(1, room.size * min(W.size, 64))  # members x the classes a member's programme holds
        cells = min(GRID_MAX, max(GRID_CELLS, ROUND_CELLS // per_round))
    top = int(room.max(initial=0))
    pos = W[W > 0]
    g0 = int(np.gcd.reduce(pos)) if pos.size else 1
    unit = g0
    if top // max(1, g0) > cells:
        base = -(-top // cells)
        big = pos[pos >= base]
        g_big = int(np.gcd.reduce(big)) if big.size else 0
        unit = g_big if g_big >= base else base
    unit = max(1, unit)
    return Grid(unit=unit, exact=bool((W % unit == 0).all()), weight=W // unit, room=room // unit)


class Pricer:
    """Best columns of every member for given duals (see the module docstring).

    Parameters
    ----------
    prob
        The reduced problem.
    grid
        Its pricing grid (:func:`grid_for`).
    """

    def __init__(self, prob: MovesProblem, grid: Grid) -> None:
        self.prob, self.grid = prob, grid
        self.W = np.asarray(prob.weight, dtype=np.int64)
        self.N = np.asarray(prob.count, dtype=np.int64)
        self.cost = np.asarray(prob.cost, dtype=np.float64)
        self.cells = 0  # dynamic-programme cells computed (the work count)
        self.pieces = 0

    # ---- values
    def column(self, m: int, idx: np.ndarray, cnt: np.ndarray) -> Column:
        """The column of ``cnt[k]`` items of free class ``idx[k]`` on member ``m`` (true weight, cost)."""
        load = int(self.W[idx] @ cnt) if idx.size else 0
        cost = int(np.asarray(self.prob.cost[m, idx], dtype=np.int64) @ cnt) if idx.size else 0
        return Column(m, idx, cnt, load, cost)

    def profits(self, m: int, pi: np.ndarray) -> np.ndarray:
        """Per free class, the worth of one item on member ``m`` (``-inf`` where not allowed)."""
        return np.where(self.prob.allowed[m], pi - self.cost[m], -np.inf)

    # ---- the exact programme
    def estimate(self, members: list[int], pi: np.ndarray) -> float:
        """Estimated seconds of :meth:`exact_all` at duals ``pi`` (the work it counts)."""
        ms = np.asarray(members, dtype=np.int64)
        pos = (np.where(self.prob.allowed[ms], pi[None, :] - self.cost[ms], -np.inf) > 0.0)
        pieces = np.floor(np.log2(np.maximum(self.N, 1))).astype(np.int64) + 1
        cells = float((pos * pieces[None, :]).sum(axis=1) @ (self.grid.room[ms] + 1))
        return cells * CELL_COST + float(pieces[pos.any(axis=0)].sum()) * PIECE_COST + len(members) * MEMBER_COST

    def exact_all(self, members: list[int], pi: np.ndarray) -> list[tuple[float, Column]]:
        """For each member of ``members``: an upper bound on its best column's value (exact on an exact grid)
        and a real column (the programme's choice, repaired to fit).

        One dynamic programme over the grid for all members at once, class by class: a class's pieces
        (binary splitting of its count) update only the members for which it is worth something, so a
        numpy call serves every member that wants the class.  A member whose worthwhile items all fit
        takes them without a programme.
        """
        ms = np.asarray(members, dtype=np.int64)
        prof = np.where(self.prob.allowed[ms], pi[None, :] - self.cost[ms], -np.inf)
        pos = prof > 0.0  # every positive profit counts: the value must never be underestimated
        wu = self.grid.weight
        K = self.grid.room[ms]
        fits = ((pos * (wu * self.N)[None, :]).sum(axis=1) <= K) & \
               ((pos * (self.W * self.N)[None, :]).sum(axis=1) <= self.prob.room[ms])
        dp = pos & ~fits[:, None]
        kmax = int(K[~fits].max(initial=0))
        best = np.zeros((len(ms), kmax + 1))
        best[np.arange(kmax + 1)[None, :] > K[:, None]] = -np.inf  # beyond a member's room
        light = dp & (wu == 0)[None, :]  # weightless on the grid: all of them
        value = (np.where(light, prof, 0.0) * self.N[None, :]).sum(axis=1)
        take = np.where(light, self.N[None, :], 0).astype(np.int64)
        steps: list[tuple[int, int, int, np.ndarray, np.ndarray]] = []
        for c in np.flatnonzero((dp & ~light).any(axis=0)).tolist():
            rows = np.flatnonzero(dp[:, c])
            whole = rows.size == len(ms)
            p = prof[rows, c]
            w, k = int(wu[c]), int(self.N[c])
            piece = 1
            while k > 0:
                t = min(piece, k)
                k -= t
                piece *= 2
                ww = w * t
                if ww > kmax:
                    break
                sub = best if whole else best[rows]
                cand = sub[:, :kmax + 1 - ww] + (p * t)[:, None]
                better = cand > sub[:, ww:]
                self.cells += rows.size * (kmax + 1 - ww)
                self.pieces += 1
                if better.any():
                    np.maximum(sub[:, ww:], cand, out=sub[:, ww:])
                    if not whole:
                        best[rows] = sub
                    steps.append((c, t, ww, rows, better))
        at = K.copy()
        value += np.where(fits, 0.0, best[np.arange(len(ms)), np.minimum(K, kmax)])
        value += np.where(fits[:, None] & pos, prof * self.N[None, :], 0.0).sum(axis=1)
        take += np.where(fits[:, None] & pos, self.N[None, :], 0)
        kk = at.copy()
        where = np.full(len(ms), -1, dtype=np.int64)
        for c, t, ww, rows, better in reversed(steps):
            where[rows] = np.arange(rows.size)
            sel = rows[kk[rows] >= ww]
            hit = sel[better[where[sel], kk[sel] - ww]]
            take[hit, c] += t
            kk[hit] -= ww
        out = []
        for i, m in enumerate(members):
            idx = np.flatnonzero(take[i])
            out.append((max(0.0, float(value[i])), self.repair(int(m), idx, take[i, idx], prof[i])))
        return out

    # ---- quick columns
    def greedy_all(self, members: list[int], pi: np.ndarray) -> list[Column]:
        """Quick columns of every member of ``members`` (no bound: candidates only): each member's classes by
        profit per true weight, as many of each as still fit.  The members run side by side in numpy, one step
        per rank in their orders (on ws411-3 at 1% a third of the time a member-by-member loop took)."""
        ms = np.asarray(members, dtype=np.int64)
        prof = np.where(self.prob.allowed[ms], pi[None, :] - self.cost[ms], -np.inf)
        pos = prof > 0.0
        W = self.W
        ratio = np.where(pos, np.where(W > 0, prof / np.maximum(W, 1), np.inf), -np.inf)
        order = np.argsort(-ratio, axis=1, kind="stable")
        npos = pos.sum(axis=1)
        room = np.asarray(self.prob.room, dtype=np.int64)[ms].copy()
        take = np.zeros(prof.shape, dtype=np.int64)
        rows = np.arange(len(ms))
        for j in range(int(npos.max(initial=0))):
            c = order[:, j]
            w, n = W[c], self.N[c]
            k = np.where(w > 0, np.minimum(n, room // np.maximum(w, 1)), n)
            k = np.where(j < npos, np.maximum(k, 0), 0)
            take[rows, c] = k
            room -= k * w
        out = []
        for i, m in enumerate(members):
            idx = np.flatnonzero(take[i])
            out.append(self.column(int(m), idx, take[i, idx]))
        return out

    def repair(self, m: int, idx: np.ndarray, cnt: np.ndarray, prof: np.ndarray) -> Column:
        """The column with the least profitable units dropped until it fits member ``m``'s true room."""
        over = (int(self.W[idx] @ cnt) if idx.size else 0) - int(self.prob.room[m])
        if over > 0:
            cnt = cnt.copy()
            w = self.W[idx]
            for k in np.argsort(np.where(w > 0, prof[idx] / np.maximum(w, 1), np.inf), kind="stable").tolist():
                if over <= 0:
                    break
                if w[k] <= 0:
                    continue
                drop = min(int(cnt[k]), math.ceil(over / int(w[k])))
                cnt[k] -= drop
                over -= drop * int(w[k])
            keep = cnt > 0
            idx, cnt = idx[keep], cnt[keep]
        return self.column(m, idx, cnt)
