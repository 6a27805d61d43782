"""A real Apache Kafka 4.4.0 broker for the ``kafka`` tests: single-node KRaft from the Maven artifacts.

:func:`start_apache_kafka` formats a fresh KRaft log directory with Kafka's own ``kafka.tools.StorageTool``
and starts ``kafka.Kafka`` as broker and controller in one JVM (``process.roles=broker,controller``),
listening on 127.0.0.1 and two free ports, on the classpath ``java/broker`` resolves from Maven Central
(``target/classpath.txt``; built with ``mvn`` here when it is missing).  It returns once the broker
answers a real client request (kafka-python's admin: ApiVersions, then DescribeCluster) and logs how
long that took.  :meth:`KafkaBroker.stop` ends the JVM by its PID (SIGTERM, SIGKILL after a grace
period) and logs its peak resident memory (``VmHWM``); should the test process die without stopping it, the
JVM gets SIGKILL from the kernel (``PR_SET_PDEATHSIG``).

The broker runs all three group protocols (``classic``, KIP-848 ``consumer`` and KIP-1071 ``streams``:
the ``group.version`` and ``streams.version`` features are set at format time) with group settings made
for tests: no initial rebalance delay, a one-partition ``__consumer_offsets`` and heartbeat and session
bounds low enough for sub-second heartbeats.  Extra broker settings and classpath entries (e.g. a
broker-side assignor plug-in) are arguments.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.spark_runner.live.kafka_harness import HOST, Broker, free_port, wait_listening

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[1]
#: The Maven module that resolves the broker's classpath, and the file it writes it to.
BROKER_MODULE = REPO / "java" / "broker"
CLASSPATH_FILE = BROKER_MODULE / "target" / "classpath.txt"
KAFKA_VERSION = "4.4.0"

#: Broker settings of every test broker (``start_apache_kafka``'s ``config`` overrides any of them).
#: Group bounds: the classic protocol's session timeout may be 1 s (kafka-python members use 6 s); the
#: consumer and streams protocols' heartbeat interval 0.5 s and session timeout 6 s (their minimums lowered
#: to match; Kafka's defaults are 5 s and 45 s, which would make every scripted rebalance slow).
DEFAULT_CONFIG: dict[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "6000",
    "group.streams.min.heartbeat.interval.ms": "100",
    "group.streams.heartbeat.interval.ms": "500",
    "group.streams.min.session.timeout.ms": "1000",
    "group.streams.session.timeout.ms": "6000",
    "log.segment.bytes": str(16 << 20),
}
#: The group protocols' feature levels set at format time: KIP-848 consumer groups (group.version=1) and
#: KIP-1071 streams groups (streams.version=1); 4.4.0's defaults, stated so a change of default cannot
#: silently turn a protocol off.  (``group.coordinator.rebalance.protocols`` is deprecated in 4.4.)
FEATURES = ("group.version=1", "streams.version=1")
#: JVM options: a small heap, and the client compiler only (a test broker serves little; C2's compile
#: threads would compete with the tests for the machine's two cores during start).
JVM_OPTS = ("-Xmx512m", "-Xms128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true")
LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.out.ref = out
logger.server.name = kafka.server.KafkaRaftServer
logger.server.level = INFO
logger.groups.name = org.apache.kafka.coordinator.group
logger.groups.level = INFO
"""


