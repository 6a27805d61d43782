"""Immutable problem data: topics, members, instances and assignments.

The model is plain frozen dataclasses.  Per-partition data (weights, move
costs, owned partitions, assignments) is held in read-only numpy arrays so that
an instance with a million partitions stays compact and fast to build.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FORMAT = "kassign/v1"

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

Protocol = Literal["consumer", "streams"]


def frozen_array(values: Iterable[Any] | np.ndarray, dtype: Any) -> np.ndarray:
    """Return ``values`` as a read-only numpy array of ``dtype``.

    Parameters
    ----------
    values
        Anything ``numpy.asarray`` accepts.
    dtype
        Target dtype.

    Returns
    -------
    numpy.ndarray
        A C-contiguous array with ``writeable=False``.
    """
    arr = np.array(values, dtype=dtype, copy=True)
    arr.setflags(write=False)
    return arr


def _frozen_map(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True, eq=False)
class Topic:
    """One topic and its per-partition data.

    Attributes
    ----------
    name
        Topic name.
    partitions
        Number of partitions (``>= 0``).
    id
        Kafka topic id (a UUID string) or ``None``; some Kafka assignors order
        topics by it.
    weights
        Per-partition load (float, ``>= 0``) or ``None`` for unit weights.
    move_costs
        Per-partition cost of moving that partition's state, or ``None`` for 1.
    racks
        Per-partition tuple of racks holding a replica, or ``None``.
    lags
        The weights as exact ``int64`` integers when the document wrote every one as an integer within a Java
        ``long`` (``0..2^63-1``, :func:`solver.io.exact_lags`), else ``None``.  ``weights`` holds them as
        floats, where 2^53 and 2^53 + 1 are one number; assignors that compare lags as Kafka does (``long``)
        read these.
    """

    name: str
    partitions: int
    id: str | None = None
    weights: FloatArray | None = None
    move_costs: FloatArray | None = None
    racks: tuple[tuple[str, ...], ...] | None = None
    lags: IntArray | None = None

    def weight_array(self) -> FloatArray:
        """Per-partition weights, ones when none are given."""
        if self.weights is None:
            return np.ones(self.partitions, dtype=np.float64)
        return self.weights

    def move_cost_array(self) -> FloatArray:
        """Per-partition move costs, ones when none are given."""
        if self.move_costs is None:
            return np.ones(self.partitions, dtype=np.float64)
        return self.move_costs

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Topic):
            return NotImplemented
        return (
            self.name == other.name
            and self.partitions == other.partitions
            and self.id == other.id
            and _arr_eq(self.weights, other.weights)
            and (self.lags is None or other.lags is None or _arr_eq(self.lags, other.lags))
            and _arr_eq(self.move_costs, other.move_costs)
            and self.racks == other.racks
        )

    __hash__ = None  # type: ignore[assignment]


def _arr_eq(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b))


class OwnedMap(Mapping[str, IntArray]):
    """A member's owned partitions, stored flat: one int array plus offsets per topic.

    Behaves as a read-only ``Mapping[str, IntArray]`` whose values are sorted,
    read-only views; a million single-partition claims cost two arrays, not a
    million small ones.  :meth:`flat` gives the raw storage for bulk work.
    The topics keep the order given, and :meth:`listed` each topic's
    partitions in the order given: Kafka's KIP-848 coordinator keeps an
    assignment in a ``HashMap`` of ``HashSet`` s, whose iteration follows
    insertion order among colliding keys.

    Examples
    --------
    >>> m = OwnedMap.from_lists({"T": [3, 1], "U": [0]})
    >>> {t: a.tolist() for t, a in m.items()}
    {'T': [1, 3], 'U': [0]}
    """

    __slots__ = ("_flat", "_index", "_listed", "_offsets", "_topics")

    def __init__(self, topics: tuple[str, ...], flat: IntArray, offsets: IntArray,
                 listed: IntArray | None = None) -> None:
        self._topics = topics
        self._flat = flat
        self._offsets = offsets
        self._listed = listed  # partitions in the order given, when that is not ascending
        self._index: dict[str, int] | None = None  # built on first lookup: most maps are only iterated

    def _lookup(self) -> dict[str, int]:
        if self._index is None:
            self._index = {t: i for i, t in enumerate(self._topics)}
        return self._index

    @classmethod
    def from_lists(cls, owned: Mapping[str, Iterable[int]]) -> OwnedMap:
        """Build from ``{topic: partitions}``; each topic's partitions are sorted."""
        topics = tuple(owned)
        lists = [list(v) for v in owned.values()]
        sizes = np.fromiter((len(v) for v in lists), dtype=np.int64, count=len(lists))
        offsets = np.zeros(len(lists) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        flat = np.fromiter((p for v in lists for p in v), dtype=np.int64, count=int(offsets[-1]))
        listed = None
        if flat.size > 1:
            # Sort only the segments that are not sorted already (inputs usually are).
            down = np.flatnonzero(np.diff(flat) < 0) + 1
            seg = np.searchsorted(offsets, down, side="right") - 1
            unsorted = np.unique(seg[offsets[seg] != down])  # a drop at a segment start is not one
            if unsorted.size:
                listed = flat.copy()
                listed.setflags(write=False)
                for k in unsorted.tolist():
                    a, b = int(offsets[k]), int(offsets[k + 1])
                    flat[a:b] = np.sort(flat[a:b])
        flat.setflags(write=False)
        offsets.setflags(write=False)
        return cls(topics, flat, offsets, listed)

    def listed(self, topic: str) -> IntArray:
        """``topic``'s partitions in the order given (``self[topic]`` is sorted).

        Examples
        --------
        >>> OwnedMap.from_lists({"T": [17, 1]}).listed("T").tolist()
        [17, 1]
        """
        if self._listed is None:
            return self[topic]
        i = self._lookup()[topic]
        return self._listed[self._offsets[i]: self._offsets[i + 1]]

    def flat(self) -> tuple[tuple[str, ...], IntArray, IntArray]:
        """``(topics, partitions, offsets)``: topic ``i`` owns ``partitions[offsets[i]:offsets[i+1]]``."""
        return self._topics, self._flat, self._offsets

    def __getitem__(self, topic: str) -> IntArray:
        i = self._lookup()[topic]
        return self._flat[self._offsets[i]: self._offsets[i + 1]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._topics)

    def __len__(self) -> int:
        return len(self._topics)

    def __contains__(self, topic: object) -> bool:
        return topic in self._lookup()

    def __repr__(self) -> str:
        return f"OwnedMap({ {t: self[t].tolist() for t in self._topics} })"


EMPTY_OWNED = OwnedMap.from_lists({})


def _listed(owned: Mapping[str, IntArray], topic: str) -> IntArray:
    # the order given counts: the KIP-848 assignors read it
    return owned.listed(topic) if isinstance(owned, OwnedMap) else owned[topic]


@dataclass(frozen=True, eq=False)
class Member:
    """One group member (consumer).

    Attributes
    ----------
    id
        Member id, unique in the group.
    topics
        Subscribed topics, in the order given.
    owned
        Previously owned partitions per topic (sorted, read-only int arrays),
        exactly as claimed in the input (before previous-owner resolution);
        topics in the order given, and (``OwnedMap.listed``) partitions too.
        Equality counts both orders: ``uniform`` reads them.
    generation
        Generation of the ``owned`` claim; ``-1`` means unknown.
    instance_id
        ``group.instance.id`` for static members, else ``None``.
    rack
        The member's rack, or ``None``.
    capacity
        Relative throughput (``> 0``), loads are divided by it.
    """

    id: str
    topics: tuple[str, ...]
    owned: Mapping[str, IntArray] = field(default_factory=lambda: EMPTY_OWNED)
    generation: int = -1
    instance_id: str | None = None
    rack: str | None = None
    capacity: float = 1.0

    def owned_pairs(self) -> Iterator[tuple[str, int]]:
        """Iterate ``(topic, partition)`` claims in topic order given, partitions ascending."""
        for t, parts in self.owned.items():
            for p in parts.tolist():
                yield t, p

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Member):
            return NotImplemented
        return (
            self.id == other.id
            and self.topics == other.topics
            and self.generation == other.generation
            and self.instance_id == other.instance_id
            and self.rack == other.rack
            and self.capacity == other.capacity
            and list(self.owned) == list(other.owned)  # in order: the KIP-848 assignors read it
            and all(np.array_equal(_listed(self.owned, k), _listed(other.owned, k)) for k in self.owned)
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class Instance:
    """A group state to assign: topics, members and co-partition groups.

    Members keep the order of the input (Kafka's leader sees them in that
    order, and some assignors depend on it).  Topics keep input order too;
    assignors sort them as Kafka does.

    Attributes
    ----------
    name
        Instance name (may be empty).
    protocol
        ``"consumer"`` or ``"streams"``.
    topics
        Topic name -> :class:`Topic`.
    members
        Members in input order.
    copartition
        Groups of topics whose partition ``i`` forms one unit (KIP-315).
    streams
        The Kafka Streams part (tasks, clients, config) when ``protocol`` is
        ``"streams"``; ``None`` for the consumer protocol.
    meta
        Free-form documentation keys (``source``, ``notes``, ``expected``,
        ``facts``) carried along unchanged.
    kafka_version
        The Kafka release whose rules the Kafka-named assignors follow for
        this instance (``"4.3.1"``), or ``None`` (the newest modelled); a
        ``--kafka-version`` flag overrides it (:mod:`solver.kafka_version`).
    """

    name: str
    protocol: Protocol
    topics: Mapping[str, Topic]
    members: tuple[Member, ...]
    copartition: tuple[tuple[str, ...], ...] = ()
    streams: Any = None
    meta: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    kafka_version: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", _frozen_map(self.topics))
        object.__setattr__(self, "meta", _frozen_map(self.meta))

    @property
    def member_ids(self) -> tuple[str, ...]:
        """Member ids in input order."""
        return tuple(m.id for m in self.members)

    def member(self, member_id: str) -> Member:
        """Return the member with id ``member_id`` (``KeyError`` if absent)."""
        for m in self.members:
            if m.id == member_id:
                return m
        raise KeyError(member_id)

    @property
    def total_partitions(self) -> int:
        """Number of topic-partitions over all topics."""
        return sum(t.partitions for t in self.topics.values())

    @property
    def has_weights(self) -> bool:
        """True when any topic carries explicit per-partition weights."""
        return any(t.weights is not None for t in self.topics.values())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Instance):
            return NotImplemented
        return (
            self.name == other.name
            and self.protocol == other.protocol
            and list(self.topics.items()) == list(other.topics.items())
            and self.members == other.members
            and self.copartition == other.copartition
            and self.streams == other.streams
            and self.kafka_version == other.kafka_version
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class Assignment:
    """A consumer-protocol assignment: member -> topic -> partitions.

    Partition arrays are sorted, read-only ``int64`` arrays.  Topics with no
    partitions for a member are omitted; members with nothing map to ``{}``.
    The assignment may be invalid (duplicates, unknown members): the scorer
    reports that, the model does not forbid it.

    Attributes
    ----------
    members
        Member id -> topic -> sorted partition array.
    """

    members: Mapping[str, Mapping[str, IntArray]]

    @classmethod
    def from_lists(cls, data: Mapping[str, Mapping[str, Iterable[int]]]) -> Assignment:
        """Build from plain ``{member: {topic: [partitions]}}`` data.

        Examples
        --------
        >>> a = Assignment.from_lists({"C1": {"T": [2, 0]}, "C2": {}})
        >>> a.to_lists()
        {'C1': {'T': [0, 2]}, 'C2': {}}
        """
        members: dict[str, Mapping[str, IntArray]] = {}
        for mid, topics in data.items():
            per: dict[str, IntArray] = {}
            for t, parts in topics.items():
                arr = np.sort(np.asarray(list(parts) if not isinstance(parts, np.ndarray) else parts,
                                         dtype=np.int64))
                if arr.size:
                    arr.setflags(write=False)
                    per[t] = arr
            members[mid] = MappingProxyType(per)
        return cls(MappingProxyType(members))

    @classmethod
    def from_owners(
        cls, member_ids: Iterable[str], owners: Mapping[str, np.ndarray]
    ) -> Assignment:
        """Build from per-topic owner arrays.

        Parameters
        ----------
        member_ids
            Member ids; owner value ``i`` refers to the ``i``-th of them.
        owners
            Topic -> int array of length ``partitions``: member index of the
            partition's owner, ``-1`` for unassigned.
        """
        ids = list(member_ids)
        names = list(owners)
        arrays = [np.asarray(owners[t]) for t in names]
        sizes = np.array([a.size for a in arrays], dtype=np.int64)
        if sizes.sum() == 0:
            return cls(MappingProxyType({m: EMPTY_OWNED for m in ids}))
        who = np.concatenate(arrays).astype(np.int64, copy=False)
        tidx = np.repeat(np.arange(len(names), dtype=np.int64), sizes)
        part = np.arange(who.size, dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        keep = who >= 0
        who, tidx, part = who[keep], tidx[keep], part[keep]
        # Topic-major input, so a stable sort by member keeps (topic, partition) order inside each member.
        order = np.argsort(who, kind="stable")
        who, tidx, part = who[order], tidx[order], part[order]
        part.setflags(write=False)
        mstart = np.searchsorted(who, np.arange(len(ids) + 1), side="left")
        # Topic boundaries over the whole sorted array (a member boundary is also a topic boundary).
        tb = np.ones(who.size, dtype=bool)
        tb[1:] = (tidx[1:] != tidx[:-1]) | (who[1:] != who[:-1])
        tstarts = np.flatnonzero(tb)
        members: dict[str, Mapping[str, IntArray]] = {}
        for i, m in enumerate(ids):
            a, b = int(mstart[i]), int(mstart[i + 1])
            if a == b:
                members[m] = EMPTY_OWNED
                continue
            lo, hi = np.searchsorted(tstarts, [a, b])
            starts = tstarts[lo:hi]
            topics = tuple(names[k] for k in tidx[starts].tolist())
            offsets = np.append(starts, b) - a
            offsets.setflags(write=False)
            members[m] = OwnedMap(topics, part[a:b], offsets)
        return cls(MappingProxyType(members))

    def to_lists(self) -> dict[str, dict[str, list[int]]]:
        """Plain nested dict, members and topics in stored order."""
        return {m: {t: a.tolist() for t, a in tp.items()} for m, tp in self.members.items()}

    def canonical(self, member_ids: Iterable[str] = ()) -> dict[str, dict[str, list[int]]]:
        """Canonical sorted form: members by id, topics by name, partitions ascending.

        Parameters
        ----------
        member_ids
            Members that must appear even when they hold nothing (every member
            of the instance).
        """
        keys = set(self.members) | set(member_ids)
        out: dict[str, dict[str, list[int]]] = {}
        for m in sorted(keys):
            tp = self.members.get(m, EMPTY_OWNED)
            if isinstance(tp, OwnedMap):
                # One tolist() per member instead of one per (member, topic): fast at 1M partitions.
                topics, flat, offsets = tp.flat()
                parts = flat.tolist()
                offs = offsets.tolist()
                order = sorted(range(len(topics)), key=topics.__getitem__)
                out[m] = {topics[k]: parts[offs[k]: offs[k + 1]] for k in order if offs[k + 1] > offs[k]}
            else:
                out[m] = {t: tp[t].tolist() for t in sorted(tp) if tp[t].size}
        return out

    def partitions_of(self, member_id: str) -> int:
        """Number of topic-partitions assigned to ``member_id``."""
        return int(sum(a.size for a in self.members.get(member_id, {}).values()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Assignment):
            return NotImplemented
        return self.canonical() == other.canonical()

    __hash__ = None  # type: ignore[assignment]
