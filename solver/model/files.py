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
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from solver.errors import InstanceError, MissingFileError, Problem

BATCH_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson")


def is_batch(path: str | Path) -> bool:
    """True when ``path`` names a JSON lines file (one instance per line)."""
    return str(path).endswith(BATCH_SUFFIXES)


def _load_text(text: str, source: str, yaml_ok: bool) -> Any:
    """Parse JSON (or YAML) text; syntax errors become located problems."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        if not yaml_ok:
            raise InstanceError(
                source, [Problem("", f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}")]
            ) from None
        json_err = e
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        if source.endswith((".yaml", ".yml")):
            raise InstanceError(source, [Problem("", f"malformed YAML{where}: {problem}")]) from None
        raise InstanceError(
            source,
            [Problem("", f"malformed JSON at line {json_err.lineno}, column {json_err.colno}: {json_err.msg}")],
        ) from None


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


def _umask() -> int:
    """The process umask (read by setting it and putting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file, so a failure leaves nothing half written."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        # mkstemp creates 0600; the file gets the mode a plain open() would (0666 minus the umask)
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
