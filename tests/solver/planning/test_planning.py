"""Capacity planning checked against brute force on instances small enough to enumerate.

The brute force below is written independently of solver.planning.plan: it builds
the items straight from the instance (co-partition units, previous owners),
enumerates every assignment of items to instances (and every choice of kept
members when shrinking), and reads off the true minimum instance count, the
true best balance, the true fewest moves and the true worst-case N-K moves.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from solver.errors import InfeasibleError
from solver.io import parse_instance
from solver.model import Instance
from solver.model.semantics import previous_owners
from solver.planning import binpacking as bp
from solver.planning.plan import PlanConfig, PlanUsageError, parse_range, plan
from solver.scaling import integerize

# --------------------------------------------------------------------------- brute force


@dataclass
class Truth:
    """Items of an instance, built independently of solver.planning.plan."""

    sizes: list[float]
    parts: list[list[tuple[str, int]]]
    costs: list[list[float]]  # move cost per partition of the item
    prev: list[list[int]]  # previous owner per partition of the item (-1 none)
    groups: list[int]
    mults: list[float]


def truth_items(inst: Instance) -> Truth:
    prev = previous_owners(inst)
    grouped = {t for g in inst.copartition for t in g}
    sizes, parts, costs, prevs = [], [], [], []
    for g in inst.copartition:
        lim = min(inst.topics[t].partitions for t in g)
        for p in range(lim):
            sizes.append(sum(float(inst.topics[t].weight_array()[p]) for t in g))
            parts.append([(t, p) for t in g])
            costs.append([float(inst.topics[t].move_cost_array()[p]) for t in g])
            prevs.append([int(prev[t][p]) for t in g])
    for t, tp in inst.topics.items():
        if t in grouped:
            continue
        for p in range(tp.partitions):
            sizes.append(float(tp.weight_array()[p]))
            parts.append([(t, p)])
            costs.append([float(tp.move_cost_array()[p])])
            prevs.append([int(prev[t][p])])
    return Truth(sizes, parts, costs, prevs, [-1] * len(sizes), [m.capacity for m in inst.members])


def fleets(tr: Truth, n: int, cap: float) -> list[tuple[list[int], list[float]]]:
    """Every allowed fleet of n instances: (member indices, capacities); new instances get index >= m."""
    m = len(tr.mults)
    if n <= m:
        return [(list(c), [cap * tr.mults[j] for j in c]) for c in itertools.combinations(range(m), n)]
    return [(list(range(n)), [cap * tr.mults[j] for j in range(m)] + [cap] * (n - m))]


def all_assignments(n_items: int, n_bins: int) -> np.ndarray:
    if n_items == 0:
        return np.zeros((1, 0), dtype=np.int64)
    return np.array(list(itertools.product(range(n_bins), repeat=n_items)), dtype=np.int64).reshape(-1, n_items)


def loads_of(a: np.ndarray, sizes: np.ndarray, n_bins: int) -> np.ndarray:
    return np.stack([((a == j) * sizes).sum(axis=1) for j in range(n_bins)], axis=1) if n_bins else \
        np.zeros((a.shape[0], 0))


def within(loads: np.ndarray, caps: list[float]) -> np.ndarray:
    return (loads <= np.asarray(caps)[None, :] * (1 + 1e-12) + 1e-9).all(axis=1)


def true_min(tr: Truth, cap: float, n_max: int = 6) -> int | None:
    sizes = np.asarray(tr.sizes)
    if sizes.size == 0:
        return 0
    for n in range(1, n_max + 1):
        a = all_assignments(sizes.size, n)
        ld = loads_of(a, sizes, n)
        for _, caps in fleets(tr, n, cap):
            if within(ld, caps).any():
                return n
    return None


def true_balance(tr: Truth, cap: float, n: int) -> float | None:
    sizes = np.asarray(tr.sizes)
    a = all_assignments(sizes.size, n)
    ld = loads_of(a, sizes, n)
    best = None
    for _, caps in fleets(tr, n, cap):
        ok = within(ld, caps)
        if ok.any():
            u = (ld[ok] / np.asarray(caps)[None, :]).max(axis=1).min()
            best = u if best is None else min(best, u)
    return best


def move_matrix(tr: Truth, members: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(state, partitions) moved when item i goes to fleet slot c."""
    k = len(members)
    st_ = np.zeros((len(tr.sizes), k))
    pa = np.zeros((len(tr.sizes), k), dtype=np.int64)
    for i in range(len(tr.sizes)):
        for c, j in enumerate(members):
            for cost, o in zip(tr.costs[i], tr.prev[i], strict=True):
                if o >= 0 and o != j:
                    st_[i, c] += cost
                    pa[i, c] += 1
    return st_, pa


