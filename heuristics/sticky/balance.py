"""Kafka's ``isBalanced`` test of the general sticky path, kept up to date move by move.

Kafka's test: the assignment is balanced when loads differ by at most one, or
when no member ``c`` (but one holding exactly its maximum) has, among the topics it
subscribes to, a partition owned by a member holding at least two more
partitions than ``c``.  Evaluated from scratch that is a pass over every
partition; the reassignment loop asks after every move.

:class:`BalanceIndex` groups members by subscription (``K`` distinct sets,
usually a handful) and keeps ``reach[o, k]``: how many partitions of the
topics of subscription ``k`` member ``o`` owns.  Then *unbalanced* means: some
owner ``o`` reaches a subscription whose least loaded member not holding exactly its maximum holds
at most ``load[o] - 2``.  A move updates ``reach`` in O(classes of the topic);
a test costs O(members x classes), independent of the number of partitions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heuristics.sticky.input import StickyInput

_NONE = np.iinfo(np.int64).max // 4


class BalanceIndex:
    """Partitions owned per (member, subscription class), for the ``isBalanced`` test.

    Parameters
    ----------
    si
        The prepared instance.
    owner
        Current owner of every global partition id (all assigned).
    """

    def __init__(self, si: StickyInput, owner: np.ndarray) -> None:
        classes: dict[frozenset[int], int] = {}
        self.member_class = np.array([classes.setdefault(s, len(classes)) for s in si.subs], dtype=np.int64)
        n_topics = len(si.topics)
        topic_classes: list[list[int]] = [[] for _ in range(n_topics)]
        for s, k in classes.items():
            for t in s:
                topic_classes[t].append(k)
        self.topic_classes = [np.asarray(c, dtype=np.int64) for c in topic_classes]
        self.topic_of = si.topic_of
        n_members = si.n_members
        self.reach = np.zeros((n_members, len(classes)), dtype=np.int64)
        if owner.size:
            # partitions per (topic, owner), spread to every class holding the topic
            key = si.topic_of * n_members + owner
            pairs, counts = np.unique(key, return_counts=True)
            pair_topic, pair_owner = np.divmod(pairs, n_members)
            for t in np.unique(pair_topic).tolist():
                sel = pair_topic == t
                for k in self.topic_classes[t].tolist():
                    np.add.at(self.reach[:, k], pair_owner[sel], counts[sel])

    def move(self, g: int, old: int, new: int) -> None:
        """Partition ``g`` moved from ``old`` to ``new``."""
        ks = self.topic_classes[int(self.topic_of[g])]
        self.reach[old, ks] -= 1
        self.reach[new, ks] += 1

    def unbalanced_pair_exists(self, loads: np.ndarray, active: np.ndarray, open_: np.ndarray) -> bool:
        """Whether an owner holds two more than an open member subscribed to one of its topics.

        Parameters
        ----------
        loads
            Partitions held by every member.
        active
            Members taking part in the reassignment (not set aside).
        open_
            Active members Kafka checks: all but those holding exactly their maximum.
        """
        n_classes = self.reach.shape[1]
        least = np.full(n_classes, _NONE, dtype=np.int64)
        np.minimum.at(least, self.member_class[open_], loads[open_])
        reachable = np.where(self.reach > 0, least[None, :], _NONE).min(axis=1) if n_classes else least
        return bool(np.any(active & (loads >= reachable + 2)))


def is_balanced_reference(
    si: StickyInput, owner: np.ndarray, loads: Sequence[int], active: Sequence[bool], max_size: Sequence[int]
) -> bool:
    """Kafka's ``isBalanced`` evaluated directly, for tests: a pass over all partitions."""
    act = [m for m in range(si.n_members) if active[m]]
    if not act:
        return True
    if min(loads[m] for m in act) >= max(loads[m] for m in act) - 1:
        return True
    for c in act:
        if loads[c] == max_size[c]:
            continue
        for t in si.subs[c]:
            for g in range(int(si.offsets[t]), int(si.offsets[t + 1])):
                o = int(owner[g])
                if o != c and active[o] and loads[c] + 1 < loads[o]:
                    return False
    return True
