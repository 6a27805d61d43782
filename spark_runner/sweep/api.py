"""``spark_runner.run_sweep``: a sweep from Python, as ``kassign sweep`` runs it.

:func:`run_sweep` takes a grid (a YAML file, its decoded mapping, or a parsed
:class:`~spark_runner.sweep.run.Grid`), evaluates every pending scenario on
Spark (:func:`spark_runner.sweep.run.run_sweep`) and builds the report
(:func:`spark_runner.sweep.report.build_report`).  Spark and pyspark are only
imported when there is work to do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from spark_runner.sweep.run import Grid, SweepSummary


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


def run_sweep(grid: str | Path | Mapping[str, Any] | Grid, out: str | Path, master: str = "local[*]", *,
              report: bool = True, overwrite: bool = False, partitions: int | None = None,
              batch_size: int | None = None, conf: Mapping[str, str] | None = None, spark: Any = None,
              log: Callable[[str], None] | None = None) -> Sweep:
    """Evaluate every assignor of a grid and the optimum over its generated scenarios with Spark.

    Parameters
    ----------
    grid
        A sweep grid (docs/sweeps.md): a YAML/JSON file, its decoded mapping, or
        a parsed :class:`~spark_runner.sweep.run.Grid`.
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

    Returns
    -------
    Sweep

    Raises
    ------
    solver.errors.InstanceError
        For a grid with problems (each with its path), before Spark starts.
    """
    from spark_runner.sweep.run import parse_grid, read_grid
    from spark_runner.sweep.run import run_sweep as run

    if isinstance(grid, Grid):
        g = grid
    elif isinstance(grid, Mapping):
        g = parse_grid(dict(grid))
    else:
        g = read_grid(grid)
    summary = run(g, out, master=master, overwrite=overwrite, partitions=partitions, batch_size=batch_size,
                  conf=conf, spark=spark, log=log)
    index: Path | None = None
    if report and summary.rows_total:
        from solver.model.files import drawing, transaction
        from spark_runner.sweep.report import build_report

        with transaction(), drawing(Path(out) / "report"):  # every report file, or none
            index = build_report(out, title=g.name)
    return Sweep(summary, index)


__all__ = ["Sweep", "run_sweep"]
