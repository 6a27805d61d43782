"""Spark sweeps: a YAML grid of generator parameters x seeds x assignors, one scenario per row.

The grid is validated (pydantic, unknown keys forbidden, every value checked
with its YAML path) before Spark starts.  Spark then only parallelises the
pure :func:`spark_runner.sweep.evaluate.evaluate_scenario`: a DataFrame with one row
per pending scenario goes through ``mapInPandas`` and the rows are appended,
as Parquet partitioned by ``assignor``, under ``DIR/rows/``.

Why no row is lost or duplicated when an executor dies: each scenario is
evaluated by exactly one task; a task's output files are committed by Spark's
file output committer only when the task succeeds, and the job's output is
published at job commit; a failed or killed attempt leaves nothing behind and
Spark retries it (the function is deterministic, so the retry gives the same
rows).  Pending work is written in batches (one Spark job each), so an
interrupted sweep keeps every finished batch and a re-run with the same
``--out`` skips every (scenario, assignor) already present.

A hard crash (the driver killed with its JVM and Python workers) leaves the
committed task files of the unfinished job under ``rows/_temporary/``; the next
job's commit would publish them beside the re-computed rows.  A run therefore
first deletes that uncommitted output (:func:`clear_uncommitted`), and rows are
keyed on ``(scenario_id, step, assignor)``: readers keep one row per key
(:func:`spark_runner.sweep.report.load_rows`).  Only one sweep may write to an
output directory at a time.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solver import runtime
from solver.errors import InstanceError, Interrupted, KassignError, Problem, json_path
from solver.io import read_document, write_atomic
from spark_runner.scenarios.consumer import FIELD_CHECKS, ScenarioParams, scenario_id
from spark_runner.scenarios.streams import (
    STREAMS_FIELD_CHECKS,
    AnyParams,
    StreamsScenarioParams,
    protocol_of,
)
from spark_runner.sweep.evaluate import COLUMNS, REFERENCE, ROW_KEY, ROW_SCHEMA, check_row_parts, unreadable_rows

ROWS = "rows"
REPORT = "report"
MANIFEST = "manifest.json"
#: The JVM's own output (Spark's banner and log4j warnings) of a sweep, under its ``--out``.
SPARK_LOG = "spark.log"
#: Environment hook for demonstrating fault tolerance: ``SCENARIO_ID[@MARKER_FILE]``; the
#: first attempt of the task evaluating that scenario writes the marker file (if given)
#: and raises, after it may already have produced rows (see docs/sweeps.md).
FAIL_ONCE_ENV = "KASSIGN_SWEEP_FAIL_ONCE"
#: Task attempts per task in local mode (Spark's local[N] default is 1: no retry).
LOCAL_MAX_FAILURES = 4
#: Grid limits (docs/sweeps.md, "Limits"), checked before Spark starts, also under ``--dry-run``.
MAX_SEEDS = 1_000_000
MAX_GRID_POINTS = 100_000
MAX_SCENARIOS = 1_000_000
#: Seeds go to Spark as a ``LongType`` column.
SEED_MAX = 2**63 - 1
#: YAML aliases (``*name``, merge keys ``<<: *name`` included) a grid may use, and values it may hold.
MAX_GRID_ALIASES = 64
MAX_GRID_VALUES = 100_000


# --------------------------------------------------------------------------- grid


class SeedRange(BaseModel):
    """``seeds: {start: 100, count: 10}``: seeds 100..109."""

    model_config = ConfigDict(extra="forbid")

    start: Annotated[int, Field(strict=True, ge=0, le=SEED_MAX)] = 0
    count: Annotated[int, Field(strict=True, ge=1, le=MAX_SEEDS)]


class GridSpec(BaseModel):
    """The sweep grid document (structure; parameter values are checked separately)."""

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    description: str | None = None
    seeds: Any  # a count, a list or a SeedRange: checked by _seeds, with messages a user reads
    assignors: Literal["all"] | Annotated[list[str], Field(min_length=1)]
    solver_time_limit: Annotated[float, Field(ge=1e-3, le=1e7, allow_inf_nan=False)] | None = 10.0  # as --time-limit
    kafka_version: str | None = None
    params: dict[str, Any] | Annotated[list[dict[str, Any]], Field(min_length=1)] = Field(default_factory=dict)


@dataclass(frozen=True)
class Work:
    """One scenario to evaluate and which assignors' rows to write."""

    scenario_id: str
    seed: int
    params: AnyParams
    evaluate: tuple[str, ...]
    write: tuple[str, ...]
    time_limit: float | None = None
    kafka_version: str | None = None

    def cost(self) -> float:
        """Rough relative cost, to spread expensive scenarios over tasks."""
        p = self.params
        if isinstance(p, StreamsScenarioParams):
            tasks = p.subtopologies * (p.partitions_min + p.partitions_max) / 2
            # every assignor's step also solves its reference optimum
            return (p.steps + 1) * 2 * len(self.evaluate) * (1 + p.clients * tasks * (1 + p.standby_replicas))
        size = p.members * p.topics * (p.partitions_min + p.partitions_max) / 2
        return (p.steps + 1) * len(self.evaluate) * (1 + size) * (3 if p.weights != "uniform" else 1)


