"""Kafka Streams' ``ClientTagAwareStandbyTaskAssignor`` (KIP-708): standbys spread over client tags.

When ``config.rack_aware_assignment_tags`` (Kafka's ``rack.aware.assignment.tags``) names at least one
key, ``high-availability`` places standbys with this assignor instead of the least-loaded one (Kafka's
``StandbyTaskAssignorFactory``; every release of the matrix from 3.8.0, the same rule). Clients are the
indices of :class:`~heuristics.streams.client_state.StreamsContext` (process-id order, Kafka's
``TreeMap<ProcessId, ClientState>``), tasks its task indices.

**Placement** (:meth:`ClientTagStandbys.assign`), stateful tasks in task order, each from the client
holding its active:

1. Every client is offered to the least-loaded priority set (assigned tasks per thread, then process id;
   a client that holds the task is never taken).
2. *Used* tag entries start from the active's client, ``used = 1``; then, for each standby replica:
   the last client placed updates them -- for each of its tags whose key is configured, when the key has
   at most ``used`` distinct values over all clients every entry of that key is forgotten (the key can
   no longer tell clients apart), otherwise its ``(key, value)`` entry with every client carrying it is
   marked used -- and the lightest client on no used entry takes the replica (``used`` grows by one; the
   taken client is not offered back). A client without a key is on no entry of that key.
3. When no client qualifies, the task's remaining replicas wait; once every task was walked, all clients
   are offered again and the waiting tasks, in the order of Kafka's ``HashMap<TaskId, Integer>`` (filled
   with every stateful task in task order by ``Collectors.toMap``, the placed ones removed), take the
   lightest clients without the task, each offered back after it takes one.

**Movement rules** that follow the placement in ``high-availability``:

- :meth:`ClientTagStandbys.may_move` (``balanceTasksOverThreads`` over standbys): a standby moves from a
  source to a destination only when the destination has every tag of the source with the same value
  (*every* tag the source has, configured or not).
- :meth:`ClientTagStandbys.may_move_task` (KIP-925's ``optimizeStandbyTasks``, when rack awareness is on):
  the distinct ``(key, value)`` tags of the task's other holders plus the destination's must be at least
  as many as with the source's.

Examples
--------
Kafka's own example: two clusters, three zones, two standbys. The active's client is ``(a, k1)``; the
first standby goes to another zone *and* cluster, the second to the third zone (either cluster):

>>> from heuristics.streams.client_state import ClientState
>>> tags = [{"zone": z, "cluster": k} for k in ("k1", "k2") for z in ("a", "b", "c")]
>>> cts = ClientTagStandbys(tags, ["zone", "cluster"], [17 * i for i in range(6)])
>>> states = [ClientState(1) for _ in tags]
>>> states[0].assign_active(0)
>>> cts.assign(states, [0], 2)
>>> sorted((tags[c]["zone"], tags[c]["cluster"]) for c in range(6) if 0 in states[c].standby)
[('b', 'k2'), ('c', 'k1')]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from heuristics._java import JavaHashMap
from heuristics.streams.client_state import ClientState
from heuristics.streams.java import ConstrainedPrioritySet
from heuristics.streams.sticky_task import task_java_hash

TagEntry = tuple[str, str]


class ClientTagStandbys:
    """``ClientTagAwareStandbyTaskAssignor`` over clients ``0..n-1`` (process-id order).

    Parameters
    ----------
    tags
        Each client's tags (``client.tag.*``), by client index.
    keys
        ``rack.aware.assignment.tags`` (read as a set).
    java_hash
        ``ProcessId.hashCode()`` per client (the order skipped clients are offered back).
    task_keys
        ``(sub-topology, partition)`` per task index (``TaskId.hashCode()`` orders the waiting tasks); by
        default task ``t`` is ``(0, t)``.
    """

    def __init__(self, tags: Sequence[Mapping[str, str]], keys: Iterable[str], java_hash: Sequence[int],
                 task_keys: Sequence[tuple[int, int]] | None = None) -> None:
        self.tags = [dict(t) for t in tags]
        self.keys = set(keys)
        self.java_hash = list(java_hash)
        self.task_keys = task_keys
        # fillClientsTagStatistics: every key, configured or not, over every client
        self.values: dict[str, set[str]] = {}
        self.holders: dict[TagEntry, set[int]] = {}
        for c, t in enumerate(self.tags):
            for k, v in t.items():
                self.values.setdefault(k, set()).add(v)
                self.holders.setdefault((k, v), set()).add(c)

    def _task_hash(self, t: int) -> int:
        return task_java_hash(self.task_keys[t] if self.task_keys is not None else (0, t))

    def assign(self, states: list[ClientState], stateful: Sequence[int], replicas: int) -> None:
        """Place ``replicas`` standbys of every task of ``stateful`` (task order), as Kafka does."""
        n = len(states)

        def load(c: int) -> float:
            return states[c].assigned_load()

        pset = ConstrainedPrioritySet(lambda c, t: not states[c].has(t), load, self.java_hash)
        remaining = {t: replicas for t in stateful}
        for t in stateful:
            owner = next((c for c in range(n) if t in states[c].active), None)
            if owner is not None:
                self._assign_task(states, pset, t, owner, remaining)
        if not remaining:
            return
        # Collectors.toMap: a HashMap filled in task order; placed tasks were removed (order kept)
        table = JavaHashMap(self._task_hash)
        for t in stateful:
            table.put(t)
        pset.offer_all(range(n))
        for t in table.order():
            if t not in remaining:
                continue
            left = remaining[t]
            while left > 0:
                c = pset.poll(t)
                if c is None:
                    break  # Kafka logs "not enough capacity"
                states[c].assign_standby(t)
                left -= 1
                pset.offer(c)

    def _assign_task(self, states: list[ClientState], pset: ConstrainedPrioritySet, task: int, owner: int,
                     remaining: dict[int, int]) -> None:
        pset.offer_all(range(len(states)))
        used_count = 1
        left = remaining[task]
        used: dict[TagEntry, set[int]] = {}
        last = owner

        def on_no_used_entry(c: int) -> bool:
            return not any(c in holders for holders in used.values())

        while True:
            self._mark_used(last, used_count, used)
            c = pset.poll(task, on_no_used_entry)
            if c is None:
                break
            used_count += 1
            left -= 1
            states[c].assign_standby(task)
            last = c
            if left <= 0:
                break
        if left > 0:
            remaining[task] = left
        else:
            del remaining[task]

    def _mark_used(self, client: int, used_count: int, used: dict[TagEntry, set[int]]) -> None:
        """``updateClientsOnAlreadyUsedTagEntries`` (each key on its own: the order of the tags is moot)."""
        for key, value in self.tags[client].items():
            if key not in self.keys:
                continue  # Kafka logs that the tag is not configured
            values = self.values[key]
            if len(values) <= used_count:
                for v in values:
                    used.pop((key, v), None)
            else:
                used[(key, value)] = self.holders[(key, value)]

    def may_move(self, src: int, dst: int) -> bool:
        """The two-client ``isAllowedTaskMovement``: the destination has every tag of the source alike."""
        dst_tags = self.tags[dst]
        return all(dst_tags.get(k) == v for k, v in self.tags[src].items())

    def may_move_task(self, src: int, dst: int, task: int, states: Sequence[ClientState]) -> bool:
        """The per-task ``isAllowedTaskMovement``: moving ``task`` keeps as many distinct tags among its
        holders."""
        others: set[TagEntry] = set()
        for c, st in enumerate(states):
            if c != src and c != dst and st.has(task):
                others.update(self.tags[c].items())
        with_src = others | self.tags[src].items()
        with_dst = others | self.tags[dst].items()
        return len(with_dst) >= len(with_src)


def client_tag_standbys(tags: Sequence[Mapping[str, str]], keys: Sequence[str], java_hash: Sequence[int],
                        task_keys: Sequence[tuple[int, int]]) -> ClientTagStandbys | None:
    """The tag-aware standby assignor when ``keys`` names a tag (Kafka's ``StandbyTaskAssignorFactory``),
    else ``None`` (the least-loaded placement)."""
    return ClientTagStandbys(tags, keys, java_hash, task_keys) if keys else None
