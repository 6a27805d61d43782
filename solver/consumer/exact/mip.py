"""MIP backend for the linear stages: HiGHS or SCIP as bundled in the OR-Tools wheel (``pywraplp``).

The same class-count model as the CP-SAT engine (:mod:`.engine`): integer
``x[c, m]``, ``sum_m x[c, m] = n_c``, ``r_m sum_c W_c x[c, m] <= Z``, and one
variable per linear stage objective whose bounds carry the earlier stages'
results.  The previous stage's solution is passed as a hint (warm start).
Time limits are wall-clock: a stage that hits its limit is not reproducible
(the CP-SAT backend is, with ``deterministic``).
"""

from __future__ import annotations

import math
import time
from typing import Any

from solver.errors import InfeasibleError
from solver.consumer.items import ItemClasses

SOLVER_IDS = {"highs": "HIGHS", "scip": "SCIP"}


class MipModel:
    """A class-count MIP kept between stages."""

    def __init__(self, backend: str, ic: ItemClasses, cand: list[list[int]], wint: list[int], ratio: list[int],
                 *, mv_terms: list[tuple[int, int, int]], racks: list[tuple[int, int, int]], seed: int = 0) -> None:
        from ortools.linear_solver import pywraplp

        solver = pywraplp.Solver.CreateSolver(SOLVER_IDS[backend])
        if solver is None:
            raise InfeasibleError(f"the {backend} MIP solver is not available in this OR-Tools build")
        self.solver = solver
        self.backend = backend
        self.seed = seed
        self.last: dict[tuple[int, int], int] | None = None
        inf = solver.infinity()
        self.x: dict[tuple[int, int], Any] = {}
        rows: list[list[Any]] = [[] for _ in range(ic.n_members)]
        for c, members in enumerate(cand):
            cnt = int(ic.count[c])
            vs = []
            for m in members:
                v = solver.IntVar(0, cnt, "")
                self.x[c, m] = v
                vs.append(v)
                if wint[c]:
                    rows[m].append(wint[c] * v)
            solver.Add(solver.Sum(vs) == cnt)
        self.z = solver.IntVar(0, inf, "z")
        for m, row in enumerate(rows):
            if row:
                solver.Add(ratio[m] * solver.Sum(row) <= self.z)
        self.obj: dict[str, Any] = {"max_load": self.z}
        for name, terms in (("moves", mv_terms), ("racks", racks)):
            v = solver.IntVar(0, inf, name)
            solver.Add(v == solver.Sum([k * self.x[c, m] for c, m, k in terms if k]))
            self.obj[name] = v

    def solve_stage(self, name: str, hint: dict[tuple[int, int], int] | None, seconds: float, *,
                    zcap: int, fixed: dict[str, tuple[int, int]]) -> tuple[str, int | None, int | None, float]:
        """Minimise stage ``name`` with ``Z <= zcap`` and earlier stages within ``fixed`` bounds."""
        from ortools.linear_solver import pywraplp

        s = self.solver
        for k, (lo, hi) in fixed.items():
            if k in self.obj and k != name:
                self.obj[k].SetBounds(lo, hi)
        zlo = fixed.get("max_load", (0, zcap))[0]
        self.z.SetBounds(min(zlo, zcap), zcap)
        target = self.obj[name]
        lo, hi = fixed.get(name, (0, s.infinity()))
        target.SetBounds(lo, hi)
        s.Minimize(target)
        if hint:
            vs = list(self.x.values())
            s.SetHint(vs, [float(hint.get(key, 0)) for key in self.x])
        s.SetTimeLimit(max(10, int(seconds * 1000)))
        s.SetNumThreads(1)
        t0 = time.perf_counter()
        st = s.Solve()
        dt = time.perf_counter() - t0
        if st == pywraplp.Solver.INFEASIBLE:
            return "infeasible", None, None, dt
        if st not in (pywraplp.Solver.OPTIMAL, pywraplp.Solver.FEASIBLE):
            return "unknown", None, None, dt
        sol = {key: round(v.solution_value()) for key, v in self.x.items()}
        self.last = {key: k for key, k in sol.items() if k}
        val = round(target.solution_value())
        bnd = math.ceil(s.Objective().BestBound() - 1e-6)
        status = "optimal" if st == pywraplp.Solver.OPTIMAL else "feasible"
        return status, val, (val if status == "optimal" else min(val, bnd)), dt
