"""Kafka's KIP-848 server-side ``UniformAssignor`` (group coordinator, Kafka 4.0.0 to 4.4).

Two builders, chosen by whether every member subscribes to the same topics:

- homogeneous (``UniformHomogeneousAssignmentBuilder``): quotas
  ``total // members`` and ``total % members`` members get one more: at
  Kafka 4.0.0 the first ones in the coordinator's member ``HashMap`` order,
  from 4.0.1 (KAFKA-18688) a member keeps the larger quota only when its kept
  partitions fill it or when the last members walked must take the slots
  left (:func:`_quotas`); each member keeps its
  current partitions up to its quota (topics in ``HashMap<Uuid>`` order,
  partitions in ``HashSet<Integer>`` order) and the rest is revoked; free
  partitions (never-owned ones by topic in ``HashSet<Uuid>`` order, then the
  revoked ones) fill the members below quota in member order.
- heterogeneous (``UniformHeterogeneousAssignmentBuilder``): members keep every
  current partition of a topic they still subscribe to; free partitions go,
  topic by topic (most partitions per subscriber first, then fewest
  subscribers, then topic id), to the least-loaded subscribers (ties by member
  number); then up to 16 passes over the shared topics move partitions from
  the most- to the least-loaded subscribers of each topic until each topic's
  subscribers differ by at most one.

Racks are ignored (rack awareness was removed in 2024, before 4.0.0).  The
work is done on one flat array over all topic-partitions, so a million
partitions take seconds, not minutes.
"""

from __future__ import annotations

import numpy as np

from heuristics._java import DEFAULT_JAVA, java_release
from heuristics.kip848.java_order import (
    TopicHashes,
    hashset_rank,
    is_homogeneous,
    member_map_order,
    owned_entries,
    subscribed,
    subscribed_id_order,
    topic_id_map,
    uuid_compare_key,
)
from heuristics.versions import KAFKA_18688, UNIFORM
from solver.kafka_version import release
from solver.model import Assignment, Instance
from solver.registry import register
from solver.result import Params, Result


class _Flat:
    """All topic-partitions of some topics laid out in one array, topic by topic.

    ``owner`` holds the first holder of each partition (``-1``: none) as a
    member number; ``extra`` keeps further holders, which only arise when two
    members' current assignments claim the same partition (Kafka then keeps it
    in both).
    """

    def __init__(self, instance: Instance, topics: list[str]) -> None:
        self.topics = topics
        sizes = np.asarray([instance.topics[t].partitions for t in topics], dtype=np.int64)
        self.offset = np.concatenate(([0], np.cumsum(sizes)))
        self.owner = np.full(int(self.offset[-1]), -1, dtype=np.int64)
        self.extra: list[tuple[int, int]] = []  # (flat index, member number)

    def give(self, flat: np.ndarray, members: np.ndarray) -> None:
        """Add ``flat[j]`` to member ``members[j]``'s assignment, in this order."""
        if flat.size == 0:
            return
        _, first = np.unique(flat, return_index=True)
        once = np.zeros(flat.size, dtype=bool)
        once[first] = True
        free = once & (self.owner[flat] < 0)
        self.owner[flat[free]] = members[free]
        if not free.all():
            self.extra.extend(zip(flat[~free].tolist(), members[~free].tolist(), strict=True))

    def assignment(self, member_ids: list[str]) -> Assignment:
        """The result; ``member_ids[k]`` is member number ``k``."""
        owners = {t: self.owner[self.offset[k]:self.offset[k + 1]] for k, t in enumerate(self.topics)}
        base = Assignment.from_owners(member_ids, owners)
        if not self.extra:
            return base
        data = base.to_lists()
        for f, m in self.extra:
            k = int(np.searchsorted(self.offset, f, side="right")) - 1
            parts = data[member_ids[m]].setdefault(self.topics[k], [])
            if f - int(self.offset[k]) not in parts:  # Kafka's assignment holds sets
                parts.append(f - int(self.offset[k]))
        return Assignment.from_lists(data)


