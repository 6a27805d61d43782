"""``fair``: the KIP-49 fair partition assignor for non-identical subscriptions.

KIP-49 (seed ``002_724afa56a4c6102f.txt``, KAFKA-3297) was never merged into
Apache Kafka.  Its author's implementation (``FairAssignor``, proposed for
the old Scala consumer and the Java client) fixes the rules the KIP text only
sketches; this module implements those rules:

1. **Topic order.**  Every topic some member subscribes to, sorted by
   (number of subscribers ascending, partition count *descending*, topic
   name ascending in Java ``String.compareTo`` order).  The KIP's two rules
   ("topics with fewest consumers are assigned first", "in the event of a tie
   ... the topic with more partitions is assigned first") plus the name as
   the final tie-break that makes the result deterministic.
2. **Partition order.**  Within a topic, partitions ascending.
3. **Member choice.**  Each partition goes to the subscriber of its topic with
   the fewest partitions assigned *so far in this run* (the running total over
   all topics), ties to the smallest member id (Java string order).

Nothing else: no stickiness (``owned`` is ignored), partition weights and
member capacities are ignored (the KIP balances partition *counts*), and the
input order of members does not matter.

Step 3 is a "water-filling" of each topic's partitions into its
subscribers' current counts, so a topic is assigned in one vectorised step
(:func:`_fill`) instead of one heap operation per partition.
"""

from __future__ import annotations

import numpy as np

from heuristics._java import java_string_key
from solver.model import Assignment, Instance
from solver.model.semantics import subscribers
from solver.registry import register
from solver.result import Params, Result


def topic_order(instance: Instance, subs: dict[str, tuple[int, ...]] | None = None) -> list[str]:
    """Topics in the order KIP-49 assigns them.

    Parameters
    ----------
    instance
        The group state.
    subs
        Topic -> subscriber indices (computed when omitted).

    Returns
    -------
    list of str
        Topics with at least one subscriber, by (subscriber count ascending,
        partition count descending, name in Java string order).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"a": 1, "b": 3, "c": 2, "z": 5},
    ...     "members": [{"id": "m1", "topics": ["a", "b", "c"]}, {"id": "m2", "topics": ["c"]}]})
    >>> topic_order(inst)
    ['b', 'a', 'c']
    """
    subs = subs if subs is not None else subscribers(instance)
    used = [t for t, s in subs.items() if s]
    return sorted(
        used,
        key=lambda t: (len(subs[t]), -instance.topics[t].partitions, java_string_key(t)),
    )


def _fill(counts: np.ndarray, ranks: np.ndarray, n: int) -> np.ndarray:
    """Hand ``n`` items one by one to the member with the smallest (count, rank).

    Parameters
    ----------
    counts
        Current counts of the candidate members (not modified).
    ranks
        Distinct tie-break ranks of the same members (smaller wins).
    n
        Number of items, handed out in order.

    Returns
    -------
    numpy.ndarray
        For item ``k`` the position (into ``counts``) of the member receiving it.

    Notes
    -----
    Item ``k`` goes to the ``k``-th smallest pair ``(level, rank)`` over all
    pairs with ``level >= counts[i]``: a member at count ``v`` that receives
    an item moves to ``v + 1``, so the greedy visits exactly those pairs in
    lexicographic order.  ``level`` is found by binary search on the number
    of pairs below it.

    Examples
    --------
    >>> _fill(np.array([1, 0, 0]), np.array([0, 1, 2]), 5).tolist()
    [1, 2, 0, 1, 2]
    """
    if n <= 0 or counts.size == 0:
        return np.zeros(0, dtype=np.int64)
    lo = int(counts.min())
    hi = lo + n + 1  # pairs below hi >= n + 1 > n

    def below(v: int) -> int:
        return int(np.maximum(v - counts, 0).sum())

    # largest level L with below(L) <= n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if below(mid) <= n:
            lo = mid
        else:
            hi = mid
    level = lo
    per = np.maximum(level - counts, 0)
    who = np.repeat(np.arange(counts.size, dtype=np.int64), per)
    starts = np.cumsum(per) - per
    lev = np.repeat(counts, per) + (np.arange(who.size, dtype=np.int64) - np.repeat(starts, per))
    extra = n - who.size
    if extra:
        at_level = np.flatnonzero(counts <= level)
        pick = at_level[np.argsort(ranks[at_level], kind="stable")[:extra]]
        who = np.concatenate((who, pick))
        lev = np.concatenate((lev, np.full(extra, level, dtype=np.int64)))
    order = np.lexsort((ranks[who], lev))
    return who[order]


def fair_owners(instance: Instance) -> dict[str, np.ndarray]:
    """KIP-49 assignment as per-topic owner arrays (member index, ``-1`` = unassigned).

    Parameters
    ----------
    instance
        The group state (``owned``, weights and capacities are ignored).

    Returns
    -------
    dict
        Topic -> ``int64`` owner array for every topic of the instance.
    """
    members = instance.members
    subs = subscribers(instance)
    ids_sorted = sorted(range(len(members)), key=lambda i: java_string_key(members[i].id))
    rank = np.empty(len(members), dtype=np.int64)
    rank[ids_sorted] = np.arange(len(members), dtype=np.int64)
    counts = np.zeros(len(members), dtype=np.int64)
    owners = {t: np.full(tp.partitions, -1, dtype=np.int64) for t, tp in instance.topics.items()}
    for t in topic_order(instance, subs):
        cand = np.asarray(subs[t], dtype=np.int64)
        pos = _fill(counts[cand], rank[cand], instance.topics[t].partitions)
        owners[t] = cand[pos]
        counts += np.bincount(owners[t], minlength=len(members))
    return owners


@register(
    "fair",
    summary="KIP-49 fair assignor: most constrained topics first, each partition to the least-loaded subscriber",
    source="KIP-49 / KAFKA-3297 (never merged; rules of the author's FairAssignor)",
)
def fair(instance: Instance, params: Params) -> Result:
    """Assign with the KIP-49 fair assignor.

    Parameters
    ----------
    instance
        Consumer-protocol group state.
    params
        Unused (the assignor has no options).

    Returns
    -------
    Result
        The assignment; every member appears.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t0": 3, "t1": 3},
    ...     "members": [{"id": "C0", "topics": ["t0"]}, {"id": "C1", "topics": ["t0", "t1"]}]})
    >>> fair(inst, Params()).assignment.to_lists()
    {'C0': {'t0': [0, 1, 2]}, 'C1': {'t1': [0, 1, 2]}}
    """
    owners = fair_owners(instance)
    return Result(assignment=Assignment.from_owners(instance.member_ids, owners))
