"""Running a sweep's pending scenarios on Spark, batch by batch.

Spark only parallelises the pure
:func:`spark_runner.sweep.evaluate.evaluate_scenario`: a DataFrame with one row
per pending scenario goes through ``mapInPandas`` and the rows are appended,
as Parquet partitioned by ``assignor``, under ``DIR/rows/``.

Why no row is lost or duplicated when an executor dies: each scenario is
evaluated by exactly one task; a task's output files are committed by Spark's
file output committer only when the task succeeds, and the job's output is
published at job commit; a failed or killed attempt leaves nothing behind and
Spark retries it (the function is deterministic, so the retry gives the same
rows).  Pending work is written in batches (one Spark job each), so an
interrupted sweep keeps every finished batch and a re-run with the same
``--out`` skips every (scenario, assignor) already present
(:mod:`spark_runner.sweep.store`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solver import runtime
from solver.errors import Interrupted
from spark_runner.sweep.grid import Grid, PendingScenario, plan
from spark_runner.sweep.rows import COLUMNS, ROW_SCHEMA
from spark_runner.sweep.session import cancel_jobs, master_label, start_spark
from spark_runner.sweep.store import (
    REPORT,
    ROWS,
    SPARK_LOG,
    check_grid,
    check_release,
    clear_uncommitted,
    count_rows,
    finished,
    output_failure,
    sweep_lock,
    write_manifest,
)

#: Environment hook for demonstrating fault tolerance: ``SCENARIO_ID[@MARKER_FILE]``; the
#: first attempt of the task evaluating that scenario writes the marker file (if given)
#: and raises, after it may already have produced rows (see docs/sweeps.md).
FAIL_ONCE_ENV = "KASSIGN_SWEEP_FAIL_ONCE"


def spark_schema() -> str:
    """The row schema as a Spark DDL string."""
    return ", ".join(f"`{n}` {t}" for n, t in ROW_SCHEMA)


def _task_fn(fail_once: str | None) -> Any:
    """The ``mapInPandas`` function; ``fail_once`` (``SCENARIO_ID[@MARKER]``) makes the first attempt raise."""

    target, _, marker = (fail_once or "").partition("@")

    def fn(batches: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd
        from pyspark import TaskContext

        from spark_runner.sweep.evaluate import evaluate_scenario

        for pdf in batches:
            for rec in pdf.itertuples(index=False):
                if target and rec.scenario_id == target:
                    ctx = TaskContext.get()
                    if ctx is not None and ctx.attemptNumber() == 0:
                        if marker:  # lets a test see that the failure really happened
                            Path(marker).write_text(f"stage {ctx.stageId()} partition {ctx.partitionId()}\n")
                        raise RuntimeError(f"injected failure of the first attempt for scenario {target}")
                limit = None if rec.time_limit is None or math.isnan(rec.time_limit) else float(rec.time_limit)
                rows = evaluate_scenario(json.loads(rec.params_json), int(rec.seed),
                                         json.loads(rec.evaluate), limit, kafka_version=rec.kafka_version or None)
                keep = set(json.loads(rec.write))
                yield pd.DataFrame([r for r in rows if r["assignor"] in keep], columns=list(COLUMNS))

    return fn


def _deal(work: Sequence[PendingScenario], slices: int) -> list[PendingScenario]:
    """Order work so that ``slices`` contiguous chunks have similar cost (largest first, dealt round robin)."""
    ranked = sorted(work, key=lambda w: -w.cost())
    buckets: list[list[PendingScenario]] = [[] for _ in range(slices)]
    for i, w in enumerate(ranked):
        buckets[i % slices].append(w)
    return [w for b in buckets for w in b]


class Progress:
    """Polls Spark's status tracker in a thread and prints progress lines to stderr."""

    def __init__(self, spark: Any, total: int, log: Any, every: float = 5.0) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.total = total
        self.log = log
        self.every = every
        self.done = 0
        self.batch = (0, 0, 0)  # (index, count, scenarios)
        self.t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Progress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            with contextlib.suppress(Exception):  # progress is best effort; never kill the sweep for it
                self.line()

    def line(self) -> None:
        tasks = done = running = failed = 0
        for sid in self.tracker.getActiveStageIds():
            info = self.tracker.getStageInfo(sid)
            if info is not None:
                tasks += info.numTasks
                done += info.numCompletedTasks
                running += info.numActiveTasks
                failed += info.numFailedTasks
        i, n, size = self.batch
        elapsed = _elapsed(time.monotonic() - self.t0)
        if not tasks:  # Spark has not started the batch's stage yet: no "tasks 0/0"
            self.log(f"[sweep] batch {i}/{n}: starting ({size} scenario(s)); scenarios {self.done}/{self.total} "
                     f"done; {elapsed}")
            return
        approx = self.done + int(done / tasks * size)
        self.log(f"[sweep] batch {i}/{n}: tasks {done}/{tasks} done, {running} running, {failed} failed; "
                 f"scenarios ~{approx}/{self.total}; {elapsed}")


