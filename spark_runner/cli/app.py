"""The ``kassign`` command line (Typer + Rich).

Data goes to stdout (or ``-o``), progress and diagnostics to stderr.  Exit
codes: 0 success, 2 usage error, 65 invalid input data, 3 infeasible or no
solution within the limit, 1 internal error.

Further commands live in ``spark_runner/cli/commands/<name>.py``; each such module
defines ``register(app)`` and is picked up automatically.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import traceback
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from solver.errors import InstanceError, KassignError, Problem
from solver.io import Record, dumps, is_batch, iter_records, read_assignment, write_atomic
from solver.registry import UnknownAssignorError, UnsupportedInstanceError
from solver.result import Params
from spark_runner.assignors import get as get_assignor
from spark_runner.assignors import load_all
from spark_runner.cli.common import (
    EXIT_DATA,
    EXIT_INFEASIBLE,
    EXIT_INTERNAL,
    EXIT_USAGE,
    UsageError,
    _describe,
    _fmt,
    _params,
    _parse_options,
    _progress,
    _records,
    _run,
    stderr,
    stdout,
)
from spark_runner.cli.output import result_document

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


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="Instance files (.json, .yaml, .jsonl, .jsonl.gz).")],
) -> None:
    """Check instances; print every problem with its file and JSON path (exit 65 if any)."""
    bad = 0
    for f in files:
        good = 0
        for rec in iter_records(f):
            if isinstance(rec, InstanceError):
                bad += 1
                stderr.print(rec.render(), markup=False)
            else:
                good += 1
                if not is_batch(f):
                    stdout.print(f"{f}: valid ({_describe(rec)})", markup=False)
        if is_batch(f):
            stdout.print(f"{f}: {good} valid instances", markup=False)
    if bad:
        stderr.print(f"{bad} invalid instance(s)", markup=False)
        raise typer.Exit(EXIT_DATA)


# --------------------------------------------------------------------------- assign


@app.command()
def assign(
    file: Annotated[Path, typer.Argument(help="One instance (.json/.yaml) or many (.jsonl, .jsonl.gz).")],
    assignor: Annotated[str, typer.Option("--assignor", "-a", help="Assignor or solver name (see `kassign list`).")],
    out: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
    time_limit: Annotated[float | None, typer.Option(help="Seconds a solver may use.")] = None,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same result).")] = 0,
    objective: Annotated[
        str | None, typer.Option(help="Solver stage order, e.g. balance,moves,racks (see docs/cli.md).")
    ] = None,
    settle: Annotated[
        bool, typer.Option(help="Cooperative assignors: run follow-up rounds until stable, report the rounds.")
    ] = False,
    option: Annotated[
        list[str] | None, typer.Option("--option", "-O", help="Assignor option KEY=VALUE (repeatable).")
    ] = None,
) -> None:
    """Assign partitions with one assignor; writes the assignment JSON (JSON lines for a batch)."""
    opts = _parse_options(option)
    if settle:
        opts["rounds"] = "settle"
    params = _params(time_limit, seed, objective, opts)
    get_assignor(assignor)  # unknown names fail before any input is read
    records = _records(file)
    batch = is_batch(file)
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
        doc = result_document(rec.instance, name, res)
        if batch:
            doc = {"id": rec.id, "name": rec.instance.name, **doc}
        lines.append(dumps(doc) + "\n")
    return lines


@app.command()
def score(
    instance: Annotated[Path, typer.Argument(help="The instance (.json/.yaml).")],
    assignment: Annotated[Path, typer.Argument(help="An assignment document (output of `kassign assign`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
) -> None:
    """Every metric of an assignment (exit 0 also for an invalid assignment: see `valid`)."""
    from solver.model.scoring import score as score_fn

    if str(instance) == "-" and str(assignment) == "-":
        raise UsageError("score reads one of INSTANCE and ASSIGNMENT from stdin ('-'), not both")
    recs = _records(instance)
    if len(recs) != 1:
        raise UsageError(f"{instance}: score needs exactly one instance, the file has {len(recs)}")
    inst = recs[0].instance
    if inst.protocol == "streams":
        from solver.streams.format import read_streams_assignment

        asg: Any = read_streams_assignment(assignment, inst)
    else:
        asg = read_assignment(assignment)
    metrics = score_fn(inst, asg)
    if as_json:
        sys.stdout.write(dumps(metrics) + "\n")
        return
    table = Table(title=f"{inst.name or instance.name}: score of {assignment.name}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    for k, v in metrics.items():
        table.add_row(k, _fmt(v))
    stdout.print(table)


# --------------------------------------------------------------------------- list


@app.command("list")
def list_assignors(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Assignors and solvers available."""
    specs = load_all()
    if as_json:
        rows = [{"name": s.name, "kind": s.kind, "protocol": s.protocol, "summary": s.summary, "source": s.source}
                for s in specs]
        sys.stdout.write(dumps(rows) + "\n")
        return
    table = Table(title="kassign assignors and solvers")
    for col in ("name", "kind", "protocol", "summary", "source"):
        table.add_column(col)
    for s in specs:
        table.add_row(s.name, s.kind, s.protocol, s.summary, s.source)
    stdout.print(table)


# --------------------------------------------------------------------------- plug-in commands


def _load_commands() -> None:
    from spark_runner.cli import commands

    for mod in pkgutil.iter_modules(commands.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{commands.__name__}.{mod.name}").register(app)


_load_commands()


def main() -> None:
    """Console-script entry point: run the app and map errors to exit codes."""
    try:
        app()
    except InstanceError as e:
        stderr.print(e.render(), markup=False)
        sys.exit(EXIT_DATA)
    except UnknownAssignorError as e:
        stderr.print(f"error: {e.args[0]}", markup=False)
        sys.exit(EXIT_USAGE)
    except UnsupportedInstanceError as e:
        stderr.print(f"error: {e}", markup=False)
        sys.exit(EXIT_INFEASIBLE)
    except KassignError as e:
        stderr.print(f"error: {e}", markup=False)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        stderr.print("interrupted", markup=False)
        sys.exit(130)
    except Exception as e:  # internal error: short message, traceback on request
        if os.environ.get("KASSIGN_DEBUG"):
            traceback.print_exc()
        else:
            stderr.print(f"internal error: {type(e).__name__}: {e} (set KASSIGN_DEBUG=1 for a traceback)",
                         markup=False)
        sys.exit(EXIT_INTERNAL)


__all__ = ["Problem", "app", "main"]
