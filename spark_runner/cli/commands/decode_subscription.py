"""``kassign decode-subscription``: captured Kafka Streams subscription bytes -> a Streams instance.

One file per consumer (stream thread), raw bytes or base64 text.  Threads of
one client share a process id; they become one client whose ``capacity`` is
the number of its threads.  See :mod:`solver.streams.subscription_info` for the layouts.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

_B64 = re.compile(rb"[A-Za-z0-9+/=_\-\s]+")


def read_subscription_bytes(path: Path, encoding: str = "auto") -> bytes:
    """The subscription bytes in ``path``: ``binary``, ``base64`` or ``auto`` (base64 when the file is base64 text).

    Raw subscriptions start with a big-endian version int (``00 00 00 0v``),
    whose zero bytes are never base64 text, so ``auto`` cannot confuse them.
    """
    from solver.errors import InstanceError, Problem
    from solver.model.files import read_bytes

    raw = read_bytes(path)  # bounded by the input limit; a missing file is exit 66
    if encoding == "binary" or (encoding == "auto" and not _B64.fullmatch(raw)):
        return raw
    try:
        text = b"".join(raw.split())
        alt = b"-_" if (b"-" in text or b"_" in text) else None
        return base64.b64decode(text + b"=" * (-len(text) % 4), altchars=alt, validate=True)
    except (binascii.Error, ValueError) as e:
        raise InstanceError(str(path), [Problem("", f"not valid base64: {e}")]) from None


def _load_json(path: Path, what: str) -> Any:
    from solver.errors import InstanceError, Problem
    from solver.io import read_document

    try:
        return read_document(path)
    except InstanceError:
        raise
    except Exception as e:  # pragma: no cover - read_document reports its own errors
        raise InstanceError(str(path), [Problem("", f"cannot read {what}: {e}")]) from None


def _end_offsets(path: Path) -> dict[str, int]:
    """The ``--end-offsets`` file: ``{task id: end offset sum}``, each a Java long >= 0."""
    from solver.errors import InstanceError, Problem, json_path
    from solver.streams.model import parse_task_id

    doc = _load_json(path, "end offsets")
    if not isinstance(doc, dict):
        raise InstanceError(str(path), [Problem("", "expected an object {task id: end offset sum}")])
    problems = []
    for task, end in doc.items():
        try:
            parse_task_id(task)
        except ValueError as e:
            problems.append(Problem(json_path((task,)), str(e)))
        if isinstance(end, bool) or not isinstance(end, int) or not 0 <= end <= 2**63 - 1:
            problems.append(Problem(json_path((task,)), f"end offset sum must be an integer 0..2^63-1, got {end!r}"))
    if problems:
        raise InstanceError(str(path), problems)
    return doc


def _task_spec(path: Path) -> tuple[list[Any] | None, list[Any] | None]:
    """The ``--tasks`` file: ``{"tasks": [...]}``, ``{"subtopologies": [...]}`` or a bare task list.

    Validated on its own (errors name this file and the JSON path inside it).
    """
    from solver.errors import InstanceError, Problem
    from solver.io import parse_instance

    doc = _load_json(path, "tasks")
    if isinstance(doc, dict) and ("subtopologies" in doc or "tasks" in doc):
        key = "subtopologies" if "subtopologies" in doc else "tasks"
        body, prefix = doc[key], key
    elif isinstance(doc, list):
        key, body, prefix = "tasks", doc, ""
    else:
        raise InstanceError(str(path), [Problem("", "expected 'tasks' or 'subtopologies' (or a list of tasks)")])
    probe = {"format": "kassign/v1", "protocol": "streams", key: body}
    try:
        parse_instance(probe, str(path))
    except InstanceError as e:
        # paths are relative to the probe document; a bare list has no 'tasks' key in the file
        fixed = [Problem(p.path[len("tasks"):] if not prefix and p.path.startswith("tasks") else p.path, p.message)
                 for p in e.problems]
        raise InstanceError(str(path), fixed) from None
    return (body, None) if key == "tasks" else (None, body)


#: The command's line in ``kassign --help`` (``decode-subscription``).
SHORT_HELP = "Decode Streams SubscriptionInfo bytes."


def decode_subscription(
    files: Annotated[list[Path], typer.Argument(help="Subscription bytes, one file per consumer (thread).")],
    encoding: Annotated[str, typer.Option(help="auto, base64 or binary.")] = "auto",
    layout: Annotated[str, typer.Option(help="kafka (v1-v11), kip441-draft (seed v5) or kip262.")] = "kafka",
    kind: Annotated[str, typer.Option(
        help="streams: the files hold Streams SubscriptionInfo bytes; consumer: consumer-protocol "
             "subscriptions (a Streams member's SubscriptionInfo is their user data).")] = "streams",
    fields: Annotated[bool, typer.Option(
        "--fields", help="Print what Kafka's decoder reads from each file, one JSON line per file.")] = False,
    tasks: Annotated[
        Path | None, typer.Option(help="JSON/YAML with the app's 'tasks' or 'subtopologies' (default: "
                                       "every task a client reports, stateful).")] = None,
    end_offsets: Annotated[
        Path | None, typer.Option(help="JSON {task id: end offset sum}: turns v7+ offset sums into lags.")
    ] = None,
    num_standby_replicas: Annotated[int | None, typer.Option(help="config.num_standby_replicas")] = None,
    acceptable_recovery_lag: Annotated[int | None, typer.Option(help="config.acceptable_recovery_lag")] = None,
    max_warmup_replicas: Annotated[int | None, typer.Option(help="config.max_warmup_replicas")] = None,
    name: Annotated[str, typer.Option(help="Instance name.")] = "",
    output: Annotated[str | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
) -> None:
    """Decode Kafka Streams SubscriptionInfo bytes into a Streams instance (JSON), or print their fields."""
    from solver.consumer.protocol import consumer_fields, decode_consumer_subscription
    from solver.errors import InstanceError, KassignError, Problem
    from solver.io import parse_instance, write_atomic
    from solver.streams.subscription_info import (
        LAYOUTS,
        SubscriptionDecodeError,
        decode,
        streams_fields,
        subscriptions_to_instance,
    )

    class _Usage(KassignError):
        exit_code = 2

    if layout not in LAYOUTS:
        raise _Usage(f"--layout must be one of {', '.join(LAYOUTS)}")
    if encoding not in ("auto", "base64", "binary"):
        raise _Usage("--encoding must be auto, base64 or binary")
    if kind not in ("streams", "consumer"):
        raise _Usage("--kind must be streams or consumer")
    if fields and layout != "kafka":
        raise _Usage("--fields reads Kafka's own layouts: use it with --layout kafka")
    from solver.model.files import check_output_path
    from solver.options import (
        ACCEPTABLE_RECOVERY_LAG,
        MAX_WARMUP_REPLICAS,
        NUM_STANDBY_REPLICAS,
        check_optional,
        check_text,
    )

    check_text("--name", name)
    check_optional(NUM_STANDBY_REPLICAS, num_standby_replicas)
    check_optional(ACCEPTABLE_RECOVERY_LAG, acceptable_recovery_lag)
    check_optional(MAX_WARMUP_REPLICAS, max_warmup_replicas)
    check_output_path(output)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    if fields:
        lines = []
        for f in files:
            data = read_subscription_bytes(f, encoding)
            try:
                doc = consumer_fields(data) if kind == "consumer" else streams_fields(data)
            except SubscriptionDecodeError as e:
                raise InstanceError(str(f), [Problem("", str(e))]) from None
            lines.append(json.dumps(doc) + "\n")
        if output is not None:
            write_atomic(output, "".join(lines))
        else:
            sys.stdout.write("".join(lines))
        return
    infos = []
    for f in files:
        data = read_subscription_bytes(f, encoding)
        try:
            if kind == "consumer":
                user_data = decode_consumer_subscription(data).user_data
                if user_data is None:
                    raise SubscriptionDecodeError("byte 0: the subscription carries no user data "
                                                  "(not a Kafka Streams member)")
                try:
                    infos.append(decode(user_data, layout))  # type: ignore[arg-type]
                except SubscriptionDecodeError as e:
                    raise SubscriptionDecodeError(f"user data {e}") from None
            else:
                infos.append(decode(data, layout))  # type: ignore[arg-type]
        except SubscriptionDecodeError as e:
            raise InstanceError(str(f), [Problem("", str(e))]) from None
    task_list, subtopologies = _task_spec(tasks) if tasks is not None else (None, None)
    offsets = _end_offsets(end_offsets) if end_offsets is not None else None
    config: dict[str, Any] = {}
    for key, val in (("num_standby_replicas", num_standby_replicas),
                     ("acceptable_recovery_lag", acceptable_recovery_lag),
                     ("max_warmup_replicas", max_warmup_replicas)):
        if val is not None:
            config[key] = val
    try:
        inst_doc = subscriptions_to_instance(infos, tasks=task_list, end_offsets=offsets, config=config,
                                             name=name)
    except ValueError as e:
        raise InstanceError(str(files[0]), [Problem("", str(e))]) from None
    if subtopologies is not None:
        del inst_doc["tasks"]
        inst_doc["subtopologies"] = subtopologies
    parse_instance(inst_doc, "decoded subscriptions")  # every problem with its path, exit 65
    text = json.dumps(inst_doc, indent=2) + "\n"
    versions = sorted({i.version for i in infos})
    err.print(f"decoded {len(infos)} subscription(s) (version {', '.join(map(str, versions))}) into "
              f"{len(inst_doc['clients'])} client(s)", markup=False)
    unknown = sum(lag is None for c in inst_doc["clients"] for lag in c["lags"].values())
    if unknown:
        why = "no --end-offsets given" if offsets is None else "v1-v6 subscriptions or tasks without an end offset"
        err.print(f"warning: {unknown} lag(s) unknown ({why}): written as null, not as caught up",
                  markup=False)
    if output is not None:
        write_atomic(output, text)
    else:
        sys.stdout.write(text)
