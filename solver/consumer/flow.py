"""Exact min-cost flow engine for equal-size items (OR-Tools ``SimpleMinCostFlow``).

The network (see ``docs/algorithms.md, "The optimal solver"`` for a drawing)::

    class c --(stay, cap n_c)--> previous owner o --(levels)--> sink
    class c --(move, cap n_c)--> hub(E, racks) --> member m in E --(levels)--> sink

* A *class* is a set of interchangeable items (:mod:`solver.consumer.items`): same
  eligible members ``E``, same previous owner(s) and move cost, same replica
  racks.  Its supply is its item count.
* The *stay* arc goes straight to the previous owner and costs no move; the
  *move* arc costs the class's owned move cost and leads to one hub per
  eligible set (and rack signature), which fans out to every eligible member.
  The network has ``O(classes + sum |E|)`` arcs -- topics x members at most,
  never partitions x members.
* Balance: the ``k``-th item on a member costs ``2k - 1`` (the increase of
  ``k**2``), a convex cost whose total is the sum of squared loads.  By
  Frank & Murota (2020, "Discrete decreasing minimization"), on such
  integral flow (M-convex) sets the minimisers of the sum of squares are
  exactly the decreasingly-minimal ("most balanced") load vectors, which also
  minimise the maximum and maximise the minimum load.

Lexicographic stages are exact by cost scaling: every stage value is an
integer (sums of squares; move costs made integral by a power of ten; counts
of cross-rack topic-partitions) with a known range ``[0, U_i]`` over all
feasible flows, and stage ``i`` is multiplied by
``s_i = 1 + sum_{j > i} s_j U_j``.  A unit improvement of stage ``i`` then
outweighs any change of all later stages together, so a minimum of the
scaled sum is a lexicographic minimum.

Only a window of levels per member is built: a *bulk* arc (capacity
``lo``, unit cost ``2 lo - 1``, the chord of ``x**2`` below ``lo``) plus
unit arcs for levels ``lo + 1 .. hi``.  The bulk arc under-estimates ``x**2``
(up to a constant) and is exact for loads ``>= lo - 1``; the cap ``hi`` is a
restriction.  If the optimum of the windowed network has every load
``>= lo - 1`` and strictly below every artificial cap, it is optimal for the
full network (an inactive constraint of a convex problem can be dropped; the
under-estimator is tight at the solution).  Otherwise the window widens and
the solve repeats -- the answer is always certified, never guessed.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from ortools.graph.python import min_cost_flow

from solver.consumer.items import ItemClasses
from solver.errors import InfeasibleError
from solver.scaling import decimal_scale

CRITERIA = ("balance", "moves", "racks")

#: Largest total cost handed to OR-Tools (its cost-scaling multiplies unit costs by the node count).
COST_LIMIT = 2**62


@dataclass
class FlowOutcome:
    """Result of one min-cost flow solve.

    Attributes
    ----------
    flows
        ``(class, member, count)`` triples (stays first within a class).
    counts
        Items per member.
    sum_sq_items
        Sum over members of squared item counts.
    moved_cost_int
        Moved cost in integer units (original cost times ``move_scale``).
    move_scale
        Power of ten making move costs integral.
    cross_rack
        Cross-rack topic-partitions.
    solves
        Number of flow solves (window widenings + 1).
    n_nodes, n_arcs
        Size of the last network.
    seconds
        Wall time.
    """

    flows: list[tuple[int, int, int]]
    counts: np.ndarray
    sum_sq_items: int
    moved_cost_int: int
    move_scale: int
    cross_rack: int
    solves: int
    n_nodes: int
    n_arcs: int
    seconds: float
    info: dict[str, object] = field(default_factory=dict)


def water_fill(ic: ItemClasses) -> np.ndarray:
    """Greedy estimate of balanced item counts (smallest eligible sets first).

    Used only to centre the level windows; exactness never depends on it.
    """
    loads = np.zeros(ic.n_members, dtype=np.float64)
    per_set = np.bincount(ic.cls_elig, weights=ic.count, minlength=len(ic.eligsets))
    for e in np.argsort([len(s) for s in ic.eligsets], kind="stable").tolist():
        total = float(per_set[e])
        if total <= 0:
            continue
        members = ic.eligsets[e]
        cur = np.sort(loads[members])
        # level lam with sum(max(0, lam - cur)) == total
        csum = np.cumsum(cur)
        k = np.arange(1, cur.size + 1)
        lam_k = (total + csum) / k
        ok = np.nonzero(np.append(cur[1:], np.inf) >= lam_k)[0]
        lam = lam_k[ok[0]] if ok.size else lam_k[-1]
        loads[members] = np.maximum(loads[members], lam)
    return loads


def _scales(order: Sequence[str], ranges: Mapping[str, int]) -> dict[str, int]:
    """Lexicographic cost multipliers ``s_i = 1 + sum_{j>i} s_j U_j``."""
    scales: dict[str, int] = {}
    acc = 0
    for crit in reversed(order):
        s = acc + 1
        scales[crit] = s
        acc += s * ranges[crit]
    return scales


def _weighted_scales(weights: Mapping[str, float], unit: Mapping[str, float]) -> dict[str, int]:
    """Integer multipliers for a weighted sum (``weight * value`` in original units)."""
    coef = np.array([weights.get(c, 0.0) * unit[c] for c in CRITERIA], dtype=np.float64)
    nz = coef[coef > 0]
    if nz.size == 0:
        return dict.fromkeys(CRITERIA, 0)
    # normalise so the smallest positive coefficient is ~1, then make integral
    coef = coef / nz.min()
    sc = decimal_scale(coef, 4)
    return {c: round(float(v) * sc) for c, v in zip(CRITERIA, coef, strict=True)}


@dataclass
class _Network:
    """The window-independent part of the network: arcs out of classes and hubs, cost scales, the gate."""

    ic: ItemClasses
    racks: list[str | None]
    use_bal: bool
    use_rk: bool
    upper: np.ndarray  # most items per member
    mscale: int
    owned_int: np.ndarray
    cls_hub: np.ndarray
    nh: int
    st_c: np.ndarray  # stay arcs: class -> previous owner
    st_m: np.ndarray
    st_cost: np.ndarray
    hm_h: np.ndarray  # hub -> member arcs
    hm_m: np.ndarray
    hm_rk: np.ndarray
    ranges: dict[str, int]
    scales: dict[str, int]
    s_b: int
    s_m: int
    gate_cap: int  # -1: no move budget

    @property
    def sink(self) -> int:
        return self.ic.n_classes + self.nh + self.ic.n_members


def _network(ic: ItemClasses, member_racks: Sequence[str | None], order: Sequence[str],
             weights: Mapping[str, float] | None, load_unit: float, caps: np.ndarray | None,
             move_budget: int | None) -> _Network:
    """Step 1: stay arcs, one hub per (eligible set, rack signature), hub -> member arcs, stage scales."""
    nc = ic.n_classes
    use_bal = ("balance" in order) if weights is None else weights.get("balance", 0) > 0
    use_mv = ("moves" in order) if weights is None else weights.get("moves", 0) > 0
    use_rk = ("racks" in order) if weights is None else weights.get("racks", 0) > 0
    use_rk = use_rk and any(r is not None for r in member_racks) and any(
        s is not None for sig in ic.racksigs for s in sig
    )
    elig_sets = [set(e.tolist()) for e in ic.eligsets]
    elig_n = ic.eligible_count()
    upper = elig_n.copy() if caps is None else np.minimum(elig_n, caps)
    racks_of = list(member_racks)

    # integral move costs
    all_costs = np.array([c for own in ic.owners for _, c in own] + ic.owned_cost.tolist(), dtype=np.float64)
    mscale = decimal_scale(all_costs)
    owned_int = np.round(ic.owned_cost * mscale).astype(np.int64)

    # hubs: one per (eligible set, rack signature) -- racks only when they matter
    hub_key = (np.stack([ic.cls_elig, ic.racksig], axis=1) if use_rk
               else np.stack([ic.cls_elig, np.zeros(nc, dtype=np.int64)], axis=1))
    hubs, cls_hub = np.unique(hub_key, axis=0, return_inverse=True) if nc else (np.zeros((0, 2), np.int64),
                                                                                np.zeros(0, np.int64))
    cls_hub = cls_hub.reshape(-1)
    nh = hubs.shape[0]

    def rk(c: int, m: int) -> int:
        return ic.rack_cost(c, racks_of[m]) if use_rk else 0

    # stay arcs
    st_c: list[int] = []
    st_m: list[int] = []
    st_mv: list[int] = []
    st_rk: list[int] = []
    for c in range(nc):
        es = elig_sets[int(ic.cls_elig[c])]
        for o, oc in ic.owners[c]:
            if o in es:
                st_c.append(c)
                st_m.append(o)
                st_mv.append(int(owned_int[c]) - round(oc * mscale))
                st_rk.append(rk(c, o))
    # hub -> member arcs
    hm_h: list[np.ndarray] = []
    hm_m: list[np.ndarray] = []
    hm_rk: list[np.ndarray] = []
    rep_cls = np.zeros(nh, dtype=np.int64)
    rep_cls[cls_hub] = np.arange(nc)
    for h in range(nh):
        members = ic.eligsets[int(hubs[h, 0])]
        hm_h.append(np.full(members.size, h, dtype=np.int64))
        hm_m.append(members)
        if use_rk:
            c = int(rep_cls[h])
            hm_rk.append(np.array([rk(c, int(m)) for m in members.tolist()], dtype=np.int64))
        else:
            hm_rk.append(np.zeros(members.size, dtype=np.int64))

    # criterion ranges over all feasible flows (for the lexicographic scales)
    max_rk_cls = np.zeros(nc, dtype=np.int64)
    if use_rk:
        for c in range(nc):
            max_rk_cls[c] = max(ic.rack_cost(c, r) for r in set(racks_of))
    total = ic.total_items
    ranges = {
        "moves": int((ic.count * owned_int).sum()) if use_mv else 0,
        "racks": int((ic.count * max_rk_cls).sum()) if use_rk else 0,
        "balance": int(min(int((upper.astype(object) ** 2).sum()), total * total)) if use_bal else 0,
    }
    if weights is None:
        active = [c for c in order if {"balance": use_bal, "moves": use_mv, "racks": use_rk}[c]]
        scales = _scales(active, ranges)
    else:
        unit = {"balance": load_unit**2, "moves": 1.0 / mscale, "racks": 1.0}
        scales = _weighted_scales(weights, unit)
    s_b = scales.get("balance", 0) if use_bal else 0
    s_m = scales.get("moves", 0) if use_mv else 0
    s_r = scales.get("racks", 0) if use_rk else 0

    gate_cap = -1
    if move_budget is not None:
        costs_owned = set(owned_int[owned_int > 0].tolist())
        if nh > 1 or len(costs_owned) > 1:
            raise ValueError("move budget needs one hub and equal move costs")
        gate_cap = move_budget // costs_owned.pop() if costs_owned else 0

    def arr(v: Sequence[int]) -> np.ndarray:
        return np.array(v, dtype=np.int64)

    hm_rk_a = np.concatenate(hm_rk) if hm_rk else np.zeros(0, np.int64)
    return _Network(ic, racks_of, use_bal, use_rk, upper, mscale, owned_int, cls_hub, nh, arr(st_c), arr(st_m),
                    s_m * arr(st_mv) + s_r * arr(st_rk),
                    np.concatenate(hm_h) if hm_h else np.zeros(0, np.int64),
                    np.concatenate(hm_m) if hm_m else np.zeros(0, np.int64), s_r * hm_rk_a,
                    ranges, scales, s_b, s_m, gate_cap)


def _solve_windowed(net: _Network, max_solves: int) -> tuple[np.ndarray, int, int]:
    """Step 2: solve with a window of balance levels per member, widening it until the answer is certified.

    Returns ``(arc flows, solves, arcs)``; the flows start with the stay, move and hub arcs of ``net``.
    """
    ic = net.ic
    n, nc, nh = ic.n_members, ic.n_classes, net.nh
    total = ic.total_items
    upper, s_b, sink = net.upper, net.s_b, net.sink
    est = water_fill(ic) if net.use_bal else np.zeros(n)
    margin = np.full(n, 2, dtype=np.int64)
    lo = np.maximum(0, np.floor(est).astype(np.int64) - margin)
    hi = np.minimum(upper, np.ceil(est).astype(np.int64) + margin)
    lo = np.minimum(lo, hi)
    if not net.use_bal:
        lo[:] = 0
        hi = upper.copy()
    supplies = np.zeros(sink + 1, dtype=np.int64)
    supplies[:nc] = ic.count
    supplies[sink] = -total
    n_st = net.st_c.size
    solves = 0
    while True:
        solves += 1
        # member -> sink arcs: bulk (chord below lo) + one arc per level lo+1..hi
        bulk_m = np.nonzero(lo > 0)[0]
        width = hi - lo
        lvl_m = np.repeat(np.arange(n), width)
        starts = np.repeat(np.cumsum(width) - width, width)
        lvl_k = np.repeat(lo, width) + (np.arange(lvl_m.size) - starts) + 1
        base = 0
        if net.use_bal:
            # every flow sends all items into the sink, so one constant off every member->sink arc
            # changes all costs equally; it keeps the numbers small (level costs near the window)
            cand = np.concatenate([2 * lo[bulk_m] - 1, 2 * lvl_k - 1])
            base = int(cand.min()) if cand.size else 0
            bulk_cost = s_b * (2 * lo[bulk_m] - 1 - base)
            lvl_cost = s_b * (2 * lvl_k - 1 - base)
            lvl_cap = np.ones(lvl_m.size, dtype=np.int64)
        else:
            # no balance criterion: one arc per member with its cap
            bulk_m = np.zeros(0, dtype=np.int64)
            bulk_cost = np.zeros(0, dtype=np.int64)
            lvl_m = np.arange(n)
            lvl_cost = np.zeros(n, dtype=np.int64)
            lvl_cap = upper.astype(np.int64)
        gate = sink + 1
        move_heads = nc + net.cls_hub
        if net.gate_cap >= 0:
            move_heads = np.where(net.owned_int > 0, gate, move_heads)
        tails = np.concatenate([net.st_c, np.arange(nc, dtype=np.int64), nc + net.hm_h, nc + nh + bulk_m,
                                nc + nh + lvl_m])
        heads = np.concatenate([nc + nh + net.st_m, move_heads, nc + nh + net.hm_m,
                                np.full(bulk_m.size, sink, dtype=np.int64), np.full(lvl_m.size, sink, dtype=np.int64)])
        caps_a = np.concatenate([ic.count[net.st_c], ic.count, np.full(net.hm_h.size, total, dtype=np.int64),
                                 lo[bulk_m], lvl_cap])
        costs = np.concatenate([net.st_cost, net.s_m * net.owned_int, net.hm_rk, bulk_cost, lvl_cost]).astype(np.int64)
        if net.gate_cap >= 0:
            tails = np.append(tails, gate)
            heads = np.append(heads, nc)  # the single hub
            caps_a = np.append(caps_a, net.gate_cap)
            costs = np.append(costs, 0).astype(np.int64)
        max_cost = int(np.abs(costs).max()) if costs.size else 0
        # total cost bound: later stages' ranges plus the balance cost the windowed network can reach
        lo_o = lo.astype(object)
        hi_o = hi.astype(object)
        win_f = int((lo_o * (2 * lo_o - 1) + hi_o**2 - lo_o**2 - base * hi_o).sum()) if net.use_bal else 0
        total_bound = s_b * win_f + sum(net.scales[c] * net.ranges[c] for c in net.scales if c != "balance")
        if max_cost * (sink + 2) >= COST_LIMIT or total_bound >= COST_LIMIT:
            raise InfeasibleError(
                "unsupported: the exact lexicographic cost scaling of this instance exceeds 64-bit "
                "integers; use fewer stages or a weighted objective"
            )
        mcf = min_cost_flow.SimpleMinCostFlow()
        mcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps_a, costs)
        if net.gate_cap >= 0:
            mcf.set_nodes_supplies(np.arange(sink + 2), np.append(supplies, 0))
        else:
            mcf.set_nodes_supplies(np.arange(sink + 1), supplies)
        status = mcf.solve()
        if status != mcf.OPTIMAL:
            if status == mcf.INFEASIBLE and bool(np.any(hi < upper)):
                margin *= 4
                hi = upper.copy() if margin.max() > total else np.minimum(upper, hi + margin)
                continue
            if status == mcf.INFEASIBLE:
                raise InfeasibleError("no assignment satisfies the member capacities")
            raise InfeasibleError(f"min-cost flow failed with status {status}")
        flow = mcf.flows(np.arange(tails.size))
        off_bulk = n_st + nc + net.hm_h.size
        y = np.zeros(n, dtype=np.int64)
        np.add.at(y, bulk_m, flow[off_bulk:off_bulk + bulk_m.size])
        np.add.at(y, lvl_m, flow[off_bulk + bulk_m.size:off_bulk + bulk_m.size + lvl_m.size])
        if not net.use_bal:
            return flow, solves, int(tails.size)
        # certified when every load is within the under-estimator's exact range and below every artificial cap
        low_fail = (lo > 0) & (y < lo - 1)
        high_fail = (hi < upper) & (y >= hi)
        if not (low_fail.any() or high_fail.any()):
            return flow, solves, int(tails.size)
        if solves >= max_solves:
            raise InfeasibleError("flow window did not converge (internal limit)")
        margin = np.where(low_fail | high_fail, margin * 4, margin)
        lo = np.where(low_fail, np.maximum(0, y - margin), lo)
        hi = np.where(high_fail, np.minimum(upper, y + margin), hi)
        lo = np.minimum(lo, hi)


def _disaggregate(net: _Network, flow: np.ndarray) -> list[tuple[int, int, int]]:
    """Step 3: ``(class, member, count)`` triples -- stays, then hub flows paired in class / member order."""
    nc = net.ic.n_classes
    n_st = net.st_c.size
    triples: list[tuple[int, int, int]] = []
    for c, m, f in zip(net.st_c.tolist(), net.st_m.tolist(), flow[:n_st].tolist(), strict=True):
        if f:
            triples.append((c, m, int(f)))
    fin = flow[n_st:n_st + nc]
    fout = flow[n_st + nc:n_st + nc + net.hm_h.size]
    for h in range(net.nh):
        cls = np.nonzero((net.cls_hub == h) & (fin > 0))[0]
        if cls.size == 0:
            continue
        sel = np.nonzero((net.hm_h == h) & (fout > 0))[0]
        cin = fin[cls]
        mout = fout[sel]
        mem = net.hm_m[sel]
        bounds = np.union1d(np.cumsum(cin), np.cumsum(mout))
        seg_start = np.concatenate(([0], bounds[:-1]))
        seg_len = bounds - seg_start
        ci = np.searchsorted(np.cumsum(cin), seg_start, side="right")
        mi = np.searchsorted(np.cumsum(mout), seg_start, side="right")
        for a, b, k in zip(cls[ci].tolist(), mem[mi].tolist(), seg_len.tolist(), strict=True):
            if k:
                triples.append((a, b, k))
    return triples


def solve_flow(
    ic: ItemClasses,
    member_racks: Sequence[str | None],
    *,
    order: Sequence[str] = CRITERIA,
    weights: Mapping[str, float] | None = None,
    load_unit: float = 1.0,
    caps: np.ndarray | None = None,
    move_budget: int | None = None,
    max_solves: int = 64,
) -> FlowOutcome:
    """Solve the aggregated assignment problem exactly by min-cost flow.

    Three steps: the network (:func:`_network`), the windowed solve certified
    against the full network (:func:`_solve_windowed`), and the flows back as
    class counts per member (:func:`_disaggregate`).

    Parameters
    ----------
    ic
        Item classes; every item must have the same load (not checked here).
    member_racks
        Rack of each member (``None`` if unknown).
    order
        Lexicographic order of criteria from :data:`CRITERIA`; criteria left
        out are not optimised.
    weights
        Instead of ``order``: minimise ``sum(weights[c] * value_c)`` where
        balance is the sum of squared loads (load = items x ``load_unit``),
        moves the moved cost and racks the cross-rack count.
    load_unit
        Load of one item per unit of member capacity (weighted mode only).
    caps
        Optional hard upper bound on the item count of each member.
    move_budget
        Optional hard cap on the moved cost (integer units of ``move_scale``).
        Exact only when every class goes to one hub and all previously owned
        items have the same move cost (the move arcs then pass one gate arc
        of capacity ``budget // cost``); raises ``ValueError`` otherwise.
    max_solves
        Safety limit on window widenings.

    Returns
    -------
    FlowOutcome

    Raises
    ------
    InfeasibleError
        When no flow exists (member caps too small) or the exact cost scaling
        would overflow 64-bit integers.
    """
    t0 = time.perf_counter()
    net = _network(ic, member_racks, order, weights, load_unit, caps, move_budget)
    flow, solves, n_arcs = _solve_windowed(net, max_solves)
    triples = _disaggregate(net, flow)
    counts = np.zeros(ic.n_members, dtype=np.int64)
    moved = 0
    cross = 0
    owner_cost = [dict(o) for o in ic.owners]
    for c, m, k in triples:
        counts[m] += k
        moved += k * (int(net.owned_int[c]) - round(owner_cost[c].get(m, 0.0) * net.mscale))
        cross += k * ic.rack_cost(c, net.racks[m])
    return FlowOutcome(
        flows=triples,
        counts=counts,
        sum_sq_items=int((counts.astype(object) ** 2).sum()),
        moved_cost_int=moved,
        move_scale=net.mscale,
        cross_rack=cross,
        solves=solves,
        n_nodes=net.sink + 1,
        n_arcs=n_arcs,
        seconds=time.perf_counter() - t0,
        info={"scales": dict(net.scales), "hubs": net.nh, "classes": ic.n_classes},
    )
