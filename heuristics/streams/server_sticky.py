"""The group coordinator's Streams ``sticky`` task assignor (KIP-1071, ``group.protocol=streams``).

Under the Streams rebalance protocol the broker assigns tasks to group
*members* (one per stream thread) of Kafka Streams *processes*, with Kafka's
``org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor``.
Its rules, in Kafka's order:

1. Quotas: ``ceil(tasks / members)`` actives and ``ceil((tasks + stateful
   tasks x standbys) / members)`` tasks per member; each time a member reaches
   a quota, the quota is recomputed over the members and tasks left.
2. Actives, in (partition, subtopology) order: back to the member that had
   the task while it is below the active quota; then to a previous standby
   holder (the first in candidate order, unless a later one has both a
   strictly lower process load and a strictly lower member task count).
   The rest, in (subtopology, partition) order, to the least-loaded process
   (``PriorityQueue`` by tasks per member) and in it the member with the
   fewest tasks.
3. Standbys, in descending (partition, subtopology) order, each replica: the
   previous active member if its process does not have the task and the
   member is below the task quota; else a previous standby holder as above;
   else the task's remaining replicas go, in descending (subtopology,
   partition) order, to the least-loaded processes without the task.

Subtopology ids compare as Strings (``"10"`` before ``"2"``).  Kafka's
``HashMap`` iteration orders (members by member id, processes by process id)
and ``PriorityQueue`` sift steps break its ties; both are reproduced.

What changes with the release (:data:`heuristics.versions.STREAMS_SERVER_STICKY`):

- **4.2.0-4.3.1**: a member's previous tasks are its previous target
  assignment; a standby's previous holders are walked from the first, and if
  the first holder's process already has the task the remaining replicas go to
  the least-loaded fallback.
- **4.3.2** (KAFKA-20899): holders whose process already has the task are
  skipped; the first remaining one is the choice unless a later one has both a
  strictly lower process load and member task count.
- **4.4.0**: members' *current* tasks replace their target (KAFKA-20790);
  members that report an offset for a task's state become weaker candidates,
  each task's candidates sorted stably (current standbys first, then by offset,
  highest first; KAFKA-20719); the process map is filled with
  ``computeIfAbsent``, so processes sharing a hash bucket are walked newest
  first.

Clients without ``members`` are read as processes of ``capacity`` members
named ``<client id>#<k>``, the client's previous actives, then standbys, dealt
to them round-robin in task order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

from heuristics._java import JavaHashMap, java_string_hash
from heuristics.versions import KAFKA_20719, STREAMS_SERVER_STICKY, has_kafka_20899
from solver.kafka_version import DEFAULT, KafkaVersion, release
from solver.model import Instance
from solver.registry import UnsupportedInstanceError, register
from solver.result import Params, Result
from solver.streams.members import synthetic_members
from solver.streams.model import ClientAssignment, StreamsAssignment, StreamsMember, StreamsSpec


@dataclass(frozen=True)
class ReleaseRules:
    """The release-dependent parts of the assignor."""

    skip_holders_with_task: bool  # KAFKA-20899 (4.2.2, then 4.3.2 on)
    current_and_offsets: bool  # KAFKA-20719 / KAFKA-20790 (4.4.0)
    compute_if_absent: bool  # 4.4.0's process map

    @classmethod
    def at(cls, version: KafkaVersion) -> ReleaseRules:
        """The rule in force at ``version``."""
        return cls(has_kafka_20899(version), version >= KAFKA_20719, version >= KAFKA_20719)


class _Process:
    """Kafka's ``ProcessState``: members' task counts, the tasks held, a lazily built member heap."""

    __slots__ = ("assigned", "capacity", "counts", "heap", "load", "members", "task_count")

    def __init__(self) -> None:
        self.members: list[int] = []  # memberToTaskCounts' HashMap order (set after all members are added)
        self.counts: dict[int, int] = {}
        self.capacity = 0
        self.task_count = 0
        self.load = 0.0
        self.assigned: set[int] = set()
        self.heap: list[int] | None = None

    def add(self, member: int, task: int) -> int:
        """``addTaskInternal``: returns the member's new task count."""
        self.task_count += 1
        self.assigned.add(task)
        n = self.counts[member] + 1
        self.counts[member] = n
        self.load = self.task_count / self.capacity
        return n

    def least_loaded_member(self) -> int:
        """The member ``addTaskToLeastLoadedMember`` picks (and re-files in its heap)."""
        if len(self.members) == 1:
            return self.members[0]
        counts = self.counts
        heap = self.heap
        if heap is None:
            heap = []
            for m in self.members:  # PriorityQueue.add in memberToTaskCounts order
                _sift_up(heap, m, counts)
            self.heap = heap
        return heap[0]

    def refile(self, member: int) -> None:
        """After the heap's head took a task: poll it and add it back with its new count."""
        heap = self.heap
        if heap is None:
            return
        last = heap.pop()
        if heap:
            _sift_down(heap, 0, last, self.counts)
        _sift_up(heap, member, self.counts)