@dataclass(frozen=True)
class Grid:
    """A validated grid."""

    name: str
    source: str
    seeds: tuple[int, ...]
    assignors: tuple[str, ...]
    solver_time_limit: float | None
    points: tuple[AnyParams, ...]
    #: Assignor name -> protocol (``consumer`` / ``streams``).
    protocols: Mapping[str, str] = dataclass_field(default_factory=dict)
    #: The Kafka release the Kafka-named assignors follow (an assignor listed as ``name@X.Y.Z`` follows its own).
    kafka_version: str | None = None

    def scenarios(self) -> list[tuple[str, int, AnyParams]]:
        """Every distinct ``(scenario id, seed, params)``, grid order."""
        out: dict[str, tuple[str, int, AnyParams]] = {}
        for p in self.points:
            for s in self.seeds:
                sid = scenario_id(p, s)
                out.setdefault(sid, (sid, s, p))
        return list(out.values())

    @property
    def grid_protocols(self) -> tuple[str, ...]:
        """Protocols of the grid points (``consumer`` first)."""
        present = {protocol_of(p) for p in self.points} or {"consumer"}
        return tuple(x for x in ("consumer", "streams") if x in present)

    def evaluated_for(self, protocol: str) -> tuple[str, ...]:
        """Assignors evaluated on a scenario of ``protocol``: its selected ones plus its optimum."""
        mine = [a for a in self.assignors if self.protocols.get(a, "consumer") == protocol]
        return tuple(dict.fromkeys([*mine, REFERENCE[protocol]]))

    @property
    def evaluated(self) -> tuple[str, ...]:
        """Every assignor evaluated somewhere in the grid: per protocol, the selected ones plus its optimum."""
        return tuple(dict.fromkeys(a for proto in self.grid_protocols for a in self.evaluated_for(proto)))


def _problems_from_pydantic(err: ValidationError) -> list[Problem]:
    out = []
    for e in err.errors():
        loc = tuple(x for x in e["loc"] if not (isinstance(x, str) and ("[" in x or x in
                                                                             ("int", "list", "SeedRange"))))
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            from solver.registry import did_you_mean

            key = loc[-1] if loc else ""
            msg = f"unknown key{did_you_mean(str(key), GridSpec.model_fields) if len(loc) == 1 else ''}"
        elif e["type"] == "missing":
            msg = "required key missing"
        out.append(Problem(json_path(loc), msg))
    # a union reports one error per branch; keep each (path, message) once
    return list(dict.fromkeys(out))


_PARAM_NAMES = tuple(f.name for f in fields(ScenarioParams))
_STREAMS_PARAM_NAMES = tuple(f.name for f in fields(StreamsScenarioParams))


def _values(name: str, raw: Any) -> list[Any]:
    """The grid values of one parameter: a scalar is one value, a list many (``events``: a list of lists)."""
    if name == "events":
        if isinstance(raw, list) and raw and all(isinstance(x, list) for x in raw):
            return [tuple(x) for x in raw]
        return [tuple(raw) if isinstance(raw, list) else raw]
    if isinstance(raw, list):
        return list(raw)
    return [raw]


def _expand(params: Mapping[str, Any], loc: tuple[str | int, ...], problems: list[Problem],
            budget: int = MAX_GRID_POINTS) -> list[AnyParams]:
    """The grid points of one ``params`` mapping; ``protocol: streams`` selects the Streams generator."""
    proto = params.get("protocol", "consumer")
    if proto not in ("consumer", "streams"):
        what = ("one protocol per params mapping (a list of mappings mixes protocols)" if isinstance(proto, list)
                else f"must be consumer or streams; got {proto!r}")
        problems.append(Problem(json_path((*loc, "protocol")), what))
        return []
    streams = proto == "streams"
    cls: type[ScenarioParams] | type[StreamsScenarioParams] = StreamsScenarioParams if streams else ScenarioParams
    known = _STREAMS_PARAM_NAMES if streams else _PARAM_NAMES
    checks = STREAMS_FIELD_CHECKS if streams else FIELD_CHECKS
    grid: dict[str, list[Any]] = {}
    for name, raw in params.items():
        where = (*loc, name)
        if name == "protocol" and not streams:
            continue  # consumer parameters have no protocol field (their scenario ids stay as they were)
        if name not in known:
            from solver.registry import did_you_mean

            kind = "unknown Streams parameter" if streams else "unknown parameter"
            problems.append(Problem(json_path(where), f"{kind}{did_you_mean(str(name), known)} "
                                                      f"(known: {', '.join(known)})"))
            continue
        vals = _values(name, raw)
        if not vals:
            problems.append(Problem(json_path(where), "empty list of values"))
            continue
        listed = isinstance(raw, list) and (name != "events" or vals != [tuple(raw)])
        for i, v in enumerate(vals):
            msg = checks[name](v)
            if msg:
                problems.append(Problem(json_path((*where, i) if listed else where), msg))
        grid[name] = vals
    if problems:
        return []
    names = list(grid)
    size = math.prod(len(grid[n]) for n in names)
    if size > budget:  # counted before a single combination is built
        problems.append(Problem(json_path(loc), f"{size:,} combinations of values, more than a grid's limit of "
                                                f"{MAX_GRID_POINTS:,} points (split the grid)"))
        return []
    out = []
    bad_combos = 0
    for combo in itertools.product(*(grid[n] for n in names)):
        values = dict(zip(names, combo, strict=True))
        probe = cls.__new__(cls)
        for f in fields(cls):
            object.__setattr__(probe, f.name, values.get(f.name, f.default))
        issues = probe.problems()
        if issues:
            bad_combos += 1
            if bad_combos <= 5:
                shown = ", ".join(f"{k}={v!r}" for k, v in values.items() if len(grid[k]) > 1) or "all values"
                for field_name, msg in issues:
                    problems.append(Problem(json_path((*loc, field_name)), f"{msg} (combination {shown})"))
            continue
        out.append(cls(**values))
    if bad_combos > 5:
        problems.append(Problem(json_path(loc), f"{bad_combos - 5} more invalid combination(s)"))
    if bad_combos and not out:
        problems.append(Problem(json_path(loc), f"every one of the {bad_combos:,} combination(s) is invalid"))
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _seeds(raw: Any, problems: list[Problem]) -> tuple[int, ...]:
    """``seeds``: a count (seeds 0..N-1), a list of seeds, or ``{start, count}``; each a Java long >= 0."""
    if _is_int(raw):
        if not 1 <= raw <= MAX_SEEDS:
            problems.append(Problem("seeds", f"a count of seeds must be between 1 and {MAX_SEEDS:,}, got "
                                             f"{_short(raw)}"))
            return ()
        return tuple(range(raw))
    if isinstance(raw, list):
        if not raw or len(raw) > MAX_SEEDS:
            problems.append(Problem("seeds", f"a list of 1 to {MAX_SEEDS:,} seeds expected, got {len(raw):,}"))
            return ()
        bad = [(i, v) for i, v in enumerate(raw) if not (_is_int(v) and 0 <= v <= SEED_MAX)]
        for i, v in bad[:5]:
            problems.append(Problem(f"seeds[{i}]", f"a seed is an integer between 0 and {SEED_MAX} (a Java long), "
                                                   f"got {_short(v)}"))
        return () if bad else tuple(dict.fromkeys(raw))
    if isinstance(raw, dict):
        try:
            rng = SeedRange.model_validate(raw)
        except ValidationError as e:
            problems.extend(Problem(f"seeds.{p.path}" if p.path else "seeds", p.message)
                            for p in _problems_from_pydantic(e))
            return ()
        last = rng.start + rng.count - 1
        if last > SEED_MAX:
            problems.append(Problem("seeds.count", f"the last seed would be {last}, beyond {SEED_MAX} (a Java long)"))
            return ()
        return tuple(range(rng.start, last + 1))
    problems.append(Problem("seeds", f"expected a count, a list of seeds or {{start, count}}, got {_short(raw)}"))
    return ()


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:39] + "..."


