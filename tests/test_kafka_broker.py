"""The ``apache_kafka`` fixture's broker: Apache Kafka 4.4.0 itself, serving all three group protocols."""

from __future__ import annotations

import pytest

from spark_runner.live.broker import Broker as Admin
from tests.kafka_broker import KafkaBroker, server_properties

pytestmark = pytest.mark.kafka

CONSUMER_GROUP_HEARTBEAT, STREAMS_GROUP_HEARTBEAT, JOIN_GROUP = 68, 88, 11


def test_the_broker_serves_classic_consumer_and_streams_groups(apache_kafka: KafkaBroker) -> None:
    with Admin(apache_kafka.bootstrap, timeout=20) as admin:
        apis = admin.api_versions()
    # JoinGroup (classic), ConsumerGroupHeartbeat (KIP-848) and StreamsGroupHeartbeat (KIP-1071)
    assert {JOIN_GROUP, CONSUMER_GROUP_HEARTBEAT, STREAMS_GROUP_HEARTBEAT} <= set(apis)
    assert apache_kafka.proc.poll() is None and apache_kafka.start_s > apache_kafka.format_s > 0
    assert apache_kafka.bootstrap == f"127.0.0.1:{apache_kafka.port}"


def test_extra_settings_replace_the_defaults_and_listeners_stay_local(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = server_properties(tmp_path, 9092, 9093, {"group.consumer.session.timeout.ms": "9000", "x.y": "1"})
    props = dict(line.split("=", 1) for line in text.splitlines())
    assert props["group.consumer.session.timeout.ms"] == "9000" and props["x.y"] == "1"
    assert props["process.roles"] == "broker,controller"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093"
    assert props["log.dirs"] == str(tmp_path / "data")


def test_cluster_ids_never_start_with_a_dash() -> None:
    """StorageTool reads ``-t -x...`` as an option: Kafka's own ids never start with ``-``, nor do ours."""
    from tests.kafka_broker import cluster_id

    ids = [cluster_id() for _ in range(3_000)]  # about 47 would start with "-" without the redraw
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(i) == 22 for i in ids)
