"""Kafka's consumer-protocol subscription bytes (``ConsumerProtocolSubscription``, versions 0-3).

What a consumer sends in its JoinGroup metadata (``ConsumerProtocol.serializeSubscription``);
a Kafka Streams member carries its ``SubscriptionInfo`` in ``user_data``.  All integers are
big-endian; the message starts with its int16 version::

    version          int16                                       (prefix)
    topics           int32 n, n x string                         v0+
    userData         int32 n, n bytes (n < 0: null)              v0+
    ownedPartitions  int32 n, n x (string topic, int32 m, m x int32)   v1+
    generationId     int32 (negative: none)                      v2+
    rackId           string (int16 n < 0: null)                  v3+

    string = int16 n, n bytes UTF-8 (n < 0: null, refused where not nullable)

As in Kafka, a version above 3 is read with version 3's layout (newer versions only append
fields) and bytes after the last field are then ignored; for versions 0-3 trailing bytes are
an error here (Kafka ignores them), since they mean the bytes are not what they claim.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from typing import Any

from solver.wire import ByteReader, SubscriptionDecodeError

#: Highest version of ``ConsumerProtocolSubscription`` at Kafka commit 1eb7644349cb.
MAX_CONSUMER_VERSION = 3


@dataclass(frozen=True)
class ConsumerSubscription:
    """One decoded consumer-protocol subscription.

    Attributes
    ----------
    version
        The int16 version prefix.
    topics
        Subscribed topics, in wire order (Kafka's encoder sorts them).
    user_data
        The assignor's user data, or ``None`` (length -1 on the wire).
    owned_partitions
        ``(topic, partitions)`` in wire order (v1+).
    generation
        Generation of the owned partitions, ``None`` when absent or negative (v2+).
    rack
        The consumer's rack, ``None`` when absent or empty (v3+).
    """

    version: int
    topics: tuple[str, ...] = ()
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, tuple[int, ...]], ...] = ()
    generation: int | None = None
    rack: str | None = None


def _string(r: ByteReader, what: str, nullable: bool = False) -> str | None:
    at = r.pos
    n = r.i16(what)
    if n < 0:
        if nullable:
            return None
        raise SubscriptionDecodeError(f"byte {at}: {what} has length {n}, but it cannot be null")
    raw = r.take(n, what)
    return r.utf8(raw, at + 2, what)


def decode_consumer_subscription(data: bytes) -> ConsumerSubscription:
    """Parse consumer-protocol subscription bytes as ``ConsumerProtocol.deserializeSubscription`` does.

    Raises
    ------
    SubscriptionDecodeError
        Truncated data, a negative version or array length, a null where
        none is allowed, text that is not UTF-8, trailing bytes (v0-v3); the
        message starts with the byte offset.

    Examples
    --------
    >>> sub = ConsumerSubscription(1, ("a", "b"), None, (("a", (0, 2)),))
    >>> decode_consumer_subscription(encode_consumer_subscription(sub)) == sub
    True
    """
    r = ByteReader(data)
    v = r.i16("version")
    if v < 0:
        raise SubscriptionDecodeError(f"byte 0: version {v} is negative (Kafka: unsupported subscription version)")
    read_as = min(v, MAX_CONSUMER_VERSION)
    topics = []
    for _ in range(r.count("topics", 2)):
        topics.append(str(_string(r, "topic")))
    n = r.i32("userData")
    user_data = None if n < 0 else r.take(n, "userData")
    owned: list[tuple[str, tuple[int, ...]]] = []
    if read_as >= 1:
        for _ in range(r.count("ownedPartitions", 6)):
            topic = str(_string(r, "ownedPartitions topic"))
            parts = tuple(r.i32("partition") for _ in range(r.count("ownedPartitions partitions", 4)))
            owned.append((topic, parts))
    generation = None
    if read_as >= 2:
        g = r.i32("generationId")
        generation = g if g >= 0 else None
    rack = None
    if read_as >= 3:
        rack = _string(r, "rackId", nullable=True) or None
    if v <= MAX_CONSUMER_VERSION and r.pos != len(data):
        raise SubscriptionDecodeError(f"byte {r.pos}: {len(data) - r.pos} trailing bytes")
    return ConsumerSubscription(v, tuple(topics), user_data, tuple(owned), generation, rack)


def encode_consumer_subscription(sub: ConsumerSubscription) -> bytes:
    """Serialise ``sub`` at ``sub.version`` (0-3), fields in the order given (no sorting)."""
    v = sub.version
    if not 0 <= v <= MAX_CONSUMER_VERSION:
        raise ValueError(f"version {v} not in 0..{MAX_CONSUMER_VERSION}")
    out = [struct.pack(">h", v), struct.pack(">i", len(sub.topics))]

    def string(s: str | None) -> None:
        if s is None:
            out.append(struct.pack(">h", -1))
            return
        b = s.encode("utf-8")
        out.append(struct.pack(">h", len(b)) + b)

    for t in sub.topics:
        string(t)
    if sub.user_data is None:
        out.append(struct.pack(">i", -1))
    else:
        out.append(struct.pack(">i", len(sub.user_data)) + sub.user_data)
    if v >= 1:
        out.append(struct.pack(">i", len(sub.owned_partitions)))
        for topic, parts in sub.owned_partitions:
            string(topic)
            out.append(struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts))
    if v >= 2:
        out.append(struct.pack(">i", -1 if sub.generation is None else sub.generation))
    if v >= 3:
        string(sub.rack)
    return b"".join(out)


def consumer_fields(data: bytes) -> dict[str, Any]:
    """What ``ConsumerProtocol.deserializeSubscription`` reads back from ``data``.

    Fields (``scenarios/README.md``): ``version``, ``topics``, ``user_data_b64``
    (standard base64, ``None`` when null), ``owned_partitions`` (topic ->
    partitions, wire order; a topic listed twice has its partitions joined),
    ``generation`` and ``rack`` (``None`` when absent).

    Examples
    --------
    >>> consumer_fields(encode_consumer_subscription(ConsumerSubscription(2, ("t",), b"x", (("t", (1,)),), 5)))
    {'version': 2, 'topics': ['t'], 'user_data_b64': 'eA==', 'owned_partitions': {'t': [1]}, 'generation': 5, \
'rack': None}
    """
    sub = decode_consumer_subscription(data)
    owned: dict[str, list[int]] = {}
    for topic, parts in sub.owned_partitions:
        owned.setdefault(topic, []).extend(parts)
    return {
        "version": sub.version,
        "topics": list(sub.topics),
        "user_data_b64": None if sub.user_data is None else base64.b64encode(sub.user_data).decode("ascii"),
        "owned_partitions": owned,
        "generation": sub.generation,
        "rack": sub.rack,
    }