def _sift_up(heap: list[int], x: int, key: dict[int, int] | list[float]) -> None:
    """``PriorityQueue.offer`` (JDK 17): append ``x`` and sift it up; equal keys do not swap."""
    heap.append(x)
    k = len(heap) - 1
    kx = key[x]
    while k > 0:
        parent = (k - 1) >> 1
        e = heap[parent]
        if kx >= key[e]:
            break
        heap[k] = e
        k = parent
    heap[k] = x


def _sift_down(heap: list[int], k: int, x: int, key: dict[int, int] | list[float]) -> None:
    """``PriorityQueue.siftDown`` (JDK 17) of ``x`` from slot ``k``."""
    n = len(heap)
    half = n >> 1
    kx = key[x]
    while k < half:
        child = 2 * k + 1
        c = heap[child]
        kc = key[c]
        right = child + 1
        if right < n:
            kr = key[heap[right]]
            if kc > kr:
                child = right
                c = heap[child]
                kc = kr
        if kx <= kc:
            break
        heap[k] = c
        k = child
    heap[k] = x


def _poll(heap: list[int], key: list[float]) -> int:
    """``PriorityQueue.poll`` (the heap is not empty)."""
    top = heap[0]
    last = heap.pop()
    if heap:
        _sift_down(heap, 0, last, key)
    return top


@dataclass(frozen=True)
class Topology:
    """Tasks as Kafka's ``TopologyDescriber`` gives them: subtopology ids (Strings) with partitions 0..n-1."""

    ids: list[str]  # task ids, index = task number
    sub: list[str]  # subtopology id (a String) per task
    part: list[int]  # partition per task
    stateful: list[bool]

    @classmethod
    def of(cls, spec: StreamsSpec) -> Topology:
        """The topology of ``spec``; refuses tasks Kafka's topology cannot describe."""
        keys = [t.key for t in spec.tasks]
        subs: dict[int, list[tuple[int, bool]]] = {}
        for t, (s, p) in zip(spec.tasks, keys, strict=True):
            subs.setdefault(s, []).append((p, t.stateful))
        for s, parts in subs.items():
            if [p for p, _ in parts] != list(range(len(parts))):
                raise UnsupportedInstanceError(
                    f"KIP-1071's assignor reads a subtopology as partitions 0..n-1: subtopology {s} has tasks for "
                    f"partitions {[p for p, _ in parts][:10]}")
            if len({st for _, st in parts}) > 1:
                raise UnsupportedInstanceError(
                    f"KIP-1071's assignor reads statefulness per subtopology: subtopology {s} mixes stateful and "
                    "stateless tasks")
        ids, sub, part, stateful = [], [], [], []
        for t, (s, p) in zip(spec.tasks, keys, strict=True):
            ids.append(t.id)
            sub.append(str(s))
            part.append(p)
            stateful.append(t.stateful)
        return cls(ids, sub, part, stateful)


@dataclass(frozen=True)
class GroupMembers:
    """The group's members as the coordinator hands them over, in its ``HashMap`` order.

    Attributes
    ----------
    ids
        Member ids, index = member number (the coordinator's member order).
    client
        Client (process) index of each member, in ``spec.clients`` order.
    members
        The :class:`~solver.streams.model.StreamsMember` of each member.
    """

    ids: list[str]
    client: list[int]
    members: list[StreamsMember]

    @classmethod
    def of(cls, spec: StreamsSpec) -> GroupMembers:
        """Members in the coordinator's order (clients without ``members`` get synthetic ones)."""
        entries: list[tuple[StreamsMember, int]] = []
        for c in range(len(spec.clients)):
            for m in synthetic_members(spec, c):
                entries.append((m, c))
        table = JavaHashMap(java_string_hash)
        for m, _ in entries:
            table.put(m.id)
        pos = {m.id: k for k, (m, _) in enumerate(entries)}
        if len(pos) != len(entries):
            seen: set[str] = set()
            twice = next(m.id for m, _ in entries if m.id in seen or seen.add(m.id))  # type: ignore[func-returns-value]
            raise UnsupportedInstanceError(f"member id {twice!r} is used twice (a synthetic member of a client "
                                           "without 'members' is named '<client id>#<k>')")
        ordered = [entries[pos[mid]] for mid in table.order()]
        return cls([m.id for m, _ in ordered], [c for _, c in ordered], [m for m, _ in ordered])


