"""The group coordinator's Streams ``sticky`` assignor (KIP-1071): Kafka's own unit tests, Java orders, properties.

``data/server_sticky_kafka_tests.json`` holds the cases of Kafka's ``StickyTaskAssignorTest`` (group coordinator,
4.4 branch) as instances, with the test's assertions; the Kafka fixture files are checked in
``tests/heuristics/test_kafka_fixture_versions.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics._java import JavaHashMap, java_string_hash
from heuristics.streams.server_sticky import server_sticky_assign
from solver.io import parse_instance
from solver.kafka_version import KafkaVersion, KafkaVersionError
from solver.registry import get
from solver.result import Params
from solver.streams.format import streams_instance_to_dict
from solver.streams.members import synthetic_members

DATA = Path(__file__).parent / "data" / "server_sticky_kafka_tests.json"


def _cases() -> list[dict[str, Any]]:
    return json.loads(DATA.read_text())["cases"]


def _tasks(doc: dict[str, Any], members: list[str], kind: str) -> set[str]:
    return {t for m in members for t in doc["members"][m][kind]}


def holds(doc: dict[str, Any], check: dict[str, Any]) -> bool:
    """Whether the assignment document satisfies one of the ported test's assertions."""
    if "any_of" in check:
        return any(all(holds(doc, c) for c in alt) for alt in check["any_of"])
    members = check.get("members") or [check["member"]]
    ok = True
    for kind in ("active", "standby"):
        got = _tasks(doc, members, kind)
        if kind in check:
            ok &= got == set(check[kind])
        if f"{kind}_has" in check:
            ok &= set(check[f"{kind}_has"]) <= got
        if f"{kind}_lacks" in check:
            ok &= not set(check[f"{kind}_lacks"]) & got
        if f"{kind}_count" in check:
            ok &= len(got) == check[f"{kind}_count"]
        for sub, n in check.get(f"{kind}_per_subtopology", {}).items():
            ok &= sum(1 for t in got if t.split("_")[0] == sub) == n
    if "max_tasks" in check:
        ok &= len(_tasks(doc, members, "active")) + len(_tasks(doc, members, "standby")) <= check["max_tasks"]
    return ok


@pytest.mark.parametrize("case", _cases(), ids=lambda c: c["kafka_test"].rsplit(".", 1)[-1])
def test_kafka_sticky_task_assignor_tests(case: dict[str, Any], registry_loaded: None) -> None:
    inst = parse_instance(case["instance"])
    res = get("streams-server-sticky").run(inst, Params(kafka_version=case["kafka_version"]))
    doc = res.assignment.to_json_dict()
    failed = [c for c in case["assert"] if not holds(doc, c)]
    assert not failed, (failed, doc["members"])


def test_ported_ids_keep_kafkas_orders() -> None:
    """The renamed member and process ids are walked by Kafka's maps in the order the tests' ids were."""
    for case in _cases():
        renamed = case["renamed"]
        members = JavaHashMap(java_string_hash)
        for new in renamed["members"].values():
            members.put(new)
        assert members.order() == list(renamed["members"].values())  # the tests' LinkedHashMap order
        process_of = {m["id"]: c["id"] for c in case["instance"]["clients"] for m in c["members"]}
        names = [process_of[m] for m in members.order()]  # the test's process names, in member order

        def walk(keys: list[str]) -> list[str]:
            table = JavaHashMap(java_string_hash, len(keys))
            for k in keys:
                table.compute_if_absent(k)
            return table.order()

        assert walk([renamed["processes"][p] for p in names]) == [renamed["processes"][p] for p in walk(names)]


def test_kafka_20899_case_fails_at_4_3_1(registry_loaded: None) -> None:
    """KAFKA-20899's own test: 4.3.1 gave up on standby 2's holders because the *first* one's process has it."""
    case = next(c for c in _cases() if "DoesNotHoldTheActiveTask" in c["kafka_test"])
    inst = parse_instance(case["instance"])
    spec = get("streams-server-sticky")
    for version, passes in (("4.3.1", False), ("4.3.2", True), ("4.4", True)):
        doc = spec.run(inst, Params(kafka_version=version)).assignment.to_json_dict()
        assert all(holds(doc, c) for c in case["assert"]) is passes, version


