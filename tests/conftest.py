"""Shared test fixtures: the ../shared folder with Kafka's fixtures and the seeds."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest
from hypothesis import settings

from solver.io import Record, read_instances

# CI runs the property tests with a fixed derivation of examples (same inputs on every run), so that a
# run is reproducible; locally they draw new examples each time. KASSIGN_HYPOTHESIS=random|ci overrides.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("random", print_blob=True)
_profile = os.environ.get("KASSIGN_HYPOTHESIS", "").strip() or ("ci" if os.environ.get("CI") else "random")
if _profile not in ("ci", "random"):  # a typo must not break every run at import: say so, use the default
    import warnings

    warnings.warn(f"KASSIGN_HYPOTHESIS={_profile!r} is not a profile (ci or random): using random", stacklevel=1)
    _profile = "random"
settings.load_profile(_profile)

REPO = Path(__file__).resolve().parents[1]
# `kassign score` caches optima under the user's cache directory: tests (and the commands they start)
# use a folder of their own, never the developer's ~/.cache/kassign
if "KASSIGN_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["KASSIGN_CACHE_DIR"] = tempfile.mkdtemp(prefix="kassign-test-cache-")
SHARED = Path(os.environ.get("KASSIGN_SHARED", REPO.parent / "shared"))


def shared_path(*parts: str) -> Path:
    """Path inside the shared folder; skips the calling test with a clear message if absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared fixtures not found at {path} (clone with ../shared beside the repo or set KASSIGN_SHARED)")
    return path


@functools.cache
def _read(path: str) -> tuple[Record, ...]:
    return tuple(read_instances(path))


#: The Kafka version of fixture records that carry no ``kafka_version`` (scenarios README: trunk at commit
#: 1eb7644349cb, October 2024).
FIXTURE_DEFAULT_VERSION = "4.0.0-SNAPSHOT"


def fixture_version(rec: Record) -> str:
    """The Kafka version a fixture record was made with: its ``kafka_version``, else :data:`FIXTURE_DEFAULT_VERSION`."""
    return str(rec.raw.get("kafka_version", FIXTURE_DEFAULT_VERSION))


def kafka_records(filename: str) -> tuple[Record, ...]:
    """Every record of ``shared/scenarios/kafka/<filename>`` (parsed once per session).

    ``record.raw["expected"]`` is Kafka's own output, ``record.raw["assignor"]`` its name.  Five Streams records
    name two processes alike (a defect of the files: Kafka keys processes by process id, the name is a label);
    their instance gets the later ones renamed ``<name>~2`` and ``record.raw["renamed_clients"]`` maps new names
    to old.
    """
    return _read_kafka(str(shared_path("scenarios", "kafka", filename)))


@functools.cache
def _read_kafka(path: str) -> tuple[Record, ...]:
    import collections
    import gzip
    import json
    from dataclasses import replace

    from solver.errors import InstanceError
    from solver.io import iter_records, parse_instance

    out: list[Record] = []
    lines: list[str] | None = None
    for rec in iter_records(path):
        if not isinstance(rec, InstanceError):
            out.append(rec)
            continue
        if not all("duplicate client id" in p.message for p in rec.problems):
            raise rec
        if lines is None:
            with gzip.open(path, "rt") as fh:
                lines = fh.read().splitlines()
        lineno = int(rec.source.rsplit("line ", 1)[1])
        raw = json.loads(lines[lineno - 1])
        seen: collections.Counter[str] = collections.Counter()
        clients, renamed = [], {}
        for c in raw["instance"]["clients"]:
            seen[c["id"]] += 1
            if seen[c["id"]] > 1:
                renamed[f"{c['id']}~{seen[c['id']]}"] = c["id"]
                c = {**c, "id": f"{c['id']}~{seen[c['id']]}"}
            clients.append(c)
        inst = parse_instance({**raw["instance"], "clients": clients}, rec.source, ("instance",))
        out.append(Record(rec.source, lineno, raw["id"], replace(inst, kafka_version=raw.get("kafka_version")),
                          {**raw, "renamed_clients": renamed}))
    return tuple(out)


