"""Shared Java semantics of the KIP-848 group-coordinator assignors.

The coordinator hands its assignors a ``GroupSpec`` whose members live in a
``HashMap<String, ...>`` keyed by member id, and topics identified by Kafka
``Uuid`` s.  The uniform assignor's answer depends on the iteration order of
those hash maps and on ``Uuid`` hashing and ordering; this module reproduces
them:

- ``Uuid.hashCode()`` folds the two longs: ``x = msb ^ lsb``, then
  ``(int)(x >> 32) ^ (int) x``;
- ``Uuid.compareTo`` compares ``msb`` then ``lsb`` as *signed* longs at that
  commit (Kafka later switched to unsigned comparison);
- a member's current assignment (``Map<Uuid, Set<Integer>>``) iterates as a
  ``HashMap`` of topic ids and ``HashSet`` s of partition numbers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from itertools import chain

import numpy as np

from heuristics._java import (
    _MIN_TREEIFY_CAPACITY,
    _TREEIFY_THRESHOLD,
    DEFAULT_JAVA,
    JavaHashMap,
    copy_initial_capacity,
    hashmap_capacity,
    hashmap_order,
    java_int_hash,
)
from solver.model import Instance, OwnedMap

_MASK64 = (1 << 64) - 1
# Namespace for topic ids derived from names when an instance gives none.
_TOPIC_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "kassign:topic-id")


def _spread(h: int) -> int:
    # HashMap.hash(): h ^ (h >>> 16) on the unsigned 32-bit pattern
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def topic_uuid(name: str, topic_id: str | None) -> int:
    """128-bit value of a topic's Kafka id.

    Parameters
    ----------
    name
        Topic name, used only when ``topic_id`` is missing.
    topic_id
        UUID string (``8-4-4-4-12`` hex, or Kafka's 22-character base64 form).

    Returns
    -------
    int
        The UUID as an unsigned 128-bit integer (``msb << 64 | lsb``).  Topics
        without an id get a deterministic name-based UUID (version 5), so
        results stay reproducible; Kafka itself always has real ids.

    Examples
    --------
    >>> hex(topic_uuid("t", "00000000-0000-0001-0000-000000000002"))
    '0x10000000000000002'
    """
    if topic_id is None:
        return uuid.uuid5(_TOPIC_NAMESPACE, name).int
    if len(topic_id) == 22:  # Kafka's base64 form ("-" and "_" may appear anywhere in it)
        import base64

        return int.from_bytes(base64.urlsafe_b64decode(topic_id + "=="), "big")
    return uuid.UUID(topic_id).int


def uuid_hash(value: int) -> int:
    """Java ``Uuid.hashCode()`` of a 128-bit UUID value (signed 32-bit).

    Examples
    --------
    >>> uuid_hash((1 << 64) | 2)  # msb = 1, lsb = 2 -> 1 ^ 2
    3
    """
    x = ((value >> 64) ^ value) & _MASK64
    h = ((x >> 32) ^ x) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def uuid_compare_key(value: int) -> tuple[int, int]:
    """Sort key giving Java ``Uuid.compareTo`` order: ``(msb, lsb)`` as signed longs.

    Examples
    --------
    >>> a = int("fa5ab70b-b6be-44ea-a545-fefdea9f03b9".replace("-", ""), 16)
    >>> b = int("6c187b88-f037-4169-842f-fc6b49281a39".replace("-", ""), 16)
    >>> uuid_compare_key(a) < uuid_compare_key(b)  # a's msb is negative
    True
    """
    msb, lsb = value >> 64, value & _MASK64
    return (msb - (1 << 64) if msb >= 1 << 63 else msb, lsb - (1 << 64) if lsb >= 1 << 63 else lsb)


def uuid_hashset_order(values: Sequence[int], *, copied: bool = True, java: int = DEFAULT_JAVA) -> list[int]:
    """Iteration order of a ``HashSet<Uuid>`` holding ``values`` (inserted in this order).

    Parameters
    ----------
    values
        UUID values.
    copied
        ``True`` for ``new HashSet<>(collection)`` (table sized for the
        collection up front), ``False`` for a default set grown by ``add``.
    java
        The Java release running Kafka (:func:`heuristics._java.copy_initial_capacity`).
    """
    initial = copy_initial_capacity(len(values), java) if copied else None
    return hashmap_order(values, uuid_hash, initial_capacity=initial)


def member_map_order(instance: Instance) -> list[int]:
    """Member indices in the order of the coordinator's ``HashMap`` of members.

    The ``GroupSpec`` keeps members in a ``HashMap<String, ...>`` filled in the
    instance's member order (on a live group the coordinator's member-map order,
    which capture keeps); every iteration over ``groupSpec.memberIds()``
    follows its bucket order (``String.hashCode``), ids sharing a bucket in that
    insertion order.
    """
    ids = instance.member_ids
    pos = {m: i for i, m in enumerate(ids)}
    return [pos[m] for m in hashmap_order(ids)]


def int_hashset_order(parts: np.ndarray, java: int = DEFAULT_JAVA) -> list[int]:
    """Iteration order of a ``HashSet<Integer>`` built from ``parts``.

    The set is built with ``new HashSet<>(collection)``: its table size follows
    from the size on Java ``java`` (:func:`heuristics._java.copy_initial_capacity`), and ``Integer``
    hashes are the values, so iteration runs by ``(p ^ p >>> 16) & (cap - 1)``,
    ties in insertion (ascending) order.

    Examples
    --------
    >>> int_hashset_order(np.array([1, 5, 17, 30]))
    [1, 17, 5, 30]
    """
    n = int(parts.size)
    cap = hashmap_capacity(n, copy_initial_capacity(n, java))
    p = parts.astype(np.int64)
    bucket = (p ^ (p >> 16)) & (cap - 1)
    order = np.lexsort((np.arange(n), bucket))
    return [int(x) for x in p[order]]


class TopicHashes:
    """Per-topic ``HashMap`` bucket hashes, cached once per instance.

    A member's current assignment is a ``Map<Uuid, Set<Integer>>`` (a default
    ``HashMap`` grown by ``put``) filled in the order of the member's
    ``owned`` topics: it iterates in ``Uuid`` bucket order, ids sharing a
    bucket in that insertion order (a resize keeps their relative order).

    Parameters
    ----------
    instance
        The group; topics are numbered in ``instance.topics`` order.
    topic_ids
        Topic name -> 128-bit id (see :func:`topic_id_map`).
    """

    def __init__(self, instance: Instance, topic_ids: dict[str, int]) -> None:
        names = list(instance.topics)
        self.index = {t: k for k, t in enumerate(names)}
        self.id_hash = [uuid_hash(topic_ids[t]) for t in names]
        self.id_spread = np.array([_spread(h) for h in self.id_hash], dtype=np.int64)

    def iteration_order(self, topics: np.ndarray) -> np.ndarray:
        """Permutation putting topic numbers ``topics`` (insertion order) into iteration order.

        Examples
        --------
        Ids ``...01`` and ``...11`` share a bucket, ``...02`` has the next one:

        >>> from solver.io import parse_instance
        >>> ids = {"a": "00000000-0000-0000-0000-000000000011", "b": "00000000-0000-0000-0000-000000000001",
        ...        "c": "00000000-0000-0000-0000-000000000002"}
        >>> inst = parse_instance({"format": "kassign/v1", "topics": {t: {"partitions": 1, "id": u}
        ...     for t, u in ids.items()}, "members": []})
        >>> h = TopicHashes(inst, topic_id_map(inst))
        >>> def names(inserted):
        ...     topics = np.array([h.index[t] for t in inserted])
        ...     return [inserted[k] for k in h.iteration_order(topics)]
        >>> names(["c", "a", "b"]), names(["c", "b", "a"])
        (['a', 'b', 'c'], ['b', 'a', 'c'])
        """
        n = topics.size
        if n <= 1:
            return np.arange(n)
        cap = hashmap_capacity(n)
        spread = self.id_spread[topics]
        if cap < _MIN_TREEIFY_CAPACITY and np.bincount(spread & 15).max() > _TREEIFY_THRESHOLD:
            # a ninth id put in one bucket of a table under 64 buckets doubles it (treeifyBin): step by step
            ids = [self.id_hash[t] for t in topics.tolist()]
            table = JavaHashMap(ids.__getitem__)
            for j in range(n):
                table.put(j)
            return np.array(table.order(), dtype=np.int64)
        return np.lexsort((np.arange(n), spread & (cap - 1)))


def topic_id_map(instance: Instance) -> dict[str, int]:
    """Topic name -> 128-bit topic id for every topic of ``instance``."""
    return {name: topic_uuid(name, t.id) for name, t in instance.topics.items()}


def subscribed(instance: Instance, member_index: int) -> list[str]:
    """The member's subscribed topics that exist, in subscription order, without repeats."""
    return [t for t in dict.fromkeys(instance.members[member_index].topics) if t in instance.topics]


