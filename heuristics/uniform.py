"""Kafka's KIP-848 server-side ``UniformAssignor`` (group coordinator, October 2024).

Two builders, chosen by whether every member subscribes to the same topics:

- homogeneous (``UniformHomogeneousAssignmentBuilder``): quotas
  ``total // members``, the first ``total % members`` members in the
  coordinator's member ``HashMap`` order get one more; each member keeps its
  current partitions up to its quota (topics in ``HashMap<Uuid>`` order,
  partitions in ``HashSet<Integer>`` order) and the rest is revoked; free
  partitions (never-owned ones by topic in ``HashSet<Uuid>`` order, then the
  revoked ones) fill the members below quota in member order.
- heterogeneous (``UniformHeterogeneousAssignmentBuilder``): members keep every
  current partition of a topic they still subscribe to; free partitions go,
  topic by topic (most partitions per subscriber first, then fewest
  subscribers, then topic id), to the least-loaded subscribers (ties by member
  index); then up to 16 passes over the shared topics move partitions from
  the most- to the least-loaded subscribers of each topic until each topic's
  subscribers differ by at most one.

Racks are ignored at that commit (rack awareness was removed in 2024).
"""

from __future__ import annotations

import numpy as np

from heuristics._kip848 import (
    OwnedOrder,
    int_hashset_order,
    is_homogeneous,
    member_map_order,
    subscribed,
    subscribed_id_order,
    topic_id_map,
    uuid_compare_key,
)
from solver.model import Assignment, Instance
from solver.registry import register
from solver.result import Params, Result


class _Owners:
    """Per-topic owner arrays, plus the rare extra holders when two members keep one partition.

    Kafka keeps whatever each member's current assignment holds; if two
    members claim the same partition both may keep it.  The arrays hold the
    first holder, ``extra`` any further ones, so the output stays exact.
    """

    def __init__(self, instance: Instance, topics: list[str]) -> None:
        self.arrays = {t: np.full(instance.topics[t].partitions, -1, dtype=np.int64) for t in topics}
        self.extra: list[tuple[int, str, int]] = []

    def put(self, topic: str, parts: np.ndarray, member: int) -> None:
        own = self.arrays[topic]
        taken = own[parts] >= 0
        if taken.any():
            self.extra.extend((member, topic, int(p)) for p in parts[taken].tolist())
            parts = parts[~taken]
        own[parts] = member

    def assignment(self, member_ids: list[str]) -> Assignment:
        base = Assignment.from_owners(member_ids, self.arrays)
        if not self.extra:
            return base
        data = {m: {t: list(a) for t, a in tp.items()} for m, tp in base.to_lists().items()}
        for k, t, p in self.extra:
            data[member_ids[k]].setdefault(t, []).append(p)
        return Assignment.from_lists(data)


def homogeneous_owners(instance: Instance, order: list[int]) -> _Owners:
    """``UniformHomogeneousAssignmentBuilder.build``.

    Parameters
    ----------
    instance
        The group; all members subscribe to the same topics.
    order
        Member indices in the coordinator's member map order.

    Returns
    -------
    _Owners
        Owner values are instance member indices.
    """
    ids = topic_id_map(instance)
    topic_order = subscribed_id_order(instance, order[0], ids)
    owners = _Owners(instance, topic_order)
    if not topic_order:
        return owners
    sizes = {t: instance.topics[t].partitions for t in topic_order}

    # isPartitionAssigned: some member's current assignment holds the partition
    claimed = {t: np.zeros(sizes[t], dtype=bool) for t in topic_order}
    for i in order:
        for t, parts in instance.members[i].owned.items():
            if t in claimed:
                claimed[t][parts] = True
    queue_t = [np.full(int((~claimed[t]).sum()), k, dtype=np.int64) for k, t in enumerate(topic_order)]
    queue_p = [np.flatnonzero(~claimed[t]) for t in topic_order]

    min_quota, extra = divmod(sum(sizes.values()), len(order))
    unfilled: list[tuple[int, int]] = []
    revoked_t: list[int] = []
    revoked_p: list[int] = []
    t_index = {t: k for k, t in enumerate(topic_order)}
    owned_order = OwnedOrder(instance, ids)
    for i in order:
        quota = min_quota
        if extra > 0:
            quota += 1
            extra -= 1
        for t, parts in owned_order(i):
            if t not in t_index:
                continue  # no longer subscribed: the whole topic is dropped
            if parts.size <= quota:
                quota -= int(parts.size)
                owners.put(t, parts, i)
                continue
            seq = int_hashset_order(parts)  # keep the first `quota` in HashSet order
            owners.put(t, np.asarray(seq[:quota], dtype=np.int64), i)
            revoked_t.extend([t_index[t]] * (len(seq) - quota))
            revoked_p.extend(seq[quota:])
            quota = 0
        if quota > 0:
            unfilled.append((i, quota))

    # free partitions: never-owned ones topic by topic, then the revoked ones in revocation order
    flat_t = np.concatenate([*queue_t, np.asarray(revoked_t, dtype=np.int64)])
    flat_p = np.concatenate([*queue_p, np.asarray(revoked_p, dtype=np.int64)])
    cursor = 0
    for i, remaining in unfilled:
        take = min(remaining, flat_p.size - cursor)
        if take <= 0:
            break
        seg_t, seg_p = flat_t[cursor:cursor + take], flat_p[cursor:cursor + take]
        cursor += take
        for k in np.unique(seg_t).tolist():
            owners.put(topic_order[k], seg_p[seg_t == k], i)
    return owners


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

    def initialize(self, members: list[int]) -> int:
        """Sort ``members`` by (size, index); return max size - min size."""
        s = self.sizes
        arr = np.asarray(members, dtype=np.int64)
        self.members = arr[np.lexsort((arr, s[arr]))].tolist()
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


