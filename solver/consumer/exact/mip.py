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

from solver.consumer.items import ItemClasses
from solver.errors import InfeasibleError
from solver.runtime import run_mip

SOLVER_IDS = {"highs": "HIGHS", "scip": "SCIP"}


class MipModel:
    """A class-count MIP kept between stages."""

    def __init__(self, backend: str, ic: ItemClasses, cand: list[list[int]], wint: list[int], ratio: list[int],
                 *, mv_terms: list[tuple[int, int, int]], racks: list[tuple[int, int, int]], seed: int = 0) -> None:
        from ortools.linear_solver import pywraplp

        solver = pywraplp.Solver.CreateSolver(SOLVER_IDS[backend])
        if solver is None:
            raise InfeasibleError(f"the {backend} MIP solver is not available in this OR-Tools build")
        solver.SuppressOutput()
        if backend == "highs":
            # HiGHS prints a banner on stdout unless told not to (stdout carries the assignment)
            solver.SetSolverSpecificParametersAsString("output_flag=false")
        self.solver = solver
        self.wint = wint
        self.ratio = ratio
        self.n_members = ic.n_members
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
        self.coef: dict[str, dict[tuple[int, int], int]] = {}
        for name, terms in (("moves", mv_terms), ("racks", racks)):
            v = solver.IntVar(0, inf, name)
            solver.Add(v == solver.Sum([k * self.x[c, m] for c, m, k in terms if k]))
            self.obj[name] = v
            self.coef[name] = {(c, m): k for c, m, k in terms if k}

    def _max_load(self, sol: dict[tuple[int, int], int]) -> int:
        load = [0] * self.n_members
        for (c, m), k in sol.items():
            load[m] += k * self.wint[c]
        return max((load[m] * self.ratio[m] for m in range(self.n_members)), default=0)

    def _value(self, name: str, sol: dict[tuple[int, int], int]) -> int | None:
        """A linear stage's value for a solution given as counts."""
        coef = self.coef.get(name)
        if coef is None:
            return None
        return sum(coef.get(key, 0) * k for key, k in sol.items())

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
        if hint and self.backend == "scip":
            vs = list(self.x.values())
            s.SetHint(vs, [float(hint.get(key, 0)) for key in self.x])
        elif hint and name != "max_load" and name in self.obj:
            # HiGHS: pywraplp's SetHint crashes with it (OR-Tools 9.15); the previous solution still
            # bounds the stage from above (a cutoff), which is what the warm start buys for a MIP
            incumbent = self._value(name, hint)
            if incumbent is not None and self._max_load(hint) <= zcap:
                target_hi = min(hi, incumbent) if hi != s.infinity() else incumbent
                self.obj[name].SetBounds(lo, target_hi)
        s.SetTimeLimit(max(10, int(seconds * 1000)))
        s.SetNumThreads(1)
        t0 = time.perf_counter()
        st = run_mip(s)
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
