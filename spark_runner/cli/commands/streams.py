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
    from solver.errors import InstanceError, MissingFileError, Problem

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise MissingFileError(str(path), [Problem("", "no such file")]) from None
    except OSError as e:
        raise InstanceError(str(path), [Problem("", f"cannot read: {e}")]) from None
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


def register(app: typer.Typer) -> None:
    """Add ``decode-subscription`` to the ``kassign`` app."""

    @app.command("decode-subscription")
    def decode_subscription(
        files: Annotated[list[Path], typer.Argument(help="Subscription userData, one file per consumer (thread).")],
        encoding: Annotated[str, typer.Option(help="auto, base64 or binary.")] = "auto",
        layout: Annotated[str, typer.Option(help="kafka (v1-v11), kip441-draft (seed v5) or kip262.")] = "kafka",
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
        output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
    ) -> None:
        """Decode Kafka Streams SubscriptionInfo bytes into a kassign/v1 Streams instance (JSON)."""
        from solver.errors import InstanceError, KassignError, Problem
        from solver.io import parse_instance, write_atomic
        from solver.streams.subscription_info import LAYOUTS, SubscriptionDecodeError, decode, subscriptions_to_instance

        class _Usage(KassignError):
            exit_code = 2

        if layout not in LAYOUTS:
            raise _Usage(f"--layout must be one of {', '.join(LAYOUTS)}")
        if encoding not in ("auto", "base64", "binary"):
            raise _Usage("--encoding must be auto, base64 or binary")
        err = Console(stderr=True, highlight=False)
        infos = []
        for f in files:
            data = read_subscription_bytes(f, encoding)
            try:
                infos.append(decode(data, layout))  # type: ignore[arg-type]
            except SubscriptionDecodeError as e:
                raise InstanceError(str(f), [Problem("", str(e))]) from None
        task_list = None
        subtopologies = None
        if tasks is not None:
            doc = _load_json(tasks, "tasks")
            if isinstance(doc, dict) and "subtopologies" in doc:
                subtopologies = doc["subtopologies"]
            elif isinstance(doc, dict) and "tasks" in doc:
                task_list = doc["tasks"]
            elif isinstance(doc, list):
                task_list = doc
            else:
                raise InstanceError(str(tasks), [Problem("", "expected 'tasks' or 'subtopologies'")])
        offsets = None
        if end_offsets is not None:
            offsets = _load_json(end_offsets, "end offsets")
            if not isinstance(offsets, dict):
                raise InstanceError(str(end_offsets), [Problem("", "expected an object {task id: end offset sum}")])
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
        if output is not None:
            write_atomic(output, text)
        else:
            sys.stdout.write(text)