def java_binary() -> str:
    """The ``java`` to run: ``$JAVA_HOME/bin/java`` if set, else the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise RuntimeError("java not found (Java 17 is needed for the Apache Kafka broker): set JAVA_HOME or PATH")
    return found


def maven_classpath(module: Path, classpath_file: Path) -> str:
    """The classpath a Maven module wrote (``build-classpath``); runs ``mvn package`` first if missing or stale.

    ``make test`` builds every Java module before pytest; building here serves a developer who runs one
    test file directly.
    """
    inputs = [module / "pom.xml", *(module / "src").rglob("*")]
    if not classpath_file.is_file() or classpath_file.stat().st_mtime < max(p.stat().st_mtime for p in inputs):
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError(f"{classpath_file} is missing and mvn is not installed: "
                               "run `cd java && mvn -B -q package -DskipTests`")
        log.warning("building %s with Maven (once)", module.relative_to(REPO))
        r = subprocess.run([mvn, "-B", "-q", "package", "-DskipTests"], cwd=module, capture_output=True, text=True)
        if r.returncode != 0 or not classpath_file.is_file():
            raise RuntimeError(f"mvn package in {module} failed:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
        classpath_file.touch()  # build-classpath leaves an unchanged file as it was: mark it built now
    cp = classpath_file.read_text().strip()
    missing = [p for p in cp.split(os.pathsep) if not Path(p).exists()]
    if missing:
        raise RuntimeError(f"{classpath_file} names jars that are not there (run mvn package again): {missing[:3]}")
    return cp


def cluster_id() -> str:
    """A fresh KRaft cluster id: 16 random bytes, URL-safe base64 without padding (as ``random-uuid`` prints).

    Never starting with ``-``, as Kafka's ``Uuid.randomUuid`` draws again then: ``StorageTool format -t -x...``
    would read such an id as an option (1 run in 64 failed "argument --cluster-id/-t: expected one argument").
    """
    while True:
        out = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not out.startswith("-"):
            return out


def die_with_parent() -> None:
    """``preexec_fn``: the child gets SIGKILL when the process that started it dies (Linux ``PR_SET_PDEATHSIG``).

    A test session killed outright (SIGKILL, a CI timeout) then leaves no JVM behind; elsewhere a no-op.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1


def peak_rss_kib(pid: int) -> int | None:
    """The process's peak resident set size in KiB (``VmHWM`` of ``/proc/PID/status``), None if unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


@dataclass
class KafkaBroker(Broker):
    """A running Apache Kafka broker+controller: the noida-db/Tansu ``Broker`` interface, and its timings."""

    workdir: Path = Path()
    controller_port: int = 0
    #: seconds from the format command's start to the first served request, and of the format alone
    start_s: float = 0.0
    format_s: float = 0.0
    grace_s: float = 20.0
    peak_rss: int | None = field(default=None)

    def stop(self) -> None:
        """End the JVM by its PID: SIGTERM (a controlled shutdown), SIGKILL after ``grace_s``; log peak memory."""
        if self.proc.poll() is None:
            self.peak_rss = peak_rss_kib(self.proc.pid)
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(self.grace_s)
            except subprocess.TimeoutExpired:
                log.warning("Apache Kafka (pid %d) still running %.0f s after SIGTERM: SIGKILL", self.proc.pid,
                            self.grace_s)
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            if self.peak_rss is not None:
                log.warning("Apache Kafka %s on %s stopped: peak RSS %s MiB", KAFKA_VERSION, self.bootstrap,
                            f"{self.peak_rss / 1024:,.0f}")


def server_properties(workdir: Path, port: int, controller_port: int, config: Mapping[str, str]) -> str:
    """The broker's ``server.properties``: KRaft broker+controller on 127.0.0.1, then the test settings."""
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(workdir / "data"),
        **DEFAULT_CONFIG,
        **config,
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


