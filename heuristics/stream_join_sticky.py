"""``stream-join-sticky``: the KIP-315 sticky assignor for stream-stream joins.

KIP-315 (seed ``000_f5a1c20b2ec931bc.txt``) assigns *partition numbers*, not
topic-partitions: partition ``i`` of every joined topic goes to one member.
This module follows the KIP's "Assignment Strategy" step by step, applied to
each *unit group* of the instance:

- each co-partition group of ``instance.copartition`` (in the order given) is
  one join;
- every topic in no co-partition group is its own unit group (a join of one
  topic), taken after the co-partition groups, by name (Java string order).
  The KIP assumes that every subscribed topic is in the one join; the
  ``kassign/v1`` model names the joins explicitly, and a lone topic is the
  degenerate join where a unit is one topic-partition.

Per unit group (KIP step numbers):

1. **Eligible partitions**: ``0 .. L-1`` with ``L`` the smallest partition
   count of the group's topics.  Partitions at or above ``L`` are *not
   joinable* and stay unassigned (the scorer reports them as
   ``not_joinable``).
2. **Previous assignment**: a member claims unit ``p`` when its ``owned``
   holds partition ``p`` of a group topic it still subscribes to (the claim
   is on the partition number, as the KIP's user data stores a set of
   integers).  The member's ``generation`` is its KIP-315 epoch.  Of several
   claims on one unit the highest epoch wins ("it will pick which had true
   ownership by looking at the epoch number").  The KIP is silent on two
   claims at the same highest epoch; an epoch cannot tell which one is true,
   so the unit gets no previous owner - the project-wide rule of
   :func:`solver.model.semantics.previous_owners` (KAFKA-12984).  The KIP's example
   code keeps whichever claim it meets first in ``HashMap`` order, which is an
   accident of hashing, not a rule.  The resolution is per *unit*, not per
   topic-partition as in :func:`solver.model.semantics.previous_owners`: one
   epoch decides the whole unit, so the generic resolver is not reused.
3. **Unowned partitions**: eligible units nobody claims, ascending.
4. **Draft**: the members subscribing to at least one topic of the group
   select one unit each per round until every eligible unit is selected.  At
   the start of each round the members that still hold an unselected
   previously owned unit draft first ("prefer a consumer who has a
   previously owned partition to perform the selection, while still being
   fair"), then the others.  A member selects

   a. its own lowest previously owned unit nobody has selected yet, else
   b. the lowest unowned unit, else
   c. a unit *stolen* from the member with the most previously owned units
      still unselected (ties: the longer original list, then draft order) -
      "stealing will begin with the consumer that had the longest list of
      previously owned partitions" and is fair: nobody is robbed while
      another member keeps more.  The thief takes the victim's *highest*
      unselected unit, so the victim keeps a contiguous prefix of what it
      had (the KIP does not say which; any choice moves one unit).

   Draft order inside each class: fewest topic-partitions already assigned
   by earlier unit groups first, then member id (Java string order).  For a
   single join this is plain member-id order; across several unit groups it
   hands each group's extra units to the members that got fewest so far.
   The KIP's example code uses ``HashMap`` iteration order here, again an
   accident of hashing.
5. **Topic-partitions**: a member that drafted unit ``p`` receives partition
   ``p`` of every group topic *it* subscribes to.  When subscriptions differ
   inside a group, the topic-partitions of a unit whose drafter does not
   subscribe to them stay unassigned - the KIP's stated behaviour ("some
   TopicPartitions will go unassigned") that lets one member try a new
   join topic without receiving the whole topic.
6. **Epoch**: the new epoch is the largest ``generation`` of any member plus
   one (a member without one counts as 0, as in the KIP's example code, so
   the first assignment has epoch 1).  It is returned in ``Result.extra``
   as ``{"epoch": ...}``.

Guarantee (from the draft): inside one unit group every drafter ends with
``floor(L/n)`` or ``ceil(L/n)`` units.  When all members subscribe to all
topics of every group and ``owned`` is this assignor's previous output with
one epoch, the output equals the input.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heuristics._java import java_string_key
from solver.model import Assignment, Instance
from solver.model.semantics import subscribers
from solver.registry import register
from solver.result import Params, Result


@dataclass(frozen=True)
class UnitGroup:
    """Topics whose partition ``i`` forms one unit, and the number of eligible units."""

    topics: tuple[str, ...]
    limit: int


def unit_groups(instance: Instance) -> list[UnitGroup]:
    """The co-partition groups in input order, then every other topic alone, by name.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"z": 2, "a": 3, "b": 4, "c": 1},
    ...     "copartition": [["b", "a"]], "members": []})
    >>> [(g.topics, g.limit) for g in unit_groups(inst)]
    [(('b', 'a'), 3), (('c',), 1), (('z',), 2)]
    """
    groups = [UnitGroup(tuple(g), min(instance.topics[t].partitions for t in g)) for g in instance.copartition]
    grouped = {t for g in instance.copartition for t in g}
    lone = sorted((t for t in instance.topics if t not in grouped), key=java_string_key)
    groups.extend(UnitGroup((t,), instance.topics[t].partitions) for t in lone)
    return groups


def resolve_claims(limit: int, who: np.ndarray, units: np.ndarray, epochs: np.ndarray) -> np.ndarray:
    """KIP-315 step 2: previous owner of every eligible unit of one unit group.

    Parameters
    ----------
    limit
        Number of eligible units; claims at or above it are dropped.
    who, units
        One entry per claim: member ``who[k]`` owned partition ``units[k]``
        of a group topic it still subscribes to (repeats allowed).
    epochs
        Epoch (``generation``) of every member of the instance.

    Returns
    -------
    numpy.ndarray
        Length ``limit``: member index of the previous owner, ``-1`` for an
        unowned unit (no claim, or two members claiming it at the highest epoch).

    Examples
    --------
    >>> resolve_claims(4, np.array([0, 0, 1, 1, 1, 2]), np.array([0, 1, 1, 2, 7, 0]), np.array([3, 3, 1]))
    array([ 0, -1,  1, -1])
    """
    owner = np.full(max(limit, 0), -1, dtype=np.int64)
    if who.size == 0 or limit <= 0:
        return owner
    keep = (units >= 0) & (units < limit)
    pair = np.unique(who[keep] * limit + units[keep])  # one claim per (member, unit)
    who, units = pair // limit, pair % limit
    ep = epochs[who]
    best = np.full(limit, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(best, units, ep)
    top = ep == best[units]
    n_top = np.bincount(units[top], minlength=limit)
    sole = top & (n_top[units] == 1)
    owner[units[sole]] = who[sole]
    return owner


def draft(limit: int, order: Sequence[int], prev_owner: np.ndarray) -> np.ndarray:
    """KIP-315 steps 3-4: the draft of ``limit`` units among the members ``order``.

    Parameters
    ----------
    limit
        Number of eligible units (``0 .. limit-1``).
    order
        Drafting members (distinct, non-negative), base order: earlier drafts
        earlier inside its class.
    prev_owner
        Previous owner per unit (a member of ``order`` or ``-1``), from
        :func:`resolve_claims`.

    Returns
    -------
    numpy.ndarray
        Length ``limit``: the member that drafted each unit.

    Notes
    -----
    In a round every member that still holds an unselected previously owned
    unit drafts before every member that does not, so no steal can happen
    before all of them have drafted their own: a round is "holders take
    their lowest own unit, then the others take the lowest unowned units,
    then the rest steal".  Runs of rounds without steals in which the set of
    holders does not change are handed out in one vectorised step; the other
    rounds are simulated pick by pick.

    Examples
    --------
    The seed: A owned 0-2, B 3-5, C 6-7, D (owner of 8-9) has left.

    >>> draft(10, [0, 1, 2], np.array([0, 0, 0, 1, 1, 1, 2, 2, -1, -1])).tolist()
    [0, 0, 0, 1, 1, 1, 2, 2, 2, 0]
    """
    result = np.full(max(limit, 0), -1, dtype=np.int64)
    if limit <= 0 or len(order) == 0:
        return result
    base = np.asarray(order, dtype=np.int64)
    n = base.size
    pos = np.full(int(base.max()) + 1, n, dtype=np.int64)
    pos[base] = np.arange(n, dtype=np.int64)
    # previously owned units, grouped by member (draft position), ascending inside a member
    owned_units = np.flatnonzero(prev_owner >= 0)
    owned_by = pos[prev_owner[owned_units]]
    srt = np.argsort(owned_by, kind="stable")
    own = owned_units[srt]
    counts = np.bincount(owned_by, minlength=n)
    start = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    end = start + counts
    unowned = np.flatnonzero(prev_owner < 0)
    u_next = 0
    # steal candidates (members by draft position): most remaining, longest original list,
    # earliest in draft order; stored counts are upper bounds, refreshed when popped
    heap: list[tuple[int, int, int]] | None = None  # built at the first steal
    drafted = 0
    while drafted < limit:
        need = limit - drafted
        rem = end - start
        holders = np.flatnonzero(rem > 0)  # draft positions, ascending = base order
        others = np.flatnonzero(rem == 0)
        # how many whole rounds run with the same holders and without steals
        k = need // n
        if holders.size:
            k = min(k, int(rem[holders].min()))
        if others.size:
            k = min(k, (unowned.size - u_next) // others.size)
        if k >= 1:
            take = own[start[holders][:, None] + np.arange(k)]
            result[take] = base[holders][:, None]
            start[holders] += k
            block = unowned[u_next:u_next + k * others.size].reshape(k, others.size)
            result[block] = base[others][None, :]
            u_next += k * others.size
            drafted += k * n
            continue
        # one round, pick by pick
        for p in np.concatenate((holders, others)).tolist():
            if drafted == limit:
                break
            if start[p] < end[p]:
                unit = own[start[p]]
                start[p] += 1
            elif u_next < unowned.size:
                unit = unowned[u_next]
                u_next += 1
            else:
                if heap is None:
                    heap = [(-int(c), -int(c), k) for k, c in enumerate(counts.tolist()) if c]
                    heapq.heapify(heap)
                while True:
                    neg_left, neg_orig, victim = heap[0]
                    left = int(end[victim] - start[victim])
                    if left == -neg_left:
                        break
                    if left:
                        heapq.heapreplace(heap, (-left, neg_orig, victim))
                    else:
                        heapq.heappop(heap)
                end[victim] -= 1
                unit = own[end[victim]]  # the victim's highest unselected unit
                if left > 1:
                    heapq.heapreplace(heap, (-(left - 1), neg_orig, victim))
                else:
                    heapq.heappop(heap)
            result[unit] = base[p]
            drafted += 1
    return result


def next_epoch(instance: Instance) -> int:
    """KIP-315 step 6: the largest member epoch (``generation``, at least 0) plus one."""
    return max([0, *(m.generation for m in instance.members)]) + 1


def stream_join_owners(instance: Instance) -> dict[str, np.ndarray]:
    """The KIP-315 assignment as per-topic owner arrays (member index, ``-1`` = unassigned).

    Parameters
    ----------
    instance
        Consumer-protocol group state.

    Returns
    -------
    dict
        Topic -> ``int64`` owner array for every topic of the instance.
    """
    members = instance.members
    n_members = len(members)
    subs = subscribers(instance)
    is_sub: dict[str, np.ndarray] = {}
    for t, who in subs.items():
        mask = np.zeros(n_members, dtype=bool)
        mask[list(who)] = True
        is_sub[t] = mask
    rank = np.empty(n_members, dtype=np.int64)
    rank[sorted(range(n_members), key=lambda i: java_string_key(members[i].id))] = np.arange(n_members)
    epochs = np.array([m.generation for m in members], dtype=np.int64)
    groups = unit_groups(instance)
    group_of = {t: g for g, grp in enumerate(groups) for t in grp.topics}
    # KIP step 2 input: claims on group topics the member still subscribes to
    claim_who: list[list[int]] = [[] for _ in groups]
    claim_size: list[list[int]] = [[] for _ in groups]
    claim_parts: list[list[np.ndarray]] = [[] for _ in groups]
    for i, m in enumerate(members):
        mine = set(m.topics)
        for t, parts in m.owned.items():
            if t in mine and t in group_of:
                g = group_of[t]
                claim_who[g].append(i)
                claim_size[g].append(parts.size)
                claim_parts[g].append(parts)
    load = np.zeros(n_members, dtype=np.int64)
    owners = {t: np.full(tp.partitions, -1, dtype=np.int64) for t, tp in instance.topics.items()}
    for g, group in enumerate(groups):
        in_group = np.zeros(n_members, dtype=np.int64)  # group topics each member subscribes to
        for t in group.topics:
            in_group += is_sub[t]
        drafters = np.flatnonzero(in_group)
        if drafters.size == 0 or group.limit <= 0:
            continue
        order = drafters[np.lexsort((rank[drafters], load[drafters]))]
        if claim_who[g]:
            c_who = np.repeat(np.array(claim_who[g], dtype=np.int64), np.array(claim_size[g], dtype=np.int64))
            c_units = np.concatenate(claim_parts[g]).astype(np.int64, copy=False)
        else:
            c_who = c_units = np.zeros(0, dtype=np.int64)
        prev = resolve_claims(group.limit, c_who, c_units, epochs)
        unit_owner = draft(group.limit, order.tolist(), prev)
        for t in group.topics:
            owners[t][: group.limit] = np.where(is_sub[t][unit_owner], unit_owner, -1)
        load += np.bincount(unit_owner, minlength=n_members) * in_group
    return owners


@register(
    "stream-join-sticky",
    summary="KIP-315 stream-join sticky assignor: co-partitioned draft, sticky to the highest-epoch owner",
    source="KIP-315 (Stream Join Sticky Assignor; never merged)",
)
def stream_join_sticky(instance: Instance, params: Params) -> Result:
    """Assign with the KIP-315 stream-join sticky assignor.

    Parameters
    ----------
    instance
        Consumer-protocol group state; ``owned`` and ``generation`` (the
        KIP-315 epoch) give the previous assignment.
    params
        Unused (the assignor has no options).

    Returns
    -------
    Result
        The assignment (every member appears; not-joinable partitions are
        unassigned) and ``extra = {"epoch": next epoch}``.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"a": 3, "b": 4},
    ...     "copartition": [["a", "b"]], "members": [
    ...     {"id": "x", "topics": ["a", "b"], "owned": {"a": [0, 1, 2]}, "generation": 4},
    ...     {"id": "y", "topics": ["a", "b"]}]})
    >>> res = stream_join_sticky(inst, Params())
    >>> res.assignment.to_lists(), dict(res.extra)
    ({'x': {'a': [0, 1], 'b': [0, 1]}, 'y': {'a': [2], 'b': [2]}}, {'epoch': 5})
    """
    owners = stream_join_owners(instance)
    return Result(
        assignment=Assignment.from_owners(instance.member_ids, owners),
        extra={"epoch": next_epoch(instance)},
    )
