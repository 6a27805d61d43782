"""The flows' movement bound (the replica relaxation with the kept gadget) against exhaustive search."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from solver.io import parse_instance
from solver.result import Params, Status
from solver.streams import flow as fl
from solver.streams.optimal import STAGES, StreamsProblem, solve_streams
from tests.solver.streams.test_optimal import _natural_to_int, brute_force


@st.composite
def tight(draw):
    """Tiny groups where the balance binds: every task had an owner, some owners left, lags near the limit."""
    n_clients = draw(st.integers(2, 3))
    n_tasks = draw(st.integers(2, 5))
    tasks = [{"id": f"{p % 2}_{p}", "stateful": draw(st.booleans())} for p in range(n_tasks)]
    clients = [{"id": f"c{c}", "process_id": f"00000000-0000-0000-0000-00000000000{c + 1}",
                "capacity": draw(st.integers(1, 2)), "active": [], "lags": {}} for c in range(n_clients)]
    for t in tasks:
        owner = draw(st.integers(-1, n_clients - 1))
        if owner >= 0:
            clients[owner]["active"].append(t["id"])
        if t["stateful"]:
            for c in range(n_clients):
                if c != owner and draw(st.booleans()):
                    clients[c]["lags"][t["id"]] = draw(st.sampled_from([0, 5, 10, 50]))
    cfg = {"num_standby_replicas": draw(st.integers(0, 1)), "acceptable_recovery_lag": 10,
           "active_on_caught_up": draw(st.booleans())}
    return parse_instance({"format": "kassign/v1", "protocol": "streams", "tasks": tasks, "clients": clients,
                           "config": cfg})


@settings(max_examples=150, deadline=None)
@given(tight())
def test_kept_gadget_bound_never_exceeds_the_optimal_movement(inst):
    p = StreamsProblem.of(inst)
    za, zt, restore, moved = brute_force(p)
    rel = fl.replicas(p, zt, True, za)
    assert rel is not None  # the optimum is a flow of the relaxation
    assert rel.restoration <= restore
    if rel.restoration == restore:  # the bound is claimed only at the proven restoration
        n_prev = sum(1 for pr in p.prev_active if pr)
        assert n_prev - rel.kept_prev <= moved, (n_prev, rel.kept_prev, moved)


@settings(max_examples=60, deadline=None)
@given(tight())
def test_reported_bounds_never_beat_the_optimum(inst):
    p = StreamsProblem.of(inst)
    best = brute_force(p)
    res = solve_streams(inst, Params(time_limit=20))
    values = _natural_to_int(p, STAGES, res.objective)
    bounds = _natural_to_int(p, STAGES, res.bound)
    assert res.status is Status.OPTIMAL and values == best
    for k in range(len(STAGES)):
        # a stage's bound holds given the earlier stages' values: only where those equal the optimum's
        if values[:k] == best[:k]:
            assert bounds[k] <= best[k]
