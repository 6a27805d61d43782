"""``kassign compare`` and ``kassign frontier``: heuristics beside the optimum.

``compare FILE``: every registered assignor of the instance's protocol (or
``--assignors``) and the optimum on one instance; a table of metrics and gaps on
stdout (``--format table|tsv|md|json``, see :mod:`spark_runner.cli.tables`;
``--json`` = ``--format json``).  The work is
:func:`spark_runner.comparison.compare`; this module only renders it.

``frontier FILE``: the balance-movement Pareto frontier (for each movement
budget up to the optimum's moves, the best balance; :func:`solver.frontier`),
each heuristic placed on it; JSON (``-o``) and a PNG plot (``--plot``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from spark_runner.cli.common import KAFKA_VERSION_HELP, TIME_LIMIT_HELP
from spark_runner.cli.tables import FORMAT_HELP


def _one_instance(path: Path) -> Any:
    from spark_runner.cli.common import UsageError, _records

    recs = _records(path)
    if len(recs) != 1:
        raise UsageError(f"{path}: needs exactly one instance, the file has {len(recs)}")
    inst = recs[0].instance
    from solver.resources import check_fits, instance_need

    check_fits(instance_need(inst, "solver", "the optimal solver"), str(path))  # before anything is built
    return inst


def _params(time_limit: float | None, seed: int | None, balance_tolerance: float | None = None,
            kafka_version: str | None = None) -> Any:
    from spark_runner.cli.common import _params as common_params

    return common_params(time_limit, seed, None, {}, balance_tolerance, kafka_version)


def _releases(doc: dict[str, Any]) -> str:
    """``"; Kafka 4.3.1 rules"``: the releases the Kafka-named rows followed, when not the default one
    (``--json`` says it on every row)."""
    from solver.kafka_version import DEFAULT

    releases = sorted({r["kafka_version"] for r in doc["rows"] if r.get("kafka_version")})
    return f"; Kafka {', '.join(releases)} rules" if releases and releases != [str(DEFAULT)] else ""


def compare_rows(instance: Any, names: list[str] | None, params: Any, err: Console | None = None,
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


def frontier_notes(instance: Any, doc: dict[str, Any]) -> list[str]:
    """The stderr lines of a frontier: budgets left out, points not proven; figures in the instance's units.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 1},
    ...                        "units": {"weights": "bytes/s", "move_costs": "bytes"}})
    >>> doc = {"unsolved_budgets": [8488220000.0], "points": [
    ...     {"budget": 1.7e10, "max_load": 18_400_000.0, "bound": 18_000_000.0, "proven": False}]}
    >>> left, unproven = frontier_notes(inst, doc)
    >>> left[-71:]
    'at 1 budget(s) (8.488 GB); those points are left out (unsolved_budgets)'
    >>> print(unproven)
    frontier: 1 of 1 points not proven -- budget 17 GB: max load 18.4 MB/s (bound 18 MB/s)
    """
    from spark_runner.units import Scale, instance_units

    units = instance_units(instance)
    pts = doc["points"]
    moved = Scale.for_values([*doc.get("unsolved_budgets", []), *(p["budget"] for p in pts)],
                             None if units["move_costs"] == "move_costs" else units["move_costs"])
    load = Scale.for_values([p["max_load"] for p in pts if "max_load" in p],
                            None if units["weights"] == "weight" else units["weights"])
    lines = []
    if doc.get("unsolved_budgets"):
        left = doc["unsolved_budgets"]
        lines.append(f"frontier: no assignment within the budget found in the time limit at {len(left)} budget(s) "
                     f"({', '.join(moved.with_unit(b) for b in left[:5])}{', ...' if len(left) > 5 else ''}); "
                     "those points are left out (unsolved_budgets)")
    open_pts = [p for p in pts if not p.get("proven", True)]
    if open_pts and "bound" in open_pts[0]:
        gaps = ", ".join(f"budget {moved.with_unit(p['budget'])}: max load {load.with_unit(p['max_load'])} "
                         f"(bound {load.with_unit(p['bound'])})" for p in open_pts[:5])
        more = f", +{len(open_pts) - 5} more" if len(open_pts) > 5 else ""
        lines.append(f"frontier: {len(open_pts)} of {len(pts)} points not proven -- {gaps}{more}")
    return lines


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


def register(app: typer.Typer) -> None:
    """Add ``compare`` and ``frontier`` to the ``kassign`` app."""

    @app.command(short_help="Every assignor beside the optimum; what to run.")
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
        from spark_runner.cli.common import UsageError
        from spark_runner.cli.tables import choose_format, emit, render, terminal_width

        try:
            out_fmt = choose_format(fmt, as_json)
        except ValueError as e:
            raise UsageError(str(e)) from None

        err = Console(stderr=True, highlight=False)
        # every value in range, before the input is read
        params = _params(time_limit, seed, balance_tolerance, kafka_version)
        inst = _one_instance(file)
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

    @app.command(short_help="Balance-movement trade-off, assignors on it.")
    def frontier(
        file: Annotated[Path, typer.Argument(help="One instance, either protocol.")],
        out: Annotated[
            str | None, typer.Option("--output", "-o", help="Write the JSON here (default stdout).")
        ] = None,
        plot: Annotated[str | None, typer.Option(help="Write a PNG plot here (.png, .svg or .pdf).")] = None,
        assignors: Annotated[
            str | None, typer.Option(help="Heuristics to place on the frontier (default: all).")
        ] = None,
        points: Annotated[int, typer.Option(help="At most this many budgets (evenly spaced, ends kept).")] = 60,
        time_limit: Annotated[float | None, typer.Option(help="Seconds per CP-SAT budget point (default: 10).")] = None,
        seed: Annotated[
            int | None, typer.Option(help="Random seed (exact solvers then run deterministically).")
        ] = None,
    ) -> None:
        """Balance-movement Pareto frontier, with every heuristic placed on it."""
        from solver.api import frontier as frontier_fn
        from solver.io import dumps, write_atomic
        from solver.model.files import (
            check_distinct_outputs,
            check_output_path,
            check_plot_path,
            drawing,
            transaction,
        )
        from solver.options import FRONTIER_POINTS
        from spark_runner.comparison import heuristic_params, select

        FRONTIER_POINTS.check(points)
        check_output_path(out)
        check_plot_path(plot)
        check_distinct_outputs(("--output", out), ("--plot", plot))
        err = Console(stderr=True, highlight=False)
        params = _params(time_limit, seed)
        inst = _one_instance(file)
        names = [a.strip() for a in assignors.split(",") if a.strip()] if assignors else None
        specs = select(inst.protocol, names)  # unknown names fail before the frontier is computed
        from spark_runner.cli.progress import progress

        with progress(err, "frontier", "the optimum's moves (the last budget)") as update:
            doc = frontier_fn(inst, params, max_points=points, progress=update)
        for line in frontier_notes(inst, doc):
            err.print(line, markup=False)
        # cooperative assignors are placed where they settle, as in `compare`
        if inst.protocol == "streams":
            from solver.streams.frontier import place_streams, plot_streams_frontier

            doc["heuristics"] = place_streams(inst, doc, specs, heuristic_params(params), err)
            plot_fn = plot_streams_frontier
        else:
            from solver.consumer.frontier import place, plot_frontier

            doc["heuristics"] = place(inst, doc, specs, heuristic_params(params), err)
            plot_fn = plot_frontier
        text = dumps(doc) + "\n"
        with transaction():  # the JSON and the plot are published together, or neither
            if out is not None:
                write_atomic(out, text)
            if plot is not None:
                with drawing(plot):
                    plot_fn(doc, plot)
        if out is not None:
            err.print(f"wrote {out}", markup=False)
        else:
            sys.stdout.write(text)
        if plot is not None:
            err.print(f"wrote {plot}", markup=False)
