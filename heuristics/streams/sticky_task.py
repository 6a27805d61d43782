"""Kafka Streams' sticky task assignor (``LegacyStickyTaskAssignor``, formerly ``StickyTaskAssignor``).

The assignor Kafka Streams used before KIP-441 (and still ships as an
option).  Rules, in Kafka's order:

1. ``tasksPerThread = tasks // total threads``.  Every previous active goes
   back to its previous client while that client has fewer than
   ``capacity * tasksPerThread`` actives (previous actives in ``HashMap<TaskId>``
   order).
2. Remaining tasks (``HashSet<TaskId>`` order) go to the first previous
   standby holder (``HashSet<ProcessId>`` order) below that quota.
3. The rest, in task order, go through ``findClient``: the previous owner (or
   the least loaded previous standby holder) unless it is full (assigned tasks
   >= threads) while another client has more room, else the least loaded
   client, preferring one for which the task forms a new *pair* with its
   tasks (spreads tasks of a sub-topology); a client with no task at all wins
   at once.
4. Standbys: for each stateful task (``HashSet<TaskId>`` order), each replica
   to ``findClient`` among clients without the task.

"Least loaded" compares assigned tasks per thread, ties to more threads.
Java's ``HashMap`` / ``HashSet`` iteration orders are reproduced from the hash
codes (``TaskId``: ``Objects.hash(subtopology, partition, null)``,
``ProcessId``: ``UUID.hashCode()``); clients enter Kafka's maps in input order.
Previous standbys are the ``standby`` tasks plus every task with a ``lags``
entry: Kafka treats every task a client reports state for as a previous
standby.  Never requests a probing rebalance.

When rack awareness is on (KIP-925, :mod:`heuristics.streams.rack_aware`),
Kafka optimises after step 3 the stateful actives (``optimizeActiveTasks``
with the configured costs, defaults traffic 1 and non-overlap 10: stickiness
first) and the stateless ones (costs 1 and 0), and after step 4 the standbys
(``optimizeStandbyTasks``, same costs).  No Kafka fixture covers this path; it
follows ``LegacyStickyTaskAssignor.optimizeActive`` / ``optimizeStandby``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from heuristics._java import DEFAULT_JAVA, copy_initial_capacity, hashmap_order, java_release
from heuristics.streams.client_state import ClientState, StreamsContext, best_client
from heuristics.streams.rack_aware import STATELESS_NON_OVERLAP_COST, STATELESS_TRAFFIC_COST, RackAwareTasks
from heuristics.versions import STICKY_TASK
from solver.model import Instance
from solver.registry import register
from solver.result import Params, Result


def task_java_hash(task: tuple[int, int]) -> int:
    """``TaskId.hashCode()``: ``Objects.hash(subtopology, partition, null)`` as signed 32-bit."""
    h = (29791 + 961 * task[0] + 31 * task[1]) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


class _Sticky:
    def __init__(self, ctx: StreamsContext, java: int = DEFAULT_JAVA) -> None:
        self.ctx = ctx
        self.java = java
        self.states = ctx.fresh_states()
        n = len(ctx.tasks)
        self.keys = [t.key for t in ctx.tasks]
        # Kafka's clients map: HashMap<ProcessId, ClientState> filled in input order.
        rank = {c.id: i for i, c in enumerate(ctx.clients)}
        input_order = [rank[c.id] for c in ctx.spec.clients]
        self.client_order = self._pid_order(input_order)
        self.pairs: set[tuple[int, int]] = set()
        self.max_pairs = n * (n - 1) // 2
        self.prev_active: dict[int, int] = {}
        self.prev_standby: dict[int, list[int]] = {}
        pa_keys: list[int] = []
        ps_keys: list[int] = []
        for c in self.client_order:
            for t in ctx.prev_active(c):
                self.prev_active[t] = c
                pa_keys.append(t)
            cl = ctx.clients[c]
            active = set(cl.active)
            held = sorted({ctx.task_index[t] for t in (*cl.standby, *cl.lags) if t not in active})
            for t in held:
                self.prev_standby.setdefault(t, []).append(c)
                ps_keys.append(t)
        self.prev_active_order = self._task_order(pa_keys)

    def _task_order(self, tasks: Iterable[int], initial_capacity: int | None = None) -> list[int]:
        return hashmap_order(list(tasks), lambda t: task_java_hash(self.keys[t]), initial_capacity=initial_capacity)

    def _pid_order(self, clients: Iterable[int], initial_capacity: int | None = None) -> list[int]:
        return hashmap_order(list(clients), lambda c: self.ctx.java_hash[c], initial_capacity=initial_capacity)

    def _copy_set(self, items: list[int], order_fn: Callable[[list[int], int], list[int]]) -> list[int]:
        # new HashSet<>(collection): sized for the collection as the Java release does, filled in the source's order
        return order_fn(items, copy_initial_capacity(len(items), self.java))

    # ---------------------------------------------------------------- load helpers

    def _more_room(self, a: int, b: int) -> bool:
        """``a.hasMoreAvailableCapacityThan(b)``."""
        sa, sb = self.states[a], self.states[b]
        la, lb = sa.assigned_count() / sa.capacity, sb.assigned_count() / sb.capacity
        if la != lb:
            return la < lb
        return sa.capacity > sb.capacity

    def _should_balance(self, c: int) -> bool:
        st = self.states[c]
        if st.assigned_count() < st.capacity:
            return False
        return any(self._more_room(o, c) for o in self.client_order)

    def _pair(self, a: int, b: int) -> tuple[int, int]:
        return (a, b) if a < b else (b, a)

    def _has_new_pair(self, task: int, c: int) -> bool:
        if len(self.pairs) == self.max_pairs:
            return False
        st = self.states[c]
        return any(self._pair(task, t) not in self.pairs for t in st.active | st.standby)

    def _least_loaded_once(self, task: int, clients: list[int], check_pairs: bool) -> int | None:
        best: int | None = None
        for c in clients:
            if self.states[c].assigned_count() == 0:
                return c
            if (best is None or self._more_room(c, best)) and (not check_pairs or self._has_new_pair(task, c)):
                best = c
        return best

    def _least_loaded(self, task: int, clients: list[int]) -> int | None:
        found = self._least_loaded_once(task, clients, True)
        return found if found is not None else self._least_loaded_once(task, clients, False)

    def _least_loaded_standby_holder(self, task: int, within: list[int]) -> int | None:
        ids = self.prev_standby.get(task)
        if ids is None:
            return None
        inside = set(within)
        constrained = [c for c in self._copy_set(self._pid_order(ids), self._pid_order) if c in inside]
        return self._least_loaded(task, constrained)

    def _find_client(self, task: int, within: list[int]) -> int:
        return best_client(task, within, self.prev_active.get(task), self._least_loaded_standby_holder,
                           self._least_loaded, self._should_balance)

    def _add_pairs(self, task: int, c: int) -> None:
        st = self.states[c]
        for t in st.active | st.standby:
            self.pairs.add(self._pair(t, task))

    def _allocate(self, task: int, within: list[int], active: bool) -> None:
        c = self._find_client(task, within)
        self._add_pairs(task, c)
        if active:
            self.states[c].assign_active(task)
        else:
            self.states[c].assign_standby(task)

    # ---------------------------------------------------------------- phases

    def assign_active(self) -> None:
        ctx = self.ctx
        total_cap = sum(c.capacity for c in ctx.clients)
        per_thread = len(ctx.tasks) // total_cap
        assigned: set[int] = set()
        for t in self.prev_active_order:
            c = self.prev_active[t]
            if len(self.states[c].active) < self.states[c].capacity * per_thread:
                self._add_pairs(t, c)
                self.states[c].assign_active(t)
                assigned.add(t)
        all_tasks = self._task_order(range(len(ctx.tasks)))  # allTaskIds: HashMap keySet
        unassigned = [t for t in self._copy_set(all_tasks, self._task_order) if t not in assigned]
        remaining = []
        for t in unassigned:
            placed = False
            holders = self.prev_standby.get(t)
            if holders is not None:
                for c in self._pid_order(holders):
                    if len(self.states[c].active) < self.states[c].capacity * per_thread:
                        self._add_pairs(t, c)
                        self.states[c].assign_active(t)
                        placed = True
                        break
            if not placed:
                remaining.append(t)
        for t in sorted(remaining):
            self._allocate(t, self.client_order, True)

    def assign_standby(self, replicas: int) -> None:
        stateful = self._task_order(self.ctx.stateful())
        for t in stateful:
            for _ in range(replicas):
                without = self._pid_order(c for c in self.client_order if not self.states[c].has(t))
                if not without:
                    break
                self._allocate(t, without, False)


def sticky_task_assign(ctx: StreamsContext, java: int = DEFAULT_JAVA) -> list[ClientState]:
    """Run the assignor on Java ``java`` (its copied sets' sizes); returns the client states (Kafka's process-id
    order)."""
    if ctx.n_clients == 0:
        return []
    cfg = ctx.spec.config
    rack = RackAwareTasks(ctx)
    # LegacyStickyTaskAssignor's own defaults for unset costs: stickiness first
    traffic = 1 if cfg.rack_aware_assignment_traffic_cost is None else cfg.rack_aware_assignment_traffic_cost
    non_overlap = (10 if cfg.rack_aware_assignment_non_overlap_cost is None
                   else cfg.rack_aware_assignment_non_overlap_cost)
    s = _Sticky(ctx, java)
    s.assign_active()
    if rack.enabled:
        rack.optimize_active(ctx.stateful(), s.states, traffic, non_overlap)
        rack.optimize_active(ctx.stateless(), s.states, STATELESS_TRAFFIC_COST, STATELESS_NON_OVERLAP_COST)
    s.assign_standby(cfg.num_standby_replicas)
    if cfg.num_standby_replicas > 0 and rack.enabled:
        rack.optimize_standby(s.states, traffic, non_overlap)
    return s.states


@register(
    "sticky-task",
    kind="heuristic",
    protocol="streams",
    summary="Kafka Streams (Legacy)StickyTaskAssignor: previous owners first, quota per thread, task pairs",
    source="Kafka LegacyStickyTaskAssignor (StickyTaskAssignor before 3.8), with KIP-925 rack awareness",
    versions=STICKY_TASK,
)
def sticky_task(instance: Instance, params: Params) -> Result:
    """Kafka Streams' sticky task assignor (see the module docstring)."""
    ctx = StreamsContext.of(instance)
    states = sticky_task_assign(ctx, java_release(params.options))
    return Result(ctx.to_assignment(states, None, False), extra={"probing_rebalance": False})

