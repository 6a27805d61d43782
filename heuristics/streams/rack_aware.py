"""Kafka Streams' rack-aware task assignment (KIP-925), as Kafka ships it (Oct 2024).

Kafka's ``RackAwareTaskAssignor`` with its two graph constructors
(``MinTrafficGraphConstructor``, ``BalanceSubtopologyGraphConstructor``),
solved with Kafka's own min-cost flow (:mod:`heuristics.streams.mincost_flow`).
Tasks and clients are the indices of :class:`~heuristics.streams.client_state.StreamsContext`
(Kafka's ``TaskId`` and ``ProcessId`` orders), so sorted index lists are
Kafka's sorted sets and lists.

**When it is on** (``canEnableRackAwareAssignor``): the strategy is not
``none``, every client has a rack, every task has ``source_racks`` and, when
``num_standby_replicas > 0``, every stateful task has ``changelog_racks``.
(Kafka also turns it off when a replica has no rack; a partition here always
lists its racks, so the instance without rack data is the only such case.)

**Cost** of a task on a client (``getCost``): ``traffic_cost`` for each of its
partitions with no replica on the client's rack -- *source* partitions for an
active, *changelog* partitions for a standby -- plus ``non_overlap_cost`` if
the client does not hold the task in the assignment being optimised; Java
``int`` arithmetic.

**Optimisations** (called by ``high-availability``):

* :meth:`RackAwareTasks.optimize_active`: the tasks given, every client; one
  flow: source -> task (1) -> client, then client -> sink with capacity = the
  client's current number of those tasks (``min_traffic``), or
  task -> (sub-topology, client) -> client -> sink, where a (sub-topology,
  client) node takes at most ``ceil(current / tasks * tasks of the
  sub-topology)`` (``balance_subtopology``, started from Kafka's max flow).
* :meth:`RackAwareTasks.optimize_standby`: up to 4 rounds over every pair of
  clients (process-id order, ``i < j``) on different racks: the standbys
  either could hand to the other (it holds no replica of the task) are
  re-placed by a ``min_traffic`` flow over the two clients, which keeps each
  client's count; rounds stop when a round moves nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from heuristics.streams.client_state import ClientState, StreamsContext
from heuristics.streams.mincost_flow import Graph, java_int

#: Stateless tasks may move freely: ``STATELESS_TRAFFIC_COST`` / ``STATELESS_NON_OVERLAP_COST``.
STATELESS_TRAFFIC_COST = 1
STATELESS_NON_OVERLAP_COST = 0
#: ``STANDBY_OPTIMIZER_MAX_ITERATION``.
STANDBY_MAX_ROUNDS = 4
SOURCE_ID = -1

HasTask = Callable[[ClientState, int], bool]
CostFn = Callable[[int, int, bool], int]


def _has_active(st: ClientState, task: int) -> bool:
    return task in st.active


def _has_standby(st: ClientState, task: int) -> bool:
    return task in st.standby


class _MinTraffic:
    """``MinTrafficGraphConstructor``."""

    def construct(self, clients: Sequence[int], tasks: Sequence[int], states: list[ClientState],
                  task_client: dict[int, int], original: dict[int, int], has: HasTask, cost: CostFn,
                  has_replica: bool) -> Graph:
        _count_original(tasks, states, original, has)
        n_tasks = len(tasks)
        g = Graph()
        for node, t in enumerate(tasks):
            for j, c in enumerate(clients):
                flow = 1 if has(states[c], t) else 0
                w = cost(t, c, flow == 1)
                if flow == 1:
                    if not has_replica and t in task_client:
                        raise AssertionError(f"task {t} assigned to clients {c} and {task_client[t]}")
                    task_client[t] = c
                g.add_edge(node, j + n_tasks, 1, w, flow)
            if t not in task_client:
                raise AssertionError(f"task {t} not assigned to any client")
            g.add_edge(SOURCE_ID, node, 1, 0, 1)
        sink = len(clients) + n_tasks
        for j, c in enumerate(clients):
            cap = original.get(c, 0)
            g.add_edge(j + n_tasks, sink, cap, 0, cap)
        g.set_source_sink(SOURCE_ID, sink)
        return g

    def assign_from_flow(self, g: Graph, clients: Sequence[int], tasks: Sequence[int], states: list[ClientState],
                         task_client: dict[int, int], kind: str) -> bool:
        moved = False
        assigned = 0
        for node, t in enumerate(tasks):
            m, a = _assign_task(g, t, node, len(tasks), clients, states, task_client, kind)
            moved |= m
            assigned += a
        if assigned != len(tasks):
            raise AssertionError(f"flow assigned {assigned} of {len(tasks)} tasks")
        return moved


class _BalanceSubtopology:
    """``BalanceSubtopologyGraphConstructor`` over the sub-topologies' task sets (sub-topology order)."""

    def __init__(self, groups: list[list[int]]) -> None:
        self.groups = [sorted(g) for g in groups]

    def construct(self, clients: Sequence[int], tasks: Sequence[int], states: list[ClientState],
                  task_client: dict[int, int], original: dict[int, int], has: HasTask, cost: CostFn,
                  has_replica: bool) -> Graph:
        _count_original(tasks, states, original, has)
        task_set = set(tasks)
        n_tasks, n_clients, n_groups = len(tasks), len(clients), len(self.groups)
        second = n_tasks + n_clients * n_groups  # first second-stage client node
        sink = n_clients + second
        g = Graph()
        node = 0
        for gi, group in enumerate(self.groups):
            members = [t for t in group if t in task_set]
            for ci, c in enumerate(clients):
                cnode = n_tasks + n_clients * gi + ci
                for k, t in enumerate(members):
                    here = has(states[c], t)
                    g.add_edge(node + k, cnode, 1, cost(t, c, here), 0)
                    if here:
                        if not has_replica and t in task_client:
                            raise AssertionError(f"task {t} assigned to clients {c} and {task_client[t]}")
                        task_client[t] = c
                if members:
                    # Java: (int) Math.ceil(original * 1.0 / taskIdList.size() * validTaskCount)
                    cap = math.ceil(original[c] / n_tasks * len(members)) if c in original else 0
                    g.add_edge(cnode, second + ci, cap, 0, 0)
            node += len(members)
        if node != n_tasks:
            raise AssertionError("a task to optimise is in no sub-topology")
        for k in range(n_tasks):
            g.add_edge(SOURCE_ID, k, 1, 0, 0)
        for ci, c in enumerate(clients):
            g.add_edge(second + ci, sink, original.get(c, 0), 0, 0)
        g.set_source_sink(SOURCE_ID, sink)
        if g.calculate_max_flow() != n_tasks:
            raise AssertionError("max flow does not place every task")
        return g

    def assign_from_flow(self, g: Graph, clients: Sequence[int], tasks: Sequence[int], states: list[ClientState],
                         task_client: dict[int, int], kind: str) -> bool:
        task_set = set(tasks)
        moved = False
        assigned = 0
        node = 0
        for gi, group in enumerate(self.groups):
            for t in group:
                if t not in task_set:
                    continue
                offset = len(tasks) + len(clients) * gi
                m, a = _assign_task(g, t, node, offset, clients, states, task_client, kind)
                moved |= m
                assigned += a
                node += 1
        if assigned != len(tasks):
            raise AssertionError(f"flow assigned {assigned} of {len(tasks)} tasks")
        return moved


