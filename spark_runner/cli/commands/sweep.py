"""``kassign sweep``: Spark sweeps over generated scenarios (through :mod:`spark_runner.sweep.api`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from solver.errors import KassignError

stderr = Console(stderr=True, highlight=False, soft_wrap=True)

SHORT_HELP = "Assignors vs the optimum over scenarios (Spark)."


class _Usage(KassignError):
    exit_code = 2


#: Seconds a sweep gets, after Ctrl-C or SIGTERM, to cancel its Spark job and stop Spark.
SIGNAL_GRACE = 15.0
#: Seconds it gets while Spark is still starting: nothing to cancel or save, its JVM is ended (or follows the
#: driver out).
STARTING_GRACE = 2.0


_MASTER = re.compile(r"local(\[(\*|[1-9]\d{0,4})(,[1-9]\d{0,3})?\])?|(spark|k8s)://\S+|yarn")


def _master(master: str | None) -> str | None:
    """``--master`` must name a Spark master (``local[N]``, ``spark://``, ``k8s://``, ``yarn``): checked here, a
    typo would otherwise reach the JVM and come back as its stack trace."""
    if master is not None and not _MASTER.fullmatch(master.strip()):
        raise _Usage(f"--master {master!r}: expected local, local[N], local[*], local[N,F], spark://HOST:PORT, "
                     f"k8s://URL or yarn")
    return master


def _conf(pairs: list[str] | None) -> dict[str, str]:
    out = {}
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _Usage(f"--conf expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def sweep(
    grid: Annotated[Path, typer.Argument(help="Sweep grid (YAML): parameters x seeds x assignors.")],
    out_dir: Annotated[str, typer.Option("--out", help="Output directory (rows/ Parquet, report/).")],
    master: Annotated[str | None, typer.Option(help="Spark master URL (default local[*]).")] = None,
    overwrite: Annotated[bool, typer.Option(help="Start over instead of skipping finished scenarios.")] = False,
    partitions: Annotated[
        int | None, typer.Option(help="Spark tasks per batch (default: 4 per core).")] = None,
    batch_size: Annotated[
        int | None, typer.Option(help="Scenarios per Spark job; each is committed on its own.")] = None,
    conf: Annotated[
        list[str] | None, typer.Option("--conf", help="Extra Spark configuration KEY=VALUE (repeatable).")
    ] = None,
    report: Annotated[bool, typer.Option(help="Build the report when the rows are written.")] = True,
    dry_run: Annotated[bool, typer.Option(help="Validate the grid and show the pending work; no Spark.")] = False,
    progress_every: Annotated[
        float, typer.Option(help="Seconds between progress lines on stderr.")] = 5.0,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", help="Kafka release the Kafka-named assignors follow (X.Y[.Z]; overrides the grid's "
                                "kafka_version; default 4.4.0). An assignor listed as NAME@X.Y.Z follows its "
                                "own.")] = None,
) -> None:
    """Evaluate assignors and the optimum over generated scenarios with Spark; Parquet rows + report."""
    from spark_runner.cli import supervise
    from spark_runner.sweep import api

    if not out_dir.strip():
        raise _Usage("--out must name a directory (it is empty)")
    out = Path(out_dir)
    spark_conf = _conf(conf)
    _master(master)
    # the options, the output directory (exit 73) and the grid (exit 65) are checked by the api, before any work
    if dry_run:
        todo = api.pending(grid, out, overwrite=overwrite, partitions=partitions, batch_size=batch_size,
                           progress_every=progress_every, kafka_version=kafka_version)
        g = todo.grid
        stderr.print(f"{g.name}: {todo.scenarios} scenario(s), {len(g.points)} grid point(s) x {len(g.seeds)} "
                     f"seed(s); assignors {', '.join(g.evaluated)}; {todo.pending} pending "
                     f"(<= {todo.steps} scenario-steps)", markup=False)
        return

    # Ctrl-C cancels the Spark job and stops Spark: give it time to do so cleanly before exiting anyway;
    # while Spark is still starting there is nothing to cancel or save
    def note() -> str:
        if api.spark_starting():
            return (f"Spark was still starting, no batch had begun; committed batches stay under {out}/rows: "
                    f"run the same command again to resume")
        return (f"Spark did not stop within {SIGNAL_GRACE:g} s; committed batches stay under {out}/rows: run "
                f"the same command again to resume")

    supervise.set_grace(lambda: STARTING_GRACE if api.spark_starting() else SIGNAL_GRACE, note,
                        at_most=SIGNAL_GRACE,
                        killed_note=f"the sweep did not stop within {SIGNAL_GRACE:g} s; committed batches stay "
                                    f"under {out}/rows: run the same command again to resume")
    done = api.run_sweep(grid, out, master=master, report=report, overwrite=overwrite, partitions=partitions,
                         batch_size=batch_size, conf=spark_conf, progress_every=progress_every,
                         kafka_version=kafka_version)
    if done.report is not None:
        stderr.print(f"report: {done.report}", markup=False)