def homogeneous_assign(instance: Instance, order: list[int], stable_extra: bool = True,
                       java: int = DEFAULT_JAVA) -> _Flat:
    """``UniformHomogeneousAssignmentBuilder.build``; member numbers are positions in ``order``.

    Parameters
    ----------
    instance
        The group; all members subscribe to the same topics.
    order
        Member indices in the coordinator's member map order.
    stable_extra
        Kafka 4.0.1 and later (KAFKA-18688): a member offered one of the
        ``total % members`` extra partitions keeps the extra slot only when the
        partitions it keeps fill it, or when it is one of the last members
        walked that must take the slots still left.  ``False``: Kafka 4.0.0,
        the first ``total % members`` members walked take them.
    java
        The Java release running the coordinator: it sizes the copied sets whose order Kafka walks
        (:func:`heuristics._java.copy_initial_capacity`).
    """
    ids = topic_id_map(instance)
    topic_order = subscribed_id_order(instance, order[0], ids, java)
    flat = _Flat(instance, topic_order)
    if not topic_order:
        return flat
    pos = {t: k for k, t in enumerate(topic_order)}
    mem, top, part = owned_entries(instance, order, pos, TopicHashes(instance, ids))
    # each (member, topic) run iterates as a HashSet<Integer>
    run = np.concatenate(([0], np.cumsum((np.diff(mem) != 0) | (np.diff(top) != 0))))
    perm = hashset_rank(run, part)  # grown by add in the listed order
    mem, top, part = mem[perm], top[perm], part[perm]
    idx = flat.offset[top] + part

    # isPartitionAssigned: some member's current assignment holds the partition
    claimed = np.zeros(flat.owner.size, dtype=bool)
    claimed[idx] = True

    n_members = len(order)
    min_quota, extra = divmod(flat.owner.size, n_members)
    claims = np.bincount(mem, minlength=n_members)
    quota, remaining = _quotas(claims, min_quota, extra, stable_extra)
    # a member keeps claims in iteration order until its quota is reached, then revokes the rest
    start = np.searchsorted(mem, np.arange(n_members))
    rank = np.arange(mem.size) - start[mem]
    keep = rank < quota[mem]
    flat.give(idx[keep], mem[keep])

    queue = np.concatenate((np.flatnonzero(~claimed), idx[~keep]))  # never owned, then revoked
    needy = np.flatnonzero(remaining > 0)
    receivers = np.repeat(needy, remaining[needy])[:queue.size]
    flat.give(queue[:receivers.size], receivers)
    return flat


def _quotas(claims: np.ndarray, min_quota: int, extra: int, stable_extra: bool) -> tuple[np.ndarray, np.ndarray]:
    """``maybeRevokePartitions``' quotas: how many claims each member keeps, and how many it still takes.

    Members are walked in map order; one offered an extra slot (``extra``
    left) keeps up to ``min_quota + 1`` claims.  From Kafka 4.0.1
    (``stable_extra``) it gives the slot back when its kept claims do not fill
    it and more members are left than slots.

    Examples
    --------
    7 partitions, 3 members, nobody owns anything (``(keep, take)``): 4.0.0
    gives the extra one to the first member walked, 4.0.1 to the last; a member
    offered the slot may still keep that many claims.

    >>> [q.tolist() for q in _quotas(np.zeros(3, dtype=np.int64), 2, 1, False)]
    [[3, 2, 2], [3, 2, 2]]
    >>> [q.tolist() for q in _quotas(np.zeros(3, dtype=np.int64), 2, 1, True)]
    [[3, 3, 3], [2, 2, 3]]
    """
    n = claims.size
    keep = np.full(n, min_quota, dtype=np.int64)
    take = np.zeros(n, dtype=np.int64)
    left_extra = extra
    for k in range(n):
        quota = min_quota
        has_extra = left_extra > 0
        if has_extra:
            quota += 1
        keep[k] = quota
        left = quota - min(int(claims[k]), quota)
        if stable_extra and left > 0 and has_extra and n - k > left_extra:
            left -= 1  # give the extra slot up for a later member
            has_extra = False
        take[k] = left
        if has_extra:
            left_extra -= 1
    return keep, take


MAX_ITERATION_COUNT = 16  # Kafka's cap on balancing passes over the topics


