"""Kafka's ``AbstractStickyAssignor`` (commit 1eb7644349cb): one entry point for both sticky assignors.

``run_sticky`` prepares the instance in Kafka's order, walks the previous
claims, picks the constrained path when every member has the same
subscription and the general path otherwise, and returns the owner of every
topic-partition together with the partitions that change owner this round
(what the cooperative assignor withholds).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

from heuristics.sticky.claims import resolve_claims
from heuristics.sticky.constrained import constrained_assign
from heuristics.sticky.general import GeneralBuilder
from heuristics.sticky.input import StickyInput, prepare
from heuristics.sticky.racks import rack_info
from solver.model import Assignment, Instance, OwnedMap


@dataclass(frozen=True, eq=False)
class StickyOutcome:
    """What one sticky assignment produced.

    Attributes
    ----------
    si
        The prepared input (topic and member order).
    owner
        Member index owning each global partition id (``-1``: unassigned).
    transferring
        Partitions that change owner this round: Kafka's
        ``partitionsTransferringOwnership`` on the constrained path, the
        cooperative assignor's own computation on the general path.
    constrained
        Whether the constrained (equal subscriptions) path ran.
    """

    si: StickyInput
    owner: np.ndarray
    transferring: np.ndarray
    constrained: bool

    def assignment(self, withhold: bool = False) -> Assignment:
        """The assignment, with transferring partitions left out when ``withhold``."""
        owner = self.owner
        if withhold and self.transferring.any():
            owner = owner.copy()
            owner[self.transferring] = -1
        return owners_to_assignment(self.si, owner)


def owners_to_assignment(si: StickyInput, owner: np.ndarray) -> Assignment:
    """Build the :class:`Assignment` from per-partition owners, one flat array per member.

    Every member maps to an :class:`~solver.model.OwnedMap` (sorted read-only
    views of one array), so a million partitions cost a few thousand arrays.
    """
    gids = np.flatnonzero(owner >= 0)
    by_member = gids[np.argsort(owner[gids], kind="stable")]  # member, then topic, then partition
    parts = si.part_of[by_member]
    topics = si.topic_of[by_member]
    parts.setflags(write=False)
    names_of = np.array(si.topics, dtype=object)
    counts = np.bincount(owner[gids], minlength=si.n_members)
    ends = np.cumsum(counts)
    members = {}
    for m, mid in enumerate(si.member_ids):
        a, b = int(ends[m] - counts[m]), int(ends[m])
        if a == b:
            members[mid] = _EMPTY
            continue
        seg_topics = topics[a:b]
        cuts = np.flatnonzero(seg_topics[1:] != seg_topics[:-1]) + 1
        starts = np.concatenate(([0], cuts))
        bounds = np.concatenate((starts, [b - a])).astype(np.int64)
        bounds.setflags(write=False)
        names = tuple(names_of[seg_topics[starts]].tolist())
        members[mid] = OwnedMap(names, parts[a:b], bounds)
    return Assignment(MappingProxyType(members))


_EMPTY = OwnedMap.from_lists({})


def _changing_owner(si: StickyInput, owner: np.ndarray) -> np.ndarray:
    """``CooperativeStickyAssignor.computePartitionsTransferringOwnership``.

    A partition transfers when its new owner did not claim it and some member
    that claimed it (any generation) does not get it.
    """
    n = si.n_partitions
    revoked = np.zeros(n, dtype=bool)
    owner_claimed = np.zeros(n, dtype=bool)
    for i, c in enumerate(si.claims):
        if not c.size:
            continue
        mine = owner[c] == i
        owner_claimed[c[mine]] = True
        revoked[c[~mine]] = True
    return (owner >= 0) & ~owner_claimed & revoked


def run_sticky(instance: Instance, *, map_order: str = "hashmap") -> StickyOutcome:
    """Run Kafka's sticky assignment on ``instance``.

    Parameters
    ----------
    instance
        Consumer-protocol instance; ``owned`` + ``generation`` are the
        previous assignment.  The eager ``StickyAssignor`` reads them from its
        user data, the ``CooperativeStickyAssignor`` from the subscription;
        a real client puts the same generation in both, so one rule serves
        both assignors (the earlier claimant of a contested partition is
        compared by that same generation).
    map_order
        Member iteration order, see :func:`heuristics.sticky.input.prepare`.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t1": 10}, "members": [
    ...     {"id": "C0", "topics": ["t1"], "owned": {"t1": [0, 1, 2, 3, 4]}, "generation": 1},
    ...     {"id": "C1", "topics": ["t1"], "owned": {"t1": [5, 6, 7, 8, 9]}, "generation": 1},
    ...     {"id": "C2", "topics": ["t1"]}]})
    >>> out = run_sticky(inst)
    >>> out.assignment().to_lists()
    {'C0': {'t1': [0, 1, 2, 3]}, 'C1': {'t1': [5, 6, 7]}, 'C2': {'t1': [4, 8, 9]}}
    >>> int(out.transferring.sum())
    3
    """
    si = prepare(instance, map_order=map_order)
    if si.n_members == 0:
        empty = np.full(si.n_partitions, -1, dtype=np.int64)
        return StickyOutcome(si, empty, np.zeros(si.n_partitions, dtype=bool), True)
    claims = resolve_claims(si, si.generation)
    racks = rack_info(instance, si)
    if claims.all_equal:
        owner, transferring = constrained_assign(si, claims, racks)
        return StickyOutcome(si, owner, transferring, True)
    owner = GeneralBuilder(si, claims, racks).build()
    return StickyOutcome(si, owner, _changing_owner(si, owner), False)
