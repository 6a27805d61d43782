"""Lower bound on the max load per capacity: single items, Hall sets, integrality and grain.

All values are the exact engine's integers (:mod:`solver.consumer.exact.data`):
item class ``c`` weighs ``W_c``, member ``m`` has capacity ratio ``r_m`` and
holds load ``NL_m = r_m * load_m``.  A max load ``Z`` (an integer, as every
``NL_m`` is) lets member ``m`` hold at most ``floor(Z / r_m)`` of load.

* **Hall sets.**  The items of any set of eligible sets must fit on the members
  eligible for them.  Over every such set at once this is a max flow
  (source -> eligible set -> member -> sink), so it is checked for all topic
  sets, not only the ones that appear, in one polynomial test.
* **Integrality.**  A member's load is a sum of the weights it may hold, so
  a multiple of their gcd ``g_m``: its room is ``floor(floor(Z / r_m) / g_m) * g_m``.
* **Grain.**  Where a few small weights spoil that gcd (weights of 50,000s and
  a handful of 1s), the *coarse* items (the weights from some threshold up,
  gcd ``G``) must fit in each member's room rounded down to a multiple of
  ``G``, while all items must fit in the room itself: a second layer of the
  same flow.  Every threshold gives a valid bound; the largest is kept.

The bound is the least ``Z`` passing every test (tests are monotone in ``Z``,
so a galloping binary search finds it).

Examples
--------
Two equal members, items of weights 3, 3, 3 and 1 (total 10): the LP bound
is 5, but the 3s (the coarse grain) fit only twice into a room of 5, so no
member can stay at 5; the optimum, {3, 3} and {3, 1}, is 6:

>>> import numpy as np
>>> from solver.consumer.exact.bounds.max_load import max_load_bound
>>> from solver.consumer.items import ItemClasses
>>> ic = ItemClasses(n_members=2, eligsets=[np.array([0, 1])], cls_elig=np.array([0, 0]),
...     count=np.array([3, 1]), weight=np.array([3.0, 1.0]), size=np.array([1, 1]), owners=[(), ()],
...     owned_cost=np.zeros(2), racksig=np.zeros(2, dtype=np.int64), racksigs=[(None,)], chunks=[],
...     item_part=np.zeros(0), item_class=np.zeros(0), topics=[], groups=[])
>>> max_load_bound(ic, [3, 1], [1, 1])
6
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from solver.consumer.items import ItemClasses

#: Thresholds tried for the grain argument (the smallest distinct weights).
GRAIN_THRESHOLDS = 8
#: Flow capacity standing for "unbounded" (well above any scaled total load).
INF = 2**62


def member_gcds(ic: ItemClasses, W: Sequence[int], classes: Sequence[int] | None = None) -> list[int]:
    """Per member, the gcd of the weights it may hold (``0`` when it may hold none).

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> ic = SimpleNamespace(n_members=2, n_classes=2, eligsets=[np.array([0]), np.array([0, 1])],
    ...                      cls_elig=np.array([0, 1]), count=np.array([1, 1]))
    >>> member_gcds(ic, [6, 4])
    [2, 4]
    """
    per_set: dict[int, int] = {}
    for c in (range(ic.n_classes) if classes is None else classes):
        if int(ic.count[c]) > 0 and W[c] > 0:
            e = int(ic.cls_elig[c])
            per_set[e] = math.gcd(per_set.get(e, 0), int(W[c]))
    g = [0] * ic.n_members
    for e, v in per_set.items():
        for m in ic.eligsets[e].tolist():
            g[m] = math.gcd(g[m], v)
    return g


class _Flow:
    """The Hall / integrality / grain test as a reusable max-flow network."""

    def __init__(self, ic: ItemClasses, W: Sequence[int], ratio: Sequence[int], coarse: set[int] | None) -> None:
        from ortools.graph.python import max_flow

        self.ratio = np.asarray(ratio, dtype=np.int64)
        n = ic.n_members
        self.gcd = np.asarray(member_gcds(ic, W), dtype=np.int64)
        fine_w: dict[int, int] = {}
        coarse_w: dict[int, int] = {}
        for c in range(ic.n_classes):
            k = int(ic.count[c])
            if k <= 0 or W[c] <= 0:
                continue
            e = int(ic.cls_elig[c])
            bucket = coarse_w if coarse is not None and c in coarse else fine_w
            bucket[e] = bucket.get(e, 0) + int(W[c]) * k
        self.total = sum(fine_w.values()) + sum(coarse_w.values())
        cg = member_gcds(ic, W, sorted(coarse)) if coarse is not None else [0] * n
        self.cgcd = np.asarray(cg, dtype=np.int64)
        self.used = np.zeros(n, dtype=bool)
        self.cused = np.zeros(n, dtype=bool)
        f = max_flow.SimpleMaxFlow()
        src, sink = 0, 1
        member_node = 2 + np.arange(n)
        coarse_node = 2 + n + np.arange(n)
        nxt = 2 + 2 * n
        tails: list[int] = []
        heads: list[int] = []
        caps: list[int] = []
        for weights, into, used in ((fine_w, member_node, self.used), (coarse_w, coarse_node, self.cused)):
            for e, tot in weights.items():
                node = nxt
                nxt += 1
                tails.append(src)
                heads.append(node)
                caps.append(tot)
                for m in ic.eligsets[e].tolist():
                    tails.append(node)
                    heads.append(int(into[m]))
                    caps.append(INF)
                    used[m] = True
        self.cused &= self.cgcd > 0
        self.arc0 = len(tails)
        self.members = np.flatnonzero(self.used | self.cused)
        self.cmembers = np.flatnonzero(self.cused)
        for m in self.members.tolist():
            tails.append(int(member_node[m]))
            heads.append(sink)
            caps.append(0)
        for m in self.cmembers.tolist():
            tails.append(int(coarse_node[m]))
            heads.append(int(member_node[m]))
            caps.append(0)
        f.add_arcs_with_capacity(np.asarray(tails, dtype=np.int32), np.asarray(heads, dtype=np.int32),
                                 np.asarray(caps, dtype=np.int64))
        self.f = f
        self.room_arcs = np.arange(self.arc0, self.arc0 + self.members.size, dtype=np.int32)
        self.coarse_arcs = np.arange(self.arc0 + self.members.size, self.arc0 + self.members.size
                                     + self.cmembers.size, dtype=np.int32)

    def rooms(self, z: int) -> np.ndarray:
        """Per member, the most load it can hold at max load ``z`` (a multiple of its weights' gcd)."""
        raw = z // self.ratio
        g = np.where(self.gcd > 0, self.gcd, 1)
        return (raw // g) * g

    def feasible(self, z: int) -> bool:
        room = self.rooms(z)
        self.f.set_arcs_capacity(self.room_arcs, room[self.members])
        if self.coarse_arcs.size:
            cg = self.cgcd[self.cmembers]
            self.f.set_arcs_capacity(self.coarse_arcs, (room[self.cmembers] // cg) * cg)
        if self.f.solve(0, 1) != self.f.OPTIMAL:
            return False
        return int(self.f.optimal_flow()) >= self.total


def _least(test: _Flow, lo: int, hi: int) -> int:
    """Least ``z`` in ``[lo, hi]`` that passes ``test`` (``hi`` when none below it does)."""
    if test.feasible(lo):
        return lo
    step = 1
    good = hi
    bad = lo
    # gallop up from lo: bounds are usually a few units above the cheap ones
    while bad + step < good:
        probe = bad + step
        if test.feasible(probe):
            good = probe
            break
        bad = probe
        step *= 2
    while good - bad > 1:
        mid = (good + bad) // 2
        if test.feasible(mid):
            good = mid
        else:
            bad = mid
    return good


def simple_bound(ic: ItemClasses, W: Sequence[int], ratio: Sequence[int]) -> int:
    """Each item on its best eligible member: ``max_c W_c * min(r_m)`` over its eligible members."""
    r = np.asarray(ratio, dtype=np.int64)
    fastest = [int(r[e].min()) if len(e) else 0 for e in ic.eligsets]
    best = 0
    for c in range(ic.n_classes):
        if int(ic.count[c]) > 0 and W[c] > 0:
            best = max(best, int(W[c]) * fastest[int(ic.cls_elig[c])])
    return best


def grain_candidates(ic: ItemClasses, W: Sequence[int]) -> list[set[int]]:
    """Coarse class sets: the weights from each of the smallest distinct weights up, where their gcd grows."""
    live = [c for c in range(ic.n_classes) if int(ic.count[c]) > 0 and W[c] > 0]
    g_all = 0
    for c in live:
        g_all = math.gcd(g_all, int(W[c]))
    distinct = sorted({int(W[c]) for c in live})
    out: list[set[int]] = []
    seen = {g_all}
    for thr in distinct[1:GRAIN_THRESHOLDS + 1]:
        coarse = {c for c in live if W[c] >= thr}
        g = 0
        for c in coarse:
            g = math.gcd(g, int(W[c]))
        if g not in seen:
            seen.add(g)
            out.append(coarse)
    return out


def max_load_bound(ic: ItemClasses, W: Sequence[int], ratio: Sequence[int], *, hi: int | None = None) -> int:
    """Lower bound on the integer max load ``Z`` (see the module docstring).

    Parameters
    ----------
    ic
        Item classes.
    W
        Scaled integer load of one item per class.
    ratio
        Capacity ratio per member (``NL_m = ratio[m] * load_m``).
    hi
        A max load known to be reachable (shortens the search); default: the
        total load on the slowest member.

    Returns
    -------
    int
    """
    lo = simple_bound(ic, W, ratio)
    total = sum(int(W[c]) * int(ic.count[c]) for c in range(ic.n_classes))
    if total == 0:
        return lo
    top = max(int(r) for r in ratio) * total
    hi = top if hi is None else max(lo, min(int(hi), top))
    best = _least(_Flow(ic, W, ratio, None), lo, hi)
    for coarse in grain_candidates(ic, W):
        test = _Flow(ic, W, ratio, coarse)
        if not test.feasible(best):
            best = _least(test, best + 1, max(hi, best + 1))
    return best
