"""kassign's Kafka plug-ins inside a real Apache Kafka 4.4.0 broker and real Java clients, beside ``kassign serve``.

One broker for the module, started with the plug-ins' jar on its classpath and kassign's KIP-848 assignor
first in ``group.consumer.assignors`` (and its KIP-1357 task assignor in ``group.streams.assignors``), talking to
a real ``kassign serve`` on 127.0.0.1.  What is checked:

- **KIP-848 consumers** (``group.protocol=consumer``, ``group.remote.assignor=kassign``) through a join, two
  leaves and a restart (a leave, then a join under the same name): after every step the assignment the group
  settled on is optimal for the group's state (members, subscriptions, what each owned before the step), by
  ``kassign assign --assignor optimal`` on that state.  Unit weights: the optimum is proven (``stats.status``
  ``optimal``, every stage proven), and ``kassign score --optimum`` measures the settled assignment against it:
  the same balance (max load and sum of squares exactly) and the same number of moved partitions.  The
  assertion is "equally optimal", not "the same assignment": a group has several optimal assignments whenever
  two members are interchangeable, and which one the engine returns depends on the order members and topics
  reach it (the plug-in names topics by id and lists members in the coordinator's order).  The broker's log
  shows one ``kassign assigned`` line per assignment, each with ``status optimal`` (so the assignment came
  from the service, not from a fallback that happened to be as good).
- **The service stopped**: a new group still forms (Kafka's ``uniform``, in-process) and the broker's log says
  why (the plug-in's WARN line naming the refused connection).
- **Classic protocol, client-side** (``partition.assignment.strategy=dev.kassign.plugins.KassignConsumerAssignor``,
  the jar on the client's classpath): the same optimality check after a join and a leave, with the state from
  ``kassign capture``; cooperative hand-over (two rounds) included.
- **A Streams application** (KIP-1071 protocol, group config ``streams.assignor.name=kassign``) against a
  service slowed past the deadline (``KASSIGN_SERVE_SOLVE_DELAY``): the group forms within the deadline, from
  the service's own cut (its fallback), and against a service that accepts connections and never answers: the
  plug-in's own cut, logged.

The log lines the user sees are those quoted in ``docs/deploy.md`` ("What you see"): the blocks there are read
and matched against the real logs (numbers, ids and ports as patterns).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kafka_broker import REPO, KafkaBroker, start_apache_kafka
from tests.spark_runner.cli.test_cli import kassign
from tests.spark_runner.live.kafka_harness import HOST, free_port
from tests.spark_runner.live.test_java_clients import (
    TP,
    JavaClients,
    _held,
    _kip1071_instance,
    _settled,
    _state_before,
    _step_instance,
    _streams_settled,
    _topic_ids,
)
from tests.spark_runner.live.test_kafka_capture import _create, _produce
from tests.spark_runner.serve.serve_harness import Serve

pytestmark = [pytest.mark.kafka, pytest.mark.slow]
logger = logging.getLogger(__name__)

#: The plug-ins' deadline on the broker and the classic client: ample for these small groups on a loaded
#: 2-core machine (the service answers them in tens of milliseconds once warm).
DEADLINE_MS = 4000
DEPLOY_MD = REPO / "docs" / "deploy.md"
#: The Streams applications of the module (their input topics are created with the broker).
STREAMS_APPS = ("slow", "silent", "healthy")
ASSIGNED = re.compile(r"kassign assigned (?:(\d+) tasks to )?(\d+) members in (\d+) ms \(status (\w+)(.*?)\)"
                      r"(?: \(dev\.kassign\.plugins\.\w+\))?$")
FALLING = re.compile(r"kassign: falling back to Kafka's '([\w-]+)' (?:task )?assignor for a (?:streams )?group of "
                     r"(\d+) members: (.*?)(?: \(dev\.kassign\.plugins\.\w+\))?$")


def plugins_jar() -> Path:
    """``java/plugins/target/kassign-plugins-<version>.jar`` (``make java`` builds it)."""
    jars = [p for p in (REPO / "java" / "plugins" / "target").glob("kassign-plugins-*.jar")
            if not p.name.endswith(("-sources.jar", "-tests.jar", "-javadoc.jar"))]
    if len(jars) != 1:
        raise RuntimeError(f"expected one plug-ins jar in java/plugins/target, found {jars}: run `make java`")
    return jars[0]


class Service:
    """``kassign serve`` on one fixed port of 127.0.0.1 (the broker's ``kassign.service.url``), restartable.

    It reads partition weights from ``weights`` (``--weights-file``), which lists no topic until a test writes lag
    into it: the broker's plug-in asks for the file's weights (``kassign.weights.source=file``), and a group whose
    topics the file does not list is assigned as sent (unit weights).
    """

    def __init__(self, weights: Path) -> None:
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.serve: Serve | None = None
        self.silent: socket.socket | None = None
        self.weights = weights
        self.write_weights({})

    def write_weights(self, topics: dict[str, list[float]]) -> None:
        """Replace the weights file (atomically, by renaming, as docs/serve.md says a job should)."""
        tmp = self.weights.with_suffix(".tmp")
        tmp.write_text(json.dumps({"format": "kassign-weights/v1", "unit": "records", "topics": topics}))
        tmp.replace(self.weights)

    def start(self, env: dict[str, str] | None = None) -> Serve:
        self.stop()
        self.serve = Serve("--port", str(self.port), "--workers", "1", "--spare-workers", "1",
                           "--weights-file", str(self.weights), env=env)
        assert self.serve.port == self.port
        return self.serve

    def start_silent(self) -> None:
        """A socket listening on the port that never answers: connections are accepted by the kernel and hang."""
        self.stop()
        self.silent = socket.socket()
        self.silent.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.silent.bind((HOST, self.port))
        self.silent.listen(64)

    def stop(self) -> None:
        if self.serve is not None:
            assert self.serve.stop() == 0, self.serve.stderr
            self.serve = None
        if self.silent is not None:
            self.silent.close()
            self.silent = None


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    svc = Service(tmp_path_factory.mktemp("kassign-serve") / "weights.json")
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture(scope="module")
def plugin_broker(tmp_path_factory: pytest.TempPathFactory, service: Service) -> Iterator[KafkaBroker]:
    """Apache Kafka 4.4.0 with the plug-ins' jar on its classpath, configured as docs/deploy.md says."""
    broker = start_apache_kafka(
        tmp_path_factory.mktemp("kafka-plugins"), extra_classpath=[plugins_jar()],
        config={"group.consumer.assignors": "dev.kassign.plugins.KassignConsumerGroupAssignor,uniform,range",
                "group.streams.assignors": "sticky,dev.kassign.plugins.KassignStreamsTaskAssignor",
                "group.streams.initial.rebalance.delay.ms": "0",
                "kassign.service.url": service.url, "kassign.deadline.ms": str(DEADLINE_MS),
                "kassign.weights.source": "file"},
        loggers={"dev.kassign": "INFO"})
    try:
        # The Streams applications' input topics, created well before their first member joins: Kafka 4.4.0's
        # coordinator, heartbeated by a member with an application.server endpoint while its image does not have
        # a just-created source topic yet, fails the heartbeat (NoSuchElementException in
        # EndpointToPartitionsManager, UnknownServerException to the client, which then shuts down).
        _create(broker, {f"{app}-in": 6 for app in STREAMS_APPS})
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaClients]:
    """The Java driver with the plug-ins' jar on its classpath (the classic client-side assignor), INFO logs."""
    driver = JavaClients(tmp_path_factory.mktemp("java-clients-plugins"), extra_classpath=(plugins_jar(),),
                         jvm_options=("-Dorg.slf4j.simpleLogger.log.dev.kassign=info",))
    try:
        yield driver
    finally:
        driver.close()


