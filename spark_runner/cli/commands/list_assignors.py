"""``kassign list``: the assignors and solvers available, with the Kafka releases each Kafka-named one follows."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from solver.io import dumps
from spark_runner.assignors import load_all
from spark_runner.cli.common import output_format
from spark_runner.cli.tables import FORMAT_HELP, Column, emit, render, terminal_width

#: The command's line in ``kassign --help`` (``list``).
SHORT_HELP = "Assignors and solvers available."


def list_assignors(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    fmt: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    versions: Annotated[bool, typer.Option(
        "--versions", help="One row per Kafka rule of each Kafka-named assignor: the releases it holds for.")] = False,
) -> None:
    """Assignors and solvers available (with the Kafka releases each Kafka-named assignor is modelled at)."""
    out_fmt = output_format(fmt, as_json)
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
