"""Java semantics that Kafka's assignors depend on: string order, hash codes, HashMap order.

Kafka's Java code sorts strings by UTF-16 code units (``String.compareTo``)
and iterates ``HashMap``s in bucket order; to give Kafka's exact answer the
Python ports must reproduce both.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence


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
    bucket in insertion order (a resize keeps relative order).  Treeified bins
    (8+ colliding keys in one bucket) are not modelled.

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
    mask = cap - 1
    decorated = [(_spread(fn(k)) & mask, i, k) for i, k in enumerate(ks)]
    decorated.sort(key=lambda x: (x[0], x[1]))
    return [k for _, _, k in decorated]