def true_moves(tr: Truth, cap: float, n: int) -> tuple[float, int] | None:
    """Lexicographic minimum (moved state, moved partitions) over every fleet choice and assignment."""
    sizes = np.asarray(tr.sizes)
    a = all_assignments(sizes.size, n)
    ld = loads_of(a, sizes, n)
    best: tuple[float, int] | None = None
    rows = np.arange(sizes.size)
    for members, caps in fleets(tr, n, cap):
        ok = within(ld, caps)
        if not ok.any():
            continue
        st_, pa = move_matrix(tr, members)
        s_tot = st_[rows[None, :], a[ok]].sum(axis=1)
        p_tot = pa[rows[None, :], a[ok]].sum(axis=1)
        order = np.lexsort((p_tot, np.round(s_tot, 9)))
        cand = (float(s_tot[order[0]]), int(p_tot[order[0]]))
        if best is None or (round(cand[0], 9), cand[1]) < (round(best[0], 9), best[1]):
            best = cand
    return best


def true_worst_loss(tr: Truth, owner_slots: np.ndarray, caps: list[float], k: int) -> tuple[float, int] | None:
    """Worst case over every loss set of k instances of the fewest (state, partitions) moves to survive."""
    sizes = np.asarray(tr.sizes)
    n = len(caps)
    item_state = np.asarray([sum(c) for c in tr.costs])
    item_parts = np.asarray([len(p) for p in tr.parts])
    worst: tuple[float, int] | None = None
    for lost in itertools.combinations(range(n), k):
        surv = [c for c in range(n) if c not in lost]
        a = all_assignments(sizes.size, len(surv))
        ld = loads_of(a, sizes, len(surv))
        ok = within(ld, [caps[c] for c in surv])
        if not ok.any():
            return None
        # item i stays iff it lands on its own (surviving) slot
        slot_of = np.asarray(surv)[a[ok]]
        moved = slot_of != owner_slots[None, :]
        s_tot = (moved * item_state).sum(axis=1)
        p_tot = (moved * item_parts).sum(axis=1)
        order = np.lexsort((p_tot, np.round(s_tot, 9)))
        cand = (float(s_tot[order[0]]), int(p_tot[order[0]]))
        if worst is None or (round(cand[0], 9), cand[1]) > (round(worst[0], 9), worst[1]):
            worst = cand
    return worst


# --------------------------------------------------------------------------- generated instances


