"""``kassign sweep`` and ``kassign report``: Spark sweeps over generated scenarios, and their report."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from solver.errors import KassignError

stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class _Usage(KassignError):
    exit_code = 2


def _conf(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _Usage(f"--conf expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def register(app: typer.Typer) -> None:
    """Add ``sweep`` and ``report`` to the ``kassign`` app."""

    @app.command(short_help="Assignors vs the optimum over scenarios (Spark).")
    def sweep(
        grid: Annotated[Path, typer.Argument(help="Sweep grid (YAML): parameters x seeds x assignors.")],
        out: Annotated[Path, typer.Option("--out", help="Output directory (rows/ Parquet, report/).")],
        master: Annotated[str | None, typer.Option(help="Spark master URL (default local[*]).")] = None,
        overwrite: Annotated[bool, typer.Option(help="Start over instead of skipping finished scenarios.")] = False,
        partitions: Annotated[
            int | None, typer.Option(min=1, help="Spark tasks per batch (default: 4 per core).")] = None,
        batch_size: Annotated[
            int | None, typer.Option(min=1, help="Scenarios per Spark job; each is committed on its own.")] = None,
        conf: Annotated[
            list[str] | None, typer.Option("--conf", help="Extra Spark configuration KEY=VALUE (repeatable).")
        ] = None,
        report: Annotated[bool, typer.Option(help="Build the report when the rows are written.")] = True,
        dry_run: Annotated[bool, typer.Option(help="Validate the grid and show the pending work; no Spark.")] = False,
        progress_every: Annotated[
            float, typer.Option(min=0.1, help="Seconds between progress lines on stderr.")] = 5.0,
        kafka_version: Annotated[str | None, typer.Option(
            "--kafka-version", help="Kafka release the Kafka-named assignors follow (X.Y[.Z]; overrides the grid's "
                                    "kafka_version; default 4.4.0). An assignor listed as NAME@X.Y.Z follows its "
                                    "own.")] = None,
    ) -> None:
        """Evaluate assignors and the optimum over generated scenarios with Spark; Parquet rows + report."""
        from spark_runner.sweep.run import finished, plan, read_grid, run_sweep, with_kafka_version

        spark_conf = _conf(conf)
        g = read_grid(grid)  # every grid problem is reported here, before Spark starts (exit 65)
        if kafka_version is not None:
            g = with_kafka_version(g, kafka_version)
        if dry_run:
            todo = plan(g, finished(out))
            total = len(g.scenarios())
            steps = sum(w.params.steps + 1 for w in todo)
            stderr.print(f"{g.name}: {total} scenario(s), {len(g.points)} grid point(s) x {len(g.seeds)} seed(s); "
                         f"assignors {', '.join(g.evaluated)}; {len(todo)} pending "
                         f"(<= {steps} scenario-steps)", markup=False)
            return
        summary = run_sweep(g, out, master=master, overwrite=overwrite, partitions=partitions,
                            batch_size=batch_size, conf=spark_conf, progress_every=progress_every)
        if report and summary.rows_total:
            from spark_runner.sweep.report import build_report

            index = build_report(out, title=g.name)
            stderr.print(f"report: {index}", markup=False)

    @app.command("report", short_help="Rebuild a sweep's report from its rows.")
    def report_cmd(
        out: Annotated[Path, typer.Argument(help="A sweep output directory (with rows/).")],
        title: Annotated[str | None, typer.Option(help="Report title (default: the grid name).")] = None,
    ) -> None:
        """Rebuild DIR/report/ (index.html, summary.md, PNG plots) from the sweep's Parquet rows."""
        from spark_runner.sweep.report import build_report

        index = build_report(out, title=title)
        stderr.print(f"report: {index}", markup=False)