class LogTail:
    """The lines a log file gained since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def new_lines(self) -> list[str]:
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        self.offset += len(data)
        return data.decode(errors="replace").splitlines()


def doc_lines(block: str) -> list[re.Pattern[str]]:
    """The lines of a ``<!-- deploy-output: NAME -->`` block of docs/deploy.md, as patterns.

    Every number in the documented line stands for any number, a member or topic id in ``<...>`` for any text, and
    the service's URL for any 127.0.0.1 port: the rest (the words a user reads) must be as documented.
    """
    text = DEPLOY_MD.read_text()
    m = re.search(rf"<!-- deploy-output: {block} -->\n```text\n(.*?)```", text, re.S)
    assert m, f"docs/deploy.md has no deploy-output block {block!r}"
    patterns = []
    for line in m.group(1).splitlines():
        parts = re.split(r"(<[^>]+>|\d[\d,]*)", line.strip())
        rx = "".join(".+?" if p.startswith("<") else r"\d[\d,]*" if p[:1].isdigit() else re.escape(p)
                     for p in parts if p)
        patterns.append(re.compile(rx))
    return patterns


def assert_documented(block: str, lines: list[str]) -> None:
    """Every line of the docs' block appears in ``lines`` (as a substring, after the log's own prefix)."""
    for rx in doc_lines(block):
        assert any(rx.search(line) for line in lines), f"docs/deploy.md {block}: no {rx.pattern!r} in {lines}"


def _assert_optimal(tmp: Path, inst: dict[str, Any], got: dict[str, set[TP]], what: str) -> dict[str, Any]:
    """The settled assignment ``got`` is as good as kassign's proven optimum for ``inst``; the optimum's output."""
    stamp = time.monotonic_ns()
    ipath, opath, apath = (tmp / f"{kind}-{stamp}.json" for kind in ("instance", "optimum", "settled"))
    ipath.write_text(json.dumps(inst))
    r = kassign("assign", str(ipath), "--assignor", "optimal", "-o", str(opath))
    assert r.returncode == 0, r.stderr
    opt = json.loads(opath.read_text())
    assert opt["stats"]["status"] == "optimal" and all(opt["stats"]["stage_proven"]), opt["stats"]
    settled = {m: {t: sorted(p for tt, p in tps if tt == t) for t in sorted({t for t, _ in tps})}
               for m, tps in got.items()}
    apath.write_text(json.dumps(settled))
    r = kassign("score", str(ipath), str(apath), "--optimum", str(opath), "--json")
    assert r.returncode == 0, r.stderr
    score = json.loads(r.stdout)
    assert score["valid"], f"{what}: the settled assignment is invalid: {score.get('violations')}"
    want = {m: {(t, p) for t, ps in tps.items() for p in ps} for m, tps in opt["assignment"].items()}
    assert (score["max_load_gap"], score["sum_sq_gap"], score["excess_moves"]) == (0, 0, 0), (
        f"{what}: settled {got} is not optimal (optimum {want}): {score}")
    logger.warning("%s: settled on an optimal assignment (%s as kassign's own answer)", what,
                "the same" if got == want else "an equally optimal one, not the same")
    return opt


def _kip848_state(views: dict[str, Any], subs: dict[str, list[str]], sizes: dict[str, int]) -> dict[str, Any]:
    """A settled KIP-848 group as a kassign instance: what each member reports (its id, topics and partitions)."""
    return {"format": "kassign/v1", "protocol": "consumer",
            "topics": {t: {"partitions": n} for t, n in sizes.items()},
            "members": [{"id": v["member_id"], "topics": sorted(subs[n]),
                         "owned": {t: sorted(p for tt, p in _held(v) if tt == t)
                                   for t in sorted({t for t, _ in _held(v)})}}
                        for n, v in views.items()]}


def _steps(clients: JavaClients, broker: KafkaBroker, group: str, protocol: str, config: dict[str, str],
           sizes: dict[str, int], tmp: Path, log: LogTail) -> list[str]:
    """Form a group of three, then join, leave, leave, rejoin; each settled state checked optimal. The log lines."""
    a, b = sorted(sizes)
    all_tps = {(t, p) for t, n in sizes.items() for p in range(n)}
    # heterogeneous subscriptions: m2 reads one topic only
    subs = {f"{group}-m0": [a, b], f"{group}-m1": [a, b], f"{group}-m2": [a], f"{group}-m3": [a, b]}
    running: set[str] = set()
    seen: list[str] = []

    def start(name: str) -> None:
        clients.request(op="consumer", name=name, bootstrap=broker.bootstrap, group=group, topics=subs[name],
                        config=config)
        running.add(name)

    try:
        for name in sorted(subs)[:3]:
            start(name)
        views = _settled(clients, running, all_tps)
        seen += log.new_lines()
        steps = [("join", f"{group}-m3"), ("leave", f"{group}-m0"), ("leave", f"{group}-m1"), ("join", f"{group}-m1")]
        for what, name in steps:
            if protocol == "classic":
                before = _state_before(broker, group, "classic", views, subs, sizes, {}, clients)
            else:
                before = _kip848_state(views, subs, sizes)
            if what == "join":
                start(name)
            else:
                clients.request(op="stop", name=name)
                running.discard(name)
            after = _settled(clients, running, all_tps)
            if what == "join":
                inst = _step_instance(before, add=(after[name]["member_id"], subs[name]))
            else:
                inst = _step_instance(before, drop=views[name]["member_id"])
            lines = log.new_lines()
            seen += lines
            assigned = [m for m in map(ASSIGNED.search, lines) if m]
            assert assigned, f"{what} {name}: no `kassign assigned` line in the log: {lines}"
            assert all(m.group(4) == "optimal" and "fallback" not in m.group(5) for m in assigned), lines
            assert not any(FALLING.search(line) for line in lines), lines
            _assert_optimal(tmp, inst, {v["member_id"]: _held(v) for v in after.values()}, f"{what} {name}")
            views = after
    finally:
        for name in sorted(running):
            clients.request(op="stop", name=name)
    return seen


def test_kip848_consumers_settle_on_kassigns_optimum(plugin_broker: KafkaBroker, service: Service,
                                                     clients: JavaClients, tmp_path: Path) -> None:
    sizes = {"kip848-a": 7, "kip848-b": 5}
    _create(plugin_broker, sizes)
    log = LogTail(plugin_broker.log)
    seen = _steps(clients, plugin_broker, "kip848", "consumer",
                  {"group.protocol": "consumer", "group.remote.assignor": "kassign"}, sizes, tmp_path, log)
    assert_documented("broker-assigned", seen)
    assert service.serve is not None
    assert_documented("serve-start", service.serve.stderr)


def _kafka_topic_id(hex_id: str) -> str:
    """A topic id as Kafka prints it (``Uuid.toString()``: URL-safe base64, no padding), the plug-in's topic name."""
    return base64.urlsafe_b64encode(uuid.UUID(hex_id).bytes).rstrip(b"=").decode()


