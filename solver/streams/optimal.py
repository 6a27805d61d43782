"""The Kafka Streams optimum (CP-SAT): actives, standbys, balance, restoration, movement.

Hard constraints
    * every task has exactly one active;
    * every stateful task has ``min(num_standby_replicas, clients - 1)``
      standbys, on distinct clients other than the active's (Kafka cannot place
      more than ``clients - 1`` either; it logs a warning and places fewer);
    * a stateful active goes to a *caught-up* client (ran it as an active, or
      lag <= ``acceptable_recovery_lag``) whenever the task has one.

Lexicographic stages (default order, ``Params.objective`` may reorder or drop)
    1. ``active_balance``: the largest number of active tasks per stream thread;
    2. ``total_balance``: the largest number of tasks (actives + standbys) per thread;
    3. ``restoration``: the state to restore, the sum over newly placed stateful
       actives and standbys of the client's lag on that task: 0 for the
       previous active, the reported lag for a client with local state (a
       previous standby without a reported lag counts 0), and the *full restore*
       ``F(t)`` for a client without state, where ``F(t)`` is the largest lag any
       client reports for ``t``, but at least ``acceptable_recovery_lag + 1`` (so
       a client without state never looks caught up); option
       ``full_restore_lag`` replaces ``F(t)`` by one constant for every task;
    4. ``movement``: actives that leave their previous owner.

Each stage is solved with a complete hint (the greedy solution, then the
previous stage's answer) and its value is fixed (``<=``) before the next one.
Loads per thread are exact rationals: client ``c`` weighs ``K / capacity(c)``
with ``K`` the least common multiple of the thread counts.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

from solver.model import Instance
from solver.registry import UnsupportedInstanceError, register
from solver.result import Params, Result, Status
from solver.streams.model import StreamsAssignment
from solver.streams.problem import StreamsProblem

STAGES = ("active_balance", "total_balance", "restoration", "movement")
#: Time limit when the caller gives none (seconds, whole solve).
DEFAULT_TIME_LIMIT = 60.0


def greedy(p: StreamsProblem) -> tuple[list[int], list[list[int]]]:
    """A complete feasible assignment: least loaded allowed client per replica (cheapest restore on ties).

    Returns the active client of each task and the standby clients of each task.
    """
    act_load = [0] * p.n_clients
    tot_load = [0] * p.n_clients
    active = [-1] * p.n_tasks
    order = sorted(range(p.n_tasks), key=lambda t: (len(p.allowed_active[t]), t))
    for t in order:
        c = min(p.allowed_active[t], key=lambda c: (p.weight[c] * (act_load[c] + 1), p.cost[t][c],
                                                    c not in p.prev_active[t], c))
        active[t] = c
        act_load[c] += 1
        tot_load[c] += 1
    standby: list[list[int]] = [[] for _ in range(p.n_tasks)]
    for t in range(p.n_tasks):
        if not p.stateful[t]:
            continue
        cands = sorted((c for c in range(p.n_clients) if c != active[t]),
                       key=lambda c: (p.weight[c] * (tot_load[c] + 1), p.cost[t][c], c))
        for c in cands[:p.standbys]:
            standby[t].append(c)
            tot_load[c] += 1
    return active, standby


class _Model:
    """The CP-SAT model with one expression per stage."""

    def __init__(self, p: StreamsProblem) -> None:
        from ortools.sat.python import cp_model  # imported on use: it pulls in pandas (~0.4 s)

        self.p = p
        md = cp_model.CpModel()
        self.model = md
        self.a: list[dict[int, cp_model.IntVar]] = []
        self.s: list[dict[int, cp_model.IntVar]] = []
        act_terms: list[list[Any]] = [[] for _ in range(p.n_clients)]
        tot_terms: list[list[Any]] = [[] for _ in range(p.n_clients)]
        restore: list[Any] = []
        moved: list[Any] = []
        n_moved_const = 0
        for t in range(p.n_tasks):
            av = {c: md.new_bool_var(f"a{t}_{c}") for c in p.allowed_active[t]}
            md.add_exactly_one(av.values())
            self.a.append(av)
            sv: dict[int, cp_model.IntVar] = {}
            if p.stateful[t] and p.standbys > 0:
                sv = {c: md.new_bool_var(f"s{t}_{c}") for c in range(p.n_clients)}
                md.add(sum(sv.values()) == p.standbys)
                for c, x in av.items():
                    md.add_at_most_one(x, sv[c])
            self.s.append(sv)
            for c, x in av.items():
                act_terms[c].append(x)
                tot_terms[c].append(x)
                if p.stateful[t] and p.cost[t][c]:
                    restore.append(p.cost[t][c] * x)
            for c, x in sv.items():
                tot_terms[c].append(x)
                if p.cost[t][c]:
                    restore.append(p.cost[t][c] * x)
            if p.prev_active[t]:
                kept = [av[c] for c in p.prev_active[t] if c in av]
                n_moved_const += 1
                moved.extend(-x for x in kept)
        n = p.n_tasks
        self.za = md.new_int_var(0, max(p.weight, default=1) * n, "za")
        self.zt = md.new_int_var(0, max(p.weight, default=1) * n * (1 + p.standbys), "zt")
        total_cap = sum(p.spec.clients[c].capacity for c in range(p.n_clients))
        replicas = sum(1 + (p.standbys if p.stateful[t] else 0) for t in range(n))
        # obvious bounds: the average load per thread, rounded up to the scale
        if total_cap:
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

    def hint(self, active: list[int], standby: list[list[int]]) -> None:
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

    def read(self, solver: cp_model.CpSolver) -> tuple[list[int], list[list[int]]]:
        active = [next(c for c, x in av.items() if solver.boolean_value(x)) for av in self.a]
        standby = [[c for c, x in sv.items() if solver.boolean_value(x)] for sv in self.s]
        return active, standby


def evaluate(p: StreamsProblem, active: list[int], standby: list[list[int]]) -> dict[str, int]:
    """Stage values (scaled balance, restoration, movement) of an assignment."""
    la = [0] * p.n_clients
    lt = [0] * p.n_clients
    restore = 0
    moved = 0
    for t in range(p.n_tasks):
        c = active[t]
        la[c] += 1
        lt[c] += 1
        if p.stateful[t]:
            restore += p.cost[t][c] + sum(p.cost[t][s] for s in standby[t])
        for s in standby[t]:
            lt[s] += 1
        if p.prev_active[t] and c not in p.prev_active[t]:
            moved += 1
    return {
        "active_balance": max((p.weight[c] * la[c] for c in range(p.n_clients)), default=0),
        "total_balance": max((p.weight[c] * lt[c] for c in range(p.n_clients)), default=0),
        "restoration": restore,
        "movement": moved,
    }


def _stages(params: Params) -> tuple[str, ...]:
    if not params.objective:
        return STAGES
    bad = [s for s in params.objective if s not in STAGES]
    if bad:
        raise UnsupportedInstanceError(f"unknown Streams objective stage(s) {bad}; known: {', '.join(STAGES)}")
    return tuple(params.objective)


def _flow_path(p: StreamsProblem) -> tuple[list[int], list[list[int]], list[int], list[bool]] | None:
    """Default stage order by flows (:mod:`solver.streams.flow`): solution, lower bounds, proven flags."""
    from solver.streams import flow as fl

    z_active = fl.min_active_balance(p)
    lb_total = fl.min_total_balance_bound(p, z_active)
    single_prev = all(len(pr) <= 1 for pr in p.prev_active)
    n_prev = sum(1 for pr in p.prev_active if pr)
    for z_total in fl._candidates(p, lb_total, p.n_tasks)[:8]:
        rel = fl.replicas(p, z_total, True)
        if rel is None:
            continue
        at_bound = z_total == lb_total
        bounds = [z_active, lb_total, rel.restoration if at_bound else 0,
                  n_prev - rel.kept_prev if at_bound and single_prev else 0]
        act = fl.match_actives(p, rel.holders, z_active)
        if act is not None:
            standby = [[c for c in rel.holders[t] if c != act[t]] for t in range(p.n_tasks)]
        else:
            tries = [fl.actives_first(p, z_active, z_total, rel.holders), fl.actives_first(p, z_active, z_total)]
            built = [b for b in tries if b is not None]
            if not built:
                continue
            act, standby = min(built, key=lambda b: tuple(evaluate(p, b[0], b[1])[s] for s in STAGES))
        vals = evaluate(p, act, standby)
        values = [vals[s] for s in STAGES]
        proven = [True, at_bound, at_bound and values[2] == bounds[2],
                  at_bound and values[2] == bounds[2] and single_prev and values[3] == bounds[3]]
        return act, standby, bounds, proven
    return None


def solve_streams(instance: Instance, params: Params) -> Result:
    """Solve the Streams optimum lexicographically (see the module docstring).

    In the default stage order, flows first (:mod:`solver.streams.flow`): they
    prove the active balance, bound the other stages and usually realise every
    bound (then the result is proven without CP-SAT); stages left unproven go
    to CP-SAT with the flow solution as a hint.  Other stage orders use CP-SAT
    throughout.

    Returns
    -------
    Result
        ``assignment``: a :class:`~solver.streams.model.StreamsAssignment`
        (no warm-ups, ``probing_rebalance`` false); ``objective`` / ``bound``:
        per stage, balance stages in tasks per thread; ``status``: optimal when
        every stage is proven, feasible otherwise; ``extra``: ``engine``,
        ``gap`` (largest relative gap over the stages), ``stages``,
        ``probing_rebalance``.
    """
    t0 = time.perf_counter()
    stages = _stages(params)
    full = params.options.get("full_restore_lag")
    p = StreamsProblem.of(instance, int(full) if full is not None else None)
    if p.n_clients == 0:
        if p.n_tasks:
            from solver.errors import InfeasibleError

            raise InfeasibleError("no clients to run the tasks")
        return _result(p, [], [], Status.OPTIMAL, stages, [0] * len(stages), [0] * len(stages), t0, "none")
    limit = params.time_limit if params.time_limit is not None else DEFAULT_TIME_LIMIT
    deadline = t0 + limit
    active, standby = greedy(p)
    bounds = [0] * len(stages)
    proven = [False] * len(stages)
    engine = "cp-sat"
    if stages == STAGES and params.options.get("engine", "auto") != "cp-sat":
        found = _flow_path(p)
        if found is not None:
            active, standby, bounds, proven = found
            engine = "flow" if all(proven) else "flow+cp-sat"
    values = [evaluate(p, active, standby)[s] for s in stages]
    if all(proven):
        return _result(p, active, standby, Status.OPTIMAL, stages, values, values, t0, engine)
    m = _Model(p)
    first = proven.index(False)
    for k in range(first):
        m.model.add(m.exprs[stages[k]] <= values[k])
    for k in range(first, len(stages)):
        name = stages[k]
        expr = m.exprs[name]
        current = evaluate(p, active, standby)[name]
        if not isinstance(expr, int):
            m.hint(active, standby)
            m.model.minimize(expr)
            from ortools.sat.python import cp_model

            solver = cp_model.CpSolver()
            remaining = max(deadline - time.perf_counter(), 0.05)
            solver.parameters.max_time_in_seconds = remaining / (len(stages) - k)
            solver.parameters.num_workers = int(params.options.get("workers", 2))
            solver.parameters.random_seed = params.seed
            code = solver.solve(m.model)
            if code in (cp_model.OPTIMAL, cp_model.FEASIBLE):
                new_active, new_standby = m.read(solver)
                new_val = evaluate(p, new_active, new_standby)[name]
                if new_val <= current:
                    active, standby, current = new_active, new_standby, new_val
                bounds[k] = max(bounds[k], math.ceil(solver.best_objective_bound - 1e-9))
                proven[k] = proven[k] or code == cp_model.OPTIMAL
            m.model.add(expr <= current)
        else:
            proven[k] = True
        values[k] = current
        bounds[k] = current if proven[k] else min(bounds[k], current)
        # a bound that meets the value proves the stage even when CP-SAT stopped at its time limit
        proven[k] = proven[k] or bounds[k] >= current
    status = Status.OPTIMAL if all(proven) else Status.FEASIBLE
    return _result(p, active, standby, status, stages, values, bounds, t0, engine)


def _natural(p: StreamsProblem, name: str, v: int) -> float | int:
    return v / p.scale if name in ("active_balance", "total_balance") else v


def _result(p: StreamsProblem, active: list[int], standby: list[list[int]], status: Status,
            stages: tuple[str, ...], values: list[int], bounds: list[int], t0: float, engine: str) -> Result:
    clients = p.spec.clients
    data: dict[str, dict[str, list[str]]] = {c.id: {"active": [], "standby": []} for c in clients}
    for t, task in enumerate(p.spec.tasks):
        if t < len(active) and active[t] >= 0:
            data[clients[active[t]].id]["active"].append(task.id)
        for c in (standby[t] if t < len(standby) else ()):
            data[clients[c].id]["standby"].append(task.id)
    gaps = [(v - b) / max(abs(v), 1) for v, b in zip(values, bounds, strict=True)]
    asg = StreamsAssignment.from_lists(data, False)
    return Result(
        asg,
        status,
        tuple(_natural(p, s, v) for s, v in zip(stages, values, strict=True)),
        tuple(_natural(p, s, b) for s, b in zip(stages, bounds, strict=True)),
        time.perf_counter() - t0,
        {"engine": engine, "gap": max(gaps, default=0.0), "stages": list(stages), "probing_rebalance": False},
    )


@register(
    "optimal-streams",
    kind="solver",
    protocol="streams",
    summary="Streams optimum (CP-SAT): caught-up actives, distinct standbys; balance, restoration, movement",
    source="kassign; KIP-441 constraints",
)
def optimal_streams(instance: Instance, params: Params) -> Result:
    """Registry entry of :func:`solve_streams`."""
    return solve_streams(instance, params)
