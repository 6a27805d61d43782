"""Consumer-protocol subscription bytes: errors that name their byte, Kafka's forward compatibility, round trips.

Kafka's own bytes (every record of subscription-info.jsonl.gz) and the fuzz tests are in
tests/solver/streams/test_subscription_fields.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.consumer.protocol import (
    ConsumerSubscription,
    consumer_fields,
    decode_consumer_subscription,
    encode_consumer_subscription,
)
from solver.wire import SubscriptionDecodeError


@pytest.mark.parametrize(("raw", "msg"), [
    (b"\x00", "byte 0: version needs 2 bytes, 1 left"),
    (b"\xff\xff", "byte 0: version -1 is negative"),
    (b"\x00\x00\x00\x00\x00\x01\xff\xff", "byte 6: topic has length -1, but it cannot be null"),
    (b"\x00\x00\x00\x00\x00\x01\x00\x02\xc3\x28\xff\xff\xff\xff", "byte 8: topic is not valid UTF-8"),
    (b"\x00\x00\x7f\xff\xff\xff", "byte 2: topics has length 2147483647, more than the 0 bytes left can hold"),
    (b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\x00", "byte 10: 1 trailing bytes"),
])
def test_consumer_errors_name_the_byte(raw: bytes, msg: str) -> None:
    with pytest.raises(SubscriptionDecodeError) as ei:
        decode_consumer_subscription(raw)
    assert str(ei.value).startswith(msg)


def test_consumer_newer_version_is_read_as_version_3() -> None:
    # Kafka: versions above the highest known parse with the current layout; appended fields are ignored
    v3 = encode_consumer_subscription(ConsumerSubscription(3, ("a",), None, (("a", (1,)),), 4, "r1"))
    v9 = b"\x00\x09" + v3[2:] + b"\x00\x00\x00\x07"
    assert consumer_fields(v9) == {"version": 9, "topics": ["a"], "user_data_b64": None,
                                   "owned_partitions": {"a": [1]}, "generation": 4, "rack": "r1"}


@settings(max_examples=150, deadline=None)
@given(version=st.integers(0, 3), topics=st.lists(st.text(max_size=8), max_size=4),
       user=st.none() | st.binary(max_size=20),
       owned=st.lists(st.tuples(st.text(max_size=6), st.lists(st.integers(0, 2**31 - 1), max_size=4)), max_size=3),
       gen=st.none() | st.integers(0, 2**31 - 1), rack=st.none() | st.text(min_size=1, max_size=5))
def test_consumer_round_trip(version: int, topics: list[str], user: bytes | None,
                             owned: list[tuple[str, list[int]]], gen: int | None, rack: str | None) -> None:
    sub = ConsumerSubscription(version, tuple(topics), user,
                               tuple((t, tuple(p)) for t, p in owned) if version >= 1 else (),
                               gen if version >= 2 else None, rack if version >= 3 else None)
    assert decode_consumer_subscription(encode_consumer_subscription(sub)) == sub