def _max_load(assignment: dict[str, dict[str, list[int]]], weights: dict[str, list[float]]) -> float:
    """The busiest member's load: the sum of its partitions' weights."""
    return max((sum(weights[t][p] for t, ps in tps.items() for p in ps) for tps in assignment.values()), default=0.0)


def test_kip848_consumers_on_a_lagging_topic_beat_uniform(plugin_broker: KafkaBroker, service: Service,
                                                          clients: JavaClients, tmp_path: Path) -> None:
    """A weighted group: lag from the Admin API, written into the service's weights file, on the real broker.

    One topic of 6 partitions, 100 records in partition 0 and 1 in each of the others, read by a group that has
    committed nothing: each partition lags by its record count (``log end - log start``, docs/serve.md).  The lag
    is read with the service's own Admin API lookup (``AdminLag``, ``kassign capture --weights lag``'s rule) and
    written into the service's ``--weights-file`` keyed by topic id (the broker's plug-in names topics by id), as
    a job would; the broker asks for it (``kassign.weights.source=file``).  Two, then three KIP-848 consumers join.
    After each join the settled assignment must be kassign's proven optimum for that weighted state (max load 100:
    partition 0 alone) and its max load strictly below ``uniform``'s on the same state: Kafka's ``uniform`` balances
    partition *counts* (3 + 3, then 2 + 2 + 2), so partition 0 always shares its member with others (102, then
    101).  The consumers then read the records and commit, so the real lag falls to 0 while the file keeps the
    snapshot: the assignment is computed on the file's numbers, which the test reads back from the file.
    """
    from spark_runner.serve.admin import AdminLag
    from spark_runner.serve.request import RequestError

    topic, group = "lagging", "lagging"
    sizes = {topic: 6}
    counts = {(topic, 0): 100, **{(topic, p): 1 for p in range(1, 6)}}
    _create(plugin_broker, sizes)
    _produce(plugin_broker, counts)
    admin = AdminLag(plugin_broker.bootstrap)
    try:
        for attempt in range(30):
            try:
                lag = admin.lag(group, sorted(counts), 30.0)
                break
            except RequestError as e:
                # on a fresh broker the first lookup may come before the offsets topic has a coordinator
                # (FindCoordinator: COORDINATOR_NOT_AVAILABLE), as for any admin client: try again
                if "CoordinatorNotAvailable" not in str(e) or attempt == 29:
                    raise
                time.sleep(1.0)
    finally:
        admin.close()
    assert lag == {tp: float(n) for tp, n in counts.items()}, lag  # nothing committed: every record lags
    weights = {topic: [lag[(topic, p)] for p in range(6)]}
    (hex_id,) = _topic_ids(plugin_broker, [topic]).values()
    service.write_weights({_kafka_topic_id(hex_id): weights[topic]})
    all_tps = set(counts)
    log = LogTail(plugin_broker.log)
    config = {"group.protocol": "consumer", "group.remote.assignor": "kassign"}
    running: set[str] = set()
    try:
        views: dict[str, Any] = {}
        for name in ("lag-m0", "lag-m1", "lag-m2"):
            before = _kip848_state(views, {n: [topic] for n in views}, sizes)
            clients.request(op="consumer", name=name, bootstrap=plugin_broker.bootstrap, group=group,
                            topics=[topic], config=config)
            running.add(name)
            after = _settled(clients, running, all_tps)
            lines = log.new_lines()
            assigned = [m for m in map(ASSIGNED.search, lines) if m]
            assert assigned and all(m.group(4) == "optimal" and not m.group(5) for m in assigned), lines
            assert not any(FALLING.search(line) for line in lines), lines
            if not views:  # the first member takes everything
                views = after
                continue
            inst = _step_instance(before, add=(after[name]["member_id"], [topic]))
            inst["topics"][topic]["weights"] = weights[topic]
            inst["units"] = {"weights": "records"}
            got = {v["member_id"]: _held(v) for v in after.values()}
            opt = _assert_optimal(tmp_path, inst, got, f"weighted join {name}")
            ipath = tmp_path / f"weighted-{name}.json"
            ipath.write_text(json.dumps(inst))
            r = kassign("assign", str(ipath), "--assignor", "uniform", "--kafka-version", "4.4")
            assert r.returncode == 0, r.stderr
            uniform = json.loads(r.stdout)["assignment"]
            settled = {m: {topic: sorted(p for _t, p in tps)} for m, tps in got.items()}
            settled_max, uniform_max = _max_load(settled, weights), _max_load(uniform, weights)
            assert settled_max == opt["stats"]["objective"][0] == 100.0, (settled, opt["stats"])
            assert settled_max < uniform_max, (settled, uniform)
            logger.warning("weighted join %s: settled max load %s records (proven optimal), uniform %s",
                           name, settled_max, uniform_max)
            views = after
    finally:
        for name in sorted(running):
            clients.request(op="stop", name=name)
        service.write_weights({})


