"""Kafka's own subscription bytes (shared/scenarios/kafka/subscription-info.jsonl.gz) and hostile bytes.

Every record's bytes were written by Kafka's encoders (commit 1eb7644349cb); ``decoded`` is what
Kafka's decoders read back.  :func:`streams_fields` / :func:`consumer_fields` must give exactly
those fields, names and order included, and ``kassign decode-subscription --fields`` must print
them (tests/spark_runner/cli/test_decode_subscription.py).  Mutated and random bytes must be
rejected with the byte offset, never crash.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import json
import random
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.consumer.protocol import consumer_fields, decode_consumer_subscription
from solver.errors import InstanceError
from solver.io import parse_instance
from solver.streams.subscription_info import SubscriptionDecodeError, decode, streams_fields, subscriptions_to_instance
from tests.conftest import shared_path

BYTE = re.compile(r"^byte (\d+): \S")


def records() -> list[dict[str, Any]]:
    path = shared_path("scenarios", "kafka", "subscription-info.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _fields(kind: str) -> Callable[[bytes], dict[str, Any]]:
    return consumer_fields if kind == "consumer" else streams_fields


@pytest.mark.parametrize("kind", ["streams", "consumer"])
def test_fields_equal_kafkas_decoder_on_every_record(kind: str) -> None:
    recs = [r for r in records() if r["kind"] == kind]
    failures = []
    for r in recs:
        got = _fields(kind)(base64.b64decode(r["bytes_b64"]))
        # same names in the same order, same values, same order inside lists and objects
        if json.dumps(got) != json.dumps(r["decoded"]):
            failures.append(f"{r['id']}: {json.dumps(got)[:300]}")
    print(f"\nsubscription-info.jsonl.gz {kind}: matched {len(recs) - len(failures)}/{len(recs)}")
    assert len(recs) == {"streams": 110, "consumer": 40}[kind]
    assert not failures, "\n".join(failures[:10])


# --------------------------------------------------------------------------- hostile bytes


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One seeded mutation: truncation, bit flips, random bytes, inserted bytes or an overwritten byte."""
    kind = rng.randrange(5)
    b = bytearray(data)
    if kind == 0:
        return bytes(b[:rng.randrange(len(b) + 1)])
    if kind == 1 and b:
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        return bytes(b)
    if kind == 2:
        return rng.randbytes(rng.randrange(80))
    if kind == 3:
        i = rng.randrange(len(b) + 1)
        return bytes(b[:i]) + rng.randbytes(rng.randint(1, 8)) + bytes(b[i:])
    if b:
        b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


def _decoders() -> list[tuple[str, Callable[[bytes], object]]]:
    return [("streams_fields", streams_fields), ("consumer_fields", consumer_fields),
            ("decode kafka", decode), ("decode kip262", lambda d: decode(d, "kip262")),
            ("decode kip441-draft", lambda d: decode(d, "kip441-draft")),
            ("consumer", decode_consumer_subscription)]


def check_clean(data: bytes) -> set[str]:
    """Run every decoder (and the instance builder) on ``data``; return the names of those that rejected it.

    A rejection must be a ``SubscriptionDecodeError`` naming a byte offset inside the data; the
    instance built from anything accepted must validate or fail with an ``InstanceError``.
    """
    rejected = set()
    for name, fn in _decoders():
        try:
            out = fn(data)
        except SubscriptionDecodeError as e:
            m = BYTE.match(str(e))
            assert m, f"{name}: {e}"
            assert 0 <= int(m.group(1)) <= len(data), f"{name}: {e} (data has {len(data)} bytes)"
            rejected.add(name)
            continue
        if name.startswith("decode"):
            with contextlib.suppress(ValueError, InstanceError):
                parse_instance(subscriptions_to_instance([out]))  # type: ignore[list-item]
    return rejected


def test_seeded_mutations_of_every_record_are_rejected_cleanly() -> None:
    rng = random.Random(20261122)
    tried = rejected = 0
    for r in records():
        data = base64.b64decode(r["bytes_b64"])
        own = "consumer_fields" if r["kind"] == "consumer" else "streams_fields"
        assert own not in check_clean(data)
        for _ in range(30):  # 150 records x 30 = 4,500 mutations
            rejected += own in check_clean(mutate(rng, data))
            tried += 1
    print(f"\n{tried} mutations, {rejected} rejected by the decoder of their kind, none crashed")
    assert tried == 4500 and rejected > tried // 2


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_random_bytes_are_rejected_cleanly(data: bytes) -> None:
    check_clean(data)


# --------------------------------------------------------------------------- named errors


def test_streams_string_that_is_not_utf8_names_its_byte() -> None:
    import struct
    import uuid

    raw = (struct.pack(">ii", 4, 4) + uuid.UUID(int=1).bytes + struct.pack(">ii", 0, 0)
           + struct.pack(">i", 3) + b"a\xffb")
    with pytest.raises(SubscriptionDecodeError, match=r"^byte 37: userEndPoint is not valid UTF-8"):
        streams_fields(raw)
    bad_latest = struct.pack(">ii", 5, 4) + uuid.UUID(int=1).bytes + struct.pack(">iii", 0, 0, 0)
    with pytest.raises(SubscriptionDecodeError, match=r"^byte 4: latestSupportedVersion 4 is below version 5"):
        decode(bad_latest)
