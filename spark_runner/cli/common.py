"""What every ``kassign`` command shares: exit codes, consoles, option parsing, reading records."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from solver.errors import InstanceError, KassignError
from solver.io import Record, is_batch, iter_records, merge_errors
from solver.resources import TooLargeError
from solver.result import Params, Result
from spark_runner.assignors import get as get_assignor

if TYPE_CHECKING:
    from collections.abc import Mapping

    from solver.model import Instance

EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INFEASIBLE = 3
EXIT_DATA = 65
EXIT_NOINPUT = 66

stderr = Console(stderr=True, highlight=False, soft_wrap=True)
stdout = Console(highlight=False, soft_wrap=True)

#: Default seconds of each optimum when ``--time-limit`` is not given (the solvers' ``DEFAULT_TIME_LIMIT``;
#: a test keeps them equal).
OPTIMAL_SECONDS = {"optimal": 30.0, "optimal-streams": 60.0}
#: ``--time-limit`` help of the commands that solve the optimum: the default shown.
TIME_LIMIT_HELP = ("Seconds the optimum may use (default: 30 for the consumer optimum, 60 for "
                   "optimal-streams; heuristics ignore it).")


class UsageError(KassignError):
    """A command line that cannot be carried out as given."""

    exit_code = EXIT_USAGE


def _describe(rec: Record) -> str:
    inst = rec.instance
    if inst.protocol == "streams":
        return f"streams, {_count(inst.streams, 'clients')} clients, {_count(inst.streams, 'tasks')} tasks"
    return (f"consumer, {len(inst.members)} members, {len(inst.topics)} topics, "
            f"{inst.total_partitions} partitions")


def _count(obj: Any, attr: str) -> int:
    return len(getattr(obj, attr, ()) or ())


def _parse_options(options: list[str] | None) -> dict[str, Any]:
    """``-O KEY=VALUE`` options: a value is JSON when it parses as JSON (within the document limits), else text.

    A key given twice with different values is a usage error (which one was meant?).
    """
    from solver.model.decode import DecodeError, decode_json
    from solver.options import shown

    out: dict[str, Any] = {}
    for opt in options or []:
        key, sep, text = opt.partition("=")
        if not sep or not key:
            raise UsageError(f"--option expects KEY=VALUE, got {shown(opt)}")
        try:
            value: Any = decode_json(text)
        except DecodeError as e:
            if not e.syntax:  # too deep, too long a number, NaN: not a value any option takes
                raise UsageError(f"-O {key}: {e.problems[0].message}") from None
            value = text
        if key in out and out[key] != value:
            raise UsageError(f"-O {key} given twice, as {shown(out[key])} and {shown(value)}")
        out[key] = value
    return out


#: Help of every command's ``--kafka-version``.
KAFKA_VERSION_HELP = ("Kafka release whose rules the Kafka-named assignors follow: X.Y[.Z], every release from 3.0 "
                      "(X.Y: the newest of that line). Default: the instance's kafka_version, else 4.4.0, the newest "
                      "modelled. `kassign list --versions` shows each assignor's rules.")


def check_kafka_version(version: str | None) -> str | None:
    """``--kafka-version``: a release kassign knows (exit 2 otherwise, listing them); returned as given."""
    if version is not None:
        from solver.kafka_version import KafkaVersion

        KafkaVersion.parse(version)  # KafkaVersionError: exit 2
    return version


def _params(time_limit: float | None, seed: int | None, objective: str | None, options: dict[str, Any],
            balance_tolerance: float | None = None, kafka_version: str | None = None) -> Params:
    """The run parameters, each checked against its range (:mod:`solver.options`, exit 2) before any work."""
    check_kafka_version(kafka_version)
    obj = tuple(s.strip() for s in objective.split(",") if s.strip()) if objective else None
    if seed is not None and "deterministic" not in options:
        # a given seed asks for the same answer on every run: exact solvers run their deterministic mode
        options = {**options, "deterministic": True}
    return Params(time_limit=time_limit, seed=0 if seed is None else seed, objective=obj, options=options,
                  balance_tolerance=balance_tolerance, kafka_version=kafka_version)


def check_output(path: str | Path | None, option: str = "--output") -> None:
    """An output path must be writable, checked before any work is done (a directory: exit 2; else 73)."""
    from solver.model.files import check_output_path

    check_output_path(path, option)


def check_options(assignor: str, options: dict[str, Any]) -> dict[str, Any]:
    """Check ``-O`` options against what ``assignor`` understands; return them with normalised values.

    The ranges are the one option schema's (:data:`solver.options.ASSIGNOR_OPTIONS`).

    Raises
    ------
    solver.errors.OptionError
        An unknown key (the known ones are listed), a bad value or a contradiction (exit 2).
    """
    from solver.options import check_assignor_options

    return check_assignor_options(assignor, options)


def _run(name: str, rec: Record, params: Params) -> Result:
    spec = get_assignor(name)
    with located(rec.source):
        return spec.run(rec.instance, params)


@contextmanager
def located(source: str) -> Iterator[None]:
    """Name ``source`` (the file) in a :class:`~solver.resources.TooLargeError` raised inside."""
    try:
        yield
    except TooLargeError as e:
        raise TooLargeError(source, e.problems) from None


def unproven_note(name: str, res: Result, instance: Instance | None = None) -> str | None:
    """One stderr line with the per-stage gaps of a solver result that is not proven optimal, else ``None``:
    every stage with its value, and for each open stage its bound and gap (numbers with thousands separators;
    with the consumer ``instance``, each in its unit: loads in the weights' unit, MB/s for bytes/s, sums of
    squares in that unit squared, moves in the move costs' unit).

    Examples
    --------
    >>> from solver.result import Status
    >>> r = Result(None, Status.FEASIBLE, (2.0, 11), (2.0, 10), 1.0, {"stages": ["active_balance", "movement"]})
    >>> print(unproven_note("optimal-streams", r).replace("; ", ";\\n"))
    optimal-streams: not proven optimal: active_balance 2 (proven), movement 11 >= 10 (gap 9.09%);
    why: the time limit (raise --time-limit)
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "units": {"weights": "bytes/s", "move_costs": "bytes"},
    ...     "topics": {"T": {"partitions": 1, "weights": [6770000], "move_costs": [1]}},
    ...     "members": [{"id": "a", "topics": ["T"]}]})
    >>> r = Result(None, Status.FEASIBLE, (6770000.0, 183182701e6, 537600000.0),
    ...            (6770000.0, 183182691e6, 149280000.0), 1.0, {"stages": ["max_load", "sum_sq", "moves"]})
    >>> for part in unproven_note("optimal", r, inst).split(": ", 2)[2].split(", "):
    ...     print(part)
    max_load 6.77 MB/s (proven)
    sum_sq 183.1827 (MB/s)² >= 183.18269 (MB/s)² (gap 0.00000546%)
    moves 537.6 MB >= 149.28 MB (gap 72.2%); why: the time limit (raise --time-limit)
    """
    if res.status.value != "feasible" or not res.objective or len(res.bound) != len(res.objective):
        return None
    stages = list(res.extra.get("stages") or [f"stage {k + 1}" for k in range(len(res.objective))])

    from spark_runner.units import Scale, number

    scales = _stage_scales(instance, dict(zip(stages, map(float, res.objective), strict=False))) \
        if instance is not None else {}

    def pair(stage: str, v: float, b: float | None = None) -> tuple[str, str]:
        sc = scales.get(stage, Scale(1.0, ""))
        unit = f" {sc.unit}" if sc.unit else ""
        for digits in range(7, 16):  # enough digits that a value and its bound read apart
            tv, tb = number(v / sc.factor, digits=digits), number((b if b is not None else v) / sc.factor,
                                                                  digits=digits)
            if b is None or tv != tb or v == b:
                break
        return tv + unit, tb + unit

    flags = res.extra.get("proven", res.extra.get("stage_proven"))
    proven = list(flags) if flags is not None else [b >= v for v, b in zip(res.objective, res.bound, strict=False)]
    parts = []
    for s, v, b, ok in zip(stages, res.objective, res.bound, proven, strict=False):
        if ok:
            parts.append(f"{s} {pair(s, v)[0]} (proven)")
        else:
            tv, tb = pair(s, v, b)
            parts.append(f"{s} {tv} >= {tb} (gap {number(100 * (v - b) / max(abs(v), 1e-12), 3)}%)")
    return f"{name}: not proven optimal: " + ", ".join(parts) + f"; why: {unproven_reason(res.extra)}"


def unproven_reason(extra: Mapping[str, Any]) -> str:
    """Why a solver result is not proven, from its ``extra``: the scale notes (loads or move costs with no exact
    integer scale: proven only to a resolution), a model restricted to neighbourhoods, else the time limit.

    >>> unproven_reason({"notes": ["item loads have no exact integer scale: proven up to a resolution of 1e-09"]})
    'item loads have no exact integer scale: proven up to a resolution of 1e-09 (not the time limit)'
    >>> unproven_reason({"restricted": True}), unproven_reason({})
    ('the model was restricted to neighbourhoods (too large for one model)', 'the time limit (raise --time-limit)')
    """
    extra = extra or {}
    scale = [str(n) for n in (extra.get("notes") or []) if "scale" in str(n) or "rounded" in str(n)
             or "resolution" in str(n)]
    if scale:
        return "; ".join(scale) + " (not the time limit)"
    if extra.get("restricted"):
        return "the model was restricted to neighbourhoods (too large for one model)"
    return "the time limit (raise --time-limit)"


def _stage_scales(instance: Instance, values: dict[str, float]) -> dict[str, Any]:
    """The unit of each consumer optimum stage (``max_load``, ``sum_sq``, ``moves``, ``racks``) of ``instance``
    (``values``: each stage's value, which picks the prefix: MB/s, GB ...)."""
    from spark_runner.units import Scale, instance_units

    if getattr(instance, "protocol", "consumer") == "streams":
        return {}
    units = instance_units(instance)
    if instance.has_weights:
        load = Scale.for_values([values.get("max_load")], units["weights"])
        squared = Scale(load.factor ** 2, f"({load.unit})²")
    else:
        load, squared = Scale(1.0, "topic-partitions"), Scale(1.0, "")
    has_costs = any(t.move_costs is not None for t in instance.topics.values())
    moves = Scale.for_values([values.get("moves")], units["move_costs"]) if has_costs \
        else Scale(1.0, "topic-partitions")
    return {"max_load": load, "sum_sq": squared, "moves": moves, "racks": Scale(1.0, "cross-rack topic-partitions")}


def _records(path: Path) -> list[Record]:
    records: list[Record] = []
    errors: list[InstanceError] = []
    for rec in iter_records(path):
        (errors if isinstance(rec, InstanceError) else records).append(rec)  # type: ignore[arg-type]
    if errors:
        raise merge_errors(str(path), errors) if is_batch(path) else errors[0]
    return records


def _progress(items: list[Record], label: str, enabled: bool) -> Iterator[Record]:
    if not enabled:
        yield from items
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=stderr, transient=True) as prog:
        task = prog.add_task(label, total=len(items))
        for item in items:
            yield item
            prog.advance(task)


