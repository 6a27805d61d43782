"""``kassign assign FILE -a NAME``: one assignor (or the optimum) on one instance or a batch; the assignment JSON."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from solver.io import Record, dumps, is_batch, write_atomic
from solver.registry import UnsupportedInstanceError
from solver.result import Params
from spark_runner.assignors import get as get_assignor
from spark_runner.cli.common import (
    KAFKA_VERSION_HELP,
    TIME_LIMIT_HELP,
    UsageError,
    _params,
    _parse_options,
    _progress,
    _records,
    _run,
    check_options,
    check_output,
    stderr,
    unproven_note,
)
from spark_runner.cli.output import result_document

#: The command's line in ``kassign --help`` (``assign``).
SHORT_HELP = "Assign with one assignor or the optimum."


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
