"""The minimum instance count and its proof: bounds, greedy packings, CP-SAT infeasibility.

See :mod:`solver.planning.plan` (*Minimum*) for the model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from solver.errors import InfeasibleError
from solver.planning import binpacking as bp
from solver.planning.binpacking import IntArray
from solver.planning.planner import Planner


@dataclass
class Minimum:
    """The minimum instance count and how it was shown."""

    min_instances: int | None
    lower_bound: int
    bound_name: str
    upper_bound: int
    proof_kind: str
    proof: str
    bins: IntArray | None
    feasible: dict[int, bool] = field(default_factory=dict)
    seconds: float = 0.0


def greedy_count(pl: Planner, best_fit: bool) -> tuple[int, IntArray | None]:
    """Instances first-fit (or best-fit) decreasing opens, in pool order.

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).
    best_fit
        Best fit instead of first fit.

    Returns
    -------
    tuple
        ``(instances opened, bins)``; ``(0, None)`` when no packing is found.
    """
    caps = pl.prefix_caps(pl.m + max(pl.items.n_items, 1))
    fn = bp.best_fit_decreasing if best_fit else bp.first_fit_decreasing
    bins = fn(pl.sizes_up, caps, pl.items.groups)
    if bins is None:
        return 0, None
    return (int(bins.max()) + 1 if bins.size else 0), bins


def lower_bound(pl: Planner) -> tuple[int, str]:
    """Best lower bound on the instance count (valid for the real data).

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).

    Returns
    -------
    tuple
        ``(bound, name of the bound that gives it)``.
    """
    s = pl.sizes_lo
    g = pl.items.groups
    if pl.items.n_items == 0:
        return 0, "no load"
    if pl.identical:
        cap = int(pl.pool_caps_lo[0])
        return bp.identical_bound(s, cap, g)
    pool = pl.prefix_caps(pl.m + pl.items.n_items, proof=True)
    lb, name = bp.pool_bound(s, pool, g)
    # Items too large for the smaller instances need one of the larger ones each (at most one per instance).
    return lb, name


def feasible(pl: Planner, n: int, time_limit: float | None,
             hint: IntArray | None = None) -> tuple[str, IntArray | None]:
    """Is there a packing into the ``n`` best instances? ``(status, bins)``: ``yes``/``no``/``unknown``.

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).
    n
        Number of instances.
    time_limit
        Seconds for each CP-SAT model.
    hint
        A packing to start CP-SAT from, or ``None``.

    Returns
    -------
    tuple
        ``("yes", bins)``, ``("no", None)`` (proven) or ``("unknown", None)``.
    """
    if n <= 0:
        return ("yes", np.zeros(0, dtype=np.int64)) if pl.items.n_items == 0 else ("no", None)
    caps = pl.prefix_caps(n)
    g = pl.items.groups
    b = bp.greedy_pack(pl.sizes_up, caps, g)
    if b is not None:
        return "yes", b
    if not pl.small(n):
        return "unknown", None
    out = bp.sat_pack(pl.sizes_up, caps, g, time_limit=time_limit, seed=pl.cfg.seed, hint=hint)
    if out.status == "optimal":
        return "yes", out.bins
    if out.status == "infeasible":
        if pl.ints.exact:
            return "no", None
        proof = bp.sat_pack(pl.sizes_lo, pl.prefix_caps(n, proof=True), g, time_limit=time_limit,
                            seed=pl.cfg.seed)
        return ("no", None) if proof.status == "infeasible" else ("unknown", None)
    return "unknown", None


def minimum(pl: Planner) -> Minimum:
    """Smallest feasible instance count with its proof (:mod:`solver.planning.plan`, *Minimum*).

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).

    Returns
    -------
    Minimum
        The minimum (best packing), the best lower bound, and how minimality
        was shown (``bound``, ``cp-sat`` or ``gap``).

    Raises
    ------
    solver.errors.InfeasibleError
        When no packing exists even with one instance per item.
    """
    t0 = time.perf_counter()
    lb, name = lower_bound(pl)
    if pl.items.n_items == 0:
        return Minimum(0, 0, name, 0, "bound", "nothing to assign: 0 instances", np.zeros(0, dtype=np.int64),
                       {0: True}, time.perf_counter() - t0)
    ub, bins = greedy_count(pl, best_fit=False)
    ub2, bins2 = greedy_count(pl, best_fit=True)
    if bins is None or (bins2 is not None and ub2 < ub):
        ub, bins = ub2, bins2
    if bins is None:
        raise InfeasibleError("no packing found even with one instance per item (anti-affinity groups larger "
                              "than the fleet?)")
    feas: dict[int, bool] = {ub: True}
    if ub > lb:
        # Greedy did not meet the bound: try to pack into fewer instances (local search, then CP-SAT).
        improved = _shrink(pl, bins, ub, lb)
        if improved is not None:
            ub, bins = improved
            feas[ub] = True
    proven = lb
    n = lb
    while n < ub:
        st, b = feasible(pl, n, pl.budget())
        if st == "yes":
            assert b is not None
            ub, bins = n, b
            feas[n] = True
            break
        if st == "no":
            feas[n] = False
            proven = n + 1
            n += 1
            continue
        break  # unknown: stop, report the gap
    if ub == lb:
        kind = "bound"
        proof = f"lower bound {name} = {lb} equals the instances of a packing found"
    elif proven == ub:
        kind = "cp-sat"
        proof = (f"CP-SAT proved {ub - 1} instances infeasible (status INFEASIBLE); "
                 f"best lower bound {name} = {lb}")
    else:
        kind = "gap"
        proof = (f"not proven within the time limit: best bound {proven} "
                 f"({name} = {lb}{', then CP-SAT infeasibility proofs' if proven > lb else ''}), "
                 f"best packing {ub} instances")
    return Minimum(ub, proven, name, ub, kind, proof, bins, feas,
                   time.perf_counter() - t0)


def _shrink(pl: Planner, bins: IntArray, ub: int, lb: int) -> tuple[int, IntArray] | None:
    """Try to empty the last instance of a greedy packing by moving its items into the others' slack."""
    best: tuple[int, IntArray] | None = None
    cur_bins, cur = bins.copy(), ub
    while cur > lb:
        caps = pl.prefix_caps(cur - 1)
        # Pack into cur - 1 instances: keep the first cur-1 bins' items, re-place the rest best fit.
        nb = bp.pack_rest(pl.sizes_up, cur_bins, cur_bins < cur - 1, caps, pl.items.groups)
        if nb is None:
            break
        cur_bins, cur = nb, cur - 1
        best = (cur, nb)
    return best
