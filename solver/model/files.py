"""Documents on disk: JSON, YAML and JSON lines in, compact JSON out, written atomically.

The protocol-independent layer under :mod:`solver.io` and
:mod:`solver.streams.format`: syntax errors become located
:class:`~solver.errors.Problem` s, and outputs never appear half written.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

import numpy as np

from solver.errors import InstanceError, MissingFileError, Problem
from solver.model.decode import DecodeError, decode_json, decode_yaml

BATCH_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson")


def is_batch(path: str | Path) -> bool:
    """True when ``path`` names a JSON lines file (one instance per line)."""
    return str(path).endswith(BATCH_SUFFIXES)


def _load_text(text: str, source: str, yaml_ok: bool) -> Any:
    """Parse JSON (or YAML) text; syntax errors, duplicate keys, too deep nesting become located problems."""
    try:
        return decode_json(text)
    except DecodeError as e:
        if not (e.syntax and yaml_ok):
            raise InstanceError(source, e.problems) from None
        json_err = e
    try:
        return decode_yaml(text)
    except DecodeError as e:
        if source.endswith((".yaml", ".yml")) or not e.syntax:
            raise InstanceError(source, e.problems) from None
        raise InstanceError(source, json_err.problems) from None


def read_document(path: str | Path) -> Any:
    """Read one JSON or YAML document from ``path`` (``-`` is stdin)."""
    source = str(path)
    try:
        if source == "-":
            import sys

            text = sys.stdin.read()
        else:
            text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MissingFileError(source, [Problem("", "no such file")]) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InstanceError(source, [Problem("", f"cannot read: {e}")]) from None
    yaml_ok = not source.endswith(".json")
    return _load_text(text, source, yaml_ok)


def _open_lines(path: str | Path) -> io.TextIOBase:
    source = str(path)
    try:
        if source.endswith(".gz"):
            return io.TextIOWrapper(gzip.open(source, "rb"), encoding="utf-8")  # type: ignore[return-value]
        return open(source, encoding="utf-8")  # type: ignore[return-value]
    except FileNotFoundError:
        raise MissingFileError(source, [Problem("", "no such file")]) from None
    except OSError as e:
        raise InstanceError(source, [Problem("", f"cannot read: {e}")]) from None


def json_safe(v: Any) -> Any:
    """Convert numpy scalars and tuples to plain JSON values; non-finite floats become null."""
    if isinstance(v, dict):
        return {str(k): json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def dumps(doc: Any) -> str:
    """Compact, deterministic JSON for one output document."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)


def _remove_stale_temps(target: Path) -> None:
    """Delete ``.<name>.<pid>.tmp`` files of ``target`` left by writers that were killed (their pid is gone)."""
    for old in target.parent.glob(f".{glob_escape(target.name)}.*.tmp"):
        pid = old.name[len(target.name) + 2: -len(".tmp")]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            old.unlink(missing_ok=True)
        except (PermissionError, OverflowError, OSError):
            continue  # alive under another user, or not a pid we can ask about: leave it


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file, so a failure leaves nothing half written.

    The temporary file is ``.<name>.<pid>.tmp`` beside the target; one left by
    a writer killed with SIGKILL (no clean-up possible) is deleted by the next
    write to the same target.
    """
    target = Path(path)
    if target.exists() and not target.is_file():
        # /dev/null, /dev/stdout, a FIFO (links followed): replacing it would destroy it (as root, /dev/null
        # itself); write through it instead.
        with open(target, "w", encoding="utf-8") as out:
            out.write(text)
        return
    if target.is_symlink():
        target = target.resolve()  # replace the file the link points to, not the link
    target.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(target)
    tmp = str(target.parent / f".{target.name}.{os.getpid()}.tmp")
    # 0666 minus the umask, the mode a plain open() gives
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
