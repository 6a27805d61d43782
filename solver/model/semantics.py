"""The group semantics of docs/format.md ("Semantics"), in one place.

- previous owner of a partition (highest generation wins, a tie at the highest
  generation leaves no previous owner, claims on unsubscribed or missing
  partitions are dropped);
- eligibility (members subscribing to a topic);
- co-partition units and not-joinable partitions (KIP-315).

Member references are indices into ``instance.members``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from solver.model import Instance, OwnedMap


def previous_owners(instance: Instance) -> dict[str, np.ndarray]:
    """Resolve the previous owner of every partition.

    Parameters
    ----------
    instance
        The group state; each member's ``owned`` is its claim at ``generation``.

    Returns
    -------
    dict
        Topic -> ``int64`` array of length ``partitions`` holding the member
        index of the previous owner, or ``-1`` when the partition has none.

    Notes
    -----
    A claim counts only when the member still subscribes to the topic and the
    partition exists.  Among the remaining claims the highest generation wins;
    two claims at the same highest generation leave the partition without a
    previous owner (Kafka's rule since KAFKA-12984).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 3}, "members": [
    ...     {"id": "a", "topics": ["T"], "owned": {"T": [0, 1]}, "generation": 2},
    ...     {"id": "b", "topics": ["T"], "owned": {"T": [1, 2]}, "generation": 2},
    ...     {"id": "c", "topics": ["T"], "owned": {"T": [2]}, "generation": 1}]})
    >>> previous_owners(inst)["T"].tolist()
    [0, -1, 1]
    """
    names = list(instance.topics)
    tix = {t: i for i, t in enumerate(names)}
    counts = np.array([instance.topics[t].partitions for t in names], dtype=np.int64)
    base = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(counts, out=base[1:])
    gids: list[np.ndarray] = []
    whos: list[np.ndarray] = []
    gens: list[np.ndarray] = []
    for idx, m in enumerate(instance.members):
        if not m.owned:
            continue
        topics, flat, offs = _flat_owned(m.owned)
        subs = set(m.topics)
        tid = np.fromiter((tix.get(t, -1) if t in subs else -1 for t in topics), dtype=np.int64, count=len(topics))
        per = np.repeat(tid, np.diff(offs))
        keep = per >= 0
        keep[keep] &= (flat[keep] >= 0) & (flat[keep] < counts[per[keep]])
        if not keep.any():
            continue
        g = base[per[keep]] + flat[keep]
        gids.append(g)
        whos.append(np.full(g.size, idx, dtype=np.int64))
        gens.append(np.full(g.size, m.generation, dtype=np.int64))
    out = np.full(int(base[-1]), -1, dtype=np.int64)
    if gids:
        gid = np.concatenate(gids)
        who = np.concatenate(whos)
        gen = np.concatenate(gens)
        order = np.lexsort((-gen, gid))  # by partition, then highest generation first
        gid, who, gen = gid[order], who[order], gen[order]
        first = np.ones(gid.size, dtype=bool)
        first[1:] = gid[1:] != gid[:-1]
        # A tie: the runner-up claim of the same partition has the same generation.
        tied = np.zeros(gid.size, dtype=bool)
        tied[:-1] = (gid[1:] == gid[:-1]) & (gen[1:] == gen[:-1])
        win = first & ~tied
        out[gid[win]] = who[win]
    return {t: out[base[i]: base[i + 1]] for i, t in enumerate(names)}


def _flat_owned(owned: Mapping[str, np.ndarray]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    if isinstance(owned, OwnedMap):
        return owned.flat()
    return OwnedMap.from_lists({t: np.asarray(v).tolist() for t, v in owned.items()}).flat()


def subscribers(instance: Instance) -> dict[str, tuple[int, ...]]:
    """Topic -> indices of the members subscribing to it (input order); every topic present.

    Members are grouped by subscription first: real groups have few distinct
    subscriptions, so the work grows with topics x subscriptions, not topics x members.
    """
    by_sub: dict[tuple[str, ...], list[int]] = {}
    for idx, m in enumerate(instance.members):
        by_sub.setdefault(m.topics, []).append(idx)
    parts: dict[str, list[list[int]]] = {name: [] for name in instance.topics}
    for topics, idxs in by_sub.items():
        for t in topics:
            if t in parts:
                parts[t].append(idxs)
    out: dict[str, tuple[int, ...]] = {}
    for t, lists in parts.items():
        if len(lists) == 1:
            out[t] = tuple(lists[0])
        else:
            out[t] = tuple(sorted(i for lst in lists for i in lst))
    return out


def joinable_limits(instance: Instance) -> dict[str, int]:
    """Topic -> number of partitions that can be assigned as co-partition units.

    For a topic in a co-partition group this is the smallest partition count
    of the group (partitions at or above it are *not joinable*); for any other
    topic it is the topic's own partition count.
    """
    limits = {name: t.partitions for name, t in instance.topics.items()}
    for group in instance.copartition:
        lo = min(instance.topics[t].partitions for t in group)
        for t in group:
            limits[t] = lo
    return limits


@dataclass(frozen=True)
class Unit:
    """A co-partition unit: partition ``partition`` of every topic of group ``group``."""

    group: int
    partition: int
    topics: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class GroupView:
    """Derived facts about one instance, computed once and shared.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"a": 3, "b": 2},
    ...     "copartition": [["a", "b"]], "members": [{"id": "m", "topics": ["a", "b"]}]})
    >>> view = GroupView(inst)
    >>> view.limits, view.not_joinable_count
    ({'a': 2, 'b': 2}, 1)
    """

    instance: Instance

    @cached_property
    def index(self) -> dict[str, int]:
        """Member id -> member index."""
        return {m.id: i for i, m in enumerate(self.instance.members)}

    @cached_property
    def subscribers(self) -> dict[str, tuple[int, ...]]:
        """See :func:`subscribers`."""
        return subscribers(self.instance)

    @cached_property
    def previous_owners(self) -> dict[str, np.ndarray]:
        """See :func:`previous_owners`."""
        return previous_owners(self.instance)

    @cached_property
    def limits(self) -> dict[str, int]:
        """See :func:`joinable_limits`."""
        return joinable_limits(self.instance)

    @cached_property
    def group_of(self) -> dict[str, int]:
        """Topic -> index of its co-partition group (only topics in a group)."""
        return {t: g for g, group in enumerate(self.instance.copartition) for t in group}

    @cached_property
    def not_joinable_count(self) -> int:
        """Topic-partitions at or above their group's smallest partition count."""
        return sum(self.instance.topics[t].partitions - self.limits[t] for t in self.group_of)

    def units(self) -> list[Unit]:
        """Every co-partition unit (group, partition) below the group's limit."""
        out: list[Unit] = []
        for g, group in enumerate(self.instance.copartition):
            lo = self.limits[group[0]]
            out.extend(Unit(g, p, tuple(group)) for p in range(lo))
        return out

    def unit_eligible(self, group: int) -> tuple[int, ...]:
        """Members subscribing to every topic of co-partition group ``group``."""
        topics = self.instance.copartition[group]
        sets = [set(self.subscribers[t]) for t in topics]
        common = set.intersection(*sets) if sets else set()
        return tuple(sorted(common))

    def must_assign(self, topic: str) -> np.ndarray:
        """Boolean mask of partitions of ``topic`` a valid assignment must assign."""
        n = self.instance.topics[topic].partitions
        mask = np.zeros(n, dtype=bool)
        if self.subscribers[topic]:
            mask[: self.limits[topic]] = True
        return mask
