"""The ``kassign`` command line (Typer + Rich).

Data goes to stdout (or ``-o``), progress and diagnostics to stderr.  Exit
codes: 0 success, 2 usage error, 65 invalid input data, 66 a missing input file, 3 infeasible or no
solution within the limit, 1 internal error.

Further commands live in ``spark_runner/cli/commands/<name>.py``; each such module
defines ``register(app)`` and is picked up automatically.
"""

from __future__ import annotations

import errno
import importlib
import os
import pkgutil
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer

from solver.errors import InstanceError, KassignError, MissingFileError, Problem
from solver.io import Record, dumps, is_batch, iter_records, read_document, write_atomic
from solver.registry import UnknownAssignorError, UnsupportedInstanceError
from solver.result import Params
from spark_runner.assignors import get as get_assignor
from spark_runner.assignors import load_all
from spark_runner.cli.common import (
    EXIT_DATA,
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_NOINPUT,
    EXIT_USAGE,
    KAFKA_VERSION_HELP,
    TIME_LIMIT_HELP,
    UsageError,
    _describe,
    _params,
    _parse_options,
    _progress,
    _records,
    _run,
    check_kafka_version,
    check_options,
    check_output,
    stderr,
    stdout,
    unproven_note,
)
from spark_runner.cli.output import result_document
from spark_runner.cli.tables import FORMAT_HELP, Column, choose_format, emit, render, terminal_width