def subscribed_id_order(instance: Instance, member_index: int, topic_ids: dict[str, int],
                        java: int = DEFAULT_JAVA) -> list[str]:
    """A member's subscribed topics in the order of ``new HashSet<>(subscribedTopicIds())``.

    The coordinator keeps subscriptions as a ``HashSet<String>`` of names and
    exposes the ids as a view over it, so the id set is filled in name-set
    order; the copy then iterates in ``Uuid`` bucket order, colliding ids in
    that name order.
    """
    names = subscribed(instance, member_index)
    name_order = hashmap_order(names, initial_capacity=copy_initial_capacity(len(names), java))
    by_uuid = {topic_ids[t]: t for t in name_order}
    return [by_uuid[u] for u in uuid_hashset_order(list(by_uuid), java=java)]


def is_homogeneous(instance: Instance, members: Iterable[int]) -> bool:
    """True when every member subscribes to the same set of topics (Kafka's ``HOMOGENEOUS``)."""
    sets = {frozenset(subscribed(instance, i)) for i in members}
    return len(sets) <= 1


def owned_entries(
    instance: Instance,
    order: Sequence[int],
    topic_pos: dict[str, int],
    hashes: TopicHashes | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every claim of the members' current assignments that Kafka keeps looking at, as flat arrays.

    Parameters
    ----------
    instance
        The group.
    order
        Member indices in the coordinator's member order.
    topic_pos
        Topic -> position; claims on topics not in it are skipped, and so are
        topics the member no longer subscribes to (Kafka revokes those).
    hashes
        If given, each member's topics follow Java's iteration order of its
        assignment map (see :class:`TopicHashes`); otherwise the stored order.

    Returns
    -------
    tuple of numpy.ndarray
        ``(member number, topic position, partition)`` per claim: member
        numbers are positions in ``order``; claims run member by member, then
        topic by topic (in ``owned`` order, or Java's if ``hashes`` is given),
        partitions in the order the instance lists them.
    """
    index = {t: k for k, t in enumerate(instance.topics)}
    pos_of = np.array([topic_pos.get(t, -1) for t in instance.topics], dtype=np.int64)
    sub_masks: dict[tuple[str, ...], np.ndarray] = {}
    pieces: list[np.ndarray] = []
    tops: list[np.ndarray] = []
    counts = np.zeros(len(order), dtype=np.int64)
    for k, i in enumerate(order):
        member = instance.members[i]
        if not member.owned:
            continue
        mask = sub_masks.get(member.topics)
        if mask is None:
            mask = np.zeros(len(index), dtype=bool)
            mask[[index[t] for t in member.topics if t in index]] = True
            sub_masks[member.topics] = mask
        names = list(member.owned)
        owned = member.owned
        # the order given: Kafka's HashSet iterates colliding partitions in insertion order
        arrays = [owned.listed(t) for t in names] if isinstance(owned, OwnedMap) else list(owned.values())
        g = np.fromiter(map(index.__getitem__, names), dtype=np.int64, count=len(names))
        lens = np.fromiter(map(len, arrays), dtype=np.int64, count=len(names))
        sel = np.flatnonzero(lens > 0)  # Kafka's maps hold no empty partition sets
        if hashes is not None:
            sel = sel[hashes.iteration_order(g[sel])]
        sel = sel[(pos_of[g[sel]] >= 0) & mask[g[sel]]]
        if sel.size == 0:
            continue
        pieces.extend(arrays[j] for j in sel.tolist())
        tops.append(np.repeat(pos_of[g[sel]], lens[sel]))
        counts[k] = int(lens[sel].sum())
    if not pieces:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    if counts.sum() < 16 * len(pieces):
        # many tiny arrays: going through Python ints beats np.concatenate's per-array overhead
        parts = np.fromiter(chain.from_iterable(map(np.ndarray.tolist, pieces)), dtype=np.int64)
    else:
        parts = np.concatenate(pieces).astype(np.int64, copy=False)
    members = np.repeat(np.arange(len(order), dtype=np.int64), counts)
    return members, np.concatenate(tops), parts


def hashset_rank(segment: np.ndarray, parts: np.ndarray, copied_on: int | None = None) -> np.ndarray:
    """Positions that sort each run of ``segment`` into ``HashSet<Integer>`` order.

    ``segment`` labels consecutive runs with non-decreasing labels (one run per member and topic, parts in
    insertion order inside).  Each run is a set grown by ``add`` in that order (``copied_on=None``: the
    coordinator's in-memory target assignment, built by the assignor's ``add`` calls, and the fixtures'
    convention), or ``new HashSet<>(list)`` on Java ``copied_on`` (:func:`heuristics._java.copy_initial_capacity`;
    a copy differs from a grown set only on Java 18 and older, at 12, 24, 48... parts).  Colliding parts keep
    their order.  Returns a permutation of ``arange(len(parts))``.

    Examples
    --------
    >>> hashset_rank(np.array([0, 0, 0, 0]), np.array([1, 5, 17, 30])).tolist()
    [0, 2, 1, 3]
    """
    if parts.size == 0:
        return np.zeros(0, dtype=np.int64)
    lengths = np.unique(segment, return_counts=True)[1]
    if copied_on is None or copied_on >= 19:  # grown: tableSizeFor(ceil(max(n, 12) / 0.75)) gives the same
        m = np.maximum(lengths.astype(np.int64), 12)
        want = -(-m * 4 // 3)
    else:  # Java 17's copy: tableSizeFor(max((int)(n / .75f) + 1, 16))
        want = np.maximum((lengths.astype(np.float32) / np.float32(0.75)).astype(np.int64) + 1, 16)
    cap = np.left_shift(1, np.ceil(np.log2(want)).astype(np.int64))
    cap = np.where(cap < want, cap * 2, cap)
    run_cap = np.repeat(cap, lengths)
    bucket = (parts ^ (parts >> 16)) & (run_cap - 1)
    if np.array_equal(bucket, parts) and not np.any((np.diff(parts) < 0) & (np.diff(segment) == 0)):
        return np.arange(parts.size, dtype=np.int64)  # every run ascending and below its table size
    _treeify_runs(segment, parts, run_cap, bucket, copied_on)
    return np.lexsort((np.arange(parts.size), bucket, segment))


def _treeify_runs(segment: np.ndarray, parts: np.ndarray, run_cap: np.ndarray, bucket: np.ndarray,
                  copied_on: int | None) -> None:
    """Rewrite ``bucket`` in place, for the runs whose set ``treeifyBin`` doubled, as positions in Java's order.

    A ninth partition added to one bucket of a table of fewer than 64 buckets doubles the table: it happens
    only in runs whose final table (``run_cap``) is under 64 and which hold nine or more parts sharing a
    bucket of 16; those few short runs (at most 24 parts) are built step by step (:class:`JavaHashMap`).
    """
    small = run_cap < _MIN_TREEIFY_CAPACITY
    if not small.any():
        return
    low = (parts[small] ^ (parts[small] >> 16)) & 15
    keys, counts = np.unique(segment[small] * 16 + low, return_counts=True)
    runs = np.unique(keys[counts > _TREEIFY_THRESHOLD] // 16)
    starts, ends = np.searchsorted(segment, runs), np.searchsorted(segment, runs, side="right")
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):  # runs are consecutive
        at = np.arange(lo, hi)
        members = parts[lo:hi].tolist()
        initial = None if copied_on is None else copy_initial_capacity(len(members), copied_on)
        table = JavaHashMap(java_int_hash, initial)
        for p in members:
            table.put(p)
        rank = {p: k for k, p in enumerate(table.order())}
        bucket[at] = [rank[p] for p in members]