def test_with_the_service_stopped_the_group_forms_with_uniform(plugin_broker: KafkaBroker, service: Service,
                                                              clients: JavaClients) -> None:
    sizes = {"down-a": 4}
    _create(plugin_broker, sizes)
    all_tps = {("down-a", p) for p in range(4)}
    log = LogTail(plugin_broker.log)
    service.stop()
    names = {"down-m0", "down-m1"}
    try:
        config = {"group.protocol": "consumer", "group.remote.assignor": "kassign"}
        for name in sorted(names):
            clients.request(op="consumer", name=name, bootstrap=plugin_broker.bootstrap, group="down",
                            topics=["down-a"], config=config)
        views = _settled(clients, names, all_tps)
        assert sorted(len(_held(v)) for v in views.values()) == [2, 2]  # uniform balances them
        lines = log.new_lines()
        falls = [m for m in map(FALLING.search, lines) if m]
        assert falls, lines
        assert {m.group(1) for m in falls} == {"uniform"}
        assert all(m.group(3) == f"cannot connect to {service.url} (ConnectException)" for m in falls), falls
        assert not any(ASSIGNED.search(line) for line in lines), lines
        assert_documented("broker-service-down", [line.replace(service.url, "http://127.0.0.1:8736")
                                                  for line in lines])
    finally:
        for name in sorted(names):
            clients.request(op="stop", name=name)
        service.start()


