"""Greedy move plans: cheap assignments within capacity that keep much of today's state in place.

The warm starts of :func:`solver.planning.moves.fewest_moves` and its answer
when CP-SAT is out of reach: keep what fits where it is, sticky decreasing, and
fresh packings relabelled onto the members that keep the most.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from solver.planning import binpacking as bp
from solver.planning.binpacking import FloatArray, IntArray
from solver.planning.planner import Fleet, Planner


def keep_values(pl: Planner, fleet: Fleet, caps: IntArray, stage: str) -> FloatArray:
    """Upper bound per today's member on the (state or partitions) it can keep: fractional knapsack.

    Parameters
    ----------
    pl
        The planning run.
    fleet
        The instances of the plan (unused by the bound itself).
    caps
        Integer capacity of each of today's members (scaled like ``pl.sizes_lo``).
    stage
        ``"state"`` (``move_costs``) or ``"parts"`` (partitions).

    Returns
    -------
    numpy.ndarray
        Per member index, the most it can keep where it is within its capacity.
    """
    items = pl.items
    vals = np.zeros(pl.m, dtype=np.float64)
    per: dict[int, list[tuple[float, float]]] = {}
    for i, h in enumerate(items.held):
        for j, (p, s) in h.items():
            per.setdefault(j, []).append((float(s if stage == "state" else p), float(pl.sizes_lo[i])))
    for j, lst in per.items():
        cap = float(caps[j])
        lst.sort(key=lambda vw: -(vw[0] / vw[1]) if vw[1] > 0 else -math.inf)
        tot = 0.0
        for v, w in lst:
            if w <= cap:
                tot += v
                cap -= w
            else:
                tot += v * cap / w if w > 0 else v
                break
        vals[j] = tot
    return vals


def greedy_moves(pl: Planner, fleet: Fleet) -> tuple[tuple[int, ...], IntArray] | None:
    """Keep what fits where it is, re-place the rest best fit (the warm start and large-instance answer).

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).
    fleet
        The instances available for the plan (:meth:`Planner.fleet`).

    Returns
    -------
    tuple or None
        ``(kept members, fleet column of every item)`` of the cheapest greedy
        plan, or ``None`` when none fits.
    """
    caps_all = pl.int_caps(fleet.caps)
    col = {j: c for c, j in enumerate(fleet.members)}
    if fleet.choose < len(fleet.members):
        vals = keep_values(pl, fleet, pl.int_caps(pl.member_caps), "state")
        vals2 = keep_values(pl, fleet, pl.int_caps(pl.member_caps), "parts")
        order = sorted(range(pl.m), key=lambda j: (-vals[j], -vals2[j], -pl.member_caps[j], j))
        # Prefer large instances too so that the load still fits; try a few choices.
        choices = [sorted(order[: fleet.choose]), sorted(pl.pool_order[: fleet.choose])]
    else:
        choices = [list(fleet.members)]
    found: list[tuple[tuple[int, ...], IntArray]] = []
    for place in (_greedy_on, _sticky_decreasing):  # each on the first choice of kept members where it fits
        for kept in choices:
            res = place(pl, kept, caps_all, col)
            if res is not None:
                found.append((tuple(kept), res))
                break
    # Also: pack from scratch (greedy, then the balanced packing) and give each packed instance to the
    # member that keeps the most of it (an assignment problem) -- robust when the fleet is tight.
    for packing in _fresh_packings(pl, fleet.choose):
        r = _relabel(pl, fleet, packing, caps_all)
        if r is not None:
            found.append(r)
    if not found:
        return None
    return min(found, key=lambda kr: _cost_of(pl, fleet, kr[1]))


def _cost_of(pl: Planner, fleet: Fleet, cols: IntArray) -> tuple[float, int]:
    owner = np.asarray(fleet.members, dtype=np.int64)[cols]
    tot_s, tot_p = 0.0, 0
    for i in range(pl.items.n_items):
        p, s = pl.items.cost(i, int(owner[i]))
        tot_s += s
        tot_p += p
    return round(tot_s, 9), tot_p


def _fresh_packings(pl: Planner, n: int) -> list[IntArray]:
    """Packings of every item into ``n`` identical-or-best instances (bins 0..n-1), ignoring today's owners."""
    caps = pl.prefix_caps(n)
    out = []
    for fn in (bp.first_fit_decreasing, bp.best_fit_decreasing):
        b = fn(pl.sizes_up, caps, pl.items.groups)
        if b is not None:
            out.append(b)
    return out


