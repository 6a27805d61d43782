"""Fewest moved cost at a load cap, as the column generation sees it: free classes, members' rooms, costs.

The exact engine's integers (:mod:`..data`): class ``c`` has ``n_c`` items of
weight ``W_c``; member ``m`` holds at most ``room_m = zcap // r_m`` of weight
(``NL_m = r_m * load_m <= zcap``); one item of ``c`` on ``m`` costs
``owned_c - own_c(m)``.

*Cost fixing.*  When a solution of moved cost ``ub`` is known, only cheaper
ones are of interest, and no item whose move alone costs ``ub`` or more moves
in them: such a (class, member) pair is not allowed, and a class left with one
allowed member is fixed there (its load leaves that member's room).  A bound
of the reduced problem is then a bound of every solution cheaper than ``ub``;
``min(ub, bound)`` is valid for every solution (:func:`reduce`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.consumer.exact.data import Scaled
from solver.consumer.items import ItemClasses

__all__ = ["MovesProblem", "reduce"]


@dataclass(frozen=True)
class MovesProblem:
    """The reduced problem: the classes that may still move, over all members.

    Attributes
    ----------
    classes
        Free class -> class index of the instance.
    weight, count
        Free class -> scaled weight of one item, number of items.
    cost
        ``[member, free class]``: moved cost of one item there (scaled integers).
    allowed
        ``[member, free class]``: eligible, and cheaper than the known solution.
    room
        Member -> weight it may still take (its room at the cap less its fixed load).
    ratio
        Member -> capacity ratio (``NL_m = ratio_m * load_m``).
    fixed_load
        Member -> weight of the fixed items it holds.
    fixed
        ``[class, member]`` counts of the fixed items (zero rows for free classes).
    fixed_cost
        Moved cost of the fixed items (scaled).
    zcap
        The cap on every ``NL_m``.
    """

    classes: np.ndarray
    weight: np.ndarray
    count: np.ndarray
    cost: np.ndarray
    allowed: np.ndarray
    room: np.ndarray
    ratio: np.ndarray
    fixed_load: np.ndarray
    fixed: np.ndarray
    fixed_cost: int
    zcap: int

    @property
    def n_members(self) -> int:
        return int(self.room.size)

    @property
    def n_free(self) -> int:
        return int(self.count.size)

    def full(self, free_counts: np.ndarray) -> np.ndarray:
        """The ``[class, member]`` counts of a solution given as ``[member, free class]`` counts."""
        out = self.fixed.copy()
        out[self.classes] += free_counts.T
        return out

    def free_counts(self, x: np.ndarray) -> np.ndarray:
        """``[member, free class]`` counts of a full ``[class, member]`` solution (its free part)."""
        return np.ascontiguousarray(x[self.classes].T)


def cost_matrix(ic: ItemClasses, sc: Scaled) -> np.ndarray:
    """``[class, member]``: moved cost of one item of the class on the member (scaled integers)."""
    out = np.repeat(np.asarray(sc.owned, dtype=np.int64)[:, None], ic.n_members, axis=1)
    for c, own in enumerate(sc.own):
        for m, k in own.items():
            out[c, m] -= k
    return out


def eligible_matrix(ic: ItemClasses) -> np.ndarray:
    """``[class, member]``: whether the member may hold the class."""
    sets = np.zeros((len(ic.eligsets), ic.n_members), dtype=bool)
    for e, members in enumerate(ic.eligsets):
        sets[e, members] = True
    return sets[np.asarray(ic.cls_elig, dtype=np.int64)]


def reduce(ic: ItemClasses, sc: Scaled, zcap: int, ub: int | None = None) -> MovesProblem | None:
    """The problem at cap ``zcap``, reduced by cost fixing against a known moved cost ``ub``.

    Returns ``None`` when no assignment cheaper than ``ub`` can exist (a class every eligible member of
    which costs ``ub`` or more, or fixed items that overfill a member): ``ub`` is then optimal.

    Examples
    --------
    Two members, one class of three items owned by member 0 (moving one costs 5) and one free class:

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> ic = SimpleNamespace(n_members=2, n_classes=2, eligsets=[np.array([0, 1])], cls_elig=np.array([0, 0]),
    ...                      count=np.array([3, 1]))
    >>> sc = SimpleNamespace(wint=[2, 1], ratio=[1, 1], owned=[5, 0], own=[{0: 5}, {}])
    >>> p = reduce(ic, sc, zcap=6, ub=5)   # solutions cheaper than 5 keep class 0 at home
    >>> p.classes.tolist(), p.room.tolist(), p.fixed_cost
    ([1], [0, 6], 0)
    """
    n = int(ic.n_members)
    W = np.asarray(sc.wint, dtype=np.int64)
    count = np.asarray(ic.count, dtype=np.int64)
    ratio = np.asarray(sc.ratio, dtype=np.int64)
    cost = cost_matrix(ic, sc)
    allowed = eligible_matrix(ic) & (count > 0)[:, None]
    if ub is not None:
        allowed &= cost < ub
    n_allowed = allowed.sum(axis=1)
    live = count > 0
    if (live & (n_allowed == 0)).any():
        return None  # some item costs ub or more wherever it goes
    fixed = np.zeros((ic.n_classes, n), dtype=np.int64)
    one = np.flatnonzero(live & (n_allowed == 1))
    if one.size:
        fixed[one, allowed[one].argmax(axis=1)] = count[one]
    fixed_load = W @ fixed
    room = zcap // ratio - fixed_load
    if (room < 0).any():
        return None  # the fixed items alone overfill a member: nothing cheaper than ub fits
    fixed_cost = int((fixed * cost).sum())
    if ub is not None and fixed_cost >= ub:
        return None
    free = np.flatnonzero(live & (n_allowed > 1))
    return MovesProblem(classes=free, weight=W[free], count=count[free], cost=np.ascontiguousarray(cost[free].T),
                        allowed=np.ascontiguousarray(allowed[free].T), room=room, ratio=ratio,
                        fixed_load=fixed_load, fixed=fixed, fixed_cost=fixed_cost, zcap=int(zcap))