def test_classic_consumers_with_the_client_side_assignor_settle_on_the_optimum(
        plugin_broker: KafkaBroker, service: Service, clients: JavaClients, tmp_path: Path) -> None:
    sizes = {"classic-a": 7, "classic-b": 5}
    _create(plugin_broker, sizes)
    log = LogTail(clients.log)
    config = {"group.protocol": "classic", "session.timeout.ms": "6000", "heartbeat.interval.ms": "500",
              "partition.assignment.strategy": "dev.kassign.plugins.KassignConsumerAssignor",
              "kassign.service.url": service.url, "kassign.deadline.ms": str(DEADLINE_MS)}
    seen = _steps(clients, plugin_broker, "classic", "classic", config, sizes, tmp_path, log)
    assert_documented("client-assigned", seen)


def _streams_group(clients: JavaClients, broker: KafkaBroker, app: str, log: LogTail) -> list[str]:
    """Two Streams instances of ``app`` (KIP-1071 protocol, kassign's task assignor) settled; the log's lines."""
    source = f"{app}-in"
    clients.request(op="set_group_config", bootstrap=broker.bootstrap, group=app,
                    config={"streams.assignor.name": "kassign"})
    names = {f"{app}-s0", f"{app}-s1"}
    try:
        for name in sorted(names):
            clients.request(op="streams", name=name, bootstrap=broker.bootstrap, app=app, input=source,
                            config={"group.protocol": "streams", "num.stream.threads": "1",
                                    "application.server": f"{name}:8080", "commit.interval.ms": "200"})
        held = _streams_settled(clients, names, {f"0_{p}" for p in range(6)})
        assert sorted(len(act) for act, _ in held.values()) == [3, 3]
        return log.new_lines()
    finally:
        for name in sorted(names):
            clients.request(op="stop", name=name)


