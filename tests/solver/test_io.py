"""Reading, validating and writing kassign/v1 documents."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.errors import InstanceError
from solver.io import (
    assignment_document,
    instance_to_dict,
    parse_instance,
    read_assignment,
    read_instance,
    read_instances,
)
from solver.model import Assignment
from tests.conftest import kafka_records, seed_records


def base(**over):
    doc = {
        "format": "kassign/v1",
        "name": "g",
        "topics": {"T1": 2, "T2": {"partitions": 3, "weights": [5.0, 1.0, 1.0], "move_costs": [100, 10, 10],
                                   "racks": [["r1", "r2"], ["r2", "r3"], ["r1", "r3"]]}},
        "members": [
            {"id": "C1", "topics": ["T1", "T2"], "owned": {"T1": [0]}, "generation": 3, "rack": "r1"},
            {"id": "C2", "topics": ["T2"], "instance_id": "i-2", "capacity": 2.0},
        ],
    }
    doc.update(over)
    return doc


def problems(doc) -> list[str]:
    with pytest.raises(InstanceError) as exc:
        parse_instance(doc, "in.json")
    assert exc.value.exit_code == 65
    return [str(p) for p in exc.value.problems]


def test_parse_design_example():
    inst = parse_instance(base())
    t2 = inst.topics["T2"]
    assert t2.partitions == 3
    assert t2.weights.tolist() == [5.0, 1.0, 1.0]
    assert t2.move_costs.tolist() == [100.0, 10.0, 10.0]
    assert t2.racks == (("r1", "r2"), ("r2", "r3"), ("r1", "r3"))
    assert inst.topics["T1"].weights is None
    c1, c2 = inst.members
    assert (c1.id, c1.generation, c1.rack, c1.capacity) == ("C1", 3, "r1", 1.0)
    assert c1.owned["T1"].tolist() == [0]
    assert (c2.instance_id, c2.capacity, c2.generation) == ("i-2", 2.0, -1)
    assert not t2.weights.flags.writeable  # immutable data


def test_empty_member_list_is_valid():
    inst = parse_instance(base(members=[]))
    assert inst.members == ()


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda d: d["members"][0]["topics"].append("T9"), "members[0].topics[2]: topic 'T9' not in topics"),
        (lambda d: d["members"][0]["owned"].update({"T9": [0]}), "members[0].owned.T9: topic not in topics"),
        (lambda d: d["members"][0]["owned"].update({"T1": [0, 2]}),
         "members[0].owned.T1[1]: partition 2 out of range (T1 has 2 partitions)"),
        (lambda d: d["members"][1].update({"id": "C1"}), "members[1].id: duplicate member id 'C1' (also members[0])"),
        (lambda d: d["topics"]["T2"].update({"weights": [1.0, -1.0, 1.0]}),
         "topics.T2.weights[1]: Input should be greater than or equal to 0"),
        (lambda d: d["topics"]["T2"].update({"weights": [1.0, float("nan"), 1.0]}),
         "topics.T2.weights[1]: Input should be a finite number"),
        (lambda d: d["topics"]["T2"].update({"weights": [1.0, 1.0]}),
         "topics.T2.weights: has 2 entries, topic has 3 partitions"),
        (lambda d: d["topics"]["T2"].update({"move_costs": [1]}),
         "topics.T2.move_costs: has 1 entries, topic has 3 partitions"),
        (lambda d: d["topics"]["T2"].update({"racks": [["r1"]] * 4}),
         "topics.T2.racks: has 4 entries, topic has 3 partitions"),
        (lambda d: d["members"][0]["owned"].update({"T1": [0.5]}),
         "members[0].owned.T1[0]: Input should be a valid integer"),
        (lambda d: d["topics"].update({"T1": 2.5}),
         "topics.T1: Value error, expected a partition count or an object with 'partitions'"),
        (lambda d: d.update({"copartition": [["T1", "T7"]]}), "copartition[0][1]: topic 'T7' not in topics"),
        (lambda d: d.update({"colour": "red"}), "colour: unknown key"),
        (lambda d: d["members"][0].update({"age": 3}), "members[0].age: unknown key"),
        (lambda d: d["members"][1].update({"capacity": 0}),
         "members[1].capacity: Input should be greater than or equal to 0.000001 (the capacity range is 1e-06..1e+06)"),
        (lambda d: d.pop("format"), "format: required key missing"),
        (lambda d: d.update({"format": "kassign/v0"}), "format: expected 'kassign/v1'"),
    ],
)
def test_validation_errors_name_the_json_path(mutate, expected):
    doc = base()
    mutate(doc)
    assert expected in problems(doc)


def test_all_errors_reported_at_once():
    doc = base()
    doc["members"][0]["owned"] = {"T9": [0], "T1": [7]}
    doc["members"][1]["topics"] = ["T5"]
    got = problems(doc)
    assert got == [
        "members[0].owned.T9: topic not in topics",
        "members[0].owned.T1[0]: partition 7 out of range (T1 has 2 partitions)",
        "members[1].topics[0]: topic 'T5' not in topics",
    ]


def test_error_message_names_file(tmp_path: Path):
    f = tmp_path / "bad.json"
    doc = base()
    doc["members"][0]["owned"] = {"T9": [0]}
    f.write_text(json.dumps(doc))
    with pytest.raises(InstanceError) as exc:
        read_instance(f)
    assert exc.value.render() == f"{f}: members[0].owned.T9: topic not in topics"


def test_malformed_json_line_and_column(tmp_path: Path):
    f = tmp_path / "broken.json"
    f.write_text('{\n  "format": "kassign/v1",\n  "topics": {"T": 1,}\n}\n')
    with pytest.raises(InstanceError) as exc:
        read_instance(f)
    assert "malformed JSON at line 3, column 21" in exc.value.render()


def test_yaml_and_json_lines(tmp_path: Path):
    doc = base()
    y = tmp_path / "g.yaml"
    import yaml

    y.write_text(yaml.safe_dump(doc))
    assert read_instance(y) == parse_instance(doc)
    lines = tmp_path / "many.jsonl.gz"
    with gzip.open(lines, "wt") as fh:
        fh.write(json.dumps(doc) + "\n")
        fh.write(json.dumps({"id": "rec-2", "instance": base(name="other"), "expected": {}}) + "\n")
    recs = read_instances(lines)
    assert [(r.line, r.id, r.instance.name) for r in recs] == [(1, "g", "g"), (2, "rec-2", "other")]


def test_json_lines_errors_name_the_line(tmp_path: Path):
    bad = base()
    bad["members"][0]["owned"] = {"T9": [0]}
    f = tmp_path / "many.jsonl"
    f.write_text(json.dumps(base()) + "\n" + json.dumps({"id": "x", "instance": bad}) + "\n{oops\n")
    with pytest.raises(InstanceError) as exc:
        read_instances(f)
    assert exc.value.render().splitlines() == [
        f"{f}: line 2: instance.members[0].owned.T9: topic not in topics",
        f"{f}: line 3: malformed JSON at column 2: Expecting property name enclosed in double quotes",
    ]


def test_seed_instances_load():
    recs = seed_records()
    assert {r.instance.name for r in recs} >= {"kip49-fair-example", "kip315-join-member-leaves"}
    for r in recs:
        assert r.instance.protocol == "consumer"


def test_every_kafka_consumer_fixture_validates():
    recs = kafka_records("small.jsonl.gz")
    assert len(recs) > 1000


def test_assignment_document_is_canonical():
    inst = parse_instance(base())
    a = Assignment.from_lists({"C2": {"T2": [2, 0]}, "C1": {"T2": [1], "T1": [1, 0]}})
    doc = assignment_document(inst, "x", a)
    assert json.dumps(doc["assignment"]) == json.dumps({"C1": {"T1": [0, 1], "T2": [1]}, "C2": {"T2": [0, 2]}})
    empty = assignment_document(inst, "x", Assignment.from_lists({}))
    assert empty["assignment"] == {"C1": {}, "C2": {}}


def test_read_assignment_accepts_output_or_bare_mapping(tmp_path: Path):
    f = tmp_path / "a.json"
    f.write_text(json.dumps({"assignment": {"C1": {"T1": [1, 0]}}, "stats": {}}))
    assert read_assignment(f).to_lists() == {"C1": {"T1": [0, 1]}}
    f.write_text(json.dumps({"C1": {"T1": [0]}}))
    assert read_assignment(f).to_lists() == {"C1": {"T1": [0]}}
    f.write_text(json.dumps({"C1": {"T1": ["zero"]}}))
    with pytest.raises(InstanceError, match=r"assignment.C1.T1\[0\]: Input should be a valid integer"):
        read_assignment(f)


names = st.text(alphabet="abcxyz-_.0123456789é", min_size=1, max_size=6)


@st.composite
def instances(draw):
    topic_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    topics = {}
    for t in topic_names:
        n = draw(st.integers(0, 6))
        if draw(st.booleans()):
            topics[t] = n
        else:
            obj = {"partitions": n}
            if draw(st.booleans()):
                obj["weights"] = draw(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=n, max_size=n))
            if draw(st.booleans()):
                obj["move_costs"] = draw(st.lists(st.integers(0, 1000), min_size=n, max_size=n))
            if draw(st.booleans()):
                obj["racks"] = draw(st.lists(st.lists(st.sampled_from(["r1", "r2"]), max_size=2), min_size=n,
                                             max_size=n))
            if draw(st.booleans()):
                obj["id"] = draw(st.uuids()).hex
            topics[t] = obj
    member_ids = draw(st.lists(names, max_size=4, unique=True))
    members = []
    for mid in member_ids:
        subs = draw(st.lists(st.sampled_from(topic_names), unique=True))
        m = {"id": mid, "topics": subs}
        owned = {}
        for t in subs:
            n = topics[t] if isinstance(topics[t], int) else topics[t]["partitions"]
            parts = draw(st.lists(st.integers(0, max(n - 1, 0)), unique=True)) if n else []
            if parts:
                owned[t] = sorted(parts)
        if owned:
            m["owned"] = owned
        if draw(st.booleans()):
            m["generation"] = draw(st.integers(0, 9))
        if draw(st.booleans()):
            m["rack"] = "r1"
        if draw(st.booleans()):
            m["capacity"] = draw(st.sampled_from([0.5, 2.0, 3.0]))
        members.append(m)
    doc = {"format": "kassign/v1", "name": draw(names), "protocol": "consumer", "topics": topics, "members": members}
    if len(topic_names) >= 2 and draw(st.booleans()):
        doc["copartition"] = [topic_names[:2]]
    return doc


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_round_trip_write_then_read_is_identical(doc):
    inst = parse_instance(doc)
    again = parse_instance(json.loads(json.dumps(instance_to_dict(inst))))
    assert again == inst
    assert instance_to_dict(again) == instance_to_dict(inst)


def test_large_instance_is_compact():
    # 200k partitions in one topic: stored as one numpy array per member, not Python lists.
    n = 200_000
    doc = {"format": "kassign/v1", "topics": {"big": n},
           "members": [{"id": "a", "topics": ["big"], "owned": {"big": list(range(0, n, 2))}}]}
    inst = parse_instance(doc)
    owned = inst.members[0].owned["big"]
    assert isinstance(owned, np.ndarray) and owned.dtype == np.int64 and owned.size == n // 2


def test_structural_and_cross_field_problems_together():
    repo = Path(__file__).resolve().parents[2]
    with pytest.raises(InstanceError) as exc:
        read_instance(repo / "examples" / "bad-instance.json")
    assert [str(p) for p in exc.value.problems] == [
        "topics.T2.weights[1]: Input should be greater than or equal to 0",
        "topics.T2.weights: has 2 entries, topic has 3 partitions",
        "members[0].topics[1]: topic 'T3' not in topics",
        "members[0].owned.T1[1]: partition 5 out of range (T1 has 2 partitions)",
        "members[0].owned.T9: topic not in topics",
        "members[1].id: duplicate member id 'C1' (also members[0])",
    ]


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_owned_order_is_read_and_written_as_given(tmp_path: Path, suffix: str):
    # KIP-848's uniform reads the order of `owned` topics and of each topic's partitions (docs/format.md)
    doc = {"format": "kassign/v1", "topics": {"a": 20, "b": 20, "c": 20},
           "members": [{"id": "m", "topics": ["a", "b", "c"], "owned": {"c": [17, 1], "a": [0], "b": [3, 2]}}]}
    path = tmp_path / f"i{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(doc))
    else:
        path.write_text("format: kassign/v1\ntopics: {a: 20, b: 20, c: 20}\nmembers:\n"
                        "  - {id: m, topics: [a, b, c], owned: {c: [17, 1], a: [0], b: [3, 2]}}\n")
    (rec,) = read_instances(path)
    owned = rec.instance.members[0].owned
    assert list(owned) == ["c", "a", "b"]
    assert owned["c"].tolist() == [1, 17] and owned.listed("c").tolist() == [17, 1]
    assert instance_to_dict(rec.instance)["members"][0]["owned"] == {"c": [17, 1], "a": [0], "b": [3, 2]}
