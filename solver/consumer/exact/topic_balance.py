"""The ``topic_balance`` stage: topic-partitions above their topic's even share per member.

Needs classes built per topic (``build_classes(..., per_topic=True)``).
"""

from __future__ import annotations

from collections.abc import Sequence

from solver.consumer.items import ItemClasses


def topic_balance_terms(ic: ItemClasses) -> list[tuple[list[int], int, list[int]]]:
    """Per topic: (its classes, even share, members that may hold it).

    ``topic_balance`` counts, over topics ``t`` and members ``m``, the
    topic-partitions of ``t`` on ``m`` above ``ceil(P_t / S_t)``, where
    ``P_t`` is the number of ``t``'s items and ``S_t`` the number of members
    eligible for them; a co-partition group counts as one topic whose units
    weigh their topic-partitions.  Zero means every topic is spread as evenly
    as its subscribers allow.  Needs classes built per topic
    (``build_classes(..., per_topic=True)``).
    """
    if ic.cls_topic is None:
        raise ValueError("topic_balance needs classes built per topic")
    fam: dict[int, list[int]] = {}
    for c in range(ic.n_classes):
        if ic.count[c] > 0:
            fam.setdefault(int(ic.cls_topic[c]), []).append(c)
    out: list[tuple[list[int], int, list[int]]] = []
    for _t, cls in sorted(fam.items()):
        n = sum(int(ic.count[c]) for c in cls)
        members = sorted(set().union(*(set(ic.eligsets[int(ic.cls_elig[c])].tolist()) for c in cls)))
        out.append((cls, -(-n // max(1, len(members))), members))
    return out


def topic_balance_value(ic: ItemClasses, flows: Sequence[tuple[int, int, int]]) -> int:
    """The ``topic_balance`` of a solution given as ``(class, member, count)`` triples."""
    per: dict[tuple[int, int], int] = {}
    for c, m, k in flows:
        per[c, m] = per.get((c, m), 0) + k
    total = 0
    for cls, share, members in topic_balance_terms(ic):
        size = int(ic.size[cls[0]])
        for m in members:
            held = sum(per.get((c, m), 0) for c in cls)
            total += size * max(0, held - share)
    return total
