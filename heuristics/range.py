"""Kafka's client-side ``RangeAssignor``, including the KIP-881 rack-aware path.

Per topic, the subscribers are laid out in ``MemberInfo`` order (static members
first by ``group.instance.id``, then dynamic members by member id, both in Java
``String`` order) and the partitions in numeric order; each subscriber gets a
contiguous range, the first ``partitions % subscribers`` one partition more.

With KIP-881 (when some subscriber of a topic has a rack and the topic's replica
racks are uneven), partitions are first handed out only where the member's rack
holds a replica, keeping the per-topic quotas; topics with the same subscribers
and the same partition count are treated as one co-partitioned unit so that
partition ``i`` of every such topic goes to the same member.  Whatever rack
matching leaves over is assigned by the plain range rule.

Range ignores previously owned partitions (real clients send none to it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heuristics._java import java_string_key
from heuristics.versions import RANGE
from solver.model import Assignment, Instance, Member
from solver.registry import register
from solver.result import Params, Result


def member_info_key(member: Member) -> tuple[int, bytes]:
    """Sort key of Kafka's ``AbstractPartitionAssignor.MemberInfo``.

    Static members (with ``group.instance.id``) sort first, by instance id;
    dynamic members follow, by member id; strings compare as Java does.

    Examples
    --------
    >>> a = Member(id="z", topics=(), instance_id="i1")
    >>> b = Member(id="a", topics=())
    >>> sorted([b, a], key=member_info_key)[0].id
    'z'
    """
    if member.instance_id is not None:
        return (0, java_string_key(member.instance_id))
    return (1, java_string_key(member.id))


def member_info_order(instance: Instance) -> list[int]:
    """Member indices of ``instance`` in ``MemberInfo`` order (stable for ties)."""
    return sorted(range(len(instance.members)), key=lambda i: member_info_key(instance.members[i]))


def subscriber_positions(instance: Instance, order: Sequence[int]) -> dict[str, np.ndarray]:
    """Topic -> positions in ``order`` of its subscribers, ascending (only topics that exist).

    Members with the same subscription are handled as one block, so a group of
    thousands of members with a few distinct subscriptions costs
    O(topics x distinct subscriptions) Python steps, not O(topics x members).

    Parameters
    ----------
    instance
        The group.
    order
        Member indices in the order the assignor lays members out.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"a": 1, "b": 1}, "members": [
    ...     {"id": "x", "topics": ["a", "b"]}, {"id": "y", "topics": ["b"]}, {"id": "z", "topics": ["a", "b"]}]})
    >>> {t: v.tolist() for t, v in subscriber_positions(inst, [2, 1, 0]).items()}
    {'a': [0, 2], 'b': [0, 1, 2]}
    """
    blocks: dict[tuple[str, ...], list[int]] = {}
    for pos, i in enumerate(order):
        topics = tuple(t for t in dict.fromkeys(instance.members[i].topics) if t in instance.topics)
        blocks.setdefault(topics, []).append(pos)
    parts: dict[str, list[np.ndarray]] = {}
    for topics, positions in blocks.items():
        arr = np.asarray(positions, dtype=np.int64)
        for t in topics:
            parts.setdefault(t, []).append(arr)
    return {t: a[0] if len(a) == 1 else np.sort(np.concatenate(a)) for t, a in parts.items()}


def subscribers_by_topic(instance: Instance, order: Sequence[int]) -> dict[str, np.ndarray]:
    """Topic -> subscriber member indices in the given member order (only topics that exist).

    Parameters
    ----------
    instance
        The group.
    order
        Member indices in the order the assignor lays members out.
    """
    order_arr = np.asarray(order, dtype=np.int64)
    return {t: order_arr[pos] for t, pos in subscriber_positions(instance, order).items()}


class _TopicState:
    """Per-topic bookkeeping of Kafka's ``RangeAssignor.TopicAssignmentState``."""

    def __init__(self, name: str, n: int, consumers: list[int], racks: list[str | None],
                 partition_racks: tuple[tuple[str, ...], ...] | None) -> None:
        self.name = name
        self.n = n
        self.consumers = consumers  # member indices, MemberInfo order
        self.rack = dict(zip(consumers, racks, strict=True))
        self.assigned = np.full(n, -1, dtype=np.int64)
        self.num_assigned = dict.fromkeys(consumers, 0)
        self.quota = n // len(consumers)
        self.extra = n % len(consumers)
        consumer_racks = {r for r in racks if r is not None}
        # partitionRacks exists only when some subscriber has a rack; its size groups topics.
        self.prack: list[frozenset[str]] | None = None
        if consumer_racks:
            self.prack = [frozenset(partition_racks[p]) if partition_racks is not None else frozenset()
                          for p in range(n)]
        self.needs_rack = False
        if self.prack is not None:
            all_racks: set[str] = set().union(*self.prack) if self.prack else set()
            if consumer_racks & all_racks:
                self.needs_rack = not all(r == all_racks for r in self.prack)

    @property
    def rack_map_size(self) -> int:
        return 0 if self.prack is None else self.n

    def racks_match(self, c: int, p: int) -> bool:
        r = self.rack[c]
        return r is None or (self.prack is not None and r in self.prack[p])

    def max_assignable(self, c: int) -> int:
        return max(0, self.quota + (1 if self.extra > 0 else 0) - self.num_assigned[c])

    def on_assigned(self, c: int, parts: Sequence[int]) -> None:
        self.num_assigned[c] += len(parts)
        # Kafka decrements on every call that leaves the consumer above the minimum quota.
        if self.num_assigned[c] > self.quota:
            self.extra -= 1
        self.assigned[list(parts)] = c

    def assign_rack_matched(self) -> None:
        """``assignRanges`` with ``racksMatch`` as the filter (single-topic rack path)."""
        for c in self.consumers:
            free = np.flatnonzero(self.assigned < 0)
            if free.size == 0:
                break
            limit = self.max_assignable(c)
            picked = [p for p in free.tolist() if self.racks_match(c, p)][:limit]
            if picked:
                self.on_assigned(c, picked)

    def assign_plain(self) -> None:
        """``assignRanges`` without a filter: leftover partitions in ascending order."""
        free = np.flatnonzero(self.assigned < 0)
        pos = 0
        for c in self.consumers:
            if pos >= free.size:
                break
            k = self.max_assignable(c)
            if k == 0:
                continue
            take = free[pos:pos + k]
            pos += take.size
            self.on_assigned(c, take.tolist())


