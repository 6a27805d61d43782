"""Consumer scenario generation: :class:`Scenario`, the initial group and the drawn events (:func:`generate`)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.random import PCG64, Generator

from solver.model import EMPTY_OWNED, Instance, Member, Topic, frozen_array
from spark_runner.scenarios.checks import (
    check_seed,
)
from spark_runner.scenarios.consumer.events import Event, NewMember, apply_event, strip_claims
from spark_runner.scenarios.consumer.params import ScenarioParams, scenario_id
from spark_runner.scenarios.draws import (
    draw_events,
    draw_leavers,
    membership_applicable,
    random_rack,
    replica_racks,
)


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