@st.composite
def small_instances(draw: Any, hetero: bool = False) -> tuple[dict[str, Any], float]:
    n_members = draw(st.integers(0, 3))
    copart = draw(st.booleans())
    topics: dict[str, Any] = {}
    if copart:
        pa = draw(st.integers(1, 3))
        pb = draw(st.integers(pa, pa + 1))
        topics["A"] = {"partitions": pa, "weights": draw(st.lists(st.integers(1, 9), min_size=pa, max_size=pa)),
                       "move_costs": draw(st.lists(st.integers(0, 5), min_size=pa, max_size=pa))}
        topics["B"] = {"partitions": pb, "weights": draw(st.lists(st.integers(1, 9), min_size=pb, max_size=pb)),
                       "move_costs": draw(st.lists(st.integers(0, 5), min_size=pb, max_size=pb))}
    used = sum(min(topics[t]["partitions"] for t in topics) for _ in [0]) if copart else 0
    pc = draw(st.integers(1 if not copart else 0, 7 - used))
    if pc:
        topics["C"] = {"partitions": pc, "weights": draw(st.lists(st.integers(1, 9), min_size=pc, max_size=pc)),
                       "move_costs": draw(st.lists(st.integers(0, 5), min_size=pc, max_size=pc))}
    names = list(topics)
    members = []
    for j in range(n_members):
        owned = {}
        for t in names:
            ps = draw(st.lists(st.integers(0, topics[t]["partitions"] - 1), max_size=3, unique=True))
            if ps:
                owned[t] = ps
        mem: dict[str, Any] = {"id": f"m{j}", "topics": names, "owned": owned, "generation": draw(st.integers(1, 2))}
        if hetero:
            mem["capacity"] = draw(st.sampled_from([0.5, 1.0, 2.0]))
        members.append(mem)
    doc: dict[str, Any] = {"format": "kassign/v1", "topics": topics, "members": members}
    if copart:
        doc["copartition"] = [["A", "B"]]
    inst = parse_instance(doc)
    tr = truth_items(inst)
    total, big = sum(tr.sizes), max(tr.sizes)
    # Capacity between the largest item and the total: the minimum stays small enough to enumerate.
    lo = max(big, math.ceil(total / 4))
    cap = draw(st.integers(int(lo), int(max(lo, total))))
    return doc, float(cap)


SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run_plan(doc: dict[str, Any], cap: float, k: int = 0, rng: tuple[int, int] | None = None,
             **kw: Any) -> dict[str, Any]:
    inst = parse_instance(doc)
    kw.setdefault("new_capacity", 1.0)  # the brute force adds instances of multiplier 1
    return plan(inst, PlanConfig(capacity=cap, resilience=k, range=rng, time_limit=20, **kw))


# --------------------------------------------------------------------------- properties


@SETTINGS
@given(small_instances())
def test_minimum_equals_brute_force(case):
    doc, cap = case
    inst = parse_instance(doc)
    want = true_min(truth_items(inst), cap)
    got = run_plan(doc, cap, rng=(1, 1))
    assert got["proof_kind"] in ("bound", "cp-sat")
    assert got["min_instances"] == want
    assert got["lower_bound"] <= want


@SETTINGS
@given(small_instances(hetero=True))
def test_minimum_equals_brute_force_heterogeneous(case):
    doc, cap = case
    inst = parse_instance(doc)
    want = true_min(truth_items(inst), cap)
    assume(want is not None)  # members of multiplier 0.5 can push the minimum beyond what we enumerate
    got = run_plan(doc, cap, rng=(1, 1))
    assert got["min_instances"] == want
    assert got["lower_bound"] <= want


@SETTINGS
@given(small_instances(), st.integers(1, 4))
def test_rows_balance_and_fewest_moves_equal_brute_force(case, n):
    doc, cap = case
    inst = parse_instance(doc)
    tr = truth_items(inst)
    got = run_plan(doc, cap, rng=(n, n))
    row = got["rows"][0]
    want_u = true_balance(tr, cap, n)
    want_m = true_moves(tr, cap, n)
    assert row["fits"] == (want_m is not None)
    if want_m is None:
        assert row["moved_partitions"] is None
        return
    assert row["balance_status"] == "optimal" and row["moves_status"] == "optimal"
    assert row["max_utilisation"] == pytest.approx(want_u, abs=1e-6)
    assert row["headroom"] == pytest.approx(1 - want_u, abs=1e-6)
    assert row["moved_state"] == pytest.approx(want_m[0], abs=1e-6)
    assert row["moved_partitions"] == want_m[1]
    assert row["moved_state_bound"] <= row["moved_state"] + 1e-9


