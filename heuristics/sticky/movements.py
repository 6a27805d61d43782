"""Bookkeeping of Kafka's general sticky path: the member ladder and partition movements.

``_Ladder`` is Kafka's ``TreeSet`` of members ordered by (number of assigned
partitions, member id).  ``Movements`` is ``AbstractStickyAssignor.PartitionMovements``:
it remembers where every moved partition came from so that a move that would
reverse an earlier one moves that earlier partition back instead (keeping
stickiness); which of several such partitions is chosen follows Java
``HashSet<TopicPartition>`` iteration order, reproduced by :class:`JavaHashSet`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

from heuristics._java import table_size_for


class Ladder:
    """Members sorted by (load, Java id order); ``load`` is shared with the caller.

    Keys are ``load * n + rank`` so the sort is on plain ints.
    """

    def __init__(self, load: list[int], rank: Sequence[int]) -> None:
        self.load = load
        self.rank = rank
        self.n = max(1, len(rank))
        self.by_rank = [0] * len(rank)
        for m, r in enumerate(rank):
            self.by_rank[r] = m
        self.keys: list[int] = []

    def key(self, m: int) -> int:
        """Sort key of member ``m`` at its current load."""
        return self.load[m] * self.n + self.rank[m]

    def add(self, m: int) -> None:
        """Insert member ``m`` at its current load."""
        bisect.insort(self.keys, self.key(m))

    def remove(self, m: int) -> None:
        """Remove member ``m`` (call before changing its load)."""
        k = self.key(m)
        i = bisect.bisect_left(self.keys, k)
        if i < len(self.keys) and self.keys[i] == k:
            del self.keys[i]

    def members(self) -> Iterator[int]:
        """Members from least to most loaded."""
        n, by_rank = self.n, self.by_rank
        for k in self.keys:
            yield by_rank[k % n]

    def first(self) -> int:
        """Least loaded member."""
        return self.by_rank[self.keys[0] % self.n]

    def last(self) -> int:
        """Most loaded member."""
        return self.by_rank[self.keys[-1] % self.n]

    def __len__(self) -> int:
        return len(self.keys)


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


class JavaHashSet:
    """Insertion/removal with Java ``HashSet`` iteration order (first element only).

    Elements iterate by bucket ``spread(hash) & (capacity - 1)`` and, inside a
    bucket, by insertion time; the table starts at 16 and doubles past a load
    factor of 0.75, never shrinking.
    """

    __slots__ = ("cap", "items", "seq")

    def __init__(self) -> None:
        self.cap = 16
        self.items: dict[int, tuple[int, int]] = {}  # element -> (spread hash, insertion number)
        self.seq = 0

    def add(self, element: int, java_hash: int) -> None:
        """Add ``element`` (no-op when present)."""
        if element in self.items:
            return
        self.seq += 1
        self.items[element] = (_spread(java_hash), self.seq)
        if len(self.items) > self.cap * 3 // 4:
            self.cap = table_size_for(self.cap * 2)

    def remove(self, element: int) -> None:
        """Remove ``element``."""
        del self.items[element]

    def first(self) -> int:
        """The element ``iterator().next()`` returns."""
        mask = self.cap - 1
        return min(self.items, key=lambda e: (self.items[e][0] & mask, self.items[e][1]))

    def __len__(self) -> int:
        return len(self.items)


class Movements:
    """Kafka's ``PartitionMovements`` over global partition ids.

    Parameters
    ----------
    topic_of
        Topic index of every global id.
    java_hash
        ``java_hash(g)``: Java ``TopicPartition.hashCode`` of global id ``g``.
    """

    def __init__(self, topic_of: Sequence[int], java_hash: object) -> None:
        self.topic_of = topic_of
        self.java_hash = java_hash
        self.moves: dict[int, tuple[int, int]] = {}
        self.by_topic: dict[int, dict[tuple[int, int], JavaHashSet]] = {}

    def _remove_record(self, g: int) -> tuple[int, int]:
        pair = self.moves.pop(g)
        t = self.topic_of[g]
        per_topic = self.by_topic[t]
        s = per_topic[pair]
        s.remove(g)
        if not len(s):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[t]
        return pair

    def _add_record(self, g: int, pair: tuple[int, int]) -> None:
        self.moves[g] = pair
        per_topic = self.by_topic.setdefault(self.topic_of[g], {})
        s = per_topic.get(pair)
        if s is None:
            s = per_topic[pair] = JavaHashSet()
        s.add(g, self.java_hash(g))  # type: ignore[operator]

    def move(self, g: int, old: int, new: int) -> None:
        """Record that ``g`` moves from ``old`` to ``new`` (a move back cancels the record)."""
        if g in self.moves:
            src, _dst = self._remove_record(g)
            if src != new:
                self._add_record(g, (src, new))
        else:
            self._add_record(g, (old, new))

    def actual_partition(self, g: int, old: int, new: int) -> int:
        """``getTheActualPartitionToBeMoved``: move back an earlier ``new -> old`` partition if any."""
        t = self.topic_of[g]
        per_topic = self.by_topic.get(t)
        if per_topic is None:
            return g
        rec = self.moves.get(g)
        if rec is not None:
            old = rec[0]
        s = per_topic.get((new, old))
        if s is None:
            return g
        return s.first()
