"""Fixtures of the live tests: one noida-db broker per session (``kafka`` tests only)."""

from __future__ import annotations

import base64
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.solver.streams.test_subscription_fields import records
from tests.spark_runner.live.kafka_harness import Broker, start_noida

_names = itertools.count()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """noida-db on 127.0.0.1 and a free port for the whole session; stopped by its PID at the end."""
    broker = start_noida(Path(tmp_path_factory.mktemp("noida")))
    try:
        yield broker
    finally:
        broker.stop()


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
