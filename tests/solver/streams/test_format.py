"""The Streams protocol of kassign/v1: parsing, derived tasks, validation paths, round trip."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.errors import InstanceError
from solver.io import instance_to_dict, parse_instance
from solver.streams.format import parse_streams_assignment
from solver.streams.model import (
    LATEST_OFFSET,
    NO_STATE,
    StreamsAssignment,
    uuid_java_hash,
    uuid_sort_key,
)

PID = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(1, 10)]


def doc(**kw):
    base = {"format": "kassign/v1", "protocol": "streams", "tasks": [{"id": "0_0"}, {"id": "0_1"}],
            "clients": [{"id": "a", "process_id": PID[0]}]}
    base.update(kw)
    return base


def problems(data) -> list[str]:
    with pytest.raises(InstanceError) as ei:
        parse_instance(data, "f.json")
    return [str(p) for p in ei.value.problems]


def test_defaults_and_model():
    inst = parse_instance(doc())
    s = inst.streams
    assert inst.protocol == "streams" and inst.members == () and dict(inst.topics) == {}
    assert s.config.num_standby_replicas == 0
    assert s.config.acceptable_recovery_lag == 10000
    assert s.config.max_warmup_replicas == 2
    assert s.config.balance_factor == 1
    assert s.clients[0].capacity == 1
    assert [t.store_count for t in s.tasks] == [1, 1]


def test_subtopologies_derive_tasks_like_partition_grouper():
    d = doc(subtopologies=[
        {"id": 2, "source_topics": {"a": 2, "b": 4}, "stores": 3},
        {"id": 0, "source_topics": {"c": 1}, "stateful": False},
    ])
    del d["tasks"]
    inst = parse_instance(d)
    s = inst.streams
    # max partition count of the source topics, tasks sorted in TaskId order
    assert s.task_ids == ("0_0", "2_0", "2_1", "2_2", "2_3")
    assert [t.store_count for t in s.tasks] == [0, 3, 3, 3, 3]
    assert not s.tasks[0].stateful


def test_task_order_is_numeric():
    inst = parse_instance(doc(tasks=[{"id": "10_0"}, {"id": "2_10"}, {"id": "2_9"}]))
    assert inst.streams.task_ids == ("2_9", "2_10", "10_0")


def test_lag_semantics():
    inst = parse_instance(doc(clients=[{"id": "a", "process_id": PID[0], "active": ["0_0"],
                                        "standby": ["0_1"]},
                                       {"id": "b", "process_id": PID[1], "lags": {"0_1": 7}}]))
    s = inst.streams
    a, b = s.clients
    assert a.lag_for(s.tasks[0]) == LATEST_OFFSET
    assert a.lag_for(s.tasks[1]) == 0  # a standby without a lag entry is caught up
    assert b.lag_for(s.tasks[1]) == 7
    assert b.lag_for(s.tasks[0]) == NO_STATE


def test_every_problem_with_its_path():
    bad = doc(
        tasks=[{"id": "0_1"}, {"id": "x_1"}, {"id": "0_1"}, {"id": "1_0", "stateful": False, "stores": 2}],
        clients=[
            {"id": "a", "process_id": "nope", "active": ["0_9", "0_1"], "standby": ["0_1", "1_0"],
             "lags": {"0_1": 5, "1_1": 3, "1_0": 1}},
            {"id": "a", "process_id": PID[1], "capacity": 0},
        ],
        config={"num_standby_replicas": -1, "bogus": 1},
    )
    got = problems(bad)
    # structural problems come first and alone (pydantic), cross-field ones after a fix
    assert "clients[1].capacity: Input should be greater than or equal to 1" in got
    assert "config.num_standby_replicas: Input should be greater than or equal to 0" in got
    assert "config.bogus: unknown key" in got
    del bad["config"]
    bad["clients"][1]["capacity"] = 1
    got = problems(bad)
    assert got == [
        "tasks[1].id: task id 'x_1' is not '<subtopology>_<partition>'",
        "tasks[2].id: duplicate task id '0_1' (also tasks[0])",
        "tasks[3].stores: a stateless task has no state stores",
        "clients[0].process_id: 'nope' is not a UUID",
        "clients[0].active[0]: task '0_9' not in tasks",
        "clients[0].standby[0]: task '0_1' already listed in active",
        "clients[0].standby[1]: task '1_0' is stateless and cannot have a standby",
        "clients[0].lags.0_1: task is in active (an active task is caught up: give no lag)",
        "clients[0].lags.1_1: task not in tasks",
        "clients[0].lags.1_0: a stateless task has no lag",
        "clients[1].id: duplicate client id 'a' (also clients[0])",
    ]


def test_tasks_or_subtopologies_required_and_exclusive():
    d = doc()
    del d["tasks"]
    assert problems(d) == ["give 'tasks' or 'subtopologies'"]
    assert problems(doc(subtopologies=[{"id": 0, "source_topics": {"t": 1}}])) == [
        "subtopologies: give either 'tasks' or 'subtopologies', not both"]


def test_duplicate_process_id_and_record_prefix():
    d = doc(clients=[{"id": "a", "process_id": PID[0]}, {"id": "b", "process_id": PID[0].upper()}])
    with pytest.raises(InstanceError) as ei:
        parse_instance(d, "r.jsonl:line 3", ("instance",))
    assert [str(p) for p in ei.value.problems] == [
        "instance.clients[1].process_id: duplicate process id (also clients[0]); one process is one client"]


def test_uuid_order_is_java_signed():
    ids = ["7fffffff-ffff-ffff-ffff-ffffffffffff", "80000000-0000-0000-0000-000000000000",
           "00000000-0000-0000-8000-000000000000", "00000000-0000-0000-0000-000000000001"]
    assert sorted(ids, key=uuid_sort_key) == [ids[1], ids[2], ids[3], ids[0]]
    # java.util.UUID(0, 1).hashCode() == 1 ; UUID(1L<<32, 0).hashCode() == 1
    assert uuid_java_hash("00000000-0000-0000-0000-000000000001") == 1
    assert uuid_java_hash("00000001-0000-0000-0000-000000000000") == 1


def test_assignment_document_parsing():
    inst = parse_instance(doc(clients=[{"id": "a", "process_id": PID[0]}, {"id": "b", "process_id": PID[1]}]))
    a = parse_streams_assignment({"assignment": {"a": {"active": ["0_1", "0_0"]}}, "probing_rebalance": True}, inst)
    assert a == StreamsAssignment.from_lists({"a": {"active": ["0_0", "0_1"]}, "b": {}}, True)
    assert a.to_json_dict()["assignment"]["b"] == {"active": [], "standby": [], "warmup": []}
    with pytest.raises(InstanceError) as ei:
        parse_streams_assignment({"assignment": {"z": {"active": ["9_9"]}}}, inst, "x.json")
    assert [str(p) for p in ei.value.problems] == ["assignment.z: client not in the instance",
                                                   "assignment.z.active[0]: task '9_9' not in tasks"]


task_ids = st.tuples(st.integers(0, 5), st.integers(0, 20)).map(lambda t: f"{t[0]}_{t[1]}")
rack_sets = st.lists(st.sampled_from(["r1", "r2", "r3"]), min_size=1, max_size=3, unique=True).map(sorted)


@st.composite
def streams_docs(draw):
    tids = draw(st.lists(task_ids, min_size=1, max_size=12, unique=True))
    tasks = []
    for t in tids:
        obj = {"id": t, "stateful": draw(st.booleans())}
        if obj["stateful"] and draw(st.booleans()):
            obj["stores"] = draw(st.integers(0, 4))
        if draw(st.booleans()):
            obj["source_racks"] = draw(st.lists(rack_sets, min_size=1, max_size=3))
            if obj["stateful"] and draw(st.booleans()):
                obj["changelog_racks"] = draw(st.lists(rack_sets, min_size=1, max_size=2))
        tasks.append(obj)
    stateful = [t["id"] for t in tasks if t["stateful"]]
    n = draw(st.integers(0, 5))
    pids = draw(st.lists(st.uuids().map(str), min_size=n, max_size=n, unique=True))
    clients = []
    for i, pid in enumerate(pids):
        active = draw(st.lists(st.sampled_from(tids), unique=True, max_size=3))
        rest = [t for t in stateful if t not in active]
        standby = draw(st.lists(st.sampled_from(rest), unique=True, max_size=3)) if rest else []
        lag_tasks = draw(st.lists(st.sampled_from(rest), unique=True, max_size=3)) if rest else []
        c = {"id": f"c{i}", "process_id": pid, "capacity": draw(st.integers(1, 4)), "active": active,
             "standby": standby, "lags": {t: draw(st.integers(0, 10**6)) for t in lag_tasks}}
        if draw(st.booleans()):
            c["rack"] = draw(st.sampled_from(["r1", "r2"]))
        if draw(st.booleans()):
            c["client_tags"] = draw(st.dictionaries(st.sampled_from(["zone", "cluster", "host"]),
                                                    st.sampled_from(["a", "b", "eu-central-1a"]), max_size=3))
        clients.append(c)
    config = {"num_standby_replicas": draw(st.integers(0, 2)),
              "acceptable_recovery_lag": draw(st.integers(0, 20000)),
              "max_warmup_replicas": draw(st.integers(1, 3))}
    if draw(st.booleans()):
        config["rack_aware_assignment_strategy"] = draw(st.sampled_from(["none", "min_traffic",
                                                                          "balance_subtopology"]))
    for key in ("rack_aware_assignment_traffic_cost", "rack_aware_assignment_non_overlap_cost"):
        if draw(st.booleans()):
            config[key] = draw(st.integers(-(2**31), 2**31 - 1))
    if draw(st.booleans()):
        config["active_on_caught_up"] = draw(st.booleans())
    if draw(st.booleans()):
        config["rack_aware_assignment_tags"] = draw(st.lists(st.sampled_from(["zone", "cluster", "rack"]),
                                                             max_size=3, unique=True))
    return {"format": "kassign/v1", "name": "h", "protocol": "streams", "tasks": tasks, "clients": clients,
            "config": config}


@settings(max_examples=60, deadline=None)
@given(streams_docs())
def test_round_trip(data):
    inst = parse_instance(data)
    again = parse_instance(json.loads(json.dumps(instance_to_dict(inst))))
    assert again == inst
    assert instance_to_dict(again) == instance_to_dict(inst)


def test_round_trip_subtopologies():
    d = {k: v for k, v in doc(subtopologies=[{"id": 1, "source_topics": {"a": 3}, "stores": 2}]).items()
         if k != "tasks"}
    inst = parse_instance(d)
    out = instance_to_dict(inst)
    assert out["subtopologies"] == [{"id": 1, "source_topics": {"a": 3}, "stateful": True, "stores": 2}]
    assert parse_instance(out) == inst


def test_rack_fields_parsed_and_defaults():
    inst = parse_instance(doc())
    cfg = inst.streams.config
    assert cfg.rack_aware_assignment_strategy == "none"
    assert cfg.rack_aware_assignment_traffic_cost is None
    assert cfg.rack_aware_assignment_non_overlap_cost is None
    assert inst.streams.tasks[0].source_racks is None and inst.streams.tasks[0].changelog_racks is None
    assert (cfg.traffic_cost, cfg.non_overlap_cost) == (10, 1)  # what high-availability reads for null
    assert inst.streams.tasks[0].cross_rack_partitions("r1") is None
    inst = parse_instance(doc(
        tasks=[{"id": "0_0", "source_racks": [["r2", "r1"], ["r3"]], "changelog_racks": [["r1"]]}],
        config={"rack_aware_assignment_strategy": "balance_subtopology",
                "rack_aware_assignment_traffic_cost": 3, "rack_aware_assignment_non_overlap_cost": 0}))
    t = inst.streams.tasks[0]
    assert t.source_racks == (("r1", "r2"), ("r3",))  # racks of one partition are a set: kept sorted
    assert t.changelog_racks == (("r1",),)
    cfg = inst.streams.config
    assert (cfg.rack_aware_assignment_strategy, cfg.rack_aware_assignment_traffic_cost,
            cfg.rack_aware_assignment_non_overlap_cost) == ("balance_subtopology", 3, 0)
    assert (cfg.traffic_cost, cfg.non_overlap_cost) == (3, 0)
    assert [t.cross_rack_partitions(r) for r in ("r1", "r3", "r4")] == [1, 1, 2]
    assert [t.cross_rack_partitions(r, standby=True) for r in ("r1", "r3")] == [0, 1]
    out = instance_to_dict(inst)
    assert out["tasks"][0]["source_racks"] == [["r1", "r2"], ["r3"]]
    assert out["config"]["rack_aware_assignment_strategy"] == "balance_subtopology"
    # defaults are not written: an instance without racks serialises as before
    assert "rack_aware_assignment_strategy" not in instance_to_dict(parse_instance(doc()))["config"]


def test_rack_field_problems_with_paths():
    got = problems(doc(
        tasks=[{"id": "0_0", "stateful": False, "source_racks": [], "changelog_racks": [["r1"]]},
               {"id": "0_1", "source_racks": [["r1", "r1"], [], [""]]}],
        config={"rack_aware_assignment_strategy": "nearest", "rack_aware_assignment_traffic_cost": 2**31,
                "rack_aware_assignment_non_overlap_cost": "1"}))
    text = "\n".join(got)
    for path in ("config.rack_aware_assignment_strategy", "config.rack_aware_assignment_traffic_cost",
                 "config.rack_aware_assignment_non_overlap_cost", "tasks[1].source_racks[2][0]"):
        assert path in text, (path, text)
    got = problems(doc(tasks=[{"id": "0_0", "stateful": False, "source_racks": [], "changelog_racks": [["r1"]]},
                              {"id": "0_1", "source_racks": [["r1", "r1"], []]}]))
    assert got == [
        "tasks[0].changelog_racks: a stateless task has no changelog partitions",
        "tasks[0].source_racks: a task reads at least one partition: give one rack list per partition",
        "tasks[1].source_racks[0]: a rack is listed twice",
        "tasks[1].source_racks[1]: a partition's replicas are on at least one rack",
    ]


def test_kafka_rack_fixtures_round_trip():
    from tests.conftest import kafka_records

    for name in ("streams-rack-small.jsonl.gz", "streams-rack-medium.jsonl.gz"):
        for rec in kafka_records(name):
            inst = rec.instance
            raw = rec.raw["instance"]
            assert [list(map(list, t.source_racks)) for t in inst.streams.tasks] == \
                [t["source_racks"] for t in sorted(raw["tasks"], key=lambda t: tuple(map(int, t["id"].split("_"))))]
            assert parse_instance(json.loads(json.dumps(instance_to_dict(inst)))) == inst


def test_client_tags_parsed_and_written_back():
    inst = parse_instance(doc(clients=[{"id": "a", "process_id": PID[0],
                                        "client_tags": {"zone": "eu-1a", "cluster": "k8s-1"}},
                                       {"id": "b", "process_id": PID[1]}],
                              config={"num_standby_replicas": 1, "rack_aware_assignment_tags": ["zone"]}))
    a, b = inst.streams.clients
    assert dict(a.client_tags) == {"zone": "eu-1a", "cluster": "k8s-1"} and dict(b.client_tags) == {}
    assert inst.streams.config.rack_aware_assignment_tags == ("zone",)
    out = instance_to_dict(inst)
    assert out["clients"][0]["client_tags"] == {"zone": "eu-1a", "cluster": "k8s-1"}
    assert "client_tags" not in out["clients"][1]  # none: not written
    assert out["config"]["rack_aware_assignment_tags"] == ["zone"]
    assert parse_instance(out) == inst
    # the default (no tags configured) is not written
    assert "rack_aware_assignment_tags" not in instance_to_dict(parse_instance(doc()))["config"]
    # tags differ: the instances differ
    assert parse_instance(doc(clients=[{"id": "a", "process_id": PID[0], "client_tags": {"zone": "x"}}])) != \
        parse_instance(doc(clients=[{"id": "a", "process_id": PID[0], "client_tags": {"zone": "y"}}]))


def test_client_tag_problems_with_paths():
    """Kafka's StreamsConfig limits (5 tags, key <= 20, value <= 30 UTF-16 units, nothing blank)."""
    got = problems(doc(
        clients=[{"id": "a", "process_id": PID[0],
                  "client_tags": {" ": "x", "zone": "", "k" * 21: "v", "host": "v" * 31, "ok": "\U0001F600" * 15}},
                 {"id": "b", "process_id": PID[1], "client_tags": {f"k{i}": "v" for i in range(6)}}],
        config={"rack_aware_assignment_tags": ["zone", "", "z" * 21, "a", "b", "c"]}))
    # (15 characters beyond the BMP are 30 UTF-16 code units: accepted, as Java's String.length() counts)
    assert got == [
        "clients[0].client_tags: blank tag key ' ' (Kafka refuses it: missing client tag key)",
        "clients[0].client_tags.zone: blank tag value (Kafka refuses it: tag value cannot be empty)",
        "clients[0].client_tags.kkkkkkkkkkkkkkkkkkkkk: tag key of 21 characters; Kafka allows at most 20",
        "clients[0].client_tags.host: tag value of 31 characters; Kafka allows at most 30",
        "clients[1].client_tags: 6 client tags; Kafka Streams allows at most 5 (client.tag.*)",
        "config.rack_aware_assignment_tags: 6 tag keys; Kafka's rack.aware.assignment.tags takes at most 5",
        "config.rack_aware_assignment_tags[1]: blank tag key (Kafka refuses it: tag key cannot be empty)",
        "config.rack_aware_assignment_tags[2]: tag key of 21 characters; a client tag key has at most 20",
    ]