class _Assignor:
    """One run of the assignor (Kafka's ``LocalState`` and passes)."""

    def __init__(self, spec: StreamsSpec, rule: ReleaseRules) -> None:
        self.rule = rule
        self.top = Topology.of(spec)
        self.group = GroupMembers.of(spec)
        top, group = self.top, self.group
        n_tasks = len(top.ids)
        n_members = len(group.ids)
        self.standbys = spec.config.num_standby_replicas
        self.total_active = n_tasks
        self.total_tasks = n_tasks + sum(top.stateful) * self.standbys
        self.members_active_cap = n_members
        self.members_task_cap = n_members
        self.active_quota = _per_member(self.total_active, n_members)
        self.task_quota = _per_member(self.total_tasks, n_members)
        index = {t: k for k, t in enumerate(top.ids)}
        pids = [spec.clients[c].process_id for c in group.client]

        # processIdToState: new HashMap<>(members), filled per member in member order
        table = JavaHashMap(java_string_hash, n_members)
        insert = table.compute_if_absent if rule.compute_if_absent else table.put
        by_pid: dict[str, _Process] = {}
        for m in range(n_members):
            insert(pids[m])
            proc = by_pid.setdefault(pids[m], _Process())
            proc.counts[m] = 0
            proc.capacity += 1
        for proc in by_pid.values():
            # memberToTaskCounts: a default HashMap<String, Integer> filled in member order
            order = JavaHashMap(java_string_hash)
            for m in proc.counts:
                order.put(group.ids[m])
            num = {group.ids[m]: m for m in proc.counts}
            proc.members = [num[i] for i in order.order()]
        self.proc_of = [by_pid[p] for p in pids]
        self.processes = [by_pid[p] for p in table.order()]

        # previous holders: activeTaskToPrevMember (last writer wins), standby candidates per task
        self.prev_active: dict[int, int] = {}
        cands: dict[int, list[tuple[int, bool, int]]] = {}
        for m, member in enumerate(group.members):
            actives = member.owned_active if rule.current_and_offsets else member.active
            standbys = member.owned_standby if rule.current_and_offsets else member.standby
            for t in actives:
                self.prev_active[index[t]] = m
            offsets = member.task_offsets if rule.current_and_offsets else {}
            for t in standbys:
                cands.setdefault(index[t], []).append((m, True, offsets.get(t, 0)))
            if rule.current_and_offsets:
                held = set(standbys)
                for t, off in offsets.items():
                    if t not in held:
                        cands.setdefault(index[t], []).append((m, False, off))
        if rule.current_and_offsets:  # stable: current standbys first, then by offset, highest first
            self.prev_standby = {t: [m for m, _, _ in sorted(c, key=lambda x: (not x[1], -x[2]))]
                                 for t, c in cands.items()}
        else:
            self.prev_standby = {t: [m for m, _, _ in c] for t, c in cands.items()}

        self.active: list[list[int]] = [[] for _ in range(n_members)]
        self.standby: list[list[int]] = [[] for _ in range(n_members)]

    # ------------------------------------------------------------------ quotas

    def _active_placed(self, count: int) -> None:
        """``maybeUpdateActiveTasksPerMember``."""
        if count == self.active_quota:
            self.members_active_cap -= 1
            self.total_active -= count
            self.active_quota = _per_member(self.total_active, self.members_active_cap)

    def _task_placed(self, count: int) -> None:
        """``maybeUpdateTotalTasksPerMember``."""
        if count == self.task_quota:
            self.members_task_cap -= 1
            self.total_tasks -= count
            self.task_quota = _per_member(self.total_tasks, self.members_task_cap)

    def _give(self, m: int, task: int, active: bool) -> int:
        """``ProcessState.addTask`` to a chosen member: the process's member heap is dropped."""
        proc = self.proc_of[m]
        proc.heap = None
        (self.active if active else self.standby)[m].append(task)
        return proc.add(m, task)

    def _give_least_loaded(self, proc: _Process, task: int, active: bool) -> int:
        """``ProcessState.addTaskToLeastLoadedMember``."""
        m = proc.least_loaded_member()
        (self.active if active else self.standby)[m].append(task)
        count = proc.add(m, task)
        proc.refile(m)
        return count

    def _least_loaded_holder(self, holders: list[int] | None, task: int | None) -> int | None:
        """``findPrevMemberWithLeastLoad`` (``task``: the standby being placed, ``None`` for an active)."""
        if not holders:
            return None
        proc_of = self.proc_of
        if self.rule.skip_holders_with_task or task is None:
            best = None
            best_load = best_count = 0.0
            for m in holders:
                proc = proc_of[m]
                if task is not None and task in proc.assigned:
                    continue
                load, count = proc.load, proc.counts[m]
                if best is None or (load < best_load and count < best_count):
                    best, best_load, best_count = m, load, count
            return best
        # 4.2.0-4.3.1: starts from the first holder, and gives up if the *first* holder's process has the task
        first = holders[0]
        best = first
        best_load, best_count = proc_of[first].load, proc_of[first].counts[first]
        for m in holders[1:]:
            proc = proc_of[m]
            if proc.load < best_load and task not in proc.assigned and proc.counts[m] < best_count:
                best, best_load, best_count = m, proc.load, proc.counts[m]
        return None if task in proc_of[first].assigned else best

    # ------------------------------------------------------------------ passes

    def assign_active(self) -> None:
        top = self.top
        tasks = sorted(range(len(top.ids)), key=lambda t: (top.part[t], top.sub[t]))
        # 1. back to the previous active member, 2. else to a previous standby holder; below the active quota
        left = [t for t in tasks if not self._keep_active(self.prev_active.get(t), t)]
        rest = [t for t in left if not self._keep_active(self._least_loaded_holder(self.prev_standby.get(t), None), t)]
        rest.sort(key=lambda t: (top.sub[t], top.part[t]))
        heap, key = self._process_heap()
        procs = self.processes
        for t in rest:  # 3. least-loaded process, least-loaded member
            p = _poll(heap, key)
            count = self._give_least_loaded(procs[p], t, True)
            key[p] = procs[p].load
            self._active_placed(count)
            self._task_placed(count)
            _sift_up(heap, p, key)

    def _keep_active(self, m: int | None, task: int) -> bool:
        """Give ``task`` as an active to member ``m`` if it is below the active quota; whether it did."""
        if m is None or self.proc_of[m].counts[m] >= self.active_quota:
            return False
        count = self._give(m, task, True)
        self._active_placed(count)
        self._task_placed(count)
        return True

    def assign_standby(self) -> None:
        top = self.top
        tasks = sorted((t for t in range(len(top.ids)) if top.stateful[t]),
                       key=lambda t: (top.part[t], top.sub[t]), reverse=True)
        fallback: list[tuple[int, int]] = []
        for t in tasks:
            for i in range(self.standbys):
                m = self.prev_active.get(t)
                if m is not None:
                    proc = self.proc_of[m]
                    if t not in proc.assigned and proc.counts[m] < self.task_quota:
                        self._task_placed(self._give(m, t, False))
                        continue
                m = self._least_loaded_holder(self.prev_standby.get(t), t)
                if m is not None and self.proc_of[m].counts[m] < self.task_quota:
                    self._task_placed(self._give(m, t, False))
                    continue
                fallback.append((t, self.standbys - i))
                break
        fallback.sort(key=lambda x: (top.sub[x[0]], top.part[x[0]]), reverse=True)
        heap, key = self._process_heap()
        for t, replicas in fallback:
            for _ in range(replicas):
                if not self._standby_to_least_loaded(heap, key, t):
                    break  # Kafka logs "not enough available capacity" and places no more of them

    def _standby_to_least_loaded(self, heap: list[int], key: list[float], task: int) -> bool:
        """``assignStandbyToMemberWithLeastLoad``: poll until a process without the task; re-add the polled."""
        procs = self.processes
        polled = []
        found = False
        while heap:
            p = _poll(heap, key)
            polled.append(p)
            proc = procs[p]
            if task not in proc.assigned:
                self._task_placed(self._give_least_loaded(proc, task, False))
                key[p] = proc.load
                found = True
                break
        for p in reversed(polled):  # the recursion adds them back innermost first
            _sift_up(heap, p, key)
        return found

    def _process_heap(self) -> tuple[list[int], list[float]]:
        """``new PriorityQueue<>(comparingDouble(load))`` + ``addAll(processIdToState.values())``."""
        key = [p.load for p in self.processes]
        heap: list[int] = []
        for p in range(len(self.processes)):
            _sift_up(heap, p, key)
        return heap, key

    def result(self) -> tuple[list[list[int]], list[list[int]]]:
        """Per member (coordinator order): active and standby task numbers."""
        return self.active, self.standby


