"""Reading documents, bounded: JSON, YAML and JSON lines in, compact JSON out.

The reading half of :mod:`solver.model.files` (which re-exports every name
here; the writing half stays there).  Every file kassign reads (and ``-`` for
stdin) is read in chunks, decompressed when its name ends in ``.gz``, up to
:func:`input_limit` bytes of text (``KASSIGN_INPUT_LIMIT``; the decompressor
stops at the cap, so a gzip bomb costs at most that much).  Text is strict
UTF-8 without NUL bytes, checked as it arrives.  Syntax errors become located
:class:`~solver.errors.Problem` s.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import gzip
import json
import math
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from solver.errors import InstanceError, MissingFileError, OptionError, Problem
from solver.model.decode import DecodeError, decode_json, decode_yaml

BATCH_SUFFIXES = (".jsonl", ".jsonl.gz", ".ndjson")
#: Environment variable raising (or lowering) the input cap: bytes, or with a K/M/G suffix.
INPUT_ENV = "KASSIGN_INPUT_LIMIT"
#: Default cap on the bytes of text one input file may hold (after decompression): 64 MiB.  A 1,000,000-partition
#: instance with weights, move costs and racks is about 45 MB; 120 MB of "1," weights already take 3.5 GB and
#: 50 s to decode and validate.
DEFAULT_INPUT_LIMIT = 64 << 20
#: Bounds of ``KASSIGN_INPUT_LIMIT``: at least 1 KiB, at most 64 GiB.
INPUT_LIMIT_RANGE = (1 << 10, 64 << 30)
#: Bytes read (or decompressed) per step.
CHUNK = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"


def is_batch(path: str | Path) -> bool:
    """True when ``path`` names a JSON lines file (one instance per line)."""
    return str(path).endswith(BATCH_SUFFIXES)


# --------------------------------------------------------------------------- reading, bounded


def input_limit() -> int:
    """The cap on the bytes of text one input may hold: ``KASSIGN_INPUT_LIMIT`` or 64 MiB.

    Raises
    ------
    OptionError
        ``KASSIGN_INPUT_LIMIT`` is not a size, or outside 1K..64G (exit 2).
    """
    from solver.resources import parse_size_env

    return parse_size_env(INPUT_ENV, DEFAULT_INPUT_LIMIT, INPUT_LIMIT_RANGE)


def _limit_problem(limit: int) -> Problem:
    from solver.resources import human

    return Problem("", f"more than {human(limit)} of text (the input limit; set {INPUT_ENV}, e.g. "
                       f"{INPUT_ENV}=2G, to read larger files; see docs/format.md#limits)")


def _read_error(source: str, e: BaseException) -> InstanceError:
    if isinstance(e, FileNotFoundError):
        return MissingFileError(source, [Problem("", "no such file")])
    if isinstance(e, (gzip.BadGzipFile, EOFError, zlib.error)):
        why = str(e) or type(e).__name__
        if isinstance(e, EOFError):
            why = "truncated (the compressed stream ends before its end marker)"
        return InstanceError(source, [Problem("", f"not a valid gzip file: {why}")])
    if isinstance(e, OSError):
        return InstanceError(source, [Problem("", f"cannot read: {e.strerror or e}")])
    return InstanceError(source, [Problem("", f"cannot read: {e}")])


#: Regular files this command read as input, by ``(device, inode)``: an output naming one of them (also through a
#: link or another name) would replace an input, which is a usage error (exit 2, :func:`check_not_an_input`).
_inputs: dict[tuple[int, int], str] = {}
_private = False


def reset_inputs() -> None:
    """Forget the inputs read so far (a new command starts)."""
    _inputs.clear()


@contextlib.contextmanager
def private_reads() -> Iterator[None]:
    """Reads of kassign's own files (a sweep's manifest) that the same command may write again: not inputs."""
    global _private
    before, _private = _private, True
    try:
        yield
    finally:
        _private = before


def _note_input(fh: Any, source: str) -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        st = os.fstat(fh.fileno())
        if stat.S_ISREG(st.st_mode) and not _private:
            _inputs.setdefault((st.st_dev, st.st_ino), source)


def check_not_an_input(path: str | Path, option: str = "--output", st: os.stat_result | None = None) -> None:
    """Raise :class:`~solver.errors.OptionError` (exit 2) when ``path`` is a regular file this command read as input
    (the same inode: through a symbolic link, a hard link or another spelling too)."""
    try:
        st = st if st is not None else os.stat(path)
    except (OSError, ValueError):
        return
    source = _inputs.get((st.st_dev, st.st_ino)) if stat.S_ISREG(st.st_mode) else None
    if source is not None:
        shown = f"{option} {path}" if option else str(path)
        raise OptionError(f"{shown}: is the input {source}; writing it would replace the input (give another file)")


def _raw_chunks(path: str | Path) -> Iterator[bytes]:
    """Bytes of ``path`` (stdin for ``-``), gunzipped for ``.gz`` names, at most the input limit."""
    import sys

    source = str(path)
    limit = input_limit()
    total = 0
    try:
        if source == "-":
            if sys.stdin is None or getattr(sys.stdin, "buffer", None) is None:
                raise OSError(errno.EBADF, "stdin is closed")
            raw: Any = contextlib.nullcontext(sys.stdin.buffer)
        else:
            if os.path.isdir(source):
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            raw = open(source, "rb")  # noqa: SIM115 - closed by the with below
        with raw as fh:
            _note_input(fh, source)
            stream = gzip.GzipFile(fileobj=fh, mode="rb") if source.endswith(".gz") else fh
            while True:
                chunk = stream.read(min(CHUNK, limit + 1 - total))
                if not chunk:
                    return
                total += len(chunk)
                if total > limit:
                    raise InstanceError(source, [_limit_problem(limit)])
                yield chunk
    except (OSError, EOFError, zlib.error) as e:
        raise _read_error(source, e) from None


def _text_chunks(path: str | Path) -> Iterator[str]:
    """UTF-8 text of ``path`` in chunks; a NUL byte or an invalid sequence fails at once, with its offset."""
    source = str(path)
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    first = True
    for chunk in _raw_chunks(path):
        if first and chunk.startswith(_GZIP_MAGIC) and not source.endswith(".gz"):
            raise InstanceError(source, [Problem("", "gzip-compressed data in a file whose name does not end in "
                                                     ".gz (rename it, e.g. to .jsonl.gz)")])
        first = False
        nul = chunk.find(b"\x00")
        if nul >= 0:
            raise InstanceError(source, [Problem("", f"a NUL byte at offset {offset + nul}: binary data, not "
                                                     f"JSON or YAML text")])
        try:
            text = decoder.decode(chunk)
        except UnicodeDecodeError as e:
            raise InstanceError(source, [Problem("", f"not UTF-8 text: invalid byte 0x{chunk[e.start]:02x} at "
                                                     f"offset {offset + e.start}")]) from None
        offset += len(chunk)
        if text:
            yield text
    try:
        tail = decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise InstanceError(source, [Problem("", "not UTF-8 text: the file ends inside a character")]) from None
    if tail:  # pragma: no cover - a complete decode leaves nothing
        yield tail


def read_text(path: str | Path) -> str:
    """The whole text of ``path`` (``-``: stdin), bounded by :func:`input_limit`; errors name the file."""
    text = "".join(_text_chunks(path))
    if text.startswith("\ufeff"):
        text = text[1:]  # a UTF-8 byte order mark is not part of the document
    return text


def read_bytes(path: str | Path) -> bytes:
    """The bytes of ``path`` (binary inputs: subscription bytes), bounded by :func:`input_limit`."""
    return b"".join(_raw_chunks(path))


def iter_lines(path: str | Path) -> Iterator[str]:
    """The lines of a JSON lines file, bounded by :func:`input_limit` in total (a line ends without ``\\n``)."""
    pending: list[str] = []  # the pieces of a line still open: joined once, not copied chunk after chunk
    for text in _text_chunks(path):
        parts = text.split("\n")
        if len(parts) == 1:
            pending.append(text)
            continue
        yield "".join([*pending, parts[0]])
        yield from parts[1:-1]
        pending = [parts[-1]] if parts[-1] else []
    if pending:
        yield "".join(pending)


def _load_text(text: str, source: str, yaml_ok: bool, yaml_limits: dict[str, int] | None = None) -> Any:
    """Parse JSON (or YAML) text; syntax errors, duplicate keys, too deep nesting become located problems."""
    try:
        return decode_json(text)
    except DecodeError as e:
        if not (e.syntax and yaml_ok):
            raise InstanceError(source, e.problems) from None
        json_err = e
    try:
        return decode_yaml(text, **(yaml_limits or {}))
    except DecodeError as e:
        if source.endswith((".yaml", ".yml", ".yaml.gz", ".yml.gz")) or not e.syntax:
            raise InstanceError(source, e.problems) from None
        raise InstanceError(source, json_err.problems) from None


#: Bytes of memory decoding one byte of JSON/YAML text may take at most (numbers become Python objects).
DECODE_BYTES_PER_CHAR = 30
#: Address space kept free for validating a document under an address-space limit (``ulimit -v``): the
#: validation runs in pydantic-core, whose Rust allocator aborts the process (SIGABRT) when an allocation fails
#: instead of raising ``MemoryError``; a new allocator arena alone reserves 64 MiB.
VALIDATION_HEADROOM = 64 << 20


def _address_space_limited() -> bool:
    try:
        import resource

        return any(resource.getrlimit(r)[0] != resource.RLIM_INFINITY
                   for r in (resource.RLIMIT_AS, getattr(resource, "RLIMIT_DATA", resource.RLIMIT_AS)))
    except (ImportError, ValueError, OSError):
        return False


def check_decode(chars: int, source: str) -> None:
    """Before decoding ``chars`` characters of JSON/YAML from ``source``: refuse (exit 65) what cannot be decoded
    and validated in the memory there is -- a document over 1 MiB, and under an address-space limit every one,
    with twice its need to spare, at most :data:`VALIDATION_HEADROOM` (a validation that runs out aborts the
    process)."""
    limited = _address_space_limited()
    if chars <= 1 << 20 and not limited:
        return
    from solver.resources import Need, check_fits

    need = DECODE_BYTES_PER_CHAR * chars
    spare = min(VALIDATION_HEADROOM, 2 * need) if limited else 0  # a small document needs no new arena
    check_fits(Need(need + spare, f"decoding {chars:,} characters of JSON/YAML"), source)


def read_document(path: str | Path, *, max_aliases: int | None = None, max_values: int | None = None) -> Any:
    """Read one JSON or YAML document from ``path`` (``-`` is stdin; ``.gz`` names are decompressed).

    ``max_aliases`` and ``max_values`` tighten the YAML limits (a sweep grid allows few aliases).
    """
    source = str(path)
    text = read_text(path)
    check_decode(len(text), source)  # decoded values cost more than their text
    yaml_ok = not source.endswith((".json", ".json.gz"))
    limits: dict[str, int] = {}
    if max_aliases is not None:
        limits["max_aliases"] = max_aliases
    if max_values is not None:
        limits["max_values"] = max_values
    return _load_text(text, source, yaml_ok, limits)


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
