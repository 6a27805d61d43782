"""``kassign capture``: a live consumer group or Kafka Streams application as a ``kassign/v1`` instance.

Read-only: the command never joins the group or commits.  The whole capture
runs under a hard deadline (``--timeout`` plus ``--sample``), so an
unresponsive cluster ends in a one-line error (exit 75), never a hang.  See
docs/capture.md for where each field comes from and docs/cli.md for the exit
codes (66 unknown or empty group, 69 unreachable or unsupported, 75 timeout,
77 not authorised).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from pathlib import Path
from typing import Annotated, Any

import typer

#: Seconds the hard deadline adds to --timeout + --sample (connection set-up and close).
GRACE = 5.0


def _api_version(text: str | None) -> tuple[int, ...] | None:
    from spark_runner.cli.common import UsageError

    if text is None:
        return None
    try:
        parts = tuple(int(x) for x in text.split("."))
    except ValueError:
        raise UsageError(f"--api-version expects a version such as 2.3, got {text!r}") from None
    if not 1 < len(parts) <= 3:
        raise UsageError(f"--api-version expects a version such as 2.3, got {text!r}")
    return parts


def _changelogs(path: Path | None) -> dict[str, list[str]] | None:
    from solver.errors import InstanceError, Problem
    from solver.io import read_document

    if path is None:
        return None
    doc = read_document(path)
    ok = isinstance(doc, dict) and all(isinstance(v, list) and all(isinstance(t, str) for t in v)
                                       for v in doc.values())
    if not ok:
        raise InstanceError(str(path), [Problem("", "expected {\"<subtopology>\": [\"<changelog topic>\", ...]}")])
    return {str(k): list(v) for k, v in doc.items()}


def run_with_deadline(fn: Any, seconds: float) -> Any:
    """Run ``fn()`` in a daemon thread; its result, its exception, or a timeout error after ``seconds``."""
    from spark_runner.live.broker import CaptureTimeout

    box: list[Any] = []

    def work() -> None:
        try:
            box.append((True, fn()))
        except BaseException as e:  # handed to the caller's thread
            box.append((False, e))

    worker = threading.Thread(target=work, name="kassign-capture", daemon=True)
    worker.start()
    worker.join(seconds)
    if not box:
        raise CaptureTimeout(f"no result within {seconds:g} s (the cluster stopped answering); nothing written")
    ok, value = box[0]
    if not ok:
        raise value
    return value


_SCALAR_LIST = re.compile(r"\[\s+([^\[\]{}]*?)\s+\]")


def readable_json(doc: Any) -> str:
    """Indented JSON with lists of scalars on one line (partition lists, weights)."""
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    return _SCALAR_LIST.sub(lambda m: "[" + re.sub(r",\s+", ", ", m.group(1)) + "]", text) + "\n"


def current_assignment(doc: dict[str, Any]) -> dict[str, Any]:
    """Today's assignment of a captured consumer instance, as an assignment document for ``kassign score``."""
    members = {m["id"]: {t: sorted(ps) for t, ps in sorted(m.get("owned", {}).items())}
               for m in sorted(doc["members"], key=lambda m: m["id"])}
    return {"format": "kassign/v1", "assignor": doc.get("source", {}).get("assignor") or "current",
            "assignment": members}


#: The command's line in ``kassign --help`` (``capture``).
SHORT_HELP = "A live group as an instance (read-only)."


