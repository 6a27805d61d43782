"""``kassign compare FILE``: every assignor beside the optimum.

``compare FILE``: every registered assignor of the instance's protocol (or
``--assignors``) and the optimum on one instance; a table of metrics and gaps on
stdout (``--format table|tsv|md|json``, see :mod:`spark_runner.cli.tables`;
``--json`` = ``--format json``).  The work is
:func:`spark_runner.comparison.compare`; this module only renders it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from spark_runner.cli.common import KAFKA_VERSION_HELP, TIME_LIMIT_HELP, _params, one_instance, output_format
from spark_runner.cli.tables import FORMAT_HELP

if TYPE_CHECKING:
    from solver.model import Instance
    from solver.result import Params

#: The command's line in ``kassign --help`` (``compare``).
SHORT_HELP = "Every assignor beside the optimum; what to run."


def _releases(doc: dict[str, Any]) -> str:
    """``"; Kafka 4.3.1 rules"``: the releases the Kafka-named rows followed, when not the default one
    (``--json`` says it on every row)."""
    from solver.kafka_version import DEFAULT

    releases = sorted({r["kafka_version"] for r in doc["rows"] if r.get("kafka_version")})
    return f"; Kafka {', '.join(releases)} rules" if releases and releases != [str(DEFAULT)] else ""


def compare_rows(instance: Instance, names: list[str] | None, params: Params, err: Console | None = None,
                 settle: bool = True) -> dict[str, Any]:
    """The JSON document of :func:`spark_runner.comparison.compare`: ``{"instance", "protocol", "optimal", "rows"}``."""
    from spark_runner.comparison import compare as compare_fn

    def warn(name: str, msg: str) -> None:
        if err is not None:
            err.print(f"{name}: {msg}", markup=False)

    from spark_runner.cli.progress import progress

    # a large weighted group takes minutes (one CP-SAT run per row): a transient line on a terminal, a line
    # at a steady pace when stderr is piped
    with progress(err, "compare") as update:
        doc = compare_fn(instance, names, params, settle=settle, warn=warn, progress=update).to_json_dict()
    opt = doc["optimal"]
    if err is not None and opt.get("status") == "feasible":
        from solver.result import Result, Status
        from spark_runner.cli.common import unproven_note
        from spark_runner.comparison import REFERENCE

        note = unproven_note(REFERENCE.get(str(doc.get("protocol")), "optimal"),
                             Result(None, Status.FEASIBLE, tuple(opt["objective"]), tuple(opt["bound"]),
                                    extra={"stages": opt.get("stages"), "stage_proven": opt.get("stage_proven"),
                                           **{k: opt[k] for k in ("notes", "restricted") if k in opt}}), instance)
        if note:
            err.print(note, markup=False)
    return doc


def proof_words(opt: dict[str, Any]) -> str:
    """How sure the optimum's row is, per stage in its order (the first stages are the ones that matter):
    ``proven optimal``, or ``feasible, not proven: max_load gap 0.00007%, moves proven, ...``; a stage is proven
    as ``stage_proven`` says (value = bound without it).

    Examples
    --------
    >>> proof_words({"status": "optimal"})
    'proven optimal'
    >>> proof_words({"status": "feasible", "stages": ["active_balance", "total_balance", "cross_rack_traffic",
    ...     "restoration"], "objective": [2, 3, 200, 26141], "bound": [2, 3, 0, 26141]})
    'feasible, not proven: active_balance proven, total_balance proven, cross_rack_traffic gap 100%, restoration proven'
    """
    from spark_runner.units import number

    if opt.get("status") == "optimal":
        return "proven optimal"
    stages, obj, bnd = opt.get("stages") or [], opt.get("objective") or [], opt.get("bound") or []
    if not stages or len(stages) != len(obj) or len(obj) != len(bnd):
        gap = opt.get("gap")
        worst = "" if gap is None else f": worst stage gap {number(100 * float(gap), 3)}%"
        return f"{opt.get('status')}, not proven{worst}"
    flags = opt.get("stage_proven")
    if not isinstance(flags, list) or len(flags) != len(stages):
        flags = [None] * len(stages)
    parts = []
    for st, v, b, ok in zip(stages, obj, bnd, flags, strict=True):
        v, b = float(v), float(b)
        # the solver's own flag when it gives one (the table's marks and --json's not_proven read it too)
        if ok if ok is not None else (b >= v or abs(v - b) <= 1e-9 * max(1.0, abs(v))):
            parts.append(f"{st} proven")
        else:
            parts.append(f"{st} gap {number(100 * (v - b) / abs(v), 3) if v else '100'}%")
    return f"{opt.get('status')}, not proven: {', '.join(parts)}"


def compare(
    file: Annotated[
        Path, typer.Argument(help="One instance, either protocol (.json/.yaml, or a one-line .jsonl).")
    ],
    assignors: Annotated[
        str | None, typer.Option(help="Comma-separated assignors (default: every registered heuristic).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    time_limit: Annotated[float | None, typer.Option(help=TIME_LIMIT_HELP)] = None,
    seed: Annotated[
        int | None, typer.Option(help="Random seed (exact solvers then run deterministically).")
    ] = None,
    balance_tolerance: Annotated[
        float | None, typer.Option(help="Add a row: fewest moves with max load <= (1 + EPS) x the optimum.")
    ] = None,
    settle: Annotated[
        bool, typer.Option(help="Run cooperative assignors' follow-up rounds until settled (see `rounds`).")
    ] = True,
    fmt: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    kafka_version: Annotated[str | None, typer.Option("--kafka-version", help=KAFKA_VERSION_HELP)] = None,
) -> None:
    """Every assignor and the optimum side by side: metrics and gaps."""
    from solver.io import dumps
    from spark_runner.cli.tables import emit, render, terminal_width

    out_fmt = output_format(fmt, as_json)

    err = Console(stderr=True, highlight=False)
    # every value in range, before the input is read
    params = _params(time_limit, seed, None, {}, balance_tolerance, kafka_version)
    inst = one_instance(file)
    names = [a.strip() for a in assignors.split(",") if a.strip()] if assignors else None
    doc = compare_rows(inst, names, params, err, settle=settle)
    if out_fmt == "json":
        sys.stdout.write(dumps(doc) + "\n")
        return
    opt = doc["optimal"]
    from spark_runner.cli.compare_table import columns, marked_rows, notes, proof_legend, table_rows, verdict_line

    rows = table_rows(inst, doc)
    cols, cell = columns(inst, rows, opt.get("stages"))
    if out_fmt == "tsv":  # raw values under raw names: `wasted` (with its ">=" flag) is excess_moves
        from spark_runner.cli.tables import Column

        cols = [Column("excess_moves") if c.key == "wasted" else c for c in cols]
    width = terminal_width()
    proof = proof_words(opt)
    # a figure that is not proven carries a mark (tsv: raw values; --json: not_proven)
    shown = rows if out_fmt == "tsv" else marked_rows(rows)
    text = render(shown, cols, out_fmt, width=width, cell=cell,
                  title=f"{inst.name or file.name}: every assignor against the optimum ({proof}"
                        f"{_releases(doc)})")
    legend = proof_legend(opt, rows)
    if out_fmt == "md" and legend:  # the mark's meaning under the table (escaped: not a Markdown bullet)
        text += "\n\\" + legend + "\n"
    if out_fmt == "table":
        import textwrap

        for line in [*([legend] if legend else []), *notes(rows),
                     verdict_line(inst, rows, str(file), opt.get("stages"))]:
            # a word longer than the terminal (a setting's class name, a path) is never cut: copied from
            # the screen it must still work
            text += "\n".join(textwrap.wrap(line, width, break_on_hyphens=False, break_long_words=False)
                               if width else [line]) + "\n"
    emit(text)
