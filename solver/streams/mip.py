"""The Streams optimum as an integer program (OR-Tools MathOpt: HiGHS or SCIP, both inside the ortools wheel).

Variables
    * a task **with standbys** (stateful, ``standbys > 0``) has a binary
      ``x[t, c]`` per caught-up client (its active) and a binary ``h[t, c]``
      per client (it holds a replica there): ``sum_c x = 1``,
      ``sum_c h = 1 + standbys``, ``x <= h``; standbys are ``h - x``, so they
      are on distinct clients other than the active's by construction;
    * tasks **without standbys** (stateless, or ``standbys = 0``) are
      *aggregated*: tasks with the same allowed clients, restoration costs,
      previous owners (and cross-rack costs) form one class with an integer
      count ``y[k, c]`` in ``[0, |k|]`` per allowed client,
      ``sum_c y[k, c] = |k|``.  Any split of a class over its clients has the
      same stage values, so the aggregation is exact.

Stages (each an integer-valued linear expression)
    ``active_balance`` ``za >= w_c * actives(c)``; ``total_balance``
    ``zt >= w_c * replicas(c)``; ``restoration`` ``sum cost * h``;
    ``movement`` ``previous actives - kept``; ``cross_rack_traffic`` (when rack
    awareness is on) ``sum ra * x + rs * (h - x)`` in cross-rack partitions.

A stage's value is fixed before the next stage (balance stages as per-client
caps ``floor(z / w_c)``, the others as ``expr <= value``); every stage starts
from the incumbent as a MIP start (solution hint).  The solver's answer is
re-evaluated exactly in Python integers (:func:`solver.streams.optimal.evaluate`)
and accepted only when it is valid and no stage got worse: the MIP's
floating-point tolerances can never leak into the result.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from solver.runtime import run_mathopt
from solver.streams.problem import RACK_STAGE, StreamsProblem

#: Backends by option value (``-O engine=highs|scip``).
BACKENDS = ("highs", "scip")
#: Branch-and-bound nodes per second of stage budget: the *deterministic* work limit of a stage.
NODES_PER_SECOND = 400
#: Relative slack when rounding a MIP dual bound up to the next integer (values are integers).
BOUND_TOL = 1e-9
#: Above this per-thread scale, balance coefficients are too large for a trusted floating-point bound:
#: the MIP's solutions are still used, its balance bounds are not.
TRUSTED_SCALE = 1 << 20


@dataclass
class StageOutcome:
    """What one MIP stage returned.

    Attributes
    ----------
    solution
        ``(active, standby)`` read from the MIP, or ``None`` when it found none.
    bound
        The proven lower bound on the stage (an integer), given the fixed earlier stages.
    optimal
        True when the solver proved its solution optimal.
    limit
        ``"work"`` / ``"time"`` when a limit ended the stage, else ``None``.
    work
        The work the stage used, in the seconds its limit is counted in (nodes over
        :data:`NODES_PER_SECOND`; CP-SAT: its deterministic time), at most its budget: what a
        deterministic run takes from its time limit.
    """

    solution: tuple[list[int], list[list[int]]] | None
    bound: int
    optimal: bool
    limit: str | None
    work: float = 0.0


class StreamsMip:
    """The Streams stages as one MathOpt model (built once, stages fixed one after another).

    Parameters
    ----------
    p
        The problem arrays.
    backend
        ``"highs"`` or ``"scip"``.
    stages
        Stage names that may be minimised or fixed (expressions are built only for these).
    """

    def __init__(self, p: StreamsProblem, backend: str, stages: Sequence[str]) -> None:
        from ortools.math_opt.python import mathopt

        if backend not in BACKENDS:
            raise ValueError(f"unknown MIP backend {backend!r}; known: {', '.join(BACKENDS)}")
        self._mo = mathopt
        self.p = p
        self.backend = backend
        md = mathopt.Model(name="optimal-streams")
        self.model = md
        n, m = p.n_tasks, p.n_clients
        with_sb = [p.stateful[t] and p.standbys > 0 for t in range(n)]
        self.x: dict[tuple[int, int], Any] = {}
        self.h: dict[tuple[int, int], Any] = {}
        act: list[list[Any]] = [[] for _ in range(m)]
        tot: list[list[Any]] = [[] for _ in range(m)]
        restore: list[Any] = []
        kept: list[Any] = []
        rack: list[Any] = []
        ra, rs = p.rack_active, p.rack_standby
        racks = ra is not None and rs is not None
        for t in range(n):
            if not with_sb[t]:
                continue
            xs = {c: md.add_binary_variable(name=f"x{t}_{c}") for c in p.allowed_active[t]}
            hs = {c: md.add_binary_variable(name=f"h{t}_{c}") for c in range(m)}
            md.add_linear_constraint(mathopt.fast_sum(xs.values()) == 1)
            md.add_linear_constraint(mathopt.fast_sum(hs.values()) == 1 + p.standbys)
            for c, v in xs.items():
                md.add_linear_constraint(v <= hs[c])
                self.x[t, c] = v
                act[c].append(v)
                if c in p.prev_active[t]:
                    kept.append(v)
                if racks and ra[t][c] != rs[t][c]:  # type: ignore[index]  # racks: both set
                    # an active on c costs ra; h already charges rs for the replica there
                    rack.append((ra[t][c] - rs[t][c]) * v)  # type: ignore[index]
            for c, v in hs.items():
                self.h[t, c] = v
                tot[c].append(v)
                if p.cost_matrix[t, c]:
                    restore.append(int(p.cost_matrix[t, c]) * v)
                if racks and rs[t][c]:  # type: ignore[index]
                    rack.append(rs[t][c] * v)  # type: ignore[index]
        # tasks without standbys: one integer count per (class, allowed client)
        classes: dict[tuple[Any, ...], list[int]] = {}
        for t in range(n):
            if with_sb[t]:
                continue
            key = (tuple(p.allowed_active[t]), tuple(int(v) for v in p.cost_matrix[t]) if p.stateful[t] else (),
                   tuple(p.prev_active[t]), tuple(ra[t]) if ra is not None else ())
            classes.setdefault(key, []).append(t)
        self.classes: list[tuple[list[int], dict[int, Any]]] = []
        for k, (key, members) in enumerate(classes.items()):
            allowed, _, prev, _ = key
            ys = {c: md.add_integer_variable(lb=0, ub=len(members), name=f"y{k}_{c}") for c in allowed}
            md.add_linear_constraint(mathopt.fast_sum(ys.values()) == len(members))
            t0 = members[0]
            for c, v in ys.items():
                act[c].append(v)
                tot[c].append(v)
                if p.stateful[t0] and p.cost_matrix[t0, c]:
                    restore.append(int(p.cost_matrix[t0, c]) * v)
                if c in prev:
                    kept.append(v)
                if ra is not None and ra[t0][c]:
                    rack.append(ra[t0][c] * v)
            self.classes.append((members, ys))
        self.act_sum = [mathopt.fast_sum(a) for a in act]
        self.tot_sum = [mathopt.fast_sum(a) for a in tot]
        n_prev = sum(1 for pr in p.prev_active if pr)
        self.exprs: dict[str, Any] = {}
        self.z: dict[str, Any] = {}
        wmax = max(p.weight, default=1)
        for name, loads, top in (("active_balance", self.act_sum, n), ("total_balance", self.tot_sum,
                                                                          n * (1 + p.standbys))):
            if name in stages:
                z = md.add_integer_variable(lb=0, ub=wmax * top, name=name)
                for c in range(m):
                    md.add_linear_constraint(p.weight[c] * loads[c] <= z)
                self.z[name] = z
                self.exprs[name] = z
        self.exprs["restoration"] = mathopt.fast_sum(restore)
        self.exprs["movement"] = n_prev - mathopt.fast_sum(kept)
        if racks:
            self.exprs[RACK_STAGE] = mathopt.fast_sum(rack)

    # ------------------------------------------------------------------ fixing and hints

    def fix(self, name: str, value: int) -> None:
        """Keep stage ``name`` at most ``value`` from now on (balance stages as per-client caps)."""
        p, md = self.p, self.model
        if name in ("active_balance", "total_balance"):
            loads = self.act_sum if name == "active_balance" else self.tot_sum
            for c in range(p.n_clients):
                md.add_linear_constraint(loads[c] <= value // p.weight[c])
            if name in self.z:
                md.add_linear_constraint(self.z[name] <= value)
        else:
            md.add_linear_constraint(self.exprs[name] <= value)

    def _hint(self, active: list[int], standby: list[list[int]]) -> Any:
        p = self.p
        values: dict[Any, float] = {}
        for (t, c), v in self.x.items():
            values[v] = 1.0 if active[t] == c else 0.0
        for (t, c), v in self.h.items():
            values[v] = 1.0 if active[t] == c or c in standby[t] else 0.0
        for members, ys in self.classes:
            counts = dict.fromkeys(ys, 0)
            for t in members:
                counts[active[t]] += 1
            for c, v in ys.items():
                values[v] = float(counts[c])
        la = [0] * p.n_clients
        lt = [0] * p.n_clients
        for t in range(p.n_tasks):
            la[active[t]] += 1
            lt[active[t]] += 1
            for c in standby[t]:
                lt[c] += 1
        for name, loads in (("active_balance", la), ("total_balance", lt)):
            if name in self.z:
                values[self.z[name]] = float(max((w * k for w, k in zip(p.weight, loads, strict=True)), default=0))
        return self._mo.SolutionHint(variable_values=values)

    # ------------------------------------------------------------------ solving

    def solve_stage(self, name: str, incumbent: tuple[list[int], list[list[int]]], seconds: float, seed: int,
                    wall_cap: float) -> StageOutcome:
        """Minimise stage ``name`` from ``incumbent`` within a work limit worth ``seconds``.

        The work limit is ``NODES_PER_SECOND * seconds`` branch-and-bound
        nodes (deterministic); ``wall_cap`` seconds of wall clock stop it
        anyway (on a slow or busy machine).
        """
        mo = self._mo
        md = self.model
        expr = self.exprs[name]
        md.minimize(expr)
        cap = max(0.01, wall_cap)
        kw: dict[str, Any] = {}
        if self.backend == "scip":
            kw["threads"] = 1  # SCIP's default; HiGHS takes its thread count from globals only
        params = mo.SolveParameters(
            time_limit=datetime.timedelta(seconds=cap),
            node_limit=max(1, int(NODES_PER_SECOND * seconds)),
            relative_gap_tolerance=0.0,
            absolute_gap_tolerance=0.5,  # every stage value is an integer
            random_seed=int(seed) % (1 << 31),
            enable_output=False,
            **kw,
        )
        solver = mo.SolverType.HIGHS if self.backend == "highs" else mo.SolverType.GSCIP
        res = run_mathopt(mo.solve, md, solver, params=params,
                       model_params=mo.ModelSolveParameters(solution_hints=[self._hint(*incumbent)]))
        reason = res.termination.reason
        limit = None
        if reason == mo.TerminationReason.FEASIBLE or reason == mo.TerminationReason.NO_SOLUTION_FOUND:
            lim = res.termination.limit
            limit = "time" if lim == mo.Limit.TIME else "work"
        dual = res.termination.objective_bounds.dual_bound
        bound = math.ceil(dual - BOUND_TOL * max(1.0, abs(dual))) if math.isfinite(dual) else 0
        optimal = reason == mo.TerminationReason.OPTIMAL
        if name in ("active_balance", "total_balance") and self.p.scale > TRUSTED_SCALE:
            bound, optimal = 0, False
        # a limit that ended the stage used its whole budget; else the nodes it took
        work = seconds if limit else min(seconds, res.solve_stats.node_count / NODES_PER_SECOND)
        if not res.has_primal_feasible_solution():
            return StageOutcome(None, max(bound, 0), False, limit, work)
        return StageOutcome(self._read(res.variable_values()), max(bound, 0), optimal, limit, work)

    def _read(self, values: dict[Any, float]) -> tuple[list[int], list[list[int]]]:
        p = self.p
        active = [-1] * p.n_tasks
        standby: list[list[int]] = [[] for _ in range(p.n_tasks)]
        for (t, c), v in self.x.items():
            if values[v] > 0.5:
                active[t] = c
        for (t, c), v in self.h.items():
            if values[v] > 0.5 and active[t] != c:
                standby[t].append(c)
        for members, ys in self.classes:
            slots = [c for c, v in ys.items() for _ in range(round(values[v]))]
            for i, t in enumerate(members):
                active[t] = slots[i] if i < len(slots) else -1
        return active, standby