def _per_member(tasks: int, members: int) -> int:
    """``computeTasksPerMember``: ``ceil(tasks / members)``, 0 without members."""
    return 0 if members == 0 else -(-tasks // members)


def server_sticky_assign(instance: Instance, version: KafkaVersion = DEFAULT) -> StreamsAssignment:
    """The group coordinator's Streams ``StickyTaskAssignor`` at Kafka ``version``.

    Returns
    -------
    StreamsAssignment
        Per client the union of its members' tasks, and ``members`` (every
        member, also those that get nothing).

    Examples
    --------
    Two processes, one of two members: three tasks, no previous assignment.

    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "protocol": "streams",
    ...     "tasks": [{"id": "0_0"}, {"id": "0_1"}, {"id": "0_2"}],
    ...     "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001",
    ...                  "members": [{"id": "a1"}, {"id": "a2"}]},
    ...                 {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002",
    ...                  "members": [{"id": "b1"}]}],
    ...     "config": {"num_standby_replicas": 1}})
    >>> out = server_sticky_assign(inst).to_json_dict()
    >>> {m: (v["active"], v["standby"]) for m, v in out["members"].items()}
    {'a1': (['0_0'], ['0_1']), 'a2': (['0_2'], []), 'b1': (['0_1'], ['0_0', '0_2'])}
    """
    return assign_with_rule(instance, ReleaseRules.at(version))


def assign_with_rule(instance: Instance, rule: ReleaseRules) -> StreamsAssignment:
    """:func:`server_sticky_assign` with the release-dependent parts given one by one."""
    spec: StreamsSpec = instance.streams
    if instance.protocol != "streams" or not isinstance(spec, StreamsSpec):
        raise UnsupportedInstanceError("a Streams task assignor needs a protocol 'streams' instance")
    if not spec.clients:
        return StreamsAssignment.from_lists({}, False, {})
    run = _Assignor(spec, rule)
    run.assign_active()
    if run.standbys > 0:
        run.assign_standby()
    active, standby = run.result()
    ids = run.top.ids  # task numbers follow Kafka's task order: sorting numbers sorts the ids
    members: dict[str, ClientAssignment] = {}
    per_client: list[tuple[list[int], list[int]]] = [([], []) for _ in spec.clients]
    for m, mid in enumerate(run.group.ids):
        a, s = per_client[run.group.client[m]]
        a.extend(active[m])
        s.extend(standby[m])
        if spec.clients[run.group.client[m]].members is None:
            continue  # a synthetic member of a client listed without members: not a group member to write out
        members[mid] = ClientAssignment(tuple(ids[t] for t in sorted(active[m])),
                                        tuple(ids[t] for t in sorted(standby[m])))
    clients = {cl.id: ClientAssignment(tuple(ids[t] for t in sorted(set(a))), tuple(ids[t] for t in sorted(set(s))))
               for cl, (a, s) in zip(spec.clients, per_client, strict=True)}
    return StreamsAssignment(MappingProxyType(clients), False, MappingProxyType(members) if spec.has_members else None)


def _version(params: Params) -> KafkaVersion:
    return release(params.kafka_version)


@register(
    "streams-server-sticky",
    kind="heuristic",
    protocol="streams",
    summary="Kafka KIP-1071 group coordinator sticky task assignor: per member, quota-bound, previous holders "
            "first",
    source="org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor (KIP-1071; KAFKA-20899, "
           "KAFKA-20719, KAFKA-20790)",
    versions=STREAMS_SERVER_STICKY,
)
def streams_server_sticky(instance: Instance, params: Params) -> Result:
    """Registry entry for :func:`server_sticky_assign` at the release in ``params.kafka_version``."""
    return Result(server_sticky_assign(instance, _version(params)), extra={"probing_rebalance": False})


#: ``fn(instance, version)`` signature of the assignor, for callers that pick the release themselves.
Assign = Callable[[Instance, KafkaVersion], StreamsAssignment]
