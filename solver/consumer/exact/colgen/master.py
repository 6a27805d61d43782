"""The restricted master LP of the column generation, solved by HiGHS (``highspy``), columns added in place.

Rows: one per free class, ``sum_p cnt_cp lambda_p >= n_c`` (covering: a column
with an item too many still has a cheaper one without it, so covering and
partitioning have the same value); one per member, ``sum_p lambda_p <= 1``
(a member with no column holds only its fixed items); and, when the sum of
squares is capped, ``sum_p dsq_p lambda_p <= S'``.  Minimise the moved cost.

HiGHS keeps its basis between solves, so adding columns and solving again is a
warm start; the primal simplex is used (the old basis stays primal feasible;
on ws411-19 at 1% it proves the start in 44 rounds with 0.14 s of LP time,
where the dual simplex leaves the bound at 4 against 13 in the same budget).
A single thread: the same input gives the same duals.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from solver.consumer.exact.colgen.pricing import Column

__all__ = ["Master"]

_NO_INT = np.array([], dtype=np.int32)
_NO_FLOAT = np.array([], dtype=np.float64)


def _highs() -> Any:
    # the bare core class: the Python wrapper prints a banner on stdout when the first one is made, and stdout
    # carries kassign's answer
    from highspy import _core

    h = _core._Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("simplex_strategy", 4)  # primal simplex: the old basis stays feasible as columns come in
    return h


class Master:
    """The restricted master (see the module docstring).

    Parameters
    ----------
    count
        Free class -> items to cover.
    n_members
        Members (one convexity row each).
    sq_cap
        Right-hand side of the sum-of-squares row (``None``: no such row).
    """

    def __init__(self, count: np.ndarray, n_members: int, sq_cap: float | None = None) -> None:
        import highspy

        self.h = h = _highs()
        inf = highspy.kHighsInf
        self.inf = inf
        self.n_free = int(count.size)
        self.n_members = int(n_members)
        self.has_sq = sq_cap is not None
        h.addRows(self.n_free, np.asarray(count, dtype=np.float64), np.full(self.n_free, inf), 0, _NO_INT,
                  _NO_INT, _NO_FLOAT)
        h.addRows(self.n_members, np.full(self.n_members, -inf), np.ones(self.n_members), 0, _NO_INT, _NO_INT,
                  _NO_FLOAT)
        if sq_cap is not None:
            h.addRows(1, np.array([-inf]), np.array([float(sq_cap)]), 0, _NO_INT, _NO_INT, _NO_FLOAT)
        self.columns: list[Column] = []
        self.artificial = 0  # artificial columns first in HiGHS's order (:meth:`add_artificial`)
        self.iterations = 0  # simplex iterations of every solve (the work count)

    @property
    def n_rows(self) -> int:
        return self.n_free + self.n_members + int(self.has_sq)

    def add(self, cols: Sequence[Column]) -> None:
        """Add columns (one block)."""
        if not cols:
            return
        starts, idx, val, cost = [], [], [], []
        at = 0
        for col in cols:
            rows = [col.idx.astype(np.int32), np.array([self.n_free + col.member], dtype=np.int32)]
            vals = [col.cnt.astype(np.float64), np.ones(1)]
            if self.has_sq:
                rows.append(np.array([self.n_free + self.n_members], dtype=np.int32))
                vals.append(np.array([col.dsq]))
            r = np.concatenate(rows)
            starts.append(at)
            at += r.size
            idx.append(r)
            val.append(np.concatenate(vals))
            cost.append(float(col.cost))
        k = len(cols)
        self.h.addCols(k, np.asarray(cost), np.zeros(k), np.full(k, self.inf), at, np.asarray(starts, dtype=np.int32),
                       np.concatenate(idx), np.concatenate(val))
        self.columns.extend(cols)

    def add_artificial(self, cost: float) -> None:
        """One column per free class covering all its items at ``cost`` each and holding no member: the
        master is then feasible without a known assignment (a solution that uses one is no assignment)."""
        n = self.n_free
        self.h.addCols(n, np.full(n, float(cost)) * 1.0, np.zeros(n), np.full(n, self.inf), n,
                       np.arange(n, dtype=np.int32), np.arange(n, dtype=np.int32), np.ones(n))
        self.artificial = n

    def solve(self) -> tuple[float, np.ndarray, np.ndarray, float]:
        """Solve; returns the objective, the class duals ``pi >= 0``, the member duals ``mu <= 0`` and the
        sum-of-squares price ``rho >= 0`` (0 without that row)."""
        import highspy

        h = self.h
        h.run()
        status = h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:  # pragma: no cover - the start columns are feasible
            raise RuntimeError(f"restricted master: HiGHS status {status}")
        info = h.getInfo()
        self.iterations += int(info.simplex_iteration_count)
        dual = np.asarray(h.getSolution().row_dual, dtype=np.float64)
        pi = np.maximum(dual[:self.n_free], 0.0)
        mu = np.minimum(dual[self.n_free:self.n_free + self.n_members], 0.0)
        rho = max(0.0, -float(dual[-1])) if self.has_sq else 0.0
        return float(info.objective_function_value), pi, mu, rho

    def values(self) -> np.ndarray:
        """The columns' values in the last solution (artificial ones left out)."""
        return np.asarray(self.h.getSolution().col_value, dtype=np.float64)[self.artificial:]
