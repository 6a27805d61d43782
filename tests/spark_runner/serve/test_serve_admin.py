"""``weights.source: admin``: a group's lag read from a real Kafka-protocol broker (noida-db) by ``kassign serve``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.spark_runner.live.kafka_harness import Broker, free_port, start_noida, wait_until
from tests.spark_runner.serve.serve_harness import Serve, kassign_assign

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

TOPIC = "serve-lag"
PRODUCED = {0: 30, 1: 5, 2: 0, 3: 12}
COMMITTED = {0: 10, 1: 5}  # partitions 2 and 3 have no commit: they lag from the log start
LAG = [20.0, 0.0, 0.0, 12.0]
GROUP = "serve-lag-group"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.admin import NewTopic
    from kafka.structs import OffsetAndMetadata

    b = start_noida(Path(tmp_path_factory.mktemp("noida-serve")))
    try:
        adm = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=10000)
        try:
            adm.create_topics([NewTopic(TOPIC, len(PRODUCED), 1)])
            wait_until(lambda: any(d["name"] == TOPIC and not d["error_code"] for d in adm.describe_topics([TOPIC])),
                       20, "the topic in the metadata")
        finally:
            adm.close()
        prod = KafkaProducer(bootstrap_servers=b.bootstrap)
        try:
            for p, n in PRODUCED.items():
                for i in range(n):
                    prod.send(TOPIC, b"x" * 10, key=str(i).encode(), partition=p)
            prod.flush(30)
        finally:
            prod.close()
        cons = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id=GROUP, enable_auto_commit=False)
        try:
            cons.assign([TopicPartition(TOPIC, p) for p in PRODUCED])
            cons.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1) for p, o in COMMITTED.items()})
        finally:
            cons.close()
        yield b
    finally:
        b.stop()


def _instance(name: str) -> dict[str, Any]:
    return {"format": "kassign/v1", "name": name, "topics": {TOPIC: len(PRODUCED)},
            "members": [{"id": "a", "topics": [TOPIC], "owned": {TOPIC: [0, 1, 2, 3]}, "generation": 3},
                        {"id": "b", "topics": [TOPIC]}]}


def test_lag_from_the_admin_api_weighs_the_group(broker: Broker, tmp_path: Path) -> None:
    s = Serve("--workers", "1", "--bootstrap-server", broker.bootstrap)
    try:
        for request in ({"instance": _instance(GROUP), "weights": {"source": "admin"}},  # the group: the name
                        {"instance": _instance("other"), "weights": {"source": "admin", "group": GROUP}}):
            code, doc = s.assign({**request, "deadline_ms": 20_000})
            assert code == 200, doc
            assert doc["service"]["weights"] == "admin" and doc["service"]["fallback"] is False
            weighted = {**request["instance"], "topics": {TOPIC: {"partitions": 4, "weights": LAG}},
                        "units": {"weights": "records"}}
            path = tmp_path / "weighted.json"
            path.write_text(json.dumps(weighted))
            cli = kassign_assign(path, "--assignor", "optimal")
            assert doc["stats"]["status"] == cli["stats"]["status"] == "optimal"
            assert doc["stats"]["objective"] == cli["stats"]["objective"]
            assert doc["stats"]["objective"][0] == 20  # partition 0's lag alone on one member
    finally:
        assert s.stop() == 0, s.stderr


def test_an_unreachable_cluster_is_503_within_the_deadline() -> None:
    s = Serve("--workers", "1", "--bootstrap-server", f"127.0.0.1:{free_port()}")
    try:
        start = time.monotonic()
        code, doc = s.assign({"instance": _instance(GROUP), "weights": {"source": "admin"}, "deadline_ms": 2000})
        assert (code, doc["path"]) == (503, "weights.source"), doc
        assert time.monotonic() - start < 2.0 + 2.0
        # the service still answers requests that do not need the cluster
        code, doc = s.assign({"instance": _instance(GROUP)})
        assert code == 200, doc
    finally:
        assert s.stop() == 0, s.stderr
