"""Column generation for fewest moves at a cap: its bound never above the true fewest, its answers real.

Every claim is held against brute force over all assignments of tiny instances (class counts per member):
the bound of :func:`fewest_moves_at` is at most the fewest moved cost of any assignment within the cap, the
assignment it returns keeps the cap and moves what it says (never more than the start), and when it says
proven it is the fewest.  The pricing programme's value is an upper bound of every member's best column,
exact on an exact grid and still an upper bound on a coarse one.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.consumer.exact.colgen import fewest_moves_at, moved
from solver.consumer.exact.colgen.pricing import Grid, Pricer, grid_for
from solver.consumer.exact.colgen.problem import cost_matrix, eligible_matrix, reduce
from tests.solver.consumer.optimal_strategies import engine_data, instances

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def _splits(n: int, k: int) -> Iterator[tuple[int, ...]]:
    """Every way of putting ``n`` alike items on ``k`` members."""
    if k == 1:
        yield (n,)
        return
    for first in range(n + 1):
        for rest in _splits(n - first, k - 1):
            yield (first, *rest)


def every_assignment(ic, sc) -> Iterator[np.ndarray]:  # type: ignore[no-untyped-def]
    """Every ``[class, member]`` count matrix of the instance (eligible members only)."""
    elig = eligible_matrix(ic)
    per_class = []
    for c in range(ic.n_classes):
        members = np.flatnonzero(elig[c])
        per_class.append([(members, s) for s in _splits(int(ic.count[c]), len(members))])
    for combo in itertools.product(*per_class):
        x = np.zeros((ic.n_classes, ic.n_members), dtype=np.int64)
        for c, (members, s) in enumerate(combo):
            x[c, members] = s
        yield x


def nl(sc, x: np.ndarray) -> np.ndarray:  # type: ignore[no-untyped-def]
    return (np.asarray(sc.wint, dtype=np.int64) @ x) * np.asarray(sc.ratio, dtype=np.int64)


def small_enough(ic) -> bool:  # type: ignore[no-untyped-def]
    elig = eligible_matrix(ic)
    total = 1
    for c in range(ic.n_classes):
        k, n = int(elig[c].sum()), int(ic.count[c])
        total *= len(list(_splits(n, k))) if k <= 4 and n <= 6 else 10**9
    return 0 < total <= 4000


def check(ic, sc, x0: np.ndarray, zcap: int, seconds: float = 2.0) -> None:  # type: ignore[no-untyped-def]
    fewest = min(moved(ic, sc, x) for x in every_assignment(ic, sc) if nl(sc, x).max(initial=0) <= zcap)
    got = fewest_moves_at(ic, sc, zcap, x0, seconds=seconds, deterministic=True)
    assert got.bound <= fewest, (got.bound, fewest)
    x = got.solution
    assert (x.sum(axis=1) == np.asarray(ic.count)).all()
    assert not (x[~eligible_matrix(ic)]).any()
    assert nl(sc, x).max(initial=0) <= zcap
    assert got.cost == moved(ic, sc, x) <= moved(ic, sc, x0)
    if got.proven:
        assert got.cost == fewest


@SETTINGS
@given(inst=instances(max_topics=2, max_partitions=4, max_members=3, weights=True, capacities=True,
                      move_costs=True), pick=st.integers(0, 10**6), slack=st.sampled_from([0, 1, 10]))
def test_the_bound_is_valid_and_the_answer_real(inst, pick, slack):  # type: ignore[no-untyped-def]
    ic, sc, _ = engine_data(inst)
    if ic.total_items == 0 or not small_enough(ic):
        return
    xs = list(every_assignment(ic, sc))
    x0 = xs[pick % len(xs)]  # the start: any assignment; the cap its own max load, or a little above it
    check(ic, sc, x0, int(nl(sc, x0).max(initial=0)) * (100 + slack) // 100)


def test_an_item_too_large_for_any_free_room_pushes_others_out() -> None:
    """Two members at 6 of a cap of 10 and an orphan of 5: the per-owner covers see no overloaded owner and
    bound 0, but the orphan fits neither free room (4 and 4), so the member that takes it sheds an item,
    which must land on the other: the Dantzig-Wolfe bound is 1, and the answer (from a start moving 2)
    moves 1, proven."""
    from solver.consumer.exact.bounds import moves_bound
    from solver.io import parse_instance

    inst = parse_instance({"format": "kassign/v1", "protocol": "consumer", "topics": {
        "t": {"partitions": 7, "weights": [2, 2, 2, 2, 2, 2, 5]}}, "members": [
        {"id": "a", "topics": ["t"], "owned": {"t": [0, 1, 2]}},
        {"id": "b", "topics": ["t"], "owned": {"t": [3, 4, 5]}}]})
    ic, sc, _ = engine_data(inst)
    x0 = np.zeros((ic.n_classes, 2), dtype=np.int64)
    for c in range(ic.n_classes):  # the previous owners keep theirs; the orphan and two items moved to b
        owner = [m for m, _ in ic.owners[c]]
        x0[c, owner[0] if owner else 1] = ic.count[c]
    assert sc.load_unit == 1 and list(sc.ratio) == [1, 1]  # integer weights, equal capacities: NL is the load
    zcap = 10  # every member at most 10
    assert moves_bound(ic, sc.wint, sc.ratio, sc.owned, sc.own, zcap) == 0
    # a start within the cap: a keeps its three and takes two of b's; b keeps one and takes the orphan
    x0[:] = 0
    a_cls = [c for c in range(ic.n_classes) if ic.owners[c] and ic.owners[c][0][0] == 0]
    b_cls = [c for c in range(ic.n_classes) if ic.owners[c] and ic.owners[c][0][0] == 1]
    orphan = [c for c in range(ic.n_classes) if not ic.owners[c]]
    for c in a_cls:
        x0[c, 0] = ic.count[c]
    for c in b_cls:
        x0[c, 0], x0[c, 1] = 2, ic.count[c] - 2
    x0[orphan[0], 1] = 1
    assert moved(ic, sc, x0) == 2
    got = fewest_moves_at(ic, sc, zcap, x0, seconds=2.0)
    assert got.proven and got.bound == got.cost == 1


def _best_column(prob, m: int, pi: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    best = 0.0
    for counts in itertools.product(*[range(int(n) + 1) for n in prob.count]):
        y = np.asarray(counts, dtype=np.int64)
        if (y[~prob.allowed[m]] > 0).any() or int(prob.weight @ y) > int(prob.room[m]):
            continue
        best = max(best, float((pi - prob.cost[m]) @ y))
    return best


@SETTINGS
@given(inst=instances(max_topics=2, max_partitions=4, max_members=3, weights=True, capacities=True,
                      move_costs=True), duals=st.lists(st.floats(0, 12), min_size=8, max_size=8),
       coarse=st.booleans())
def test_pricing_never_undervalues_a_column(inst, duals, coarse):  # type: ignore[no-untyped-def]
    ic, sc, _ = engine_data(inst)
    if ic.total_items == 0:
        return
    zcap = int(np.asarray(sc.ratio).max()) * int(np.asarray(sc.wint) @ np.asarray(ic.count)) // 2
    prob = reduce(ic, sc, zcap)
    if prob is None or prob.n_free == 0 or np.prod(prob.count + 1) > 5000:
        return
    grid = grid_for(prob)
    if coarse:  # a unit that divides no weight: every weight rounded down
        unit = max(1, int(prob.room.max()) // 3 + 1)
        grid = Grid(unit, False, prob.weight // unit, np.maximum(prob.room, 0) // unit)
    pricer = Pricer(prob, grid)
    pi = np.resize(np.asarray(duals), prob.n_free)
    members = [m for m in range(prob.n_members) if prob.allowed[m].any()]
    for m, (value, col) in zip(members, pricer.exact_all(members, pi), strict=True):
        true = _best_column(prob, m, pi)
        assert value >= true - 1e-9
        if grid.exact:
            assert value == pytest.approx(true, abs=1e-9)
        assert col.load <= int(prob.room[m]) and not (col.cnt > prob.count[col.idx]).any()
        assert col.cost == int(prob.cost[m, col.idx] @ col.cnt)


def test_cost_fixing_keeps_the_items_that_cannot_move_cheaper_than_the_start() -> None:
    """An item whose move alone costs the start's moved cost stays with its owner in every cheaper answer."""
    from solver.io import parse_instance

    inst = parse_instance({"format": "kassign/v1", "protocol": "consumer", "topics": {
        "t": {"partitions": 3, "weights": [1, 2, 3], "move_costs": [10, 1, 1]}}, "members": [
        {"id": "a", "topics": ["t"], "owned": {"t": [0, 1]}}, {"id": "b", "topics": ["t"], "owned": {"t": [2]}}]})
    ic, sc, _ = engine_data(inst)
    prob = reduce(ic, sc, zcap=10**9, ub=int(cost_matrix(ic, sc).max()))
    assert prob is not None
    heavy = [c for c in range(ic.n_classes) if int(sc.owned[c]) == int(cost_matrix(ic, sc).max())]
    assert heavy and not set(heavy) & set(prob.classes.tolist())
    assert prob.fixed[heavy[0]].tolist() == [1, 0]


