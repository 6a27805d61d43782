"""``kassign compare`` and ``kassign frontier``: heuristics beside the optimum.

``compare FILE``: every registered consumer assignor (or ``--assignors``) and the
optimum on one instance; a Rich table of metrics and gaps on stdout, or JSON
with ``--json``.

``frontier FILE``: the balance-movement Pareto frontier (for each movement
budget from 0 to the optimum's moves, the best balance), each heuristic placed
on it; JSON (``-o``) and a PNG plot (``--plot``).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

COLUMNS = ("status", "valid", "copartition_violations", "max_load", "sum_sq_load", "weighted_max_load", "moved",
           "moved_cost", "cross_rack", "max_load_gap", "sum_sq_gap", "excess_moves", "seconds")


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _one_instance(path: Path) -> Any:
    from spark_runner.cli.common import UsageError, _records

    recs = _records(path)
    if len(recs) != 1:
        raise UsageError(f"{path}: needs exactly one instance, the file has {len(recs)}")
    inst = recs[0].instance
    if inst.protocol != "consumer":
        raise UsageError(f"{path}: compare and frontier are for the consumer protocol")
    return inst


def _params(time_limit: float | None, seed: int | None, balance_tolerance: float | None = None) -> Any:
    from spark_runner.cli.common import _params as common_params

    return common_params(time_limit, seed, None, {}, balance_tolerance)


def compare_rows(instance: Any, names: list[str] | None, params: Any, err: Console | None = None) -> dict[str, Any]:
    """Run the optimum and every selected heuristic; return ``{"optimal": {...}, "rows": [...]}``.

    Each row has ``assignor``, ``status``, ``seconds``, every scorer metric and
    the gap metrics (``error`` instead when the assignor refused the input).
    """
    from solver.consumer.gaps import gap_metrics
    from solver.model.scoring import score
    from spark_runner.assignors import load_all
    from spark_runner.cli.common import unproven_line

    specs = {s.name: s for s in load_all() if s.protocol == "consumer"}
    if names is None:
        chosen = [n for n, s in specs.items() if s.kind == "heuristic"]
    else:
        from spark_runner.cli.common import UsageError

        unknown = [n for n in names if n not in specs]
        if unknown:
            raise UsageError(f"unknown consumer assignor(s): {', '.join(unknown)} (see `kassign list`)")
        chosen = [n for n in names if not n.startswith("optimal")]
    from solver.consumer.optimal import solve as solve_optimal

    tolerance = params.balance_tolerance
    opt = solve_optimal(instance, dataclasses.replace(params, balance_tolerance=None))
    if err is not None:
        line = unproven_line("optimal", opt)
        if line is not None:
            err.print(line, markup=False)
    opt_scores = score(instance, opt.assignment)
    rows: list[dict[str, Any]] = []
    base = {"assignor": "optimal", "status": opt.status.value, "seconds": round(opt.seconds, 4),
            "engine": opt.extra.get("engine"), **opt_scores}
    base.update(gap_metrics(instance, opt.assignment, opt, scores=opt_scores))
    rows.append(base)
    if tolerance is not None:
        # the tolerance result as its own row: fewest moves with max load <= (1 + EPS) x the optimum's
        tol = solve_optimal(instance, params)
        if err is not None:
            line = unproven_line(f"optimal (tolerance {tolerance:g})", tol)
            if line is not None:
                err.print(line, markup=False)
        tol_scores = score(instance, tol.assignment)
        row = {"assignor": f"optimal~{tolerance:g}", "status": tol.status.value, "seconds": round(tol.seconds, 4),
               "engine": tol.extra.get("engine"), **tol_scores}
        row.update(gap_metrics(instance, tol.assignment, opt, scores=tol_scores))
        rows.append(row)
    for name in chosen:
        try:
            res = specs[name].run(instance, params)
        except Exception as e:  # an assignor refusing an input is reported, not fatal
            if err is not None:
                err.print(f"{name}: {type(e).__name__}: {e}", markup=False)
            rows.append({"assignor": name, "error": f"{type(e).__name__}: {e}"})
            continue
        s = score(instance, res.assignment)
        row = {"assignor": name, "status": res.status.value, "seconds": round(res.seconds, 4), **s}
        row.update(gap_metrics(instance, res.assignment, opt, scores=s))
        rows.append(row)
    return {
        "instance": instance.name,
        "optimal": {"status": opt.status.value, "objective": list(opt.objective), "bound": list(opt.bound),
                    "stages": opt.extra.get("stages"), "engine": opt.extra.get("engine"),
                    "gap": opt.extra.get("gap"), "seconds": round(opt.seconds, 4)},
        "rows": rows,
    }


def register(app: typer.Typer) -> None:
    """Add ``compare`` and ``frontier`` to the ``kassign`` app."""

    @app.command()
    def compare(
        file: Annotated[Path, typer.Argument(help="One consumer instance (.json/.yaml, or a one-line .jsonl).")],
        assignors: Annotated[
            str | None, typer.Option(help="Comma-separated assignors (default: every registered heuristic).")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
        time_limit: Annotated[float | None, typer.Option(help="Seconds the optimal solver may use.")] = None,
        seed: Annotated[
            int | None, typer.Option(help="Random seed (exact solvers then run deterministically).")
        ] = None,
        balance_tolerance: Annotated[
            float | None, typer.Option(help="Add a row: fewest moves with max load <= (1 + EPS) x the optimum.")
        ] = None,
    ) -> None:
        """Every assignor and the optimum side by side: metrics and gaps."""
        from solver.io import dumps

        err = Console(stderr=True, highlight=False)
        inst = _one_instance(file)
        names = [a.strip() for a in assignors.split(",") if a.strip()] if assignors else None
        doc = compare_rows(inst, names, _params(time_limit, seed, balance_tolerance), err)
        if as_json:
            sys.stdout.write(dumps(doc) + "\n")
            return
        opt = doc["optimal"]
        table = Table(title=f"{inst.name or file.name}: assignors vs the optimum "
                            f"({opt['engine']}, {opt['status']}, gap {opt['gap']:.3g})")
        table.add_column("assignor")
        for c in COLUMNS:
            table.add_column(c, justify="right")
        for row in doc["rows"]:
            if "error" in row:
                table.add_row(row["assignor"], row["error"], *["-"] * (len(COLUMNS) - 1))
                continue
            table.add_row(row["assignor"], *[_fmt(row.get(c)) for c in COLUMNS])
        # wide enough for every column when stdout is a pipe or a file
        Console(highlight=False, width=None if sys.stdout.isatty() else 220).print(table)

    @app.command()
    def frontier(
        file: Annotated[Path, typer.Argument(help="One consumer instance.")],
        out: Annotated[
            Path | None, typer.Option("--output", "-o", help="Write the JSON here (default stdout).")
        ] = None,
        plot: Annotated[Path | None, typer.Option(help="Write a PNG plot here.")] = None,
        assignors: Annotated[
            str | None, typer.Option(help="Heuristics to place on the frontier (default: all).")
        ] = None,
        points: Annotated[int, typer.Option(help="At most this many budgets (evenly spaced, ends kept).")] = 60,
        time_limit: Annotated[float | None, typer.Option(help="Seconds per CP-SAT budget point.")] = None,
        seed: Annotated[
            int | None, typer.Option(help="Random seed (exact solvers then run deterministically).")
        ] = None,
    ) -> None:
        """Balance-movement Pareto frontier, with every heuristic placed on it."""
        from solver.consumer.frontier import compute_frontier, place, plot_frontier
        from solver.io import dumps, write_atomic
        from spark_runner.cli.common import UsageError

        if points < 2:
            raise UsageError("--points must be at least 2")
        err = Console(stderr=True, highlight=False)
        inst = _one_instance(file)
        params = _params(time_limit, seed)
        doc = compute_frontier(inst, params, max_points=points)
        open_pts = [p for p in doc["points"] if not p["proven"]]
        if open_pts:
            gaps = ", ".join(f"budget {p['budget']:g}: max load {p['max_load']:.6g} (bound {p['bound']:.6g})"
                             for p in open_pts[:5])
            more = f", +{len(open_pts) - 5} more" if len(open_pts) > 5 else ""
            err.print(f"frontier: {len(open_pts)} of {len(doc['points'])} points not proven -- {gaps}{more}",
                      markup=False)
        from spark_runner.assignors import load_all

        specs = [s for s in load_all() if s.protocol == "consumer" and s.kind == "heuristic"]
        if assignors:
            wanted = {a.strip() for a in assignors.split(",") if a.strip()}
            unknown = wanted - {s.name for s in specs}
            if unknown:
                raise UsageError(f"unknown consumer heuristic(s): {', '.join(sorted(unknown))}")
            specs = [s for s in specs if s.name in wanted]
        doc["heuristics"] = place(inst, doc, specs, params, err)
        text = dumps(doc) + "\n"
        if out is not None:
            write_atomic(out, text)
            err.print(f"wrote {out}", markup=False)
        else:
            sys.stdout.write(text)
        if plot is not None:
            plot_frontier(doc, plot)
            err.print(f"wrote {plot}", markup=False)
