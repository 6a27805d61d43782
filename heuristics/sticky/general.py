"""Kafka's general sticky path (members with different subscriptions).

``AbstractStickyAssignor.GeneralAssignmentBuilder``:

1. Members keep their claimed partitions of topics they still subscribe to
   (and, when rack-aware, on their rack); dropping any other claim means a
   *revocation is required*.
2. Topics are ordered by (number of subscribers, name), partitions within a
   topic ascending; the unassigned ones go one by one to the least loaded
   subscriber (load, then member id) - first only to rack-matching members
   when rack-aware, then to anyone.
3. Topics with one subscriber and members that hold everything they can get
   and nothing contested are set aside.
4. Reassignment loop: walk the (first only the newly assigned, unless a
   revocation is required; then all) partitions while the assignment is not
   *balanced*: a partition goes back to its previous owner of an older
   generation when that owner has at least two fewer partitions than its
   current one, otherwise to the least loaded subscriber when that one has at
   least two fewer; a move that reverses an earlier one moves the earlier
   partition back instead.  Repeat while anything moved.
5. Unless every member started empty, the result is kept only when its
   balance score (sum of pairwise load differences) beats the start.

*Balanced* (``isBalanced``): loads differ by at most one, or no member that
could take more has a subscribed partition whose owner holds at least two
more partitions than it.
"""

from __future__ import annotations

import bisect

import numpy as np

from heuristics.sticky.balance import BalanceIndex
from heuristics.sticky.claims import Claims
from heuristics.sticky.input import StickyInput, topic_partition_hash
from heuristics.sticky.movements import Ladder, Movements
from heuristics.sticky.racks import RackInfo
from solver.registry import UnsupportedInstanceError


class KafkaNullPointerError(UnsupportedInstanceError):
    """Kafka's assignor throws ``NullPointerException`` on this input, so a Java leader's rebalance fails too.

    kassign reproduces the failure rather than invent an answer Kafka never gives (exit 3, "unsupported by the
    chosen assignor"); the differential tests check that Kafka's classes fail on the same groups.
    """


def _balance_score(loads: np.ndarray) -> int:
    """Sum over member pairs of the absolute load difference."""
    s = np.sort(loads.astype(np.int64))
    m = s.size
    return int((s * (2 * np.arange(m) - m + 1)).sum())


