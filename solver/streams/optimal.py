"""The Kafka Streams optimum: actives, standbys, balance, restoration, movement, proven stage by stage.

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

Engines
    Flows first (:mod:`solver.streams.flow`): they prove the active balance,
    bound the later stages and usually realise every bound.  Stages they leave
    open go to an exact integer program: the MathOpt model of
    :mod:`solver.streams.mip` on HiGHS (the default, chosen by measurement:
    docs/benchmarks.md) or SCIP, or the CP-SAT model of
    :mod:`solver.streams.cpsat` (``-O engine=highs|scip|cp-sat``;
    ``-O flows=0`` skips the flows).  Each stage starts from the incumbent
    (flow solution, then the previous stage's answer) and its value is fixed
    before the next.  Loads per thread are exact rationals: client ``c``
    weighs ``K / capacity(c)`` with ``K`` the least common multiple of the
    thread counts.

Determinism
    By default the same instance, options, seed and time limit give the same
    assignment on an idle or a busy machine: the flows run to their end, the
    exact model is built when its estimated build takes at most half the time
    limit, and each exact stage's budget is its share of the time limit less
    that estimate and the *counted* work of the stages before it (MIP nodes over
    :data:`solver.streams.mip.NODES_PER_SECOND`, CP-SAT deterministic time);
    the MIP stops at a node limit, CP-SAT at a deterministic time limit, the
    wall clock (20x the budget) only as a safety net.  ``-O deterministic=0``
    opts out for latency (``kassign serve``, the live assignor): budgets are
    then shares of the wall clock left, the flows stop at the deadline, and
    wall-clock caps of 1.25x a stage's budget keep ``--time-limit``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.errors import OptionError
from solver.model import Instance
from solver.options import check_assignor_options
from solver.registry import register
from solver.result import Params, Result, Status
from solver.runtime import SAFETY_FACTOR, SAFETY_SECONDS
from solver.streams.cpsat import StreamsSat
from solver.streams.model import StreamsAssignment
from solver.streams.problem import RACK_STAGE, STAGES, StreamsProblem

__all__ = ["STAGES", "StreamsProblem", "evaluate", "greedy", "is_valid", "solve_streams"]
#: Time limit when the caller gives none (seconds, whole solve).
DEFAULT_TIME_LIMIT = 60.0
#: The backend for stages the flows leave open (measured: docs/benchmarks.md, "Kafka Streams").
DEFAULT_BACKEND = "highs"
#: Seconds to build one MIP / CP-SAT variable in Python (measured: 57 us on a loaded 2-core machine);
#: the exact stages are skipped when building alone would take over half the time left.
BUILD_SECONDS_PER_VAR = 60e-6
#: Seconds a stage may run past the deadline (wall clock) before it is stopped; see :func:`wall_cap`.
DEADLINE_SLACK = 0.5


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
    if p.cost_div == 1 and p.standbys:
        # the same order by numpy: (load key, cost, client) per task, the active's client skipped
        w = np.asarray(p.weight, dtype=np.int64)
        tot = np.asarray(tot_load, dtype=np.int64)
        idx = np.arange(p.n_clients)
        for t in range(p.n_tasks):
            if not p.stateful[t]:
                continue
            ranked = np.lexsort((idx, p.cost_matrix[t], w * (tot + 1)))
            picked = [int(c) for c in ranked[:p.standbys + 1] if c != active[t]][:p.standbys]
            standby[t] = picked
            tot[picked] += 1
        return active, standby
    for t in range(p.n_tasks):
        if not p.stateful[t]:
            continue
        cands = sorted((c for c in range(p.n_clients) if c != active[t]),
                       key=lambda c: (p.weight[c] * (tot_load[c] + 1), p.cost[t][c], c))
        for c in cands[:p.standbys]:
            standby[t].append(c)
            tot_load[c] += 1
    return active, standby


def evaluate(p: StreamsProblem, active: list[int], standby: list[list[int]]) -> dict[str, int]:
    """Stage values of an assignment, exact (Python integers): scaled balance, restoration, movement
    and, when rack awareness is on, ``cross_rack_traffic`` (in cross-rack partitions; times
    ``traffic_cost`` in results)."""
    la = [0] * p.n_clients
    lt = [0] * p.n_clients
    restore = 0
    moved = 0
    rack = 0
    ra, rs = p.rack_active, p.rack_standby
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
        if ra is not None and rs is not None:
            rack += ra[t][c] + sum(rs[t][s] for s in standby[t])
    out = {
        "active_balance": max((p.weight[c] * la[c] for c in range(p.n_clients)), default=0),
        "total_balance": max((p.weight[c] * lt[c] for c in range(p.n_clients)), default=0),
        "restoration": restore,
        "movement": moved,
    }
    if ra is not None:
        out[RACK_STAGE] = rack
    return out


def solver_values(p: StreamsProblem, active: list[int], standby: list[list[int]]) -> dict[str, int]:
    """Stage values in the solvers' integers: as :func:`evaluate`, restoration in ``p.cost_matrix`` units."""
    out = evaluate(p, active, standby)
    if p.cost_div != 1:
        out["restoration"] = sum(int(p.cost_matrix[t, c]) for t in range(p.n_tasks) if p.stateful[t]
                                 for c in (active[t], *standby[t]))
    return out


