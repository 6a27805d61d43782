"""KIP-262 variant: replicas balanced by state-store count per thread."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics.streams.high_availability import high_availability
from heuristics.streams.state_store_weighted import state_store_weighted
from solver.io import parse_instance
from solver.result import Params
from tests.heuristics.streams.checks import assert_actives_and_standbys

A = "00000000-0000-0000-0000-00000000000a"
B = "00000000-0000-0000-0000-00000000000b"


def inst(tasks, clients, **config):
    return parse_instance({"format": "kassign/v1", "protocol": "streams", "tasks": tasks, "clients": clients,
                           "config": config})


def stores_of(i, a, client):
    spec = i.streams
    ca = a.get(client)
    return sum(spec.task(t).store_count for t in ca.active + ca.standby)


def test_kip262_motivation_heavy_task_alone():
    # one task with 6 stores and five with one: counting tasks puts 3 and 3 (8 vs 3 stores);
    # weighting by stores gives the heavy task a client of its own
    tasks = [{"id": "0_0", "stores": 6}] + [{"id": f"1_{p}", "stores": 1} for p in range(5)]
    clients = [{"id": "a", "process_id": A}, {"id": "b", "process_id": B}]
    i = inst(tasks, clients)
    a = state_store_weighted(i, Params()).assignment
    assert a.get("a").active == ("0_0",)
    assert a.get("b").active == ("1_0", "1_1", "1_2", "1_3", "1_4")
    assert (stores_of(i, a, "a"), stores_of(i, a, "b")) == (6, 5)
    ha = high_availability(i, Params()).assignment
    assert max(stores_of(i, ha, "a"), stores_of(i, ha, "b")) == 8  # Kafka balances counts only


def test_previous_owner_kept_within_quota_and_caught_up_rule():
    tasks = [{"id": "0_0", "stores": 2}, {"id": "0_1", "stores": 2}]
    clients = [{"id": "a", "process_id": A, "active": ["0_1"]},
               {"id": "b", "process_id": B, "active": ["0_0"], "lags": {"0_1": 5}}]
    a = state_store_weighted(inst(tasks, clients, num_standby_replicas=1), Params()).assignment
    assert a.get("a").active == ("0_1",) and a.get("b").active == ("0_0",)
    assert a.get("a").standby == ("0_0",) and a.get("b").standby == ("0_1",)


@st.composite
def instances(draw):
    n_tasks = draw(st.integers(1, 10))
    tasks = []
    for p in range(n_tasks):
        sf = draw(st.booleans())
        tasks.append({"id": f"0_{p}", "stateful": sf, **({"stores": draw(st.integers(0, 5))} if sf else {})})
    n = draw(st.integers(1, 4))
    pids = draw(st.lists(st.uuids().map(str), min_size=n, max_size=n, unique=True))
    owner = {t["id"]: draw(st.integers(-1, n - 1)) for t in tasks}
    clients = [{"id": f"c{c}", "process_id": pid, "capacity": draw(st.integers(1, 3)),
                "active": [t for t, o in owner.items() if o == c]} for c, pid in enumerate(pids)]
    return inst(tasks, clients, num_standby_replicas=draw(st.integers(0, 2)))


@settings(max_examples=80, deadline=None)
@given(instances())
def test_invariants(i):
    a = state_store_weighted(i, Params()).assignment
    assert_actives_and_standbys(i, a)
    spec = i.streams
    for t in spec.tasks:
        if t.stateful:  # the previous active is caught up: it never loses its task to a client that is not
            prev = [c.id for c in spec.clients if t.id in c.active]
            if prev:
                act = next(c for c, ca in a.clients.items() if t.id in ca.active)
                assert act in prev