def test_a_streams_group_is_cut_at_the_deadline(plugin_broker: KafkaBroker, service: Service,
                                                clients: JavaClients) -> None:
    log = LogTail(plugin_broker.log)
    try:
        # the service sleeps 60 s before its optimum: it cuts itself at its deadline and answers Kafka's assignment
        service.start(env={"KASSIGN_SERVE_SOLVE_DELAY": "60"})
        lines = _streams_group(clients, plugin_broker, "slow", log)
        cut = [m for m in map(ASSIGNED.search, lines) if m]
        assert cut, lines
        for m in cut:
            # the service's deadline is the plug-in's less its margin (a fifth): 3,200 ms; it answers at 95 % of it
            assert m.group(1) == "6" and 0.9 * 0.95 * 0.8 * DEADLINE_MS <= int(m.group(3)) <= DEADLINE_MS, m.group(0)
            assert m.group(4) == "heuristic", m.group(0)  # the coordinator's sticky, as the service ran it
            assert m.group(5) == "; the service answered with its own fallback: the optimum was cut at the deadline"
        assert_documented("broker-service-cut", lines)
        # a service that never answers: the plug-in stops waiting at its deadline and runs Kafka's sticky
        service.start_silent()
        lines = _streams_group(clients, plugin_broker, "silent", log)
        falls = [m for m in map(FALLING.search, lines) if m]
        assert falls, lines
        assert all(m.group(1) == "sticky" and m.group(3) == f"no answer from {service.url} within the deadline "
                   f"of {DEADLINE_MS} ms" for m in falls), falls
        assert_documented("broker-service-silent", [line.replace(service.url, "http://127.0.0.1:8736")
                                                    for line in lines])
    finally:
        service.start()