def test_kafka_20899_is_in_4_2_2(registry_loaded: None) -> None:
    """KAFKA-20899 was backported to the 4.2 branch before 4.2.2 (the released 4.2.2 jar has it; 4.2.1 and 4.3.1
    do not): its own test passes at 4.2.2 and fails at 4.2.0, 4.2.1, 4.3.0 and 4.3.1."""
    case = next(c for c in _cases() if "DoesNotHoldTheActiveTask" in c["kafka_test"])
    inst = parse_instance(case["instance"])
    spec = get("streams-server-sticky")
    for version, passes in (("4.2.0", False), ("4.2.1", False), ("4.2.2", True), ("4.3.0", False),
                            ("4.3.1", False)):
        doc = spec.run(inst, Params(kafka_version=version)).assignment.to_json_dict()
        assert all(holds(doc, c) for c in case["assert"]) is passes, version


def test_kafka_20719_cold_start_cases_need_4_4(registry_loaded: None) -> None:
    """Before 4.4 reported offsets make no candidates: members reporting state for tasks get other tasks there
    (the other two KAFKA-20719 cases are small enough to come out the same without offsets)."""
    spec = get("streams-server-sticky")
    cold = [c for c in _cases() if "ReportingTaskOffsetsOnColdStart" in c["kafka_test"]]
    assert len(cold) == 2
    for case in cold:
        inst = parse_instance(case["instance"])
        doc = spec.run(inst, Params(kafka_version="4.3.2")).assignment.to_json_dict()
        assert not all(holds(doc, c) for c in case["assert"]), case["kafka_test"]


def test_versions_before_4_2_are_refused(registry_loaded: None) -> None:
    inst = parse_instance(_cases()[0]["instance"])
    with pytest.raises(KafkaVersionError, match=r"not in Kafka 4\.1\.2: kassign models it from Kafka 4\.2\.0 \("
                                                r"the Streams rebalance protocol \(KIP-1071\) was early access"):
        get("streams-server-sticky").run(inst, Params(kafka_version="4.1"))
    res = get("streams-server-sticky").run(inst, Params(kafka_version="4.2"))
    assert res.extra["kafka_version"] == "4.2.2"


def test_synthetic_members_for_clients_without_members(registry_loaded: None) -> None:
    inst = parse_instance({"format": "kassign/v1", "protocol": "streams",
                           "tasks": [{"id": f"0_{p}"} for p in range(5)],
                           "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001",
                                        "capacity": 2, "active": ["0_0", "0_1", "0_2"]},
                                       {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002",
                                        "capacity": 1, "active": ["0_3", "0_4"]}],
                           "config": {"num_standby_replicas": 1}})
    assert [(m.id, m.active) for m in synthetic_members(inst.streams, 0)] == [("a#0", ("0_0", "0_2")),
                                                                              ("a#1", ("0_1",))]
    doc = server_sticky_assign(inst).to_json_dict()
    # synthetic members are how the assignor reads a process, not group members: never written out
    assert "members" not in doc
    # quota ceil(5 / 3) = 2 actives per member: b#0 keeps two, a's members keep theirs
    assert doc["assignment"]["b"]["active"] == ["0_3", "0_4"]
    assert doc["assignment"]["a"]["active"] == ["0_0", "0_1", "0_2"]


# --- properties ---------------------------------------------------------------------------------------------