@SETTINGS
@given(small_instances(hetero=True), st.integers(1, 4))
def test_fewest_moves_heterogeneous_equal_brute_force(case, n):
    doc, cap = case
    tr = truth_items(parse_instance(doc))
    row = run_plan(doc, cap, rng=(n, n))["rows"][0]
    want_m = true_moves(tr, cap, n)
    want_u = true_balance(tr, cap, n)
    if want_m is None:
        assert row["fits"] is False
        return
    assert row["fits"] is True
    assert row["moved_state"] == pytest.approx(want_m[0], abs=1e-6)
    assert row["moved_partitions"] == want_m[1]
    # the heterogeneous balance is optimal up to the 1e-6 utilisation resolution
    assert row["max_utilisation"] == pytest.approx(want_u, abs=2e-6)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(), st.integers(2, 4), st.integers(1, 2))
def test_resilience_worst_case_equals_brute_force(case, n, k):
    doc, cap = case
    inst = parse_instance(doc)
    tr = truth_items(inst)
    if k >= n:  # losing every instance of the range: refused before any work (solver.planning.config)
        with pytest.raises(PlanUsageError, match="leaves none"):
            run_plan(doc, cap, k=k, rng=(n, n))
        return
    got = run_plan(doc, cap, k=k, rng=(n, n))
    row = got["rows"][0]
    if row["moved_partitions"] is None:
        return
    # Rebuild the plan's owner slots from the reported plan is not exposed; use the planner directly.
    from solver.planning.plan import Planner, consumer_items, fewest_moves, resilience

    pl = Planner(consumer_items(inst), PlanConfig(capacity=cap, time_limit=20))
    mv = fewest_moves(pl, n)
    assert mv.owner is not None
    slots = {j: c for c, j in enumerate(mv.kept)}
    caps = [cap * (tr.mults[j] if j < len(tr.mults) else 1.0) for j in mv.kept]
    # consumer_items orders items exactly like truth_items (co-partition units first, then topics in order)
    owner_slots = np.asarray([slots[int(o)] for o in mv.owner])
    want = true_worst_loss(tr, owner_slots, caps, k)
    mn = true_min(tr, cap)
    assert row["resilience_fits"] == (mn is not None and n - k >= mn)
    if want is None:
        assert row["resilience_moved_state"] is None
        return
    res = resilience(pl, mv, k, mn)
    assert res.exact
    assert res.moved_state == pytest.approx(want[0], abs=1e-6)
    assert res.moved_partitions == want[1]
    assert res.forced_moved_state <= res.moved_state + 1e-9


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=6), st.integers(30, 45))
def test_bounds_are_valid_lower_bounds(sizes, cap):
    s = np.asarray(sizes, dtype=np.int64)
    tr = Truth([float(x) for x in sizes], [[("T", i)] for i in range(len(sizes))], [[1.0]] * len(sizes),
               [[-1]] * len(sizes), [-1] * len(sizes), [])
    want = true_min(tr, float(cap), n_max=7)
    assert bp.l1_bound(s, cap) <= want
    assert bp.l2_bound(s, cap) <= want
    assert bp.identical_bound(s, cap)[0] <= want
    ffd = bp.first_fit_decreasing(s, np.full(len(sizes), cap))
    assert ffd is not None and len(set(ffd.tolist())) >= want


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=7), st.integers(12, 20), st.integers(1, 4))
def test_sat_pack_agrees_with_brute_force(sizes, cap, n):
    s = np.asarray(sizes, dtype=np.int64)
    a = all_assignments(len(sizes), n)
    feasible = within(loads_of(a, s.astype(float), n), [cap] * n).any()
    out = bp.sat_pack(s, np.full(n, cap))
    assert out.status == ("optimal" if feasible else "infeasible")
    if feasible:
        assert (np.bincount(out.bins, weights=s, minlength=n) <= cap).all()


