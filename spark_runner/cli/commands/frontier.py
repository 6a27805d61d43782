"""``kassign frontier FILE``: the balance-movement Pareto frontier, every heuristic placed on it.

For each movement budget up to the optimum's moves, the best balance (:func:`solver.frontier`); JSON (``-o``)
and a PNG plot (``--plot``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from spark_runner.cli.common import _params, one_instance

if TYPE_CHECKING:
    from solver.model import Instance

#: The command's line in ``kassign --help`` (``frontier``).
SHORT_HELP = "Balance-movement trade-off, assignors on it."


def frontier_notes(instance: Instance, doc: dict[str, Any]) -> list[str]:
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
    params = _params(time_limit, seed, None, {})
    inst = one_instance(file)
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