@st.composite
def kip1071_groups(draw: Any) -> dict[str, Any]:
    """A KIP-1071 group: processes of several members, a previous target, now and then current tasks and offsets."""
    tasks = []
    for sub in range(draw(st.integers(1, 3))):
        stateful = draw(st.booleans())
        tasks += [{"id": f"{sub}_{p}", "stateful": stateful} for p in range(draw(st.integers(1, 8)))]
    n_proc = draw(st.integers(1, 5))
    members: list[list[dict[str, Any]]] = [[] for _ in range(n_proc)]
    names = draw(st.lists(st.text("abcdefgh", min_size=1, max_size=3), min_size=n_proc * 4, max_size=n_proc * 4,
                          unique=True))
    for p in range(n_proc):
        for k in range(draw(st.integers(1, 4))):
            members[p].append({"id": names[4 * p + k], "active": [], "standby": []})
    flat = [(p, m) for p in range(n_proc) for m in members[p]]
    for t in tasks:
        held = set()
        if draw(st.booleans()):
            p, m = draw(st.sampled_from(flat))
            m["active"].append(t["id"])
            held.add(p)
        if t["stateful"]:
            for p, m in draw(st.lists(st.sampled_from(flat), max_size=2)):
                if p not in held:
                    m["standby"].append(t["id"])
                    held.add(p)
    stateful = [t["id"] for t in tasks if t["stateful"]]
    for _, m in flat:  # 4.4 reads current tasks and reported offsets
        if draw(st.integers(0, 3)) == 0:
            m["current_active"] = draw(st.lists(st.sampled_from([t["id"] for t in tasks]), unique=True, max_size=3))
        if stateful and draw(st.booleans()):
            m["task_offsets"] = draw(st.dictionaries(st.sampled_from(stateful), st.integers(0, 10**6), max_size=4))
    clients = [{"id": f"p{p}", "process_id": str(draw(st.uuids())), "members": members[p]} for p in range(n_proc)]
    return {"format": "kassign/v1", "protocol": "streams", "tasks": tasks, "clients": clients,
            "config": {"num_standby_replicas": draw(st.integers(0, 2))}}


@settings(max_examples=150, deadline=None)
@given(kip1071_groups(), st.sampled_from(["4.2", "4.3.1", "4.3.2", "4.4"]))
def test_valid_within_quota_and_deterministic(doc: dict[str, Any], version: str) -> None:
    inst = parse_instance(doc)
    spec = inst.streams
    out = server_sticky_assign(inst, KafkaVersion.parse(version)).to_json_dict()
    process_of = {m.id: c.id for c in spec.clients for m in c.members or ()}
    n_members = len(process_of)
    assert set(out["members"]) == set(process_of)
    # every task once as an active; a stateful task min(standbys, processes - 1) times as a standby
    actives = [t for m in out["members"].values() for t in m["active"]]
    assert sorted(actives) == sorted(spec.task_ids)
    need = min(spec.config.num_standby_replicas, len(spec.clients) - 1)
    for t in spec.tasks:
        holders = [process_of[m] for m, v in out["members"].items() if t.id in v["standby"]]
        assert len(holders) == (need if t.stateful else 0)
    # no process holds a task twice (as active and standby, or two standbys)
    for c in spec.clients:
        held = [t for m in c.members or () for kind in ("active", "standby") for t in out["members"][m.id][kind]]
        assert len(held) == len(set(held))
        union = out["assignment"][c.id]
        assert sorted(union["active"] + union["standby"]) == sorted(held)
    # member quota: never more than ceil(tasks / members) actives
    quota = -(-len(spec.tasks) // n_members)
    assert max(len(m["active"]) for m in out["members"].values()) <= quota
    # same input, same output (also read back from its own serialisation)
    again = parse_instance(streams_instance_to_dict(inst))
    assert server_sticky_assign(again, KafkaVersion.parse(version)).to_json_dict() == out


def test_same_answer_under_other_python_hash_seeds(registry_loaded: None) -> None:
    """Nothing leans on Python's (randomised) string hashing: other seeds, the same members."""
    case = next(c for c in _cases() if "DoesNotHoldTheActiveTask" in c["kafka_test"])
    script = ("import json,sys; import heuristics; from solver.io import parse_instance; "
              "from heuristics.streams.server_sticky import server_sticky_assign; "
              "print(json.dumps(server_sticky_assign(parse_instance(json.loads(sys.stdin.read()))).to_json_dict(),"
              " sort_keys=True))")
    outs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run([sys.executable, "-c", script], input=json.dumps(case["instance"]), text=True,
                             capture_output=True, env=env, check=True)
        outs.add(run.stdout)
    assert len(outs) == 1
