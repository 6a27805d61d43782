"""``kassign capture`` against real Kafka-protocol brokers on 127.0.0.1: noida-db and Tansu.

Tansu 0.6 answers DescribeGroups without member metadata, and ListOffsets "latest" with wrong end offsets;
its tests document both and assert kassign's messages about them.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from spark_runner.live.broker import Broker as Admin
from spark_runner.live.broker import BrokerUnavailable, CaptureTimeout, GroupDescription, GroupNotFound
from spark_runner.live.capture import Observed, capture, consumer_instance
from tests.spark_runner.cli.test_cli import kassign
from tests.spark_runner.live.conftest import subscription_bytes
from tests.spark_runner.live.kafka_harness import HOST, Broker, GroupWatch, Member, ended, free_port, wait_until

pytestmark = pytest.mark.kafka


def _admin(broker: Broker) -> Any:
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)


def _create(broker: Broker, topics: dict[str, int]) -> None:
    from kafka.admin import NewTopic

    adm = _admin(broker)
    try:
        adm.create_topics([NewTopic(t, n, 1) for t, n in topics.items()])

        def visible() -> bool:
            # every partition with a leader: Apache Kafka elects them just after the topic exists, and a consumer
            # that read the metadata before would see the topic change and rejoin (a rebalance mid-test)
            found = {d["name"]: len(d["partitions"]) for d in adm.describe_topics(list(topics))
                     if not d["error_code"] and all(not p.get("error_code") and p.get("leader_id", 0) >= 0
                                                    for p in d["partitions"])}
            return found == topics

        wait_until(visible, 20, f"topics {sorted(topics)} in the metadata")
    finally:
        adm.close()


def _produce(broker: Broker, counts: dict[tuple[str, int], int], size: int = 10) -> None:
    from kafka import KafkaProducer

    prod = KafkaProducer(bootstrap_servers=broker.bootstrap)
    try:
        for (t, p), n in counts.items():
            for i in range(n):
                prod.send(t, b"x" * size, key=str(i).encode(), partition=p)
        prod.flush(30)
    finally:
        prod.close()


def _stable(broker: Broker, group: str, members: list[Member], n_partitions: int, seconds: float = 90) -> None:
    """Stable with every member; on noida-db also every partition held (Tansu may leave a formed group Stable
    with members on an older assignment, which a capture there never reads)."""
    watch = GroupWatch(broker.bootstrap)

    def ready() -> bool:
        dead = ended(members)
        if dead:  # they never rejoin: fail now, not at the deadline
            raise AssertionError(f"group {group}: {', '.join(n for n, _ in dead)} stopped polling "
                                 f"({'; '.join(repr(e) for _, e in dead if e)})")
        g_state, n = watch.state(group)
        held = [m.assigned() for m in members]  # read, not call: a member stuck in a join blocks in poll
        return (g_state == "Stable" and n == len(members)
                and (broker.name == "tansu" or sum(map(len, held)) == n_partitions))

    try:
        wait_until(ready, seconds, f"group {group} stable with {n_partitions} partitions assigned")
    finally:
        watch.close()


NO_METADATA = ("error: the broker at {bootstrap} returned no member metadata for group '{group}' (DescribeGroups: "
               "{n} of {n} member(s) without subscription bytes, no protocol name), so kassign capture cannot read "
               "what its members subscribe to and own; what still works on this broker: the live assignor "
               "(spark_runner.live.KassignOptimalAssignor, which reads the members' reports at each join), and "
               "kassign validate/compare/plan on an instance written by hand\n")


def _assert_no_member_metadata(broker: Broker, group: str, n: int, *args: str) -> None:
    """Tansu: the capture stops in one line, exit 69, saying what the broker left out and what still works."""
    with pytest.raises(BrokerUnavailable, match="returned no member metadata") as e:
        capture(broker.bootstrap, group, timeout=20)
    assert e.value.exit_code == 69
    r = kassign("capture", "--bootstrap-server", broker.bootstrap, "--group", group, *args)
    assert (r.returncode, r.stdout) == (69, "")
    assert r.stderr == NO_METADATA.format(bootstrap=broker.bootstrap, group=group, n=n)


@pytest.fixture
def stop_all() -> Iterator[list[Member]]:
    members: list[Member] = []
    yield members
    for m in members:
        if m.is_alive():
            m.stop()


def test_capture_of_a_live_group_is_exact(live_broker: Broker, unique: str, stop_all: list[Member],
                                          tmp_path: Path) -> None:

    kafka_broker = live_broker
    a, b, c = f"{unique}-a", f"{unique}-b", f"{unique}-c"
    sizes = {a: 4, b: 3, c: 2}
    _create(kafka_broker, sizes)
    produced = {(t, p): 3 + 2 * p + len(t) % 3 for t, n in sizes.items() for p in range(n)}
    _produce(kafka_broker, produced)
    subs = {"m0": [a], "m1": [a, b], "m2": [a, b, c], "m3": [b, c]}
    if live_broker.name == "tansu":
        group = _formed(kafka_broker, unique, subs, sum(sizes.values()), stop_all)
        _tansu_documents_its_faults(live_broker, group, produced, sizes)
        return
    group, held, committed = _formed_and_committed(kafka_broker, unique, subs, sum(sizes.values()), stop_all, a)

    doc = capture(kafka_broker.bootstrap, group, weights="lag", timeout=20)

    ids = {cl["client_id"]: mid for mid, cl in doc["source"]["clients"].items()}
    assert set(ids) == set(subs)
    assert doc["protocol"] == "consumer" and doc["name"] == group
    assert doc["source"]["assignor"] == "range" and doc["source"]["state"] == "Stable"
    by_id = {m["id"]: m for m in doc["members"]}
    for name, topics in subs.items():
        m = by_id[ids[name]]
        assert m["topics"] == sorted(topics)
        owned = {(t, p) for t, ps in m.get("owned", {}).items() for p in ps}
        assert owned == held[name]
        assert m["generation"] == -1  # range members send subscription v0: no generation on the wire
    for t, n in sizes.items():
        spec = doc["topics"][t]
        assert spec["partitions"] == n
        want = [float(produced[(t, p)] - committed.get((t, p), 0)) for p in range(n)]
        assert spec["weights"] == want, t
    assert any(f"{a}-0" in note for note in doc.get("notes", []))

    # The same through the CLI, piped into validate / compare / plan with '-'.
    out = tmp_path / "cap.json"
    res = kassign("capture", "--bootstrap-server", kafka_broker.bootstrap, "--group", group, "--weights", "lag",
                  "-o", str(out), "--current", str(tmp_path / "now.json"))
    assert res.returncode == 0, res.stderr
    assert f"captured group '{group}' (range): 4 member(s), 3 topic(s)" in res.stderr
    text = out.read_text()
    assert json.loads(text) == {**doc, "source": {**doc["source"], "captured_at": json.loads(text)["source"][
        "captured_at"]}}
    for cmd in (["validate", "-"], ["compare", "-", "--json", "--assignors", "range"],
                ["plan", "-", "--capacity", "100"]):
        r = kassign(*cmd, stdin=text)
        assert r.returncode == 0, (cmd, r.stderr)
    r = kassign("score", str(out), str(tmp_path / "now.json"), "--json")
    assert r.returncode == 0, r.stderr
    metrics = json.loads(r.stdout)
    assert metrics["valid"] and metrics["moved"] == 0  # today's assignment is what the members own


def _formed(broker: Broker, unique: str, subs: dict[str, list[str]], n_partitions: int,
            members: list[Member]) -> str:
    """A fresh group of ``subs``'s members, Stable with every partition held; its name.

    Forming the group is set-up, not what is tested: when noida-db stalls it (a JoinGroup answered only at the
    rebalance timeout, see test_kafka_assignor), or a member's thread ends, a fresh group is formed.
    """
    for attempt in range(3):
        group = f"{unique}-g{attempt}"
        try:
            _form(broker, group, subs, n_partitions, members)
            return group
        except AssertionError:
            _stop(members)
    pytest.fail(f"{broker.name} stalled the group in three attempts")


def _formed_and_committed(broker: Broker, unique: str, subs: dict[str, list[str]], n_partitions: int,
                          members: list[Member], skip: str
                          ) -> tuple[str, dict[str, set[tuple[str, int]]], dict[tuple[str, int], int]]:
    """A Stable group whose members committed partition p of what they hold at offset p + 1 (``skip``'s partition
    0 left uncommitted); the group, what each member holds and what was committed.

    A rebalance the broker starts meanwhile (a heartbeat late on a loaded machine; on Apache Kafka, kafka-python's
    leader rejoining right after the first round, once it has the metadata of topics only others subscribe to)
    fails a commit: the commits are tried again once the group is stable and the members had a second to finish
    their join.  A group that does not settle again (on a loaded CI machine a member's rejoin once outlasted 45 s)
    is set-up failing, not the capture: a fresh group is formed, up to three times.
    """
    from kafka import OffsetAndMetadata, TopicPartition
    from kafka.errors import CommitFailedError, RebalanceInProgressError

    last: BaseException | None = None
    for attempt in range(3):
        group = f"{unique}-g{attempt}"
        try:
            _form(broker, group, subs, n_partitions, members)
            for _ in range(4):
                held = {m.name.removeprefix("member-"): m.call(lambda c: {(tp.topic, tp.partition)
                                                                         for tp in c.assignment()}) for m in members}
                committed: dict[tuple[str, int], int] = {}
                try:
                    for m in members:
                        name = m.name.removeprefix("member-")
                        mine = {tp: tp[1] + 1 for tp in held[name] if tp != (skip, 0)}
                        committed.update(mine)
                        m.call(partial(_commit, offsets={TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                                                         for (t, p), o in mine.items()}))
                    return group, held, committed
                except (RebalanceInProgressError, CommitFailedError) as e:
                    last = e
                    time.sleep(1.0)
                    _stable(broker, group, members, n_partitions, seconds=45)
                    time.sleep(1.0)
        except (AssertionError, TimeoutError) as e:
            last = e
        _stop(members)
    pytest.fail(f"{broker.name}: no group formed and committed in three attempts (last: {last!r})")


def _commit(consumer: Any, offsets: dict[Any, Any]) -> None:
    consumer.commit(offsets)


def _form(broker: Broker, group: str, subs: dict[str, list[str]], n_partitions: int,
          members: list[Member]) -> None:
    """Start ``subs``'s members in ``group`` and wait until it is Stable with every partition held (a noida-db
    stall is cut short at 45 s: a fresh group forms faster than the stall ends)."""
    _start(broker, group, subs, members)
    _stable(broker, group, members, n_partitions, seconds=45 if broker.name == "noida-db" else 90)


def _start(broker: Broker, group: str, subs: dict[str, list[str]], members: list[Member]) -> None:
    for name, topics in subs.items():
        members.append(Member(broker.bootstrap, group, topics, name=name))
    for m in members:
        m.start()


def _stop(members: list[Member]) -> None:
    for m in members:
        m.stop()
    members.clear()


def _tansu_documents_its_faults(broker: Broker, group: str, produced: dict[tuple[str, int], int],
                                sizes: dict[str, int]) -> None:
    """Tansu 0.6: no member metadata in DescribeGroups, and wrong ListOffsets "latest".

    Capture stops at the first (exit 69, the message says what still works).  The second is shown with
    kassign's own requests: the end offsets it reports are below what was produced, and below the group's
    committed offsets, which a capture's lag notes name as wrong end offsets.
    """
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition

    _assert_no_member_metadata(broker, group, 4, "--weights", "lag")
    # the offsets part on a group of its own with no members (a commit there needs no rebalance): partition p
    # committed at offset p + 1, every record of each partition produced before
    offsets_group = f"{group}-offsets"
    committed = {k: k[1] + 1 for k in produced}
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=offsets_group, enable_auto_commit=False)
    try:
        consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in committed.items()})
    finally:
        consumer.close()
    with Admin(broker.bootstrap, timeout=20) as admin:
        end = admin.offsets(list(produced), latest=True)
        start = admin.offsets(list(produced), latest=False)
        got_committed = admin.committed(offsets_group)
        desc = admin.describe_group(group)
    assert got_committed == committed  # OffsetCommit / OffsetFetch work
    assert start == dict.fromkeys(produced, 0)
    wrong = sorted(k for k in produced if end[k] != produced[k])
    assert wrong, "Tansu's ListOffsets latest now answers the true end offsets: update docs/capture.md"
    behind = sorted(k for k in committed if committed[k] > end[k])
    assert behind  # a committed offset past the reported end: impossible on a correct broker
    # what a capture would write from these answers (members as a Kafka broker would describe them)
    from spark_runner.live.broker import GroupMember, TopicInfo
    from spark_runner.live.wire import encode_assignment, encode_subscription

    members = tuple(GroupMember(f"m{i}", None, f"m{i}", "/127.0.0.1", encode_subscription(sorted(sizes)),
                                encode_assignment({})) for i in range(len(desc.members)))
    obs = Observed(GroupDescription(group, "Stable", "consumer", "range", members),
                   {t: TopicInfo(t, 0, ((1,),) * n, (1,) * n) for t, n in sizes.items()}, {1: None},
                   committed=got_committed, end=end, start=start)
    doc = consumer_instance(obs, weights="lag")
    note = next(n for n in doc["notes"] if "ListOffsets latest" in n)
    t, p = behind[0]
    assert f"{t}-{p} (committed {committed[(t, p)]:,}, end {end[(t, p)]:,})" in note and "wrong" in note


def test_rate_weights_measure_growth_during_the_sample(kafka_broker: Broker, unique: str,
                                                       stop_all: list[Member]) -> None:
    t = f"{unique}-r"
    _create(kafka_broker, {t: 3})
    group = f"{unique}-g"
    stop_all.append(Member(kafka_broker.bootstrap, group, [t], name="r0"))
    stop_all[0].start()
    _stable(kafka_broker, group, stop_all, 3)
    stop_event = threading.Event()

    def feed() -> None:  # partition 1 only, during the sample
        from kafka import KafkaProducer

        prod = KafkaProducer(bootstrap_servers=kafka_broker.bootstrap, linger_ms=0)
        while not stop_event.is_set():
            prod.send(t, b"y" * 100, partition=1)
            prod.flush(5)
            time.sleep(0.02)
        prod.close()

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        time.sleep(0.3)
        doc = capture(kafka_broker.bootstrap, group, weights="rate", sample=1.5, timeout=20)
    finally:
        stop_event.set()
        feeder.join(10)
    w = doc["topics"][t]["weights"]
    assert w[0] == 0 and w[2] == 0 and w[1] > 0
    unit = "bytes/s" if "bytes/s" in doc["source"]["weights"] else "records/s"
    assert unit in doc["notes"][-1]
    if unit == "bytes/s":
        assert w[1] > 100  # more than one 100-byte record per second


def test_a_streams_application_is_captured_as_streams_clients(kafka_broker: Broker, unique: str,
                                                             stop_all: list[Member]) -> None:
    from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

    class StreamsLike(AbstractPartitionAssignor):  # type: ignore[misc]
        """Joins under Kafka Streams' protocol name with Kafka's own SubscriptionInfo bytes."""

        name = "stream"

        def __init__(self, user_data: bytes) -> None:
            self.user_data = user_data

        def metadata(self, topics: Any) -> Any:
            return ConsumerProtocolSubscription(version=0, topics=sorted(topics), user_data=self.user_data)

        def assign(self, cluster: Any, members: Any) -> Any:
            return {m.member_id: ConsumerProtocolAssignment(0, [], b"") for m in members}

        def on_assignment(self, assignment: Any, generation: int = -1) -> None:
            pass

    app_id = f"{unique}-app"
    src, s0, s2 = f"{app_id}-input", f"{app_id}-s0-changelog", f"{app_id}-s2-changelog"
    _create(kafka_broker, {src: 2, s0: 108, s2: 144})
    _produce(kafka_broker, {(s0, 3): 7, (s2, 6): 5})
    t79, t83 = subscription_bytes("sub207-streams-v7-9"), subscription_bytes("sub207-streams-v8-3")
    for name, data in (("th1", t79), ("th2", t79), ("th3", t83)):
        stop_all.append(Member(kafka_broker.bootstrap, app_id, [src], name=name, strategy=[StreamsLike(data)]))
    for m in stop_all:
        m.start()
    adm = _admin(kafka_broker)
    try:
        wait_until(lambda: (lambda g: g["group_state"] == "Stable" and len(g["members"]) == 3)(
            adm.describe_groups([app_id])[app_id]), 60, "the Streams-like group to be stable")
    finally:
        adm.close()
    doc = capture(kafka_broker.bootstrap, app_id, timeout=20, changelogs={"0": [s0], "2": [s2]})
    assert doc["protocol"] == "streams" and doc["source"]["assignor"] == "stream"
    clients = {c["id"]: c for c in doc["clients"]}
    assert set(clients) == {"host-93:443", "streams-app-7:8080"}
    c1, c2 = clients["host-93:443"], clients["streams-app-7:8080"]
    assert (c1["process_id"], c1["capacity"], c1["active"], c1["standby"]) == (
        "d7a02548-7ea5-4713-b998-670294961e5b", 2, ["0_1"], ["0_3", "2_143"])
    assert c1["lags"] == {"0_3": 7, "2_143": 0}
    assert (c2["capacity"], c2["active"], c2["standby"], c2["lags"]) == (1, [], ["0_107", "2_6"],
                                                                          {"0_107": 0, "2_6": 5})
    assert sorted(t["id"] for t in doc["tasks"]) == ["0_1", "0_107", "0_3", "2_143", "2_6"]


def test_errors_are_one_line_with_their_exit_codes(live_broker: Broker, unique: str,
                                                   stop_all: list[Member]) -> None:
    kafka_broker = live_broker
    # noida-db: the group does not exist; Tansu describes an unknown group as Empty.  Neither runs KIP-848
    # groups (Tansu lists ConsumerGroupDescribe, API 69, but not ConsumerGroupHeartbeat, 68): no KIP-848 hint.
    # Apache Kafka describes an unknown group as Dead, and runs KIP-848 groups (which DescribeGroups does not
    # show): capture asks ConsumerGroupDescribe too, and the message says neither kind exists.
    kip848 = live_broker.name == "apache-kafka"
    with pytest.raises(GroupNotFound, match=r"does not exist|no members") as e:
        capture(kafka_broker.bootstrap, f"{unique}-nobody", timeout=10)
    assert e.value.exit_code == 66 and ("KIP-848" in str(e.value)) == kip848
    # A group that had members and committed offsets, now empty.
    t = f"{unique}-e"
    _create(kafka_broker, {t: 1})
    group = f"{unique}-g"
    m = Member(kafka_broker.bootstrap, group, [t], name="e0")
    stop_all.append(m)
    m.start()
    _stable(kafka_broker, group, [m], 1)
    m.call(lambda c: c.commit())
    m.stop()
    with pytest.raises(GroupNotFound, match="no members") as e:
        capture(kafka_broker.bootstrap, group, timeout=10)
    r = kassign("capture", "--bootstrap-server", kafka_broker.bootstrap, "--group", group)
    assert r.returncode == 66 and r.stdout == ""
    assert r.stderr == f"error: group '{group}' has no members (state Empty): nothing to capture\n"


def test_an_unreachable_broker_fails_fast_and_a_silent_one_never_hangs() -> None:
    port = free_port()  # nobody listens: refused
    t0 = time.monotonic()
    with pytest.raises(BrokerUnavailable, match="cannot reach") as e:
        capture(f"{HOST}:{port}", "g", timeout=2)
    assert e.value.exit_code == 69 and time.monotonic() - t0 < 15
    # A listener that accepts connections and never answers.
    srv = socket.socket()
    srv.bind((HOST, 0))
    srv.listen(16)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conns.append(srv.accept()[0])
            except OSError:
                continue

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        t0 = time.monotonic()
        r = kassign("capture", "--bootstrap-server", f"{HOST}:{srv.getsockname()[1]}", "--group", "g",
                    "--timeout", "2")
        took = time.monotonic() - t0
    finally:
        stop.set()
        acceptor.join(5)
        for c in conns:
            c.close()
        srv.close()
    assert r.returncode in (69, 75), r.stderr
    assert took < 2 + 5 + 5  # --timeout plus the grace (and the interpreter's start), never a hang
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: ")


def test_timeout_error_type() -> None:
    assert CaptureTimeout("x").exit_code == 75
