"""The Streams optimum as a CP-SAT model (the alternative backend, ``-O engine=cp-sat``).

Booleans ``a[t, c]`` (active, caught-up clients only) and ``s[t, c]``
(standby) per task and client; one expression per stage; solved one stage at a
time from a complete hint, each stage's value fixed before the next.

Determinism: one worker (``-O workers=1``, the default) with ``random_seed``
and a *deterministic* time limit (``max_deterministic_time`` = the stage
budget) gives the same answer on every run; ``-O workers=N -O interleave=1``
runs an interleaved (still deterministic) portfolio of ``N`` subsolvers; ``N``
workers without ``interleave`` run CP-SAT's parallel portfolio (faster on some
models, not reproducible).  The caller's wall-clock cap
(:func:`solver.streams.optimal.wall_cap`) keeps ``--time-limit`` on a busy machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from solver.runtime import run_cpsat, set_work_budget
from solver.streams.problem import RACK_STAGE, StreamsProblem


@dataclass
class SatOutcome:
    """What one CP-SAT stage returned (see :class:`solver.streams.mip.StageOutcome`)."""

    solution: tuple[list[int], list[list[int]]] | None
    bound: int
    optimal: bool
    limit: str | None
    work: float = 0.0


class StreamsSat:
    """The CP-SAT model with one expression per stage.

    Parameters
    ----------
    p
        The problem arrays (restoration costs from ``p.cost_matrix``, the solver's integer costs).
    """

    def __init__(self, p: StreamsProblem) -> None:
        from ortools.sat.python import cp_model  # imported on use: it pulls in pandas (~0.4 s)

        self.p = p
        md = cp_model.CpModel()
        self.model = md
        self.a: list[dict[int, Any]] = []
        self.s: list[dict[int, Any]] = []
        act_terms: list[list[Any]] = [[] for _ in range(p.n_clients)]
        tot_terms: list[list[Any]] = [[] for _ in range(p.n_clients)]
        restore: list[Any] = []
        moved: list[Any] = []
        rack: list[Any] = []
        ra, rs = p.rack_active, p.rack_standby
        n_moved_const = 0
        for t in range(p.n_tasks):
            av = {c: md.new_bool_var(f"a{t}_{c}") for c in p.allowed_active[t]}
            md.add_exactly_one(av.values())
            self.a.append(av)
            sv: dict[int, Any] = {}
            if p.stateful[t] and p.standbys > 0:
                sv = {c: md.new_bool_var(f"s{t}_{c}") for c in range(p.n_clients)}
                md.add(sum(sv.values()) == p.standbys)
                for c, x in av.items():
                    md.add_at_most_one(x, sv[c])
            self.s.append(sv)
            for c, x in av.items():
                act_terms[c].append(x)
                tot_terms[c].append(x)
                if p.stateful[t] and p.cost_matrix[t, c]:
                    restore.append(int(p.cost_matrix[t, c]) * x)
                if ra is not None and ra[t][c]:
                    rack.append(ra[t][c] * x)
            for c, x in sv.items():
                tot_terms[c].append(x)
                if p.cost_matrix[t, c]:
                    restore.append(int(p.cost_matrix[t, c]) * x)
                if rs is not None and rs[t][c]:
                    rack.append(rs[t][c] * x)
            if p.prev_active[t]:
                kept = [av[c] for c in p.prev_active[t] if c in av]
                n_moved_const += 1
                moved.extend(-x for x in kept)
        n = p.n_tasks
        self.za = md.new_int_var(0, max(p.weight, default=1) * n, "za")
        self.zt = md.new_int_var(0, max(p.weight, default=1) * n * (1 + p.standbys), "zt")
        total_cap = sum(p.spec.clients[c].capacity for c in range(p.n_clients))
        replicas = sum(1 + (p.standbys if p.stateful[t] else 0) for t in range(n))
        # obvious bounds: the average load per thread, rounded up to the scale (redundant, so left out where
        # the product would pass CP-SAT's int64 limit: 2^31-1 threads on one client made the model invalid)
        za_ub = max(p.weight, default=1) * n * (1 + p.standbys)
        if total_cap and za_ub * total_cap < 1 << 62 and p.scale * replicas * 2 < 1 << 62:
            md.add(self.za * total_cap >= p.scale * n)
            md.add(self.zt * total_cap >= p.scale * replicas)
        for c in range(p.n_clients):
            if act_terms[c]:
                md.add(p.weight[c] * sum(act_terms[c]) <= self.za)
            if tot_terms[c]:
                md.add(p.weight[c] * sum(tot_terms[c]) <= self.zt)
        self.exprs: dict[str, Any] = {
            "active_balance": self.za,
            "total_balance": self.zt,
            "restoration": sum(restore) if restore else 0,
            "movement": n_moved_const + sum(moved) if moved else n_moved_const,
        }
        if ra is not None:
            self.exprs[RACK_STAGE] = sum(rack) if rack else 0

    def fix(self, name: str, value: int) -> None:
        """Keep stage ``name`` at most ``value`` from now on."""
        expr = self.exprs[name]
        if not isinstance(expr, int):
            self.model.add(expr <= value)

    def hint(self, active: list[int], standby: list[list[int]]) -> None:
        """Replace the model's hint by a complete assignment."""
        md = self.model
        md.clear_hints()
        for t, av in enumerate(self.a):
            for c, x in av.items():
                md.add_hint(x, c == active[t])
            chosen = set(standby[t])
            for c, x in self.s[t].items():
                md.add_hint(x, c in chosen)
        loads_a = [0] * self.p.n_clients
        loads_t = [0] * self.p.n_clients
        for t in range(self.p.n_tasks):
            loads_a[active[t]] += 1
            loads_t[active[t]] += 1
            for c in standby[t]:
                loads_t[c] += 1
        md.add_hint(self.za, max((self.p.weight[c] * loads_a[c] for c in range(self.p.n_clients)), default=0))
        md.add_hint(self.zt, max((self.p.weight[c] * loads_t[c] for c in range(self.p.n_clients)), default=0))

    def solve_stage(self, name: str, incumbent: tuple[list[int], list[list[int]]], seconds: float, seed: int,
                    wall_cap: float, workers: int = 1, interleave: bool = False) -> SatOutcome:
        """Minimise stage ``name`` from ``incumbent`` with a deterministic time limit of ``seconds``
        (``wall_cap`` seconds of wall clock stop it anyway)."""
        from ortools.sat.python import cp_model

        expr = self.exprs[name]
        if isinstance(expr, int):
            return SatOutcome(incumbent, expr, True, None)
        self.hint(*incumbent)
        self.model.minimize(expr)
        solver = cp_model.CpSolver()
        set_work_budget(solver, seconds, wall_cap=wall_cap, seed=seed, workers=workers, interleave=interleave)
        code = run_cpsat(solver, self.model)
        work = min(max(0.01, seconds), float(solver.deterministic_time))
        if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return SatOutcome(None, 0, False, "time", work)
        bound = max(0, math.ceil(solver.best_objective_bound - 1e-9))
        optimal = code == cp_model.OPTIMAL
        return SatOutcome(self.read(solver), bound, optimal, None if optimal else "time", work)

    def read(self, solver: Any) -> tuple[list[int], list[list[int]]]:
        """The assignment of a solved ``cp_model.CpSolver``: active client and standby clients per task."""
        active = [next(c for c, x in av.items() if solver.boolean_value(x)) for av in self.a]
        standby = [[c for c, x in sv.items() if solver.boolean_value(x)] for sv in self.s]
        return active, standby
