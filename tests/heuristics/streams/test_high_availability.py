"""HighAvailabilityTaskAssignor (KIP-441): hand-checked examples and invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics.streams.high_availability import high_availability
from heuristics.streams.java import JavaPriorityQueue
from solver.io import parse_instance
from solver.result import Params

# Java's UUID order is signed: "8..." sorts before "0...".
P_HIGH = "80000000-0000-0000-0000-000000000001"
P_LOW = "00000000-0000-0000-0000-000000000002"


def inst(tasks, clients, **config):
    return parse_instance({"format": "kassign/v1", "protocol": "streams", "tasks": tasks, "clients": clients,
                           "config": config})


def run(i):
    return high_availability(i, Params())


def test_round_robin_follows_signed_uuid_order():
    i = inst([{"id": "0_0", "stateful": False}, {"id": "0_1", "stateful": False}],
             [{"id": "low", "process_id": P_LOW}, {"id": "high", "process_id": P_HIGH}])
    a = run(i).assignment
    # stateless tasks go to the least loaded client, ties to the lower process id: "high" first
    assert a.get("high").active == ("0_0",) and a.get("low").active == ("0_1",)
    assert not a.probing_rebalance


def test_actives_return_to_caught_up_owner_with_warmups():
    tasks = [{"id": f"0_{p}"} for p in range(4)]
    clients = [{"id": "A", "process_id": P_HIGH, "active": ["0_0", "0_1"]},
               {"id": "B", "process_id": P_LOW, "active": ["0_2", "0_3"]}]
    res = run(inst(tasks, clients, max_warmup_replicas=2))
    a = res.assignment
    # round robin puts 0_0,0_2 on A and 0_1,0_3 on B; the movements send each active back to its caught-up
    # owner and leave a warm-up on the balanced target
    assert a.get("A").active == ("0_0", "0_1") and a.get("A").warmup == ("0_2",)
    assert a.get("B").active == ("0_2", "0_3") and a.get("B").warmup == ("0_1",)
    assert a.probing_rebalance and res.extra["probing_rebalance"] is True
    assert res.extra["warmups"] == 2


def test_warmups_limited_by_max_warmup_replicas():
    tasks = [{"id": f"0_{p}"} for p in range(4)]
    clients = [{"id": "A", "process_id": P_HIGH, "active": ["0_0", "0_1"]},
               {"id": "B", "process_id": P_LOW, "active": ["0_2", "0_3"]}]
    a = run(inst(tasks, clients, max_warmup_replicas=1)).assignment
    # movements in (caught-up count, task) order: 0_1 takes the only warm-up
    assert a.get("B").warmup == ("0_1",) and a.get("A").warmup == ()
    assert a.get("A").active == ("0_0", "0_1")


def test_acceptable_recovery_lag_makes_a_client_caught_up():
    tasks = [{"id": "0_0"}, {"id": "0_1"}]
    clients = [{"id": "A", "process_id": P_HIGH, "active": ["0_0", "0_1"]},
               {"id": "B", "process_id": P_LOW, "lags": {"0_1": 50}}]
    near = run(inst(tasks, clients, acceptable_recovery_lag=100)).assignment
    assert near.get("B").active == ("0_1",) and not near.probing_rebalance
    far = run(inst(tasks, clients, acceptable_recovery_lag=10)).assignment
    assert far.get("A").active == ("0_0", "0_1") and far.get("B").warmup == ("0_1",)
    assert far.probing_rebalance


def test_standby_swaps_with_active_without_warmup():
    tasks = [{"id": "0_0"}, {"id": "0_1"}]
    clients = [{"id": "A", "process_id": P_HIGH, "active": ["0_1"], "standby": ["0_0"], "lags": {"0_0": 0}},
               {"id": "B", "process_id": P_LOW, "active": ["0_0"], "standby": ["0_1"], "lags": {"0_1": 0}}]
    a = run(inst(tasks, clients, num_standby_replicas=1)).assignment
    assert a.get("A").active == ("0_0",) and a.get("A").standby == ("0_1",)
    assert a.get("B").active == ("0_1",) and a.get("B").standby == ("0_0",)
    assert not a.probing_rebalance


def test_java_priority_queue_keeps_stale_order_like_the_jdk():
    load = {"a": 1, "b": 2, "c": 3}
    q = JavaPriorityQueue(lambda x: (load[x],))
    for x in "abc":
        q.offer(x)
    load["c"] = 0  # a key changes while in the heap: the JDK does not notice
    assert q.poll() == "a"
    assert list(q) == ["c", "b"]  # "c" sifted down as the last element, compared with its new key


@st.composite
def instances(draw):
    n_tasks = draw(st.integers(1, 12))
    tasks = [{"id": f"{p % 3}_{p}", "stateful": draw(st.booleans())} for p in range(n_tasks)]
    stateful = [t["id"] for t in tasks if t["stateful"]]
    n_clients = draw(st.integers(1, 5))
    pids = draw(st.lists(st.uuids().map(str), min_size=n_clients, max_size=n_clients, unique=True))
    owner = {t["id"]: draw(st.integers(-1, n_clients - 1)) for t in tasks}
    clients = []
    for c, pid in enumerate(pids):
        active = [t for t, o in owner.items() if o == c]
        rest = [t for t in stateful if t not in active]
        lags = {t: draw(st.integers(0, 300)) for t in rest if draw(st.booleans())}
        clients.append({"id": f"c{c}", "process_id": pid, "capacity": draw(st.integers(1, 3)),
                        "active": active, "lags": lags})
    cfg = {"num_standby_replicas": draw(st.integers(0, 2)), "acceptable_recovery_lag": draw(st.integers(0, 200)),
           "max_warmup_replicas": draw(st.integers(1, 3))}
    return inst(tasks, clients, **cfg)


@settings(max_examples=80, deadline=None)
@given(instances())
def test_invariants(i):
    res = run(i)
    a = res.assignment
    spec = i.streams
    cfg = spec.config
    actives = [t for ca in a.clients.values() for t in ca.active]
    assert sorted(actives) == sorted(spec.task_ids)  # every task exactly once as an active
    warm = 0
    for ca in a.clients.values():
        held = list(ca.active) + list(ca.standby) + list(ca.warmup)
        assert len(held) == len(set(held))  # never two copies on one client
        warm += len(ca.warmup)
    assert warm <= cfg.max_warmup_replicas
    for t in spec.tasks:
        n_standby = sum(t.id in ca.standby for ca in a.clients.values())
        assert n_standby <= cfg.num_standby_replicas
        if not t.stateful:
            assert all(t.id not in ca.standby and t.id not in ca.warmup for ca in a.clients.values())
    if warm:
        assert a.probing_rebalance
