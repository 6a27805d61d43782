"""Kafka's identifiers in the Streams protocol: task ids and process UUIDs, in Kafka's order.

Split out of :mod:`solver.streams.model` (which re-exports every name here).
Task order is Kafka's ``TaskId.compareTo``: subtopology, then partition.
Client order is Kafka's ``UUID.compareTo`` of the process id: the two 64-bit
halves compared as *signed* longs (see :func:`uuid_sort_key`).
"""

from __future__ import annotations

import uuid as _uuid

#: Largest subtopology and partition number of a task id (a Java ``int`` in Kafka's ``TaskId``).
TASK_PART_MAX = 2**31 - 1


def parse_task_id(task_id: str) -> tuple[int, int]:
    """Split ``"<subtopology>_<partition>"`` into two ints.

    Examples
    --------
    >>> parse_task_id("3_12")
    (3, 12)
    """
    left, sep, right = task_id.partition("_")
    if not sep or not left.isdigit() or not right.isdigit() or not left.isascii() or not right.isascii():
        raise ValueError(f"task id {task_id!r} is not '<subtopology>_<partition>'")
    # Kafka's TaskId holds both parts in a Java int; the length test keeps int() away from huge literals.
    sub = int(left) if len(left) <= 12 else TASK_PART_MAX + 1
    part = int(right) if len(right) <= 12 else TASK_PART_MAX + 1
    if sub > TASK_PART_MAX or part > TASK_PART_MAX:
        what = "subtopology" if sub > TASK_PART_MAX else "partition"
        raise ValueError(f"task id {task_id[:40]!r}: {what} above {TASK_PART_MAX} (Kafka's TaskId holds a 32-bit int)")
    return sub, part


def task_sort_key(task_id: str) -> tuple[int, int]:
    """Sort key giving Kafka's ``TaskId`` order (subtopology, then partition)."""
    return parse_task_id(task_id)


def _signed64(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def uuid_halves(process_id: str) -> tuple[int, int]:
    """The most and least significant 64 bits of a UUID as Java *signed* longs."""
    n = _uuid.UUID(process_id).int
    return _signed64(n >> 64), _signed64(n & ((1 << 64) - 1))


def uuid_sort_key(process_id: str) -> tuple[int, int]:
    """Sort key giving Java's ``UUID.compareTo`` order.

    Java compares ``mostSigBits`` then ``leastSigBits`` with ``Long.compare``,
    i.e. as signed numbers: a UUID starting with ``8``..``f`` sorts *before*
    one starting with ``0``..``7``.

    Examples
    --------
    >>> ids = ["00000000-0000-0000-0000-000000000001", "80000000-0000-0000-0000-000000000000"]
    >>> sorted(ids, key=uuid_sort_key)[0]
    '80000000-0000-0000-0000-000000000000'
    """
    return uuid_halves(process_id)


def uuid_java_hash(process_id: str) -> int:
    """Java's ``UUID.hashCode()`` (``hilo = msb ^ lsb; (int)(hilo >> 32) ^ (int) hilo``), signed 32-bit."""
    msb, lsb = uuid_halves(process_id)
    hilo = (msb ^ lsb) & ((1 << 64) - 1)
    h = ((hilo >> 32) ^ hilo) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h