def _assign_copartitioned(states: list[_TopicState], n: int) -> None:
    """Kafka's ``assignCoPartitionedWithRackMatching`` for topics with equal subscribers and size."""
    remaining = list(states[0].consumers)
    for p in range(n):
        chosen = -1
        for c in remaining:
            if all(s.racks_match(c, p) and s.max_assignable(c) > 0 for s in states):
                chosen = c
                break
        if chosen < 0:
            continue
        for s in states:
            s.on_assigned(chosen, [p])
        if not any(s.max_assignable(chosen) > 0 for s in states):
            remaining.remove(chosen)
            if not remaining:
                break


def range_owners(n: int, consumers: np.ndarray) -> np.ndarray:
    """Owner of each of ``n`` partitions under the plain range rule, vectorised.

    Parameters
    ----------
    n
        Number of partitions of the topic.
    consumers
        The topic's subscribers (member indices) in assignor order.

    Returns
    -------
    numpy.ndarray
        Length ``n``: the first ``n % k`` subscribers get ``n // k + 1``
        consecutive partitions, the others ``n // k``.

    Examples
    --------
    >>> range_owners(7, np.array([5, 3, 9])).tolist()
    [5, 5, 5, 3, 3, 9, 9]
    """
    k = consumers.size
    q, extra = divmod(n, k)
    lengths = np.full(k, q, dtype=np.int64)
    lengths[:extra] += 1
    return np.repeat(consumers, lengths)


