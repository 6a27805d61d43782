"""Consumer group events: :class:`Event` and the pure :func:`apply_event` that turns one into the next instance."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from solver.model import EMPTY_OWNED, Assignment, Instance, Member, OwnedMap, Topic


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
