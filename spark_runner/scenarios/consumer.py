"""Rebalance scenarios: an initial group and a sequence of events, generated from (parameters, seed).

A :class:`Scenario` is an initial :class:`~solver.model.Instance` (no owned
partitions) plus a tuple of fully concrete :class:`Event` objects.  Every random
choice is made once, by :func:`generate`, from ``numpy.random.Generator(PCG64(seed))``;
events carry their data (new member ids, new topics with their weights, ...)
so that :func:`apply_event` is a pure function without randomness:

    next_instance = apply_event(instance, event, assignment)

``assignment`` is the output of one assignor on ``instance``; it becomes the
``owned`` claims of the surviving members at the next generation.  Each
assignor therefore carries its own state through the same sequence of group
changes.

Event semantics (what the next rebalance sees)
----------------------------------------------
``join``
    one new member (fresh member id, no claims) joins, appended to the member list.
``leave``
    one member leaves the group; it and its claims are gone.
``crash``
    one member's process dies and comes back under the same identity without
    its state: it stays in the group (same id, same position) but its claims
    disappear (generation -1), as after a crash of a static member.
``rolling-restart``
    a block of consecutive steps, one per member in list order: the member
    shuts down and restarts under a new member id (same client prefix,
    ``instance_id``, rack and subscription, no claims), appended at the end
    of the member list as a rejoining consumer is.
``subscription-change``
    one member changes its subscription (``two-groups``: the next member of
    the old version moves to the new version's subscription, and back once
    all have moved).
``topic-added``
    a new topic; subscribers follow the subscription pattern.
``partition-expansion``
    a topic (and every topic co-partitioned with it) gains partitions.
``scale-out`` / ``scale-in``
    ``scale_k`` members join, or leave, in one rebalance.
``weight-drift``
    every partition weight is multiplied by a lognormal factor (only with
    weighted scenarios).

Claims of surviving members carry the generation of the step that produced
them (step ``n``'s claims were assigned at step ``n - 1`` and carry generation
``n``); members that just joined, restarted or crashed claim nothing
(generation -1).  Claims on topics a member no longer subscribes to, or on
partitions that no longer exist, are dropped.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, Self, TypeVar

import numpy as np
from numpy.random import PCG64, Generator

from solver.model import EMPTY_OWNED, Assignment, Instance, Member, OwnedMap, Topic, frozen_array

SUBSCRIPTIONS = ("identical", "random", "two-groups", "skewed")
WEIGHTS = ("uniform", "zipf", "lognormal", "hot")
S = TypeVar("S")  # a generator's state (an instance)
E = TypeVar("E")  # a generator's event
EVENT_KINDS = (
    "join",
    "leave",
    "crash",
    "rolling-restart",
    "subscription-change",
    "topic-added",
    "partition-expansion",
    "scale-out",
    "scale-in",
    "weight-drift",
)


# --------------------------------------------------------------------------- parameters


#: Largest Java ``int`` / ``long``: Kafka holds counts in ``int`` s, offsets and lags in ``long`` s.
JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1
#: Size limits of one generated scenario (docs/sweeps.md, "Limits"): a sweep runs many small groups, and
#: a grid value far beyond them would only exhaust a Spark worker's memory.
MAX_SCENARIO_PARTITIONS = 100_000
MAX_SCENARIO_MEMBERS = 10_000
MAX_SCENARIO_PAIRS = 10**8
MAX_SCENARIO_STEPS = 1_000


def size_problems(items: tuple[str, int, str], group: tuple[str, int, str], pairs: int,
                  pairs_what: str) -> list[tuple[str, str]]:
    """One scenario's size against :data:`MAX_SCENARIO_PARTITIONS`, :data:`MAX_SCENARIO_MEMBERS` and
    :data:`MAX_SCENARIO_PAIRS` (the first one crossed): ``(field, message)`` pairs for ``problems()``.

    ``items``: (how they are counted, how many, what they are); ``group``: (its field, its cap, how the cap
    is set); ``pairs``: items x group (x replicas), said as ``pairs_what``.
    """
    how, n_items, what = items
    field, cap, rule = group
    if n_items > MAX_SCENARIO_PARTITIONS:
        return [("partitions_max", f"{how} = {n_items:,} {what}, more than a scenario's limit of "
                                   f"{MAX_SCENARIO_PARTITIONS:,}")]
    if cap > MAX_SCENARIO_MEMBERS:
        return [(field, f"up to {cap:,} {field} ({rule}), more than a scenario's limit of {MAX_SCENARIO_MEMBERS:,}")]
    if pairs > MAX_SCENARIO_PAIRS:
        return [(field, f"{pairs_what}, more than a scenario's limit of {MAX_SCENARIO_PAIRS:,} pairs")]
    return []


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:39] + "..."


def _int_at_least(lo: int, hi: int = JAVA_INT_MAX) -> Callable[[Any], str | None]:
    """An integer in ``lo..hi`` (a Java ``int`` unless said otherwise)."""
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            return f"expected an integer, got {_shown(v)}"
        if v > hi:
            return f"must be <= {hi}{' (a Java int)' if hi == JAVA_INT_MAX else ''}, got {_shown(v)}"
        return None if v >= lo else f"must be >= {lo}, got {v}"

    return check


def _float_range(lo: float, hi: float = 1e6, lo_open: bool = False) -> Callable[[Any], str | None]:
    """A finite number in ``lo..hi`` (``lo`` excluded when ``lo_open``)."""
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or v != v:
            return f"expected a number, got {_shown(v)}"
        if not math.isfinite(v):
            return f"must be a finite number, got {v}"
        if (v <= lo) if lo_open else (v < lo):
            return f"must be {'>' if lo_open else '>='} {lo}, got {v}"
        if hi is not None and v > hi:
            return f"must be <= {hi}, got {v}"
        return None

    return check


def _choice(options: Sequence[str]) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in options else f"must be one of {', '.join(options)}; got {v!r}"

    return check


def _optional(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    return lambda v: None if v is None else check(v)


def _events_check(known: Sequence[str], what: str = "event kind") -> Callable[[Any], str | None]:
    """Check of an ``events`` value: a non-empty list of distinct kinds out of ``known`` (one generator's)."""
    def check(v: Any) -> str | None:
        if not isinstance(v, (tuple, list)) or not v:
            return "expected a non-empty list of event kinds"
        bad = [e for e in v if e not in known]
        if bad:
            return f"unknown {what}(s) {', '.join(map(repr, bad))}; known: {', '.join(known)}"
        if len(set(v)) != len(v):
            return "an event kind is listed twice"
        return None

    return check


#: Field name -> check of one value (None when fine).  The grid validator uses
#: these to name the exact YAML path of a bad value.
FIELD_CHECKS: Mapping[str, Callable[[Any], str | None]] = MappingProxyType({
    "members": _int_at_least(1),
    "topics": _int_at_least(1),
    "partitions_min": _int_at_least(1),
    "partitions_max": _int_at_least(1),
    "subscription": _choice(SUBSCRIPTIONS),
    "density": _float_range(0.0, 1.0, lo_open=True),
    "weights": _choice(WEIGHTS),
    "zipf_a": _float_range(1.0, 100.0, lo_open=True),
    "lognormal_sigma": _float_range(0.0, 5.0),
    "hot_partitions": _int_at_least(0),
    "hot_factor": _float_range(1.0),
    "racks": _int_at_least(0),
    "replication": _int_at_least(1),
    "copartition": _int_at_least(0),
    "static": _float_range(0.0, 1.0),
    "steps": _int_at_least(0, MAX_SCENARIO_STEPS),
    "events": _events_check(EVENT_KINDS),
    "scale_k": _int_at_least(1),
    "drift": _float_range(0.0, 5.0),
    "max_members": _optional(_int_at_least(1)),
    "min_members": _optional(_int_at_least(1)),
    "max_partitions": _optional(_int_at_least(1)),
})


class CheckedParams:
    """Shared machinery of generator parameters (frozen dataclasses that inherit it).

    ``_CHECKS`` maps each field to its check (one value -> message or None);
    :meth:`_cross_problems` adds the rules between fields.  Construction
    validates; :meth:`to_dict` / :meth:`from_dict` / :meth:`canonical_json`
    give the JSON form that scenario ids hash.
    """

    _CHECKS: ClassVar[Mapping[str, Callable[[Any], str | None]]] = MappingProxyType({})
    #: What an unknown key is called in :meth:`from_dict` errors.
    _WHAT: ClassVar[str] = "parameter"

    def __post_init__(self) -> None:
        events = self.__dict__.get("events")
        if isinstance(events, list):
            object.__setattr__(self, "events", tuple(events))
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(f"{k}: {v}" for k, v in problems))

    def problems(self) -> list[tuple[str, str]]:
        """Every problem as ``(field, message)``; empty when the parameters are valid."""
        out = []
        for name, check in self._CHECKS.items():
            msg = check(getattr(self, name))
            if msg:
                out.append((name, msg))
        # rules between fields only once every field is valid on its own
        return out or self._cross_problems()

    def _cross_problems(self) -> list[tuple[str, str]]:
        return []

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (``events`` as a list)."""
        d = asdict(self)  # type: ignore[call-overload]  # subclasses are dataclasses
        d["events"] = list(d["events"])
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Build from a dict (unknown keys raise ``ValueError``)."""
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown {cls._WHAT}(s): {', '.join(unknown)}")
        d = dict(data)
        if "events" in d and isinstance(d["events"], list):
            d["events"] = tuple(d["events"])
        return cls(**d)

    def canonical_json(self) -> str:
        """Stable JSON (sorted keys) used for scenario ids."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class ScenarioParams(CheckedParams):
    """Generator parameters of one scenario family (a point of a sweep grid).

    Attributes
    ----------
    members
        Initial group size.
    topics
        Initial number of topics.
    partitions_min, partitions_max
        Partition count of each topic, drawn uniformly in this range
        (co-partitioned topics share one count).
    subscription
        ``identical`` (every member subscribes to every topic), ``random``
        (each topic with probability ``density``, at least one),
        ``two-groups`` (a rolling update: the old version subscribes to every
        topic but the last, the new version to all; a random share starts on
        the new version and new members join with it), ``skewed`` (nested
        prefixes of the topic list; most members subscribe to few topics, a
        few to all).
    density
        Subscription probability for ``random`` and for topics added later.
    weights
        Partition loads: ``uniform`` (no weights, every partition counts 1),
        ``zipf`` (Zipf-distributed integers with exponent ``zipf_a``),
        ``lognormal`` (median 1, ``lognormal_sigma``), ``hot`` (weight 1
        except ``hot_partitions`` partitions of weight ``hot_factor``).
    racks
        Number of racks (0: no rack information).  Members get a random rack,
        every partition ``min(replication, racks)`` distinct replica racks.
    copartition
        Number of co-partition groups; group ``g`` pairs topics ``2g`` and
        ``2g + 1``, which are always subscribed together.
    static
        Share of members with a ``group.instance.id`` (static membership).
    steps
        Number of events after the initial assignment (fewer when at some step
        no listed event can apply).
    events
        Event kinds to draw from, uniformly among those that apply.
    scale_k
        Members added or removed by ``scale-out`` / ``scale-in``.
    drift
        Sigma of the lognormal factor of ``weight-drift``.
    max_members
        Cap on the group size for joins (``None``: ``2 * members + scale_k``).
    min_members
        Floor on the group size for leaves (``None``: ``max(1, members // 2)``).
    max_partitions
        Cap on the total topic-partitions: ``topic-added`` and
        ``partition-expansion`` stay below it (``None``: no cap).  The initial
        topics must fit: ``topics * partitions_max <= max_partitions``.
    """

    members: int = 6
    topics: int = 3
    partitions_min: int = 4
    partitions_max: int = 12
    subscription: str = "identical"
    density: float = 0.6
    weights: str = "uniform"
    zipf_a: float = 2.0
    lognormal_sigma: float = 1.0
    hot_partitions: int = 2
    hot_factor: float = 10.0
    racks: int = 0
    replication: int = 3
    copartition: int = 0
    static: float = 0.0
    steps: int = 10
    events: tuple[str, ...] = EVENT_KINDS
    scale_k: int = 2
    drift: float = 0.3
    max_members: int | None = None
    min_members: int | None = None
    max_partitions: int | None = None

    _CHECKS = FIELD_CHECKS

    def _cross_problems(self) -> list[tuple[str, str]]:
        out = []
        if self.partitions_min > self.partitions_max:
            out.append(("partitions_max", f"must be >= partitions_min ({self.partitions_min})"))
        spare = 1 if self.subscription == "two-groups" else 0
        if 2 * self.copartition + spare > self.topics:
            need = 2 * self.copartition + spare
            out.append(("copartition", f"{self.copartition} group(s) need at least {need} topics"
                                       f"{' with two-groups' if spare else ''}, there are {self.topics}"))
        if self.subscription == "two-groups" and self.topics < 2:
            out.append(("subscription", "two-groups needs at least 2 topics"))
        if self.max_members is not None and self.max_members < self.members:
            out.append(("max_members", f"must be >= members ({self.members})"))
        if self.max_partitions is not None and self.topics * self.partitions_max > self.max_partitions:
            out.append(("max_partitions", f"must be >= topics * partitions_max "
                                          f"({self.topics * self.partitions_max})"))
        if self.min_members is not None and self.min_members > self.members:
            out.append(("min_members", f"must be <= members ({self.members})"))
        if self.events == ("weight-drift",) and self.weights == "uniform":
            out.append(("events", "weight-drift alone needs weighted partitions (weights is uniform)"))
        parts = self.topics * self.partitions_max
        out += size_problems(("topics x partitions_max", parts, "partitions"),
                             ("members", self.member_cap, "max_members, or 2 x members + scale_k"),
                             parts * self.member_cap, f"{parts:,} partitions x {self.member_cap:,} members")
        return out

    @property
    def member_cap(self) -> int:
        """The effective cap on the group size."""
        return self.max_members if self.max_members is not None else 2 * self.members + self.scale_k

    @property
    def member_floor(self) -> int:
        """The effective floor on the group size."""
        return self.min_members if self.min_members is not None else max(1, self.members // 2)


class _CanonicalParams(Protocol):
    def canonical_json(self) -> str: ...


def scenario_id(params: _CanonicalParams, seed: int) -> str:
    """Stable id of the scenario generated from ``(params, seed)`` (consumer or Streams parameters).

    Examples
    --------
    >>> scenario_id(ScenarioParams(), 1) == scenario_id(ScenarioParams(), 1)
    True
    >>> scenario_id(ScenarioParams(), 1) == scenario_id(ScenarioParams(), 2)
    False
    """
    text = f"{params.canonical_json()}|{int(seed)}"
    return hashlib.sha1(text.encode()).hexdigest()[:16]


# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class NewMember:
    """A member joining the group (no claims)."""

    id: str
    topics: tuple[str, ...]
    instance_id: str | None = None
    rack: str | None = None


@dataclass(frozen=True)
class Event:
    """One concrete group change; :func:`apply_event` turns it into the next instance.

    Attributes
    ----------
    kind
        One of :data:`EVENT_KINDS`.
    remove
        Members that leave (``leave``, ``scale-in``, the old id of ``rolling-restart``).
    add
        Members that join, appended in this order.
    clear
        Members whose claims disappear (``crash``).
    subscriptions
        ``(member id, new topics)`` pairs.
    topics
        Topics added or replaced (``topic-added``, ``partition-expansion``,
        ``weight-drift``), in full.
    detail
        Human-readable description.
    """

    kind: str
    remove: tuple[str, ...] = ()
    add: tuple[NewMember, ...] = ()
    clear: tuple[str, ...] = ()
    subscriptions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    topics: tuple[Topic, ...] = field(default=(), compare=False)
    detail: str = ""

    def topic_facts(self) -> tuple[tuple[Any, ...], ...]:
        """Comparable content of :attr:`topics` (numpy arrays as tuples)."""
        return tuple(
            (t.name, t.partitions,
             None if t.weights is None else tuple(t.weights.tolist()),
             t.racks)
            for t in self.topics
        )


def _owned_from(assignment: Assignment | None, member: Member) -> dict[str, np.ndarray]:
    if assignment is None:
        return {}
    held = assignment.members.get(member.id, {})
    return {t: held[t] for t in member.topics if t in held and held[t].size}


def _owned_map(owned: Mapping[str, np.ndarray]) -> OwnedMap:
    """Flat claim storage (the model's :class:`~solver.model.OwnedMap`) from sorted arrays."""
    if not owned:
        return EMPTY_OWNED
    topics = tuple(owned)
    sizes = [owned[t].size for t in topics]
    offsets = np.zeros(len(topics) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    flat = np.concatenate([owned[t] for t in topics]).astype(np.int64)
    flat.setflags(write=False)
    offsets.setflags(write=False)
    return OwnedMap(topics, flat, offsets)


def apply_event(
    instance: Instance, event: Event, assignment: Assignment | None, generation: int | None = None
) -> Instance:
    """The group state after ``event``, with claims from ``assignment``.

    Parameters
    ----------
    instance
        The group state the assignment was computed for.
    event
        The change to apply.
    assignment
        The (settled) output of the assignor on ``instance``; ``None`` for no
        claims.  Surviving members claim what it gave them.
    generation
        Generation of those claims (the step number in a scenario); by
        default the highest generation in ``instance`` (at least 0) plus one.

    Returns
    -------
    Instance
        The next instance.  Claims on topics a member no longer subscribes to,
        and on partitions that no longer exist, are dropped.
    """
    gen = generation if generation is not None else max([m.generation for m in instance.members] + [0]) + 1
    topics = dict(instance.topics)
    for t in event.topics:
        topics[t.name] = t
    removed = set(event.remove)
    cleared = set(event.clear)
    subs = dict(event.subscriptions)
    members: list[Member] = []
    for m in instance.members:
        if m.id in removed:
            continue
        new_topics = subs.get(m.id, m.topics)
        if m.id in cleared:
            owned: dict[str, np.ndarray] = {}
        else:
            kept = replace(m, topics=new_topics)
            owned = _owned_from(assignment, kept)
            owned = {t: a[a < topics[t].partitions] for t, a in owned.items()}
            owned = {t: a for t, a in owned.items() if a.size}
        members.append(Member(m.id, tuple(new_topics), _owned_map(owned),
                              -1 if m.id in cleared else gen, m.instance_id, m.rack, m.capacity))
    for nm in event.add:
        members.append(Member(nm.id, nm.topics, EMPTY_OWNED, -1, nm.instance_id, nm.rack))
    return Instance(instance.name, "consumer", topics, tuple(members), instance.copartition)


def strip_claims(instance: Instance) -> Instance:
    """``instance`` without any owned partitions (generation -1 everywhere)."""
    members = tuple(Member(m.id, m.topics, EMPTY_OWNED, -1, m.instance_id, m.rack, m.capacity)
                    for m in instance.members)
    return Instance(instance.name, instance.protocol, instance.topics, members, instance.copartition)


# --------------------------------------------------------------------------- scenario


@dataclass(frozen=True)
class Scenario:
    """An initial group state and the events that follow it.

    Attributes
    ----------
    id
        :func:`scenario_id` of ``(params, seed)``.
    params, seed
        What generated it.
    initial
        The group before the first assignment (no claims).
    events
        One event per later step.
    """

    id: str
    params: ScenarioParams
    seed: int
    initial: Instance
    events: tuple[Event, ...]

    def states(self) -> list[Instance]:
        """The group state at every step without claims (step 0 is ``initial``)."""
        out = [self.initial]
        for step, ev in enumerate(self.events, 1):
            out.append(strip_claims(apply_event(out[-1], ev, None, step)))
        return out


def replica_racks(rng: Generator, racks: Sequence[str], replication: int, n: int) -> tuple[tuple[str, ...], ...]:
    """Replica racks of ``n`` partitions: ``min(replication, len(racks))`` distinct random racks each, sorted."""
    k = min(replication, len(racks))
    picks = [rng.choice(len(racks), size=k, replace=False) for _ in range(n)]
    return tuple(tuple(racks[i] for i in sorted(pick.tolist())) for pick in picks)


def random_rack(rng: Generator, racks: Sequence[str]) -> str | None:
    """A uniformly drawn rack of a joining member or client (``None``, and no draw, without racks)."""
    return racks[int(rng.integers(len(racks)))] if racks else None


class _Builder:
    """Mutable generator state; every random draw goes through ``self.rng``."""

    def __init__(self, params: ScenarioParams, seed: int) -> None:
        self.p = params
        self.rng = Generator(PCG64(seed))
        self.client_counter = 0
        self.topic_counter = 0
        self.rack_names = tuple(f"r{i}" for i in range(params.racks))
        self.two_groups_marker: str | None = None
        self.groups: list[tuple[str, ...]] = []

    # ---- topics

    def _weights(self, n: int) -> np.ndarray | None:
        p = self.p
        if p.weights == "uniform":
            return None
        if p.weights == "zipf":
            w = self.rng.zipf(p.zipf_a, size=n).astype(np.float64)
            return np.minimum(w, 1000.0)
        if p.weights == "lognormal":
            return np.maximum(np.round(self.rng.lognormal(0.0, p.lognormal_sigma, size=n), 3), 0.001)
        return np.ones(n, dtype=np.float64)  # "hot": hot partitions are placed over all topics afterwards

    def _racks(self, n: int) -> tuple[tuple[str, ...], ...] | None:
        if not self.rack_names:
            return None
        return replica_racks(self.rng, self.rack_names, self.p.replication, n)

    def new_topic(self, partitions: int | None = None) -> Topic:
        name = f"t{self.topic_counter:02d}"
        self.topic_counter += 1
        n = partitions if partitions is not None else self.partition_count()
        w = self._weights(n)
        # Kafka topic ids are random UUIDs; KIP-848 assignors order topics by them
        tid = str(uuid.UUID(bytes=self.rng.bytes(16), version=4))
        return Topic(name, n, tid, None if w is None else frozen_array(w, np.float64), None, self._racks(n))

    def partition_count(self) -> int:
        return int(self.rng.integers(self.p.partitions_min, self.p.partitions_max + 1))

    def extend_topic(self, t: Topic, new_n: int) -> Topic:
        extra = new_n - t.partitions
        w = None
        if t.weights is not None:
            add = self._weights(extra)
            w = frozen_array(np.concatenate([t.weights, add if add is not None else np.ones(extra)]), np.float64)
        racks = None
        if t.racks is not None:
            more = self._racks(extra) or ()
            racks = t.racks + more
        return Topic(t.name, new_n, t.id, w, t.move_costs, racks)

    def place_hot(self, topics: dict[str, Topic]) -> None:
        total = sum(t.partitions for t in topics.values())
        k = min(self.p.hot_partitions, total)
        if k == 0:
            return
        flat = self.rng.choice(total, size=k, replace=False)
        offsets = np.cumsum([0] + [t.partitions for t in topics.values()])
        for name, lo, hi in zip(topics, offsets[:-1], offsets[1:], strict=True):
            t = topics[name]
            hits = flat[(flat >= lo) & (flat < hi)] - lo
            if hits.size:
                w = t.weight_array().copy()
                w[hits] = self.p.hot_factor
                topics[name] = Topic(t.name, t.partitions, t.id, frozen_array(w, np.float64), t.move_costs, t.racks)

    # ---- members

    def _hex(self) -> str:
        return f"{int(self.rng.integers(0, 2**32)):08x}"

    def new_member(self, topics: tuple[str, ...]) -> NewMember:
        client = f"c{self.client_counter}"
        self.client_counter += 1
        static = self.p.static > 0 and bool(self.rng.random() < self.p.static)
        rack = random_rack(self.rng, self.rack_names)
        return NewMember(f"{client}-{self._hex()}", topics, f"i-{client}" if static else None, rack)

    def restarted(self, m: Member) -> NewMember:
        client = m.id.rsplit("-", 1)[0]
        return NewMember(f"{client}-{self._hex()}", m.topics, m.instance_id, m.rack)

    def _close_groups(self, chosen: set[str]) -> set[str]:
        for g in self.groups:
            if chosen & set(g):
                chosen |= set(g)
        return chosen

    def subscription(self, topic_names: Sequence[str], new_version: bool | None = None) -> tuple[str, ...]:
        """A subscription for a member (sorted topic names, never empty when topics exist)."""
        p = self.p
        names = list(topic_names)
        if not names:
            return ()
        if p.subscription == "identical":
            chosen = set(names)
        elif p.subscription == "two-groups":
            chosen = set(names)
            if not new_version and self.two_groups_marker in chosen:
                chosen.discard(self.two_groups_marker)
        elif p.subscription == "random":
            mask = self.rng.random(len(names)) < p.density
            if not mask.any():
                mask[int(self.rng.integers(len(names)))] = True
            chosen = {n for n, keep in zip(names, mask.tolist(), strict=True) if keep}
        else:  # skewed: nested prefixes, length ~ 1 + geometric, capped
            k = min(len(names), int(self.rng.geometric(0.5)))
            chosen = set(names[:k])
        return tuple(sorted(self._close_groups(chosen)))

    def draw_subscribers(self, members: Sequence[Member], topic: str) -> dict[str, tuple[str, ...]]:
        """New subscriptions after ``topic`` is added (member id -> topics)."""
        if self.p.subscription in ("identical", "two-groups"):
            pick = np.ones(len(members), dtype=bool)
        else:
            pick = self.rng.random(len(members)) < self.p.density
            if members and not pick.any():
                pick[int(self.rng.integers(len(members)))] = True
        return {m.id: tuple(sorted((*m.topics, topic))) for m, k in zip(members, pick.tolist(), strict=True) if k}


def _initial(b: _Builder) -> Instance:
    p = b.p
    topics: dict[str, Topic] = {}
    for _ in range(p.topics):
        t = b.new_topic()
        topics[t.name] = t
    names = list(topics)
    for g in range(p.copartition):
        a, c = names[2 * g], names[2 * g + 1]
        n = max(topics[a].partitions, topics[c].partitions)
        # co-partitioned topics have one partition count (Kafka Streams requires it)
        topics[a] = b.extend_topic(topics[a], n) if topics[a].partitions < n else topics[a]
        topics[c] = b.extend_topic(topics[c], n) if topics[c].partitions < n else topics[c]
        b.groups.append((a, c))
    if p.weights == "hot":
        b.place_hot(topics)
    if p.subscription == "two-groups":
        b.two_groups_marker = names[-1]
    new_share = float(b.rng.random()) if p.subscription == "two-groups" else 0.0
    members = []
    for _ in range(p.members):
        is_new = bool(b.rng.random() < new_share)
        nm = b.new_member(b.subscription(names, new_version=is_new))
        members.append(Member(nm.id, nm.topics, EMPTY_OWNED, -1, nm.instance_id, nm.rack))
    return Instance("", "consumer", topics, tuple(members), tuple(b.groups))


def membership_applicable(kind: str, n: int, cap: int, floor: int, scale_k: int) -> bool | None:
    """Whether a membership event fits a group of ``n`` within ``[floor, cap]`` (``None``: not such an event).

    The rule of both generators (members here, clients for Streams).
    """
    if kind == "join":
        return n + 1 <= cap
    if kind == "scale-out":
        return n + scale_k <= cap
    if kind == "leave":
        return n - 1 >= floor
    if kind == "scale-in":
        return n - scale_k >= floor
    if kind in ("crash", "rolling-restart"):
        return n >= 1
    return None


def draw_leavers(rng: Generator, ids: Sequence[str], kind: str, scale_k: int) -> tuple[str, ...]:
    """Who leaves at a ``leave`` (one) or ``scale-in`` (``scale_k``) event, in list order."""
    k = 1 if kind == "leave" else scale_k
    idx = sorted(rng.choice(len(ids), size=k, replace=False).tolist())
    return tuple(ids[i] for i in idx)


def draw_events(rng: Generator, steps: int, kinds: Sequence[str], state: S, *,
                applicable: Callable[[S, str], bool], draw: Callable[[S, str], E],
                restart: Callable[[S, str, int, int], E], advance: Callable[[S, E], S],
                ids: Callable[[S], list[str]]) -> list[E]:
    """The events of a scenario from its first ``state``: ``steps`` of them, fewer when none applies.

    Each step draws uniformly one of ``kinds`` that is ``applicable``, and ``draw`` makes it
    concrete; ``rolling-restart`` instead opens a block of consecutive steps, one
    ``restart(state, id, done, total)`` per member (client) of ``ids(state)`` in list order.
    ``advance`` gives the state the next step sees.  Shared by both generators.
    """
    events: list[E] = []
    pending: list[str] = []
    while len(events) < steps:
        if pending:
            who = pending.pop(0)
            total = len(ids(state))
            ev = restart(state, who, total - len(pending), total)
        else:
            options = [k for k in kinds if applicable(state, k)]
            if not options:
                break
            kind = options[int(rng.integers(len(options)))]
            if kind == "rolling-restart":
                pending = ids(state)
                continue
            ev = draw(state, kind)
        events.append(ev)
        state = advance(state, ev)
    return events


def check_seed(seed: Any) -> int:
    """``seed`` as an ``int``; a ``ValueError`` unless it is a non-negative integer."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def _applicable(b: _Builder, inst: Instance, kind: str) -> bool:
    n = len(inst.members)
    fits = membership_applicable(kind, n, b.p.member_cap, b.p.member_floor, b.p.scale_k)
    if fits is not None:
        return fits
    if kind == "subscription-change":
        return n >= 1 and len(inst.topics) >= 2
    if kind == "weight-drift":
        return b.p.weights != "uniform"
    if b.p.max_partitions is None:
        return True
    room = b.p.max_partitions - inst.total_partitions
    if kind == "topic-added":
        return room >= b.p.partitions_max
    return room >= 2  # partition-expansion: the smallest growth of a co-partition group


def _draw_event(b: _Builder, inst: Instance, kind: str) -> Event:
    rng = b.rng
    members = inst.members
    names = list(inst.topics)
    if kind == "join":
        nm = b.new_member(b.subscription(names, new_version=True))
        return Event(kind, add=(nm,), detail=f"join {nm.id}")
    if kind == "scale-out":
        add = tuple(b.new_member(b.subscription(names, new_version=True)) for _ in range(b.p.scale_k))
        return Event(kind, add=add, detail=f"scale out by {len(add)}")
    if kind in ("leave", "scale-in"):
        gone = draw_leavers(rng, [m.id for m in members], kind, b.p.scale_k)
        return Event(kind, remove=gone, detail=f"{kind} {', '.join(gone)}")
    if kind == "crash":
        m = members[int(rng.integers(len(members)))]
        return Event(kind, clear=(m.id,), detail=f"crash {m.id} (claims lost)")
    if kind == "subscription-change":
        return _subscription_change(b, inst)
    if kind == "topic-added":
        t = b.new_topic()
        subs = b.draw_subscribers(members, t.name)
        return Event(kind, topics=(t,), subscriptions=tuple(subs.items()),
                     detail=f"topic {t.name} ({t.partitions} partitions) added, {len(subs)} subscriber(s)")
    if kind == "partition-expansion":
        name = names[int(rng.integers(len(names)))]
        group = next((g for g in b.groups if name in g), (name,))
        old = inst.topics[name].partitions
        grow = old  # up to doubling
        if b.p.max_partitions is not None:  # applicable only with room >= 2, and groups are pairs
            grow = max(1, min(old, (b.p.max_partitions - inst.total_partitions) // len(group)))
        new_n = old + int(rng.integers(1, grow + 1))
        topics = tuple(b.extend_topic(inst.topics[t], new_n) for t in group)
        return Event(kind, topics=topics, detail=f"{'+'.join(group)}: {old} -> {new_n} partitions")
    if kind == "weight-drift":
        out = []
        for t in inst.topics.values():
            w = t.weight_array() * rng.lognormal(0.0, b.p.drift, size=t.partitions)
            w = np.maximum(np.round(w, 3), 0.001)
            out.append(Topic(t.name, t.partitions, t.id, frozen_array(w, np.float64), t.move_costs, t.racks))
        return Event(kind, topics=tuple(out), detail=f"weights drift (sigma {b.p.drift})")
    raise ValueError(f"unknown event kind {kind!r}")


def _subscription_change(b: _Builder, inst: Instance) -> Event:
    rng = b.rng
    members = inst.members
    names = list(inst.topics)
    if b.p.subscription == "two-groups":
        marker = b.two_groups_marker
        old = [m for m in members if marker not in m.topics]
        m = old[0] if old else members[int(rng.integers(len(members)))]
        topics = set(m.topics)
        if old:
            topics.add(marker)  # type: ignore[arg-type]
            what = "moves to the new version"
        else:
            topics.discard(marker)  # type: ignore[arg-type]
            what = "rolls back to the old version"
        new = tuple(sorted(topics))
        return Event("subscription-change", subscriptions=((m.id, new),), detail=f"{m.id} {what}")
    m = members[int(rng.integers(len(members)))]
    if b.p.subscription == "identical":
        # toggle one topic (with its co-partition group) in this member's subscription
        t = names[int(rng.integers(len(names)))]
        unit = b._close_groups({t})
        topics = set(m.topics)
        topics = topics - unit if unit <= topics and len(topics - unit) > 0 else topics | unit
        new = tuple(sorted(topics))
    else:
        new = b.subscription(names)
        if new == m.topics:  # redraw once; an unchanged subscription is allowed but uninformative
            new = b.subscription(names)
    return Event("subscription-change", subscriptions=((m.id, new),),
                 detail=f"{m.id}: {','.join(m.topics)} -> {','.join(new)}")


def generate(params: ScenarioParams, seed: int) -> Scenario:
    """Generate the scenario of ``(params, seed)``; the same inputs give the same scenario.

    Parameters
    ----------
    params
        Generator parameters.
    seed
        Seed of ``numpy.random.Generator(PCG64(seed))``; no global state is used.

    Returns
    -------
    Scenario

    Examples
    --------
    >>> s = generate(ScenarioParams(members=3, topics=2, steps=4), seed=7)
    >>> len(s.initial.members), len(s.events)
    (3, 4)
    >>> generate(ScenarioParams(members=3, topics=2, steps=4), seed=7).events == s.events
    True
    """
    seed = check_seed(seed)
    b = _Builder(params, seed)
    initial = _initial(b)
    sid = scenario_id(params, seed)
    initial = Instance(f"scenario-{sid}", "consumer", initial.topics, initial.members, initial.copartition)

    def restart(state: Instance, mid: str, done: int, total: int) -> Event:
        nm = b.restarted(state.member(mid))
        return Event("rolling-restart", remove=(mid,), add=(nm,), detail=f"restart {done}/{total}: {mid} -> {nm.id}")

    events = draw_events(b.rng, params.steps, params.events, initial,
                         applicable=lambda st, k: _applicable(b, st, k), draw=lambda st, k: _draw_event(b, st, k),
                         restart=restart, advance=lambda st, ev: strip_claims(apply_event(st, ev, None)),
                         ids=lambda st: [m.id for m in st.members])
    return Scenario(sid, params, seed, initial, tuple(events))