def test_l2_beats_l1_on_items_over_half():
    assert bp.l1_bound(np.array([6, 6, 6]), 10) == 2
    assert bp.l2_bound(np.array([6, 6, 6]), 10) == 3
    # items (7, 3, 3, 3) in bins of 10: L2 with K=3 -> 1 + ceil((9 - 3) / 10) = 2 (and 2 is optimal)
    assert bp.l2_bound(np.array([7, 3, 3, 3]), 10) == 2


def test_integerize_is_conservative_for_inexact_data():
    d = integerize([1 / 3, 2 / 3], [1.0])
    assert not d.exact
    assert d.sizes_up.sum() > d.caps_down[0]  # packing side: may not claim a perfect fit
    assert d.sizes_down.sum() <= d.caps_up[0]  # proof side: may not claim infeasibility


# --------------------------------------------------------------------------- heuristic path bounds


@SETTINGS
@given(small_instances(), st.integers(1, 4))
def test_large_instance_path_reports_valid_bounds(case, n):
    """With CP-SAT switched off (the large-instance path) bounds stay below and answers above the truth."""
    doc, cap = case
    tr = truth_items(parse_instance(doc))
    got = run_plan(doc, cap, rng=(n, n), sat_pair_limit=0)
    want_min = true_min(tr, cap)
    assert got["lower_bound"] <= want_min <= got["upper_bound"]
    row = got["rows"][0]
    want_m = true_moves(tr, cap, n)
    if row["moved_state"] is not None and want_m is not None:
        assert row["moved_state_bound"] <= want_m[0] + 1e-9
        assert want_m[0] <= row["moved_state"] + 1e-6
        assert row["moved_partitions_bound"] <= want_m[1] or row["moved_state"] > want_m[0] + 1e-9
    if row["max_utilisation"] is not None:
        want_u = true_balance(tr, cap, n)
        # reported figures are rounded to 6 decimals (bounds down)
        assert row["max_utilisation_bound"] <= want_u + 1e-9
        assert want_u <= row["max_utilisation"] + 1e-6


# --------------------------------------------------------------------------- bad input