def capture(
    bootstrap_server: Annotated[str, typer.Option("--bootstrap-server", help="HOST:PORT[,HOST:PORT...]")],
    group: Annotated[str, typer.Option("--group", help="Consumer group (or Streams application.id).")],
    weights: Annotated[str, typer.Option(help="Partition weights: none, lag (end - committed offset) or "
                                               "rate (growth over --sample seconds).")] = "none",
    sample: Annotated[float, typer.Option(help="Seconds to sample for --weights rate.")] = 5.0,
    command_config: Annotated[
        Path | None, typer.Option("--command-config", help="Kafka client properties (security.protocol, "
                                                            "sasl.*, ssl.*), as kafka-consumer-groups.sh.")
    ] = None,
    changelogs: Annotated[
        Path | None, typer.Option(help="Streams: JSON {subtopology: [changelog topics]} to turn task offset "
                                       "sums into lags.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds the capture may take (besides --sample).")] = 30.0,
    api_version: Annotated[
        str | None, typer.Option(help="Assume this broker version (e.g. 2.3) instead of asking the broker.")
    ] = None,
    current: Annotated[
        str | None, typer.Option(help="Also write the group's current assignment here (for kassign score).")
    ] = None,
    output: Annotated[str | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
) -> None:
    """Capture a live group (read-only) as a kassign/v1 instance: members, subscriptions, owned partitions, lags."""
    from solver.errors import InstanceError
    from solver.io import dumps, parse_instance, write_atomic
    from solver.model.files import check_distinct_outputs, check_output_path, transaction
    from solver.options import CAPTURE_SAMPLE, CAPTURE_TIMEOUT, check_text
    from spark_runner.cli.common import UsageError, stderr
    from spark_runner.live.broker import CaptureError, check_bootstrap, read_client_config
    from spark_runner.live.capture import capture as capture_group

    bootstrap_server = check_bootstrap(bootstrap_server)
    if weights not in ("none", "lag", "rate"):
        raise UsageError("--weights must be none, lag or rate")
    CAPTURE_SAMPLE.check(sample)
    CAPTURE_TIMEOUT.check(timeout)
    check_output_path(output)
    check_output_path(current, "--current")
    check_distinct_outputs(("--output", output), ("--current", current))
    if not group:
        raise UsageError("--group must not be empty")
    check_text("--group", group)
    version = _api_version(api_version)
    config: dict[str, Any] = {}
    if command_config is not None:
        config, ignored = read_client_config(command_config)
        if ignored:
            stderr.print(f"{command_config}: ignored (no meaning for a read-only capture): {', '.join(ignored)}",
                         markup=False)
    logs = _changelogs(changelogs)

    def progress(msg: str) -> None:
        stderr.print(f"capture: {msg}", markup=False)

    budget = timeout + (sample if weights == "rate" else 0.0) + GRACE
    doc = run_with_deadline(
        lambda: capture_group(bootstrap_server, group, weights=weights, sample=sample,  # type: ignore[arg-type]
                              config=config, timeout=timeout, changelogs=logs, api_version=version,
                              progress=progress),
        budget)
    try:
        inst = parse_instance(doc, f"capture of {group!r}")  # what we write must be a valid instance
    except InstanceError as e:  # broker data an instance cannot represent: the group cannot be captured (69)
        first = e.problems[0] if e.problems else None
        where = f"{first.path}: " if first is not None and first.path else ""
        why = f"{where}{first.message}" if first is not None else str(e)
        more = f" (and {len(e.problems) - 1} more)" if len(e.problems) > 1 else ""
        raise CaptureError(f"group {group!r} cannot be captured: the broker reports what an instance cannot "
                           f"hold ({why}{more})") from None
    text = readable_json(doc)
    if current is not None and inst.protocol != "consumer":
        raise UsageError("--current is for consumer groups (a Streams capture carries its tasks itself)")
    with transaction():  # the instance and today's assignment are published together, or neither
        if current is not None:
            write_atomic(current, dumps(current_assignment(doc)) + "\n")
        if output is not None:
            write_atomic(output, text)
    if output is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    what = (f"{len(doc['clients'])} Streams client(s)" if inst.protocol == "streams"
            else f"{len(doc['members'])} member(s), {len(doc['topics'])} topic(s)")
    stderr.print(f"captured group {group!r} ({doc['source']['assignor'] or 'no protocol'}): {what}",
                 markup=False)
