"""Best balance on ``n`` instances: the smallest maximum utilisation within capacity, and its bound.

See :mod:`solver.planning.plan` (*Per n*) for the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.planning import binpacking as bp
from solver.planning.binpacking import FloatArray, IntArray
from solver.planning.config import EPS
from solver.planning.planner import Planner, real_caps


@dataclass
class Balance:
    """Best-balanced assignment on ``n`` instances."""

    status: str
    max_utilisation: float | None
    bound: float | None
    bins: IntArray | None
    loads: FloatArray | None


def balance(pl: Planner, n: int) -> Balance:
    """Minimise the maximum utilisation on the ``n`` best instances (within capacity).

    CP-SAT when the model is small enough, else longest-processing-time first
    plus local search with the continuous bound.  Utilisations are computed
    from real loads; the bound is valid for the real data.

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).
    n
        Number of instances (the ``n`` best of the pool).

    Returns
    -------
    Balance
        Status (``optimal`` / ``feasible`` / ``infeasible`` / ``unknown``), the
        best maximum utilisation, its lower bound, bins and per-instance loads.
    """
    items = pl.items
    if items.n_items == 0:
        return Balance("optimal", 0.0, 0.0, np.zeros(0, dtype=np.int64), np.zeros(n))
    caps = pl.prefix_caps(n)
    caps_real = caps.astype(np.float64)
    s = pl.sizes_up
    g = items.groups
    lpt = bp.lpt(s, caps, g)
    if lpt is not None:
        lpt = bp.improve_max_load(s, caps, lpt, g)
    # Continuous bound: total over total capacity, the biggest item over the biggest instance.
    lo_caps = pl.prefix_caps(n, proof=True).astype(np.float64)
    bound = max(float(pl.sizes_lo.sum()) / float(lo_caps.sum()), float(pl.sizes_lo.max()) / float(lo_caps.max()))
    best_bins = lpt
    status = "feasible"
    if pl.small(n):
        out = bp.sat_min_max(s, caps, g, time_limit=pl.budget(), seed=pl.cfg.seed, hint=lpt)
        if out.status == "infeasible":
            return Balance("infeasible", None, None, None, None)
        if out.bins is not None:
            best_bins = _better(s, caps_real, best_bins, out.bins)
            status = out.status
            if out.bound is not None:
                b = out.bound / float(caps[0]) if pl.identical else (out.bound - 1) / 10 ** 6
                if pl.ints.exact:
                    bound = max(bound, b)
    if best_bins is None:
        return Balance("unknown", None, bound, None, None)
    loads_raw = np.bincount(best_bins, weights=items.raw, minlength=n)
    fcaps = real_caps(pl, n)
    util = float((loads_raw / fcaps).max())
    if util > 1 + EPS:
        return Balance("infeasible" if status == "optimal" else "unknown", None, bound, None, None)
    if status == "feasible" and util <= bound + 1e-12:
        status = "optimal"
    if status == "optimal":
        bound = util
    return Balance(status, util, min(bound, util), best_bins, loads_raw / items.divisor)


def _better(s: IntArray, caps: FloatArray, a: IntArray | None, b: IntArray) -> IntArray:
    if a is None:
        return b
    ua = (np.bincount(a, weights=s.astype(np.float64), minlength=caps.size) / caps).max()
    ub = (np.bincount(b, weights=s.astype(np.float64), minlength=caps.size) / caps).max()
    return a if ua <= ub else b