def _orders(cap_weights: list[int] | None = None) -> dict[str, Any]:
    return {"format": "kassign/v1", "topics": {"T": {"partitions": 3, "weights": cap_weights or [5, 3, 2]}},
            "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2]}}]}


@pytest.mark.parametrize("cap", [0.0, -1.0, float("nan"), float("inf")])
def test_nonpositive_capacity_is_a_usage_error(cap):
    with pytest.raises(PlanUsageError, match="capacity"):
        run_plan(_orders(), cap)


def test_item_larger_than_capacity_is_infeasible():
    with pytest.raises(InfeasibleError, match=r"partition T-0 has load 5.*more than the largest instance"):
        run_plan(_orders(), 4.0)


def test_copartition_unit_larger_than_capacity_names_the_unit():
    doc = {"format": "kassign/v1", "topics": {"A": {"partitions": 2, "weights": [3, 1]},
                                                "B": {"partitions": 2, "weights": [3, 1]}},
           "copartition": [["A", "B"]], "members": [{"id": "a", "topics": ["A", "B"]}]}
    with pytest.raises(InfeasibleError, match=r"co-partition unit A\+B-0 has load 6"):
        run_plan(doc, 5.0)


@pytest.mark.parametrize("text", ["5:3", "0:4", "x:3", "3:y", "-1:2"])
def test_impossible_ranges_are_usage_errors(text):
    with pytest.raises(PlanUsageError, match="--range"):
        parse_range(text)


def test_bad_range_in_config_is_a_usage_error():
    with pytest.raises(PlanUsageError, match="--range 5:3"):
        run_plan(_orders(), 10.0, rng=(5, 3))


@pytest.mark.parametrize("kw,match", [({"catch_up_seconds": 0.0}, "catch-up"), ({"lag_threshold": 0.0}, "lag"),
                                      ({"resilience": -1}, "resilience")])
def test_other_bad_options(kw, match):
    cfg = {"capacity": 10.0, **kw}
    with pytest.raises(PlanUsageError, match=match):
        plan(parse_instance(_orders()), PlanConfig(**cfg))


# --------------------------------------------------------------------------- fixed facts


def test_catch_up_seconds_divides_lag_and_keda_uses_total_lag():
    doc = {"format": "kassign/v1", "topics": {"T": {"partitions": 4, "weights": [6000, 3000, 3000, 0]}},
           "members": [{"id": "a", "topics": ["T"]}]}
    got = plan(parse_instance(doc), PlanConfig(capacity=100.0, catch_up_seconds=60.0, lag_threshold=1000,
                                               range=(1, 3)))
    # loads 100, 50, 50, 0 per second against 100 per instance -> 2 instances, proven by L1
    assert got["total_load"] == pytest.approx(200.0)
    assert got["min_instances"] == 2 and got["proof_kind"] == "bound"
    keda = next(b for b in got["baselines"] if b["name"] == "keda")
    assert keda["instances"] == 4  # ceil(12000 / 1000) = 12, capped at 4 partitions
    assert keda["vs_min"] == 2 and keda["weights_as_lag"] is True
    one = next(b for b in got["baselines"] if b["name"] == "one-partition-per-consumer")
    assert one["instances"] == 4


def test_cp_sat_proof_when_bounds_do_not_meet():
    """Find a small case whose best bound is below the optimum: the minimum must come with a CP-SAT proof."""
    rng = np.random.default_rng(1)
    for _ in range(300):
        sizes = rng.integers(3, 8, size=7).tolist()
        cap = 10
        s = np.asarray(sizes)
        lb = bp.identical_bound(s, cap)[0]
        tr = Truth([float(x) for x in sizes], [[("T", i)] for i in range(7)], [[1.0]] * 7, [[-1]] * 7, [-1] * 7,
                   [])
        if true_min(tr, cap, n_max=7) > lb:
            break
    else:
        pytest.fail("no instance with a gap between bound and optimum found")
    doc = {"format": "kassign/v1", "topics": {"T": {"partitions": 7, "weights": sizes}}, "members": []}
    got = run_plan(doc, float(cap), rng=(1, 1))
    assert got["min_instances"] == true_min(tr, cap, n_max=7)
    assert got["proof_kind"] == "cp-sat" and "INFEASIBLE" in got["proof"]


def test_streams_standbys_on_distinct_instances_brute_force():
    """A task and its standby are an anti-affinity group: 3 stateful tasks x (1 + 1 standby) = 6 items."""
    doc = {"format": "kassign/v1", "protocol": "streams",
           "tasks": [{"id": "0_0", "stateful": True}, {"id": "0_1", "stateful": True},
                     {"id": "0_2", "stateful": True}],
           "clients": [{"id": "c1", "process_id": "00000000-0000-0000-0000-000000000001", "capacity": 1,
                        "active": ["0_0", "0_1"], "standby": ["0_2"]},
                       {"id": "c2", "process_id": "00000000-0000-0000-0000-000000000002", "capacity": 1,
                        "active": ["0_2"], "standby": ["0_0"]}],
           "config": {"num_standby_replicas": 1}}
    inst = parse_instance(doc)
    # capacity 3 tasks per instance: 6 replicas -> L1 = 2, and 2 instances work (each task on both).
    got = plan(inst, PlanConfig(capacity=3.0, range=(1, 3), resilience=1))
    assert got["min_instances"] == 2
    rows = {r["n"]: r for r in got["rows"]}
    assert rows[1]["fits"] is False
    # n = 2: every task on both clients; c2 lacks 0_1 (active on c1): exactly one restoration.
    assert rows[2]["moved_partitions"] == 1 and rows[2]["max_utilisation"] == pytest.approx(1.0)
    # capacity 2: 6 replicas need 3 instances; a task's two replicas can never share one.
    got = plan(inst, PlanConfig(capacity=2.0, range=(3, 3)))
    assert got["min_instances"] == 3
    # capacity 4 with 2 instances still needs 2 (anti-affinity bound), not L1 = 2 -> and 1 is impossible
    got = plan(inst, PlanConfig(capacity=10.0, range=(1, 2)))
    assert got["min_instances"] == 2 and got["proof_kind"] == "bound"
    assert "anti-affinity" in got["lower_bound_name"]


def test_kafka_column_unavailable_without_assignor():
    got = run_plan(_orders(), 10.0, rng=(1, 2))
    assert all(r["kafka_status"] == "unavailable" for r in got["rows"])


def test_kafka_cooperative_sticky_column(registry_loaded):
    from solver.registry import UnknownAssignorError, get

    try:
        spec = get("cooperative-sticky")
    except UnknownAssignorError:
        pytest.skip("cooperative-sticky is not registered yet: the kafka_* columns cannot be checked")
    doc = {"format": "kassign/v1",
           "topics": {"T": {"partitions": 6, "weights": [9, 1, 1, 1, 1, 1], "move_costs": [1, 2, 3, 4, 5, 6]}},
           "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2]}, "generation": 1},
                       {"id": "b", "topics": ["T"], "owned": {"T": [3, 4, 5]}, "generation": 1}]}
    got = plan(parse_instance(doc), PlanConfig(capacity=10.0, range=(2, 3)), kafka_assignor=spec)
    r2, r3 = got["rows"]
    assert r2["kafka_status"] == "ok"
    # Kafka keeps the balanced count assignment (3 + 3): nothing moves, the heavy member is at 11 / 10.
    assert r2["kafka_moved_partitions"] == 0 and r2["kafka_max_utilisation"] == pytest.approx(1.1)
    assert r2["kafka_fits"] is False
    # The plan moves the cheapest light partition (T-1, cost 2) off the heavy member instead.
    assert r2["fits"] is True and r2["moved_partitions"] == 1 and r2["moved_state"] == pytest.approx(2.0)
    # 3 instances: Kafka moves one partition from each member to the new one (2 + 2 + 2).
    assert r3["kafka_moved_partitions"] == 2


