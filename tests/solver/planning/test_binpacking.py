"""Bin-packing helpers of the planner: bounded work per improvement round."""

from __future__ import annotations

import time

import numpy as np

from solver.planning import binpacking as bp


def test_one_improvement_round_on_two_huge_bins_is_bounded() -> None:
    """Was: the swap search compared every item pair of the busiest bin and the next one before its size guard
    (two bins of 50,000 items: 2.5e9 pairs, minutes), and the plan's time limit is checked between rounds only."""
    # loads differ by 1 and every item is 2 or 3: no move and no swap helps, so the search sees every pair
    sizes = np.full(100_000, 2, dtype=np.int64)
    sizes[0] = 3
    caps = np.array([10**9, 10**9], dtype=np.int64)
    bins = np.repeat([0, 1], 50_000).astype(np.int64)
    t0 = time.perf_counter()
    out = bp.improve_max_load(sizes, caps, bins, None)
    assert time.perf_counter() - t0 < 20
    loads = np.bincount(out, weights=sizes, minlength=2)
    before = np.bincount(bins, weights=sizes, minlength=2)
    assert loads.max() <= before.max() and loads.sum() == before.sum()
