"""Bin packing for capacity planning: lower bounds, greedy packings, CP-SAT models.

Items have a size (a partition's or co-partition unit's load) and optionally an
*anti-affinity group*: items of one group must go to distinct bins (a Streams
task's active and its standbys).  Bins have integer capacities.

Everything here works on integers so that a CP-SAT proof is a proof about the
real input: :func:`solver.scaling.integerize` finds an exact decimal scaling when the input has
one, and otherwise rounds conservatively in both directions (sizes up and
capacities down for packings, the other way for infeasibility proofs).

Lower bounds (all valid for identical bins of capacity ``C``):

- ``L1`` = ceil(total / C) (the continuous bound);
- ``L2``: Martello and Toth (1990), "Lower bounds and reduction procedures for
  the bin packing problem": for every threshold ``K <= C/2`` items larger than
  ``C - K`` and items in ``(C/2, C - K]`` each need a bin of their own, and the
  items in ``[K, C/2]`` can only use what the middle ones leave free;
- ``groups``: the largest anti-affinity group needs that many distinct bins.

The CP-SAT models (:func:`sat_pack`, :func:`sat_min_max` and their helpers) live
in :mod:`solver.planning.binpacking_sat` and are re-exported here.
"""

from __future__ import annotations

import time

import numpy as np
import numpy.typing as npt

# The CP-SAT models, re-exported so ``bp.sat_pack`` etc. keep working.
from solver.planning.binpacking_sat import (
    SAT_WORKERS,
    SatOutcome,
    add_anti_affinity,
    item_vars,
    minimise,
    new_solver,
    read_bins,
    sat_min_max,
    sat_pack,
    sat_parameters,
    status_name,
)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

# --------------------------------------------------------------------------- lower bounds