def one_instance(path: Path, need: str = "solver", what: str = "the optimal solver") -> Any:
    """The one instance in ``path`` (a usage error when it holds more), checked to fit in memory for ``need``
    before anything is built."""
    recs = _records(path)
    if len(recs) != 1:
        raise UsageError(f"{path}: needs exactly one instance, the file has {len(recs)}")
    inst = recs[0].instance
    from solver.resources import check_fits, instance_need

    check_fits(instance_need(inst, need, what), str(path))
    return inst


def output_format(fmt: str | None, as_json: bool) -> str:
    """``--format`` (or ``--json``) as a format name of :mod:`spark_runner.cli.tables`; a usage error when unknown."""
    from spark_runner.cli.tables import choose_format

    try:
        return choose_format(fmt, as_json)
    except ValueError as e:
        raise UsageError(str(e)) from None


def check_environment() -> None:
    """The environment variables kassign reads, checked before any command runs (a bad value is a usage error)."""
    from solver.model.files import input_limit
    from solver.resources import available_memory, limit_arenas

    available_memory()  # KASSIGN_MEMORY_LIMIT
    input_limit()  # KASSIGN_INPUT_LIMIT
    limit_arenas()  # before any solver thread exists


# --------------------------------------------------------------------------- score


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "\n".join(map(str, v)) if v else "-"
    return str(v)