app = typer.Typer(
    name="kassign",
    help="Provably optimal Kafka partition and task assignments, and how far Kafka's own assignors are from them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("kassign")
        except PackageNotFoundError:
            v = "0+unknown"
        typer.echo(f"kassign {v}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """kassign: optimal Kafka assignments and heuristic gap scoring."""


# --------------------------------------------------------------------------- validate


@app.command(short_help="Check instances; every problem with its JSON path.")
def validate(
    files: Annotated[list[Path], typer.Argument(help="Instance files (.json, .yaml, .jsonl, .jsonl.gz).")],
) -> None:
    """Check instances; print every problem with its file and JSON path (exit 65 if any, 66 for a missing file)."""
    bad = missing = 0
    for f in files:
        good = 0
        absent = False
        for rec in iter_records(f):  # a missing file is one MissingFileError; a name too long, a loop: 65
            if isinstance(rec, MissingFileError):
                missing += 1
                absent = True
                stderr.print(rec.render(), markup=False)
            elif isinstance(rec, InstanceError):
                bad += 1
                stderr.print(rec.render(), markup=False)
            else:
                good += 1
                if not is_batch(f):
                    stdout.print(f"{f}: valid ({_describe(rec)})", markup=False)
        if is_batch(f) and not absent:
            stdout.print(f"{f}: {good} valid instances", markup=False)
    if bad:
        stderr.print(f"{bad} invalid instance(s)", markup=False)
    if missing or bad:
        raise typer.Exit(EXIT_NOINPUT if missing else EXIT_DATA)


# --------------------------------------------------------------------------- assign


@app.command(short_help="Assign with one assignor or the optimum.")
def assign(
    file: Annotated[Path, typer.Argument(help="One instance (.json/.yaml) or many (.jsonl, .jsonl.gz).")],
    assignor: Annotated[str, typer.Option("--assignor", "-a", help="Assignor or solver name (see `kassign list`).")],
    out: Annotated[str | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
    time_limit: Annotated[float | None, typer.Option(help=TIME_LIMIT_HELP)] = None,
    seed: Annotated[
        int | None, typer.Option(help="Random seed (same seed, same result; exact solvers then run deterministically).")
    ] = None,
    objective: Annotated[
        str | None, typer.Option(help="Solver stage order, e.g. balance,moves,racks (see docs/cli.md).")
    ] = None,
    balance_tolerance: Annotated[
        float | None, typer.Option(help="Optimal solver: fewest moves with max load <= (1 + EPS) x its optimum.")
    ] = None,
    settle: Annotated[
        bool, typer.Option(help="Cooperative assignors: run follow-up rounds until stable, report the rounds.")
    ] = False,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-O", help="Assignor option KEY=VALUE (repeatable).")
    ] = None,
    kafka_version: Annotated[str | None, typer.Option("--kafka-version", help=KAFKA_VERSION_HELP)] = None,
) -> None:
    """Assign partitions with one assignor; writes the assignment JSON (JSON lines for a batch)."""
    check_output(out)
    spec = get_assignor(assignor)  # unknown names fail before any input is read
    assignor = spec.name  # a Kafka class name (org.apache.kafka.clients.consumer.RangeAssignor) is the one it names
    opts = check_options(assignor, _parse_options(option))
    if settle:
        if opts.get("settle") is False:
            raise UsageError("--settle and -O settle=false contradict each other")
        opts["rounds"] = "settle"
    params = _params(time_limit, seed, objective, opts, balance_tolerance, kafka_version)  # in range, before work
    if kafka_version is not None:
        spec.rule(params)  # an assignor the release does not have fails before any input is read
    records = _records(file)
    batch = is_batch(file)
    for rec in records:  # a batch that mixes protocols fails before any work, naming the line
        if rec.instance.protocol != spec.protocol:
            raise UnsupportedInstanceError(f"{rec.source}: assignor {assignor!r} is for the {spec.protocol} "
                                           f"protocol, the instance uses {rec.instance.protocol!r}")
    lines = _assign_all(assignor, records, params, batch)
    if out is not None:
        write_atomic(out, "".join(lines))
        stderr.print(f"wrote {len(records)} assignment(s) to {out}", markup=False)
    else:
        for line in lines:
            sys.stdout.write(line)
        sys.stdout.flush()


def _assign_all(name: str, records: list[Record], params: Params, batch: bool) -> list[str]:
    lines = []
    for rec in _progress(records, f"assign ({name})", enabled=batch and len(records) > 1):
        res = _run(name, rec, params)
        note = unproven_note(name, res, rec.instance)
        if note:
            stderr.print(f"{rec.id}: {note}" if batch else note, markup=False)
        doc = result_document(rec.instance, name, res)
        if batch:
            doc = {"id": rec.id, "name": rec.instance.name, **doc}
        lines.append(dumps(doc) + "\n")
    return lines


@app.command(short_help="Every metric of an assignment, and its gaps.")
def score(
    instance: Annotated[Path, typer.Argument(help="The instance (.json/.yaml).")],
    assignment: Annotated[Path, typer.Argument(help="An assignment document (output of `kassign assign`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
    fmt: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    gaps: Annotated[bool, typer.Option("--gaps/--no-gaps", help="Solve the optimum and add the gap metrics "
                                       "(max_load_gap, sum_sq_gap, excess_moves; Streams: the three balance and "
                                       "restoration gaps). --no-gaps skips the solve.")] = True,
    time_limit: Annotated[float | None, typer.Option(help=TIME_LIMIT_HELP)] = None,
    optimum: Annotated[Path | None, typer.Option(
        "--optimum", help="The optimum to measure against (output of `kassign assign --assignor optimal`) "
                          "instead of solving it.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Solve again: neither read nor write the cache of "
                                           "optima and gaps (~/.cache/kassign, or $KASSIGN_CACHE_DIR).")] = False,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", help="The Kafka release the assignment follows (X.Y[.Z]): reported as `kafka_version`, "
                                "checked against the assignment's own stats.kafka_version.")] = None,
) -> None:
    """Every metric of an assignment, and its gaps to the optimum (exit 0 also for an invalid assignment).

    The optimum and the gaps are cached under the user's cache directory, keyed by the instance's content,
    the assignment's and the options: a second call on the same files answers at once.
    """
    from solver.api import score as score_fn

    if str(instance) == "-" and str(assignment) == "-":
        raise UsageError("score reads one of INSTANCE and ASSIGNMENT from stdin ('-'), not both")
    out_fmt = _format(fmt, as_json)
    params = _params(time_limit, 0, None, {})  # in range before any input is read
    recs = _records(instance)
    if len(recs) != 1:
        raise UsageError(f"{instance}: score needs exactly one instance, the file has {len(recs)}")
    inst = recs[0].instance
    from solver.resources import check_fits, instance_need

    check_fits(instance_need(inst, "score", "score"), str(instance))
    raw = read_document(assignment)  # read once: it may be stdin
    asg = _read_assignment(assignment, inst, raw)
    metrics = score_fn(inst, asg)
    release = _scored_release(raw, assignment, kafka_version, inst)
    if gaps:
        from rich.console import Console

        from spark_runner.cli.cache import Cache
        from spark_runner.cli.progress import progress

        # the optimum and the gaps can take minutes on a large group: said on stderr, piped or not
        with progress(Console(stderr=True, highlight=False), "score", "the optimum and the gaps"):
            metrics.update(_cached_gaps(inst, asg, metrics, params, optimum, None if no_cache else Cache()))
    if release is not None:
        metrics["kafka_version"] = release
    if out_fmt == "json":
        sys.stdout.write(dumps(metrics) + "\n")
        return
    from spark_runner.cli.compare_table import MARK, metric_rows

    unproven = list(metrics.pop("not_proven", None) or [])
    rows = metric_rows(inst, metrics)
    for r in rows:  # a figure that is not proven carries compare's mark; the line under the table says why
        if r["metric"] in unproven:
            r["value"] += MARK
    cols = [Column("metric", align="left"), Column("value"), Column("unit", align="left")]
    text = render(rows, cols, out_fmt, title=f"{inst.name or instance.name}: score of {assignment.name}",
                  width=terminal_width(), cell=lambda _k, v: str(v))
    if unproven and out_fmt in ("table", "md"):
        escape = "\\" if out_fmt == "md" else ""  # not a Markdown bullet
        text += (f"{escape}{MARK}: not proven -- measured against a stage of the optimum "
                 f"that is not proven, or a lower estimate (--json: not_proven: {', '.join(unproven)}).\n")
    emit(text)


def _scored_release(doc: Any, assignment: Path, flag: str | None, inst: Any) -> str | None:
    """The Kafka release the scored assignment (document ``doc``) followed: its ``stats.kafka_version``, else
    the flag or the instance's field; a flag that contradicts the document is a usage error (exit 2)."""
    from solver.kafka_version import KafkaVersion, KafkaVersionError

    check_kafka_version(flag)
    stats = doc.get("stats") if isinstance(doc, dict) else None
    stated = stats.get("kafka_version") if isinstance(stats, dict) else None
    if isinstance(stated, str):
        try:
            KafkaVersion.parse(stated)
        except KafkaVersionError:
            stated = None  # not a release kassign knows: the document says nothing usable
    if flag is not None and isinstance(stated, str) and KafkaVersion.parse(flag) != KafkaVersion.parse(stated):
        raise UsageError(f"--kafka-version {flag}: {assignment} was made following Kafka {stated}")
    if isinstance(stated, str):
        return stated
    chosen = flag or inst.kafka_version
    return str(KafkaVersion.parse(chosen)) if chosen is not None else None


def _read_assignment(path: Path, inst: Any, raw: Any = None) -> Any:
    """The assignment document ``path`` of ``inst`` (``raw``: its decoded content, when already read)."""
    from solver.io import parse_assignment

    doc = read_document(path) if raw is None else raw
    if inst.protocol == "streams":
        from solver.streams.format import parse_streams_assignment

        return parse_streams_assignment(doc, inst, str(path))
    return parse_assignment(doc, str(path))


def _optimum_result(inst: Any, path: Path) -> Any:
    """``--optimum FILE`` as a Result: its assignment (a valid one of ``inst``) and its checked ``stats``."""
    from spark_runner.cli.output import result_from_document

    doc = read_document(path)
    asg = _read_assignment(path, inst, doc)
    from solver.api import score as score_fn

    s = score_fn(inst, asg)
    if s.get("outcome") != "valid":
        raise InstanceError(str(path), [Problem("assignment", f"--optimum is not a valid assignment of the "
                                                              f"instance ({s.get('outcome')})")])
    return result_from_document(inst, doc, asg, str(path), trusted=False)


def _cached_gaps(inst: Any, asg: Any, metrics: dict[str, Any], params: Params, optimum: Path | None,
                 cache: Any) -> dict[str, Any]:
    """:func:`_gap_columns`, read from the cache when the same instance, assignment and options were scored."""
    from spark_runner.cli.cache import instance_key
    from spark_runner.cli.output import result_document

    parts: dict[str, Any] = {"instance": instance_key(inst), "time_limit": params.time_limit, "seed": params.seed}
    opt = None
    if optimum is not None:
        opt = _optimum_result(inst, optimum)
        parts["optimum"] = result_document(inst, "optimum", opt)["assignment"]
        parts["optimum_status"] = opt.status.value  # reported as optimal_status: part of the answer
    mine = asg.to_lists() if hasattr(asg, "to_lists") else asg.to_json_dict()
    gkey = cache.key("gaps", {**parts, "assignment": mine}) if cache is not None else ""
    okey = cache.key("optimum", parts) if cache is not None else ""
    if opt is None and cache is not None and (doc := cache.get(okey)) is not None:
        opt = _optimum_from_doc(inst, doc)
        if opt is None:
            cache.drop(okey)  # intact but not an optimum of this instance: a miss
    if cache is not None and opt is not None and isinstance(hit := cache.get(gkey), dict):
        held = _gaps_hold(inst, asg, metrics, opt, hit)
        if held is not None:
            return {**held, "not_proven": _not_proven(opt, held)}
        cache.drop(gkey)
    if opt is None:
        opt = get_assignor("optimal-streams" if inst.protocol == "streams" else "optimal").run(inst, params)
        if cache is not None:
            cache.put(okey, result_document(inst, "optimal", opt))
    g = _gap_columns(inst, asg, metrics, opt, params.time_limit)
    if cache is not None:
        cache.put(gkey, g)
    return {**g, "not_proven": _not_proven(opt, g)}


def _not_proven(opt: Any, gaps: dict[str, Any]) -> list[str]:
    """The gaps of ``gaps`` that are not proven, as ``compare`` says them: those measured against a stage of the
    optimum that is not proven (:func:`spark_runner.comparison.stage_proven`), and ``excess_moves`` when only a
    lower estimate."""
    from spark_runner.comparison import STAGE_FIGURES, stage_proven

    flags = stage_proven(opt) or []
    keys = [k for st, ok in zip(opt.extra.get("stages") or [], flags, strict=False) if not ok
            for k in STAGE_FIGURES.get(st, ((), ()))[1] if gaps.get(k) is not None]
    if gaps.get("excess_moves") is not None and gaps.get("excess_moves_proven") is False:
        keys.append("excess_moves")
    return keys


def _optimum_from_doc(inst: Any, doc: Any) -> Any:
    """The cached optimum ``doc`` of ``inst`` as a Result; ``None`` when it is not one (a miss).

    The checksum only says the entry is intact: the cached assignment is re-scored, must be valid, and the
    balance its ``objective`` states must be what the assignment has; the gaps are then measured from the
    assignment itself, so an edited ``objective`` can never make a gap.
    """
    import math

    from solver.api import score as score_fn
    from solver.errors import KassignError
    from spark_runner.cli.output import result_from_document

    try:
        asg = _read_assignment(Path("the cache"), inst, doc)
        stated = result_from_document(inst, doc, asg, "the cache", trusted=True)
        opt = result_from_document(inst, doc, asg, "the cache", trusted=False)  # measured from the assignment
        s = score_fn(inst, asg)
    except KassignError:
        return None
    if s.get("outcome") != "valid":
        return None
    stages = list(stated.extra.get("stages", ()))
    if len(stated.bound) == len(stated.objective) == len(stages):
        proven = stated.status.value == "optimal"
        for b, v in zip(stated.bound, stated.objective, strict=True):
            tol = 1e-9 * max(1.0, abs(v))
            if b > v + tol or (proven and b < v - tol):
                return None  # a bound above the value it bounds (stages are minimised), or "optimal" unproven
    if inst.protocol != "streams":
        from solver.consumer.gaps import member_loads

        loads = member_loads(inst, asg)
        measured = {"max_load": float(loads.max(initial=0.0)), "sum_sq": float((loads**2).sum())}
        for name, value in measured.items():
            if name in stages and not math.isclose(float(stated.objective[stages.index(name)]), value,
                                                   rel_tol=1e-9, abs_tol=1e-9):
                return None  # the objective it states is not its assignment's
    return opt


def _gaps_hold(inst: Any, asg: Any, metrics: dict[str, Any], opt: Any, hit: dict[str, Any]) -> dict[str, Any] | None:
    """A cached gaps entry ``hit`` re-checked against the optimum ``opt``: every gap the optimum gives at once
    must be the same, the rest (the fewest moves, a solve) in range; ``None`` when it does not hold (a miss)."""
    import math

    if inst.protocol == "streams":
        fresh = _gap_columns(inst, asg, metrics, opt)  # every Streams gap is a difference of scores
        return fresh if hit == fresh else None
    from solver.gaps import balance_gaps, defined_gaps

    quick = defined_gaps(metrics, lambda: balance_gaps(inst, asg, opt, metrics))
    if set(hit) != {*quick, "optimal_status"} or hit["optimal_status"] != opt.status.value:
        return None
    for k in ("max_load_gap", "sum_sq_gap"):
        if hit[k] != quick[k]:
            return None
    moves, proven = hit.get("excess_moves"), hit.get("excess_moves_proven")
    if not isinstance(proven, bool) and proven is not None:
        return None
    if moves is not None:
        if isinstance(moves, bool) or not isinstance(moves, (int, float)) or not math.isfinite(moves):
            return None
        if not 0 <= moves <= float(metrics.get("moved_cost") or 0) + 1e-9 or metrics.get("outcome") != "valid":
            return None
    return {**hit, **{k: quick[k] for k in ("max_load_gap", "sum_sq_gap")}}


def _gap_columns(inst: Any, asg: Any, metrics: dict[str, Any], opt: Any,
                 time_limit: float | None = None) -> dict[str, Any]:
    """The gap metrics of ``asg`` against the optimum ``opt`` of ``inst``, with the optimum's status.

    Gaps are defined for a ``valid`` outcome only (:func:`solver.gaps.defined_gaps`).
    Consumer: ``max_load_gap``, ``sum_sq_gap``, ``excess_moves``, ``excess_moves_proven`` (``excess_moves``
    is also ``None`` when no valid assignment is as balanced as this one).
    Streams: ``active_balance_gap``, ``total_balance_gap``, ``restoration_gap`` against ``optimal-streams``.
    """
    from solver.gaps import gaps

    g = gaps(inst, asg, opt, scores=metrics, time_limit=time_limit or 10.0)
    g.pop("balance_optimal", None)  # a sweep's column; score says the gaps themselves
    return {**g, "optimal_status": opt.status.value}


def _format(fmt: str | None, as_json: bool) -> str:
    try:
        return choose_format(fmt, as_json)
    except ValueError as e:
        raise UsageError(str(e)) from None


# --------------------------------------------------------------------------- list


@app.command("list", short_help="Assignors and solvers available.")
def list_assignors(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    fmt: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    versions: Annotated[bool, typer.Option(
        "--versions", help="One row per Kafka rule of each Kafka-named assignor: the releases it holds for.")] = False,
) -> None:
    """Assignors and solvers available (with the Kafka releases each Kafka-named assignor is modelled at)."""
    out_fmt = _format(fmt, as_json)
    specs = load_all()
    if versions:
        from heuristics.versions import checked

        vrows = [{"name": s.name, "releases": first if first == last else f"{first}-{last}", "rule": rule,
                  "checked": checked(s.name, first, last)}
                 for s in specs if s.versions is not None for first, last, rule in s.versions.table()]
        if out_fmt == "json":
            sys.stdout.write(dumps(vrows) + "\n")
            return
        vcols = [Column("name", align="left"), Column("releases", align="left"),
                 Column("rule", align="left", wrap=True), Column("checked", align="left", wrap=True)]
        emit(render(vrows, vcols, out_fmt, title="Kafka releases of the Kafka-named assignors (checked: against "
                    "Kafka's released classes, random cases per release, all exact)",
                    width=terminal_width()))
        return
    rows: list[dict[str, Any]] = [{"name": s.name, "kind": s.kind, "protocol": s.protocol,
             "kafka": f"{s.versions.since}+" if s.versions is not None else "-",
             "summary": s.summary, "source": s.source} for s in specs]
    if out_fmt == "json":
        for r, s in zip(rows, specs, strict=True):
            r["kafka"] = None if s.versions is None else [
                {"from": a, "to": b, "rule": rule} for a, b, rule in s.versions.table()]
        sys.stdout.write(dumps(rows) + "\n")
        return
    cols = [Column("name", align="left"), Column("kind", align="left"), Column("protocol", align="left"),
            Column("kafka", align="left"), Column("summary", align="left", wrap=True),
            Column("source", align="left", wrap=True)]
    emit(render(rows, cols, out_fmt, title="kassign assignors and solvers (kafka: releases modelled)",
                width=terminal_width()))


# --------------------------------------------------------------------------- plug-in commands


def _load_commands() -> None:
    from spark_runner.cli import commands

    for mod in pkgutil.iter_modules(commands.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{commands.__name__}.{mod.name}").register(app)


_load_commands()


def main() -> None:
    """Console-script entry point: run the app under the supervisor (signals, stdout) and exit with its code."""
    from spark_runner.cli import supervise

    sys.exit(supervise.run(_main, _say))


def _say(line: str) -> None:
    """One diagnostic line on stderr, plainly: it must work when nothing else does (no memory left)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:  # stderr itself is gone: nothing left to tell
        pass


def _main() -> int:
    """Run the app; map every error to its documented exit code (docs/cli.md) and a one-line message."""
    from solver.errors import Interrupted
    from spark_runner.cli.supervise import StdoutError

    try:
        _check_environment()
        app()
        return 0
    except SystemExit as e:  # Typer's own exit (help, usage errors, typer.Exit)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USAGE)
    except (StdoutError, Interrupted):
        raise  # the supervisor's
    except InstanceError as e:  # 65 invalid data, 66 a missing file
        _say(e.render())
        return e.exit_code
    except UnknownAssignorError as e:
        _say(f"error: {e.args[0]}")
        return EXIT_USAGE
    except UnsupportedInstanceError as e:
        _say(f"error: {e}")
        return EXIT_INFEASIBLE
    except KassignError as e:  # usage 2, infeasible 3, output 73/74, busy 75 ...
        _say(f"error: {e}")
        return e.exit_code
    except MemoryError:  # an estimate that fell short: the documented refusal, not a crash
        return out_of_memory(_say)
    except ImportError as e:  # a library that cannot be mapped under an address-space limit is the same
        if "failed to map segment" not in str(e) and "Cannot allocate memory" not in str(e):
            raise
        return out_of_memory(_say, str(e))
    except OSError as e:
        if e.errno != errno.ENOMEM:  # the system refused memory (an import listing a folder, a thread, mmap)
            return _internal(e)
        return out_of_memory(_say, str(e))
    except SystemError as e:  # a C extension that failed to allocate and returned without an exception
        from solver.resources import memory_limited

        if not memory_limited():
            return _internal(e)
        return out_of_memory(_say, str(e))
    except Exception as e:  # internal error: short message, traceback on request
        return _internal(e)


def _internal(e: BaseException) -> int:
    """An internal error: a short message, the traceback with ``KASSIGN_DEBUG=1``; exit 1."""
    if os.environ.get("KASSIGN_DEBUG"):
        traceback.print_exception(e)
    else:
        _say(f"internal error: {type(e).__name__}: {e} (set KASSIGN_DEBUG=1 for a traceback)")
    return EXIT_INTERNAL


def out_of_memory(say: Any, detail: str = "") -> int:
    """Say that the run needs more memory than it may use; return the documented code (65)."""
    from solver.resources import MEMORY_ENV, available_memory, human

    try:
        avail = f" ({human(available_memory())} is available)"
    except Exception:  # the limit itself may be what is wrong
        avail = ""
    more = f": {detail}" if detail else ""
    say(f"error: out of memory{avail}{more}; the input is too large for this machine or its limits (ulimit -v, "
        f"the cgroup, {MEMORY_ENV}); nothing was written")
    # out now: the interpreter's clean-up after a half-loaded library can crash (SIGSEGV) on the way out
    from solver import runtime

    runtime.remove_temps()
    os._exit(EXIT_DATA)


def _check_environment() -> None:
    """The environment variables kassign reads, checked before any work (a bad value is a usage error)."""
    from solver.model.files import input_limit
    from solver.resources import available_memory, limit_arenas

    available_memory()  # KASSIGN_MEMORY_LIMIT
    input_limit()  # KASSIGN_INPUT_LIMIT
    limit_arenas()  # before any solver thread exists


__all__ = ["Problem", "app", "main"]
