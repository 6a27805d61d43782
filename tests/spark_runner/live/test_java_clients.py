"""Real Apache Kafka 4.4.0 Java clients on a real Apache Kafka 4.4.0 broker, predicted exactly by kassign.

A consumer group of ``KafkaConsumer`` members (classic protocol with ``range`` and ``cooperative-sticky``; the
KIP-848 consumer protocol with the coordinator's ``uniform`` and ``range``) goes through scripted steps: a join,
a leave, and a restart (the member leaves, then joins again under the same ``client.id``).  Before each step
the group's state is read, and after it the assignment the real group settled on must equal what kassign's
Kafka-named assignor (``kassign assign --kafka-version 4.4``, cooperative rounds settled) predicts from that
state plus the membership change.

What the state before a step cannot tell, and how the test supplies it:

- **a joining member's id.**  The broker (classic: ``client.id`` plus a random UUID) or the client itself
  (KIP-848: a random ``Uuid``) draws it when the member joins.  Range orders members by id and the sticky and
  uniform assignors walk them in Java ``HashMap`` order of their ids, so the prediction uses the id the new
  member reports after it joined (its only input taken from after the step).
- **KIP-848 groups: the target assignment.**  ``kassign capture`` reads classic groups through DescribeGroups
  and KIP-848 groups through ConsumerGroupDescribe; for the latter ``owned`` is each member's target assignment
  (the coordinator's assignor input), checked against Kafka's own ``Admin.describeConsumerGroups`` (the
  driver's ``describe_consumer_group``; on a settled group also what every member holds), with the
  subscriptions and the topics' ids.
- **KIP-848: the insertion order of a member's assignment map.**  ``uniform`` walks a member's partitions in
  ``HashMap<Uuid, ...>`` order, which for two topic ids sharing a bucket is the order the coordinator inserted
  them, seen by nobody outside it.  The test draws topics until their ids fall in distinct buckets.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_runner.live.capture import capture
from tests.kafka_broker import REPO, die_with_parent, java_binary, maven_classpath
from tests.spark_runner.cli.test_cli import kassign
from tests.spark_runner.live.kafka_harness import Broker
from tests.spark_runner.live.test_kafka_capture import _admin, _create

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

CLIENTS_MODULE = REPO / "java" / "clients"
TP = tuple[str, int]


class JavaClients:
    """The ``java/clients`` driver: one JVM running scripted Kafka 4.4.0 members, spoken to in JSON lines."""

    def __init__(self, workdir: Path, extra_classpath: tuple[Path, ...] = (),
                 jvm_options: tuple[str, ...] = ()) -> None:
        cp = maven_classpath(CLIENTS_MODULE, CLIENTS_MODULE / "target" / "classpath.txt")
        cp = os.pathsep.join([str(CLIENTS_MODULE / "target" / "classes"), cp, *map(str, extra_classpath)])
        self.log = workdir / "java-clients.log"
        self.proc = subprocess.Popen(
            [java_binary(), "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", *jvm_options, "-cp", cp, "dev.kassign.clients.Driver"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(self.log, "wb"), text=True,  # noqa: SIM115
            preexec_fn=die_with_parent)

    def request(self, **req: Any) -> dict[str, Any]:
        """Send one request; return the answer (a failed one raises with the driver's error)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Java driver exited: {self.log.read_text(errors='replace')[-3000:]}")
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(f"{req.get('op')} {req.get('name', '')}: {answer.get('error')}")
        return answer

    def members(self) -> dict[str, dict[str, Any]]:
        """Every running member's own view (consumers: member_id, generation, assigned)."""
        found: dict[str, dict[str, Any]] = self.request(op="state")["members"]
        for name, m in found.items():
            if m.get("error"):
                raise AssertionError(f"member {name} failed: {m['error']}")
        return found

    def close(self) -> None:
        """Quit (members close and leave); kill the JVM by its PID if it does not end."""
        try:
            if self.proc.poll() is None and self.proc.stdin is not None:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="session")
def java_clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaClients]:
    driver = JavaClients(tmp_path_factory.mktemp("java-clients"))
    try:
        yield driver
    finally:
        driver.close()


