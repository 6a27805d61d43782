"""Apache Kafka's own classes as the reference: the Java harness (java/harness) run on one release's classpath.

One JVM per release answers every case of a session (batch mode, JSON lines; the contract is
java/harness/README.md).  ``make test`` builds the harness and resolves each release's classpath with
Maven; :func:`matrix` lists the releases that were built.

Examples
--------
>>> sorted(matrix())[:2]  # doctest: +SKIP
['3.0.2', '3.1.2']
"""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from heuristics.kip848.java_order import topic_uuid

REPO = Path(__file__).resolve().parents[3]
JAVA = REPO / "java"
HARNESS_CLASSES = JAVA / "harness" / "target" / "classes"
RELEASES = JAVA / "releases"


class HarnessNotBuilt(RuntimeError):
    """The harness or a release's classpath is missing: ``make test`` (or ``cd java && mvn package``) builds them."""


def _release_key(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def matrix() -> list[str]:
    """Every release of the matrix whose classpath was built, oldest first."""
    out = [p.parent.parent.name.removeprefix("kafka-") for p in RELEASES.glob("kafka-*/target/classpath.txt")]
    return sorted(out, key=_release_key)


def declared_matrix() -> list[str]:
    """Every release the Maven build lists (java/releases/pom.xml modules), oldest first."""
    return sorted((p.name.removeprefix("kafka-") for p in RELEASES.glob("kafka-*") if p.is_dir()), key=_release_key)


def java_feature(java: str) -> int | None:
    """The feature release (17, 21, 25...) of the JDK whose ``bin/java`` is ``java``, from its ``release`` file."""
    release_file = Path(java).resolve().parent.parent / "release"
    try:
        for line in release_file.read_text().splitlines():
            if line.startswith("JAVA_VERSION="):
                return int(line.split("=", 1)[1].strip('"').split(".")[0])
    except (OSError, ValueError):
        return None
    return None


def newer_java(at_least: int = 19) -> str | None:
    """A ``java`` binary of release ``at_least`` or newer: ``KASSIGN_NEWER_JAVA``, else the newest JDK under
    /usr/lib/jvm (the project's machines carry a second JDK beside Java 17); ``None`` when there is none."""
    import os

    given = os.environ.get("KASSIGN_NEWER_JAVA")
    found = [given] if given else [str(p) for p in Path("/usr/lib/jvm").glob("*/bin/java")]
    best = max(((java_feature(j) or 0, j) for j in found), default=(0, ""))
    return best[1] if best[0] >= at_least else None


class KafkaJars:
    """One JVM running the harness on one release's classpath.

    Parameters
    ----------
    release
        A release of the matrix (``"4.3.1"``).
    java
        The ``java`` binary to run it with (default: the one on ``PATH``, Java 17 here); the answer can depend on
        the JVM's release (``-O java``, docs/algorithms.md).
    """

    def __init__(self, release: str, java: str = "java") -> None:
        cp_file = RELEASES / f"kafka-{release}" / "target" / "classpath.txt"
        if not HARNESS_CLASSES.is_dir() or not cp_file.is_file():
            raise HarnessNotBuilt(f"Kafka {release}: {cp_file} or {HARNESS_CLASSES} missing; run "
                                  "`cd java && mvn -B -q package -DskipTests` (make test does)")
        cp = f"{HARNESS_CLASSES}:{cp_file.read_text().strip()}"
        self.release = release
        self._lock = threading.Lock()
        self._proc = subprocess.Popen(
            [java, "-Xss8m", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp,
             "dev.kassign.harness.Harness"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
            bufsize=1)
        assert self._proc.stdout is not None
        ready = json.loads(self._proc.stdout.readline() or "{}")
        if not ready.get("ready"):
            self.close()
            raise HarnessNotBuilt(f"Kafka {release}: the harness did not start")
        #: The release on the classpath, as Kafka reports it.
        self.kafka_version: str = ready["kafka_version"]

    def ask_many(self, requests: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Answers to ``requests`` in order (written from a thread so neither pipe can fill up)."""
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        with self._lock:
            lines = [json.dumps({"id": i, **r}) + "\n" for i, r in enumerate(requests)]

            def write() -> None:
                assert proc.stdin is not None
                for line in lines:
                    proc.stdin.write(line)
                proc.stdin.flush()

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            out = []
            for _ in lines:
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"Kafka {self.release}: the harness stopped (exit {proc.poll()})")
                out.append(json.loads(line))
            writer.join()
        return out

    def ask(self, assignor: str, instance: Mapping[str, Any], options: Mapping[str, Any] | None = None
            ) -> dict[str, Any]:
        """Kafka's answer to one case."""
        req: dict[str, Any] = {"assignor": assignor, "instance": instance}
        if options:
            req["options"] = dict(options)
        return self.ask_many([req])[0]

    def close(self) -> None:
        """Stops the JVM (closing its stdin ends it; killed if it lingers)."""
        proc = self._proc
        if proc.poll() is None:
            try:
                if proc.stdin:
                    proc.stdin.close()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        if proc.stdout:
            proc.stdout.close()


def with_topic_ids(instance: Mapping[str, Any]) -> dict[str, Any]:
    """The instance with every topic's Kafka id spelled out (kassign derives one from the name when absent)."""
    out = dict(instance)
    topics: dict[str, Any] = {}
    for name, t in dict(instance.get("topics", {})).items():
        spec = {"partitions": t} if isinstance(t, int) else dict(t)
        spec["id"] = str(uuid.UUID(int=topic_uuid(name, spec.get("id"))))
        topics[name] = spec
    out["topics"] = topics
    return out


class Matrix:
    """A :class:`KafkaJars` per release, started on first use and stopped by :meth:`close`."""

    def __init__(self, releases: Iterable[str] | None = None) -> None:
        self.releases = list(releases) if releases is not None else matrix()
        self._jars: dict[str, KafkaJars] = {}

    def __getitem__(self, release: str) -> KafkaJars:
        if release not in self._jars:
            self._jars[release] = KafkaJars(release)
        return self._jars[release]

    def __iter__(self) -> Iterator[str]:
        return iter(self.releases)

    def close(self) -> None:
        """Stops every JVM started."""
        for j in self._jars.values():
            j.close()
        self._jars.clear()
