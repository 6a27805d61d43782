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
   :func:`solver.semantics.previous_owners` (KAFKA-12984).  The KIP's example
   code keeps whichever claim it meets first in ``HashMap`` order, which is an
   accident of hashing, not a rule.  The resolution is per *unit*, not per
   topic-partition as in :func:`solver.semantics.previous_owners`: one
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
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heuristics._java import java_string_key
from solver.model import Assignment, Instance
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
    >>> from solver.formats import parse_instance
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


def resolve_claims(
    instance: Instance, group: UnitGroup, drafters: Sequence[int]
) -> np.ndarray:
    """KIP-315 step 2: previous owner of every eligible unit of ``group``.

    Parameters
    ----------
    instance
        The group state; ``generation`` is each member's epoch.
    group
        The unit group.
    drafters
        Members subscribing to at least one topic of the group.

    Returns
    -------
    numpy.ndarray
        Length ``group.limit``: member index of the previous owner, ``-1`` for
        an unowned unit (no claim, or a tie at the highest epoch).
    """
    n = group.limit
    owner = np.full(n, -1, dtype=np.int64)
    best = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    tie = np.zeros(n, dtype=bool)
    topics = set(group.topics)
    for m in drafters:
        member = instance.members[m]
        claimed = [
            parts[(parts >= 0) & (parts < n)]
            for t, parts in member.owned.items()
            if t in topics and t in member.topics
        ]
        if not claimed:
            continue
        units = np.unique(np.concatenate(claimed))
        if units.size == 0:
            continue
        epoch = member.generation
        cur = best[units]
        win = units[epoch > cur]
        owner[win] = m
        best[win] = epoch
        tie[win] = False
        tie[units[epoch == cur]] = True
    owner[tie] = -1
    return owner


def draft(limit: int, order: Sequence[int], prev_owner: np.ndarray) -> dict[int, list[int]]:
    """KIP-315 steps 3-4: the draft of ``limit`` units among members ``order``.

    Parameters
    ----------
    limit
        Number of eligible units (``0 .. limit-1``).
    order
        Drafting members, base order (earlier drafts earlier inside its class).
    prev_owner
        Previous owner per unit (member index or ``-1``), from :func:`resolve_claims`.

    Returns
    -------
    dict
        Member -> units it drafted, in drafting order (only members that drafted).

    Examples
    --------
    The seed: A owned 0-2, B 3-5, C 6-7, D (owner of 8-9) has left.

    >>> prev = np.array([0, 0, 0, 1, 1, 1, 2, 2, -1, -1])
    >>> draft(10, [0, 1, 2], prev)
    {0: [0, 1, 2, 9], 1: [3, 4, 5], 2: [6, 7, 8]}
    """
    got: dict[int, list[int]] = {}
    if limit <= 0 or not order:
        return got
    pos = {m: k for k, m in enumerate(order)}
    remaining: dict[int, deque[int]] = {m: deque() for m in order}
    for u in range(limit):
        o = int(prev_owner[u])
        if o >= 0:
            remaining[o].append(u)  # ascending
    original = {m: len(q) for m, q in remaining.items()}
    unowned = deque(int(u) for u in np.flatnonzero(prev_owner < 0))
    # Steal candidates: most remaining, then longest original list, then draft order.
    # Lazy heap: an entry is current only if its remaining count still matches.
    heap = [(-len(q), -original[m], pos[m], m) for m, q in remaining.items() if q]
    heapq.heapify(heap)

    def steal() -> int:
        while True:
            neg_left, _, _, victim = heap[0]
            q = remaining[victim]
            if -neg_left == len(q):
                heapq.heappop(heap)
                unit = q.pop()  # the victim's highest unselected unit
                if q:
                    heapq.heappush(heap, (-len(q), -original[victim], pos[victim], victim))
                return unit
            heapq.heappop(heap)  # stale entry

    drafted = 0
    while drafted < limit:
        holders = [m for m in order if remaining[m]]
        rest = [m for m in order if not remaining[m]]
        for m in holders + rest:
            if drafted == limit:
                break
            q = remaining[m]
            if q:
                unit = q.popleft()
                if q:
                    heapq.heappush(heap, (-len(q), -original[m], pos[m], m))
            elif unowned:
                unit = unowned.popleft()
            else:
                unit = steal()
            got.setdefault(m, []).append(unit)
            drafted += 1
    return got


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
    subs = [set(m.topics) for m in members]
    id_key = [java_string_key(m.id) for m in members]
    load = [0] * len(members)
    owners = {t: np.full(tp.partitions, -1, dtype=np.int64) for t, tp in instance.topics.items()}
    for group in unit_groups(instance):
        drafters = [i for i in range(len(members)) if any(t in subs[i] for t in group.topics)]
        if not drafters or group.limit <= 0:
            continue
        order = sorted(drafters, key=lambda i: (load[i], id_key[i]))
        prev = resolve_claims(instance, group, drafters)
        for m, units in draft(group.limit, order, prev).items():
            idx = np.asarray(units, dtype=np.int64)
            mine = [t for t in group.topics if t in subs[m]]
            for t in mine:
                owners[t][idx] = m
            load[m] += idx.size * len(mine)
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
    >>> from solver.formats import parse_instance
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
