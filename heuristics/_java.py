"""Java semantics that Kafka's assignors depend on: string order, hash codes, HashMap order.

Kafka's Java code sorts strings by UTF-16 code units (``String.compareTo``)
and iterates ``HashMap``s in bucket order; to give Kafka's exact answer the
Python ports must reproduce both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any


def java_string_key(s: str) -> bytes:
    """Sort key giving Java's ``String.compareTo`` order (UTF-16 code units).

    Python compares code points; the two differ only for characters outside
    the Basic Multilingual Plane, which UTF-16 encodes as surrogates
    (0xD800-0xDFFF) that sort before 0xE000-0xFFFF.

    Examples
    --------
    >>> sorted(["\\uffff", "\\U0001F600"], key=java_string_key) == ["\\U0001F600", "\\uffff"]
    True
    """
    return s.encode("utf-16-be")


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` as a signed 32-bit int.

    Examples
    --------
    >>> java_string_hash("a"), java_string_hash("consumer-1")
    (97, -166239206)
    """
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def java_int_hash(i: int) -> int:
    """Java's ``Integer.hashCode()`` (the value itself, as signed 32-bit)."""
    i &= 0xFFFFFFFF
    return i - (1 << 32) if i >= 1 << 31 else i


def _spread(h: int) -> int:
    # HashMap.hash(): h ^ (h >>> 16) on the unsigned 32-bit pattern.
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= ``cap`` (at least 1)."""
    n = 1
    while n < cap:
        n <<= 1
    return n


#: The Java release whose collection sizing kassign reproduces unless told (``-O java=21``): Java 19 changed how
#: ``new HashSet<>(collection)`` sizes its table.  17 is the release Kafka's fixtures and this project's reference
#: harness run on (Kafka 4.x runs on 17 and later).
DEFAULT_JAVA = 17
#: Java releases a user can name with ``-O java`` (Kafka 3.0 runs on 8 and later).
JAVA_RELEASES = range(8, 100)


def copy_initial_capacity(n: int, java: int = DEFAULT_JAVA) -> int:
    """The initial capacity ``new HashSet<>(collection)`` gives its table for ``n`` elements, on Java ``java``.

    Up to Java 18 it is ``max((int) (n / .75f) + 1, 16)``; from Java 19 ``HashMap.newHashMap(max(n, 12))``,
    that is ``ceil(max(n, 12) / 0.75)``.  The two differ where ``n`` is exactly three quarters of a power of two
    (12, 24, 48, ...): Java 17's table is then twice as large, so elements from that table size up iterate in
    another order.

    Examples
    --------
    >>> [table_size_for(copy_initial_capacity(n, 17)) for n in (11, 12, 13, 24)]
    [16, 32, 32, 64]
    >>> [table_size_for(copy_initial_capacity(n, 21)) for n in (11, 12, 13, 24)]
    [16, 16, 32, 32]
    """
    if java >= 19:
        m = max(n, 12)
        return -(-m * 4 // 3)  # ceil(m / 0.75), exact in integers
    import numpy as np

    return max(int(np.float32(n) / np.float32(0.75)) + 1, 16)


def java_release(options: Any) -> int:
    """The Java release in an assignor's ``-O java`` option (:data:`DEFAULT_JAVA` when absent)."""
    value = options.get("java") if options else None
    return DEFAULT_JAVA if value is None else int(value)


def grown_capacity(n: int) -> int:
    """Table size of a ``new HashSet<>()`` after ``n`` ``add`` calls (16, doubled past three quarters full).

    Examples
    --------
    >>> [grown_capacity(n) for n in (0, 12, 13, 24, 25)]
    [16, 16, 32, 32, 64]
    """
    return hashmap_capacity(n)


def hashmap_capacity(n_entries: int, initial_capacity: int | None = None) -> int:
    """Table size of a ``HashMap`` after ``n_entries`` puts (load factor 0.75).

    Parameters
    ----------
    n_entries
        Number of distinct keys inserted (no removals).
    initial_capacity
        The ``new HashMap<>(initialCapacity)`` argument, or ``None`` for the
        default constructor (16 on first put).
    """
    cap = 16 if initial_capacity is None else max(1, table_size_for(initial_capacity))
    while n_entries > cap * 0.75:
        cap <<= 1
    return cap


def hashmap_order(
    keys: Iterable[Hashable],
    hash_fn: object = None,
    *,
    capacity: int | None = None,
    initial_capacity: int | None = None,
) -> list:
    """Iteration order of a Java ``HashMap`` filled with ``keys`` in this order.

    Entries iterate by bucket index ``spread(hash) & (capacity - 1)``; inside a
    bucket in insertion order (a resize keeps relative order).  Without an
    explicit ``capacity``, a ninth key put in one bucket of a table of fewer
    than 64 buckets doubles the table (``treeifyBin``), so the map is then
    built step by step (:class:`JavaHashMap`); tree bins themselves (9+ keys in
    one bucket of a 64+ table) are not modelled.

    Parameters
    ----------
    keys
        Keys in insertion order (duplicates keep their first position).
    hash_fn
        ``key -> int`` Java hash code; strings use :func:`java_string_hash`,
        ints :func:`java_int_hash` by default.
    capacity
        Final table size, if known; otherwise computed from ``initial_capacity``.
    initial_capacity
        Constructor argument, when the Java code passes one.

    Examples
    --------
    >>> hashmap_order(["b", "a", "c"])
    ['a', 'b', 'c']

    Nine ``Integer`` keys in bucket 0 of a 16-bucket table: the ninth doubles it, 16 and its odd
    multiples move to bucket 16.

    >>> hashmap_order(list(range(0, 129, 16)))
    [0, 32, 64, 96, 128, 16, 48, 80, 112]
    """
    seen: dict[Hashable, None] = dict.fromkeys(keys)
    ks: Sequence[Hashable] = list(seen)

    def default_hash(k: Hashable) -> int:
        if isinstance(k, str):
            return java_string_hash(k)
        if isinstance(k, int):
            return java_int_hash(k)
        raise TypeError(f"no Java hash for {type(k).__name__}; pass hash_fn")

    fn = hash_fn if callable(hash_fn) else default_hash
    cap = capacity if capacity is not None else hashmap_capacity(len(ks), initial_capacity)
    if capacity is None and cap < _MIN_TREEIFY_CAPACITY and len(ks) > _TREEIFY_THRESHOLD:
        # a bin reaches 9 keys only in a table of 16+ buckets, and its keys share a bucket of 16
        low = Counter(_spread(fn(k)) & 15 for k in ks)
        if max(low.values()) > _TREEIFY_THRESHOLD:
            table = JavaHashMap(fn, initial_capacity)
            for k in ks:
                table.put(k)
            return table.order()
    mask = cap - 1
    decorated = [(_spread(fn(k)) & mask, i, k) for i, k in enumerate(ks)]
    decorated.sort(key=lambda x: (x[0], x[1]))
    return [k for _, _, k in decorated]