def is_valid(p: StreamsProblem, active: list[int], standby: list[list[int]]) -> bool:
    """The hard constraints (module docstring) on an assignment in index form."""
    if len(active) != p.n_tasks or len(standby) != p.n_tasks:
        return False
    for t in range(p.n_tasks):
        if active[t] not in p.allowed_active[t]:
            return False
        want = p.standbys if p.stateful[t] else 0
        sb = standby[t]
        if len(sb) != want or len(set(sb)) != want or active[t] in sb:
            return False
        if any(not 0 <= c < p.n_clients for c in sb):
            return False
    return True


def wall_cap(budget: float, deadline: float, deterministic: bool) -> float:
    """Wall-clock seconds a stage with a work budget worth ``budget`` seconds may run.

    ``1.25 * budget + 0.2``, but never past ``deadline + DEADLINE_SLACK``; with
    ``deterministic`` (``-O deterministic=1``) ``20 * budget + 0.2`` and no
    deadline, so that only the work limit ends a stage (bit-reproducible runs,
    the time limit then only a guide).
    """
    if deterministic:
        return 20.0 * budget + 0.2
    return max(0.01, min(1.25 * budget + 0.2, deadline + DEADLINE_SLACK - time.perf_counter()))


def _stages(params: Params, p: StreamsProblem) -> tuple[str, ...]:
    known = p.stage_names()
    if not params.objective:
        return p.default_stages()
    bad = [s for s in params.objective if s not in known]
    if bad:
        raise OptionError(f"unknown Streams objective stage(s) {bad}; known: {', '.join(known)}")
    return tuple(params.objective)


@dataclass(frozen=True)
class _Options:
    engine: str
    flows: bool
    workers: int
    interleave: bool
    deterministic: bool
    full_restore_lag: int | None


def _options(options: Mapping[str, Any]) -> _Options:
    """The ``-O`` options, checked by the one option schema (:data:`solver.options.ASSIGNOR_OPTIONS`)."""
    opts = check_assignor_options("optimal-streams", options)  # unknown keys, bad values: OptionError
    return _Options(opts.get("engine", "auto"), opts.get("flows", True), opts.get("workers", 1),
                    opts.get("interleave", False), opts.get("deterministic", True), opts.get("full_restore_lag"))


@dataclass
class _FlowFacts:
    """What the flow path established, by stage name (only for stages in :data:`STAGES` order)."""

    active: list[int]
    standby: list[list[int]]
    bounds: dict[str, int]
    proven: dict[str, bool]


