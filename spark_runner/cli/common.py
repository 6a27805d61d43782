"""What every ``kassign`` command shares: exit codes, consoles, option parsing, reading records."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console

from solver.errors import InstanceError, KassignError
from solver.io import Record, is_batch, iter_records, merge_errors
from solver.resources import TooLargeError
from solver.result import Params, Result
from spark_runner.assignors import get as get_assignor

EXIT_OK = 0
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
    out: dict[str, Any] = {}
    for opt in options or []:
        key, sep, value = opt.partition("=")
        if not sep or not key:
            raise UsageError(f"--option expects KEY=VALUE, got {opt!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
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
    check_kafka_version(kafka_version)
    check_time_limit(time_limit)
    if seed is not None:
        check_seed(seed)
    if balance_tolerance is not None and not (math.isfinite(balance_tolerance) and balance_tolerance >= 0):
        raise UsageError(f"--balance-tolerance must be a finite number >= 0, got {balance_tolerance}")
    obj = tuple(s.strip() for s in objective.split(",") if s.strip()) if objective else None
    if seed is not None and "deterministic" not in options:
        # a given seed asks for the same answer on every run: exact solvers run their deterministic mode
        options = {**options, "deterministic": True}
    return Params(time_limit=time_limit, seed=seed or 0, objective=obj, options=options,
                  balance_tolerance=balance_tolerance, kafka_version=kafka_version)


#: Largest ``--seed``: CP-SAT's random seed is a 32-bit int.
SEED_MAX = 2**31 - 1


def check_seed(seed: int) -> None:
    """``--seed`` must be an integer in ``0..2**31-1`` (exit 2 otherwise)."""
    if not 0 <= seed <= SEED_MAX:
        shown = str(seed) if len(str(seed)) <= 30 else f"{str(seed)[:30]}..."
        raise UsageError(f"--seed must be between 0 and {SEED_MAX}, got {shown}")


def check_time_limit(seconds: float | None) -> None:
    """``--time-limit`` must be a positive finite number of seconds (exit 2 otherwise)."""
    if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
        raise UsageError(f"--time-limit must be a positive number of seconds, got {seconds}")


def check_output(path: Path | None) -> None:
    """``-o`` must name a file (not a directory), checked before any work is done (exit 2 otherwise)."""
    if path is not None and (path.is_dir() or str(path).endswith(("/", "\\"))):
        raise UsageError(f"--output {path}: is a directory; give a file name")


def _pos_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError("expected a positive integer")
    return v


def _non_neg_int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError("expected a non-negative integer")
    return v


def _flag(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, (str, int)) and str(v).lower() in ("true", "1", "yes", "false", "0", "no"):
        return str(v).lower() in ("true", "1", "yes")
    raise ValueError("expected true or false")


def _one_of(*choices: str) -> Any:
    def check(v: Any) -> str:
        if v not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}")
        return str(v)

    return check


_CPSAT_OPTIONS = {"workers": _pos_int, "interleave": _flag, "deterministic": _flag, "max_vars": _pos_int,
                  "backend": _one_of("cpsat", "highs", "scip")}
#: ``-O KEY=VALUE`` options each assignor understands, with the check (and normalisation) of the value.
ASSIGNOR_OPTIONS: dict[str, dict[str, Any]] = {
    "optimal": _CPSAT_OPTIONS,
    "optimal-cpsat": _CPSAT_OPTIONS,
    "optimal-streams": {"workers": _pos_int, "engine": _one_of("auto", "highs", "scip", "cp-sat"),
                        "flows": _flag, "interleave": _flag, "deterministic": _flag,
                        "full_restore_lag": _non_neg_int},
    "cooperative-sticky": {"rounds": _one_of("settle"), "settle": _flag},
}


def check_options(assignor: str, options: dict[str, Any]) -> dict[str, Any]:
    """Check ``-O`` options against what ``assignor`` understands; return them with normalised values.

    Raises
    ------
    UsageError
        An unknown key (the known ones are listed) or a bad value (exit 2).
    """
    known = ASSIGNOR_OPTIONS.get(assignor, {})
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in known:
            listed = ", ".join(sorted(known)) if known else "none"
            raise UsageError(f"-O {key}: unknown option for {assignor!r} (its options: {listed})")
        try:
            out[key] = known[key](value)
        except ValueError as e:
            raise UsageError(f"-O {key}={json.dumps(value)}: {e}") from None
    return out


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


def unproven_note(name: str, res: Result) -> str | None:
    """One stderr line with the per-stage gaps of a solver result that is not proven optimal, else ``None``:
    every stage with its value, and for each open stage its bound and gap (numbers with thousands separators).

    Examples
    --------
    >>> from solver.result import Status
    >>> r = Result(None, Status.FEASIBLE, (2.0, 11), (2.0, 10), 1.0, {"stages": ["active_balance", "movement"]})
    >>> unproven_note("optimal-streams", r)
    'optimal-streams: not proven optimal: active_balance 2 (proven), movement 11 >= 10 (gap 9.09%)'
    """
    if res.status.value != "feasible" or not res.objective or len(res.bound) != len(res.objective):
        return None
    stages = list(res.extra.get("stages") or [f"stage {k + 1}" for k in range(len(res.objective))])

    from spark_runner.units import number

    def num(x: float) -> str:
        return number(x, digits=7)

    flags = res.extra.get("proven", res.extra.get("stage_proven"))
    proven = list(flags) if flags is not None else [b >= v for v, b in zip(res.objective, res.bound, strict=False)]
    parts = []
    for s, v, b, ok in zip(stages, res.objective, res.bound, proven, strict=False):
        if ok:
            parts.append(f"{s} {num(v)} (proven)")
        else:
            parts.append(f"{s} {num(v)} >= {num(b)} (gap {number(100 * (v - b) / max(abs(v), 1e-12), 3)}%)")
    return f"{name}: not proven optimal: " + ", ".join(parts)


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


# --------------------------------------------------------------------------- score


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "\n".join(map(str, v)) if v else "-"
    return str(v)