#: ``HashMap.TREEIFY_THRESHOLD`` and ``MIN_TREEIFY_CAPACITY``: a bin that grows past 8 nodes in a table of
#: fewer than 64 buckets makes the table double instead of turning into a tree.
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


class JavaHashMap:
    """The key order of a ``java.util.HashMap`` built step by step, the JDK's (17) way.

    Two ways of inserting differ in where a new key lands and when the table
    grows, and Kafka code uses both:

    - ``put`` / ``putIfAbsent`` (:meth:`put`) append a new key at the end of
      its bucket and double the table *after* the insert that passes the
      threshold;
    - ``computeIfAbsent`` (:meth:`compute_if_absent`) puts a new key at the
      *head* of its bucket (keys sharing a bucket come out newest first) and
      doubles the table *before* a call -- for a present key too -- once the
      size is above the threshold.

    A bucket that reaches 8 keys in a table of fewer than 64 buckets doubles
    the table, as ``treeifyBin`` does; tree bins themselves (8+ keys in one
    bucket of a larger table) are not modelled.

    Parameters
    ----------
    hash_fn
        ``key -> int``, the key's Java ``hashCode()``.
    initial_capacity
        The ``new HashMap<>(initialCapacity)`` argument, ``None`` for ``new HashMap<>()``.

    Examples
    --------
    Java ``Integer`` keys 1 and 17 share bucket 1 of a 16-bucket table:

    >>> m = JavaHashMap(lambda k: k)
    >>> for k in (17, 1, 2):
    ...     _ = m.put(k)
    >>> m.order()
    [17, 1, 2]
    >>> m = JavaHashMap(lambda k: k)
    >>> for k in (17, 1, 2):
    ...     _ = m.compute_if_absent(k)
    >>> m.order()
    [1, 17, 2]
    """

    def __init__(self, hash_fn: Callable[[Any], int], initial_capacity: int | None = None) -> None:
        self._hash = hash_fn
        self._table: list[list[tuple[int, Any]]] | None = None
        # HashMap keeps the initial capacity in `threshold` until the table is allocated
        self._threshold = 0 if initial_capacity is None else table_size_for(initial_capacity)
        self._size = 0

    def _resize(self) -> None:
        old = self._table
        old_cap = len(old) if old is not None else 0
        old_thr = self._threshold
        new_thr = 0
        if old_cap > 0:
            new_cap = old_cap << 1
            if old_cap >= 16:
                new_thr = old_thr << 1
        elif old_thr > 0:
            new_cap = old_thr
        else:
            new_cap, new_thr = 16, 12
        if new_thr == 0:
            new_thr = int(new_cap * 0.75)
        table: list[list[tuple[int, Any]]] = [[] for _ in range(new_cap)]
        for j, bucket in enumerate(old or ()):
            for h, k in bucket:  # split in order: low half stays at j, high half moves to j + old_cap
                table[j + old_cap if h & old_cap else j].append((h, k))
        self._table = table
        self._threshold = new_thr

    def _bucket(self, key: Any) -> tuple[int, list[tuple[int, Any]]]:
        assert self._table is not None
        h = _spread(self._hash(key))
        return h, self._table[h & (len(self._table) - 1)]

    def put(self, key: Any) -> bool:
        """``put`` / ``putIfAbsent``; returns True when ``key`` was new."""
        if self._table is None or not self._table:
            self._resize()
        h, bucket = self._bucket(key)
        if any(k == key for _, k in bucket):
            return False
        bucket.append((h, key))
        if len(bucket) - 1 >= _TREEIFY_THRESHOLD and self._table is not None \
                and len(self._table) < _MIN_TREEIFY_CAPACITY:
            self._resize()
        self._size += 1
        if self._size > self._threshold:
            self._resize()
        return True

    def compute_if_absent(self, key: Any) -> bool:
        """``computeIfAbsent``; returns True when ``key`` was new."""
        if self._table is None or not self._table or self._size > self._threshold:
            self._resize()
        h, bucket = self._bucket(key)
        if any(k == key for _, k in bucket):
            return False
        bucket.insert(0, (h, key))
        if len(bucket) - 1 >= _TREEIFY_THRESHOLD - 1 and self._table is not None \
                and len(self._table) < _MIN_TREEIFY_CAPACITY:
            self._resize()
        self._size += 1
        return True

    def order(self) -> list[Any]:
        """Keys in iteration order (bucket by bucket)."""
        return [k for bucket in self._table or () for _, k in bucket]
