"""A sweep's grid: the YAML document of generator parameters x seeds x assignors, validated, and its pending work.

The grid is validated (pydantic, unknown keys forbidden, every value checked
with its YAML path) before Spark starts; :func:`plan` lists, per scenario, the
assignors whose rows are still missing (:class:`PendingScenario`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from solver.errors import InstanceError, Problem, json_path
from solver.io import read_document
from spark_runner.scenarios.consumer import FIELD_CHECKS, ScenarioParams, scenario_id
from spark_runner.scenarios.streams import (
    STREAMS_FIELD_CHECKS,
    AnyParams,
    StreamsScenarioParams,
    protocol_of,
)
from spark_runner.sweep.evaluate import REFERENCE

#: Grid limits (docs/sweeps.md, "Limits"), checked before Spark starts, also under ``--dry-run``.
MAX_SEEDS = 1_000_000
MAX_GRID_POINTS = 100_000
MAX_SCENARIOS = 1_000_000
#: Seeds go to Spark as a ``LongType`` column.
SEED_MAX = 2**63 - 1
#: YAML aliases (``*name``, merge keys ``<<: *name`` included) a grid may use, and values it may hold.
MAX_GRID_ALIASES = 64
MAX_GRID_VALUES = 100_000


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
class PendingScenario:
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



def plan(grid: Grid, done: set[tuple[str, str]]) -> list[PendingScenario]:
    """Pending work: per scenario, the assignors whose rows are missing (the optimum always runs)."""
    out = []
    for sid, seed, p in grid.scenarios():
        evaluated = grid.evaluated_for(protocol_of(p))
        missing = tuple(a for a in evaluated if (sid, a) not in done)
        if missing:
            out.append(PendingScenario(sid, seed, p, evaluated, missing, grid.solver_time_limit, grid.kafka_version))
    return out

