"""Starting solutions: every item placed once on an eligible member; shed-and-refill within its cap or None."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.consumer.exact.bounds import max_load_bound
from solver.consumer.exact.primal.search import moved_cost, nl_max
from solver.consumer.exact.primal.start import lpt, shed_refill
from tests.solver.consumer.optimal_strategies import engine_data as _data
from tests.solver.consumer.optimal_strategies import instances

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _placed_once(ic, d, x):
    assert x.shape == (ic.n_classes, ic.n_members) and x.min() >= 0
    assert x.sum(axis=1).tolist() == ic.count.tolist()
    for c in range(ic.n_classes):
        assert all(x[c, m] == 0 for m in set(range(ic.n_members)) - set(d.eligible[c]))


@SETTINGS
@given(inst=instances(max_topics=3, max_partitions=8, max_members=5, weights=True, capacities=True,
                      move_costs=True, copartition="any"), sticky=st.booleans())
def test_lpt_places_every_item(inst, sticky):
    ic, _, d = _data(inst)
    _placed_once(ic, d, lpt(d, sticky=sticky))


@SETTINGS
@given(inst=instances(max_topics=3, max_partitions=8, max_members=5, weights=True, capacities=True,
                      move_costs=True, copartition="any"), slack=st.sampled_from([0, 1, 5, 20, 100]),
       exact_cover=st.booleans(), seed=st.integers(0, 3))
def test_shed_refill_within_its_cap_or_none(inst, slack, exact_cover, seed):
    ic, sc, d = _data(inst)
    cap = max_load_bound(ic, sc.wint, sc.ratio) * (100 + slack) // 100
    x = shed_refill(d, cap, seed=seed, exact_cover=exact_cover)
    if x is None:
        return
    _placed_once(ic, d, x)
    assert nl_max(d, x) <= cap


def test_shed_refill_keeps_everything_when_owners_fit():
    """At a cap every owner's load fits, nothing owned moves; orphans go where they fit."""
    from solver.consumer.exact.primal.data import Data

    d = Data(weights=[4, 3, 2], counts=[1, 1, 2], eligible=[[0, 1]] * 3, cost=[{0: 0}, {1: 0}, {}],
             ratio=[1, 1], default_cost=[5, 5, 0])
    x = shed_refill(d, 6)
    assert x is not None and moved_cost(d, x) == 0
    assert sorted(((np.asarray(d.weights) @ x) * 1).tolist()) == [5, 6]  # best fit: 4 + 2 beside 3 + 2


def test_shed_refill_refuses_when_an_item_fits_nowhere():
    from solver.consumer.exact.primal.data import Data

    d = Data(weights=[7], counts=[1], eligible=[[0, 1]], cost=[{}], ratio=[1, 1], default_cost=[0])
    assert shed_refill(d, 6) is None