def _flow_path(p: StreamsProblem, deadline: float, rest: tuple[str, ...],
               known: tuple[list[int], list[list[int]]]) -> _FlowFacts:
    """Flows (:mod:`solver.streams.flow`) for a stage order that starts with both balance stages.

    The active balance is always proven.  The replica relaxation bounds the
    total balance and, when ``rest`` (the stages after the balance stages)
    starts with ``restoration`` (then ``movement``), those stages too;
    ``movement`` anywhere after the balance stages is also bounded by the
    actives alone (:func:`solver.streams.flow.max_kept_actives`, valid at the
    proven balances whatever the other stages).  The
    deadline is checked between flow phases: past it, the facts so far.
    ``known`` (a feasible assignment) caps the binary searches.
    """
    from solver.streams import flow as fl

    start = solver_values(p, *known)
    z_active = fl.min_active_balance(p, start["active_balance"])
    facts = _FlowFacts([], [], {"active_balance": z_active}, {"active_balance": True})
    if time.perf_counter() > deadline:
        return facts
    # any feasible assignment is feasible for the relaxation (it only drops the active caps)
    lb_total = fl.min_total_balance_bound(p, z_active, start["total_balance"])
    facts.bounds["total_balance"] = lb_total
    single_prev = all(len(pr) <= 1 for pr in p.prev_active)
    n_prev = sum(1 for pr in p.prev_active if pr)
    for z_total in fl._candidates(p, lb_total, p.n_tasks)[:8]:
        if time.perf_counter() > deadline:
            break
        rel = fl.replicas(p, z_total, True, z_active)
        if rel is None:
            continue
        at_bound = z_total == lb_total
        act = fl.match_actives(p, rel.holders, z_active)
        if act is not None:
            standby = [[c for c in rel.holders[t] if c != act[t]] for t in range(p.n_tasks)]
        else:
            tries = [fl.actives_first(p, z_active, z_total, rel.holders), fl.actives_first(p, z_active, z_total)]
            built = [b for b in tries if b is not None]
            if not built:
                continue
            act, standby = min(built, key=lambda b: tuple(solver_values(p, b[0], b[1])[s] for s in STAGES))
        vals = solver_values(p, act, standby)
        facts.active, facts.standby = act, standby
        facts.proven["total_balance"] = at_bound and vals["total_balance"] == lb_total
        if at_bound and rest[:1] == ("restoration",):
            # the relaxation's min cost: restoration first, then previous owners kept among the holders
            facts.bounds["restoration"] = rel.restoration
            facts.proven["restoration"] = vals["restoration"] == rel.restoration
            if rest[1:2] == ("movement",) and single_prev and facts.proven["restoration"]:
                facts.bounds["movement"] = n_prev - rel.kept_prev
        if at_bound and facts.proven["total_balance"] and "movement" in rest:
            # given both balances, actives alone: at most max_kept_actives keep their owner (any later stage)
            lb = n_prev - fl.max_kept_actives(p, z_active, z_total)
            facts.bounds["movement"] = max(facts.bounds.get("movement", 0), lb)
        if "movement" in facts.bounds:
            facts.proven["movement"] = vals["movement"] == facts.bounds["movement"]
        return facts
    return facts