def _elapsed(s: float) -> str:
    m, s = divmod(int(s), 60)
    return f"{m}m{s:02d}s" if m else f"{s}s"


@dataclass(frozen=True)
class SweepSummary:
    """What a sweep did."""

    scenarios: int
    skipped: int
    evaluated: int
    batches: int
    rows_total: int
    seconds: float
    out: Path


def run_sweep(
    grid: Grid,
    out: str | Path,
    *,
    master: str | None = None,
    overwrite: bool = False,
    partitions: int | None = None,
    batch_size: int | None = None,
    conf: Mapping[str, str] | None = None,
    spark: Any = None,
    fail_once: str | None = None,
    log: Any = None,
    progress_every: float = 5.0,
) -> SweepSummary:
    """Evaluate every pending scenario of ``grid`` with Spark and append the rows under ``out/rows``.

    The options are not checked here: :func:`spark_runner.sweep.api.run_sweep`, the entry point, checks them
    once, before any work.

    Parameters
    ----------
    grid
        A validated grid (:func:`read_grid`).
    out
        Output directory.
    master
        Spark master URL (``local[*]`` by default); ignored when ``spark`` is given.
    overwrite
        Delete ``out/rows`` and ``out/report`` first instead of resuming.
    partitions
        Spark tasks per batch (default: 4 per core, at most one per scenario).
    batch_size
        Scenarios per Spark job (default: ``max(100, 25 * cores)``); each batch
        is committed on its own, so an interrupted sweep keeps finished batches.
    conf
        Extra Spark configuration.
    spark
        An existing SparkSession to use (it is not stopped).
    fail_once
        Scenario id whose first task attempt raises (fault-tolerance demonstration);
        default: the ``KASSIGN_SWEEP_FAIL_ONCE`` environment variable.
    log
        ``log(str)`` for progress lines (stderr by default).
    """
    t0 = time.monotonic()
    out = Path(out)
    say = log or (lambda s: print(s, file=sys.stderr, flush=True))
    with sweep_lock(out):  # one sweep per output directory (a second one is refused, exit 75)
        if overwrite:
            for sub in (ROWS, REPORT):
                shutil.rmtree(out / sub, ignore_errors=True)
        if clear_uncommitted(out):
            say(f"[sweep] deleted the uncommitted output of an interrupted run under {out / ROWS}")
        scenarios = grid.scenarios()
        check_release(out, grid)
        done = finished(out)
        check_grid(out, grid, done)
        work = plan(grid, done)
        skipped = len(scenarios) - len(work)
        say(f"[sweep] {grid.name}: {len(scenarios)} scenario(s) x {len(grid.evaluated)} assignor(s) "
            f"({', '.join(grid.evaluated)}); {skipped} already done, {len(work)} to evaluate")
        fail = fail_once if fail_once is not None else os.environ.get(FAIL_ONCE_ENV) or None
        batches = 0
        if work:
            own = spark is None
            committed = [0]
            interrupted = False
            try:
                if own:
                    runtime.check()
                    say(f"[sweep] starting Spark ({master_label(master)}; its own log: {out / SPARK_LOG})")
                    spark = start_spark(master, conf, log_path=out / SPARK_LOG)
                batches = _run_batches(spark, work, out, partitions, batch_size, fail, say, progress_every,
                                       committed)
            except Interrupted as e:
                interrupted = True
                try:  # what is on disk: a batch committed just before the signal counts too
                    written = len(scenarios) - len(plan(grid, finished(out)))
                except Exception:  # unreadable now: what this run saw committed
                    written = skipped + committed[0]
                raise Interrupted(e.signum, interrupted_note(e.signum, out, written, len(scenarios),
                                                             starting=spark is None)) from None
            finally:
                if own:
                    with contextlib.suppress(Exception):  # a JVM that is already gone cannot be stopped
                        spark.stop()
                if interrupted:
                    # a cancelled job's abort races its killed tasks, which may still create attempt
                    # directories under rows/_temporary after the abort deleted it; nothing of it is kept
                    with contextlib.suppress(OSError):
                        clear_uncommitted(out)
        rows_total = count_rows(out)
        write_manifest(out, grid, len(scenarios), rows_total)
    secs = time.monotonic() - t0
    say(f"[sweep] done in {_elapsed(secs)}: {rows_total} row(s) under {out / ROWS}")
    return SweepSummary(len(scenarios), skipped, len(work), batches, rows_total, secs, out)


