"""Kafka Streams sticky task assignor: hand-derived examples (Java HashMap order) and invariants."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics._java import hashmap_order
from heuristics.streams.sticky_task import sticky_task, task_java_hash
from solver.io import parse_instance
from solver.result import Params
from tests.heuristics.streams.checks import assert_actives_and_standbys

A = "00000000-0000-0000-0000-00000000000a"
B = "00000000-0000-0000-0000-00000000000b"


def inst(tasks, clients, **config):
    return parse_instance({"format": "kassign/v1", "protocol": "streams", "tasks": tasks, "clients": clients,
                           "config": config})


def test_task_hash_is_objects_hash():
    # Objects.hash(0, 3, null) = ((31 + 0) * 31 + 3) * 31 + 0
    assert task_java_hash((0, 3)) == ((31 + 0) * 31 + 3) * 31
    # buckets (hash & 15): 0_0 -> 15, 0_1 -> 14, 0_2 -> 13, 0_3 -> 12: HashMap order is 0_3, 0_2, 0_1, 0_0
    assert hashmap_order([(0, p) for p in range(4)], lambda k: task_java_hash(k)) == [(0, 3), (0, 2), (0, 1),
                                                                                   (0, 0)]


def test_previous_actives_stay_within_quota():
    tasks = [{"id": f"0_{p}"} for p in range(4)]
    a = sticky_task(inst(tasks, [{"id": "a", "process_id": A, "active": ["0_0", "0_1"]},
                                 {"id": "b", "process_id": B, "active": ["0_2", "0_3"]}]), Params()).assignment
    assert a.get("a").active == ("0_0", "0_1") and a.get("b").active == ("0_2", "0_3")
    assert not a.probing_rebalance


def test_new_client_takes_tasks_in_hashmap_order():
    tasks = [{"id": f"0_{p}"} for p in range(4)]
    a = sticky_task(inst(tasks, [{"id": "a", "process_id": A, "active": ["0_0", "0_1", "0_2", "0_3"]},
                                 {"id": "b", "process_id": B}]), Params()).assignment
    # quota 4 // 2 threads = 2 per thread: "a" keeps the first two of HashMap<TaskId> order (0_3, 0_2)
    assert a.get("a").active == ("0_2", "0_3")
    assert a.get("b").active == ("0_0", "0_1")


def test_previous_standby_holder_takes_the_task():
    tasks = [{"id": "0_0"}, {"id": "0_1"}]
    a = sticky_task(inst(tasks, [{"id": "a", "process_id": A, "standby": ["0_1"], "lags": {"0_1": 5}},
                                 {"id": "b", "process_id": B, "standby": ["0_0"]}], num_standby_replicas=1),
                    Params()).assignment
    assert a.get("a").active == ("0_1",) and a.get("b").active == ("0_0",)
    assert a.get("a").standby == ("0_0",) and a.get("b").standby == ("0_1",)


@st.composite
def instances(draw):
    n_tasks = draw(st.integers(1, 10))
    tasks = [{"id": f"{p % 2}_{p}", "stateful": draw(st.booleans())} for p in range(n_tasks)]
    stateful = [t["id"] for t in tasks if t["stateful"]]
    n = draw(st.integers(1, 5))
    pids = draw(st.lists(st.uuids().map(str), min_size=n, max_size=n, unique=True))
    owner = {t["id"]: draw(st.integers(-1, n - 1)) for t in tasks}
    clients = []
    for c, pid in enumerate(pids):
        active = [t for t, o in owner.items() if o == c]
        rest = [t for t in stateful if t not in active]
        standby = draw(st.lists(st.sampled_from(rest), unique=True, max_size=2)) if rest else []
        clients.append({"id": f"c{c}", "process_id": pid, "capacity": draw(st.integers(1, 3)), "active": active,
                        "standby": standby})
    return inst(tasks, clients, num_standby_replicas=draw(st.integers(0, 2)))


@settings(max_examples=80, deadline=None)
@given(instances())
def test_invariants(i):
    a = sticky_task(i, Params()).assignment
    assert_actives_and_standbys(i, a)


def test_kafkas_answer_with_an_active_on_a_lagging_client_is_valid_and_counted():
    """Kafka's legacy sticky assignor may put a stateful active on a client that is not caught up: Kafka
    allows it (restoration pays for it), so the scorer counts it instead of calling the answer invalid."""
    from solver.registry import get
    from solver.result import Params
    from solver.streams.scoring import score_streams
    from spark_runner.scenarios.streams import generate_streams, params_from_dict

    p = params_from_dict({"protocol": "streams", "clients": 5, "subtopologies": 3, "partitions_min": 3,
                          "partitions_max": 6, "stores_max": 3, "standby_replicas": 1, "initial": "mixed",
                          "restore_rate": 30000, "steps": 1})
    inst = generate_streams(p, 0).initial
    s = score_streams(inst, get("sticky-task").run(inst, Params()).assignment)
    assert s["not_caught_up_actives"] > 0
    assert s["valid"] and s["outcome"] == "valid" and s["violations"] == []
