"""``--kafka-version`` through the command line: assign, compare, score, plan, list, validate (real subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.spark_runner.cli.test_cli import EXAMPLES, kassign

BALANCED = str(EXAMPLES / "uniform-balanced.json")
KIP1071 = str(EXAMPLES / "streams-kip1071.json")


def test_assign_follows_the_release_and_says_which() -> None:
    r = kassign("assign", BALANCED, "-a", "uniform", "--kafka-version", "4.0.0")
    assert r.returncode == 0, r.stderr
    old = json.loads(r.stdout)
    assert old["stats"]["kafka_version"] == "4.0.0"
    assert old["assignment"] == {"a": {"t": [1, 2]}, "b": {"t": [0]}}  # 4.0.0 moves partition 1
    r = kassign("assign", BALANCED, "-a", "uniform")
    new = json.loads(r.stdout)
    assert new["stats"]["kafka_version"] == "4.4.0" and new["assignment"] == {"a": {"t": [2]}, "b": {"t": [0, 1]}}
    r = kassign("assign", KIP1071, "-a", "streams-server-sticky")
    doc = json.loads(r.stdout)  # the instance says 4.4: the field is followed without a flag
    assert doc["stats"]["kafka_version"] == "4.4.0" and set(doc["members"]) == {
        "T9-OGgYM6mMdO5k_eUkOqw", "y9P14GvBU4VX5UrMYvVoDA", "Qp3tM0l2RfW2n5dKQk7x1A"}
    assert doc["assignment"]["host-b:8080"]["active"] == doc["members"]["Qp3tM0l2RfW2n5dKQk7x1A"]["active"]


def test_unknown_releases_and_missing_assignors_are_usage_errors_before_reading() -> None:
    r = kassign("assign", BALANCED, "-a", "uniform", "--kafka-version", "5.0")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("error: unknown Kafka version '5.0'; kassign knows 3.0.0-3.0.2;")
    # the assignor check comes before the (missing) file is read: exit 2, not 66
    r = kassign("assign", "no-such.json", "-a", "kip924-sticky", "--kafka-version", "3.7")
    assert r.returncode == 2
    assert "assignor 'kip924-sticky' is not in Kafka 3.7.2: kassign models it from Kafka 3.8.0" in r.stderr
    r = kassign("assign", BALANCED, "-a", "sticky", "--kafka-version", "3.4")
    assert r.returncode == 2 and "KAFKA-14639 (3.4.1)" in r.stderr and "Traceback" not in r.stderr


def test_an_instance_with_an_unknown_release_is_invalid_data(tmp_path: Path) -> None:
    f = tmp_path / "i.json"
    f.write_text(json.dumps({**json.loads(Path(BALANCED).read_text()), "kafka_version": "4.9"}))
    r = kassign("validate", str(f))
    assert r.returncode == 65 and f"{f}: kafka_version: " in r.stderr and "unknown Kafka version '4.9'" in r.stderr


def test_compare_leaves_out_what_the_release_does_not_have() -> None:
    r = kassign("compare", KIP1071, "--json", "--kafka-version", "4.1")
    assert r.returncode == 0, r.stderr
    rows = {row["assignor"]: row for row in json.loads(r.stdout)["rows"]}
    assert "streams-server-sticky" not in rows and rows["kip924-sticky"]["kafka_version"] == "4.1.2"
    assert "streams-server-sticky: left out: assignor 'streams-server-sticky' is not in Kafka 4.1.2" in r.stderr
    r = kassign("compare", KIP1071, "--json", "--assignors", "streams-server-sticky", "--kafka-version", "4.1")
    rows = {row["assignor"]: row for row in json.loads(r.stdout)["rows"]}
    assert "not in Kafka 4.1.2" in rows["streams-server-sticky"]["error"]
    r = kassign("compare", KIP1071, "--json")
    rows = {row["assignor"]: row for row in json.loads(r.stdout)["rows"]}
    assert rows["streams-server-sticky"]["max_member_tasks"] is not None
    assert rows["optimal-streams"]["member_spread"] == 0 and "member_balance_gap" in rows["streams-server-sticky"]


def test_score_reports_the_release_of_the_assignment(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    assert kassign("assign", BALANCED, "-a", "uniform", "--kafka-version", "4.0.0", "-o", str(out)).returncode == 0
    r = kassign("score", BALANCED, str(out), "--json", "--no-gaps")
    assert r.returncode == 0 and json.loads(r.stdout)["kafka_version"] == "4.0.0"
    r = kassign("score", BALANCED, str(out), "--json", "--no-gaps", "--kafka-version", "4.3")
    assert r.returncode == 2 and "was made following Kafka 4.0.0" in r.stderr


def test_plan_says_which_release_kafkas_assignor_followed() -> None:
    r = kassign("plan", str(EXAMPLES / "plan-orders.json"), "--capacity", "5000000", "--json", "--range", "6:6",
                "--kafka-version", "3.9")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["kafka_version"] == "3.9.2"


def test_list_shows_the_releases() -> None:
    rows = json.loads(kassign("list", "--json").stdout)
    by = {r["name"]: r for r in rows}
    assert by["uniform"]["kafka"][0] == {"from": "4.0.0", "to": "4.0.0", "rule": by["uniform"]["kafka"][0]["rule"]}
    assert by["fair"]["kafka"] is None and by["optimal"]["kafka"] is None
    versions = json.loads(kassign("list", "--versions", "--json").stdout)
    assert {(v["name"], v["releases"]) for v in versions if v["name"] == "streams-server-sticky"} == {
        ("streams-server-sticky", "4.2.0-4.2.1"), ("streams-server-sticky", "4.2.2"),
        ("streams-server-sticky", "4.3.0-4.3.1"), ("streams-server-sticky", "4.3.2"),
        ("streams-server-sticky", "4.4.0")}


def test_the_docs_table_is_the_registrys() -> None:
    """docs/algorithms.md prints `kassign list --versions --format md`: the two cannot drift apart."""
    table = kassign("list", "--versions", "--format", "md").stdout.strip()
    assert table in (EXAMPLES.parent / "docs" / "algorithms.md").read_text()
