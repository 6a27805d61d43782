"""The memory guard: instances too large for the machine (or the command) are refused before anything is built."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from solver.io import parse_instance
from solver.planning.plan import PlanConfig, plan
from solver.resources import (
    HA_WORK_LIMIT,
    MEMORY_ENV,
    TooLargeError,
    available_memory,
    consumer_need,
    parse_size,
    streams_need,
)
from spark_runner.assignors import get
from tests.conftest import REPO


def consumer(partitions: int, members: int = 2) -> Any:
    return parse_instance({"format": "kassign/v1", "topics": {"T1": partitions},
                           "members": [{"id": f"C{i}", "topics": ["T1"]} for i in range(members)]})


def weighted(partitions: int, members: int = 2) -> Any:
    topic = {"partitions": partitions, "weights": [1 + p % 7 for p in range(partitions)]}
    return parse_instance({"format": "kassign/v1", "topics": {"T1": topic},
                           "members": [{"id": f"C{i}", "topics": ["T1"]} for i in range(members)]})


def test_a_million_equal_partitions_over_2000_members_fit_in_a_gigabyte(monkeypatch: pytest.MonkeyPatch) -> None:
    """Kafka's benchmark size (turn 1: proven in under a second) is not refused by the pair estimate."""
    inst = consumer(10**6, 2000)
    assert consumer_need(inst, "solver", "x").bytes < 1 << 30
    assert consumer_need(weighted(10**5, 2000), "solver", "x").bytes > 2 << 30


def streams(clients: int, partitions: int, standbys: int = 1) -> Any:
    return parse_instance({"format": "kassign/v1", "protocol": "streams",
                           "subtopologies": [{"id": 0, "source_topics": {"a": partitions}}],
                           "clients": [{"id": f"c{i}", "process_id": f"00000000-0000-0000-0000-{i:012d}"}
                                       for i in range(clients)],
                           "config": {"num_standby_replicas": standbys}})


def test_parse_size_and_the_environment_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_size("1.5G") == 3 << 29 and parse_size("64k") == 65536
    with pytest.raises(ValueError):
        parse_size("lots")
    monkeypatch.setenv(MEMORY_ENV, "123M")
    assert available_memory() == 123 << 20
    monkeypatch.delenv(MEMORY_ENV)
    assert available_memory() > 0


def test_estimates_grow_with_partitions_pairs_and_replicas() -> None:
    small, big = consumer_need(consumer(10), "heuristic", "x"), consumer_need(consumer(10_000), "heuristic", "x")
    assert big.bytes == 1000 * small.bytes and big.path == "topics.T1.partitions"
    # the weighted optimum keeps class x member counts; equal items go to the flow, whose arcs follow classes
    assert consumer_need(weighted(100, 4), "solver", "x").bytes > consumer_need(weighted(100, 2), "solver", "x").bytes
    assert consumer_need(consumer(100, 4), "solver", "x").bytes == consumer_need(consumer(100, 2), "solver", "x").bytes
    one, two = streams_need(streams(3, 10, 0), "solver", "x"), streams_need(streams(3, 10, 1), "solver", "x")
    assert two.bytes > one.bytes
    assert streams_need(streams(3, 10, 10**9), "solver", "x").bytes == streams_need(streams(3, 10, 2), "solver",
                                                                                      "x").bytes  # replicas <= clients


@pytest.mark.parametrize("name", ["range", "cooperative-sticky", "optimal"])
def test_100_million_partitions_are_refused_up_front(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV, "1G")
    inst = consumer(10**8)
    t0 = time.perf_counter()
    with pytest.raises(TooLargeError) as e:
        get(name).run(inst)
    assert time.perf_counter() - t0 < 1  # nothing was built per partition
    [p] = e.value.problems
    assert p.path == "topics.T1.partitions" and "needs about" in p.message and "1.0 GB is available" in p.message
    assert e.value.exit_code == 65


def test_high_availability_work_limit_refuses_20000_clients_x_2000_tasks() -> None:
    inst = streams(20_000, 2_000)
    with pytest.raises(TooLargeError) as e:
        get("high-availability").run(inst)
    assert "would run for hours" in str(e.value) and f"{HA_WORK_LIMIT:.3g}" in str(e.value)