def test_best_fit_decreasing_opens_bins_in_order():
    # Pool of two big bins then small ones: BFD must fill the open big bins before opening small ones.
    caps = np.array([4, 4, 2, 2, 2, 2])
    b = bp.best_fit_decreasing(np.array([1, 1, 1, 1, 1, 1, 1]), caps)
    assert b is not None and sorted(set(b.tolist())) == [0, 1]


def test_resilience_rows_come_within_the_default_time_limit_on_a_large_group() -> None:
    """1,366 partitions, 84 members, --resilience 2: the rows a user asks about (the minimum, minimum + 1,
    minimum + 2) share the 10 s; the minimum's row used to spend all of it (and all of 120 s) building and
    searching CP-SAT models, so the N-2 rows were never printed."""
    import gzip
    import json

    from tests.conftest import shared_path

    src = shared_path("scenarios", "optimal", "weighted-scale.jsonl.gz")
    with gzip.open(src, "rt") as f:
        doc = next(d for d in map(json.loads, f) if d.get("id") == "ws411-3")
    inst = parse_instance(doc.get("instance", doc))
    out = plan(inst, PlanConfig(capacity=5_000_000, resilience=2, time_limit=10))
    ns = [r["n"] for r in out["rows"]]
    assert out["min_instances"] == 55
    assert {55, 56, 57} <= set(ns), (ns, out["notes"])
    row = {r["n"]: r for r in out["rows"]}
    assert row[55]["resilience_fits"] is False and row[57]["resilience_fits"] is True
    assert out["seconds"] < 30  # the limit is soft (a model or a row in progress ends), not ignored