def test_a_streams_group_settles_on_kassigns_optimum(plugin_broker: KafkaBroker, service: Service,
                                                      clients: JavaClients, tmp_path: Path) -> None:
    """A healthy service: a Streams group (KIP-1071 protocol, ``streams.assignor.name=kassign``) through a join, a
    leave and a restart.

    The state before each step is what ``Admin.describeStreamsGroups`` shows (``_kip1071_instance``): members,
    process ids, target assignments, reported task offsets; a joining member (its ids only seen after it joined)
    is added with nothing assigned, a leaving one dropped.  The plug-in sends ``config.active_on_caught_up:
    false`` (under KIP-1071 the assignor gives the target and the coordinator stages moves of state: docs/deploy.md),
    so the state is that too.  After every step the broker logs one ``kassign assigned`` line, ``status optimal``
    and no fallback of the service, and the coordinator's target is as good as ``kassign assign --assignor
    optimal-streams`` on that state: proven optimal, no gap in active balance, total balance, restoration or moves
    (``kassign score --optimum``).  A joining instance reports no task offsets: it has no state, so each task
    moved to it costs a full restore (the optimum's stage 3), and balance (stages 1 and 2) still comes first:
    the new instance gets its share of actives, as the coordinator's own ``sticky`` would give it.
    """
    app = "healthy"
    source = f"{app}-in"
    tasks = {f"0_{p}" for p in range(6)}
    clients.request(op="set_group_config", bootstrap=plugin_broker.bootstrap, group=app,
                    config={"streams.assignor.name": "kassign"})
    tail = LogTail(plugin_broker.log)

    def start(name: str) -> None:
        clients.request(op="streams", name=name, bootstrap=plugin_broker.bootstrap, app=app, input=source,
                        config={"group.protocol": "streams", "num.stream.threads": "1",
                                "application.server": f"{name}:8080", "commit.interval.ms": "200"})
        running.add(name)

    def reconciled() -> dict[str, Any]:
        _streams_settled(clients, running, tasks)
        for _ in range(60):
            desc: dict[str, Any] = clients.request(op="describe_streams_group", bootstrap=plugin_broker.bootstrap,
                                                   group=app)["group"]
            if ({m.get("user_endpoint") for m in desc["members"]} == {f"{n}:8080" for n in running}
                    and all(m["assignment"] == m["target_assignment"] for m in desc["members"])):
                return desc
            time.sleep(0.5)
        raise AssertionError(f"the streams group did not reconcile: {desc}")

    def state(desc: dict[str, Any]) -> dict[str, Any]:
        inst = _kip1071_instance(desc, tasks)
        inst["config"]["active_on_caught_up"] = False  # as the plug-in sends it
        return inst

    def check(what: str, inst: dict[str, Any] | None, desc: dict[str, Any]) -> None:
        lines = tail.new_lines()
        assigned = [m for m in map(ASSIGNED.search, lines) if m]
        assert assigned, f"{what}: no `kassign assigned` line: {lines}"
        assert all(m.group(4) == "optimal" and not m.group(5) for m in assigned), (what, lines)
        assert not any(FALLING.search(line) for line in lines), (what, lines)
        if inst is None:
            return
        stamp = time.monotonic_ns()
        ipath, opath, apath = (tmp_path / f"{kind}-{stamp}.json" for kind in ("instance", "optimum", "settled"))
        ipath.write_text(json.dumps(inst))
        r = kassign("assign", str(ipath), "--assignor", "optimal-streams", "-o", str(opath))
        assert r.returncode == 0, r.stderr
        opt = json.loads(opath.read_text())
        assert opt["stats"]["status"] == "optimal" and all(opt["stats"]["proven"]), opt["stats"]
        settled = {m["user_endpoint"]: {"active": m["target_assignment"]["active"],
                                        "standby": m["target_assignment"]["standby"]} for m in desc["members"]}
        apath.write_text(json.dumps(settled))
        r = kassign("score", str(ipath), str(apath), "--optimum", str(opath), "--json")
        assert r.returncode == 0, r.stderr
        score = json.loads(r.stdout)
        assert score["valid"], (what, score)
        gaps = {k: v for k, v in score.items() if k.endswith("_gap")}
        gaps["moves_gap"] = score["moved_actives"] - opt["stats"]["objective"][opt["stats"]["stages"].index("movement")]
        assert gaps and not any(gaps.values()), (
            f"{what}: settled {settled} is not optimal (optimum {opt['assignment']}): {score}")
        logger.warning("streams %s: settled %s, proven optimal (%s)", what,
                       {c: a["active"] for c, a in settled.items()}, gaps)

    def joined(before: dict[str, Any], desc: dict[str, Any], name: str) -> dict[str, Any]:
        new = next(m for m in desc["members"] if m["user_endpoint"] == f"{name}:8080")
        assert new["process_id"] not in {c["process_id"] for c in before["clients"]}, new
        before["clients"].append({"id": new["user_endpoint"], "process_id": new["process_id"],
                                  "members": [{"id": new["member_id"], "active": [], "standby": []}]})
        return before

    running: set[str] = set()
    try:
        start(f"{app}-s0")
        start(f"{app}-s1")
        desc = reconciled()
        check("formed", None, desc)
        # a join
        before = state(desc)
        start(f"{app}-s2")
        desc = reconciled()
        check("join s2", joined(before, desc, f"{app}-s2"), desc)
        assert sorted(len(m["target_assignment"]["active"]) for m in desc["members"]) == [2, 2, 2]
        # a leave
        before = state(desc)
        clients.request(op="stop", name=f"{app}-s0")
        running.discard(f"{app}-s0")
        desc = reconciled()
        before["clients"] = [c for c in before["clients"] if c["id"] != f"{app}-s0:8080"]
        check("leave s0", before, desc)
        # a restart: s0 again, under the same name (a new process: its in-memory state is gone)
        before = state(desc)
        start(f"{app}-s0")
        desc = reconciled()
        check("restart s0", joined(before, desc, f"{app}-s0"), desc)
    finally:
        for name in sorted(running):
            clients.request(op="stop", name=name)