def _known_assignors() -> dict[str, tuple[str, str]]:
    """Name -> (kind, protocol) of every registered assignor, the optimum included."""
    from spark_runner.sweep.evaluate import load_registry

    return {s.name: (s.kind, s.protocol) for s in load_registry()}


def _versioned(name: str, known: Mapping[str, tuple[str, str]], where: str, problems: list[Problem]) -> str:
    """``name`` or ``name@X.Y[.Z]`` (a Kafka-named assignor at one release): the label used in rows.

    The release is written out in full (``uniform@4.0`` -> ``uniform@4.0.1``); a problem is recorded for a
    release kassign does not know, an assignor that is not Kafka-named, or one the release does not have.
    """
    base, sep, release = name.partition("@")
    if not sep or base not in known:
        return name
    from solver.kafka_version import KafkaVersion, KafkaVersionError
    from spark_runner.assignors import get

    spec = get(base)
    if spec.versions is None:
        problems.append(Problem(where, f"{base!r} is not named after a Kafka assignor: it has no Kafka release"))
        return name
    try:
        version = KafkaVersion.parse(release)
        spec.versions.rule(version, base)
    except KafkaVersionError as e:
        problems.append(Problem(where, str(e)))
        return name
    return f"{base}@{version}"


def parse_grid(data: Any, source: str = "<grid>") -> Grid:
    """Validate a decoded grid document.

    Raises
    ------
    InstanceError
        With every problem and its YAML path (exit code 65).
    """
    if not isinstance(data, dict):
        raise InstanceError(source, [Problem("", "expected a mapping (the sweep grid)")])
    try:
        spec = GridSpec.model_validate(data)
    except ValidationError as e:
        raise InstanceError(source, _problems_from_pydantic(e)) from None
    problems: list[Problem] = []
    points: list[AnyParams] = []
    blocks = spec.params if isinstance(spec.params, list) else [spec.params]
    for i, block in enumerate(blocks):
        loc: tuple[str | int, ...] = ("params", i) if isinstance(spec.params, list) else ("params",)
        points.extend(_expand(block, loc, problems, MAX_GRID_POINTS - len(points)))
    # The protocols the blocks declare, whether or not their values expanded cleanly; a block with a
    # bad protocol leaves it unknown, and the assignor-protocol checks would only repeat that error.
    declared = [b.get("protocol", "consumer") for b in blocks]
    present = {d for d in declared if d in ("consumer", "streams")}
    cross_check = len(present) == len(set(map(str, declared)))
    known = _known_assignors()
    for proto in sorted(present):
        if REFERENCE[proto] not in known:
            problems.append(Problem("", f"the optimum {REFERENCE[proto]!r} is not registered; gaps need it"))
    release = None
    if spec.kafka_version is not None:
        from solver.kafka_version import KafkaVersion, KafkaVersionError

        try:
            release = str(KafkaVersion.parse(spec.kafka_version))
        except KafkaVersionError as e:
            problems.append(Problem("kafka_version", str(e)))
    if spec.assignors == "all":
        assignors = tuple(n for n, (kind, proto) in sorted(known.items())
                          if kind == "heuristic" and proto in present and _has_release(n, release))
    else:
        from solver.registry import did_you_mean
        from spark_runner.assignors import canonical

        listed = [canonical(n) for n in spec.assignors]  # Kafka's class names select the assignor they name
        labels = [_versioned(n, known, f"assignors[{i}]", problems) for i, n in enumerate(listed)]
        assignors = tuple(dict.fromkeys(labels))
        for i, name in enumerate(n.partition("@")[0] for n in listed):
            if name not in known:
                problems.append(Problem(f"assignors[{i}]", f"unknown assignor {name!r}{did_you_mean(name, known)} "
                                        f"(known: {', '.join(sorted(known))})"))
            elif cross_check and known[name][1] not in present:
                problems.append(Problem(f"assignors[{i}]", f"{name!r} is a {known[name][1]} assignor but no params "
                                        f"mapping generates {known[name][1]} scenarios"
                                        + (" (add protocol: streams)" if known[name][1] == "streams" else "")))
        for proto in sorted(present if cross_check else ()):
            if not any(known.get(a.partition("@")[0], ("", ""))[1] == proto for a in assignors):
                problems.append(Problem("assignors", f"no {proto} assignor listed for the {proto} scenarios"))
    seeds = _seeds(spec.seeds, problems)
    if len(points) * len(seeds) > MAX_SCENARIOS:
        problems.append(Problem("seeds", f"{len(points):,} grid points x {len(seeds):,} seeds = "
                                         f"{len(points) * len(seeds):,} scenarios, more than the limit of "
                                         f"{MAX_SCENARIOS:,}"))
    if problems:
        raise InstanceError(source, problems)
    if release is not None and spec.assignors != "all":
        for i, name in enumerate(canonical(n) for n in spec.assignors):
            if "@" not in name and not _has_release(name, release):
                problems.append(Problem(f"assignors[{i}]", f"{name!r} is not in Kafka {release} (kafka_version)"))
    if problems:
        raise InstanceError(source, problems)
    protocols = {a: known[a.partition("@")[0]][1] for a in assignors}
    return Grid(spec.name or Path(source).stem, source, seeds, assignors, spec.solver_time_limit, tuple(points),
                protocols, release)


