"""Both codecs against Kafka's own: the consumer protocol's ``Subscription`` (kafka-clients' ``ConsumerProtocol``)
and Kafka Streams' ``SubscriptionInfo``, byte for byte and field for field, at releases of the matrix.

Random messages (a fixed seed, 200 per codec): kassign encodes, Kafka decodes, and the fields must be kassign's
own reading of the same bytes; Kafka encodes, and kassign's bytes for the same fields must be Kafka's.
"""

from __future__ import annotations

import base64
import os
import random
import uuid
from typing import Any

import pytest

from solver.consumer.protocol import decode_consumer_subscription
from solver.streams.subscription_info import SubscriptionInfo, encode, streams_fields
from spark_runner.live.wire import encode_subscription
from tests.heuristics.differential.reference import Matrix

SAMPLE = int(os.environ.get("KASSIGN_DIFF_SAMPLE", "200"))
#: Releases the codecs are compared at: the oldest and newest of the matrix and one in between (the codecs'
#: layouts change only with their versions; Kafka reads every older version).
RELEASES = ("3.0.2", "3.8.1", "4.4.0")

pytestmark = pytest.mark.java


def _subscription(rng: random.Random) -> dict[str, Any]:
    topics = sorted({f"t{rng.randint(0, 30)}" for _ in range(rng.randint(0, 6))})
    owned = {t: sorted(rng.sample(range(40), rng.randint(1, 4))) for t in topics if rng.random() < 0.5}
    return {"topics": topics, "user_data": rng.choice([None, "", bytes(rng.getrandbits(8) for _ in range(5)).hex()]),
            "owned": owned, "generation": rng.choice([-1, rng.randint(0, 1000)]),
            "rack": rng.choice([None, f"r{rng.randint(0, 3)}"])}


@pytest.mark.parametrize("release", RELEASES)
def test_consumer_protocol_bytes_are_kafkas(release: str, kafka_matrix: Matrix) -> None:
    rng = random.Random(7)
    cases = [(_subscription(rng), rng.randint(0, 3)) for _ in range(SAMPLE)]
    reqs = [{"assignor": "consumer-protocol", "options": {"op": "encode", "version": v, "subscription": s}}
            for s, v in cases]
    for (sub, version), kafka in zip(cases, kafka_matrix[release].ask_many(reqs), strict=True):
        ud = None if sub["user_data"] is None else bytes.fromhex(sub["user_data"])
        ours = encode_subscription(sub["topics"], ud, owned=sub["owned"], generation=sub["generation"],
                                   rack=sub["rack"], version=version)
        if release < "3.4" and version >= 2:
            # before 3.4 Kafka's protocol has no generation or rack: it writes what its latest version has
            continue
        assert ours.hex() == kafka["bytes"], (release, sub, version)
        back = decode_consumer_subscription(bytes.fromhex(kafka["bytes"]))
        assert list(back.topics) == sub["topics"] and back.user_data == ud


def _info(rng: random.Random) -> SubscriptionInfo:
    version = rng.randint(1, 11)
    tasks = [f"{rng.randint(0, 5)}_{rng.randint(0, 60)}" for _ in range(rng.randint(0, 8))]
    tasks = list(dict.fromkeys(tasks))
    half = len(tasks) // 2
    return SubscriptionInfo(
        version=version, process_id=str(uuid.UUID(int=rng.getrandbits(128))),
        latest_supported_version=-1 if version < 3 else rng.randint(version, 11),
        prev_tasks=tuple(tasks[:half]) if version <= 6 else (),
        standby_tasks=tuple(tasks[half:]) if version <= 6 else (),
        user_end_point=rng.choice(["", "host:9092"]) if version >= 2 else "",
        task_offset_sums=tuple((t, rng.choice([-2, rng.randint(0, 10**9)])) for t in tasks) if version >= 7 else (),
        unique_field=rng.randint(0, 127) if version >= 8 else 0,
        error_code=rng.choice([0, 0, 1]) if version >= 9 else 0,
        client_tags=tuple((f"k{i}", f"v{rng.randint(0, 3)}") for i in range(rng.randint(0, 2))) if version >= 11
        else ())


def _kafka_fields(decoded: dict[str, Any]) -> dict[str, Any]:
    return {**decoded, "user_endpoint": decoded.get("user_endpoint") or None}


@pytest.mark.parametrize("release", ("3.8.1", "4.4.0"))
def test_subscription_info_is_read_as_kafka_reads_it(release: str, kafka_matrix: Matrix) -> None:
    rng = random.Random(11)
    infos = [_info(rng) for _ in range(SAMPLE)]
    blobs = [encode(i) for i in infos]
    reqs = [{"assignor": "subscription-info", "options": {"op": "decode", "bytes_b64": base64.b64encode(b).decode()}}
            for b in blobs]
    for info, blob, kafka in zip(infos, blobs, kafka_matrix[release].ask_many(reqs), strict=True):
        assert "decoded" in kafka, (info, kafka.get("error"))
        assert _kafka_fields(streams_fields(blob)) == _kafka_fields(kafka["decoded"]), info
