"""The consumer protocol's embedded formats: subscriptions, assignments, and kassign's user data.

Kafka's ``ConsumerProtocol`` serialises a member's subscription (its JoinGroup
metadata) and the leader's assignment (its SyncGroup data) as a big-endian
``int16`` version followed by the fields of that version; a reader that knows
fewer versions reads the fields it knows and ignores the rest, as Kafka's
``ConsumerProtocol.deserializeSubscription`` does.

Subscription (``ConsumerProtocolSubscription.json``, versions 0-3)::

    Topics          []string                          v0+
    UserData        nullable bytes (int32 length)     v0+
    OwnedPartitions [](string topic, []int32)         v1+
    GenerationId    int32 (default -1)                v2+
    RackId          nullable string (int16 length)    v3+

Assignment (``ConsumerProtocolAssignment.json``)::

    AssignedPartitions [](string topic, []int32)      v0+
    UserData           nullable bytes                 v0+

kassign's own user data (``kassign-optimal`` members, see :mod:`spark_runner.live.assignor`)::

    magic     4 bytes b"KAS1"
    generation int32
    owned      [](string topic, []int32)
    weights    [](string topic, [](int32 partition, float64 weight))
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: Highest subscription version whose fields are decoded.
MAX_SUBSCRIPTION_VERSION = 3
#: First bytes of kassign's user data.
KASSIGN_MAGIC = b"KAS1"


class WireDecodeError(ValueError):
    """Bytes that do not follow the layout (with the byte offset)."""


@dataclass(frozen=True)
class Subscription:
    """One decoded consumer-protocol subscription.

    Attributes
    ----------
    version
        The version the member wrote.
    topics
        Subscribed topics, as sent.
    user_data
        The assignor's user data (``None`` when null).
    owned
        v1+: topic -> owned partitions.
    generation
        v2+: the generation of the member's owned partitions, else -1.
    rack
        v3+: the member's rack, else ``None``.
    """

    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    generation: int = -1
    rack: str | None = None


@dataclass(frozen=True)
class MemberAssignment:
    """One decoded consumer-protocol assignment (topic -> partitions, user data)."""

    version: int
    partitions: Mapping[str, tuple[int, ...]]
    user_data: bytes | None = None


@dataclass(frozen=True)
class KassignUserData:
    """What a ``kassign-optimal`` member reports: its owned partitions, their generation, optional weights."""

    generation: int = -1
    owned: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    weights: Mapping[str, Mapping[int, float]] = field(default_factory=dict)


# --------------------------------------------------------------------------- reading


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def _take(self, n: int, name: str) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise WireDecodeError(
                f"{self.what}: byte {self.pos}: {name} needs {n} bytes, {len(self.data) - self.pos} left")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def i16(self, name: str) -> int:
        return int(struct.unpack(">h", self._take(2, name))[0])

    def i32(self, name: str) -> int:
        return int(struct.unpack(">i", self._take(4, name))[0])

    def f64(self, name: str) -> float:
        return float(struct.unpack(">d", self._take(8, name))[0])

    def count(self, name: str) -> int:
        at = self.pos
        n = self.i32(name)
        if n < 0:
            raise WireDecodeError(f"{self.what}: byte {at}: {name} has negative length {n}")
        return n

    def string(self, name: str) -> str:
        s = self.nullable_string(name)
        if s is None:
            raise WireDecodeError(f"{self.what}: byte {self.pos - 2}: {name} is null")
        return s

    def nullable_string(self, name: str) -> str | None:
        n = self.i16(name)
        if n < 0:
            return None
        raw = self._take(n, name)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise WireDecodeError(f"{self.what}: byte {self.pos - n}: {name} is not UTF-8 ({e})") from None

    def nullable_bytes(self, name: str) -> bytes | None:
        n = self.i32(name)
        return None if n < 0 else self._take(n, name)

    def topic_partitions(self, name: str) -> dict[str, tuple[int, ...]]:
        out: dict[str, tuple[int, ...]] = {}
        for _ in range(self.count(name)):
            topic = self.string(f"{name} topic")
            parts = tuple(self.i32(f"{name} partition") for _ in range(self.count(f"{name} partitions")))
            out[topic] = out.get(topic, ()) + parts  # wire order, as Kafka's decoder keeps it
        return out


def decode_subscription(data: bytes) -> Subscription:
    """Decode a member's consumer-protocol subscription (JoinGroup / DescribeGroups metadata).

    Raises
    ------
    WireDecodeError
        Truncated or malformed bytes, with the byte offset.

    Examples
    --------
    >>> s = decode_subscription(encode_subscription(["b", "a"], owned={"a": [1]}, generation=7, version=2))
    >>> s.topics, dict(s.owned), s.generation, s.rack
    (('b', 'a'), {'a': (1,)}, 7, None)
    """
    r = _Reader(data, "subscription")
    version = r.i16("version")
    if version < 0:
        raise WireDecodeError(f"subscription: byte 0: negative version {version}")
    topics = tuple(r.string("topic") for _ in range(r.count("topics")))
    user_data = r.nullable_bytes("user data")
    owned: dict[str, tuple[int, ...]] = {}
    generation = -1
    rack = None
    # Later fields are "ignorable": a member of an older client simply stops early.
    if version >= 1 and not r.at_end():
        owned = r.topic_partitions("owned partitions")
    if version >= 2 and not r.at_end():
        generation = r.i32("generation")
    if version >= 3 and not r.at_end():
        rack = r.nullable_string("rack")
    return Subscription(version, topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes) -> MemberAssignment:
    """Decode a member's consumer-protocol assignment (SyncGroup / DescribeGroups assignment).

    Examples
    --------
    >>> a = decode_assignment(encode_assignment({"t": [2, 0]}))
    >>> dict(a.partitions), a.user_data
    ({'t': (2, 0)}, None)
    """
    r = _Reader(data, "assignment")
    version = r.i16("version")
    if version < 0:
        raise WireDecodeError(f"assignment: byte 0: negative version {version}")
    parts = r.topic_partitions("assigned partitions")
    user_data = r.nullable_bytes("user data") if not r.at_end() else None
    return MemberAssignment(version, parts, user_data)


def decode_user_data(data: bytes | None) -> KassignUserData | None:
    """Decode kassign's user data; ``None`` when ``data`` is not kassign's (no magic).

    Raises
    ------
    WireDecodeError
        kassign's magic followed by malformed bytes.
    """
    if not data or not bytes(data).startswith(KASSIGN_MAGIC):
        return None
    r = _Reader(data, "kassign user data")
    r._take(len(KASSIGN_MAGIC), "magic")
    generation = r.i32("generation")
    owned = r.topic_partitions("owned")
    weights: dict[str, dict[int, float]] = {}
    for _ in range(r.count("weights")):
        topic = r.string("weights topic")
        per = weights.setdefault(topic, {})
        for _ in range(r.count("weights partitions")):
            p = r.i32("weights partition")
            per[p] = r.f64("weight")
    if not r.at_end():
        raise WireDecodeError(f"kassign user data: byte {r.pos}: {len(r.data) - r.pos} trailing bytes")
    return KassignUserData(generation, owned, weights)


# --------------------------------------------------------------------------- writing


def _i16(v: int) -> bytes:
    return struct.pack(">h", v)


def _i32(v: int) -> bytes:
    return struct.pack(">i", v)


def _string(s: str | None) -> bytes:
    if s is None:
        return _i16(-1)
    b = s.encode("utf-8")
    return _i16(len(b)) + b


def _bytes(b: bytes | None) -> bytes:
    return _i32(-1) if b is None else _i32(len(b)) + bytes(b)


def _topic_partitions(tps: Mapping[str, Sequence[int]]) -> bytes:
    # In the caller's order: re-encoding what was decoded gives the same bytes.
    out = [_i32(len(tps))]
    for topic, parts in tps.items():
        out.append(_string(topic) + _i32(len(parts)) + b"".join(_i32(p) for p in parts))
    return b"".join(out)


def encode_subscription(
    topics: Sequence[str],
    user_data: bytes | None = None,
    *,
    owned: Mapping[str, Sequence[int]] | None = None,
    generation: int = -1,
    rack: str | None = None,
    version: int = MAX_SUBSCRIPTION_VERSION,
) -> bytes:
    """Serialise a consumer-protocol subscription at ``version`` (0-3); fields of later versions are dropped."""
    if not 0 <= version <= MAX_SUBSCRIPTION_VERSION:
        raise ValueError(f"subscription version {version} not in 0..{MAX_SUBSCRIPTION_VERSION}")
    out = [_i16(version), _i32(len(topics)), *(_string(t) for t in topics), _bytes(user_data)]
    if version >= 1:
        out.append(_topic_partitions(owned or {}))
    if version >= 2:
        out.append(_i32(generation))
    if version >= 3:
        out.append(_string(rack))
    return b"".join(out)


def encode_assignment(partitions: Mapping[str, Sequence[int]], user_data: bytes | None = None,
                      version: int = 0) -> bytes:
    """Serialise a consumer-protocol assignment."""
    return _i16(version) + _topic_partitions(partitions) + _bytes(user_data)


def encode_user_data(data: KassignUserData) -> bytes:
    """Serialise kassign's user data (topics and partitions sorted, so equal data gives equal bytes).

    Examples
    --------
    >>> d = KassignUserData(3, {"t": (1, 0)}, {"t": {1: 2.5}})
    >>> back = decode_user_data(encode_user_data(d))
    >>> back.generation, dict(back.owned), {t: dict(w) for t, w in back.weights.items()}
    (3, {'t': (0, 1)}, {'t': {1: 2.5}})
    """
    owned = {t: sorted(data.owned[t]) for t in sorted(data.owned)}
    out = [KASSIGN_MAGIC, _i32(data.generation), _topic_partitions(owned), _i32(len(data.weights))]
    for topic in sorted(data.weights):
        per = data.weights[topic]
        out.append(_string(topic) + _i32(len(per)))
        out.extend(_i32(p) + struct.pack(">d", float(per[p])) for p in sorted(per))
    return b"".join(out)