def solve_streams(instance: Instance, params: Params) -> Result:
    """Solve the Streams optimum lexicographically (see the module docstring).

    Returns
    -------
    Result
        ``assignment``: a :class:`~solver.streams.model.StreamsAssignment`
        (no warm-ups, ``probing_rebalance`` false); ``objective`` / ``bound``:
        per stage, balance stages in tasks per thread (a stage's bound holds
        given the earlier stages' values); ``status``: optimal when every
        stage is proven, feasible otherwise; ``extra``: ``engine``, ``gap``
        (largest relative gap over the stages), ``stages``, ``proven`` (per
        stage), ``exact`` (false when restoration costs were rounded to fit
        the solvers' integers), ``probing_rebalance``.

    Raises
    ------
    InfeasibleError
        Tasks but no clients.
    UnsupportedInstanceError
        Not a Streams instance.
    OptionError
        An unknown stage, an unknown option or a bad option value (a usage error, exit 2).
    """
    t0 = time.perf_counter()
    opts = _options(params.options)
    p = StreamsProblem.of(instance, opts.full_restore_lag)
    stages = _stages(params, p)
    limit = params.time_limit if params.time_limit is not None else DEFAULT_TIME_LIMIT
    # deterministic: the wall clock only as a safety net, the work counted (see Determinism above)
    deadline = t0 + (SAFETY_FACTOR * limit + SAFETY_SECONDS if opts.deterministic else limit)
    zero = [0] * len(stages)
    if p.n_tasks == 0:
        return _result(p, [], [], Status.OPTIMAL, stages, zero, zero, [True] * len(stages), t0, "none")
    if p.n_clients == 0:
        from solver.errors import InfeasibleError

        raise InfeasibleError("no clients to run the tasks")
    active, standby = greedy(p)
    cheap = obvious_bounds(p)
    bounds = [cheap.get(s, 0) for s in stages]
    proven = [False] * len(stages)
    used = []
    if opts.flows and stages[:2] == STAGES[:2]:
        facts = _flow_path(p, deadline, stages[2:], (active, standby))
        used.append("flow")
        if facts.active:
            active, standby = facts.active, facts.standby
        for k, s in enumerate(stages):
            bounds[k] = max(bounds[k], facts.bounds.get(s, 0))
            proven[k] = facts.proven.get(s, False)
    vals = solver_values(p, active, standby)
    values = [vals[s] for s in stages]
    # a flow proof counts only where the solution in hand attains the bound (the deadline may have cut the flows)
    proven = [pr and v <= b for pr, v, b in zip(proven, values, bounds, strict=True)]
    if not all(proven) and _model_fits(p, limit if opts.deterministic else deadline - time.perf_counter()):
        backend = DEFAULT_BACKEND if opts.engine == "auto" else opts.engine
        used.append(backend)
        # deterministic: the model's build counted at its estimated cost, the stages share the rest
        stage_limit = limit - model_size(p) * BUILD_SECONDS_PER_VAR
        active, standby, values, bounds, proven = _exact_stages(p, opts, backend, stages, (active, standby),
                                                                values, bounds, proven, deadline, params.seed,
                                                                stage_limit)
    # proofs were made in the solvers' integers: report exact restoration (rounded costs: bound * divisor)
    exact = evaluate(p, active, standby)
    for k, s in enumerate(stages):
        if s == "restoration" and p.cost_div != 1:
            values[k] = exact[s]
            bounds[k] = min(bounds[k] * p.cost_div, values[k])
            proven[k] = bounds[k] >= values[k]
    if not p.exact_scale:
        # per-thread weights were rounded up: the balance stages are a surrogate, never claimed proven
        for k, s in enumerate(stages):
            if s in ("active_balance", "total_balance"):
                proven[k] = False
    # lexicographic: a stage is proven only when every earlier stage is (its bound holds given their values)
    for k in range(1, len(stages)):
        proven[k] = proven[k] and proven[k - 1]
    status = Status.OPTIMAL if all(proven) else Status.FEASIBLE
    return _result(p, active, standby, status, stages, values, bounds, proven, t0, "+".join(used) or "none")


