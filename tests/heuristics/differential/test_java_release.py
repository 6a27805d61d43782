"""The JVM that runs Kafka's assignor is an input too: ``-O java=N`` against Kafka's classes on that JVM.

Java 19 changed how ``new HashSet<>(collection)`` sizes its table, and `uniform` (its copy of a member's
subscribed topic ids), `sticky-task` and `kip924-sticky` (copies of their client and task sets) walk such
copies, so Kafka's answer on Java 21 can differ from its answer on Java 17 (kassign's default, the JVM of
Kafka's fixtures and of this harness).  Here the harness runs on the project machines' second, newer JDK.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import kafka_records
from tests.heuristics.differential.check import (
    consumer_answer,
    kafka_consumer_answer,
    kafka_streams_view,
    releases_of,
    streams_answer,
)
from tests.heuristics.differential.reference import KafkaJars, Matrix, java_feature, newer_java, with_topic_ids
from tests.heuristics.differential.sample import shapes_sample
from tests.heuristics.differential.strategies import consumer_group
from tests.heuristics.differential.streams_groups import streams_group

pytestmark = pytest.mark.java

SAMPLE = int(os.environ.get("KASSIGN_DIFF_SAMPLE", "200")) // 2
RELEASES = ("3.8.1", "4.0.0", "4.3.1", "4.4.0")


@pytest.fixture(scope="module")
def newer() -> Iterator[tuple[str, int]]:
    java = newer_java()
    if java is None:
        pytest.skip("no JDK 19 or newer beside Java 17 (set KASSIGN_NEWER_JAVA to one's bin/java)")
    feature = java_feature(java)
    assert feature is not None and feature >= 19
    yield java, feature


@pytest.mark.parametrize("assignor", ("uniform", "sticky-task", "kip924-sticky"))
def test_kassign_with_java_option_gives_kafkas_answer_on_that_jvm(
        assignor: str, newer: tuple[str, int], kafka_matrix: Matrix) -> None:
    java, feature = newer
    streams = assignor != "uniform"
    shapes = shapes_sample(SAMPLE, seed=19)
    cases = ([streams_group(s, assignor) for s in shapes] if streams
             else [consumer_group(s, conflicts=False) for s in shapes])
    bad: list[str] = []
    for r in releases_of(assignor, [x for x in kafka_matrix if x in RELEASES]):
        jars = KafkaJars(r, java)
        try:
            answers = jars.ask_many([{"assignor": assignor, "instance": c if streams else with_topic_ids(c)}
                                     for c in cases])
        finally:
            jars.close()
        for c, k in zip(cases, answers, strict=True):
            opts = {"java": feature}
            ours = streams_answer(assignor, c, r, opts) if streams else consumer_answer(assignor, c, r, opts)
            theirs = kafka_streams_view(k, assignor) if streams else kafka_consumer_answer(k)
            if ours != theirs:
                bad.append(f"{c['name']} at Kafka {r} on Java {feature}")
    assert not bad, f"{len(bad)} mismatches: {bad[:5]}"


def _kip924_record(rec_id: str) -> dict[str, Any]:
    rec = next(r for r in kafka_records("streams-kip924-sticky-4.3.jsonl.gz") if r.raw["id"] == rec_id)
    doc = dict(rec.raw["instance"])
    doc["standby_task_order"] = rec.raw["expected"]["standby_task_order"]
    return doc


def test_the_jvm_changes_kafkas_answer_and_kassign_follows(newer: tuple[str, int], kafka_matrix: Matrix) -> None:
    """A fixture group on which Kafka 4.3.1's KIP-924 assignor places other standbys on Java 21+ than on 17."""
    java, feature = newer
    doc = _kip924_record("st303-47-2")
    old = kafka_streams_view(kafka_matrix["4.3.1"].ask("kip924-sticky", doc), "kip924-sticky")
    jars = KafkaJars("4.3.1", java)
    try:
        new = kafka_streams_view(jars.ask("kip924-sticky", doc), "kip924-sticky")
    finally:
        jars.close()
    assert old != new
    assert streams_answer("kip924-sticky", doc, "4.3.1") == old
    assert streams_answer("kip924-sticky", doc, "4.3.1", {"java": 17}) == old
    assert streams_answer("kip924-sticky", doc, "4.3.1", {"java": feature}) == new
