"""librdkafka's mock cluster (in the confluent-kafka wheel) as a second Kafka-protocol broker.

It speaks enough of the protocol for clients (Metadata, ApiVersions v0, ListOffsets, ...) but has no
DescribeGroups, so ``kassign capture`` must refuse it with a clear one-line message (exit 69).
kafka-python cannot read its ApiVersions v4 answer, hence ``--api-version 2.3``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from spark_runner.live.broker import BrokerUnavailable
from spark_runner.live.capture import capture
from tests.spark_runner.cli.test_cli import kassign

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def mock_bootstrap() -> Iterator[str]:
    """A one-broker mock cluster on 127.0.0.1, alive while its producer handle is."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer({"test.mock.num.brokers": 1, "bootstrap.servers": "",
                                         "log_level": 0})
    brokers = producer.list_topics(timeout=10).brokers
    broker = next(iter(brokers.values()))
    assert broker.host == "127.0.0.1"
    yield f"{broker.host}:{broker.port}"
    producer.flush(5)
    del producer


def test_capture_refuses_a_broker_without_describe_groups(mock_bootstrap: str) -> None:
    with pytest.raises(BrokerUnavailable, match=r"does not support DescribeGroups \(API key 15\)") as e:
        capture(mock_bootstrap, "any-group", timeout=10, api_version=(2, 3))
    assert e.value.exit_code == 69
    assert "cannot list a group's members" in str(e.value)


def test_the_cli_says_so_in_one_line(mock_bootstrap: str) -> None:
    r = kassign("capture", "--bootstrap-server", mock_bootstrap, "--group", "any-group", "--api-version", "2.3",
                "--timeout", "10")
    assert r.returncode == 69 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the broker at ") and "DescribeGroups" in lines[0]
