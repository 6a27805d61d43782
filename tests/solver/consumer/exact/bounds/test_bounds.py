"""Every bound of the exact engine against brute force on tiny instances: bound <= optimum, always."""

from __future__ import annotations

import itertools
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.consumer.exact.bounds import max_load_bound, moves_bound, sum_sq_bound
from solver.consumer.exact.bounds.max_load import grain_candidates
from solver.consumer.exact.data import scale
from solver.consumer.items import build_classes
from tests.solver.consumer.brute_force import all_assignments, small
from tests.solver.consumer.optimal_strategies import instances

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.filter_too_much])


def _data(inst):
    ic = build_classes(inst)
    return ic, scale(ic, [m.capacity for m in inst.members])


@SETTINGS
@given(inst=instances(max_topics=3, max_partitions=4, max_members=4, weights=True, capacities=True,
                      move_costs=True, copartition="any"))
def test_max_load_bound_never_above_the_optimum(inst):
    if not small(inst, 20_000):
        return
    ic, sc = _data(inst)
    if ic.total_items == 0:
        return
    best = min(r["max_load"] for r in all_assignments(inst))
    bound = max_load_bound(ic, sc.wint, sc.ratio) * sc.load_unit
    assert bound <= Fraction(best) + Fraction(1, 10**6), (float(bound), best)


@SETTINGS
@given(inst=instances(max_topics=3, max_partitions=4, max_members=4, weights=True, capacities=True,
                      move_costs=True, copartition="any"), slack=st.sampled_from([0, 0, 1, 5, 20]))
def test_moves_bound_never_above_the_fewest_moves_within_the_cap(inst, slack):
    """At any cap (the optimal max load, or looser), no assignment within it moves less than the bound."""
    if not small(inst, 20_000):
        return
    ic, sc = _data(inst)
    if ic.total_items == 0:
        return
    rows = all_assignments(inst)
    zcap = max_load_bound(ic, sc.wint, sc.ratio) * (100 + slack) // 100
    cap = float(zcap * sc.load_unit)
    within = [r["moves"] for r in rows if r["max_load"] <= cap * (1 + 1e-9)]
    if not within:
        return
    bound = moves_bound(ic, sc.wint, sc.ratio, sc.owned, sc.own, zcap) * sc.move_unit
    assert bound <= Fraction(min(within)) + Fraction(1, 10**6), (float(bound), min(within))


@SETTINGS
@given(inst=instances(max_topics=2, max_partitions=4, max_members=4, weights=True, capacities=True))
def test_sum_sq_bound_never_above_the_optimum(inst):
    if not small(inst, 20_000):
        return
    ic, sc = _data(inst)
    total = sum(sc.wint[c] * int(ic.count[c]) for c in range(ic.n_classes))
    best = min(r["sum_sq"] for r in all_assignments(inst))
    bound = sum_sq_bound(total, sc.ratio) * sc.load_unit * sc.load_unit
    assert bound <= Fraction(best) * (1 + Fraction(1, 10**9)) + Fraction(1, 10**6)


def test_integrality_and_grain_lift_the_hall_bound():
    """Weights 50,000s and one 1 on three members: the flow alone gives the average, the grain the truth."""
    from solver.io import parse_instance

    inst = parse_instance({"format": "kassign/v1", "topics": {"T": {"partitions": 4, "weights": [
        100_000, 100_000, 50_000, 1]}}, "members": [{"id": f"m{i}", "topics": ["T"]} for i in range(3)]})
    ic, sc = _data(inst)
    assert grain_candidates(ic, sc.wint)  # the 1 spoils the gcd of the rest
    bound = max_load_bound(ic, sc.wint, sc.ratio) * sc.load_unit
    best = min(r["max_load"] for r in all_assignments(inst))
    assert best == 100_000
    assert bound == 100_000  # average 83,334: integrality of the 50,000s decides


