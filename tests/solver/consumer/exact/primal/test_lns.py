"""Window re-solves and the moves search at a cap: never worse, always within the cap, deterministic."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.consumer.exact.bounds import max_load_bound, moves_bound
from solver.consumer.exact.primal import lns
from solver.consumer.exact.primal.data import Data
from solver.consumer.exact.primal.lns import Budget, fewer_moves, focused
from solver.consumer.exact.primal.search import Work, fewer_moves_at, lower_max_load, moved_cost, nl_max
from tests.solver.consumer.optimal_strategies import engine_data as _data
from tests.solver.consumer.optimal_strategies import instances

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(inst=instances(max_topics=3, max_partitions=8, max_members=5, weights=True, capacities=True,
                      move_costs=True), slack=st.sampled_from([0, 2, 10]))
def test_window_search_never_worse_and_within_the_cap(inst, slack):
    ic, sc, d = _data(inst)
    lb = max_load_bound(ic, sc.wint, sc.ratio)
    start = lower_max_load(d, lb, Work(1.0, deterministic=True))[0]
    cap = nl_max(d, start) * (100 + slack) // 100
    out = fewer_moves(d, start, cap, Budget(time.perf_counter() + 5, deterministic=True, windows=4))
    assert out.sum(axis=1).tolist() == ic.count.tolist()
    assert nl_max(d, out) <= cap
    assert moved_cost(d, out) <= moved_cost(d, start)
    assert moved_cost(d, out) * sc.move_unit >= moves_bound(ic, sc.wint, sc.ratio, sc.owned, sc.own, cap) * \
        sc.move_unit


@SETTINGS
@given(inst=instances(max_topics=3, max_partitions=8, max_members=5, weights=True, move_costs=True))
def test_moves_search_is_deterministic(inst):
    ic, sc, d = _data(inst)
    lb = max_load_bound(ic, sc.wint, sc.ratio)
    cap = lb * 11 // 10 + 1
    runs = [fewer_moves_at(d, cap, Work(0.5, deterministic=True), [], seed=3) for _ in range(2)]
    if runs[0] is None:
        assert runs[1] is None
        return
    assert (runs[0] == runs[1]).all()
    assert nl_max(d, runs[0]) <= cap


def test_focused_model_packs_orphans_into_the_exact_rooms():
    """Owners keep everything; two orphans of 3 and 2 fit only one way into rooms of 3 and 2."""
    d = Data(weights=[5, 6, 3, 2], counts=[1, 1, 1, 1], eligible=[[0, 1]] * 4, cost=[{0: 0}, {1: 0}, {}, {}],
             ratio=[1, 1], default_cost=[9, 9, 0, 0])
    x = focused(d, 8, Budget(time.perf_counter() + 5, deterministic=True, windows=4))
    assert x is not None and moved_cost(d, x) == 0 and nl_max(d, x) == 8


def test_patience_stops_after_that_many_idle_windows(monkeypatch):
    """Owner 0's two items of 5 meet a cap of 5: one must sit on member 1 and no window can do better, so the
    search runs its whole budget of windows without patience and stops after ``patience`` with it."""
    d = Data(weights=[5, 5], counts=[1, 1], eligible=[[0, 1]] * 2, cost=[{0: 0}, {0: 0}], ratio=[1, 1],
             default_cost=[5, 5])
    x = np.array([[1, 0], [0, 1]])
    calls = []
    real = lns._solve

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(lns, "_solve", counted)
    runs = {}
    for patience in (None, 3):
        calls.clear()
        out = fewer_moves(d, x, 5, Budget(time.perf_counter() + 30, deterministic=True, windows=8),
                          patience=patience)
        assert moved_cost(d, out) == 5
        runs[patience] = len(calls)
    assert runs == {None: 8, 3: 3}


def test_window_size_follows_whether_the_search_finished(monkeypatch):
    """A window whose CP-SAT search finished without a gain is followed by a larger one, one that ran out of
    time by a smaller one (the status, not the clock, so deterministic runs repeat)."""
    n = 30
    d = Data(weights=[5, 5], counts=[1, 1], eligible=[list(range(n))] * 2, cost=[{0: 0}, {0: 0}],
             ratio=[1] * n, default_cost=[5, 5])
    x = np.zeros((2, n), dtype=np.int64)
    x[0, 0] = x[1, 1] = 1
    sizes: list[int] = []
    real_pick = lns._pick

    def pick(mod, x, rng, size):
        sizes.append(size)
        return real_pick(mod, x, rng, size)

    monkeypatch.setattr(lns, "_pick", pick)
    for finished, expected in ((True, [10, 11, 12, 13]), (False, [10, 9, 8, 7])):
        sizes.clear()
        monkeypatch.setattr(lns, "_solve", lambda *a, finished=finished, **k: lns._Outcome(None, finished))
        fewer_moves(d, x, 5, Budget(time.perf_counter() + 30, deterministic=True, windows=4))
        assert sizes == expected
