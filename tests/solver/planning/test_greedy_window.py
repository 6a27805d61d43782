"""The greedy packings scan a window of bins past the highest one used: the same packing as a full scan."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.planning.binpacking import _greedy


def _full_scan(sizes, residual, groups, best_fit, all_open=False, forbidden=None):  # the rule, without the window
    s = np.asarray(sizes, dtype=np.int64)
    res = np.array(residual, dtype=np.int64, copy=True)
    out = np.full(s.size, -1, dtype=np.int64)
    used = {g: set(b) for g, b in (forbidden or {}).items()}
    opened = np.full(res.size, all_open, dtype=bool)
    for i in np.argsort(-s, kind="stable").tolist():
        ok = res >= s[i]
        g = -1 if groups is None else int(groups[i])
        if g >= 0 and used.get(g):
            ok[list(used[g])] = False
        if not ok.any():
            return None
        if best_fit:
            cand = np.flatnonzero(ok & opened)
            j = int(cand[np.argmin(res[cand])]) if cand.size else int(np.argmax(ok))
            opened[j] = True
        else:
            j = int(np.argmax(ok))
        out[i] = j
        res[j] -= s[i]
        if g >= 0:
            used.setdefault(g, set()).add(j)
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=120), st.lists(st.integers(0, 60), max_size=200),
       st.booleans(), st.booleans(), st.integers(0, 6))
def test_window_gives_the_full_scan_packing(sizes, caps, best_fit, all_open, n_groups):
    groups = np.arange(len(sizes)) % n_groups if n_groups else None
    s, c = np.array(sizes, dtype=np.int64), np.array(caps, dtype=np.int64)
    got = _greedy(s, c, groups, best_fit, all_open)
    want = _full_scan(s, c, groups, best_fit, all_open)
    assert (got is None and want is None) or (got is not None and want is not None and got.tolist() == want.tolist())


def test_a_pool_of_one_bin_per_item_is_linear() -> None:
    sizes = np.full(200_000, 3, dtype=np.int64)
    caps = np.full(200_000, 3000, dtype=np.int64)  # planning's pool: today's members plus one bin per item
    t0 = time.perf_counter()
    out = _greedy(sizes, caps, None, best_fit=False)
    assert out is not None and int(out.max()) == 199
    assert time.perf_counter() - t0 < 30  # a full scan per item took hours
