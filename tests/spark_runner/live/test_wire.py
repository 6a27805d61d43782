"""The consumer protocol's subscription and assignment bytes, against Kafka's own encoder's bytes."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from spark_runner.live.wire import (
    KassignUserData,
    WireDecodeError,
    decode_assignment,
    decode_subscription,
    decode_user_data,
    encode_subscription,
    encode_user_data,
)
from tests.conftest import shared_path


def _consumer_records() -> list[dict[str, Any]]:
    path = shared_path("scenarios", "kafka", "subscription-info.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [r for r in rows if r["kind"] == "consumer"]


def test_kafka_subscriptions_decode_and_reencode_byte_exact() -> None:
    records = _consumer_records()
    assert len(records) == 40 and {r["version"] for r in records} == {0, 1, 2, 3}
    for r in records:
        raw = base64.b64decode(r["bytes_b64"])
        want = r["decoded"]
        sub = decode_subscription(raw)
        user = None if want["user_data_b64"] is None else base64.b64decode(want["user_data_b64"])
        assert sub.version == want["version"], r["id"]
        assert list(sub.topics) == want["topics"], r["id"]
        assert sub.user_data == user, r["id"]
        assert {t: list(ps) for t, ps in sub.owned.items()} == want["owned_partitions"], r["id"]
        assert sub.generation == (-1 if want["generation"] is None else want["generation"]), r["id"]
        assert sub.rack == want["rack"], r["id"]
        again = encode_subscription(list(sub.topics), sub.user_data, owned=sub.owned, generation=sub.generation,
                                    rack=sub.rack, version=sub.version)
        assert again == raw, r["id"]


def test_kafka_python_reads_what_we_write_and_we_read_what_it_writes() -> None:
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

    ours = encode_subscription(["b", "a"], b"\x00\x01", owned={"a": [3, 1]}, generation=9, rack="r1", version=3)
    theirs = ConsumerProtocolSubscription.decode(ours)
    assert list(theirs.topics) == ["b", "a"] and bytes(theirs.user_data) == b"\x00\x01"
    assert [(tp.topic, list(tp.partitions)) for tp in theirs.owned_partitions] == [("a", [3, 1])]
    assert theirs.generation_id == 9 and theirs.rack_id == "r1"
    sub = ConsumerProtocolSubscription(version=2, topics=["x"], user_data=b"u", generation_id=4,
                                       owned_partitions=[ConsumerProtocolSubscription.TopicPartition(
                                           topic="x", partitions=[0, 2])])
    back = decode_subscription(bytes(sub.encode()))
    assert (back.version, back.topics, back.user_data, dict(back.owned), back.generation) == (
        2, ("x",), b"u", {"x": (0, 2)}, 4)
    asg = ConsumerProtocolAssignment(0, [("t", [1, 0]), ("u", [5])], b"")
    dec = decode_assignment(bytes(asg.encode()))
    assert dict(dec.partitions) == {"t": (1, 0), "u": (5,)}


def test_a_newer_version_is_read_up_to_the_known_fields() -> None:
    # Kafka's readers ignore fields of versions they do not know; so do we (version 4 here).
    raw = bytearray(encode_subscription(["t"], None, owned={"t": [0]}, generation=3, rack="r", version=3))
    raw[0:2] = (4).to_bytes(2, "big")
    sub = decode_subscription(bytes(raw) + b"\x00\x00\x00\x07")
    assert (sub.version, sub.generation, sub.rack) == (4, 3, "r")


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x00\x00\x00\x00\x00\x05", b"\xff\xff\x00\x00\x00\x00"])
def test_truncated_or_negative_bytes_are_located_errors(data: bytes) -> None:
    with pytest.raises(WireDecodeError, match=r"subscription: byte \d+"):
        decode_subscription(data)


def test_user_data_that_is_not_kassigns_is_ignored_and_bad_kassign_data_is_an_error() -> None:
    assert decode_user_data(None) is None and decode_user_data(b"\x00\x00\x00\x09") is None
    good = encode_user_data(KassignUserData(2, {"t": (1,)}))
    with pytest.raises(WireDecodeError, match="kassign user data"):
        decode_user_data(good[:-1])
    with pytest.raises(WireDecodeError, match="trailing"):
        decode_user_data(good + b"\x00")


_tp = st.dictionaries(st.text(min_size=1, max_size=8), st.lists(st.integers(0, 2**31 - 1), max_size=5,
                                                                unique=True).map(tuple), max_size=4)


@given(st.lists(st.text(max_size=10), max_size=5), st.one_of(st.none(), st.binary(max_size=20)), _tp,
       st.integers(-1, 2**31 - 1), st.one_of(st.none(), st.text(max_size=6)), st.integers(0, 3))
def test_subscription_round_trip(topics: list[str], user: bytes | None, owned: dict[str, tuple[int, ...]],
                                 generation: int, rack: str | None, version: int) -> None:
    sub = decode_subscription(encode_subscription(topics, user, owned=owned, generation=generation, rack=rack,
                                                  version=version))
    assert (list(sub.topics), sub.user_data) == (topics, user)
    assert dict(sub.owned) == (owned if version >= 1 else {})
    assert sub.generation == (generation if version >= 2 else -1)
    assert sub.rack == (rack if version >= 3 else None)


@given(st.integers(-1, 2**31 - 1), _tp,
       st.dictionaries(st.text(min_size=1, max_size=5),
                       st.dictionaries(st.integers(0, 1000), st.floats(0, 1e12, allow_nan=False), max_size=4),
                       max_size=3))
def test_user_data_round_trip(generation: int, owned: dict[str, tuple[int, ...]],
                              weights: dict[str, dict[int, float]]) -> None:
    back = decode_user_data(encode_user_data(KassignUserData(generation, owned, weights)))
    assert back is not None
    assert back.generation == generation
    assert dict(back.owned) == {t: tuple(sorted(ps)) for t, ps in owned.items()}
    assert {t: dict(w) for t, w in back.weights.items()} == weights