def l1_bound(sizes: IntArray, capacity: int) -> int:
    """Continuous lower bound ceil(sum / C) on the number of bins of capacity ``C``.

    Examples
    --------
    >>> l1_bound(np.array([4, 4, 4]), 10)
    2
    """
    total = int(np.asarray(sizes, dtype=np.int64).sum())
    return -(-total // capacity) if total > 0 else 0


def l2_bound(sizes: IntArray, capacity: int) -> int:
    """Martello-Toth ``L2`` lower bound on the number of bins of capacity ``capacity``.

    Every item must be at most ``capacity`` (check that first).

    Examples
    --------
    Three items of 6 in bins of 10 need three bins although ``L1`` says two:

    >>> l1_bound(np.array([6, 6, 6]), 10), l2_bound(np.array([6, 6, 6]), 10)
    (2, 3)
    """
    s = np.sort(np.asarray(sizes, dtype=np.int64))  # ascending
    if s.size == 0:
        return 0
    cap = int(capacity)
    prefix = np.concatenate(([0], np.cumsum(s)))
    # Candidate thresholds K: 0 and every distinct size <= C/2 (L(K) only changes there).
    half_idx = int(np.searchsorted(s, cap // 2, side="right"))  # items with 2s <= C: s <= C//2
    ks = np.unique(np.concatenate(([0], s[:half_idx])))
    # J3: K <= s <= C/2 ; J2: C/2 < s <= C-K ; J1: s > C-K
    lo3 = np.searchsorted(s, ks, side="left")
    hi3 = np.full(ks.shape, half_idx)
    hi2 = np.searchsorted(s, cap - ks, side="right")
    n1 = s.size - hi2
    n2 = hi2 - half_idx
    sum2 = prefix[hi2] - prefix[half_idx]
    sum3 = prefix[hi3] - prefix[lo3]
    free = n2 * cap - sum2
    extra = np.maximum(0, -(-(sum3 - free) // cap))
    return int((n1 + n2 + extra).max())


def group_bound(groups: IntArray | None) -> int:
    """Bins needed by the largest anti-affinity group (0 when there are none)."""
    if groups is None:
        return 0
    g = np.asarray(groups)
    g = g[g >= 0]
    if g.size == 0:
        return 0
    return int(np.bincount(g).max())


def identical_bound(sizes: IntArray, capacity: int, groups: IntArray | None = None) -> tuple[int, str]:
    """Best of ``L1``, ``L2`` and the group bound; returns ``(bound, name of the bound that gives it)``."""
    cands = [
        (l1_bound(sizes, capacity), "L1 = ceil(total load / capacity)"),
        (l2_bound(sizes, capacity), "L2 (Martello-Toth)"),
        (group_bound(groups), "largest anti-affinity group (task + standbys on distinct instances)"),
    ]
    best = max(c[0] for c in cands)
    name = next(n for b, n in cands if b == best)
    return best, name


def pool_bound(sizes: IntArray, pool_caps: IntArray, groups: IntArray | None = None) -> tuple[int, str]:
    """Lower bound on how many bins of a heterogeneous pool are needed.

    ``pool_caps`` lists the available bins, largest first (using the largest
    ones is never worse).  The bound is the smallest ``n`` whose ``n`` largest
    bins hold the total load, hold the largest item, and number at least the
    largest anti-affinity group.
    """
    caps = np.sort(np.asarray(pool_caps, dtype=np.int64))[::-1]
    s = np.asarray(sizes, dtype=np.int64)
    total = int(s.sum())
    cum = np.cumsum(caps)
    n_total = int(np.searchsorted(cum, total, side="left")) + 1 if total > 0 else 0
    n_group = group_bound(groups)
    best = max(n_total, n_group, 1 if s.size and s.max() > 0 else 0)
    if best == n_group and n_group > n_total:
        return best, "largest anti-affinity group (task + standbys on distinct instances)"
    return best, "total load <= sum of the n largest capacities"


# --------------------------------------------------------------------------- greedy packings


def _greedy(
    sizes: IntArray,
    residual: IntArray,
    groups: IntArray | None,
    best_fit: bool,
    all_open: bool = False,
    forbidden: dict[int, set[int]] | None = None,
) -> IntArray | None:
    """Place items (largest first) into bins of capacity ``residual``; ``None`` if one does not fit.

    First fit takes the first bin that holds the item.  Best fit takes the
    fullest *open* bin that holds it, else opens the first that does; with
    ``all_open`` every bin counts as open.  ``forbidden`` maps an anti-affinity
    group to bins that already hold one of its items.
    """
    s = np.asarray(sizes, dtype=np.int64)
    res = np.array(residual, dtype=np.int64, copy=True)
    out = np.full(s.size, -1, dtype=np.int64)
    used = {g: set(b) for g, b in (forbidden or {}).items()}
    opened = np.full(res.size, all_open, dtype=bool)
    # Bins are scanned in a prefix window just past the highest bin used: both rules pick the first
    # fitting bin or an opened one, all inside that prefix when one fits there (the same choice as a
    # full scan), so the pool of one bin per item (planning) costs O(bins used) per item, not O(items).
    top = max((b for bs in used.values() for b in bs), default=-1)
    for i in np.argsort(-s, kind="stable").tolist():
        g = -1 if groups is None else int(groups[i])
        w = res.size if all_open else min(res.size, max(64, 2 * (top + 1)))
        while True:
            ok = res[:w] >= s[i]
            if g >= 0 and used.get(g):
                ok[[b for b in used[g] if b < w]] = False
            if ok.any() or w == res.size:
                break
            w = res.size
        if not ok.any():
            return None
        if best_fit:
            cand = np.flatnonzero(ok & opened[:w])
            j = int(cand[np.argmin(res[cand])]) if cand.size else int(np.argmax(ok))
            opened[j] = True
        else:
            j = int(np.argmax(ok))
        out[i] = j
        top = max(top, j)
        res[j] -= s[i]
        if g >= 0:
            used.setdefault(g, set()).add(j)
    return out


def first_fit_decreasing(sizes: IntArray, caps: IntArray, groups: IntArray | None = None) -> IntArray | None:
    """First-fit decreasing into bins ``caps`` (opened in the order given).

    Returns the bin of every item, or ``None`` when some item finds no bin.
    The number of bins used is ``len(set(result))``.

    Examples
    --------
    >>> first_fit_decreasing(np.array([5, 4, 3, 3]), np.array([8, 8, 8])).tolist()
    [0, 1, 0, 1]
    """
    return _greedy(sizes, caps, groups, best_fit=False)


def best_fit_decreasing(sizes: IntArray, caps: IntArray, groups: IntArray | None = None) -> IntArray | None:
    """Best-fit decreasing: each item (largest first) goes to the fullest bin that still holds it."""
    return _greedy(sizes, caps, groups, best_fit=True)


def pack_into(
    sizes: IntArray,
    residual: IntArray,
    groups: IntArray | None = None,
    forbidden: dict[int, set[int]] | None = None,
) -> IntArray | None:
    """Best-fit decreasing of ``sizes`` into bins with the given ``residual`` capacities.

    ``forbidden`` maps an anti-affinity group to bins that already hold one of
    its items.  Returns the bin of each item or ``None``.
    """
    return _greedy(sizes, residual, groups, best_fit=True, all_open=True, forbidden=forbidden)


def greedy_pack(sizes: IntArray, caps: IntArray, groups: IntArray | None = None) -> IntArray | None:
    """First-fit decreasing, else best-fit decreasing: the first of the two that packs every item.

    Parameters
    ----------
    sizes, caps
        Item sizes and bin capacities (integers).
    groups
        Anti-affinity group of each item (``-1``: none), or ``None``.

    Returns
    -------
    numpy.ndarray or None
        The bin of every item, or ``None`` when neither packs them all.

    Examples
    --------
    >>> greedy_pack(np.array([5, 4, 3, 3]), np.array([8, 8])).tolist()
    [0, 1, 0, 1]
    """
    for greedy in (first_fit_decreasing, best_fit_decreasing):
        b = greedy(sizes, caps, groups)
        if b is not None:
            return b
    return None


def pack_rest(sizes: IntArray, bins: IntArray, keep: npt.NDArray[np.bool_], caps: IntArray,
              groups: IntArray | None = None) -> IntArray | None:
    """Leave the ``keep`` items in their ``bins``; best-fit decreasing the others into the capacity left.

    Parameters
    ----------
    sizes
        Item sizes (integers).
    bins
        Bin of each item (only read where ``keep``).
    keep
        Boolean mask of the items that stay.
    caps
        Bin capacities.
    groups
        Anti-affinity group of each item (``-1``: none), or ``None``; an item
        never joins a bin holding a kept item of its group.

    Returns
    -------
    numpy.ndarray or None
        The new item -> bin map, or ``None`` when the others do not fit.

    Examples
    --------
    >>> pack_rest(np.array([4, 4, 3]), np.array([0, 1, 1]), np.array([True, True, False]), np.array([8, 6])).tolist()
    [0, 1, 0]
    """
    s = np.asarray(sizes, dtype=np.int64)
    b = np.asarray(bins, dtype=np.int64)
    loads = bin_loads(s[keep], b[keep], int(np.asarray(caps).size))
    forbidden: dict[int, set[int]] = {}
    if groups is not None:
        for i in np.flatnonzero(keep).tolist():
            g = int(groups[i])
            if g >= 0:
                forbidden.setdefault(g, set()).add(int(b[i]))
    rest = np.flatnonzero(~keep)
    placed = pack_into(s[rest], caps - loads, None if groups is None else groups[rest], forbidden)
    if placed is None:
        return None
    out = b.copy()
    out[rest] = placed
    return out


def lpt(sizes: IntArray, caps: IntArray, groups: IntArray | None = None) -> IntArray | None:
    """Longest processing time first: each item to the bin with the lowest utilisation after adding it.

    Ignores capacity (used to balance); respects anti-affinity groups.
    Returns ``None`` only when a group has more items than there are bins.
    """
    s = np.asarray(sizes, dtype=np.int64)
    c = np.asarray(caps, dtype=np.float64)
    load = np.zeros(c.size, dtype=np.float64)
    out = np.full(s.size, -1, dtype=np.int64)
    used: dict[int, set[int]] = {}
    for i in np.argsort(-s, kind="stable").tolist():
        util = (load + s[i]) / c
        g = -1 if groups is None else int(groups[i])
        if g >= 0 and used.get(g):
            util = util.copy()
            util[list(used[g])] = np.inf
        j = int(np.argmin(util))
        if not np.isfinite(util[j]):
            return None
        out[i] = j
        load[j] += s[i]
        if g >= 0:
            used.setdefault(g, set()).add(j)
    return out


def bin_loads(sizes: IntArray, bins: IntArray, n_bins: int) -> IntArray:
    """Load of each of ``n_bins`` bins under the item -> bin map ``bins``."""
    return np.bincount(np.asarray(bins), weights=np.asarray(sizes, dtype=np.float64), minlength=n_bins).astype(
        np.int64
    )


#: Most item pairs one round of :func:`improve_max_load` compares for a swap (about 0.1 s): two instances of
#: 50,000 items each were 2.5e9 pairs in one round, and the plan's time limit is only checked between rounds.
SWAP_CHECKS = 200_000


def improve_max_load(sizes: IntArray, caps: IntArray, bins: IntArray, groups: IntArray | None = None,
                     rounds: int = 2000, seconds: float = 3.0) -> IntArray:
    """Local search lowering the maximum utilisation: move or swap items off the most utilised bin.

    A simple, fast polish for instances too large for CP-SAT; never makes the
    maximum utilisation worse.
    """
    s = np.asarray(sizes, dtype=np.int64)
    c = np.asarray(caps, dtype=np.float64)
    b = np.array(bins, dtype=np.int64, copy=True)
    load = np.bincount(b, weights=s.astype(np.float64), minlength=c.size)
    members: list[list[int]] = [[] for _ in range(c.size)]
    for i, j in enumerate(b.tolist()):
        members[j].append(i)
    gbins: dict[int, set[int]] = {}
    if groups is not None:
        for i, g in enumerate(np.asarray(groups).tolist()):
            if g >= 0:
                gbins.setdefault(g, set()).add(int(b[i]))

    def grp(i: int) -> int:
        return -1 if groups is None else int(groups[i])

    stop = time.perf_counter() + seconds
    for _ in range(rounds):
        if time.perf_counter() > stop:
            break
        util = load / c
        h = int(np.argmax(util))
        top = util[h]
        done = False
        # Try moving one item from h to the bin where it lands lowest (below top).
        for i in sorted(members[h], key=lambda k: -s[k]):
            new = (load + s[i]) / c
            new[h] = np.inf
            g = grp(i)
            if g >= 0:
                for x in gbins.get(g, ()):
                    new[x] = np.inf
            j = int(np.argmin(new))
            if new[j] < top and (load[h] - s[i]) / c[h] < top:
                members[h].remove(i)
                members[j].append(i)
                load[h] -= s[i]
                load[j] += s[i]
                b[i] = j
                if g >= 0:
                    gbins[g].discard(h)
                    gbins[g].add(j)
                done = True
                break
        if done:
            continue
        # Try a swap of a bigger item on h with a smaller one elsewhere.
        order = np.argsort(util)
        checks = SWAP_CHECKS
        for j in order.tolist():
            if j == h or done:
                continue
            for i in members[h]:
                if done or checks <= 0:
                    break
                checks -= len(members[j])
                for k in members[j]:
                    d = s[i] - s[k]
                    if d <= 0:
                        continue
                    if (load[h] - d) / c[h] < top and (load[j] + d) / c[j] < top:
                        gi, gk = grp(i), grp(k)
                        if gi >= 0 and gi != gk and j in gbins.get(gi, ()):
                            continue
                        if gk >= 0 and gk != gi and h in gbins.get(gk, ()):
                            continue
                        members[h].remove(i)
                        members[j].remove(k)
                        members[h].append(k)
                        members[j].append(i)
                        load[h] -= d
                        load[j] += d
                        b[i], b[k] = j, h
                        if gi >= 0 and gi != gk:
                            gbins[gi].discard(h)
                            gbins[gi].add(j)
                        if gk >= 0 and gk != gi:
                            gbins[gk].discard(j)
                            gbins[gk].add(h)
                        done = True
                        break
            if j != h and (len(members[h]) * len(members[j]) > 20000 or checks <= 0):
                break  # keep each round cheap on huge bins (two bins of 50,000 items: 2.5e9 pairs in one round)
        if not done:
            break
    return b




__all__ = [
    "SAT_WORKERS",
    "SWAP_CHECKS",
    "FloatArray",
    "IntArray",
    "SatOutcome",
    "add_anti_affinity",
    "best_fit_decreasing",
    "bin_loads",
    "first_fit_decreasing",
    "greedy_pack",
    "group_bound",
    "identical_bound",
    "improve_max_load",
    "item_vars",
    "l1_bound",
    "l2_bound",
    "lpt",
    "minimise",
    "new_solver",
    "pack_into",
    "pack_rest",
    "pool_bound",
    "read_bins",
    "sat_min_max",
    "sat_pack",
    "sat_parameters",
    "status_name",
]