def range_assign(instance: Instance) -> Assignment:
    """Kafka's ``RangeAssignor.assignPartitions`` on ``instance`` (see :func:`range_owner_arrays`).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t0": 3, "t1": 3},
    ...     "members": [{"id": "C1", "topics": ["t0", "t1"]}, {"id": "C0", "topics": ["t0", "t1"]}]})
    >>> range_assign(inst).to_lists()
    {'C1': {'t0': [2], 't1': [2]}, 'C0': {'t0': [0, 1], 't1': [0, 1]}}
    """
    return Assignment.from_owners(instance.member_ids, range_owner_arrays(instance))


def range_owner_arrays(instance: Instance) -> dict[str, np.ndarray]:
    """Owner arrays of Kafka's ``RangeAssignor.assignPartitions`` on ``instance``.

    Parameters
    ----------
    instance
        Consumer-protocol instance; ``owned`` is ignored, member ``rack`` and
        topic ``racks`` enable the KIP-881 path.

    Returns
    -------
    dict
        Topic -> owner member index per partition (instance member order).
    """
    order = member_info_order(instance)
    subs = subscribers_by_topic(instance, order)
    members = instance.members
    racks = [m.rack if m.rack else None for m in members]  # Kafka drops empty rack ids
    owners: dict[str, np.ndarray] = {}
    any_rack = any(r is not None for r in racks)
    states: list[_TopicState] = []
    for name, consumers in subs.items():
        topic = instance.topics[name]
        if topic.partitions == 0:
            continue
        if not any_rack:
            owners[name] = range_owners(topic.partitions, consumers)
            continue
        cons = consumers.tolist()
        states.append(_TopicState(name, topic.partitions, cons, [racks[c] for c in cons], topic.racks))

    if any(s.needs_rack for s in states):
        groups: dict[tuple[tuple[int, str | None], ...], dict[int, list[_TopicState]]] = {}
        for s in states:
            key = tuple((c, s.rack[c]) for c in s.consumers)
            groups.setdefault(key, {}).setdefault(s.rack_map_size, []).append(s)
        for by_size in groups.values():
            for size, group in by_size.items():
                if len(group) > 1:
                    _assign_copartitioned(group, size)
                elif group[0].needs_rack:
                    group[0].assign_rack_matched()
    for s in states:
        s.assign_plain()
        owners[s.name] = s.assigned
    return owners


def without_member_racks(instance: Instance) -> Instance:
    """``instance`` with no member racks: what a client assignor before KIP-881 (Kafka 3.5.0) sees.

    Before 3.5.0 the consumer protocol carried no rack, so ``range``,
    ``sticky`` and ``cooperative-sticky`` could not read one.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 1},
    ...                        "members": [{"id": "a", "topics": ["T"], "rack": "r1"}]})
    >>> without_member_racks(inst).members[0].rack is None
    True
    """
    from dataclasses import replace

    if all(m.rack is None for m in instance.members):
        return instance
    return replace(instance, members=tuple(replace(m, rack=None) for m in instance.members))


def follows_kip_881(params: Params) -> bool:
    """Whether the release in ``params.kafka_version`` reads member racks (3.5.0 and later)."""
    from heuristics.versions import KIP_881
    from solver.kafka_version import release

    return release(params.kafka_version) >= KIP_881


@register(
    "range",
    kind="heuristic",
    protocol="consumer",
    summary="Kafka RangeAssignor: per-topic contiguous ranges; KIP-881 rack-aware co-partitioned path",
    source="org.apache.kafka.clients.consumer.RangeAssignor (KIP-881 for racks, 3.5.0)",
    versions=RANGE,
)
def range_assignor(instance: Instance, params: Params) -> Result:
    """Registry entry for :func:`range_assign`; before Kafka 3.5.0 member racks are not read."""
    return Result(assignment=range_assign(instance if follows_kip_881(params) else without_member_racks(instance)))
