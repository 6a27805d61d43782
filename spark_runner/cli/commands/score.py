"""``kassign score INSTANCE ASSIGNMENT``: every metric of an assignment, and its gaps to the optimum.

The gaps are :func:`solver.gaps.gaps`; the optimum and the gaps are cached (:func:`spark_runner.cli.cache.cached_gaps`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from solver.io import dumps, read_document
from spark_runner.cli.common import TIME_LIMIT_HELP, UsageError, _params, _records, check_kafka_version, output_format
from spark_runner.cli.output import read_assignment
from spark_runner.cli.tables import FORMAT_HELP, Column, emit, render, terminal_width

if TYPE_CHECKING:
    from solver.model import Instance

#: The command's line in ``kassign --help`` (``score``).
SHORT_HELP = "Every metric of an assignment, and its gaps."


def score(
    instance: Annotated[Path, typer.Argument(help="The instance (.json/.yaml).")],
    assignment: Annotated[Path, typer.Argument(help="An assignment document (output of `kassign assign`).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the metrics as JSON.")] = False,
    fmt: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP)] = None,
    gaps: Annotated[bool, typer.Option("--gaps/--no-gaps", help="Solve the optimum and add the gap metrics "
                                       "(max_load_gap, sum_sq_gap, excess_moves; Streams: the three balance and "
                                       "restoration gaps). --no-gaps skips the solve.")] = True,
    time_limit: Annotated[float | None, typer.Option(help=TIME_LIMIT_HELP)] = None,
    optimum: Annotated[Path | None, typer.Option(
        "--optimum", help="The optimum to measure against (output of `kassign assign --assignor optimal`) "
                          "instead of solving it.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Solve again: neither read nor write the cache of "
                                           "optima and gaps (~/.cache/kassign, or $KASSIGN_CACHE_DIR).")] = False,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", help="The Kafka release the assignment follows (X.Y[.Z]): reported as `kafka_version`, "
                                "checked against the assignment's own stats.kafka_version.")] = None,
) -> None:
    """Every metric of an assignment, and its gaps to the optimum (exit 0 also for an invalid assignment).

    The optimum and the gaps are cached under the user's cache directory, keyed by the instance's content,
    the assignment's and the options: a second call on the same files answers at once.
    """
    from solver.api import score as score_fn

    if str(instance) == "-" and str(assignment) == "-":
        raise UsageError("score reads one of INSTANCE and ASSIGNMENT from stdin ('-'), not both")
    out_fmt = output_format(fmt, as_json)
    params = _params(time_limit, 0, None, {})  # in range before any input is read
    recs = _records(instance)
    if len(recs) != 1:
        raise UsageError(f"{instance}: score needs exactly one instance, the file has {len(recs)}")
    inst = recs[0].instance
    from solver.resources import check_fits, instance_need

    check_fits(instance_need(inst, "score", "score"), str(instance))
    raw = read_document(assignment)  # read once: it may be stdin
    asg = read_assignment(assignment, inst, raw)
    metrics = score_fn(inst, asg)
    release = _scored_release(raw, assignment, kafka_version, inst)
    if gaps:
        from rich.console import Console

        from spark_runner.cli.cache import Cache, cached_gaps
        from spark_runner.cli.progress import progress

        # the optimum and the gaps can take minutes on a large group: said on stderr, piped or not
        with progress(Console(stderr=True, highlight=False), "score", "the optimum and the gaps"):
            metrics.update(cached_gaps(inst, asg, metrics, params, optimum, None if no_cache else Cache()))
    if release is not None:
        metrics["kafka_version"] = release
    if out_fmt == "json":
        sys.stdout.write(dumps(metrics) + "\n")
        return
    from spark_runner.cli.compare_table import MARK, metric_rows

    unproven = list(metrics.pop("not_proven", None) or [])
    rows = metric_rows(inst, metrics)
    for r in rows:  # a figure that is not proven carries compare's mark; the line under the table says why
        if r["metric"] in unproven:
            r["value"] += MARK
    cols = [Column("metric", align="left"), Column("value"), Column("unit", align="left")]
    text = render(rows, cols, out_fmt, title=f"{inst.name or instance.name}: score of {assignment.name}",
                  width=terminal_width(), cell=lambda _k, v: str(v))
    if unproven and out_fmt in ("table", "md"):
        escape = "\\" if out_fmt == "md" else ""  # not a Markdown bullet
        text += (f"{escape}{MARK}: not proven -- measured against a stage of the optimum "
                 f"that is not proven, or a lower estimate (--json: not_proven: {', '.join(unproven)}).\n")
    emit(text)


def _scored_release(doc: Any, assignment: Path, flag: str | None, inst: Instance) -> str | None:
    """The Kafka release the scored assignment (document ``doc``) followed: its ``stats.kafka_version``, else
    the flag or the instance's field; a flag that contradicts the document is a usage error (exit 2)."""
    from solver.kafka_version import KafkaVersion, KafkaVersionError

    check_kafka_version(flag)
    stats = doc.get("stats") if isinstance(doc, dict) else None
    stated = stats.get("kafka_version") if isinstance(stats, dict) else None
    if isinstance(stated, str):
        try:
            KafkaVersion.parse(stated)
        except KafkaVersionError:
            stated = None  # not a release kassign knows: the document says nothing usable
    if flag is not None and isinstance(stated, str) and KafkaVersion.parse(flag) != KafkaVersion.parse(stated):
        raise UsageError(f"--kafka-version {flag}: {assignment} was made following Kafka {stated}")
    if isinstance(stated, str):
        return stated
    chosen = flag or inst.kafka_version
    return str(KafkaVersion.parse(chosen)) if chosen is not None else None