# (group.protocol, the member's or the coordinator's assignor as configured, kassign's assignor)
GROUPS = [
    ("classic", {"partition.assignment.strategy": "org.apache.kafka.clients.consumer.RangeAssignor"}, "range"),
    ("classic", {"partition.assignment.strategy": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"},
     "cooperative-sticky"),
    ("consumer", {"group.remote.assignor": "uniform"}, "uniform"),
    ("consumer", {"group.remote.assignor": "range"}, "server-range"),
]


def _config(protocol: str, extra: dict[str, str]) -> dict[str, str]:
    if protocol == "classic":  # KIP-848 members take their heartbeat and session from the broker
        return {"group.protocol": "classic", "session.timeout.ms": "6000", "heartbeat.interval.ms": "500", **extra}
    return {"group.protocol": "consumer", **extra}


def _held(view: dict[str, Any]) -> set[TP]:
    return {(t, p) for t, p in view.get("assigned", [])}


def _settled(clients: JavaClients, names: set[str], all_tps: set[TP], seconds: float = 120,
             stable: Callable[[dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    """Wait until exactly ``names`` run, hold every partition once, and nothing moved for 2 s; their views.

    ``stable``: also true of the views before they count as settled.  A KIP-848 group needs it: after a join
    the old members still hold every partition once and the joiner none until their next heartbeats, which on
    a loaded machine can look settled for 2 s; the coordinator's own description tells.
    """
    deadline = time.monotonic() + seconds
    last: dict[str, Any] | None = None
    since = 0.0
    while time.monotonic() < deadline:
        views = clients.members()
        if set(views) == names and all(v["member_id"] for v in views.values()):
            flat = [tp for v in views.values() for tp in _held(v)]
            key = {n: (v["member_id"], sorted(_held(v))) for n, v in views.items()}
            if len(flat) == len(set(flat)) and set(flat) == all_tps:
                if key == last:
                    if time.monotonic() - since >= 2.0 and (stable is None or stable(views)):
                        return views
                else:
                    last, since = key, time.monotonic()
        time.sleep(0.25)
    raise AssertionError(f"the group did not settle in {seconds} s: {clients.members()}")


def _kip848_group(clients: JavaClients, broker: Broker, group: str) -> tuple[dict[str, Any], dict[str, set[TP]],
                                                                          dict[str, set[TP]]]:
    """The coordinator's description of ``group`` (ConsumerGroupDescribe through Kafka's Admin), and per member
    id (in the description's order) its target assignment and the assignment it has."""
    desc = clients.request(op="describe_consumer_group", bootstrap=broker.bootstrap, group=group)["group"]
    targets = {m["member_id"]: {(t, p) for t, p in m["target_assignment"]} for m in desc["members"]}
    held = {m["member_id"]: {(t, p) for t, p in m["assignment"]} for m in desc["members"]}
    return desc, targets, held


def _kip848_stable(clients: JavaClients, broker: Broker, group: str) -> Callable[[dict[str, Any]], bool]:
    """Whether the coordinator calls the group stable, every member at its target, and that is what each holds."""
    def check(views: dict[str, Any]) -> bool:
        desc, targets, held = _kip848_group(clients, broker, group)
        return (desc["state"].lower() == "stable"
                and held == targets == {v["member_id"]: _held(v) for v in views.values()})
    return check


def _topic_ids(broker: Broker, names: list[str]) -> dict[str, str]:
    """The topics' Kafka ids (Metadata)."""
    adm = _admin(broker)
    try:
        ids = {d["name"]: str(d["topic_id"]) for d in adm.describe_topics(names)}
    finally:
        adm.close()
    return ids


def _bucket(topic_id: str) -> int:
    """The bucket of a topic id in a 16-bucket Java ``HashMap``: ``Uuid.hashCode``, spread, masked."""
    from heuristics.kip848.java_order import uuid_hash

    h = uuid_hash(uuid.UUID(topic_id).int) & 0xFFFFFFFF
    return (h ^ (h >> 16)) & 15


def _kip848_targets(clients: JavaClients, broker: Broker, group: str, views: dict[str, Any]) -> dict[str, set[TP]]:
    """The coordinator's target assignment per member id (ConsumerGroupDescribe through Kafka's Admin), in the
    order the description lists the members.

    On a settled group every member's target is what it holds, both in the coordinator's description and in the
    member's own view: asserted.
    """
    desc, targets, held = _kip848_group(clients, broker, group)
    assert desc["type"].lower() == "consumer" and desc["state"].lower() == "stable", desc
    assert held == targets
    assert {v["member_id"]: _held(v) for v in views.values()} == targets
    return targets


def _state_before(broker: Broker, group: str, protocol: str, views: dict[str, Any], subs: dict[str, list[str]],
                  sizes: dict[str, int], topic_ids: dict[str, str], clients: JavaClients) -> dict[str, Any]:
    """The group's state before a step as a kassign instance: a capture (classic) or ConsumerGroupDescribe (KIP-848)."""
    if protocol == "classic":
        doc = capture(broker.bootstrap, group, timeout=30)
        by_client = {cl["client_id"]: mid for mid, cl in doc["source"]["clients"].items()}
        # the capture's members are what the members themselves report (ids, subscriptions, owned partitions)
        assert by_client == {n: v["member_id"] for n, v in views.items()}
        for m in doc["members"]:
            name = doc["source"]["clients"][m["id"]]["client_id"]
            assert m["topics"] == sorted(subs[name])
        return doc
    # a KIP-848 group: capture reads it with ConsumerGroupDescribe; the coordinator's target assignments it
    # writes as ``owned`` are what Kafka's own Admin.describeConsumerGroups reads (and, settled, what every
    # member holds)
    doc = capture(broker.bootstrap, group, timeout=30)
    targets = _kip848_targets(clients, broker, group, views)
    # capture keeps the coordinator's member order (uniform's HashMap ties follow it), as Kafka's Admin lists it
    assert [m["id"] for m in doc["members"]] == list(targets)
    assert doc["source"]["group_protocol"] == "consumer (KIP-848)"
    assert {m["id"]: {(t, p) for t, ps in m.get("owned", {}).items() for p in ps} for m in doc["members"]} == targets
    assert {m["id"]: m["topics"] for m in doc["members"]} == {v["member_id"]: sorted(subs[n]) for n, v in views.items()}
    assert {t: spec["id"] for t, spec in doc["topics"].items()} == {t: topic_ids[t] for t in doc["topics"]}
    assert {t: spec["partitions"] for t, spec in doc["topics"].items()} == {t: sizes[t] for t in doc["topics"]}
    return doc


def _predict(tmp: Path, instance: dict[str, Any], assignor: str) -> dict[str, set[TP]]:
    """``kassign assign --assignor A --kafka-version 4.4 [--settle]`` (JSON out): member id -> partitions."""
    path = tmp / f"instance-{time.monotonic_ns()}.json"
    path.write_text(json.dumps(instance))
    args = ["assign", str(path), "--assignor", assignor, "--kafka-version", "4.4"]
    if assignor == "cooperative-sticky":
        args.append("--settle")
    r = kassign(*args)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assignment = out["assignment"]
    return {m: {(t, p) for t, ps in tps.items() for p in ps} for m, tps in assignment.items()}


def _step_instance(before: dict[str, Any], *, drop: str | None = None,
                   add: tuple[str, list[str]] | None = None) -> dict[str, Any]:
    """``before`` with one member gone (``drop``: its id) or one new member (``add``: id, topics)."""
    # The members staying keep what they own now (the capture's ``owned``: their current assignment) and their
    # generation (classic; an eager range member revokes first, which range ignores anyway).
    members = [m for m in before["members"] if m["id"] != drop]
    if add is not None:
        members.append({"id": add[0], "topics": sorted(add[1])})
    inst = {k: v for k, v in before.items() if k not in ("source", "notes", "name")}
    inst["members"] = members
    return inst


@pytest.mark.parametrize(("protocol", "extra", "assignor"), GROUPS,
                         ids=[f"{p}-{a}" for p, _e, a in GROUPS])
def test_real_consumer_groups_settle_where_kassign_predicts(
        apache_kafka: Broker, java_clients: JavaClients, unique: str, tmp_path: Path, protocol: str,
        extra: dict[str, str], assignor: str) -> None:
    sizes = {f"{unique}-a": 7, f"{unique}-b": 5}
    for attempt in range(8):  # KIP-848: topic ids in distinct HashMap buckets (see the module docstring)
        _create(apache_kafka, sizes)
        topic_ids = _topic_ids(apache_kafka, list(sizes))
        if protocol == "classic" or len({_bucket(i) for i in topic_ids.values()}) == len(sizes):
            break
        sizes = {f"{unique}-{attempt}{t[-1]}": n for t, n in sizes.items()}
    a, b = sorted(sizes)
    all_tps = {(t, p) for t, n in sizes.items() for p in range(n)}
    group = f"{unique}-g"
    config = _config(protocol, extra)
    # m2 reads one topic only: heterogeneous subscriptions (Range per topic, uniform's heterogeneous builder)
    subs = {f"{unique}m0": [a, b], f"{unique}m1": [a, b], f"{unique}m2": [a]}

    def start(name: str) -> None:
        java_clients.request(op="consumer", name=name, bootstrap=apache_kafka.bootstrap, group=group,
                             topics=subs[name], config=config)

    running: set[str] = set()
    stable = _kip848_stable(java_clients, apache_kafka, group) if protocol == "consumer" else None
    try:
        for name in subs:  # forming the group is set-up: its steps are not predicted
            start(name)
            running.add(name)
        views = _settled(java_clients, running, all_tps, stable=stable)
        joiner = f"{unique}m3"
        subs[joiner] = [a, b]
        steps = [("join", joiner), ("leave", f"{unique}m0"), ("leave", f"{unique}m1"), ("join", f"{unique}m1")]
        for what, name in steps:
            before = _state_before(apache_kafka, group, protocol, views, subs, sizes, topic_ids, java_clients)
            if what == "join":
                start(name)
                running.add(name)
            else:
                java_clients.request(op="stop", name=name)
                running.discard(name)
            after = _settled(java_clients, running, all_tps, stable=stable)
            if what == "join":
                inst = _step_instance(before, add=(after[name]["member_id"], subs[name]))
            else:
                inst = _step_instance(before, drop=views[name]["member_id"])
            want = _predict(tmp_path, inst, assignor)
            got = {v["member_id"]: _held(v) for v in after.values()}
            assert got == want, f"{what} {name}: kassign {assignor} predicted {want}, the group settled on {got}"
            if protocol == "consumer":  # and the coordinator's own target assignment is that too
                assert _kip848_targets(java_clients, apache_kafka, group, after) == want
            views = after
    finally:
        for name in sorted(running):
            java_clients.request(op="stop", name=name)


def _streams_settled(clients: JavaClients, names: set[str], tasks: set[str], seconds: float = 150) -> dict[str, Any]:
    """Every instance RUNNING, each task active on exactly one, nothing moved for 2 s: name -> (active, standby)."""
    deadline = time.monotonic() + seconds
    last: dict[str, Any] | None = None
    since = 0.0
    while time.monotonic() < deadline:
        views = clients.members()
        if set(views) == names and all(v["state"] == "RUNNING" for v in views.values()):
            held = {n: (frozenset(t for th in v["threads"] for t in th["active"]),
                        frozenset(t for th in v["threads"] for t in th["standby"])) for n, v in views.items()}
            flat = [t for act, _ in held.values() for t in act]
            if len(flat) == len(set(flat)) and set(flat) == tasks:
                if held == last:
                    if time.monotonic() - since >= 2.0:
                        return held
                else:
                    last, since = held, time.monotonic()
        time.sleep(0.25)
    raise AssertionError(f"the Streams application did not settle in {seconds} s: {clients.members()}")


def test_a_real_streams_application_settles_where_kassign_predicts(
        apache_kafka: Broker, java_clients: JavaClients, unique: str, tmp_path: Path) -> None:
    """Kafka Streams 4.4.0 (classic protocol, HighAvailabilityTaskAssignor), in-memory store, one thread per instance.

    Each instance's client id in the capture is its ``application.server`` endpoint (``<name>:8080``); its process
    id and capacity come from the capture, its tasks from the instance itself (see below).  A joining
    instance's process id (a random UUID; the assignor orders clients by it) and its subscription are only seen
    once it joined: the prediction takes that one client from the capture after the step, everything else from
    the capture before.  No records are produced: every changelog is empty, so every client is caught up on every
    task (no warm-ups, no probing rebalance).
    """
    app = f"{unique}-app"
    source = f"{app}-in"
    _create(apache_kafka, {source: 6})
    tasks = {f"0_{p}" for p in range(6)}
    changelogs = {"0": [f"{app}-counts-changelog"]}

    def start(name: str) -> None:
        java_clients.request(op="streams", name=name, bootstrap=apache_kafka.bootstrap, app=app, input=source,
                             config={"group.protocol": "classic", "num.stream.threads": "1",
                                     "application.server": f"{name}:8080", "commit.interval.ms": "200",
                                     "consumer.session.timeout.ms": "6000",
                                     "consumer.heartbeat.interval.ms": "500"})

    def cap() -> dict[str, Any]:
        return capture(apache_kafka.bootstrap, app, timeout=30, changelogs=changelogs)

    running: set[str] = set()
    try:
        for name in ("s0", "s1"):
            start(name)
            running.add(name)
        held = _streams_settled(java_clients, running, tasks)
        for what, name in (("join", "s2"), ("leave", "s0")):
            before = cap()
            assert before["protocol"] == "streams"
            assert {c["id"] for c in before["clients"]} == {f"{n}:8080" for n in held}
            # A Streams capture reads each client's SubscriptionInfo, sent at its last JoinGroup: its previous
            # tasks as of that join, not what the last rebalance gave it (that is in the AssignmentInfo, which
            # capture does not decode).  What a client reports in the step's JoinGroup is what it runs now (its
            # in-memory stores keep no state for other tasks, so no offset sums beyond its running actives):
            # taken from the instance itself.
            # Kafka's leader takes a task's lag as its changelogs' end offset sum minus the client's offset sum
            # for it (0 when the client reports none): every changelog is empty, so 0 for every task a client
            # does not run.  The application's tasks are its input partitions (subtopology 0, one in-memory
            # store): a capture lists only tasks some client mentions.
            for c in before["clients"]:
                act, sb = held[c["id"].removesuffix(":8080")]
                c.update(active=sorted(act), standby=sorted(sb), lags=dict.fromkeys(sorted(tasks - act), 0))
            before["tasks"] = [{"id": t, "stateful": True, "stores": 1} for t in sorted(tasks)]
            if what == "join":
                start(name)
                running.add(name)
            else:
                java_clients.request(op="stop", name=name)
                running.discard(name)
            held = _streams_settled(java_clients, running, tasks)
            clients = [c for c in before["clients"] if c["id"] != f"{name}:8080"]
            if what == "join":
                joined = next(c for c in cap()["clients"] if c["id"] == f"{name}:8080")
                assert (joined["active"], joined["standby"], joined["lags"]) == ([], [], {})  # it joined empty
                clients.append({**joined, "lags": dict.fromkeys(sorted(tasks), 0)})
            inst = {k: v for k, v in before.items() if k not in ("source", "notes", "name")}
            inst["clients"] = clients
            path = tmp_path / f"{what}.json"
            path.write_text(json.dumps(inst))
            r = kassign("assign", str(path), "--assignor", "high-availability", "--kafka-version", "4.4")
            assert r.returncode == 0, r.stderr
            out = json.loads(r.stdout)
            want = {c: (set(a["active"]), set(a["standby"]) | set(a["warmup"])) for c, a in out["assignment"].items()}
            got = {f"{n}:8080": (set(act), set(sb)) for n, (act, sb) in held.items()}
            assert not out.get("probing_rebalance")
            assert got == want, f"{what} {name}: kassign high-availability predicted {want}, the application ran {got}"
    finally:
        for name in sorted(running):
            java_clients.request(op="stop", name=name)


def _kip1071_instance(desc: dict[str, Any], tasks: set[str]) -> dict[str, Any]:
    """A streams group as StreamsGroupDescribe shows it, as a kassign KIP-1071 instance (``docs/streams.md``)."""
    clients: dict[str, dict[str, Any]] = {}
    for m in desc["members"]:
        c = clients.setdefault(m["process_id"], {"id": m["user_endpoint"], "process_id": m["process_id"],
                                                 "members": []})
        target, now = m["target_assignment"], m["assignment"]
        member: dict[str, Any] = {"id": m["member_id"], "active": target["active"], "standby": target["standby"]}
        assert not target["warmup"] and not now["warmup"], m  # no standbys configured: no warm-ups either
        if (now["active"], now["standby"]) != (target["active"], target["standby"]):
            member.update(current_active=now["active"], current_standby=now["standby"])
        if m["task_offsets"]:
            member["task_offsets"] = m["task_offsets"]
        c["members"].append(member)
    return {"format": "kassign/v1", "protocol": "streams", "config": {"num_standby_replicas": 0},
            "tasks": [{"id": t, "stateful": True, "stores": 1} for t in sorted(tasks)],
            "clients": list(clients.values())}


def test_a_real_kip1071_streams_group_settles_where_kassign_predicts(
        apache_kafka: Broker, java_clients: JavaClients, unique: str, tmp_path: Path) -> None:
    """Kafka Streams 4.4.0 under the streams rebalance protocol (KIP-1071): the coordinator's sticky assignor.

    ``kassign capture`` does not read streams groups (StreamsGroupDescribe); the state before a step is what Kafka's
    own ``Admin.describeStreamsGroups`` returns (the driver's ``describe_streams_group``): members, process ids,
    target and current assignments, reported task offsets.  A joining member's id and process id (both drawn by
    the client) are only seen once it joined: the prediction takes that one member from the description after
    the step, with an empty assignment (what the coordinator holds for a new member).
    """
    app = f"{unique}-k1071"
    source = f"{app}-in"
    _create(apache_kafka, {source: 6})
    tasks = {f"0_{p}" for p in range(6)}

    def start(name: str) -> None:
        java_clients.request(op="streams", name=name, bootstrap=apache_kafka.bootstrap, app=app, input=source,
                             config={"group.protocol": "streams", "num.stream.threads": "1",
                                     "application.server": f"{name}:8080", "commit.interval.ms": "200"})

    def describe() -> dict[str, Any]:
        group: dict[str, Any] = java_clients.request(op="describe_streams_group", bootstrap=apache_kafka.bootstrap,
                                                     group=app)["group"]
        return group

    def reconciled(names: set[str]) -> dict[str, Any]:
        """Settled instances, and a description in which every member runs its target; the description."""
        for _ in range(60):
            desc = describe()
            if ({m.get("user_endpoint") for m in desc["members"]} == {f"{n}:8080" for n in names}
                    and all(m["assignment"] == m["target_assignment"] for m in desc["members"])):
                return desc
            time.sleep(0.5)
        raise AssertionError(f"the streams group did not reconcile: {describe()}")

    running: set[str] = set()
    try:
        for name in ("s0", "s1"):
            start(name)
            running.add(name)
        _streams_settled(java_clients, running, tasks)
        desc = reconciled(running)
        for what, name in (("join", "s2"), ("leave", "s0")):
            before = _kip1071_instance(desc, tasks)
            if what == "join":
                start(name)
                running.add(name)
            else:
                java_clients.request(op="stop", name=name)
                running.discard(name)
            held = _streams_settled(java_clients, running, tasks)
            desc = reconciled(running)
            if what == "join":
                new = next(m for m in desc["members"] if m["user_endpoint"] == f"{name}:8080")
                before["clients"].append({"id": f"{name}:8080", "process_id": new["process_id"], "members": [
                    {"id": new["member_id"], "active": [], "standby": []}]})
            else:
                before["clients"] = [c for c in before["clients"] if c["id"] != f"{name}:8080"]
            path = tmp_path / f"{what}.json"
            path.write_text(json.dumps(before))
            r = kassign("assign", str(path), "--assignor", "streams-server-sticky", "--kafka-version", "4.4")
            assert r.returncode == 0, r.stderr
            out = json.loads(r.stdout)
            want = {mid: (a["active"], a["standby"]) for mid, a in out["members"].items()}
            got = {m["member_id"]: (m["target_assignment"]["active"], m["target_assignment"]["standby"])
                   for m in desc["members"]}
            assert got == want, f"{what} {name}: kassign predicted {want}, the coordinator assigned {got}"
            # and the instances run what the coordinator assigned
            ran = {f"{n}:8080": sorted(act) for n, (act, _) in held.items()}
            assert ran == {c: sorted(a["active"]) for c, a in out["assignment"].items()}
    finally:
        for name in sorted(running):
            java_clients.request(op="stop", name=name)