def _has_release(name: str, release: str | None) -> bool:
    """Whether assignor ``name`` exists at ``release`` (any assignor when no release is set)."""
    if release is None:
        return True
    from solver.kafka_version import KafkaVersion, KafkaVersionError
    from spark_runner.assignors import get

    spec = get(name)
    if spec.versions is None:
        return True
    try:
        spec.versions.rule(KafkaVersion.parse(release), name)
    except KafkaVersionError:
        return False
    return True


def with_kafka_version(grid: Grid, version: str) -> Grid:
    """``grid`` with the Kafka-named assignors following ``version`` (``--kafka-version`` over the grid's key).

    Raises
    ------
    solver.kafka_version.KafkaVersionError
        For an unknown release, or one without a listed assignor (exit 2).
    """
    from dataclasses import replace

    from solver.kafka_version import KafkaVersion, KafkaVersionError
    from spark_runner.assignors import get

    release = str(KafkaVersion.parse(version))
    for name in grid.assignors:
        if "@" not in name and not _has_release(name, release):
            spec = get(name)
            assert spec.versions is not None
            try:
                spec.versions.rule(KafkaVersion.parse(release), name)
            except KafkaVersionError as e:
                raise KafkaVersionError(f"--kafka-version {version}: {e}") from None
    return replace(grid, kafka_version=release)


def read_grid(path: str | Path) -> Grid:
    """Read and validate a grid file (YAML or JSON); at most :data:`MAX_GRID_ALIASES` YAML aliases."""
    return parse_grid(read_document(path, max_aliases=MAX_GRID_ALIASES, max_values=MAX_GRID_VALUES), str(path))


# --------------------------------------------------------------------------- resume


#: What a killed Spark job leaves under the output directory: task output never committed by a job.
UNCOMMITTED = ("_temporary", ".spark-staging-*")


def clear_uncommitted(out: Path) -> int:
    """Delete the output of Spark jobs that never committed (``rows/_temporary`` ...); return how many paths.

    Parameters
    ----------
    out
        The sweep's output directory.
    """
    rows = out / ROWS
    gone = 0
    for pattern in UNCOMMITTED:
        for p in rows.glob(pattern):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
            gone += 1
    return gone


def finished(out: Path) -> set[tuple[str, str]]:
    """``(scenario id, assignor)`` pairs that already have rows under ``out/rows``."""
    rows = out / ROWS
    if not rows.exists() or not any(rows.glob("assignor=*/*.parquet")):
        return set()
    import pyarrow.dataset as ds

    check_row_parts(rows)
    with unreadable_rows(rows):
        table = ds.dataset(str(rows), format="parquet", partitioning="hive").to_table(
            columns=["scenario_id", "assignor"])
    sids = table.column("scenario_id").to_pylist()
    names = [str(a) for a in table.column("assignor").to_pylist()]
    return set(zip(sids, names, strict=True))


def plan(grid: Grid, done: set[tuple[str, str]]) -> list[Work]:
    """Pending work: per scenario, the assignors whose rows are missing (the optimum always runs)."""
    out = []
    for sid, seed, p in grid.scenarios():
        evaluated = grid.evaluated_for(protocol_of(p))
        missing = tuple(a for a in evaluated if (sid, a) not in done)
        if missing:
            out.append(Work(sid, seed, p, evaluated, missing, grid.solver_time_limit, grid.kafka_version))
    return out


# --------------------------------------------------------------------------- spark


def master_label(master: str | None) -> str:
    """The master as the user gave it, with the task retries kassign adds said in words.

    Examples
    --------
    >>> master_label("local[2]")
    'local[2], 4 attempts per task'
    >>> master_label(None)
    'local[*], 4 attempts per task'
    >>> master_label("spark://127.0.0.1:7077")
    'spark://127.0.0.1:7077'
    """
    given = master or "local[*]"
    real = normalize_master(master)
    if real == given:
        return given
    tries = real.rsplit(",", 1)[1].rstrip("]")
    return f"{given}, {tries} attempts per task"


def normalize_master(master: str | None) -> str:
    """``local[*]`` by default; ``local`` / ``local[N]`` get task retries (``local[N,F]``).

    Examples
    --------
    >>> normalize_master(None)
    'local[*,4]'
    >>> normalize_master("local[2]")
    'local[2,4]'
    >>> normalize_master("local[2,1]")
    'local[2,1]'
    >>> normalize_master("spark://127.0.0.1:7077")
    'spark://127.0.0.1:7077'
    """
    m = (master or "local[*]").strip()
    if m == "local":
        m = "local[1]"
    hit = re.fullmatch(r"local\[(\*|\d+)\]", m)
    if hit:
        return f"local[{hit.group(1)},{LOCAL_MAX_FAILURES}]"
    return m


