"""The restricted master LP of the column generation, solved by HiGHS (``highspy``), columns added in place.

Rows: one per free class, ``sum_p cnt_cp lambda_p >= n_c`` (covering: a column
with an item too many still has a cheaper one without it, so covering and
partitioning have the same value); one per member, ``sum_p lambda_p <= 1``
(a member with no column holds only its fixed items).  Minimise the moved
cost.

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
    """

    def __init__(self, count: np.ndarray, n_members: int) -> None:
        import highspy

        self.h = h = _highs()
        inf = highspy.kHighsInf
        self.inf = inf
        self.n_free = int(count.size)
        self.n_members = int(n_members)
        h.addRows(self.n_free, np.asarray(count, dtype=np.float64), np.full(self.n_free, inf), 0, _NO_INT,
                  _NO_INT, _NO_FLOAT)
        h.addRows(self.n_members, np.full(self.n_members, -inf), np.ones(self.n_members), 0, _NO_INT, _NO_INT,
                  _NO_FLOAT)
        self.columns: list[Column] = []
        self.artificial = 0  # artificial columns first in HiGHS's order (:meth:`add_artificial`)
        self.protected = 0  # columns never pruned (:meth:`protect`)
        self.iterations = 0  # simplex iterations of every solve (the work count)

    @property
    def n_rows(self) -> int:
        return self.n_free + self.n_members

    def add(self, cols: Sequence[Column]) -> None:
        """Add columns (one block)."""
        if not cols:
            return
        starts, idx, val, cost = [], [], [], []
        at = 0
        for col in cols:
            rows = [col.idx.astype(np.int32), np.array([self.n_free + col.member], dtype=np.int32)]
            vals = [col.cnt.astype(np.float64), np.ones(1)]
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

    def solve(self) -> tuple[float, np.ndarray, np.ndarray]:
        """Solve; returns the objective, the class duals ``pi >= 0`` and the member duals ``mu <= 0``."""
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
        return float(info.objective_function_value), pi, mu

    def protect(self) -> None:
        """The columns so far are never pruned (the start's: the integer models' hint)."""
        self.protected = len(self.columns)

    def prune(self, limit: int) -> int:
        """Drop non-basic columns of the largest reduced cost until at most ``limit`` are left (after a solve).

        A dropped column may come back from pricing; the bound does not depend on the columns held, only the
        master's solve time does (it grows with them: on ws411-3 at 1% 93 ms a solve at 6,000 columns).
        Returns how many were dropped.
        """
        import highspy

        extra = len(self.columns) - limit
        if extra <= 0:
            return 0
        art = self.artificial
        status = self.h.getBasis().col_status
        rc = np.asarray(self.h.getSolution().col_dual, dtype=np.float64)[art:]
        basic = np.array([status[art + k] == highspy.HighsBasisStatus.kBasic for k in range(len(self.columns))])
        cand = np.flatnonzero(~basic)
        cand = cand[cand >= self.protected]
        drop = np.sort(cand[np.argsort(-rc[cand], kind="stable")[:extra]])
        if drop.size == 0:
            return 0
        self.h.deleteCols(int(drop.size), (drop + art).astype(np.int32))
        gone = set(drop.tolist())
        self.columns = [col for k, col in enumerate(self.columns) if k not in gone]
        return int(drop.size)

    def values(self) -> np.ndarray:
        """The columns' values in the last solution (artificial ones left out)."""
        return np.asarray(self.h.getSolution().col_value, dtype=np.float64)[self.artificial:]