class _Balancer:
    """Kafka's ``MemberAssignmentBalancer``: least- and most-loaded ranges over sorted subscribers.

    ``sizes`` is the builder's live array of member assignment sizes; the
    ranges read it as partitions move, exactly as the Java code does.
    """

    def __init__(self, sizes: np.ndarray) -> None:
        self.sizes = sizes
        self.members: list[int] = []
        self.least_end = 0
        self.least_count = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_count = 1
        self.next_most = -1

    def initialize(self, members: np.ndarray) -> int:
        """Sort ``members`` by (size, index); return max size - min size."""
        s = self.sizes
        self.members = members[np.lexsort((members, s[members]))].tolist()
        n = len(self.members)
        first, last = int(s[self.members[0]]), int(s[self.members[-1]])
        self.least_end, self.least_count, self.next_least = 0, first - 1, 0
        self.most_start, self.most_end, self.most_count, self.next_most = n, n, last + 1, n - 1
        return last - first

    def next_least_loaded(self) -> int:
        """Next member to receive a partition (cycles over the least-loaded range)."""
        if self.next_least >= self.least_end:
            self.least_count += 1
            s, ms = self.sizes, self.members
            while self.least_end < len(ms) and s[ms[self.least_end]] == self.least_count:
                self.least_end += 1
            self.next_least = 0
        m = self.members[self.next_least]
        self.next_least += 1
        return m

    def next_most_loaded(self) -> int:
        """Next member to give up a partition, or -1 when none is left."""
        s, ms = self.sizes, self.members
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # the range emptied by exclusions: restart from the next member's size
                self.most_count = int(s[ms[self.most_start - 1]])
            else:
                self.most_count -= 1
            while self.most_start > 0 and s[ms[self.most_start - 1]] == self.most_count:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        m = ms[self.next_most]
        self.next_most -= 1
        return m

    def exclude_most_loaded(self) -> None:
        """Drop the member last returned by :meth:`next_most_loaded` from the most-loaded range."""
        ms = self.members
        j = self.next_most + 1
        ms[j], ms[self.most_end - 1] = ms[self.most_end - 1], ms[j]
        self.most_end -= 1

    def balanced(self) -> bool:
        return self.most_count - self.least_count <= 1


def least_loaded_sequence(sizes: np.ndarray, members: np.ndarray, count: int) -> np.ndarray:
    """Receivers of ``count`` partitions handed out by ``nextLeastLoadedMember`` from a fresh balancer.

    Kafka's balancer sorts the members by (size, index) and cycles over the
    prefix of members whose size is at most the current level, raising the
    level by one after each cycle: water filling.  Computed level by level,
    and in whole cycles once every member is in the range.

    Parameters
    ----------
    sizes
        Current assignment size per member index (not modified).
    members
        The topic's subscribers (member indices).
    count
        Number of partitions to hand out.

    Examples
    --------
    >>> least_loaded_sequence(np.array([2, 0, 1]), np.array([0, 1, 2]), 6).tolist()
    [1, 1, 2, 1, 2, 0]
    """
    arr = np.asarray(members, dtype=np.int64)
    order = np.lexsort((arr, sizes[arr]))
    sm, ss = arr[order], sizes[arr][order]
    out: list[np.ndarray] = []
    got, level, k = 0, int(ss[0]), sm.size
    while got < count:
        end = int(np.searchsorted(ss, level, side="right"))
        if end == k:  # everyone is in the range: whole cycles, then a partial one
            reps, rest = divmod(count - got, k)
            out.append(np.tile(sm, reps))
            out.append(sm[:rest])
            break
        take = min(end, count - got)
        out.append(sm[:take])
        got += take
        level += 1
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def heterogeneous_assign(instance: Instance, order: list[int]) -> _Flat:
    """``UniformHeterogeneousAssignmentBuilder.build``; member numbers are positions in ``order``.

    Parameters
    ----------
    instance
        The group (subscriptions differ between members).
    order
        Member indices in the coordinator's member map order; Kafka numbers
        members by this order and breaks ties by that number.
    """
    ids = topic_id_map(instance)
    subs: dict[str, list[int]] = {}
    for k, i in enumerate(order):
        for t in subscribed(instance, i):
            subs.setdefault(t, []).append(k)
    subscribers = {t: np.asarray(v, dtype=np.int64) for t, v in subs.items()}
    topics = list(subscribers)
    flat = _Flat(instance, topics)
    pos = {t: k for k, t in enumerate(topics)}
    mem, top, part = owned_entries(instance, order, pos)
    sizes = np.bincount(mem, minlength=len(order)).astype(np.int64)
    # the owner array records the last claimer; earlier claimers of the same partition keep it too
    idx = flat.offset[top] + part
    rev = np.arange(idx.size)[::-1]
    _, last = np.unique(idx[rev], return_index=True)
    is_last = np.zeros(idx.size, dtype=bool)
    is_last[rev[last]] = True
    flat.owner[idx[is_last]] = mem[is_last]
    flat.extra.extend(zip(idx[~is_last].tolist(), mem[~is_last].tolist(), strict=True))

    def topic_key(t: str) -> tuple[float, int, tuple[int, int]]:
        # partitions per subscriber descending, then subscribers ascending, then topic id
        n, c = instance.topics[t].partitions, subscribers[t].size
        return (-(n / c), c, uuid_compare_key(ids[t]))

    for t in sorted(topics, key=topic_key):
        own = flat.owner[flat.offset[pos[t]]:flat.offset[pos[t] + 1]]
        free = np.flatnonzero(own < 0)
        if free.size:
            receivers = least_loaded_sequence(sizes, subscribers[t], free.size)
            own[free] = receivers
            np.add.at(sizes, receivers, 1)

    shared = sorted((t for t in topics if subscribers[t].size >= 2), key=topic_key)
    balancer = _Balancer(sizes)
    last_moved = -1
    for _ in range(MAX_ITERATION_COUNT):
        for k, t in enumerate(shared):
            if k == last_moved:
                return flat  # a whole pass without moves
            own = flat.owner[flat.offset[pos[t]]:flat.offset[pos[t] + 1]]
            if _balance_topic(subscribers[t], own, balancer) > 0 or last_moved == -1:
                last_moved = k
    return flat