def is_local(master: str) -> bool:
    """True for ``local``, ``local[...]`` masters."""
    return master == "local" or master.startswith("local[")


def _loopback_master(master: str) -> bool:
    hit = re.match(r"spark://([^:/,]+)", master)
    return bool(hit) and hit.group(1) in ("127.0.0.1", "localhost")  # type: ignore[union-attr]


def _code_zip() -> str:
    """Zip the three kassign packages so cluster executors import the same code as the driver."""
    root = Path(__file__).resolve().parents[2]
    fd, path = tempfile.mkstemp(prefix="kassign-code-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for pkg in ("solver", "heuristics", "spark_runner"):
            for f in sorted((root / pkg).rglob("*.py")):
                z.write(f, f.relative_to(root).as_posix())
    return path


def start_spark(
    master: str | None = None, conf: Mapping[str, str] | None = None, app_name: str = "kassign-sweep",
    log_path: str | Path | None = None,
) -> Any:
    """Start (or get) a SparkSession for sweeps.

    Local masters bind to 127.0.0.1, get task retries and run their workers with the running interpreter
    (``PYSPARK_PYTHON`` is overridden: the workers need kassign); a cluster's ``PYSPARK_PYTHON`` defaults to it.
    With ``log_path`` the JVM's own output (its start-up banner, log4j's
    warnings) goes to that file instead of the terminal, so a user sees only
    kassign's lines; Spark errors still reach Python as exceptions.
    """
    m = normalize_master(master)
    local = is_local(m)
    if local:
        # local workers run on this machine: kassign's own interpreter, whatever PYSPARK_PYTHON says (a Spark
        # installation often sets it to a python without kassign: every task then failed with a Java trace)
        given = os.environ.get("PYSPARK_PYTHON")
        if given and given != sys.executable:
            print(f"[sweep] local Spark workers run kassign's interpreter {sys.executable}, not PYSPARK_PYTHON={given}",
                  file=sys.stderr, flush=True)
        os.environ["PYSPARK_PYTHON"] = sys.executable
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    settings = {"spark.master": m, "spark.app.name": app_name,
                "spark.ui.showConsoleProgress": "false",
                "spark.log.level": "ERROR",
                "spark.sql.shuffle.partitions": "8",
                "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "1",
                "spark.sql.sources.partitionOverwriteMode": "static",
                "spark.speculation": "false"}
    if local:
        settings["spark.ui.enabled"] = "false"
    if local or _loopback_master(m):
        # a local run, or a cluster on this machine's loopback: the driver listens on 127.0.0.1 only
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    settings.update(conf or {})
    b = SparkSession.builder
    for k, v in settings.items():
        b = b.config(k, v)
    _starting.set()
    try:
        # a stop request (Ctrl-C) while Spark starts ends its JVM: the start-up (tens of seconds on a busy
        # machine) has nothing to cancel and nothing to save, so there is no reason to wait for it
        with runtime.stoppable(lambda: _end_starting_jvm(SparkContext)):
            _launch_gateway(SparkConf(loadDefaults=False).setAll(list(settings.items())), SparkContext, log_path)
        with runtime.stoppable(lambda: _end_starting_jvm(SparkContext)):
            spark = b.getOrCreate()
    except Exception as e:  # a bad --master or --conf, no Java: one line, not the JVM's stack trace
        where = f" (Spark's own log: {log_path})" if log_path is not None else ""
        raise SparkStartError(f"cannot start Spark (master {master or 'local[*]'}): {_first_line(e)}{where}") \
            from None
    finally:
        _starting.clear()
    spark.sparkContext.setLogLevel("ERROR")
    if not local:
        spark.sparkContext.addPyFile(_code_zip())
    return spark


#: Set while :func:`start_spark` starts Spark (its JVM launching, the SparkContext being built).
_starting = threading.Event()


def spark_starting() -> bool:
    """Whether :func:`start_spark` is starting Spark now: a signal then has nothing to cancel or save."""
    return _starting.is_set()


def _end_starting_jvm(context: Any) -> None:
    """Kill the JVM of ``context``'s gateway (launched by :func:`_launch_gateway`), if it runs yet: the py4j
    call waiting on it then fails, and :func:`solver.runtime.stoppable` turns that into ``Interrupted``."""
    proc = getattr(context._gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()


class SparkStartError(KassignError):
    """Spark did not start (a bad ``--master`` or ``--conf``, no Java): exit 69, ``EX_UNAVAILABLE``."""

    exit_code = 69


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "Traceback", "py4j")):
            return line[:300]
    return text.splitlines()[0][:300]


def _launch_gateway(spark_conf: Any, context: Any, log_path: str | Path | None) -> None:
    """Start Spark's JVM in a session of its own (``setsid``), its output to ``log_path``, unless it runs.

    Ctrl-C sends SIGINT to the terminal's whole process group; Spark's JVM ignores it, but the Python
    workers it starts do not, and die with tracebacks mid-task.  In its own session nothing reaches
    them: the driver alone gets the signal, cancels the jobs and stops Spark (the JVM still exits when
    the driver dies: it watches its stdin).
    """
    if context._gateway is not None:
        return
    from pyspark.java_gateway import launch_gateway

    kwargs: dict[str, Any] = {"start_new_session": True}
    if log_path is None:
        context._ensure_initialized(gateway=launch_gateway(spark_conf, popen_kwargs=kwargs))
        return
    with open(log_path, "ab") as log:  # the JVM keeps its own copy of the descriptor
        context._ensure_initialized(gateway=launch_gateway(spark_conf, popen_kwargs={**kwargs, "stdout": log,
                                                                                      "stderr": log}))