class GeneralBuilder:
    """One run of the general path; call :meth:`build`."""

    def __init__(self, si: StickyInput, claims: Claims, racks: RackInfo) -> None:
        self.si = si
        self.claims = claims
        self.racks = racks
        n_members = si.n_members
        n_topics = len(si.topics)
        self.topic_of: list[int] = si.topic_of.tolist()
        self.subs = si.subs
        self.subscribers = [0] * n_topics
        for s in si.subs:
            for t in s:
                self.subscribers[t] += 1
        sizes = np.diff(si.offsets).tolist()
        size_of: dict[frozenset[int], int] = {}
        for s in si.subs:
            if s not in size_of:
                size_of[s] = sum(sizes[t] for t in s)
        self.max_size = [size_of[s] for s in si.subs]
        self.owner = np.full(si.n_partitions, -1, dtype=np.int64)
        self.load = [0] * n_members
        self.ladder = Ladder(self.load, si.rank)
        self.fixed = [False] * n_members
        self.revocation_required = False
        self.version = 0
        self._balanced_at = (-1, False)
        thash = si.topic_hashes()
        part_of = si.part_of

        def java_hash(g: int) -> int:
            return topic_partition_hash(thash[self.topic_of[g]], int(part_of[g]))

        self.movements = Movements(self.topic_of, java_hash)
        self._index: BalanceIndex | None = None  # built at the first full balance test

    # -- set-up -----------------------------------------------------------------------------
    def _previous_assignment(self) -> dict[int, int]:
        """``prepopulateCurrentAssignments``: partition -> member of an older generation."""
        si = self.si
        max_gen = self.claims.max_generation
        prev: dict[int, tuple[int, int]] = {}
        for i in si.order:
            gen = si.generation[i]
            if gen >= max_gen:
                continue
            for g in si.claims[i].tolist():
                cur = prev.get(g)
                if cur is None or gen > cur[1]:
                    prev[g] = (i, gen)
        return {g: m for g, (m, _) in prev.items()}

    def _keep_owned(self) -> None:
        """``assignOwnedPartitions``: keep subscribed (and rack-matching) claims."""
        si, racks = self.si, self.racks
        for i in range(si.n_members):
            own = self.claims.owned[i]
            if not own.size:
                continue
            subs = np.fromiter(si.subs[i], dtype=np.int64, count=len(si.subs[i]))
            ok = np.isin(si.topic_of[own], subs)
            if racks.aware:
                ok &= ~racks.mismatch_mask(i, own)
            if not ok.all():
                self.revocation_required = True
            kept = own[ok]
            self.owner[kept] = i
            self.load[i] = int(kept.size)

    def _sorted_partitions(self) -> np.ndarray:
        """All partitions, topics by (subscribers, name), partitions ascending."""
        si = self.si
        order = sorted(range(len(si.topics)), key=lambda t: (self.subscribers[t], t))
        if not order:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([np.arange(si.offsets[t], si.offsets[t + 1], dtype=np.int64) for t in order])

    # -- assignment of free partitions ------------------------------------------------------
    def _assign_free(self, partitions: list[int], rack_pass: bool) -> list[int]:
        """``maybeAssign``: each partition to the least loaded eligible subscriber.

        Returns the partitions left unassigned (rack pass) or ``[]``.
        """
        ladder, subs, topic_of, load, owner = self.ladder, self.subs, self.topic_of, self.load, self.owner
        racks = self.racks
        keys, n, by_rank, rank = ladder.keys, ladder.n, ladder.by_rank, ladder.rank
        insort = bisect.insort
        left: list[int] = []
        for g in partitions:
            t = topic_of[g]
            m = by_rank[keys[0] % n]
            if t in subs[m] and not (rack_pass and racks.mismatch(m, g)):
                pos = 0  # the usual case: the least loaded member takes it
            else:
                pos = -1
                for i, k in enumerate(keys):
                    m = by_rank[k % n]
                    if t in subs[m] and not (rack_pass and racks.mismatch(m, g)):
                        pos = i
                        break
                if pos < 0:
                    if rack_pass:
                        left.append(g)
                    continue
            del keys[pos]
            load[m] += 1
            owner[g] = m
            insort(keys, load[m] * n + rank[m], lo=pos)  # its key grew: it sits at or after pos
        return left

    # -- balance test -------------------------------------------------------------------------
    def _is_balanced(self) -> bool:
        if self._balanced_at[0] == self.version:
            return self._balanced_at[1]
        ladder, load = self.ladder, self.load
        # loads within one of each other: balanced without looking further
        result = load[ladder.first()] >= load[ladder.last()] - 1 or self._full_balance_check()
        self._balanced_at = (self.version, result)
        return result

    def _full_balance_check(self) -> bool:
        if self._index is None:
            self._index = BalanceIndex(self.si, self.owner)
        loads = np.asarray(self.load, dtype=np.int64)
        active = ~np.asarray(self.fixed, dtype=bool)
        # Kafka skips a member only when it holds exactly its maximum (``==``): one holding more (partitions of
        # topics it left, handed back to it as their previous owner) is still checked
        open_ = active & (loads != np.asarray(self.max_size, dtype=np.int64))
        return not self._index.unbalanced_pair_exists(loads, active, open_)

    # -- moves --------------------------------------------------------------------------------
    def _least_loaded_subscriber(self, t: int) -> int:
        subs = self.subs
        for m in self.ladder.members():
            if t in subs[m]:
                return m
        raise AssertionError("a contested topic has no subscriber")

    def _move(self, g: int, new: int) -> None:
        """``reassignPartition(partition, newConsumer)``."""
        old = int(self.owner[g])
        actual = self.movements.actual_partition(g, old, new)
        old = int(self.owner[actual])
        ladder = self.ladder
        ladder.remove(old)
        ladder.remove(new)
        self.movements.move(actual, old, new)
        if self._index is not None:
            self._index.move(actual, old, new)
        self.owner[actual] = new
        self.load[old] -= 1
        self.load[new] += 1
        ladder.add(new)
        ladder.add(old)
        self.version += 1

    def _reassign(self, partitions: list[int], prev: dict[int, int]) -> bool:
        """``performReassignments``; returns whether anything moved."""
        load, topic_of, fixed = self.load, self.topic_of, self.fixed
        owner = self.owner
        performed = False
        # the ladder only changes on a move: cache its minimum and each topic's least loaded subscriber
        seen = -1
        floor = 0
        best_of: dict[int, int] = {}
        while True:
            modified = False
            for g in partitions:
                if seen != self.version:
                    if self._is_balanced():
                        break
                    seen = self.version
                    floor = load[self.ladder.first()]
                    best_of.clear()
                cur = int(owner[g])
                p = prev.get(g)
                if p is not None:
                    if fixed[p]:
                        raise KafkaNullPointerError(
                            "Kafka's own sticky assignor throws NullPointerException on this group (a previous "
                            "owner of a contested partition now holds only topics nobody else subscribes to), so "
                            "a Java group leader fails this rebalance too; choose another assignor"
                        )
                    if load[cur] > load[p] + 1:
                        self._move(g, p)
                        performed = modified = True
                        continue
                if load[cur] <= floor + 1:
                    continue  # nobody at all has two fewer partitions
                t = topic_of[g]
                best = best_of.get(t)
                if best is None:
                    best = best_of[t] = self._least_loaded_subscriber(t)
                if load[cur] > load[best] + 1:
                    self._move(g, best)
                    performed = modified = True
            if not modified:
                return performed

    # -- the whole run ------------------------------------------------------------------------
    def build(self) -> np.ndarray:
        """Run the general path; returns the owner of every global partition id."""
        si = self.si
        prev = self._previous_assignment()
        self._keep_owned()
        sorted_all = self._sorted_partitions()
        unassigned = sorted_all[self.owner[sorted_all] < 0]
        for m in range(si.n_members):
            self.ladder.add(m)

        initializing = self.load[self.ladder.last()] == 0
        todo = unassigned.tolist()
        if self.racks.aware:
            todo = self._assign_free(todo, rack_pass=True)
        self._assign_free(todo, rack_pass=False)

        contested_topic = np.asarray([c >= 2 for c in self.subscribers] or [False], dtype=bool)
        if sorted_all.size:
            keep = contested_topic[si.topic_of[sorted_all]]
            sorted_all = sorted_all[keep]
            unassigned = unassigned[contested_topic[si.topic_of[unassigned]]]
        holds_contested = np.zeros(si.n_members, dtype=bool)
        if self.owner.size:
            mask = contested_topic[si.topic_of] & (self.owner >= 0)
            holds_contested[np.unique(self.owner[mask])] = True
        for m in range(si.n_members):
            if self.load[m] >= self.max_size[m] and not holds_contested[m]:
                self.ladder.remove(m)
                self.fixed[m] = True

        active = np.asarray([not f for f in self.fixed], dtype=bool)
        before_owner = self.owner.copy()
        before_score = _balance_score(np.asarray(self.load)[active])

        if not self.revocation_required:
            self._reassign(unassigned.tolist(), prev)
        performed = self._reassign(sorted_all.tolist(), prev)
        if not initializing and performed and _balance_score(np.asarray(self.load)[active]) >= before_score:
            self.owner = before_owner
        return self.owner