@pytest.mark.parametrize("capacity", [2**31 - 1, 100_001])
def test_the_server_side_streams_assignor_refuses_more_members_than_it_assigns_in_25_s(capacity: int) -> None:
    """KIP-1071's assignor runs a member per stream thread: a client of capacity 2^31-1 ran for days (and took
    compare and frontier with it); 100,000 members take about 25 s."""
    doc = json.loads((REPO / "examples" / "streams-app.json").read_text())
    doc["clients"][0]["capacity"] = capacity
    t0 = time.monotonic()
    with pytest.raises(TooLargeError, match=r"^.*: clients: assignor 'streams-server-sticky' on [\d,]+ group members "
                                            r"\(a client without members counts its capacity: one member per stream "
                                            r"thread\): at most 100,000"):
        get("streams-server-sticky").run(parse_instance(doc))
    assert time.monotonic() - t0 < 5
    doc["clients"][0]["capacity"] = 2**31 - 1  # the other Streams assignors read capacity as a number
    get("high-availability").run(parse_instance(doc))


def test_optimal_streams_20000_clients_x_2000_tasks_is_refused_for_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV, "8G")
    with pytest.raises(TooLargeError, match=r"needs about .* of memory; 8\.0 GB is available"):
        get("optimal-streams").run(streams(20_000, 2_000))


def test_derived_tasks_are_checked_before_they_are_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV, "1G")
    t0 = time.perf_counter()
    with pytest.raises(TooLargeError) as e:
        streams(1, 2**31 - 1)
    assert time.perf_counter() - t0 < 1
    assert e.value.problems[0].path == "subtopologies[0].source_topics"


def test_plan_refuses_100000_members_and_a_billion_standbys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MEMORY_ENV, "4G")
    with pytest.raises(TooLargeError) as e:
        plan(consumer(1000, 100_000), PlanConfig(capacity=10))
    assert e.value.problems[0].path == "members"
    with pytest.raises(TooLargeError) as e:
        plan(streams(3, 8, 10**9), PlanConfig(capacity=10))
    assert e.value.problems[0].path == "config.num_standby_replicas"


def test_plan_time_limit_bounds_the_whole_command() -> None:
    inst = consumer(400, 30)
    t0 = time.perf_counter()
    doc = plan(inst, PlanConfig(capacity=7, time_limit=0.5, range=(1, 200)))
    took = time.perf_counter() - t0
    assert 1 <= len(doc["rows"]) < 200 and doc["range"][1] == doc["rows"][-1]["n"]
    assert any("time limit (0.5 s) reached" in n for n in doc["notes"])
    assert took < 0.5 + 20  # documented slack: the row in progress when the limit passes
    json.dumps(doc)


