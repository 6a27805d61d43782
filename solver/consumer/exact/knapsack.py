"""Minimum-cost covers: the least cost of items whose weights sum to at least a need.

The owner side of the moved-cost bound (:mod:`.bounds.moves`) needs a *lower
bound* on that least cost (:func:`min_cover`); the sticky start
(:mod:`.primal.start`) needs a *cover* of low cost (:func:`cover`).  Both use
one dynamic programme over costs (exact while costs are small, else over costs
rounded down to a coarser unit) beside the fractional (LP) cover.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np

#: Largest table of the dynamic programme (costs are rounded down to fit; bounds stay valid).
DP_SIZE = 20_000


def min_cover(items: Sequence[tuple[int, int, int]], need: int) -> int:
    """Lower bound on ``min sum cost_i y_i`` with ``sum w_i y_i >= need``, ``y_i`` in ``0..count_i``.

    ``items`` are ``(w, cost, count)`` with non-negative integers.  Exact when
    the costs are small (a dynamic programme over costs, or all costs equal);
    otherwise costs are rounded down to a unit that keeps the table at most
    :data:`DP_SIZE` long (a valid bound, within one unit per item of the
    exact one), and never below the fractional (LP) bound.  When the items
    cannot cover ``need`` at all, the cost of taking every item.

    Examples
    --------
    Shed at least 10 from items of weights 6, 5 and 5 costing 7, 4 and 4:
    6 + 5 costs 11, 5 + 5 costs 8 (the LP bound is 7):

    >>> min_cover([(6, 7, 1), (5, 4, 2)], 10)
    8
    >>> min_cover([(6, 7, 1), (5, 4, 2)], 0)
    0
    """
    if need <= 0:
        return 0
    live = []
    for w, cost, cnt in items:
        if w <= 0 or cnt <= 0:
            continue
        if cost <= 0:
            need -= w * cnt
        else:
            live.append((int(w), int(cost), int(cnt)))
    if need <= 0:
        return 0
    if sum(w * k for w, _, k in live) < need:
        return sum(cost * k for _, cost, k in live)
    live.sort(key=lambda t: Fraction(t[1], t[0]))
    # fractional bound and a greedy upper bound
    rem = need
    frac = Fraction(0)
    upper = 0
    for w, cost, k in live:
        if rem <= 0:
            break
        take = min(k, rem // w)
        frac += take * cost
        upper += take * cost
        rem -= take * w
        if rem > 0 and take < k:
            frac += Fraction(rem * cost, w)
            upper += cost
            rem = 0
    lp = math.ceil(frac)
    if rem > 0:  # the greedy ran out of items with whole steps: close it with the cheapest remaining
        upper = sum(cost * k for _, cost, k in live)
    if upper <= lp:
        return lp
    costs = {cost for _, cost, _ in live}
    if len(costs) == 1:
        # equal costs: the fewest items, largest first
        (c0,) = costs
        got = 0
        n = 0
        for w, _, k in sorted(live, key=lambda t: -t[0]):
            take = min(k, -(-(need - got) // w))
            n += take
            got += take * w
            if got >= need:
                break
        return c0 * n
    unit = max(1, -(-upper // DP_SIZE))
    size = upper // unit + 1
    best = np.zeros(size, dtype=np.int64)  # best[k]: most weight with rounded cost <= k
    for w, cost, k in live:
        q = cost // unit
        piece = 1
        while k > 0:  # binary splitting of the count
            take = min(piece, k)
            k -= take
            piece *= 2
            qq, ww = q * take, w * take
            if qq == 0:
                best += ww
            elif qq < size:
                shifted = best[:size - qq] + ww
                np.maximum(best[qq:], shifted, out=best[qq:])
    hit = np.flatnonzero(best >= need)
    dp = int(hit[0]) * unit if hit.size else upper
    return max(lp, dp)


def cover(items: Sequence[tuple[int, int, int]], need: int) -> list[int]:
    """A cover of low cost: how many of each item to take so that ``sum w_i take_i >= need``.

    ``items`` are ``(w, cost, count)``.  Free items (cost 0) go first, largest
    first; the rest is the dynamic programme's choice (optimal while costs are
    small), or the greedy by cost per unit of weight when that is cheaper.
    Takes everything when even that does not cover ``need``.

    Examples
    --------
    >>> cover([(6, 7, 1), (5, 4, 2)], 10)
    [0, 2]
    >>> cover([(3, 0, 2), (5, 4, 1)], 6)
    [2, 0]
    """
    take = [0] * len(items)
    if need <= 0:
        return take
    free = sorted((i for i, (w, cost, k) in enumerate(items) if cost <= 0 and w > 0 and k > 0),
                  key=lambda i: -items[i][0])
    for i in free:
        w, _, k = items[i]
        t = min(k, -(-need // w))
        take[i] = t
        need -= t * w
        if need <= 0:
            return take
    live = [i for i, (w, cost, k) in enumerate(items) if cost > 0 and w > 0 and k > 0]
    if sum(items[i][0] * items[i][2] for i in live) < need:
        for i in live:
            take[i] = items[i][2]
        return take
    # greedy: cheapest per unit of weight, then drop what turned out unnecessary (dearest first)
    greedy = dict.fromkeys(live, 0)
    got = 0
    for i in sorted(live, key=lambda i: (items[i][1] / items[i][0], i)):
        w, _, k = items[i]
        t = min(k, -(-(need - got) // w))
        greedy[i] = t
        got += t * w
        if got >= need:
            break
    for i in sorted(live, key=lambda i: -items[i][1]):
        while greedy[i] > 0 and got - items[i][0] >= need:
            greedy[i] -= 1
            got -= items[i][0]
    upper = sum(items[i][1] * t for i, t in greedy.items())
    unit = max(1, -(-upper // DP_SIZE))
    size = upper // unit + 1
    best = np.zeros(size, dtype=np.int64)
    pieces: list[tuple[int, int, np.ndarray]] = []  # (item, count, where the piece improved best)
    for i in live:
        w, cost, k = items[i]
        q = cost // unit
        piece = 1
        while k > 0:
            t = min(piece, k)
            k -= t
            piece *= 2
            qq, ww = q * t, w * t
            cand = np.full(size, -1, dtype=np.int64)
            if qq < size:
                cand[qq:] = best[:size - qq] + ww
            better = cand > best
            best = np.where(better, cand, best)
            pieces.append((i, t, better))
    hit = np.flatnonzero(best >= need)
    if hit.size:
        dp = [0] * len(items)
        k_at = int(hit[0])
        for i, t, better in reversed(pieces):
            if better[k_at]:
                dp[i] += t
                k_at -= (items[i][1] // unit) * t
        if sum(items[i][1] * dp[i] for i in live) < upper:
            greedy = {i: dp[i] for i in live}
    for i, t in greedy.items():
        take[i] = t
    return take
