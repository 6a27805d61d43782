"""Kafka Streams' ClientTagAwareStandbyTaskAssignor (KIP-708): hand-checked placements and the movement rules.

The differential tests (tests/heuristics/differential/test_streams.py) check the whole assignor against
Kafka's jars at every release; these pin the rule's parts on cases small enough to follow by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics._java import JavaHashMap
from heuristics.streams.client_state import ClientState
from heuristics.streams.client_tags import ClientTagStandbys
from heuristics.streams.high_availability import high_availability
from solver.io import parse_instance
from solver.result import Params
from tests.heuristics.differential.check import streams_answer

PID = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(1, 10)]


def states_with_active(n: int, task: int, owner: int) -> list[ClientState]:
    states = [ClientState(1) for _ in range(n)]
    states[owner].assign_active(task)
    return states


def holders(states: list[ClientState], task: int) -> list[int]:
    return [c for c, s in enumerate(states) if task in s.standby]


def test_second_standby_forgets_a_key_whose_values_are_used_up():
    # zone has two values: after the first standby (zone b) both are used, so zone no longer constrains
    tags = [{"zone": "a"}, {"zone": "a"}, {"zone": "b"}, {"zone": "b"}]
    cts = ClientTagStandbys(tags, ["zone"], list(range(4)))
    states = states_with_active(4, 0, 0)
    cts.assign(states, [0], 2)
    assert holders(states, 0) == [1, 2]  # first: lightest of zone b (client 2); second: lightest left (1)


def test_client_without_the_key_is_on_no_entry():
    tags = [{"zone": "a"}, {"zone": "a"}, {}, {"zone": "b"}]
    cts = ClientTagStandbys(tags, ["zone"], list(range(4)))
    states = states_with_active(4, 0, 0)
    states[3].assign_active(1)  # client 3 is heavier
    cts.assign(states, [0], 1)
    assert holders(states, 0) == [2]  # not on zone a, lighter than client 3


def test_no_client_on_unused_entries_falls_back_to_least_loaded():
    # active on (a, x): zone a and cluster x are used; client 1 is (a, y), client 2 (b, x): neither qualifies
    tags = [{"zone": "a", "cluster": "x"}, {"zone": "a", "cluster": "y"}, {"zone": "b", "cluster": "x"}]
    cts = ClientTagStandbys(tags, ["zone", "cluster"], list(range(3)))
    states = states_with_active(3, 0, 0)
    states[1].assign_active(1)
    cts.assign(states, [0, 1], 1)
    # task 0 waits; task 1 (active on client 1, (a, y)): zone a and cluster y used -> client 2 (b, x).
    # Fallback for task 0: every client offered again, the lightest without it: clients 1 and 2 hold one
    # task each, the lower process id (1) wins.
    assert holders(states, 0) == [1] and holders(states, 1) == [2]


def test_unconfigured_keys_do_not_constrain_placement():
    tags = [{"zone": "a", "host": "h1"}, {"zone": "b", "host": "h1"}, {"zone": "a", "host": "h2"}]
    cts = ClientTagStandbys(tags, ["zone"], list(range(3)))
    states = states_with_active(3, 0, 0)
    cts.assign(states, [0], 1)
    assert holders(states, 0) == [1]  # same host as the active, other zone


def test_movement_rules():
    tags = [{"zone": "a"}, {"zone": "a", "host": "h"}, {"zone": "b"}, {}]
    cts = ClientTagStandbys(tags, ["zone"], list(range(4)))
    # two clients: the destination must have every tag of the source, configured or not
    assert cts.may_move(0, 1) and not cts.may_move(1, 0) and not cts.may_move(0, 2)
    assert cts.may_move(3, 0) and not cts.may_move(0, 3)
    # per task: distinct (key, value) tags among the holders must not shrink
    states = [ClientState(1) for _ in tags]
    states[2].assign_active(0)
    states[0].assign_standby(0)
    assert cts.may_move_task(0, 1, 0, states)  # {zone=b, zone=a} -> {zone=b, zone=a, host=h}
    assert not cts.may_move_task(0, 3, 0, states)  # -> {zone=b}
    assert not cts.may_move_task(2, 3, 0, states)  # {zone=a, zone=b} -> {zone=a}
    assert cts.may_move_task(2, 1, 0, states)  # {zone=a, zone=b} -> {zone=a, host=h}: as many


def _doc(tags: list[dict[str, str]], keys: list[str], standbys: int, n_tasks: int, caps: list[int]) -> dict:
    return {"format": "kassign/v1", "protocol": "streams",
            "tasks": [{"id": f"0_{p}"} for p in range(n_tasks)],
            "clients": [{"id": f"c{i}", "process_id": PID[i], "capacity": caps[i], "client_tags": t}
                        for i, t in enumerate(tags)],
            "config": {"num_standby_replicas": standbys, "rack_aware_assignment_tags": keys}}


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 6), st.integers(1, 3), st.integers(1, 12), st.data())
def test_one_value_per_key_places_as_without_tags(n, standbys, n_tasks, data):
    """A key every client shares (or no client has) tells no client apart: Kafka forgets it at once, so the
    tag-aware placement equals the least-loaded one."""
    caps = data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    tags = [{"zone": "z"} if data.draw(st.booleans()) else {} for _ in range(n)]
    if all(not t for t in tags) or all(t for t in tags):
        with_tags = _doc(tags, ["zone"], standbys, n_tasks, caps)
        without = _doc([{} for _ in range(n)], [], standbys, n_tasks, caps)
        ours = high_availability(parse_instance(with_tags), Params()).assignment
        plain = high_availability(parse_instance(without), Params()).assignment
        assert ours == plain


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 7), st.integers(1, 3), st.integers(1, 12), st.data())
def test_every_task_gets_its_standbys_on_distinct_clients(n, standbys, n_tasks, data):
    caps = data.draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    tags = [{k: data.draw(st.sampled_from(["a", "b", "c"])) for k in ("zone", "cluster") if data.draw(st.booleans())}
            for _ in range(n)]
    a = high_availability(parse_instance(_doc(tags, ["zone", "cluster"], standbys, n_tasks, caps)),
                          Params()).assignment
    for p in range(n_tasks):
        tid = f"0_{p}"
        active = [c for c in a.clients if tid in a.get(c).active]
        standby = [c for c in a.clients if tid in a.get(c).standby]
        assert len(active) == 1 and active[0] not in standby
        assert len(standby) == min(standbys, n - 1)


def test_cli_refuses_bad_tags_with_65_and_assigns_good_ones(tmp_path):
    from tests.spark_runner.cli.test_cli import kassign

    tags = [{"zone": "a"}, {"zone": "a"}, {"zone": "b"}]
    good = _doc(tags, ["zone"], 1, 3, [1, 1, 1])
    f = tmp_path / "tags.json"
    f.write_text(json.dumps(good))
    r = kassign("assign", str(f), "-a", "high-availability")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["assignment"]
    zone = {f"c{i}": t["zone"] for i, t in enumerate(tags)}
    for p in range(3):  # one standby each, never in the active's zone (the balancing keeps a standby's zone)
        active = next(c for c, v in out.items() if f"0_{p}" in v["active"])
        standby = [c for c, v in out.items() if f"0_{p}" in v.get("standby", [])]
        assert len(standby) == 1
        assert zone[standby[0]] != zone[active]
    bad = dict(good, config={"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone", ""]})
    bad["clients"][0]["client_tags"] = {"zone": "x" * 31}
    f.write_text(json.dumps(bad))
    r = kassign("assign", str(f), "-a", "high-availability")
    assert r.returncode == 65 and "Traceback" not in r.stderr and r.stdout == ""
    assert f"{f}: clients[0].client_tags.zone: tag value of 31 characters; Kafka allows at most 30" in r.stderr
    assert f"{f}: config.rack_aware_assignment_tags[1]: blank tag key" in r.stderr


# Three random groups (differential sample, seed 11) with Kafka's released answer, the same at 3.8.1 and
# 4.4.0 (java/harness): each needs one part of the rule, and gets another answer without it.
KAFKA_GROUPS = json.loads((Path(__file__).parent / "data" / "client_tags_kafka.json").read_text())


def _ablate(rule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if rule == "balance":  # balancing that ignores the tags
        monkeypatch.setattr(ClientTagStandbys, "may_move", lambda self, s, d: True)
    elif rule == "optimisation":  # KIP-925's standby optimisation that ignores the tags
        monkeypatch.setattr(ClientTagStandbys, "may_move_task", lambda self, s, d, t, st: True)
    else:  # waiting tasks in task order instead of Kafka's HashMap order
        order = JavaHashMap.order
        monkeypatch.setattr(JavaHashMap, "order", lambda self: sorted(order(self)))


@pytest.mark.parametrize("case", KAFKA_GROUPS, ids=lambda c: c["rule"])
def test_kafka_answers_need_each_part_of_the_rule(case: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    for release in ("3.8.1", "4.4.0"):
        assert streams_answer("high-availability", case["instance"], release) == case["kafka"]
    _ablate(case["rule"], monkeypatch)
    assert streams_answer("high-availability", case["instance"], "4.4.0") != case["kafka"]