def test_small_needs_in_a_row_read_the_memory_left_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of thousands of small instances read /proc five times per instance: half its time."""
    import solver.resources as res

    calls: list[int] = []

    def avail() -> int:
        calls.append(1)
        return 8 << 30

    monkeypatch.setattr(res, "available_memory", avail)
    monkeypatch.setattr(res, "_last_seen", None)
    for _ in range(1000):
        res.check_fits(res.Need(1 << 20, "a small one"), "b.jsonl")
    assert len(calls) == 1
    res.check_fits(res.Need(res.SMALL_NEED + 1, "a larger one"), "b.jsonl")  # read again
    assert len(calls) == 2
    monkeypatch.setattr(res, "_last_seen", (time.monotonic(), 10 << 20))  # little was left: read again
    res.check_fits(res.Need(1 << 20, "a small one"), "b.jsonl")
    assert len(calls) == 3


def test_a_streams_instance_has_at_most_100000_tasks() -> None:
    """Was: a subtopology of a million partitions passed the memory estimate, then every Streams command ran for
    minutes."""
    from solver.streams.format import MAX_TASKS

    with pytest.raises(TooLargeError, match=r"^big: subtopologies\[0\]\.source_topics: 1,000,000 tasks, more than a "
                                            r"Streams instance's limit of 100,000"):
        parse_instance({"format": "kassign/v1", "protocol": "streams", "name": "big",
                        "subtopologies": [{"id": 0, "source_topics": {"a": 10**6}}],
                        "clients": [{"id": "c", "process_id": "00000000-0000-0000-0000-000000000001"}]}, "big")
    tasks = [{"id": f"0_{p}", "stateful": False} for p in range(MAX_TASKS + 1)]
    with pytest.raises(TooLargeError, match=r"^big: tasks: 100,001 tasks"):
        parse_instance({"format": "kassign/v1", "protocol": "streams", "tasks": tasks,
                        "clients": [{"id": "c", "process_id": "00000000-0000-0000-0000-000000000001"}]}, "big")
    assert len(streams(3, MAX_TASKS).streams.tasks) == MAX_TASKS


@pytest.mark.parametrize("name", ["sticky-task", "kip924-sticky"])
def test_sticky_task_assignors_refuse_more_task_pairs_than_they_keep_in_10_s(name: str) -> None:
    """Kafka's TaskPairs is quadratic in the tasks per client: 10,000 tasks on 3 clients took a minute and 1.6 GB,
    100,000 six GB (the memory estimate had no term for it)."""
    t0 = time.monotonic()
    with pytest.raises(TooLargeError, match=r"pairs of tasks that share a client \(Kafka's TaskPairs\): at most "
                                            r"5,000,000"):
        get(name).run(streams(3, 10_000, standbys=0))
    assert time.monotonic() - t0 < 5
    get(name).run(streams(3, 3_000, standbys=0))  # 1.5 million pairs: seconds


def test_plan_takes_at_most_100000_items() -> None:
    from solver.planning.plan import PLAN_MAX_ITEMS

    with pytest.raises(TooLargeError, match=r"plan of 100,001 items: at most 100,000"):
        plan(consumer(PLAN_MAX_ITEMS + 1, 2), PlanConfig(capacity=10.0))


@pytest.mark.parametrize("name", ["sticky-task", "kip924-sticky", "state-store-weighted"])
def test_streams_heuristics_that_scan_every_client_per_replica_have_a_work_limit(name: str) -> None:
    """20,000 clients x 2,000 tasks ran sticky-task for minutes (kip924-sticky is slower still)."""
    t0 = time.monotonic()
    with pytest.raises(TooLargeError, match=r"scans every client for every replica it places"):
        get(name).run(streams(20_000, 2_000))
    assert time.monotonic() - t0 < 10


def test_cpsat_workers_count_what_threads_reserve_under_an_address_space_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: a Streams plan's packing (10,935 variables and constraints) got 4 workers with 77 MB of address space
    left under ``ulimit -v 512M`` and the process died in std::bad_alloc (SIGABRT) during the search."""
    import solver.resources as res

    monkeypatch.setattr(res, "available_memory", lambda: 77 << 20)
    monkeypatch.setattr(res, "_rlimits", lambda: [77 << 20])
    monkeypatch.setattr(res, "_thread_stack", lambda: 8 << 20)
    # each worker: 8 MiB stack + 1 MiB + 1,500 B x 10,935 = 24.6 MB; usable: 3/4 of 77 MiB - 16 MiB = 41.75 MiB
    assert res.cpsat_workers(10_935, 8) == 1
    monkeypatch.setattr(res, "available_memory", lambda: 400 << 20)
    assert res.cpsat_workers(10_935, 8) == 8 and res.cpsat_workers(10_935, 2) == 2
    monkeypatch.setattr(res, "available_memory", lambda: 40 << 20)
    with pytest.raises(TooLargeError, match=r"a CP-SAT solve of 10,935 variables and constraints needs about "
                                            r"54\.\d MB of memory; 40\.0 MB is available"):
        res.cpsat_workers(10_935, 8)


def test_cpsat_workers_without_an_address_space_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import solver.resources as res

    monkeypatch.setattr(res, "_rlimits", lambda: [])
    monkeypatch.setattr(res, "available_memory", lambda: 200 << 20)
    # 8 MiB + 512 B x 60,000 per worker (38.7 MB) within 200 MiB - 16 MiB
    assert res.cpsat_workers(60_000, 8) == 4
    monkeypatch.setattr(res, "available_memory", lambda: 20 << 20)
    with pytest.raises(TooLargeError):
        res.cpsat_workers(60_000, 8)
