"""A cache of optima and gaps for ``kassign score``, under the user's cache directory.

Solving the optimum of a large group takes seconds to minutes; scoring a second assignment of the
same group, or the same one again, should not.  Entries are JSON files named by a SHA-256 of what
they depend on: the instance's content (:func:`solver.io.instance_to_dict`, documentation keys left
out), the options that change the answer (time limit, seed), and for gaps the assignment's content.
kassign's version is part of the key, so an upgrade never reads an older answer.

Where: ``$KASSIGN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kassign``, else ``~/.cache/kassign``.
``kassign score --no-cache`` neither reads nor writes it; deleting the folder is always safe.

Examples
--------
>>> import tempfile
>>> c = Cache(Path(tempfile.mkdtemp()))
>>> k = c.key("optimum", {"a": 1})
>>> c.get(k) is None
True
>>> c.put(k, {"status": "optimal"}); c.get(k)
{'status': 'optimal'}
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from solver.model.schema import META_KEYS


def default_dir() -> Path:
    """``$KASSIGN_CACHE_DIR``, ``$XDG_CACHE_HOME/kassign`` or ``~/.cache/kassign``."""
    if os.environ.get("KASSIGN_CACHE_DIR"):
        return Path(os.environ["KASSIGN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kassign"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kassign")
    except PackageNotFoundError:
        return "0+unknown"


def instance_key(instance: Any) -> dict[str, Any]:
    """The instance's content as it enters a key: the document without its documentation keys."""
    from solver.io import instance_to_dict

    doc = instance_to_dict(instance)
    return {k: v for k, v in doc.items() if k not in META_KEYS and k != "name"}


class Cache:
    """JSON entries in one folder; a failure to read or write is a miss, never an error."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else default_dir()

    def key(self, kind: str, parts: Any) -> str:
        """``kind-<sha256 of the parts and kassign's version>``."""
        text = json.dumps({"kassign": _version(), "kind": kind, "parts": parts}, sort_keys=True, default=str)
        return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def get(self, key: str) -> Any:
        try:
            return json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def put(self, key: str, doc: Any) -> None:
        from solver.io import dumps, write_atomic

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path(key), dumps(doc) + "\n")
        except OSError:
            pass  # a read-only or full cache folder only costs the next call a solve


__all__ = ["Cache", "default_dir", "instance_key"]