def _balance_topic(members: np.ndarray, own: np.ndarray, balancer: _Balancer) -> int:
    """Kafka's ``balanceTopic``: move a topic's partitions from most- to least-loaded subscribers."""
    if balancer.initialize(members) <= 1:
        return 0
    sizes = balancer.sizes
    # partitions grouped by owner (ascending), each owner's run ascending; take from the run's end
    parts = np.lexsort((np.arange(own.size), own))
    uniq, starts, counts = np.unique(own[parts], return_index=True, return_counts=True)
    start = dict(zip(uniq.tolist(), starts.tolist(), strict=True))
    end = {o: s + c for o, s, c in zip(uniq.tolist(), starts.tolist(), counts.tolist(), strict=True)}
    moved = 0
    while not balancer.balanced():
        while True:
            most = balancer.next_most_loaded()
            if most == -1:
                break
            if most not in end or end[most] - start[most] <= 0:
                balancer.exclude_most_loaded()
                continue
            break
        if most == -1:
            break
        end[most] -= 1
        p = int(parts[end[most]])
        least = balancer.next_least_loaded()
        if balancer.balanced():
            break
        old = int(own[p])
        if old != -1:
            sizes[old] -= 1
        own[p] = least
        sizes[least] += 1
        moved += 1
    return moved


def uniform_assign(instance: Instance, stable_extra: bool = True, java: int = DEFAULT_JAVA) -> Assignment:
    """The group coordinator's ``UniformAssignor.assign`` on ``instance``.

    Members' ``owned`` partitions are their current assignment; topic ``id`` s
    (UUIDs) decide orders where Kafka iterates or sorts topics.
    ``stable_extra``: Kafka 4.0.1 and later (KAFKA-18688, see
    :func:`homogeneous_assign`); ``False`` gives Kafka 4.0.0's answer.
    ``java``: the Java release running the coordinator (``-O java``, default
    :data:`heuristics._java.DEFAULT_JAVA`).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t": 4},
    ...     "members": [{"id": "a", "topics": ["t"], "owned": {"t": [0, 1, 2, 3]}},
    ...                 {"id": "b", "topics": ["t"]}]})
    >>> uniform_assign(inst).to_lists()
    {'a': {'t': [0, 1]}, 'b': {'t': [2, 3]}}
    """
    if not instance.members:
        return Assignment.from_lists({})
    order, flat = uniform_flat(instance, stable_extra, java)
    ids = instance.member_ids
    return flat.assignment([ids[i] for i in order])


def uniform_flat(instance: Instance, stable_extra: bool = True, java: int = DEFAULT_JAVA
                 ) -> tuple[list[int], _Flat]:
    """Run the builder Kafka picks; returns the member map order and the flat owner layout."""
    order = member_map_order(instance)
    if is_homogeneous(instance, order):
        return order, homogeneous_assign(instance, order, stable_extra, java)
    return order, heterogeneous_assign(instance, order)


@register(
    "uniform",
    kind="heuristic",
    protocol="consumer",
    summary="Kafka KIP-848 server-side uniform assignor: balanced, sticky to current assignment",
    source="org.apache.kafka.coordinator.group.assignor.UniformAssignor (KIP-848); KAFKA-18688 in 4.0.1",
    versions=UNIFORM,
)
def uniform_assignor(instance: Instance, params: Params) -> Result:
    """Registry entry for :func:`uniform_assign` at the release in ``params.kafka_version``."""
    version = release(params.kafka_version)
    return Result(assignment=uniform_assign(instance, stable_extra=version >= KAFKA_18688,
                                            java=java_release(params.options)))
