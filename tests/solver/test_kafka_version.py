"""Kafka releases: parsing, the rule table, the instance field (both protocols, records), the registry's checks."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from solver.errors import InstanceError
from solver.io import instance_to_dict, parse_instance, read_instances
from solver.kafka_version import DEFAULT, RELEASES, KafkaVersion, KafkaVersionError, VersionRules, resolve
from solver.registry import get
from solver.result import Params

CONSUMER = {"format": "kassign/v1", "topics": {"T": 3},
            "members": [{"id": "a", "topics": ["T"]}, {"id": "b", "topics": ["T"]}]}
STREAMS = {"format": "kassign/v1", "protocol": "streams", "tasks": [{"id": "0_0"}],
           "clients": [{"id": "c", "process_id": "00000000-0000-0000-0000-000000000001"}]}


@pytest.mark.parametrize(("text", "release"), [
    ("4.4", "4.4.0"), ("4.3", "4.3.2"), ("4.3.1", "4.3.1"), ("4.4.0-SNAPSHOT", "4.4.0"), ("4.0.0-SNAPSHOT", "4.0.0"),
    ("3.0", "3.0.2"), ("3.9", "3.9.2"), (" 4.2.0 ", "4.2.0"), ("04.3.1", "4.3.1")])
def test_parse(text: str, release: str) -> None:
    assert str(KafkaVersion.parse(text)) == release


@pytest.mark.parametrize("text", ["5.0", "4.5", "2.8", "2.8.2", "4.3.3", "4.4.1", "4", "4.x", "", "latest",
                                  "4.3.3-SNAPSHOT", "4.4-SNAPSHOT", "1" * 60])
def test_unknown_versions_are_errors_listing_the_known_ones(text: str) -> None:
    with pytest.raises(KafkaVersionError) as ei:
        KafkaVersion.parse(text)
    msg = str(ei.value)
    assert msg.startswith("unknown Kafka version") and "3.0.0-3.0.2" in msg and "4.4.0" in msg
    assert len(msg) < 400  # a long input is cut, not echoed whole
    assert ei.value.exit_code == 2


def test_releases_are_ordered_and_complete_from_3_0() -> None:
    versions = [KafkaVersion.parse(r) for r in RELEASES]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert str(versions[0]) == "3.0.0" and versions[-1] == DEFAULT == KafkaVersion(4, 4, 0)
    assert {"4.3.1", "4.3.2", "4.4.0", "4.0.1", "3.8.0"} <= set(RELEASES)


def test_resolution_order() -> None:
    assert str(resolve("4.3.1", "4.0.0")) == "4.3.1"  # the flag overrides the instance
    assert str(resolve(None, "4.0.0")) == "4.0.0"
    assert resolve(None, None) == DEFAULT


def test_rule_table() -> None:
    rules = VersionRules("4.2.0", (("4.2.0", "a"), ("4.3.2", "b"), ("4.4.0", "c")), before="why")
    assert [rules.rule(KafkaVersion.parse(v), "x") for v in ("4.2", "4.3.1", "4.3.2", "4.4")] == ["a", "a", "b", "c"]
    assert rules.table() == [("4.2.0", "4.3.1", "a"), ("4.3.2", "4.3.2", "b"), ("4.4.0", "4.4.0", "c")]
    with pytest.raises(KafkaVersionError, match=r"'x' is not in Kafka 4\.1\.2: kassign models it from Kafka 4\.2\.0 "
                                                r"\(why\)"):
        rules.rule(KafkaVersion.parse("4.1"), "x")
    with pytest.raises(ValueError, match="must start at"):
        VersionRules("4.0.0", (("4.0.1", "a"),))


@pytest.mark.parametrize("base", [CONSUMER, STREAMS])
def test_instance_field_round_trips_and_is_checked_with_its_path(base: dict[str, Any]) -> None:
    inst = parse_instance({**base, "kafka_version": "4.3.1"})
    assert inst.kafka_version == "4.3.1"
    assert instance_to_dict(inst)["kafka_version"] == "4.3.1"
    assert parse_instance(instance_to_dict(inst)) == inst
    assert parse_instance(base).kafka_version is None
    with pytest.raises(InstanceError) as ei:
        parse_instance({**base, "kafka_version": "9.9"}, "f.json")
    assert [p.path for p in ei.value.problems] == ["kafka_version"]
    assert "unknown Kafka version '9.9'" in ei.value.problems[0].message
    with pytest.raises(InstanceError) as ei:
        parse_instance({**base, "kafka_version": 4.3}, "f.json")
    assert [p.path for p in ei.value.problems] == ["kafka_version"]


def test_a_records_version_reaches_its_instance(tmp_path: Path) -> None:
    f = tmp_path / "r.jsonl.gz"
    lines = [{"id": "r1", "kafka_version": "4.3.1", "instance": CONSUMER},
             {"id": "r2", "instance": CONSUMER},
             {"id": "r3", "kafka_version": "4.3.1", "instance": {**CONSUMER, "kafka_version": "4.0.0"}}]
    with gzip.open(f, "wt") as fh:
        fh.write("".join(json.dumps(x) + "\n" for x in lines))
    assert [r.instance.kafka_version for r in read_instances(f)] == ["4.3.1", None, "4.0.0"]  # the instance's wins
    with gzip.open(f, "wt") as fh:
        fh.write(json.dumps({"id": "r4", "kafka_version": "7.7", "instance": CONSUMER}) + "\n")
    with pytest.raises(InstanceError) as ei:
        read_instances(f)
    assert "line 1: kafka_version: unknown Kafka version '7.7'" in str(ei.value)


def test_registry_runs_a_kafka_assignor_at_one_release_and_says_which(registry_loaded: None) -> None:
    inst = parse_instance({**CONSUMER, "kafka_version": "4.0.0"})
    spec = get("uniform")
    assert spec.run(inst).extra["kafka_version"] == "4.0.0"
    assert spec.run(inst, Params(kafka_version="4.3")).extra["kafka_version"] == "4.3.2"
    assert spec.run(parse_instance(CONSUMER)).extra["kafka_version"] == "4.4.0"
    # 4.0.0 gives the 3rd partition to the first member walked, 4.0.1 to the last: they differ here
    assert spec.run(inst).assignment.to_lists() != spec.run(inst, Params(kafka_version="4.0.1")).assignment.to_lists()
    with pytest.raises(KafkaVersionError, match=r"not in Kafka 3\.9\.2"):
        spec.run(inst, Params(kafka_version="3.9"))
    # proposals and solvers have no Kafka release: nothing is checked or reported
    assert "kafka_version" not in get("fair").run(inst, Params(kafka_version="3.0")).extra
    assert "kafka_version" not in get("optimal").run(inst, Params(kafka_version="3.0")).extra


def test_every_kafka_named_assignor_has_its_releases(registry_loaded: None) -> None:
    from solver.registry import all_specs

    named = {s.name for s in all_specs() if s.versions is not None}
    assert {"range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range", "high-availability",
            "sticky-task", "kip924-sticky", "streams-server-sticky"} <= named
    assert not named & {"fair", "stream-join-sticky", "state-store-weighted", "optimal", "optimal-streams"}
