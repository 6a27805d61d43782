"""A cache of optima and gaps for ``kassign score``, under the user's cache directory.

Solving the optimum of a large group takes seconds to minutes; scoring a second assignment of the
same group, or the same one again, should not.  Entries are JSON files named by a SHA-256 of what
they depend on: the instance's content (:func:`solver.io.instance_to_dict`, documentation keys left
out), the options that change the answer (time limit, seed), and for gaps the assignment's content.
kassign's version is part of the key, so an upgrade never reads an older answer.

Where: ``$KASSIGN_CACHE_DIR``, else ``$XDG_CACHE_HOME/kassign`` (an absolute path; a relative one is
ignored, as the XDG spec says), else ``~/.cache/kassign`` when the home directory exists (else no cache).
``kassign score --no-cache`` neither reads nor writes it; deleting the folder is always safe.

An entry carries the SHA-256 of its content: a file that was truncated, damaged, replaced by
something else (a directory, a FIFO, a link to ``/dev/zero``), or is larger than any entry kassign
writes is a miss (and is replaced by the next write), never an error or a wrong answer.  Entries are
read without following a symbolic link and without blocking, and decoded only when the memory guard
says they fit (else a miss).  The checksum only proves an entry intact, not true: ``kassign score``
re-checks what it reads against the instance (the cached optimum re-scored, the gaps recomputed from it)
and drops an entry that does not hold (:meth:`Cache.drop`).

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

import contextlib
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from solver.model.schema import META_KEYS

#: Largest cache entry read: an optimum of a group at the input limit's size fits; anything larger is not ours.
MAX_ENTRY = 256 << 20
#: Bytes of memory per byte of an entry while it is decoded (JSON text to Python objects, measured about 10).
DECODE_FACTOR = 12
#: The envelope's marker (and version): entries of another layout are misses.
ENVELOPE = "kassign-cache/1"


def default_dir() -> Path | None:
    """``$KASSIGN_CACHE_DIR``, ``$XDG_CACHE_HOME/kassign`` or ``~/.cache/kassign`` (``None``: no home directory
    to put it in, and no variable saying where)."""
    if os.environ.get("KASSIGN_CACHE_DIR"):
        return Path(os.environ["KASSIGN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME")
    if base and os.path.isabs(base):  # the XDG spec: a relative path is invalid and ignored
        return Path(base) / "kassign"
    try:
        home = Path.home()
    except (RuntimeError, KeyError, OSError):  # no HOME and no password entry
        return None
    if not home.is_absolute() or not home.is_dir():
        return None  # HOME=/nonexistent (a service account): no cache, never a home directory made up
    return home / ".cache" / "kassign"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _read_entry(path: Path) -> str | None:
    """The text of a regular file ``path`` of at most :data:`MAX_ENTRY` bytes, else ``None`` (a link, a FIFO,
    a device, a directory, a file too large or unreadable)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY:
            return None
        chunks = []
        total = 0
        while chunk := os.read(fd, 1 << 20):
            total += len(chunk)
            if total > MAX_ENTRY:
                return None
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    finally:
        os.close(fd)


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
    """JSON entries in one folder; a failure to read or write, or an entry that is not intact, is a miss, never an
    error.  ``folder`` ``None`` (and no default): every call is a miss and nothing is written."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder if folder is not None else default_dir()

    def key(self, kind: str, parts: Any) -> str:
        """``kind-<sha256 of the parts and kassign's version>``."""
        text = json.dumps({"kassign": _version(), "kind": kind, "parts": parts}, sort_keys=True, default=str)
        return f"{kind}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"

    def path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / f"{key}.json"

    def get(self, key: str) -> Any:
        """The document stored under ``key``, or ``None`` when there is none intact (a damaged entry is removed)."""
        from solver.errors import KassignError
        from solver.model.decode import DecodeError, decode_json
        from solver.resources import Need, check_fits

        path = self.path(key)
        text = _read_entry(path) if path is not None else None
        if text is None:
            return None
        try:
            # decoding JSON takes many times its bytes: an entry this process cannot hold is a miss, not exit 65
            check_fits(Need(DECODE_FACTOR * len(text), "a cache entry"), str(path))
            entry = decode_json(text)
            ok = (isinstance(entry, dict) and entry.get("format") == ENVELOPE and entry.get("key") == key
                  and isinstance(entry.get("doc"), str) and entry.get("sha256") == _digest(entry["doc"]))
            doc = decode_json(entry["doc"]) if ok else None
        except (DecodeError, ValueError, RecursionError, KassignError, MemoryError):
            ok, doc = False, None
        if not ok or doc is None:
            self.drop(key)
            return None
        return doc

    def drop(self, key: str) -> None:
        """Delete the entry under ``key`` (damaged, or not what it claims to be): the next put writes it again."""
        path = self.path(key)
        with contextlib.suppress(OSError):
            if path is not None and path.is_file() and not path.is_symlink():
                path.unlink()

    def put(self, key: str, doc: Any) -> None:
        """Store ``doc`` under ``key`` (atomically); a cache that cannot be written is silently skipped."""
        from solver.errors import KassignError
        from solver.io import dumps, write_atomic

        path = self.path(key)
        if path is None or self.folder is None:
            return
        text = dumps(doc)
        entry = {"format": ENVELOPE, "key": key, "sha256": _digest(text), "doc": text}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileNotFoundError):
                st = os.lstat(path)
                if stat.S_ISDIR(st.st_mode):
                    return
                if not stat.S_ISREG(st.st_mode):
                    path.unlink()  # a link, FIFO or device in our place: replaced, never written through
            write_atomic(path, dumps(entry) + "\n")
        except (OSError, KassignError, UnicodeError):  # the writer's OutputError too
            pass  # a read-only or full cache folder only costs the next call a solve


__all__ = ["Cache", "default_dir", "instance_key"]