def _greedy_one(prob, m: int, pi: np.ndarray) -> tuple[list[int], list[int]]:  # type: ignore[no-untyped-def]
    """The quick column of one member, the plain way: by profit per weight, as many of each as still fit."""
    prof = np.where(prob.allowed[m], pi - prob.cost[m], -np.inf)
    live = np.flatnonzero(prof > 0)
    ratio = np.where(prob.weight[live] > 0, prof[live] / np.maximum(prob.weight[live], 1), np.inf)
    left = int(prob.room[m])
    take = {}
    for c in live[np.argsort(-ratio, kind="stable")].tolist():
        w = int(prob.weight[c])
        k = int(prob.count[c]) if w == 0 else min(int(prob.count[c]), left // w)
        if k > 0:
            take[c] = k
            left -= w * k
    return sorted(take), [take[c] for c in sorted(take)]


@SETTINGS
@given(inst=instances(max_topics=3, max_partitions=6, max_members=4, weights=True, capacities=True,
                      move_costs=True), duals=st.lists(st.floats(0, 12), min_size=10, max_size=10))
def test_quick_columns_side_by_side_are_each_members_own(inst, duals):  # type: ignore[no-untyped-def]
    ic, sc, _ = engine_data(inst)
    if ic.total_items == 0:
        return
    zcap = int(np.asarray(sc.ratio).max()) * int(np.asarray(sc.wint) @ np.asarray(ic.count)) // 2
    prob = reduce(ic, sc, zcap)
    if prob is None or prob.n_free == 0:
        return
    pi = np.resize(np.asarray(duals), prob.n_free)
    members = list(range(prob.n_members))
    for m, col in zip(members, Pricer(prob, grid_for(prob)).greedy_all(members, pi), strict=True):
        assert (col.idx.tolist(), col.cnt.tolist()) == _greedy_one(prob, m, pi)
        assert col.load <= max(0, int(prob.room[m])) or not col.idx.size
