"""SubscriptionInfo codec: hand-built byte strings per layout, round trips, errors, CLI."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.io import parse_instance
from solver.streams.subscription_info import (
    SubscriptionDecodeError,
    SubscriptionInfo,
    decode,
    encode,
    subscriptions_to_instance,
)

PID = "12345678-9abc-def0-1234-56789abcdef0"
PID_BYTES = uuid.UUID(PID).bytes
REPO = Path(__file__).resolve().parents[3]


def test_v4_layout_of_seed_001():
    # VersionId LatestSupportVersionId ClientUUID PrevTasks StandbyTasks EndPoint
    raw = (struct.pack(">ii", 4, 4) + PID_BYTES
           + struct.pack(">i", 2) + struct.pack(">ii", 0, 1) + struct.pack(">ii", 1, 0)
           + struct.pack(">i", 1) + struct.pack(">ii", 2, 3)
           + struct.pack(">i", 9) + b"host:8080")
    info = decode(raw)
    assert info == SubscriptionInfo(4, PID, 4, ("0_1", "1_0"), ("2_3",), "host:8080")
    assert encode(info) == raw


def test_v1_and_v2_have_no_latest_version():
    v1 = struct.pack(">i", 1) + PID_BYTES + struct.pack(">i", 0) + struct.pack(">i", 1) + struct.pack(">ii", 0, 0)
    assert decode(v1) == SubscriptionInfo(1, PID, -1, (), ("0_0",))
    v2 = struct.pack(">i", 2) + PID_BYTES + struct.pack(">ii", 0, 0) + struct.pack(">i", 0)
    assert decode(v2).user_end_point == "" and encode(decode(v2)) == v2


def test_kip441_draft_v5_store_lags():
    # VersionId LatestSupportVersionId ClientUUID StoreLags EndPoint; StoreId = task + store name
    store = b"counts-store"
    raw = (struct.pack(">ii", 5, 5) + PID_BYTES + struct.pack(">i", 2)
           + struct.pack(">iih", 0, 3, len(store)) + store + struct.pack(">i", 70)
           + struct.pack(">iih", 0, 3, 2) + b"kv" + struct.pack(">i", 30)
           + struct.pack(">i", 0))
    info = decode(raw, "kip441-draft")
    assert info.store_lags == (("0_3", "counts-store", 70), ("0_3", "kv", 30))
    assert encode(info, "kip441-draft") == raw
    doc = subscriptions_to_instance([info])
    assert doc["clients"][0]["lags"] == {"0_3": 100}  # store lags add up to the task lag
    assert doc["clients"][0]["standby"] == ["0_3"]


def test_kip262_taskid_with_state_store_count():
    raw = (struct.pack(">ii", 3, 3) + PID_BYTES + struct.pack(">i", 1) + struct.pack(">iii", 1, 2, 3)
           + struct.pack(">i", 1) + struct.pack(">iii", 0, 4, 0) + struct.pack(">i", 0))
    info = decode(raw, "kip262")
    assert info.prev_tasks == ("1_2",) and info.standby_tasks == ("0_4",)
    assert dict(info.task_stores) == {"1_2": 3, "0_4": 0}
    assert encode(info, "kip262") == raw
    doc = subscriptions_to_instance([info])
    assert doc["tasks"] == [{"id": "0_4", "stateful": True, "stores": 0},
                            {"id": "1_2", "stateful": True, "stores": 3}]
    with pytest.raises(SubscriptionDecodeError):
        decode(raw, "kafka")  # the extra int per task leaves trailing bytes


def test_v7_task_offset_sums_grouped_by_subtopology():
    # KIP-441 as shipped: taskOffsetSums = [topicGroupId, [partition, offsetSum]]
    raw = (struct.pack(">ii", 7, 7) + PID_BYTES + struct.pack(">i", 3) + b"h:1"
           + struct.pack(">i", 2)
           + struct.pack(">ii", 0, 2) + struct.pack(">iq", 0, -2) + struct.pack(">iq", 5, 1200)
           + struct.pack(">ii", 3, 1) + struct.pack(">iq", 1, 77))
    info = decode(raw)
    assert info.task_offset_sums == (("0_0", -2), ("0_5", 1200), ("3_1", 77))
    assert encode(info) == raw
    doc = subscriptions_to_instance([info, info], end_offsets={"0_5": 1500, "3_1": 77})
    (client,) = doc["clients"]
    assert client["id"] == "h:1" and client["capacity"] == 2  # two threads of one process
    assert client["active"] == ["0_0"] and client["standby"] == ["0_5", "3_1"]
    assert client["lags"] == {"0_5": 300, "3_1": 0}
    parse_instance(doc)


def test_v10_and_v11_fields():
    raw10 = (struct.pack(">ii", 10, 10) + PID_BYTES + struct.pack(">i", 0)
             + struct.pack(">i", 1) + struct.pack(">iiqh", 2, 4, 99, -1)
             + struct.pack(">b", 7) + struct.pack(">i", 0))
    info = decode(raw10)
    assert info.task_offset_sums == (("2_4", 99),) and info.unique_field == 7 and not info.named_topologies
    assert encode(info) == raw10
    raw11 = (struct.pack(">ii", 11, 11) + PID_BYTES + struct.pack(">i", 0) + struct.pack(">i", 0)
             + struct.pack(">b", 1) + struct.pack(">i", 3)
             + struct.pack(">i", 1) + struct.pack(">i", 4) + b"zone" + struct.pack(">i", 4) + b"west")
    info11 = decode(raw11)
    assert info11.client_tags == (("zone", "west"),) and info11.error_code == 3
    assert encode(info11) == raw11
    # the process's client tags reach the instance (the first subscription's, as Kafka's leader keeps them)
    doc = subscriptions_to_instance([info11, info11])
    assert doc["clients"][0]["client_tags"] == {"zone": "west"}
    assert dict(parse_instance(doc).streams.clients[0].client_tags) == {"zone": "west"}
    assert "client_tags" not in subscriptions_to_instance([info])["clients"][0]


def test_named_topology_is_kept_but_refused_for_instances():
    raw = (struct.pack(">ii", 10, 10) + PID_BYTES + struct.pack(">i", 0)
           + struct.pack(">i", 1) + struct.pack(">iiqh", 0, 0, 5, 3) + b"app" + struct.pack(">bi", 0, 0))
    info = decode(raw)
    assert dict(info.named_topologies) == {"0_0": "app"}
    with pytest.raises(ValueError, match="named topologies"):
        subscriptions_to_instance([info])


@pytest.mark.parametrize(("raw", "msg"), [
    (b"\x00\x00", "byte 0: version needs 4 bytes, 2 left"),
    (struct.pack(">i", 12) + bytes(20), "byte 0: version 12 not supported"),
    (struct.pack(">ii", 4, 4) + PID_BYTES + struct.pack(">i", -1), "byte 24: prevTasks has negative length -1"),
    (struct.pack(">ii", 4, 4) + PID_BYTES + struct.pack(">iiii", 0, 0, 0, 9), "byte 36: 4 trailing bytes"),
])
def test_decode_errors_name_the_byte(raw, msg):
    with pytest.raises(SubscriptionDecodeError) as ei:
        decode(raw)
    assert str(ei.value).startswith(msg)


task_ids = st.tuples(st.integers(0, 50), st.integers(0, 500)).map(lambda t: f"{t[0]}_{t[1]}")


@settings(max_examples=150, deadline=None)
@given(version=st.integers(1, 11), pid=st.uuids().map(str), ep=st.text(max_size=12),
       a=st.lists(task_ids, unique=True, max_size=5), b=st.lists(task_ids, unique=True, max_size=5),
       sums=st.dictionaries(task_ids, st.integers(-3, 2**62), max_size=6),
       extra=st.tuples(st.integers(-128, 127), st.integers(-(2**31), 2**31 - 1)),
       tags=st.lists(st.tuples(st.text(max_size=5), st.text(max_size=5)), max_size=3, unique_by=lambda kv: kv[0]))
def test_round_trip_kafka_layout(version, pid, ep, a, b, sums, extra, tags):
    info = SubscriptionInfo(
        version, pid, version if version >= 3 else -1,
        tuple(a) if version <= 6 else (), tuple(b) if version <= 6 else (), ep if version >= 2 else "",
        tuple(sorted(sums.items(), key=lambda kv: tuple(map(int, kv[0].split("_"))))) if version >= 7 else (),
        extra[0] if version >= 8 else 0, extra[1] if version >= 9 else 0,
        tuple(tags) if version >= 11 else ())
    assert decode(encode(info)) == info


@settings(max_examples=60, deadline=None)
@given(version=st.integers(1, 6), a=st.dictionaries(task_ids, st.integers(0, 9), max_size=5))
def test_round_trip_kip262(version, a):
    info = SubscriptionInfo(version, PID, version if version >= 3 else -1, tuple(a), (), "",
                            task_stores=a)
    assert decode(encode(info, "kip262"), "kip262") == info


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "spark_runner", *args], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


def test_cli_decode_subscription(tmp_path):
    other = "00000000-0000-0000-0000-000000000007"
    v7 = (struct.pack(">ii", 7, 7) + PID_BYTES + struct.pack(">i", 0)
          + struct.pack(">i", 1) + struct.pack(">ii", 0, 1) + struct.pack(">iq", 0, -2))
    v7b = (struct.pack(">ii", 7, 7) + uuid.UUID(other).bytes + struct.pack(">i", 0)
           + struct.pack(">i", 1) + struct.pack(">ii", 0, 1) + struct.pack(">iq", 0, 40))
    (tmp_path / "a.bin").write_bytes(v7)
    (tmp_path / "b.b64").write_text(base64.b64encode(v7b).decode() + "\n")
    (tmp_path / "ends.json").write_text(json.dumps({"0_0": 100}))
    r = _cli("decode-subscription", str(tmp_path / "a.bin"), str(tmp_path / "b.b64"),
             "--end-offsets", str(tmp_path / "ends.json"), "--num-standby-replicas", "1")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [c["active"] for c in doc["clients"]] == [["0_0"], []]
    assert doc["clients"][1]["lags"] == {"0_0": 60}
    inst = parse_instance(doc)
    assert inst.streams.config.num_standby_replicas == 1
    (tmp_path / "bad.bin").write_bytes(v7[:-3])
    bad = _cli("decode-subscription", str(tmp_path / "bad.bin"))
    assert bad.returncode == 65 and "bad.bin: byte" in bad.stderr


def _v7(pid: str, sums: list[tuple[int, int, int]]) -> bytes:
    body = b"".join(struct.pack(">iiiq", s, 1, p, off) for s, p, off in sums)
    return (struct.pack(">ii", 7, 7) + uuid.UUID(pid).bytes + struct.pack(">i", 0)
            + struct.pack(">i", len(sums)) + body)


def test_lags_unknown_without_end_offsets():
    info = decode(_v7(PID, [(0, 0, -2), (0, 1, 500), (0, 2, -3)]))
    doc = subscriptions_to_instance([info])
    (client,) = doc["clients"]
    assert client["active"] == ["0_0"] and client["standby"] == ["0_1", "0_2"]
    assert client["lags"] == {"0_1": None, "0_2": None}  # state on disk, lag unknown: not a hot standby
    inst = parse_instance(doc)
    from solver.streams.model import UNKNOWN_LAG, is_caught_up, restore_costs
    (c,) = inst.streams.clients
    t1 = next(t for t in inst.streams.tasks if t.id == "0_1")
    assert c.lag_for(t1) == UNKNOWN_LAG and not is_caught_up(inst.streams, c, t1)
    assert restore_costs(inst.streams, t1) == [inst.streams.config.acceptable_recovery_lag + 1]
    # with end offsets: Kafka's computeTaskLags, an offset sum past the end restores from scratch
    doc2 = subscriptions_to_instance([info], end_offsets={"0_1": 400, "0_2": 9})
    assert doc2["clients"][0]["lags"] == {"0_1": 400, "0_2": None}
    doc3 = subscriptions_to_instance([info], end_offsets={"0_1": 800})
    assert doc3["clients"][0]["lags"] == {"0_1": 300, "0_2": None}


def test_v1_to_v6_standbys_have_unknown_lags_even_with_end_offsets():
    raw = (struct.pack(">ii", 4, 4) + PID_BYTES + struct.pack(">i", 1) + struct.pack(">ii", 0, 1)
           + struct.pack(">i", 1) + struct.pack(">ii", 0, 2) + struct.pack(">i", 0))
    doc = subscriptions_to_instance([decode(raw)], end_offsets={"0_2": 100})
    assert doc["clients"][0]["lags"] == {"0_2": None}  # Kafka derives UNKNOWN_OFFSET_SUM for them