def test_owner_side_cover_is_exact_and_forced_moves_counted():
    """An owner holding 6, 5, 5 (move costs 9, 4, 4) must shed 6 of its 16 at a cap of 10: 5 + 5 costs 8."""
    from solver.io import parse_instance

    inst = parse_instance({"format": "kassign/v1", "topics": {
        "T": {"partitions": 3, "weights": [6, 5, 5], "move_costs": [9, 4, 4]},
        "U": {"partitions": 1, "weights": [1], "move_costs": [3]}},
        "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2]}},
                    {"id": "b", "topics": ["T", "U"]}, {"id": "c", "topics": ["T"]}]})
    ic, sc = _data(inst)
    zcap = int(Fraction(10) / sc.load_unit)
    assert moves_bound(ic, sc.wint, sc.ratio, sc.owned, sc.own, zcap) * sc.move_unit == 8
    rows = all_assignments(inst)
    assert min(r["moves"] for r in rows if r["max_load"] <= 10) == 8


def test_receiver_side_when_joiners_must_be_filled():
    """Two owners of four 1s each and two new members at a cap of 2: each new member must take 2 moves."""
    from solver.io import parse_instance

    inst = parse_instance({"format": "kassign/v1", "topics": {"T": {"partitions": 8, "weights": [1.5] * 8}},
                           "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}},
                                       {"id": "b", "topics": ["T"], "owned": {"T": [4, 5, 6, 7]}},
                                       {"id": "c", "topics": ["T"]}, {"id": "d", "topics": ["T"]}]})
    ic, sc = _data(inst)
    zcap = int(Fraction(3) / sc.load_unit)
    bound = moves_bound(ic, sc.wint, sc.ratio, sc.owned, sc.own, zcap) * sc.move_unit
    rows = all_assignments(inst)
    best = min(r["moves"] for r in rows if r["max_load"] <= 3)
    assert bound == best == 4


def test_bounds_on_every_visible_weighted_scale_group_stay_below_the_best_known():
    """The max-load bound and the moved-cost bound at the best known max load never pass a feasible figure."""
    import gzip
    import json

    from solver.io import parse_instance
    from tests.conftest import shared_path

    path = shared_path("scenarios", "optimal", "weighted-scale.jsonl.gz")
    ref = json.loads(shared_path("scenarios", "optimal", "weighted-scale-best.json").read_text())
    with gzip.open(path, "rt") as fh:
        recs = [json.loads(line) for line in itertools.islice(fh, 8)]
    for rec in recs:
        q = ref[rec["id"]]
        ic, sc = _data(parse_instance(rec["instance"]))
        z = max_load_bound(ic, sc.wint, sc.ratio)
        assert float(z * sc.load_unit) <= q["best_max_load"] * (1 + 1e-12)
        assert float(z * sc.load_unit) >= q["max_load_bound"] * (1 - 1e-12)  # at least the reference's bound
        zb = int(Fraction(q["best_max_load"]) / sc.load_unit)
        mb = float(moves_bound(ic, sc.wint, sc.ratio, sc.owned, sc.own, zb) * sc.move_unit)
        if q["best_moves_at_best"] is not None:
            assert mb <= q["best_moves_at_best"]
        assert mb >= 0.99 * q["moves_bound_at_best"]


def test_member_loads_match_brute_force_units():
    """Sanity of the units the tests compare in: the scaled max load of an assignment is its real one."""
    from solver.io import parse_instance

    inst = parse_instance({"format": "kassign/v1", "topics": {"T": {"partitions": 2, "weights": [0.5, 1.25]}},
                           "members": [{"id": "a", "topics": ["T"], "capacity": 2.0}, {"id": "b", "topics": ["T"]}]})
    ic, sc = _data(inst)
    best = min(r["max_load"] for r in all_assignments(inst))
    assert float(max_load_bound(ic, sc.wint, sc.ratio) * sc.load_unit) == best == 0.625  # 1.25 / 2 beside 0.5