def spark_schema() -> str:
    """The row schema as a Spark DDL string."""
    return ", ".join(f"`{n}` {t}" for n, t in ROW_SCHEMA)


def _task_fn(fail_once: str | None) -> Any:
    """The ``mapInPandas`` function; ``fail_once`` (``SCENARIO_ID[@MARKER]``) makes the first attempt raise."""

    target, _, marker = (fail_once or "").partition("@")

    def fn(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd
        from pyspark import TaskContext

        from spark_runner.sweep.evaluate import evaluate_scenario

        for pdf in batches:
            for rec in pdf.itertuples(index=False):
                if target and rec.scenario_id == target:
                    ctx = TaskContext.get()
                    if ctx is not None and ctx.attemptNumber() == 0:
                        if marker:  # lets a test see that the failure really happened
                            Path(marker).write_text(f"stage {ctx.stageId()} partition {ctx.partitionId()}\n")
                        raise RuntimeError(f"injected failure of the first attempt for scenario {target}")
                limit = None if rec.time_limit is None or math.isnan(rec.time_limit) else float(rec.time_limit)
                rows = evaluate_scenario(json.loads(rec.params_json), int(rec.seed),
                                         json.loads(rec.evaluate), limit, kafka_version=rec.kafka_version or None)
                keep = set(json.loads(rec.write))
                yield pd.DataFrame([r for r in rows if r["assignor"] in keep], columns=list(COLUMNS))

    return fn


def _deal(work: Sequence[Work], slices: int) -> list[Work]:
    """Order work so that ``slices`` contiguous chunks have similar cost (largest first, dealt round robin)."""
    ranked = sorted(work, key=lambda w: -w.cost())
    buckets: list[list[Work]] = [[] for _ in range(slices)]
    for i, w in enumerate(ranked):
        buckets[i % slices].append(w)
    return [w for b in buckets for w in b]


class Progress:
    """Polls Spark's status tracker in a thread and prints progress lines to stderr."""

    def __init__(self, spark: Any, total: int, log: Any, every: float = 5.0) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.total = total
        self.log = log
        self.every = every
        self.done = 0
        self.batch = (0, 0, 0)  # (index, count, scenarios)
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            with contextlib.suppress(Exception):  # progress is best effort; never kill the sweep for it
                self.line()

    def line(self) -> None:
        tasks = done = running = failed = 0
        for sid in self.tracker.getActiveStageIds():
            info = self.tracker.getStageInfo(sid)
            if info is not None:
                tasks += info.numTasks
                done += info.numCompletedTasks
                running += info.numActiveTasks
                failed += info.numFailedTasks
        i, n, size = self.batch
        elapsed = _elapsed(time.monotonic() - self.t0)
        if not tasks:  # Spark has not started the batch's stage yet: no "tasks 0/0"
            self.log(f"[sweep] batch {i}/{n}: starting ({size} scenario(s)); scenarios {self.done}/{self.total} "
                     f"done; {elapsed}")
            return
        approx = self.done + int(done / tasks * size)
        self.log(f"[sweep] batch {i}/{n}: tasks {done}/{tasks} done, {running} running, {failed} failed; "
                 f"scenarios ~{approx}/{self.total}; {elapsed}")


def _elapsed(s: float) -> str:
    m, s = divmod(int(s), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


@dataclass(frozen=True)
class SweepSummary:
    """What a sweep did."""

    scenarios: int
    skipped: int
    evaluated: int
    batches: int
    rows_total: int
    seconds: float
    out: Path


def run_sweep(
    grid: Grid,
    out: str | Path,
    *,
    master: str | None = None,
    overwrite: bool = False,
    partitions: int | None = None,
    batch_size: int | None = None,
    conf: Mapping[str, str] | None = None,
    spark: Any = None,
    fail_once: str | None = None,
    log: Any = None,
    progress_every: float = 5.0,
) -> SweepSummary:
    """Evaluate every pending scenario of ``grid`` with Spark and append the rows under ``out/rows``.

    Parameters
    ----------
    grid
        A validated grid (:func:`read_grid`).
    out
        Output directory.
    master
        Spark master URL (``local[*]`` by default); ignored when ``spark`` is given.
    overwrite
        Delete ``out/rows`` and ``out/report`` first instead of resuming.
    partitions
        Spark tasks per batch (default: 4 per core, at most one per scenario).
    batch_size
        Scenarios per Spark job (default: ``max(100, 25 * cores)``); each batch
        is committed on its own, so an interrupted sweep keeps finished batches.
    conf
        Extra Spark configuration.
    spark
        An existing SparkSession to use (it is not stopped).
    fail_once
        Scenario id whose first task attempt raises (fault-tolerance demonstration);
        default: the ``KASSIGN_SWEEP_FAIL_ONCE`` environment variable.
    log
        ``log(str)`` for progress lines (stderr by default).
    """
    from solver.options import PROGRESS_EVERY, SWEEP_BATCH_SIZE, SWEEP_PARTITIONS, check_optional

    check_optional(SWEEP_PARTITIONS, partitions)
    check_optional(SWEEP_BATCH_SIZE, batch_size)
    PROGRESS_EVERY.check(progress_every)
    t0 = time.monotonic()
    out = Path(out)
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    with sweep_lock(out):  # one sweep per output directory (a second one is refused, exit 75)
        if overwrite:
            for sub in (ROWS, REPORT):
                shutil.rmtree(out / sub, ignore_errors=True)
        if clear_uncommitted(out):
            say(f"[sweep] deleted the uncommitted output of an interrupted run under {out / ROWS}")
        scenarios = grid.scenarios()
        check_release(out, grid)
        done = finished(out)
        check_grid(out, grid, done)
        work = plan(grid, done)
        skipped = len(scenarios) - len(work)
        say(f"[sweep] {grid.name}: {len(scenarios)} scenario(s) x {len(grid.evaluated)} assignor(s) "
            f"({', '.join(grid.evaluated)}); {skipped} already done, {len(work)} to evaluate")
        fail = fail_once if fail_once is not None else os.environ.get(FAIL_ONCE_ENV) or None
        batches = 0
        if work:
            own = spark is None
            committed = [0]
            try:
                if own:
                    runtime.check()
                    say(f"[sweep] starting Spark ({master_label(master)}; its own log: {out / SPARK_LOG})")
                    spark = start_spark(master, conf, log_path=out / SPARK_LOG)
                batches = _run_batches(spark, work, out, partitions, batch_size, fail, say, progress_every,
                                       committed)
            except Interrupted as e:
                try:  # what is on disk: a batch committed just before the signal counts too
                    written = len(scenarios) - len(plan(grid, finished(out)))
                except Exception:  # unreadable now: what this run saw committed
                    written = skipped + committed[0]
                raise Interrupted(e.signum, interrupted_note(e.signum, out, written, len(scenarios),
                                                             starting=spark is None)) from None
            finally:
                if own:
                    with contextlib.suppress(Exception):  # a JVM that is already gone cannot be stopped
                        spark.stop()
        rows_total = _count_rows(out)
        _write_manifest(out, grid, len(scenarios), rows_total)
    secs = time.monotonic() - t0
    say(f"[sweep] done in {_elapsed(secs)}: {rows_total} row(s) under {out / ROWS}")
    return SweepSummary(len(scenarios), skipped, len(work), batches, rows_total, secs, out)


def interrupted_note(signum: int, out: Path, finished_scenarios: int, total: int, starting: bool = False) -> str:
    """What an interrupted sweep says: what was written, and how to finish it (``starting``: the signal came
    while Spark was starting, before any batch of this run)."""
    import signal as _signal

    name = _signal.Signals(signum).name
    what = ("Spark was still starting, no batch had begun" if starting
            else "every committed batch; the batch in progress was discarded")
    return (f"interrupted ({name}): {finished_scenarios} of {total} scenario(s) are written under {out / ROWS} "
            f"({what}); run the same command again to resume: finished scenarios are skipped")


#: The lock file of a sweep's output directory (held with ``flock`` while a sweep writes there).
LOCK = ".kassign-sweep.lock"


@contextlib.contextmanager
def sweep_lock(out: Path) -> Iterator[None]:
    """Hold ``out``'s sweep lock for the block; another process holding it is a :class:`BusyError` (exit 75).

    ``flock`` on ``out/.kassign-sweep.lock``: the kernel releases it when the holder exits, however it
    ends (no stale lock after a crash).  The file says who holds it, for the message.
    """
    import fcntl

    from solver.errors import BusyError, OutputError

    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    except FileExistsError:
        raise OutputError(str(out), "exists and is not a directory") from None
    except OSError as e:
        raise OutputError.from_os(str(out), e) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise BusyError(f"{out}: another sweep is writing to this directory ({holder}); wait for it to "
                            f"finish, or give another --out") from None
        os.ftruncate(fd, 0)
        from spark_runner.cli.watchdog import kassign_pid

        # the process the user started (and would signal), not its command's worker
        os.pwrite(fd, f"pid {kassign_pid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _run_batches(spark: Any, work: list[Work], out: Path, partitions: int | None, batch_size: int | None,
                 fail: str | None, say: Any, every: float, committed: list[int] | None = None) -> int:
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    cores = max(1, spark.sparkContext.defaultParallelism)
    size = batch_size or max(100, 25 * cores)
    chunks = [work[i:i + size] for i in range(0, len(work), size)]
    in_schema = StructType([
        StructField("scenario_id", StringType(), False),
        StructField("seed", LongType(), False),
        StructField("params_json", StringType(), False),
        StructField("evaluate", StringType(), False),
        StructField("write", StringType(), False),
        StructField("time_limit", DoubleType(), True),
        StructField("kafka_version", StringType(), True),
    ])
    fn = _task_fn(fail)
    schema = spark_schema()
    target = str((out / ROWS).resolve())
    with Progress(spark, sum(len(c) for c in chunks), say, every) as prog:
        for k, chunk in enumerate(chunks, 1):
            slices = max(1, min(len(chunk), partitions or 4 * cores))
            ordered = _deal(chunk, slices)
            data = [(w.scenario_id, w.seed, w.params.canonical_json(), json.dumps(list(w.evaluate)),
                     json.dumps(list(w.write)), w.time_limit, w.kafka_version) for w in ordered]
            prog.batch = (k, len(chunks), len(chunk))
            runtime.check()
            with runtime.stoppable(lambda: _cancel(spark)):  # a signal cancels the job: nothing of it is committed
                df = spark.createDataFrame(spark.sparkContext.parallelize(data, slices), in_schema)
                rows = df.mapInPandas(fn, schema)
                try:
                    (rows.write.mode("append").partitionBy("assignor")
                     .option("compression", "zstd").parquet(target))
                except Exception as e:
                    output_failure(e, out)
                    raise
            prog.done += len(chunk)
            if committed is not None:
                committed[0] = prog.done
            say(f"[sweep] batch {k}/{len(chunks)} committed: {prog.done}/{prog.total} scenario(s)")
    return len(chunks)


#: OS errors that, named anywhere in a failed Spark write (a ``Py4JJavaError`` carries Java's text), make it a
#: failed output (exit 73/74 as any output) rather than a crash: the disk is full, a quota, a file size limit ...
_WRITE_ERRNOS = ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EROFS", "EACCES")


def output_failure(e: BaseException, out: Path) -> None:
    """Raise :class:`~solver.errors.OutputError` for ``out/rows`` when ``e`` (a failed Spark write) says why an
    OS refused the write (``No space left on device`` ...); return otherwise (the caller re-raises ``e``)."""
    import errno

    from solver.errors import OutputError

    text = str(e)
    for name in _WRITE_ERRNOS:
        code = getattr(errno, name, None)
        if code is not None and os.strerror(code) in text:
            raise OutputError.from_os(str(out / ROWS), OSError(code, os.strerror(code)), partial=True) from None


def _cancel(spark: Any) -> None:
    """Cancel every Spark job, quietly: the job's abort is expected, not an error to print."""
    sc = spark.sparkContext
    with contextlib.suppress(Exception):
        sc.setLogLevel("OFF")
    sc.cancelAllJobs()


def _count_rows(out: Path) -> int:
    rows = out / ROWS
    if not rows.exists() or not any(rows.glob("assignor=*/*.parquet")):
        return 0
    import pyarrow.dataset as ds

    table = ds.dataset(str(rows), format="parquet", partitioning="hive").to_table(columns=list(ROW_KEY))
    return len(set(zip(*(table.column(c).to_pylist() for c in ROW_KEY), strict=True)))


class ReleaseMismatchError(KassignError):
    """The output directory holds rows made following another Kafka release (exit 2)."""

    exit_code = 2


def read_manifest(out: Path) -> dict[str, Any]:
    """``out/manifest.json`` as the last sweep wrote it (``{}`` when there is none), its keys of the types
    kassign writes (``grid`` and ``kafka_version`` text, ``solver_time_limit`` a number).

    Raises
    ------
    solver.errors.InstanceError
        The file is not such an object (damaged, edited, too deep or too large): exit 65 naming it.
    """
    path = out / MANIFEST
    if not os.path.lexists(path):
        return {}
    from solver.model.files import private_reads

    with private_reads():  # kassign's own file, written again by this sweep
        doc = read_document(path)  # bounded, strict JSON
    types: dict[str, Any] = {"grid": str, "kafka_version": str, "solver_time_limit": (int, float)}
    bad = [k for k, t in types.items() if isinstance(doc, dict) and k in doc and doc[k] is not None
           and (not isinstance(doc[k], t) or isinstance(doc[k], bool))]
    if not isinstance(doc, dict) or bad:
        what = f"{bad[0]} is not {'text' if bad[0] != 'solver_time_limit' else 'a number'}" if bad else \
            "not an object"
        raise InstanceError(str(path), [Problem(bad[0] if bad else "", f"not a sweep manifest ({what}): delete it "
                                                                     f"(or start over with --overwrite)")])
    return doc


def check_release(out: Path, grid: Grid) -> None:
    """Refuse to resume rows made following another Kafka release: rows are keyed without it.

    Raises
    ------
    ReleaseMismatchError
        When ``out/manifest.json`` records another ``kafka_version`` and rows exist.
    """
    if not (out / ROWS).exists():
        return
    before = read_manifest(out).get("kafka_version")
    from solver.kafka_version import DEFAULT

    now = grid.kafka_version or str(DEFAULT)
    if (before or str(DEFAULT)) != now:
        raise ReleaseMismatchError(f"{out} holds rows made following Kafka {before or DEFAULT}; this sweep follows "
                                   f"Kafka {now}: use another --out, or --overwrite")


class GridMismatchError(KassignError):
    """The output directory holds rows of another grid (exit 2): a report would mix both."""

    exit_code = 2


def check_grid(out: Path, grid: Grid, done: set[tuple[str, str]]) -> None:
    """Refuse to add this grid's rows to ``out`` when its rows ``done`` are of another grid.

    ``out`` remembers its grid by its rows: every scenario there must be one of this grid's (same points,
    seeds and scenario parameters: the scenario id is their digest) and every assignor one it evaluates.
    A grid that *adds* scenarios or assignors resumes (only what is missing runs); one that drops any, or
    describes other scenarios, would make a report of both grids under this grid's name.

    Raises
    ------
    GridMismatchError
        With what differs and how to go on (another ``--out``, or ``--overwrite``).
    """
    if not done:
        return
    mine = {sid for sid, _, _ in grid.scenarios()}
    theirs = {sid for sid, _ in done}
    names = {a for _, a in done}
    other_sids = theirs - mine
    other_names = sorted(names - set(grid.evaluated))
    if not other_sids and not other_names:
        return
    before = read_manifest(out).get("grid")
    whose = f"grid {before!r}" if isinstance(before, str) and before else "another grid"
    what = (f"{len(other_sids):,} of its {len(theirs):,} scenario(s) are not in this grid" if other_sids else
            f"it evaluated {', '.join(other_names)}, which this grid does not list")
    raise GridMismatchError(f"{out} holds the rows of {whose} ({what}); this sweep ({grid.name!r}) would report "
                            f"both: use another --out, or --overwrite")


def _write_manifest(out: Path, grid: Grid, scenarios: int, rows: int) -> None:
    from solver.kafka_version import DEFAULT

    doc = {
        "grid": grid.name,
        "source": grid.source,
        "seeds": list(grid.seeds),
        "assignors": list(grid.evaluated),
        "kafka_version": grid.kafka_version or str(DEFAULT),
        "solver_time_limit": grid.solver_time_limit,
        "points": [p.to_dict() for p in grid.points],
        "scenarios": scenarios,
        "rows": rows,
        "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_atomic(out / MANIFEST, json.dumps(doc, indent=1) + "\n")
