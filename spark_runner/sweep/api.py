"""The sweep's front door: ``spark_runner.run_sweep``, and what ``kassign sweep`` and ``kassign report`` call.

:func:`run_sweep` takes a grid (a YAML file, its decoded mapping, or a parsed
:class:`~spark_runner.sweep.grid.Grid`), evaluates every pending scenario on
Spark (:func:`spark_runner.sweep.batches.run_sweep`) and builds the report
(:func:`build_report`); :func:`pending` says what it would do, running nothing.
Both check their options, the output directory and the grid once, in that
order, before any work.  Spark and pyspark are only imported when there is
work to do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_runner.sweep.batches import SweepSummary
from spark_runner.sweep.grid import Grid
from spark_runner.sweep.session import spark_starting


@dataclass(frozen=True)
class Sweep:
    """What :func:`run_sweep` did.

    Attributes
    ----------
    summary
        Scenarios seen, skipped (already done), evaluated; Spark batches; rows
        under ``out/rows``; seconds.
    report
        ``out/report/index.html``, or ``None`` when no report was built (no
        rows, or ``report=False``).
    """

    summary: SweepSummary
    report: Path | None


@dataclass(frozen=True)
class Pending:
    """What :func:`run_sweep` would do (``kassign sweep --dry-run``); nothing was run.

    Attributes
    ----------
    grid
        The validated grid (with ``kafka_version`` applied).
    scenarios
        Distinct scenarios of the grid.
    pending
        Scenarios with rows missing under ``out/rows`` (all of them with ``overwrite``).
    steps
        At most this many scenario-steps to evaluate.
    """

    grid: Grid
    scenarios: int
    pending: int
    steps: int


def _prepare(grid: str | Path | Mapping[str, Any] | Grid, out: Path, partitions: int | None,
             batch_size: int | None, progress_every: float, kafka_version: str | None) -> Grid:
    """Check the options, then the output directory, then the grid: each problem before any work."""
    from solver.model.files import check_output_dir
    from solver.options import PROGRESS_EVERY, SWEEP_BATCH_SIZE, SWEEP_PARTITIONS, check_optional
    from spark_runner.sweep.grid import parse_grid, read_grid, with_kafka_version

    check_optional(SWEEP_PARTITIONS, partitions)
    check_optional(SWEEP_BATCH_SIZE, batch_size)
    PROGRESS_EVERY.check(progress_every)
    check_output_dir(out)  # a file, a link loop, a name too long, unwritable: exit 73 before any work
    if isinstance(grid, Grid):
        g = grid
    elif isinstance(grid, Mapping):
        g = parse_grid(dict(grid))
    else:
        g = read_grid(grid)  # every grid problem is reported here, before Spark starts (exit 65)
    return g if kafka_version is None else with_kafka_version(g, kafka_version)


def pending(grid: str | Path | Mapping[str, Any] | Grid, out: str | Path, *, overwrite: bool = False,
            partitions: int | None = None, batch_size: int | None = None, progress_every: float = 5.0,
            kafka_version: str | None = None) -> Pending:
    """What :func:`run_sweep` with the same arguments would evaluate; Spark is not started.

    Parameters
    ----------
    grid, out, overwrite, partitions, batch_size, progress_every, kafka_version
        As for :func:`run_sweep` (the options are checked as it checks them).

    Returns
    -------
    Pending

    Raises
    ------
    solver.errors.InstanceError
        For a grid with problems (each with its path).
    """
    from spark_runner.sweep.grid import plan
    from spark_runner.sweep.store import check_grid, check_release, finished

    out = Path(out)
    g = _prepare(grid, out, partitions, batch_size, progress_every, kafka_version)
    done: set[tuple[str, str]] = set()
    if not overwrite:  # overwrite would delete the rows: everything is pending
        check_release(out, g)
        done = finished(out)
        check_grid(out, g, done)
    todo = plan(g, done)
    return Pending(g, len(g.scenarios()), len(todo), sum(w.params.steps + 1 for w in todo))


def run_sweep(grid: str | Path | Mapping[str, Any] | Grid, out: str | Path, master: str | None = "local[*]", *,
              report: bool = True, overwrite: bool = False, partitions: int | None = None,
              batch_size: int | None = None, conf: Mapping[str, str] | None = None, spark: Any = None,
              log: Callable[[str], None] | None = None, progress_every: float = 5.0,
              kafka_version: str | None = None) -> Sweep:
    """Evaluate every assignor of a grid and the optimum over its generated scenarios with Spark.

    Parameters
    ----------
    grid
        A sweep grid (docs/sweeps.md): a YAML/JSON file, its decoded mapping, or
        a parsed :class:`~spark_runner.sweep.grid.Grid`.
    out
        Output directory: Parquet rows under ``out/rows`` (a rerun resumes:
        finished scenarios are skipped), the report under ``out/report``.
    master
        Spark master URL (``local[*]``, ``local[2]``, ``spark://host:7077``).
    report
        Build the report when rows were written.
    overwrite
        Start over instead of resuming.
    partitions, batch_size, conf
        Spark tasks per batch, scenarios per Spark job, extra Spark configuration.
    spark
        An existing SparkSession to use (not stopped afterwards).
    log
        ``log(line)`` for progress (default: stderr).
    progress_every
        Seconds between progress lines.
    kafka_version
        The Kafka release the Kafka-named assignors follow, overriding the grid's ``kafka_version``.

    Returns
    -------
    Sweep

    Raises
    ------
    solver.errors.InstanceError
        For a grid with problems (each with its path), before Spark starts.
    """
    from spark_runner.sweep.batches import run_sweep as run

    g = _prepare(grid, Path(out), partitions, batch_size, progress_every, kafka_version)
    summary = run(g, out, master=master, overwrite=overwrite, partitions=partitions, batch_size=batch_size,
                  conf=conf, spark=spark, log=log, progress_every=progress_every)
    index = build_report(out, title=g.name) if report and summary.rows_total else None
    return Sweep(summary, index)


def build_report(out: str | Path, title: str | None = None) -> Path:
    """(Re)build ``out/report/`` from the sweep's rows: every report file, or none.

    Parameters
    ----------
    out
        A sweep output directory (with ``rows/``).
    title
        Report title (default: the grid name).

    Returns
    -------
    Path
        ``out/report/index.html``.
    """
    from solver.model.files import drawing, transaction
    from spark_runner.sweep.report import build_report as build

    with transaction(), drawing(Path(out) / "report"):  # every report file, or none
        return build(out, title=title)


__all__ = ["Pending", "Sweep", "build_report", "pending", "run_sweep", "spark_starting"]
