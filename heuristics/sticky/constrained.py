"""Kafka's constrained sticky path (every member has the same subscription).

``AbstractStickyAssignor.ConstrainedAssignmentBuilder`` as improved in
KAFKA-12464, with owned partitions taken in partition-major order
(KAFKA-16277) and KIP-881 racks:

1. Members in subscription-map order keep owned partitions (partition-major,
   rack-matching ones only when rack-aware): all of them if fewer than
   ``minQuota``; ``maxQuota`` while fewer than ``P % N`` members are above
   ``minQuota``; otherwise ``minQuota`` (and such a member may still get one
   more later).  Owned partitions beyond that are revoked.
2. Unassigned partitions (topic then partition order, stably re-sorted by
   the number of members sharing a rack with their replicas once any member
   has a rack) go, when rack-aware, round robin to rack-matching members
   below ``minQuota`` and then to rack-matching members at ``minQuota``.
3. The rest round robin to members below ``minQuota`` (sorted by member id),
   then one each to members at ``minQuota`` in queue order.

A partition newly given to a member that was revoked from another member (or
was claimed by two members of one generation) is *transferring ownership*;
the cooperative assignor withholds it for a round.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heuristics.sticky.claims import Claims
from heuristics.sticky.input import StickyInput
from heuristics.sticky.racks import RackInfo


class KafkaStateError(RuntimeError):
    """Kafka's assignor would throw ``IllegalStateException`` here."""


def constrained_assign(si: StickyInput, claims: Claims, racks: RackInfo) -> tuple[np.ndarray, np.ndarray]:
    """Run the constrained path.

    Returns
    -------
    owner, transferring
        ``owner[g]``: member index owning global partition ``g``;
        ``transferring[g]``: ``g`` changes owner this round (cooperative).
    """
    n_parts = si.n_partitions
    n_members = si.n_members
    min_q = n_parts // n_members
    max_q = -(-n_parts // n_members)
    expected_over = n_parts % n_members
    over = 0
    owner = np.full(n_parts, -1, dtype=np.int64)
    count = [0] * n_members
    # maybeRevokedPartitions: owned partitions not kept, with the member that owned them
    revoked_from = np.full(n_parts, -1, dtype=np.int64)
    multi = claims.multi
    any_multi = bool(multi.any())
    n_topics = len(si.topics)
    under: list[int] = []
    exact: list[int] = []

    for i in si.order:
        own = claims.owned[i]
        if own.size:
            if racks.aware:
                off_rack = racks.mismatch_mask(i, own)
                revoked_from[own[off_rack]] = i
                own = own[~off_rack]
            # KAFKA-16277: partition-major order, so kept partitions spread over topics
            own = own[np.argsort(si.part_of[own] * n_topics + si.topic_of[own], kind="stable")]
            if any_multi:
                own = own[~multi[own]]
        k = own.size
        if k < min_q:
            keep = own
            under.append(i)
        elif k >= max_q and over < expected_over:
            over += 1
            if over == expected_over:
                exact.clear()
            keep = own[:max_q]
            revoked_from[own[max_q:]] = i
        else:
            keep = own[:min_q]
            revoked_from[own[min_q:]] = i
            if over < expected_over:
                exact.append(i)
        owner[keep] = i
        count[i] = int(keep.size)

    unassigned = np.flatnonzero(owner < 0)
    under.sort(key=lambda m: si.rank[m])
    exact.sort(key=lambda m: si.rank[m])
    if racks.consumers_per_partition is not None:
        unassigned = unassigned[np.argsort(racks.consumers_per_partition[unassigned], kind="stable")]

    if racks.aware:
        quota = _Quota(min_q, max_q, expected_over, over)
        unassigned = _rack_round_robin(unassigned, under, exact, owner, count, racks, quota)
    _round_robin(unassigned, under, exact, owner, count, min_q)

    # kept partitions are neither in maybeRevokedPartitions nor doubly claimed, so this marks
    # exactly the newly handed out partitions Kafka records as transferring ownership
    transferring = (owner >= 0) & (((revoked_from >= 0) & (revoked_from != owner)) | multi)
    return owner, transferring


def _next_rack_member(g: int, members: list[int], first: int, racks: RackInfo) -> int:
    """``RackInfo.nextRackConsumer``: circular search from ``first`` for a member on a replica rack."""
    assert racks.masks is not None
    if int(racks.masks[g]) == 0:
        return -1
    n = len(members)
    for k in range(n):
        idx = (first + k) % n
        if racks.holds(members[idx], g):
            return idx
    return -1


@dataclass
class _Quota:
    min_q: int
    max_q: int
    expected_over: int
    over: int  # members above minQuota so far


def _rack_round_robin(
    unassigned: np.ndarray,
    under: list[int],
    exact: list[int],
    owner: np.ndarray,
    count: list[int],
    racks: RackInfo,
    quota: _Quota,
) -> np.ndarray:
    """``assignRackAwareRoundRobin``; returns the partitions still unassigned."""
    min_q, max_q = quota.min_q, quota.max_q
    nxt = 0
    taken = np.zeros(unassigned.size, dtype=bool)
    for pos, g in enumerate(unassigned.tolist()):
        member = -1
        idx = _next_rack_member(g, under, nxt, racks)
        if idx >= 0:
            member = under[idx]
            if count[member] + 1 >= min_q:
                under.remove(member)
                if count[member] + 1 < max_q and quota.over < quota.expected_over:
                    exact.append(member)
            else:
                idx += 1
            nxt = idx % len(under) if under else 0
        elif exact:
            idx = _next_rack_member(g, exact, 0, racks)
            if idx >= 0:
                member = exact[idx]
                if count[member] + 1 == max_q:
                    del exact[idx]
                    quota.over += 1
                    if quota.over == quota.expected_over:
                        exact.clear()
        if member >= 0:
            owner[g] = member
            count[member] += 1
            taken[pos] = True
    return unassigned[~taken]


def _round_robin(
    unassigned: np.ndarray,
    under: list[int],
    exact: list[int],
    owner: np.ndarray,
    count: list[int],
    min_q: int,
) -> None:
    """``assignRoundRobin`` without a per-partition loop.

    Members below ``minQuota`` are cycled in order, each leaving the cycle when
    it reaches ``minQuota`` (and joining the queue of members at
    ``minQuota``); once none is left, the queue hands out one partition each.
    The receiving sequence is therefore: for cycle ``k = 1, 2, ...`` every
    member still short by at least ``k``, in order.
    """
    if unassigned.size == 0:
        return
    members = np.asarray(under, dtype=np.int64)
    need = np.asarray([min_q - count[m] for m in under], dtype=np.int64)
    total = int(need.sum()) if need.size else 0
    if total:
        slot_owner = np.repeat(np.arange(members.size), need)
        cycle = np.arange(total) - np.repeat(np.cumsum(need) - need, need)
        seq = members[slot_owner[np.lexsort((slot_owner, cycle))]]
    else:
        seq = np.zeros(0, dtype=np.int64)
    m = min(seq.size, unassigned.size)
    owner[unassigned[:m]] = seq[:m]
    if unassigned.size <= seq.size:
        return
    # members reach minQuota in the order of their last slot: by need, then position
    finished = members[np.lexsort((np.arange(members.size), need))] if members.size else members
    queue = np.concatenate([np.asarray(exact, dtype=np.int64), finished])
    left = unassigned[seq.size :]
    if left.size > queue.size:
        raise KafkaStateError("No more unfilled consumers to be assigned.")
    owner[left] = queue[: left.size]