def _served(bootstrap: str) -> bool:
    """True once the broker answers ApiVersions and DescribeCluster (kafka-python's admin client)."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaConfigurationError, KafkaError

    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000)
    except KafkaConfigurationError:
        raise
    except (KafkaError, OSError, ValueError):
        return False
    try:
        return bool(admin.describe_cluster().get("brokers"))
    except (KafkaError, OSError, ValueError):
        return False
    finally:
        admin.close()


def start_apache_kafka(workdir: Path, extra_classpath: Sequence[Path] = (), config: Mapping[str, str] | None = None,
                       *, timeout: float = 240.0, loggers: Mapping[str, str] | None = None) -> KafkaBroker:
    """Format and start a single-node KRaft Apache Kafka 4.4.0 in ``workdir``; return once it serves.

    Parameters
    ----------
    workdir
        A fresh folder: the log directory, ``server.properties`` and the broker's log (``kafka.log``) go here.
    extra_classpath
        Jars or folders put after Kafka's own (a broker-side plug-in such as a group assignor).
    config
        Broker settings added to (or replacing) :data:`DEFAULT_CONFIG` and the listener settings.
    timeout
        Seconds allowed from the format command to the first served request (a loaded 2-core machine
        needs well over a minute for two JVM starts).
    loggers
        Log4j levels by logger name beside the root's WARN (e.g. ``{"dev.kassign": "INFO"}`` for a plug-in's
        INFO lines in ``kafka.log``).

    Returns
    -------
    KafkaBroker
        ``.bootstrap`` is ``"127.0.0.1:PORT"``; ``.stop()`` ends it.

    Raises
    ------
    RuntimeError
        Java or the classpath is missing, the format failed, or the broker exited or did not serve in time
        (the message carries the end of its log).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    cp = os.pathsep.join([maven_classpath(BROKER_MODULE, CLASSPATH_FILE), *(str(p) for p in extra_classpath)])
    port, controller_port = free_port(), free_port()
    while controller_port == port:
        controller_port = free_port()
    props = workdir / "server.properties"
    props.write_text(server_properties(workdir, port, controller_port, config or {}))
    log4j = workdir / "log4j2.properties"
    extra_loggers = "".join(f"logger.l{i}.name = {name}\nlogger.l{i}.level = {level}\n"
                            for i, (name, level) in enumerate((loggers or {}).items()))
    log4j.write_text(LOG4J2 + extra_loggers)
    java = [java_binary(), *JVM_OPTS, f"-Dlog4j2.configurationFile={log4j}", "-cp", cp]
    t0 = time.monotonic()
    features = [a for f in FEATURES for a in ("--feature", f)]
    fmt = subprocess.run([*java, "kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(props),
                          *features], cwd=workdir, capture_output=True, text=True, timeout=timeout)
    format_s = time.monotonic() - t0
    if fmt.returncode != 0:
        raise RuntimeError(f"Kafka's StorageTool format failed (exit {fmt.returncode}):\n{fmt.stdout[-2000:]}"
                           f"{fmt.stderr[-2000:]}")
    logfile = workdir / "kafka.log"
    with open(logfile, "wb") as fh:
        proc = subprocess.Popen([*java, "kafka.Kafka", str(props)], stdout=fh, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, cwd=workdir, preexec_fn=die_with_parent)
    broker = KafkaBroker(port, proc, logfile, "apache-kafka", workdir=workdir, controller_port=controller_port,
                         format_s=format_s)
    try:
        # the port first (a cheap check): kafka-python's admin backs off up to 30 s between failed bootstraps
        while not wait_listening(port, 0.5):
            if proc.poll() is not None or time.monotonic() - t0 > timeout:
                break
        while not _served(broker.bootstrap):
            if proc.poll() is not None:
                raise RuntimeError(f"Apache Kafka exited with {proc.returncode} before serving: "
                                   f"{logfile.read_text(errors='replace')[-3000:]}")
            if time.monotonic() - t0 > timeout:
                raise RuntimeError(f"Apache Kafka did not serve on {broker.bootstrap} within {timeout:.0f} s: "
                                   f"{logfile.read_text(errors='replace')[-3000:]}")
            time.sleep(0.25)
    except BaseException:
        broker.stop()
        raise
    broker.start_s = time.monotonic() - t0
    log.warning("Apache Kafka %s serving on %s: %.1f s from format to the first served request (format %.1f s)",
                KAFKA_VERSION, broker.bootstrap, broker.start_s, format_s)
    return broker
