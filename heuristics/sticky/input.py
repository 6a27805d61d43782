"""What Kafka's ``AbstractStickyAssignor`` sees of an instance, in Kafka's order.

Kafka's leader hands the sticky assignors a ``HashMap<String, Subscription>``
filled in the order the members joined (``instance.members`` order), so every
loop over members runs in Java ``HashMap`` order of the member ids.  Topics
are the subscribed topics that have partitions; a topic-partition is numbered
globally, topics in Java ``String`` order, so ascending global ids are Kafka's
``(topic, partition)`` order.

The same builder serves both assignors: the eager ``StickyAssignor`` reads a
member's previous assignment and generation from its user data, the
``CooperativeStickyAssignor`` from the subscription's owned partitions and
generation; in a ``kassign/v1`` instance both are the member's ``owned`` and
``generation``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from heuristics._java import hashmap_order, java_string_hash, java_string_key
from solver.model import Instance, OwnedMap

DEFAULT_GENERATION = -1


@dataclass(frozen=True, eq=False)
class StickyInput:
    """An instance as arrays in Kafka's order.

    Attributes
    ----------
    member_ids
        Member ids, input order (member ``i`` is ``instance.members[i]``).
    order
        Member indices in the leader's subscription-map iteration order.
    rank
        ``rank[i]``: position of member ``i`` in Java ``String`` order of ids.
    topics
        Assignable topics (subscribed, with partitions), Java ``String`` order.
    offsets
        ``offsets[t]``: global id of partition 0 of topic ``t``; length ``T + 1``.
    topic_of, part_of
        Topic index and partition number of every global partition id.
    subs
        Per member, the set of assignable topic indices it subscribes to.
    raw_topics
        Per member, the subscription as given (for the equal-subscription test).
    claims
        Per member, the claimed global ids (owned partitions of assignable
        topics, in range), topic then partition order.
    generation
        Per member, the generation of its claim (``-1`` when unknown).
    racks
        Per member, its rack or ``None``.
    """

    member_ids: tuple[str, ...]
    order: tuple[int, ...]
    rank: tuple[int, ...]
    topics: tuple[str, ...]
    offsets: np.ndarray
    topic_of: np.ndarray
    part_of: np.ndarray
    subs: tuple[frozenset[int], ...]
    raw_topics: tuple[frozenset[str], ...]
    claims: tuple[np.ndarray, ...]
    generation: tuple[int, ...]
    racks: tuple[str | None, ...]

    @property
    def n_members(self) -> int:
        """Number of members."""
        return len(self.member_ids)

    @property
    def n_partitions(self) -> int:
        """Number of assignable topic-partitions."""
        return int(self.offsets[-1])

    def topic_hashes(self) -> list[int]:
        """Java ``String.hashCode`` of every assignable topic."""
        return [java_string_hash(t) for t in self.topics]


def prepare(instance: Instance, *, map_order: str = "hashmap") -> StickyInput:
    """Build the :class:`StickyInput` of ``instance``.

    Parameters
    ----------
    instance
        A consumer-protocol instance.
    map_order
        ``"hashmap"`` (Kafka's leader: a ``HashMap`` filled in input order) or
        ``"input"`` (insertion order, for experiments).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"b": 2, "a": 1},
    ...     "members": [{"id": "m1", "topics": ["a", "b"], "owned": {"b": [1]}, "generation": 3}]})
    >>> si = prepare(inst)
    >>> si.topics, si.offsets.tolist(), si.claims[0].tolist()
    (('a', 'b'), [0, 1, 3], [2])
    """
    members = instance.members
    ids = tuple(m.id for m in members)
    subscribed: set[str] = set()
    for m in members:
        subscribed.update(m.topics)
    topics = tuple(
        sorted(
            (t for t in subscribed if t in instance.topics and instance.topics[t].partitions > 0),
            key=java_string_key,
        )
    )
    tindex = {t: i for i, t in enumerate(topics)}
    counts = np.array([instance.topics[t].partitions for t in topics], dtype=np.int64)
    offsets = np.zeros(len(topics) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    topic_of = np.repeat(np.arange(len(topics), dtype=np.int64), counts)
    part_of = np.arange(int(offsets[-1]), dtype=np.int64) - offsets[topic_of]

    if map_order == "hashmap":
        pos = {mid: i for i, mid in enumerate(ids)}
        order = tuple(pos[mid] for mid in hashmap_order(ids))
    elif map_order == "input":
        order = tuple(range(len(ids)))
    else:
        raise ValueError(f"unknown map_order {map_order!r}")
    by_java = sorted(range(len(ids)), key=lambda i: java_string_key(ids[i]))
    rank = [0] * len(ids)
    for r, i in enumerate(by_java):
        rank[i] = r

    index_cache: dict[tuple[str, ...], np.ndarray] = {}
    claims = [_claims_of(m.owned, tindex, offsets, counts, index_cache) for m in members]
    # members usually share a handful of distinct subscriptions: convert each once
    subs_cache: dict[tuple[str, ...], frozenset[int]] = {}
    raw_cache: dict[tuple[str, ...], frozenset[str]] = {}
    for m in members:
        if m.topics not in subs_cache:
            subs_cache[m.topics] = frozenset(tindex[t] for t in m.topics if t in tindex)
            raw_cache[m.topics] = frozenset(m.topics)

    return StickyInput(
        member_ids=ids,
        order=order,
        rank=tuple(rank),
        topics=topics,
        offsets=offsets,
        topic_of=topic_of,
        part_of=part_of,
        subs=tuple(subs_cache[m.topics] for m in members),
        raw_topics=tuple(raw_cache[m.topics] for m in members),
        claims=tuple(claims),
        generation=tuple(int(m.generation) for m in members),
        racks=tuple(m.rack if m.rack else None for m in members),
    )


def _claims_of(
    owned: Mapping[str, np.ndarray],
    tindex: dict[str, int],
    offsets: np.ndarray,
    counts: np.ndarray,
    index_cache: dict[tuple[str, ...], np.ndarray],
) -> np.ndarray:
    """Global ids of a member's claims on assignable topics, in range, ascending."""
    if not owned:
        return np.zeros(0, dtype=np.int64)
    if isinstance(owned, OwnedMap):
        names, flat, bounds = owned.flat()
        sizes = np.diff(bounds)
    else:
        names = tuple(owned)
        arrays = [np.asarray(owned[t], dtype=np.int64) for t in names]
        sizes = np.array([a.size for a in arrays], dtype=np.int64)
        flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    ti = index_cache.get(names)
    if ti is None:  # members often own the same topics: look the names up once
        ti = index_cache[names] = np.array([tindex.get(t, -1) for t in names], dtype=np.int64)
    per_claim = np.repeat(ti, sizes)
    known = per_claim >= 0
    # claims on topics outside the assignment, or beyond a topic's partitions, are dropped (Kafka filters
    # the former; the latter cannot be expressed in an assignment)
    ok = known & (flat >= 0) & (flat < np.where(known, counts[np.maximum(per_claim, 0)], 0))
    return np.sort(flat[ok] + offsets[per_claim[ok]])


def topic_partition_hash(topic_hash: int, partition: int) -> int:
    """Java ``TopicPartition.hashCode()`` from the topic's hash code.

    Examples
    --------
    >>> topic_partition_hash(java_string_hash("t"), 0)
    1077
    """
    h = (31 * (31 + partition) + topic_hash) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h
