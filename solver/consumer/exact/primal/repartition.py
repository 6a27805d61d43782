"""Two members' items split anew by subset sums: the max load down to the bound on tight packings.

Where the max-load bound is reached only by a near-perfect partition (a few
dozen lognormal loads over a handful of members: the bound is the even split,
and one unit above it is not optimal), moving or swapping single items stalls
a few units above the bound.  This search re-splits the items two members hold
*exactly*: the loads of the items both may hold are a multiset, and a subset-sum
table (a bitset, one big integer per item group) gives every load the first
member can take; the split nearest the pair's balance point wins.

1. The most loaded member ``h`` is paired with each other member, least loaded
   first; the first pair whose best split leaves both below ``h``'s load is
   applied (the max load falls, or fewer members share it).
2. When no pair helps, a *kick*: two other members re-split at random among the
   splits that keep both below the max load (a different mix of items for the
   next attempt), at most :data:`MAX_KICKS` in a row.

Everything is exact integer arithmetic on the engine's data (``NL_m = ratio_m *
load_m``).  A pool too large for one exact table keeps its smallest loads in an
exact table and the rest in coarser units: the coarse part is taken as the first
member holds it now or as the coarse table's nearest split, and the exact table
settles the remainder to the unit (the last units of a tight packing are found
only so).  Work is counted (:func:`_cost`), so a run with a work budget gives
the same answer on every machine.

Examples
--------
Five items of loads 8, 7, 6, 5, 4 on two members (sum 30: the bound is 15);
all start on member 0:

>>> import numpy as np
>>> from solver.consumer.exact.primal.data import Data
>>> d = Data(weights=[8, 7, 6, 5, 4], counts=[1] * 5, eligible=[[0, 1]] * 5, cost=[{}] * 5, ratio=[1, 1])
>>> x = np.array([[1, 0]] * 5)
>>> y = repartition(d, x, 15, max_work=10_000)
>>> [int(v) for v in np.array([8, 7, 6, 5, 4]) @ y]
[15, 15]
"""

from __future__ import annotations

import itertools
import random
import time

import numpy as np

from solver.consumer.exact.primal.data import Data

__all__ = ["repartition"]

#: Widest subset-sum table (bits); larger pools are grouped in coarser load units.
MAX_BITS = 1 << 18
#: Exact table for the smallest loads of a pool too wide for one exact table (bits).
FINE_BITS = 1 << 22
#: Kicks in a row without a lower max load before the search stops.
MAX_KICKS = 2_000


def repartition(d: Data, x: np.ndarray, target: int, *, max_work: int, deadline: float | None = None,
                seed: int = 0) -> np.ndarray:
    """``x`` with a max ``NL`` as low as pairwise exact re-splits reach (``target``: stop there).

    Parameters
    ----------
    d
        The integer model.
    x
        Counts ``[class, member]``, every item on an eligible member.
    target
        The max load (``NL`` units) to reach: the bound.
    max_work
        Work budget in table words (about 64 table bits a word); the answer depends on the data only.
    deadline
        ``time.perf_counter()`` instant to stop at as well (``None``: none).
    seed
        Seeds the kicks.

    Returns
    -------
    numpy.ndarray
        Counts with a max ``NL`` at most ``x``'s (``x`` itself, copied, when nothing lower was found).
    """
    return _Search(d, x, max_work, deadline, seed).run(target)


