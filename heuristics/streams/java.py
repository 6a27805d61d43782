"""Java collections the Kafka Streams assignors depend on, reproduced exactly.

Kafka's ``ConstrainedPrioritySet`` keeps clients in a ``java.util.PriorityQueue``
whose comparator reads *live* client loads: loads change while clients sit in
the heap, so the heap is not always ordered and which client comes out first
depends on the exact sift operations of the JDK.  :class:`JavaPriorityQueue`
performs the same ``siftUp`` / ``siftDown`` / ``removeAt`` steps as the JDK
(17) so that ties and stale keys resolve as they do in Kafka.  Iterating a
``PriorityQueue`` (``for (x : queue)``) walks its array, not sorted order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from heuristics._java import hashmap_order

T = TypeVar("T")


class JavaPriorityQueue(Generic[T]):
    """``java.util.PriorityQueue`` with a comparator, step for step.

    Parameters
    ----------
    key
        ``key(x)`` -> a tuple read at each comparison (live, like a Java
        ``Comparator`` reading mutable state); ``compare(a, b)`` is the order of
        ``key(a)`` and ``key(b)``.

    Examples
    --------
    >>> q = JavaPriorityQueue(lambda x: (x,))
    >>> for x in (5, 1, 4, 2):
    ...     q.offer(x)
    >>> list(q), q.poll(), q.poll()
    ([1, 2, 4, 5], 1, 2)
    """

    def __init__(self, key: Callable[[T], Any]) -> None:
        self._key = key
        self._q: list[T] = []

    def __len__(self) -> int:
        return len(self._q)

    def __iter__(self) -> Iterator[T]:
        # PriorityQueue.iterator(): array order.
        return iter(list(self._q))

    def __contains__(self, x: object) -> bool:
        return any(e == x for e in self._q)

    def offer(self, x: T) -> None:
        """``offer(e)``: append and sift up."""
        self._q.append(x)
        self._sift_up(len(self._q) - 1, x)

    def poll(self) -> T | None:
        """``poll()``: remove the head; the last element sifts down from the root."""
        q = self._q
        if not q:
            return None
        result = q[0]
        last = q.pop()
        if q:
            self._sift_down(0, last)
        return result

    def remove(self, x: T) -> bool:
        """``remove(Object)``: first element equal to ``x`` (array order), then ``removeAt``."""
        for i, e in enumerate(self._q):
            if e == x:
                self._remove_at(i)
                return True
        return False

    def _remove_at(self, i: int) -> None:
        q = self._q
        s = len(q) - 1
        if s == i:
            q.pop()
            return
        moved = q.pop()
        self._sift_down(i, moved)
        if q[i] is moved:
            self._sift_up(i, moved)

    def _sift_up(self, k: int, x: T) -> None:
        q, key = self._q, self._key
        kx = key(x)
        while k > 0:
            parent = (k - 1) >> 1
            e = q[parent]
            if not kx < key(e):  # compare(x, e) >= 0
                break
            q[k] = e
            k = parent
        q[k] = x

    def _sift_down(self, k: int, x: T) -> None:
        q, key = self._q, self._key
        n = len(q)
        half = n >> 1
        kx = key(x)
        while k < half:
            child = 2 * k + 1
            c = q[child]
            kc = key(c)
            right = child + 1
            if right < n:
                kr = key(q[right])
                if kc > kr:  # compare(c, right) > 0
                    child = right
                    c = q[child]
                    kc = kr
            if kx <= kc:  # compare(x, c) <= 0
                break
            q[k] = c
            k = child
        q[k] = x


class ConstrainedPrioritySet:
    """Kafka's ``ConstrainedPrioritySet`` over client indices.

    Clients are ordered by ``weight(client)`` then by the client index (the
    index is the client's rank in process-id order, so this is Kafka's
    ``thenComparing(ProcessId)``).  ``poll`` returns the lightest client that
    satisfies the constraint; clients skipped on the way are offered back in
    ``HashSet<ProcessId>`` iteration order, as Kafka does.

    Parameters
    ----------
    constraint
        ``constraint(client, task) -> bool``.
    weight
        ``weight(client) -> float``, read live.
    java_hash
        Java ``hashCode`` of each client's process id (index -> int).
    """

    def __init__(self, constraint: Callable[[int, int], bool], weight: Callable[[int], float],
                 java_hash: list[int]) -> None:
        self._constraint = constraint
        self._hash = java_hash
        self._queue: JavaPriorityQueue[int] = JavaPriorityQueue(lambda c: (weight(c), c))
        self._unique: set[int] = set()

    def poll(self, task: int, extra: Callable[[int], bool] | None = None) -> int | None:
        """The next lightest client satisfying the constraints, or ``None``."""
        queue = self._queue
        live = queue._key
        # No load changes while one poll runs: read every key once (same comparisons, fewer calls).
        queue._key = {c: live(c) for c in queue._q}.__getitem__
        try:
            invalid: list[int] = []
            while len(queue):
                cand = queue.poll()
                assert cand is not None
                self._unique.discard(cand)
                if self._constraint(cand, task) and (extra is None or extra(cand)):
                    self._offer_hashset(invalid)
                    return cand
                invalid.append(cand)
            self._offer_hashset(invalid)
            return None
        finally:
            queue._key = live

    def _offer_hashset(self, clients: list[int]) -> None:
        # invalidPolledClients is a HashSet<ProcessId>: iterate in its bucket order.
        self.offer_all(hashmap_order(clients, lambda c: self._hash[c]))

    def offer_all(self, clients: Iterable[int]) -> None:
        """``offerAll``: offer each client in the given order."""
        for c in clients:
            self.offer(c)

    def offer(self, client: int) -> None:
        """``offer``: a client already present is removed first, then re-added."""
        if client in self._unique:
            self._queue.remove(client)
        else:
            self._unique.add(client)
        self._queue.offer(client)