def kafka_mismatches(filename: str, assignor: str) -> tuple[int, list[str]]:
    """Run the registered ``assignor`` on its records of ``kafka/<filename>`` and compare with Kafka's output.

    Each record runs at the Kafka version it was made with (:func:`fixture_version`).  Returns the number of
    records and one line per record whose canonical assignment differs; prints the matched/total figure
    (``pytest -s``).  Needs the ``registry_loaded`` fixture.
    """
    from solver.registry import get
    from solver.result import Params

    spec = get(assignor)
    total = 0
    failures = []
    for rec in kafka_records(filename):
        if rec.raw["assignor"] != assignor:
            continue
        total += 1
        got = spec.run(rec.instance, Params(kafka_version=fixture_version(rec))).assignment.canonical(
            rec.instance.member_ids)
        if got != rec.raw["expected"]:
            diff = [m for m in rec.raw["expected"] if rec.raw["expected"][m] != got.get(m)]
            failures.append(f"{rec.id} ({rec.raw['tags']}): members differing {diff[:3]}")
    print(f"\n{filename} {assignor}: matched {total - len(failures)}/{total}")
    return total, failures


def seed_records() -> tuple[Record, ...]:
    """The seed documents' worked examples (``shared/scenarios/seeds/*.json``)."""
    folder = shared_path("scenarios", "seeds")
    return tuple(r for f in sorted(folder.glob("*.json")) for r in _read(str(f)))


def optimal_records() -> tuple[Record, ...]:
    """Independently computed optima (``shared/scenarios/optimal/optimal.jsonl.gz``)."""
    return _read(str(shared_path("scenarios", "optimal", "optimal.jsonl.gz")))


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The shared folder (skips with a clear message if absent)."""
    return shared_path()


@pytest.fixture(scope="session")
def registry_loaded() -> None:
    """Import every assignor and solver so the registry is complete."""
    from spark_runner.assignors import load_all

    load_all()


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession for the whole test session (sweeps' helper; Spark tests only).

    ``local[2]`` with task retries (``local[2,4]``: local mode otherwise gives each task one
    attempt), bound to 127.0.0.1, UI off, few shuffle partitions.
    """
    from spark_runner.sweep.session import start_spark

    session = start_spark("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
                          app_name="kassign-tests")
    yield session
    session.stop()


#: What the session's Apache Kafka brokers reported (start seconds, peak RSS), for the terminal summary.
_KAFKA_REPORTS: list[str] = []


@pytest.fixture(scope="session")
def apache_kafka(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A real Apache Kafka 4.4.0 (KRaft, broker and controller in one JVM) on 127.0.0.1 for the session.

    Formatted and started by :func:`tests.kafka_broker.start_apache_kafka` with its defaults; its start
    time and peak memory are logged and shown in the terminal summary; stopped (SIGTERM, then SIGKILL)
    at the end of the session.
    """
    from tests.kafka_broker import KAFKA_VERSION, start_apache_kafka

    broker = start_apache_kafka(Path(tmp_path_factory.mktemp("apache-kafka")))
    try:
        yield broker
    finally:
        broker.stop()
        rss = "unknown" if broker.peak_rss is None else f"{broker.peak_rss / 1024:,.0f} MiB"
        _KAFKA_REPORTS.append(f"Apache Kafka {KAFKA_VERSION} on {broker.bootstrap}: {broker.start_s:,.1f} s from "
                              f"format to the first served request (format {broker.format_s:,.1f} s), "
                              f"peak RSS {rss}")


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    """One line per Apache Kafka broker the session started: its start time and peak memory."""
    for line in _KAFKA_REPORTS:
        terminalreporter.write_line(line)