def _count_original(tasks: Sequence[int], states: list[ClientState], original: dict[int, int],
                    has: HasTask) -> None:
    for t in tasks:
        for c, st in enumerate(states):
            if has(st, t):
                original[c] = original.get(c, 0) + 1


def _assign_task(g: Graph, task: int, node: int, offset: int, clients: Sequence[int], states: list[ClientState],
                 task_client: dict[int, int], kind: str) -> tuple[bool, int]:
    """``assignTaskToClient``: follow the task's edge with flow (destination order)."""
    moved = False
    assigned = 0
    for e in g.edges(node):
        if e.flow > 0:
            assigned += 1
            client = clients[e.destination - offset]
            before = task_client[task]
            if client == before:
                break
            getattr(states[before], kind).remove(task)
            if kind == "active":
                states[client].assign_active(task)
            else:
                states[client].assign_standby(task)
            moved = True
    return moved, assigned


class RackAwareTasks:
    """Kafka's ``RackAwareTaskAssignor`` for one instance."""

    def __init__(self, ctx: StreamsContext) -> None:
        cfg = ctx.spec.config
        self.strategy = cfg.rack_aware_assignment_strategy
        self.traffic_cost = cfg.traffic_cost
        self.non_overlap_cost = cfg.non_overlap_cost
        self.racks = [c.rack for c in ctx.clients]
        self.source = [t.source_racks for t in ctx.tasks]
        self.changelog = [t.changelog_racks for t in ctx.tasks]
        groups: dict[int, list[int]] = {}
        for i, t in enumerate(ctx.tasks):
            groups.setdefault(t.key[0], []).append(i)
        self.groups = [groups[k] for k in sorted(groups)]
        self.enabled = self._can_enable(ctx)

    def _can_enable(self, ctx: StreamsContext) -> bool:
        """``canEnableRackAwareAssignor``."""
        if self.strategy == "none":
            return False
        if any(r is None for r in self.racks) or any(s is None for s in self.source):
            return False
        if ctx.spec.config.num_standby_replicas == 0:
            return True
        return all(self.changelog[t] is not None for t in ctx.stateful())

    def cost(self, task: int, client: int, current: bool, traffic: int, non_overlap: int, standby: bool) -> int:
        """``getCost``: cross-rack partitions x ``traffic``, plus ``non_overlap`` off the current client."""
        parts = self.changelog[task] if standby else self.source[task]
        rack = self.racks[client]
        if parts is None or rack is None:
            raise AssertionError("rack-aware cost without rack data")
        total = sum(traffic for racks in parts if rack not in racks)
        if not current:
            total += non_overlap
        return java_int(total)

    def _constructor(self) -> _MinTraffic | _BalanceSubtopology:
        if self.strategy == "min_traffic":
            return _MinTraffic()
        if self.strategy == "balance_subtopology":
            return _BalanceSubtopology(self.groups)
        raise AssertionError("Rack aware assignment is disabled")

    def optimize_active(self, tasks: list[int], states: list[ClientState], traffic: int, non_overlap: int) -> None:
        """``optimizeActiveTasks`` over ``tasks`` (task order), every client."""
        if not tasks:
            return
        clients = list(range(len(states)))
        task_client: dict[int, int] = {}
        original: dict[int, int] = {}
        builder = self._constructor()

        def cost(t: int, c: int, current: bool) -> int:
            return self.cost(t, c, current, traffic, non_overlap, False)

        g = builder.construct(clients, tasks, states, task_client, original, _has_active, cost, False)
        g.solve_min_cost_flow()
        builder.assign_from_flow(g, clients, tasks, states, task_client, "active")

    def optimize_standby(self, states: list[ClientState], traffic: int, non_overlap: int,
                         can_move: Callable[[int, int, int], bool] | None = None) -> None:
        """``optimizeStandbyTasks``: min-cost swaps between clients on different racks.

        ``can_move(source, destination, task)``: the standby assignor's per-task ``isAllowedTaskMovement``
        (client tags), read on the assignment as it stands; ``None``: every move is allowed.
        """
        builder = _MinTraffic()
        n = len(states)

        def cost(t: int, c: int, current: bool) -> int:
            return self.cost(t, c, current, traffic, non_overlap, True)

        moved = True
        rounds = 0
        while moved and rounds < STANDBY_MAX_ROUNDS:
            moved = False
            rounds += 1
            for i in range(n):
                for j in range(i + 1, n):
                    if self.racks[i] == self.racks[j]:
                        continue
                    a, b = states[i], states[j]
                    mov1 = [t for t in a.standby if not b.has(t) and (can_move is None or can_move(i, j, t))]
                    mov2 = [t for t in b.standby if not a.has(t) and (can_move is None or can_move(j, i, t))]
                    if not mov1 or not mov2:
                        continue
                    tasks = sorted(mov1 + mov2)
                    task_client: dict[int, int] = {}
                    original: dict[int, int] = {}
                    g = builder.construct([i, j], tasks, states, task_client, original, _has_standby, cost, True)
                    g.solve_min_cost_flow()
                    moved |= builder.assign_from_flow(g, [i, j], tasks, states, task_client, "standby")