def least_loaded_sequence(sizes: np.ndarray, members: list[int], count: int) -> np.ndarray:
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
    >>> least_loaded_sequence(np.array([2, 0, 1]), [0, 1, 2], 6).tolist()
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


def heterogeneous_owners(instance: Instance, order: list[int]) -> dict[str, np.ndarray]:
    """``UniformHeterogeneousAssignmentBuilder.build`` as owner arrays.

    Parameters
    ----------
    instance
        The group (subscriptions differ between members).
    order
        Member indices in the coordinator's member map order; Kafka numbers
        members by this order and breaks ties by that number.

    Returns
    -------
    dict
        Topic -> owner array whose values index ``order`` (``-1``: unassigned).
    """
    ids = topic_id_map(instance)
    nm = len(order)
    subscribers: dict[str, list[int]] = {}
    for k, i in enumerate(order):
        for t in subscribed(instance, i):
            subscribers.setdefault(t, []).append(k)
    sizes = np.zeros(nm, dtype=np.int64)
    owners = {t: np.full(instance.topics[t].partitions, -1, dtype=np.int64) for t in subscribers}
    for k, i in enumerate(order):
        member = instance.members[i]
        subs = set(subscribed(instance, i))
        for t, parts in member.owned.items():
            if t in subs:  # partitions of unsubscribed topics are revoked
                sizes[k] += parts.size
                owners[t][parts] = k

    def topic_key(t: str) -> tuple[float, int, tuple[int, int]]:
        # partitions per subscriber descending, then subscribers ascending, then topic id
        n, c = instance.topics[t].partitions, len(subscribers[t])
        return (-(n / c), c, uuid_compare_key(ids[t]))

    for t in sorted(subscribers, key=topic_key):
        free = np.flatnonzero(owners[t] < 0)
        if free.size:
            receivers = least_loaded_sequence(sizes, subscribers[t], free.size)
            owners[t][free] = receivers
            np.add.at(sizes, receivers, 1)

    balancer = _Balancer(sizes)

    shared = sorted((t for t in subscribers if len(subscribers[t]) >= 2), key=topic_key)
    if shared:
        _balance_topics(instance, shared, subscribers, owners, balancer)
    return owners


def _balance_topics(instance: Instance, topics: list[str], subscribers: dict[str, list[int]],
                    owners: dict[str, np.ndarray], balancer: _Balancer) -> None:
    """Kafka's ``balanceTopics``: passes over the topics until one full pass moves nothing."""
    last = -1
    for _ in range(MAX_ITERATION_COUNT):
        for idx, t in enumerate(topics):
            if idx == last:
                return
            moved = _balance_topic(subscribers[t], owners[t], balancer)
            if moved > 0 or last == -1:
                last = idx


def _balance_topic(members: list[int], own: np.ndarray, balancer: _Balancer) -> int:
    """Kafka's ``balanceTopic``: move a topic's partitions from most- to least-loaded subscribers."""
    if balancer.initialize(members) <= 1:
        return 0
    sizes = balancer.sizes
    # partitions grouped by owner (ascending), each owner's run ascending; take from the run's end
    parts = np.lexsort((np.arange(own.size), own))
    owners_sorted = own[parts]
    uniq, starts, counts = np.unique(owners_sorted, return_index=True, return_counts=True)
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


def uniform_assign(instance: Instance) -> Assignment:
    """The group coordinator's ``UniformAssignor.assign`` on ``instance``.

    Members' ``owned`` partitions are their current assignment; topic ``id`` s
    (UUIDs) decide orders where Kafka iterates or sorts topics.

    Examples
    --------
    >>> from solver.formats import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t": 4},
    ...     "members": [{"id": "a", "topics": ["t"], "owned": {"t": [0, 1, 2, 3]}},
    ...                 {"id": "b", "topics": ["t"]}]})
    >>> uniform_assign(inst).to_lists()
    {'a': {'t': [0, 1]}, 'b': {'t': [2, 3]}}
    """
    if not instance.members:
        return Assignment.from_lists({})
    order = member_map_order(instance)
    if is_homogeneous(instance, order):
        return homogeneous_owners(instance, order).assignment(list(instance.member_ids))
    owners = heterogeneous_owners(instance, order)
    return Assignment.from_owners([instance.member_ids[i] for i in order], owners)


@register(
    "uniform",
    kind="heuristic",
    protocol="consumer",
    summary="Kafka KIP-848 server-side uniform assignor: balanced, sticky to current assignment",
    source="org.apache.kafka.coordinator.group.assignor.UniformAssignor (KIP-848)",
)
def uniform_assignor(instance: Instance, params: Params) -> Result:
    """Registry entry for :func:`uniform_assign` (``params`` are not used)."""
    return Result(assignment=uniform_assign(instance))