def interrupted_note(signum: int, out: Path, finished_scenarios: int, total: int, starting: bool = False) -> str:
    """What an interrupted sweep says: what was written, and how to finish it (``starting``: the signal came
    while Spark was starting, before any batch of this run)."""
    import signal as _signal

    name = _signal.Signals(signum).name
    what = ("Spark was still starting, no batch had begun" if starting
            else "every committed batch; the batch in progress was discarded")
    return (f"interrupted ({name}): {finished_scenarios} of {total} scenario(s) are written under {out / ROWS} "
            f"({what}); run the same command again to resume: finished scenarios are skipped")



def _run_batches(spark: Any, work: list[PendingScenario], out: Path, partitions: int | None, batch_size: int | None,
                 fail: str | None, say: Any, every: float, committed: list[int] | None = None) -> int:
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    cores = max(1, spark.sparkContext.defaultParallelism)
    size = batch_size or max(100, 25 * cores)
    chunks = [work[i:i + size] for i in range(0, len(work), size)]
    in_schema = StructType([
        StructField("scenario_id", StringType(), False),
        StructField("seed", LongType(), False),
        StructField("params_json", StringType(), False),
        StructField("evaluate", StringType(), False),
        StructField("write", StringType(), False),
        StructField("time_limit", DoubleType(), True),
        StructField("kafka_version", StringType(), True),
    ])
    fn = _task_fn(fail)
    schema = spark_schema()
    target = str((out / ROWS).resolve())
    with Progress(spark, sum(len(c) for c in chunks), say, every) as prog:
        for k, chunk in enumerate(chunks, 1):
            slices = max(1, min(len(chunk), partitions or 4 * cores))
            ordered = _deal(chunk, slices)
            data = [(w.scenario_id, w.seed, w.params.canonical_json(), json.dumps(list(w.evaluate)),
                     json.dumps(list(w.write)), w.time_limit, w.kafka_version) for w in ordered]
            prog.batch = (k, len(chunks), len(chunk))
            runtime.check()
            with runtime.stoppable(lambda: cancel_jobs(spark)):  # a signal cancels the job: nothing of it is committed
                df = spark.createDataFrame(spark.sparkContext.parallelize(data, slices), in_schema)
                rows = df.mapInPandas(fn, schema)
                try:
                    (rows.write.mode("append").partitionBy("assignor")
                     .option("compression", "zstd").parquet(target))
                except Exception as e:
                    output_failure(e, out)
                    raise
            prog.done += len(chunk)
            if committed is not None:
                committed[0] = prog.done
            say(f"[sweep] batch {k}/{len(chunks)} committed: {prog.done}/{prog.total} scenario(s)")
    return len(chunks)


#: OS errors that, named anywhere in a failed Spark write (a ``Py4JJavaError`` carries Java's text), make it a