def _relabel(pl: Planner, fleet: Fleet, packing: IntArray, caps_all: IntArray
             ) -> tuple[tuple[int, ...], IntArray] | None:
    """Give packed bin ``b`` to fleet instance ``c`` maximising the (state, partitions) that stay put."""
    from ortools.graph.python import linear_sum_assignment

    items = pl.items
    k = len(fleet.members)
    nb = int(packing.max()) + 1 if packing.size else 0
    if nb > k:
        return None
    col = {j: c for c, j in enumerate(fleet.members)}
    sc = pl.state_scale
    vs = np.zeros((k, k), dtype=np.float64)
    vp = np.zeros((k, k), dtype=np.int64)
    for i, h in enumerate(items.held):
        b = int(packing[i])
        for j, (p, sv) in h.items():
            c = col.get(j)
            if c is not None:
                vs[b, c] += sv
                vp[b, c] += p
    loads = np.bincount(packing, weights=pl.sizes_up.astype(np.float64), minlength=k)
    big = int(vp.sum()) + 1
    cost = -(np.round(vs * sc).astype(np.int64) * big + vp)
    lsa = linear_sum_assignment.SimpleLinearSumAssignment()
    for b in range(k):
        for c in range(k):
            if b >= nb or loads[b] <= caps_all[c]:  # dummy bins (b >= nb) fit anywhere
                lsa.add_arc_with_cost(b, c, int(cost[b, c]) if b < nb else 0)
    if lsa.solve() != lsa.OPTIMAL:
        return None
    mate = np.array([lsa.right_mate(b) for b in range(k)], dtype=np.int64)
    cols = mate[packing]
    kept = tuple(sorted(fleet.members[int(c)] for c in mate[:nb]))
    if len(kept) < fleet.choose:  # pad with unused members (they stay, empty)
        rest = [j for j in fleet.members if j not in set(kept)]
        kept = tuple(sorted(kept + tuple(rest[: fleet.choose - len(kept)])))
    return kept, cols


def _sticky_decreasing(pl: Planner, kept: Sequence[int], caps_all: IntArray, col: dict[int, int]) -> IntArray | None:
    """Largest item first: stay with today's owner when it is kept and has room, else best fit elsewhere."""
    items = pl.items
    s = pl.sizes_up
    kept_cols = np.asarray([col[j] for j in kept], dtype=np.int64)
    res = np.full(caps_all.size, -1, dtype=np.int64)
    res[kept_cols] = caps_all[kept_cols]
    owner = np.full(items.n_items, -1, dtype=np.int64)
    g = items.groups
    used: dict[int, set[int]] = {}
    for i in np.argsort(-s, kind="stable").tolist():
        gi = -1 if g is None else int(g[i])
        bad = used.get(gi, set()) if gi >= 0 else set()
        home = [col[j] for j, _ in sorted(items.held[i].items(), key=lambda kv: (-kv[1][1], -kv[1][0]))
                if j in col]
        c = next((h for h in home if res[h] >= s[i] and h not in bad), -1)
        if c < 0:
            ok = res >= s[i]
            if bad:
                ok[list(bad)] = False
            if not ok.any():
                return None
            cand = np.flatnonzero(ok)
            c = int(cand[np.argmin(res[cand])])
        owner[i] = c
        res[c] -= int(s[i])
        if gi >= 0:
            used.setdefault(gi, set()).add(c)
    return owner


def _greedy_on(pl: Planner, kept: Sequence[int], caps_all: IntArray, col: dict[int, int]) -> IntArray | None:
    items = pl.items
    s = pl.sizes_up
    kept_cols = [col[j] for j in kept]
    residual = {c: int(caps_all[c]) for c in kept_cols}
    owner = np.full(items.n_items, -1, dtype=np.int64)
    g = items.groups
    used: dict[int, set[int]] = {}
    # Items by how much state staying saves per unit of load.
    cand = []
    for i, h in enumerate(items.held):
        best = max(((sv, p, j) for j, (p, sv) in h.items() if j in col and col[j] in residual), default=None)
        if best is not None:
            cand.append((-(best[0] + 1e-9 * best[1]) / max(int(s[i]), 1), i, col[best[2]]))
    cand.sort()
    for _, i, c in cand:
        gi = -1 if g is None else int(g[i])
        if residual[c] >= s[i] and not (gi >= 0 and c in used.get(gi, ())):
            owner[i] = c
            residual[c] -= int(s[i])
            if gi >= 0:
                used.setdefault(gi, set()).add(c)
    rest = np.flatnonzero(owner < 0)
    if rest.size:
        res_arr = np.array([residual[c] for c in kept_cols], dtype=np.int64)
        forb = {gg: {kept_cols.index(c) for c in cs} for gg, cs in used.items()}
        placed = bp.pack_into(s[rest], res_arr, g[rest] if g is not None else None, forb)
        if placed is None:
            return None
        owner[rest] = np.asarray(kept_cols, dtype=np.int64)[placed]
    return owner