def obvious_bounds(p: StreamsProblem) -> dict[str, int]:
    """Lower bounds that hold for every feasible assignment, in the solvers' units (linear time).

    Balance: the average load per thread (rounded up to the scale), for the
    total also the replicas of one task on distinct clients; restoration: per
    stateful task its ``1 + standbys`` cheapest clients; movement: tasks whose
    previous clients may not run them (not caught up while another client is).
    """
    n, m = p.n_tasks, p.n_clients
    total_cap = sum(c.capacity for c in p.spec.clients)
    reps = sum(1 + (p.standbys if p.stateful[t] else 0) for t in range(n))
    out = {"active_balance": -(-p.scale * n // total_cap) if total_cap else 0,
           "total_balance": -(-p.scale * reps // total_cap) if total_cap else 0,
           "restoration": 0,
           "movement": sum(1 for t in range(n) if p.prev_active[t]
                           and not set(p.prev_active[t]) & set(p.allowed_active[t]))}
    out["total_balance"] = max(out["total_balance"], out["active_balance"])
    if n and m:
        k = 1 + p.standbys
        costs = np.sort(p.cost_matrix, axis=1)[:, :k]
        out["restoration"] = int(costs[np.asarray(p.stateful, dtype=bool)].sum())
    return out


def model_size(p: StreamsProblem) -> int:
    """An upper bound on the variables of the exact models (one per task and allowed client, one per task
    and client for tasks with standbys)."""
    return sum(len(p.allowed_active[t]) + (p.n_clients if p.stateful[t] and p.standbys else 0)
               for t in range(p.n_tasks))


def _model_fits(p: StreamsProblem, seconds: float) -> bool:
    """Whether building the exact model takes at most half of ``seconds`` (the time limit when deterministic,
    else the time left; when not, the flows' answer stands)."""
    return model_size(p) * BUILD_SECONDS_PER_VAR <= 0.5 * seconds


def _exact_stages(p: StreamsProblem, opts: _Options, backend: str, stages: tuple[str, ...],
                  incumbent: tuple[list[int], list[list[int]]], values: list[int], bounds: list[int],
                  proven: list[bool], deadline: float, seed: int, limit: float
                  ) -> tuple[list[int], list[list[int]], list[int], list[int], list[bool]]:
    """Stages from the first unproven one by the MIP (``highs`` / ``scip``) or CP-SAT; the incumbent
    only changes to a valid assignment that is no worse on any stage solved so far.

    Each stage gets an even share of what is left: of ``limit`` (the time limit less the model's estimated
    build) less the work the stages before it counted (deterministic), else of the wall clock left before
    ``deadline``.
    """
    model: Any
    if backend == "cp-sat":
        model = StreamsSat(p)
    else:
        from solver.streams.mip import StreamsMip

        model = StreamsMip(p, backend, stages)
    first = proven.index(False)
    for k in range(first):
        model.fix(stages[k], values[k])
    active, standby = incumbent
    spent = 0.0  # counted work of the stages so far (deterministic mode)
    for k in range(first, len(stages)):
        name = stages[k]
        left = limit - spent if opts.deterministic else deadline - time.perf_counter()
        if left > 0.01:
            budget = left / (len(stages) - k)
            cap = wall_cap(budget, deadline, opts.deterministic)
            if backend == "cp-sat":
                out = model.solve_stage(name, (active, standby), budget, seed, cap, opts.workers, opts.interleave)
            else:
                out = model.solve_stage(name, (active, standby), budget, seed, cap)
            spent += out.work
            if out.solution is not None and is_valid(p, *out.solution):
                new = solver_values(p, *out.solution)
                # earlier stages stay at their fixed values, this one must not get worse
                if all(new[stages[j]] <= values[j] for j in range(k + 1)):
                    active, standby = out.solution
                    values[k:] = [new[s] for s in stages[k:]]
            if out.optimal and values[k] <= out.bound:
                proven[k] = True
            bounds[k] = max(bounds[k], out.bound)
        bounds[k] = min(bounds[k], values[k])
        # a bound that meets the value proves the stage even when a limit stopped the solver
        proven[k] = proven[k] or bounds[k] >= values[k]
        if proven[k]:
            bounds[k] = values[k]
        model.fix(name, values[k])
        for j in range(k + 1, len(stages)):
            # bounds of later stages came with the earlier incumbent's values: keep only what still holds
            bounds[j] = min(bounds[j], values[j])
    return active, standby, values, bounds, proven


def _natural(p: StreamsProblem, name: str, v: int) -> float | int:
    if name == RACK_STAGE:
        return v * p.rack_unit
    return v / p.scale if name in ("active_balance", "total_balance") else v


def _result(p: StreamsProblem, active: list[int], standby: list[list[int]], status: Status,
            stages: tuple[str, ...], values: list[int], bounds: list[int], proven: list[bool], t0: float,
            engine: str) -> Result:
    clients = p.spec.clients
    data: dict[str, dict[str, list[str]]] = {c.id: {"active": [], "standby": []} for c in clients}
    for t, task in enumerate(p.spec.tasks):
        if t < len(active) and active[t] >= 0:
            data[clients[active[t]].id]["active"].append(task.id)
        for c in (standby[t] if t < len(standby) else ()):
            data[clients[c].id]["standby"].append(task.id)
    gaps = [(v - b) / max(abs(v), 1) for v, b in zip(values, bounds, strict=True)]
    members = None
    if p.spec.has_members:  # KIP-1071: each process's tasks shared among its members, evenly and stickily
        from solver.streams.members import member_assignment

        members = member_assignment(p.spec, data)
    asg = StreamsAssignment.from_lists(data, False, members)
    return Result(
        asg,
        status,
        tuple(_natural(p, s, v) for s, v in zip(stages, values, strict=True)),
        tuple(_natural(p, s, b) for s, b in zip(stages, bounds, strict=True)),
        time.perf_counter() - t0,
        {"engine": engine, "gap": max(gaps, default=0.0), "stages": list(stages), "proven": list(proven),
         "exact": p.cost_div == 1 and p.exact_scale, "probing_rebalance": False},
    )


@register(
    "optimal-streams",
    kind="solver",
    protocol="streams",
    summary="Streams optimum (flows + MIP): caught-up actives, distinct standbys; balance, restoration, movement",
    source="kassign; KIP-441 constraints",
)
def optimal_streams(instance: Instance, params: Params) -> Result:
    """Registry entry of :func:`solve_streams`."""
    return solve_streams(instance, params)