class _Search:
    def __init__(self, d: Data, x: np.ndarray, max_work: int, deadline: float | None, seed: int) -> None:
        self.x = np.array(x, dtype=np.int64, copy=True)
        self.w = [int(v) for v in d.weights]
        self.wv = np.asarray(self.w, dtype=np.int64)
        self.ratio = [int(r) for r in d.ratio]
        self.elig = [frozenset(int(m) for m in e) for e in d.eligible]
        self.load = [int(v) for v in self.wv @ self.x]
        self.work = 0
        self.max_work = max_work
        self.deadline = deadline
        self.rng = random.Random(seed)

    def nl(self, m: int) -> int:
        return self.ratio[m] * self.load[m]

    def spent(self) -> bool:
        return self.work >= self.max_work or (self.deadline is not None and time.perf_counter() >= self.deadline)

    def run(self, target: int) -> np.ndarray:
        n = len(self.ratio)
        kicks = 0
        while n > 1 and not self.spent():
            h = max(range(n), key=lambda m: (self.nl(m), -m))
            cur = self.nl(h)
            if cur <= target:
                break
            others = sorted((m for m in range(n) if m != h), key=lambda m: (self.nl(m), m))
            if any(self._pair(h, o, cur, None) for o in others):
                kicks = 0
                continue
            if kicks >= MAX_KICKS or len(others) < 2:
                break
            kicks += 1
            self.work += 1  # a kick that finds no window still counts
            a, b = self.rng.sample(others, 2)
            self._pair(a, b, cur, self.rng)
        return self.x

    def _pair(self, a: int, b: int, cur: int, rng: random.Random | None) -> bool:
        """Re-split the items ``a`` and ``b`` may both hold; without ``rng`` the split nearest balance, kept when
        both end below ``cur``; with it a random split keeping both below ``cur``.  Whether ``x`` changed."""
        x, w = self.x, self.w
        col_a, col_b = x[:, a], x[:, b]
        pool = [c for c in np.flatnonzero(col_a + col_b).tolist() if a in self.elig[c] and b in self.elig[c]]
        self.work += 16 + len(pool)  # finding the pool, whether or not a split follows
        if not pool:
            return False
        # the pool's loads as array sums (most tries end at the window test below: these sums are their cost)
        at = np.asarray(pool, dtype=np.int64)
        held_a, held_b = int(self.wv[at] @ col_a[at]), int(self.wv[at] @ col_b[at])
        total = held_a + held_b
        fa = self.load[a] - held_a
        fb = self.load[b] - held_b
        ra, rb = self.ratio[a], self.ratio[b]
        # exact loads s of a's share keeping both below cur: ra*(fa+s) < cur and rb*(fb+total-s) < cur
        s_hi = (cur - 1) // ra - fa
        s_lo = total + fb - (cur - 1) // rb
        if s_lo > s_hi or s_hi < 0 or s_lo > total:
            return False
        groups = _groups(pool, (col_a[at] + col_b[at]).tolist(), w)
        # coarse units lose the last units of a tight packing: the smallest groups stay exact (a second table)
        # and settle the exact remainder of whatever the coarse groups take
        fine: list[tuple[int, int, int]] = []
        if total > MAX_BITS:
            groups.sort(key=lambda g: (g[2], g[0]))
            n_fine = sum(1 for s in itertools.accumulate(g[2] for g in groups) if s <= FINE_BITS)
            fine, groups = groups[:n_fine], groups[n_fine:]
        coarse_total = sum(g[2] for g in groups)
        fine_total = sum(g[2] for g in fine)
        q = max(1, -(-coarse_total // MAX_BITS))
        coarse = [(c, k, load // q) for c, k, load in groups]
        table_c = _table(coarse)
        table_f = _table(fine)
        self.work += _cost(len(coarse), coarse_total // q) + _cost(len(fine), fine_total)
        aim = (rb * (fb + total) - ra * fa) // (ra + rb) if rng is None else rng.randint(max(0, s_lo), min(total, s_hi))
        best: tuple[int, dict[int, int], int] | None = None
        mid = (aim - fine_total // 2) // q
        # a's coarse groups as they are (only the fine ones re-split: the endgame of a tight packing) and the
        # coarse subsets nearest the aim; a kick takes the first one above its random aim
        near = _near if rng is None else _first_above
        takes = ([_held(coarse, x, a)] if rng is None else []) + [_subset(table_c, coarse, sc)
                                                                 for sc in near(table_c[-1], mid)]
        for take in takes:
            got_c = sum(w[c] * k for c, k in take.items())
            for sf in near(table_f[-1], aim - got_c):
                got = got_c + sf
                worst = max(ra * (fa + got), rb * (fb + total - got))
                if worst < cur and (best is None or worst < best[0]):
                    best = (worst, take, sf)
        if best is None:
            return False
        # the fine items of the winner only: reading a wide table back costs about as much as building it
        take = dict(best[1])
        for c, k in _subset(table_f, fine, best[2]).items():
            take[c] = take.get(c, 0) + k
        for c in pool:
            k = take.get(c, 0)
            both = int(x[c, a] + x[c, b])
            x[c, a], x[c, b] = k, both - k
        self.load[a] = fa + sum(w[c] * take.get(c, 0) for c in pool)
        self.load[b] = fb + total - (self.load[a] - fa)
        return True


def _groups(pool: list[int], both: list[int], w: list[int]) -> list[tuple[int, int, int]]:
    """The pair's items of each class in binary groups (1, 2, 4, ... items): (class, items, exact load);
    ``both``: the items of each pool class the two members hold."""
    groups: list[tuple[int, int, int]] = []
    for c, left in zip(pool, both, strict=True):
        k = 1
        while left > 0:
            g = min(k, left)
            groups.append((c, g, g * w[c]))
            left -= g
            k *= 2
    return groups


def _cost(groups: int, bits: int) -> int:
    """Work of building a table: a shift and an or a group, about 16 words' worth of interpreter overhead and an
    eighth of a word per word (a 2**20-bit table shifts at about 5 ns a word; the budget's word is about 35 ns).

    Reading the table back (:func:`_below`, :func:`_above`, :func:`_subset`) is not counted: on wide pools a
    work unit takes about 2.7 times the nominal 35 ns (docs/benchmarks.md, "Wide loads settled to the unit")."""
    return groups * (16 + bits // 512)


def _held(groups: list[tuple[int, int, int]], x: np.ndarray, a: int) -> dict[int, int]:
    """Items per class of the groups ``a`` holds now (a class's groups are taken largest first)."""
    have: dict[int, int] = {}
    left = {c: int(x[c, a]) for c, _, _ in groups}
    for c, k, _ in sorted(groups, key=lambda g: -g[1]):
        if k <= left[c]:
            left[c] -= k
            have[c] = have.get(c, 0) + k
    return have


def _table(groups: list[tuple[int, int, int]]) -> list[int]:
    """Reachable sums after each group (bit ``s`` of ``table[i]``: sum ``s`` with the first ``i`` groups)."""
    reach = 1
    table = [reach]
    for _, _, gw in groups:
        reach |= reach << gw
        table.append(reach)
    return table


def _near(reach: int, s: int) -> list[int]:
    """The reachable sums nearest ``s`` from below and from above (one when they are the same)."""
    got = [v for v in (_below(reach, s), _above(reach, s)) if v is not None]
    return sorted(set(got))


def _first_above(reach: int, s: int) -> list[int]:
    """The reachable sum nearest ``s`` from above (none: empty)."""
    got = _above(reach, s)
    return [] if got is None else [got]


def _below(reach: int, s: int) -> int | None:
    """The largest reachable sum ``<= s``.

    A table of subset sums is symmetric (a subset's complement sums to ``top - s``, ``top`` its highest bit):
    the answer is ``top`` less the smallest reachable sum ``>= top - s``, one shift of ``s`` bits instead of a
    mask of ``s`` bits built and applied.

    >>> reach = 1 | 1 << 3 | 1 << 5 | 1 << 8  # items 3 and 5
    >>> [_below(reach, s) for s in (-1, 0, 2, 4, 5, 7, 8, 9)]
    [None, 0, 0, 3, 5, 5, 8, 8]
    """
    if s < 0:
        return None
    top = reach.bit_length() - 1
    if s >= top:
        return top
    return top - _above(reach, top - s)  # type: ignore[operator]  # top is reachable: never None


def _above(reach: int, s: int) -> int | None:
    """The smallest reachable sum ``>= s``."""
    s = max(0, s)
    high = reach >> s
    return s + _low_bit(high) if high else None


def _low_bit(x: int) -> int:
    """The lowest set bit of ``x > 0``, read in windows growing from bit 0 (``x & -x`` copies all of ``x``
    twice: ten times a shift on a wide table).

    >>> [_low_bit(v) for v in (1, 6, 1 << 100, 3 << 5000)]
    [0, 1, 100, 5000]
    """
    k = 64
    while not x & ((1 << k) - 1):
        k <<= 2
    low = x & ((1 << k) - 1)
    return (low & -low).bit_length() - 1


def _bit(reach: int, s: int) -> bool:
    """Whether sum ``s`` is reachable: by symmetry the cheaper of bit ``s`` and bit ``top - s`` is read."""
    top = reach.bit_length() - 1
    if s < 0 or s > top:
        return False
    return bool((reach >> (s if 2 * s >= top else top - s)) & 1)


def _subset(table: list[int], groups: list[tuple[int, int, int]], s: int) -> dict[int, int]:
    """Items per class of a group subset whose coarse loads sum to ``s`` (``s`` reachable in ``table[-1]``)."""
    take: dict[int, int] = {}
    for i in range(len(groups) - 1, -1, -1):
        if _bit(table[i], s):
            continue  # reachable without group i
        c, g, gw = groups[i]
        take[c] = take.get(c, 0) + g
        s -= gw
    return take
