"""KIP-924's public ``StickyTaskAssignor`` (Kafka Streams, ``task.assignor.class``, since 3.8).

``org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor``,
run as Kafka Streams runs a custom task assignor (``ApplicationState`` /
``KafkaStreamsState``).  It reads, per client, the previous active tasks
(``active``), the previous standby tasks (``standby`` plus every task with a
``lags`` entry: Kafka derives both from the reported offset sums), the thread
count (``capacity``), which tasks are stateful, and ``num_standby_replicas``.
Rules, in Kafka's order:

1. Previous actives (``HashMap<TaskId, ProcessId>`` order) go back to their
   client while it has room: fewer actives than ``capacity x floor(tasks /
   total threads)`` (Kafka 3.8-4.3), or than ``ceil(tasks x capacity / total
   threads)`` (4.4.0, KAFKA-20198).
2. Each remaining task (``HashSet<TaskId>`` order) to the first previous
   standby holder (``HashSet<ProcessId>`` order) with room.
3. The rest, in task order, to the best client: the previous active (or the
   least-loaded previous standby holder) unless it holds at least one task per
   thread while another client holds fewer per thread; else the least-loaded
   client, preferring one for which the task forms a new *pair* with its tasks;
   a client with no task wins at once.
4. Standbys: each stateful task, ``num_standby_replicas`` times, to the best
   client (as in 3) among those without the task.

Kafka walks the stateful tasks of step 4 as a ``HashSet<TaskInfo>`` whose
order follows identity hash codes, so it changes from run to run and, with
standbys, so may the standbys (the actives never).  An instance may give that
order (``standby_task_order``, as Kafka's fixtures record it); without it the
stateful tasks are walked in ``TaskId`` order (whatever order the instance lists
them in: its tasks are a set), and Kafka's own standbys may then differ.

Loads are assigned tasks (actives and standbys) per thread.  Every other
``HashMap`` / ``HashSet`` order is reproduced from Java hash codes
(``TaskId``: ``Objects.hash(subtopology, partition, null)``, ``ProcessId``:
``UUID.hashCode()``); clients enter Kafka's maps in input order, tasks in task
order.  Rack-aware optimisation (``TaskAssignmentUtils``) is not modelled: an
instance that would turn it on is refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from heuristics._java import DEFAULT_JAVA, JavaHashMap, copy_initial_capacity, java_release
from heuristics.streams.client_state import StreamsContext, best_client
from heuristics.streams.rack_aware import RackAwareTasks
from heuristics.streams.sticky_task import task_java_hash
from heuristics.versions import KAFKA_20198, KIP924_STICKY
from solver.kafka_version import DEFAULT, KafkaVersion, release
from solver.model import Instance
from solver.registry import UnsupportedInstanceError, register
from solver.result import Params, Result
from solver.streams.model import StreamsAssignment


class _Sticky:
    """One run of the assignor over a :class:`~heuristics.streams.client_state.StreamsContext`.

    Clients are numbered by the context (process-id order), tasks by task order.
    """

    def __init__(self, ctx: StreamsContext, proportional: bool, java: int = DEFAULT_JAVA) -> None:
        self.ctx = ctx
        self.proportional = proportional
        self.java = java
        n_tasks = len(ctx.tasks)
        self.keys = [t.key for t in ctx.tasks]
        self.capacity = [c.capacity for c in ctx.clients]
        rank = {c.id: i for i, c in enumerate(ctx.clients)}
        # clients: HashMap<ProcessId, KafkaStreamsState> filled in input order
        self.clients = self._pid_set(rank[c.id] for c in ctx.spec.clients)
        self.tasks_of: list[set[int]] = [set() for _ in ctx.clients]
        self.active_of: list[set[int]] = [set() for _ in ctx.clients]
        self.standby_of: list[set[int]] = [set() for _ in ctx.clients]
        self.locations: dict[int, set[int]] = {}
        self.pairs: set[tuple[int, int]] = set()
        self.max_pairs = n_tasks * (n_tasks - 1) // 2

        prev_active: dict[int, int] = {}
        pa_table = JavaHashMap(self._task_hash)
        holders: dict[int, list[int]] = {}
        for c in self.clients:
            for t in ctx.prev_active(c):
                pa_table.put(t)
                prev_active[t] = c
            cl = ctx.clients[c]
            active = set(cl.active)
            for t in sorted({ctx.task_index[x] for x in (*cl.standby, *cl.lags) if x not in active}):
                holders.setdefault(t, []).append(c)
        self.prev_active = prev_active
        self.prev_active_order = pa_table.order()
        # previousStandbyAssignment: HashMap<TaskId, HashSet<ProcessId>>, each set filled in client order
        self.prev_standby = {t: self._pid_set(cs) for t, cs in holders.items()}
        for t in prev_active:
            self.locations[t] = set()

    # ---------------------------------------------------------------- Java orders

    def _task_hash(self, t: int) -> int:
        return task_java_hash(self.keys[t])

    def _pid_set(self, clients: Iterable[int], initial_capacity: int | None = None) -> list[int]:
        table = JavaHashMap(lambda c: self.ctx.java_hash[c], initial_capacity)
        for c in clients:
            table.put(c)
        return table.order()

    # ---------------------------------------------------------------- AssignmentState

    def _load(self, c: int) -> float:
        return len(self.tasks_of[c]) / self.capacity[c]

    def _finalize(self, task: int, c: int, active: bool) -> None:
        for t in self.tasks_of[c]:
            self.pairs.add((t, task) if t < task else (task, t))
        self.tasks_of[c].add(task)
        (self.active_of if active else self.standby_of)[c].add(task)
        self.locations.setdefault(task, set()).add(c)

    def _has_room(self, c: int, per_thread: int, n_tasks: int, total_threads: int) -> bool:
        if self.proportional:  # KAFKA-20198: ceil(tasks x threads / total threads)
            limit = (n_tasks * self.capacity[c] + total_threads - 1) // total_threads
        else:
            limit = self.capacity[c] * per_thread
        return len(self.active_of[c]) < limit

    def _has_new_pair(self, task: int, c: int) -> bool:
        if len(self.pairs) == self.max_pairs:
            return False
        pairs = self.pairs
        return any(((t, task) if t < task else (task, t)) not in pairs for t in self.tasks_of[c])

    def _least_loaded(self, task: int, clients: list[int]) -> int | None:
        """``findLeastLoadedClient``: a client without tasks at once, else the least loaded with a new pair."""
        best: int | None = None
        for c in clients:
            load = self._load(c)
            if load == 0:
                return c
            if (best is None or load < self._load(best)) and self._has_new_pair(task, c):
                best = c
        if best is not None:
            return best
        for c in clients:
            if best is None or self._load(c) < self._load(best):
                best = c
        return best

    def _least_loaded_standby_holder(self, task: int, within: list[int]) -> int | None:
        ids = self.prev_standby.get(task, [])
        inside = set(within)
        # new HashSet<>(ids).retainAll(clientsWithin)
        constrained = [c for c in self._pid_set(ids, copy_initial_capacity(len(ids), self.java)) if c in inside]
        return self._least_loaded(task, constrained)

    def _should_balance(self, c: int) -> bool:
        load = self._load(c)
        if load < 1:
            return False
        return any(self._load(o) < load for o in self.clients)

    def _best_client(self, task: int, within: list[int]) -> int:
        """``findBestClientForTask``."""
        return best_client(task, within, self.prev_active.get(task), self._least_loaded_standby_holder,
                           self._least_loaded, self._should_balance)

    # ---------------------------------------------------------------- passes

    def assign_active(self) -> None:
        ctx = self.ctx
        n_tasks = len(ctx.tasks)
        total_threads = sum(self.capacity)
        per_thread = n_tasks // total_threads
        # allTasks: HashMap<TaskId, TaskInfo> filled in task order; unassigned = new HashSet<>(its keySet())
        all_table = JavaHashMap(self._task_hash)
        for t in range(n_tasks):
            all_table.put(t)
        unassigned_table = JavaHashMap(self._task_hash, copy_initial_capacity(n_tasks, self.java))
        for t in all_table.order():
            unassigned_table.put(t)
        unassigned = unassigned_table.order()
        placed: set[int] = set()
        for t in self.prev_active_order:
            c = self.prev_active[t]
            if self._has_room(c, per_thread, n_tasks, total_threads):
                self._finalize(t, c, True)
                placed.add(t)
        remaining = []
        for t in unassigned:
            if t in placed:
                continue
            for c in self.prev_standby.get(t, ()):
                if self._has_room(c, per_thread, n_tasks, total_threads):
                    self._finalize(t, c, True)
                    break
            else:
                remaining.append(t)
        candidates = self._pid_set(self.clients)  # clients.stream().map(processId).collect(toSet())
        for t in sorted(remaining):
            self._finalize(t, self._best_client(t, candidates), True)

    def assign_standby(self, replicas: int, order: list[int]) -> None:
        for t in order:
            for _ in range(replicas):
                taken = self.locations.get(t, set())
                without = self._pid_set(c for c in self.clients if c not in taken)
                if not without:
                    break  # Kafka logs "not enough available capacity"
                self._finalize(t, self._best_client(t, without), False)


def kip924_sticky_assign(instance: Instance, version: KafkaVersion = DEFAULT, java: int = DEFAULT_JAVA
                         ) -> StreamsAssignment:
    """KIP-924's ``StickyTaskAssignor`` at Kafka ``version`` on Java ``java`` (see the module docstring).

    Examples
    --------
    Five tasks, all on the 2-thread client ``a`` before the 1-thread ``b``
    joined: up to 4.3 ``a`` keeps ``2 x floor(5 / 3)`` = 2 of them (and wins
    one back later), from 4.4 ``ceil(5 x 2 / 3)`` = 4.

    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "protocol": "streams",
    ...     "tasks": [{"id": f"0_{p}", "stateful": False} for p in range(5)],
    ...     "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001", "capacity": 2,
    ...                  "active": [f"0_{p}" for p in range(5)]},
    ...                 {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002", "capacity": 1}]})
    >>> [len(kip924_sticky_assign(inst, KafkaVersion.parse(v)).get("a").active) for v in ("4.3", "4.4")]
    [3, 4]
    """
    ctx = StreamsContext.of(instance)
    if ctx.n_clients == 0:
        return StreamsAssignment.from_lists({})
    cfg = ctx.spec.config
    if cfg.rack_aware_assignment_strategy != "none" and RackAwareTasks(ctx).enabled:
        raise UnsupportedInstanceError(
            "kip924-sticky: KIP-924's rack-aware optimisation (TaskAssignmentUtils) is not modelled; "
            "set config.rack_aware_assignment_strategy to 'none' to run it without")
    run = _Sticky(ctx, proportional=version >= KAFKA_20198, java=java)
    run.assign_active()
    if cfg.num_standby_replicas > 0:
        order = ctx.spec.standby_task_order
        walk = ([ctx.task_index[t] for t in order] if order is not None else ctx.stateful())
        run.assign_standby(cfg.num_standby_replicas, walk)
    data = {cl.id: {"active": [ctx.tasks[t].id for t in run.active_of[c]],
                    "standby": [ctx.tasks[t].id for t in run.standby_of[c]]}
            for c, cl in enumerate(ctx.clients)}
    return StreamsAssignment.from_lists(data)


@register(
    "kip924-sticky",
    kind="heuristic",
    protocol="streams",
    summary="Kafka Streams KIP-924 public StickyTaskAssignor (task.assignor.class): previous owners first, "
            "quota per client",
    source="org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor (KIP-924; KAFKA-20198 "
           "in 4.4.0)",
    versions=KIP924_STICKY,
)
def kip924_sticky(instance: Instance, params: Params) -> Result:
    """Registry entry for :func:`kip924_sticky_assign` at the release in ``params.kafka_version``."""
    version = release(params.kafka_version)
    order = "given" if instance.streams is not None and instance.streams.standby_task_order is not None else "task"
    return Result(kip924_sticky_assign(instance, version, java_release(params.options)),
                  extra={"probing_rebalance": False, "standby_task_order": order})
