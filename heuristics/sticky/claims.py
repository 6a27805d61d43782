"""Who keeps which previously owned partition: ``AbstractStickyAssignor.allSubscriptionsEqual``.

Kafka walks the members in subscription-map order and keeps, per partition,
the last member that claimed it.  A later claim from a higher generation takes
the partition over; a claim from the same generation as the last claimant
removes it from that claimant and marks the partition as claimed by several
previous owners (nobody keeps it); a lower generation changes nothing.  The
same walk decides whether every member has the same subscription (the
constrained path) and the highest generation seen.

Both halves of a comparison use the claimant's own generation except that the
earlier claimant's generation is read from its *subscription*
(``Subscription.generationId``), which for the eager ``StickyAssignor`` may
differ from the generation in its user data; callers pass it explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from heuristics.sticky.input import DEFAULT_GENERATION, StickyInput


@dataclass(frozen=True, eq=False)
class Claims:
    """Result of the claim walk.

    Attributes
    ----------
    owned
        Per member, the claimed global ids it keeps (claim order).
    multi
        Boolean mask over global ids: claimed by two members of one generation.
    all_equal
        Whether every member subscribed to the same topics (Kafka's test).
    max_generation
        Highest member generation (``-1`` if none is known).
    """

    owned: tuple[np.ndarray, ...]
    multi: np.ndarray
    all_equal: bool
    max_generation: int


def subscriptions_equal(si: StickyInput) -> bool:
    """Kafka's equal-subscription test, walking members in map order.

    The first non-empty subscription becomes the reference (an empty one
    leaves the reference unset, as in Kafka); every later member must
    subscribe to exactly the same topic set.
    """
    ref: frozenset[str] = frozenset()
    for i in si.order:
        topics = si.raw_topics[i]
        if not ref:
            ref = topics
        elif topics != ref:
            return False
    return True


def resolve_claims(si: StickyInput, subscription_generation: Sequence[int]) -> Claims:
    """Walk the claims as ``allSubscriptionsEqual`` does.

    Parameters
    ----------
    si
        The prepared instance.
    subscription_generation
        Per member, the generation Kafka reads from its subscription when it
        is the earlier claimant of a contested partition.

    Returns
    -------
    Claims
        The partitions each member keeps and the doubly claimed ones.
    """
    n = si.n_partitions
    gens = si.generation
    max_gen = max([DEFAULT_GENERATION, *gens])
    multi = np.zeros(n, dtype=bool)
    all_claims = [c for c in si.claims if c.size]
    if not all_claims:
        return Claims(si.claims, multi, subscriptions_equal(si), max_gen)
    flat = np.concatenate(all_claims)
    counts = np.bincount(flat, minlength=n)
    if counts.max() <= 1:
        # no partition claimed twice: everybody keeps every claim
        return Claims(si.claims, multi, subscriptions_equal(si), max_gen)

    contested = counts > 1
    holder: dict[int, int] = {}
    pointer: dict[int, int] = {}
    for i in si.order:
        c = si.claims[i]
        for g in c[contested[c]].tolist():
            p = pointer.get(g)
            if p is None:
                holder[g] = i
                pointer[g] = i
                continue
            other = subscription_generation[p]
            mine = gens[i]
            if mine == other:
                # same generation: the earlier claimant loses it, this one does not get it
                multi[g] = True
                holder.pop(g, None)
                pointer[g] = i
            elif mine > other:
                holder[g] = i
                pointer[g] = i
    owned = []
    for i, c in enumerate(si.claims):
        if c.size and contested[c].any():
            keep = [g for g in c.tolist() if not contested[g] or holder.get(g) == i]
            owned.append(np.asarray(keep, dtype=np.int64))
        else:
            owned.append(c)
    return Claims(tuple(owned), multi, subscriptions_equal(si), max_gen)
