"""Flow certificates for the Streams optimum's default stage order.

Exact pieces, each an OR-Tools min-cost-flow / max-flow:

* **Active balance.**  Whether every task can get an active within per-client
  limits ``floor(Z / w_c)`` is a bipartite flow (tasks -> allowed clients);
  binary search over the possible values of ``Z`` gives the optimum with a
  proof (the next lower value is infeasible).
* **Replica relaxation.**  Dropping only the per-client *active* limits
  leaves a flow: every stateful task sends one unit (its active) to one of its
  caught-up clients and ``standbys`` units to other clients, all on distinct
  clients (unit-capacity arcs, one node per task and caught-up client);
  every stateless task sends one unit anywhere; clients take at most
  ``floor(Z_T / w_c)``.  Its feasibility bounds ``total_balance`` from below;
  its min cost (restoration first, then a reward for keeping a previous
  active's client among the holders) bounds ``restoration`` and ``movement``:
  a solution with the same restoration keeps at most as many previous owners.
  The reward passes through a *kept* node per client whose capacity is the
  client's active limit less the tasks that can only run there (and did
  not): a kept task's active is on its previous owner, so no client keeps
  more actives than it may run.  Without that limit the bound was 0 whenever
  every previous owner could still hold a replica (a 10,000-task group with
  158 forced moves: bound 0, now 157; checked against exhaustive search on
  tiny groups, tests/solver/streams/test_flow_bounds.py).
* **Realisation.**  The relaxation's holders become an assignment when the
  actives can be matched to caught-up holders within the active limits (a
  second flow, preferring previous owners).  When it succeeds at the bounds,
  every stage is proven optimal; otherwise the exact integer program
  (:mod:`solver.streams.mip`, or CP-SAT) takes over from this solution as a
  warm start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from ortools.graph.python import min_cost_flow

if TYPE_CHECKING:
    from solver.streams.problem import StreamsProblem


def _solve(tails: list[int] | np.ndarray, heads: list[int] | np.ndarray, caps: list[int] | np.ndarray,
           costs: list[int] | np.ndarray, n_nodes: int,
           src: int, snk: int, demand: int) -> tuple[int, np.ndarray, int]:
    f = min_cost_flow.SimpleMinCostFlow()
    arcs = f.add_arcs_with_capacity_and_unit_cost(
        np.asarray(tails, dtype=np.int32), np.asarray(heads, dtype=np.int32),
        np.asarray(caps, dtype=np.int64), np.asarray(costs, dtype=np.int64))
    f.set_node_supply(src, demand)
    f.set_node_supply(snk, -demand)
    f.solve_max_flow_with_min_cost()
    return int(f.maximum_flow()), np.asarray(f.flows(arcs)), int(f.optimal_cost())


def _candidates(p: StreamsProblem, lo: int, per_client_max: int) -> list[int]:
    vals = {w * k for w in set(p.weight) for k in range(per_client_max + 1)}
    return sorted(v for v in vals if v >= lo)


def active_caps(p: StreamsProblem, z: int) -> list[int]:
    """Per-client limits ``floor(z / w_c)`` (at most the number of tasks)."""
    return [min(z // w, p.n_tasks) for w in p.weight]


def actives_fit(p: StreamsProblem, z: int) -> bool:
    """Can every task get an active on an allowed client with per-thread load <= ``z``?"""
    caps = active_caps(p, z)
    src, snk = p.n_tasks + p.n_clients, p.n_tasks + p.n_clients + 1
    tails, heads, cap, cost = [], [], [], []
    for t in range(p.n_tasks):
        tails.append(src)
        heads.append(t)
        cap.append(1)
        cost.append(0)
        for c in p.allowed_active[t]:
            tails.append(t)
            heads.append(p.n_tasks + c)
            cap.append(1)
            cost.append(0)
    for c in range(p.n_clients):
        tails.append(p.n_tasks + c)
        heads.append(snk)
        cap.append(caps[c])
        cost.append(0)
    flow, _, _ = _solve(tails, heads, cap, cost, snk + 1, src, snk, p.n_tasks)
    return flow == p.n_tasks


def _smallest(values: list[int], ok: Callable[[int], bool], known: int | None = None) -> int | None:
    """The smallest value with ``ok``; ``known``: a value known to be ok (a feasible solution's), which
    caps the search and is not tested again."""
    if known is not None:
        values = [v for v in values if v <= known]
    lo, hi = 0, len(values) - 1
    if hi < 0 or (values[hi] != known and not ok(values[hi])):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(values[mid]):
            hi = mid
        else:
            lo = mid + 1
    return values[lo]


def min_active_balance(p: StreamsProblem, known: int | None = None) -> int:
    """The optimal ``active_balance`` (scaled), proven by flows; ``known``: the value of a feasible
    assignment (caps the binary search)."""
    total_cap = sum(p.spec.clients[c].capacity for c in range(p.n_clients))
    lo = -(-p.scale * p.n_tasks // total_cap) if total_cap else 0
    z = _smallest(_candidates(p, lo, p.n_tasks), lambda z: actives_fit(p, z), known)
    assert z is not None, "every task fits when one client may take all"
    return z


@dataclass
class Relaxation:
    """Holders per task from the replica relaxation and its cost parts."""

    holders: list[list[int]]
    restoration: int
    kept_prev: int
    #: with the kept gadget: the tasks whose unit took a kept arc (their previous owner keeps the active)
    kept_tasks: list[int] | None = None


def _task_client_arcs(p: StreamsProblem) -> tuple[np.ndarray, np.ndarray]:
    n, m = p.n_tasks, p.n_clients
    return np.repeat(np.arange(n), m), n + np.tile(np.arange(m), n)


def replicas(p: StreamsProblem, z_total: int, with_costs: bool, z_active: int | None = None) -> Relaxation | None:
    """Solve the replica relaxation with per-client totals ``floor(z_total / w_c)``; ``None`` if infeasible.

    Every stateful task with caught-up clients sends one unit (its active)
    from an *active* node that reaches only those clients and its standbys
    from a *standby* node that reaches every client; a unit-capacity node per
    (task, caught-up client) keeps the replicas on distinct clients.  Only the
    per-client active limits are relaxed.

    With costs, a replica on a previous owner may count as *kept* (cost -1
    under the restoration, which is scaled by ``tasks + 1``).  With
    ``z_active`` (the active balance every solution meets) the kept replicas
    on client ``c`` pass through one node of capacity
    ``floor(z_active / w_c) - |G_c|``, ``G_c`` the tasks whose only caught-up
    client is ``c`` and that did not run there: a kept task runs its active
    on ``c``, and so do the tasks of ``G_c``.  Every feasible assignment is a
    flow of this network whose kept units are its kept actives, so
    ``Relaxation.kept_prev`` bounds those from above at the relaxation's
    restoration (the movement bound of :func:`solver.streams.optimal._flow_path`).
    """
    n, m = p.n_tasks, p.n_clients
    big = n + 1
    anchored = [t for t in range(n) if p.stateful[t] and len(p.allowed_active[t]) < m]
    # nodes: tasks 0..n-1 (the standby node for anchored tasks, the only node otherwise),
    # clients n..n+m-1, active nodes, pair nodes, source, sink, then (kept gadget) kept(c), q(t, c)
    pairs = [(t, c) for t in anchored for c in p.allowed_active[t]]
    pair_base = n + m + len(anchored)
    src = pair_base + len(pairs)
    snk = src + 1
    gadget = with_costs and z_active is not None
    stateful = np.asarray(p.stateful)
    supply = np.where(stateful, 1 + p.standbys, 1).astype(np.int64)
    demand = int(supply.sum())
    in_pair = np.zeros((n, m), dtype=bool)
    pt = np.asarray([t for t, _ in pairs], dtype=np.int64)
    pc = np.asarray([c for _, c in pairs], dtype=np.int64)
    in_pair[pt, pc] = True
    anchored_mask = np.zeros(n, dtype=bool)
    anchored_mask[anchored] = True
    # (task, previous owner) arcs end in q(t, c) under the gadget: q -> c (cost 0), q -> kept(c) (cost -1)
    qt, qc = np.nonzero(p.prev_matrix > 0) if gadget else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    k_base = snk + 1
    q_base = k_base + m
    q_id = np.full((n, m), -1, dtype=np.int32) if gadget else None
    if q_id is not None:
        q_id[qt, qc] = np.arange(qt.size, dtype=np.int32)

    def head_of(t: np.ndarray, c: np.ndarray) -> np.ndarray:
        h = (n + c).astype(np.int32)
        if q_id is not None:
            q = q_id[t, c]
            h = np.where(q >= 0, q_base + q, h).astype(np.int32)
        return h

    def cost_of(t: np.ndarray, c: np.ndarray) -> np.ndarray:
        if not with_costs:
            return np.zeros(t.size, dtype=np.int64)
        base = p.cost_matrix[t, c] * big
        return base if gadget else base - p.prev_matrix[t, c]

    net = _Network()
    net.add(np.full(n, src), np.arange(n), supply - anchored_mask.astype(np.int64), 0)
    # task -> client arcs (outside the pairs), added by chunks of tasks to keep the peak memory low
    off_tc = net.count
    step = max(1, (1 << 20) // max(m, 1))
    for lo in range(0, n, step):
        tt, cc = np.nonzero(~in_pair[lo:lo + step])
        tt += lo
        net.add(tt, head_of(tt, cc), 1, cost_of(tt, cc))
    n_tc = net.count - off_tc
    net.add(n + np.arange(m), np.full(m, snk), np.asarray(active_caps(p, z_total), dtype=np.int64), 0)
    off_pair = net.count
    if pairs:
        an = n + m + np.arange(len(anchored))
        pn = pair_base + np.arange(len(pairs))
        a_of = np.zeros(n, dtype=np.int64)
        a_of[anchored] = an
        net.add(np.full(len(anchored), src), an, 1, 0)
        net.add(a_of[pt], pn, 1, 0)
        net.add(pt, pn, 1, 0)
        off_pair = net.count
        net.add(pn, head_of(pt, pc), 1, cost_of(pt, pc))
    off_q = net.count
    if gadget:
        assert z_active is not None
        forced = np.zeros(m, dtype=np.int64)
        for t in range(n):
            if len(p.allowed_active[t]) == 1 and not p.prev_matrix[t, p.allowed_active[t][0]]:
                forced[p.allowed_active[t][0]] += 1
        kcap = np.maximum(0, np.minimum(active_caps(p, z_active), active_caps(p, z_total)) - forced)
        q_nodes = q_base + np.arange(qt.size)
        net.add(q_nodes, n + qc, 1, 0)
        net.add(q_nodes, k_base + qc, 1, -1)
        net.add(k_base + np.arange(m), n + np.arange(m), kcap, 0)
    flow, flows = net.solve(src, snk, demand)
    if flow != demand:
        return None
    held = np.zeros((n, m), dtype=bool)
    held[~in_pair] = flows[off_tc:off_tc + n_tc] > 0
    if pairs:
        held[pt, pc] |= flows[off_pair:off_pair + len(pairs)] > 0
    kept_tasks = None
    if gadget:
        on_k = flows[off_q + qt.size:off_q + 2 * qt.size] > 0
        kept = int(on_k.sum())
        kept_tasks = qt[on_k].tolist()
    else:
        kept = int((held & (p.prev_matrix > 0)).any(axis=1).sum())
    holders = [np.flatnonzero(row).tolist() for row in held]
    restore = int(p.cost_matrix[held & stateful[:, None]].sum())
    return Relaxation(holders, restore, kept, kept_tasks)


class _Network:
    """A min-cost flow built block by block (each block handed to OR-Tools at once, then freed)."""

    def __init__(self) -> None:
        self.f = min_cost_flow.SimpleMinCostFlow()
        self.count = 0

    def add(self, tails: np.ndarray, heads: np.ndarray, caps: int | np.ndarray, costs: int | np.ndarray) -> None:
        """Add arcs ``tails[i] -> heads[i]`` (capacity and unit cost: arrays or one value for all)."""
        k = len(tails)
        if k == 0:
            return
        cap = np.broadcast_to(np.asarray(caps, dtype=np.int64), (k,))
        cost = np.broadcast_to(np.asarray(costs, dtype=np.int64), (k,))
        self.f.add_arcs_with_capacity_and_unit_cost(np.asarray(tails, dtype=np.int32),
                                                    np.asarray(heads, dtype=np.int32),
                                                    np.ascontiguousarray(cap), np.ascontiguousarray(cost))
        self.count += k

    def solve(self, src: int, snk: int, demand: int) -> tuple[int, np.ndarray]:
        """Max flow from ``src`` to ``snk`` (at most ``demand``) at min cost: its value and the arc flows."""
        self.f.set_node_supply(src, demand)
        self.f.set_node_supply(snk, -demand)
        self.f.solve_max_flow_with_min_cost()
        flows = np.asarray(self.f.flows(np.arange(self.count, dtype=np.int32)))
        return int(self.f.maximum_flow()), flows


def actives_first(p: StreamsProblem, z_active: int, z_total: int,
                  holders: list[list[int]] | None = None) -> tuple[list[int], list[list[int]]] | None:
    """A feasible solution within both limits: actives by min-cost flow, then standbys by min-cost
    flow on the remaining room; ``None`` if either flow falls short.

    Without ``holders`` an active costs its restoration (then leaving its
    previous owner costs 1).  With the relaxation's ``holders``, an active on a
    holder is free and one elsewhere costs its restoration minus that of the
    dearest holder it would replace: a repair of the relaxation.
    """
    n, m = p.n_tasks, p.n_clients
    src, snk = n + m, n + m + 1
    big = n + 1
    cap_a = np.minimum(active_caps(p, z_active), active_caps(p, z_total))
    tails, heads, costs = [], [], []
    for t in range(n):
        hs = set(holders[t]) if holders is not None else set()
        dearest = max((int(p.cost_matrix[t, c]) for c in hs), default=0)
        for c in p.allowed_active[t]:
            tails.append(t)
            heads.append(n + c)
            base = 0 if c in hs else int(p.cost_matrix[t, c]) - (dearest if hs else 0)
            costs.append(base * big + (0 if p.prev_matrix[t, c] else 1))
    k = len(tails)
    all_t = np.concatenate([np.full(n, src), np.asarray(tails, dtype=np.int64), n + np.arange(m)])
    all_h = np.concatenate([np.arange(n), np.asarray(heads, dtype=np.int64), np.full(m, snk)])
    caps = np.concatenate([np.ones(n + k, dtype=np.int64), cap_a])
    cost = np.concatenate([np.zeros(n, dtype=np.int64), np.asarray(costs, dtype=np.int64),
                           np.zeros(m, dtype=np.int64)])
    flow, flows, _ = _solve(all_t, all_h, caps, cost, snk + 1, src, snk, n)
    if flow != n:
        return None
    active = [-1] * n
    for i in np.flatnonzero(flows[n:n + k]).tolist():
        active[tails[i]] = heads[i] - n
    loads = np.bincount(np.asarray(active), minlength=m)
    room = np.asarray(active_caps(p, z_total)) - loads
    if (room < 0).any():
        return None
    stateful = np.asarray(p.stateful)
    supply = np.where(stateful, p.standbys, 0)
    demand = int(supply.sum())
    tc_t, tc_h = _task_client_arcs(p)
    tc_cap = np.ones(n * m, dtype=np.int64)
    tc_cap[np.arange(n) * m + np.asarray(active)] = 0  # not beside its own active
    tails2 = np.concatenate([np.full(n, src), tc_t, n + np.arange(m)])
    heads2 = np.concatenate([np.arange(n), tc_h, np.full(m, snk)])
    caps2 = np.concatenate([supply, tc_cap, room])
    costs2 = np.concatenate([np.zeros(n, dtype=np.int64), p.cost_matrix.ravel(), np.zeros(m, dtype=np.int64)])
    flow2, flows2, _ = _solve(tails2, heads2, caps2, costs2, snk + 1, src, snk, demand)
    if flow2 != demand:
        return None
    held = flows2[n:n + n * m].reshape(n, m) > 0
    return active, [np.flatnonzero(row).tolist() for row in held]


def min_total_balance_bound(p: StreamsProblem, z_active: int, known: int | None = None) -> int:
    """Smallest ``total_balance`` (scaled) for which the replica relaxation is feasible: a lower bound.
    ``known``: the total balance of a feasible assignment (caps the binary search)."""
    total_cap = sum(p.spec.clients[c].capacity for c in range(p.n_clients))
    reps = sum(1 + (p.standbys if p.stateful[t] else 0) for t in range(p.n_tasks))
    lo = max(z_active, -(-p.scale * reps // total_cap) if total_cap else 0)
    z = _smallest(_candidates(p, lo, p.n_tasks), lambda z: replicas(p, z, False) is not None, known)
    assert z is not None
    return z


def max_kept_actives(p: StreamsProblem, z_active: int, z_total: int) -> int:
    """The most tasks that can keep their active on a previous owner when every active is on an allowed
    client and client ``c`` runs at most ``min(floor(z_active / w_c), floor(z_total / w_c))`` actives.

    A bipartite min-cost flow (tasks -> allowed clients, -1 per previous owner):
    standbys and restoration are ignored, so ``previous actives - this`` bounds
    the movement of every assignment within those balances.  It sees what the
    replica relaxation's kept limits do not: tasks that can run only on a few
    full clients push kept actives out (Hall's condition, exactly).
    """
    n, m = p.n_tasks, p.n_clients
    src, snk = n + m, n + m + 1
    net = _Network()
    net.add(np.full(n, src), np.arange(n), 1, 0)
    tt = np.repeat(np.arange(n), [len(a) for a in p.allowed_active])
    cc = np.asarray([c for a in p.allowed_active for c in a], dtype=np.int64)
    net.add(tt, n + cc, 1, -(p.prev_matrix[tt, cc] > 0).astype(np.int64))
    net.add(n + np.arange(m), np.full(m, snk),
            np.minimum(active_caps(p, z_active), active_caps(p, z_total)).astype(np.int64), 0)
    flow, flows = net.solve(src, snk, n)
    if flow != n:
        return 0  # no assignment within these balances: nothing to bound (callers pass attained values)
    on = flows[n:n + tt.size] > 0
    return int((p.prev_matrix[tt[on], cc[on]] > 0).sum())


def match_actives(p: StreamsProblem, holders: list[list[int]], z_active: int) -> list[int] | None:
    """Pick each task's active among its caught-up holders within the active limits (previous owner preferred)."""
    caps = active_caps(p, z_active)
    n, m = p.n_tasks, p.n_clients
    src, snk = n + m, n + m + 1
    tails, heads, cap, cost = [], [], [], []
    arcs: list[tuple[int, int]] = []
    for t in range(n):
        tails.append(src)
        heads.append(t)
        cap.append(1)
        cost.append(0)
        start = len(tails)
        allowed = set(p.allowed_active[t])
        for c in holders[t]:
            if c in allowed:
                tails.append(t)
                heads.append(n + c)
                cap.append(1)
                cost.append(0 if c in p.prev_active[t] else 1)
        arcs.append((start, len(tails)))
    for c in range(m):
        tails.append(n + c)
        heads.append(snk)
        cap.append(caps[c])
        cost.append(0)
    flow, flows, _ = _solve(tails, heads, cap, cost, snk + 1, src, snk, n)
    if flow != n:
        return None
    return [next(heads[i] - n for i in range(a, b) if flows[i]) for a, b in arcs]
