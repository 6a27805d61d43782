"""Documents on disk: JSON, YAML and JSON lines in (bounded), compact JSON out, every output written atomically.

The protocol-independent layer under :mod:`solver.io` and
:mod:`solver.streams.format`: syntax errors become located
:class:`~solver.errors.Problem` s, inputs are read up to a documented cap, and
outputs never appear half written.

**Inputs.**  Every file kassign reads (and ``-`` for stdin) is read in
chunks, decompressed when its name ends in ``.gz``, up to
:func:`input_limit` bytes of text (``KASSIGN_INPUT_LIMIT``; the decompressor
stops at the cap, so a gzip bomb costs at most that much).  Text is strict
UTF-8 without NUL bytes, checked as it arrives: ``/dev/zero`` or
``/dev/urandom`` fail on their first chunk.  Broken gzip (truncated, a bad
CRC, trailing garbage) is a format error naming the file (exit 65).  The
reading code lives in :mod:`solver.model.inputs`; its names are re-exported here.

**Outputs.**  :func:`write_atomic` and :func:`write_files` are the one way
kassign writes a file (assignments, JSON lines, plots, reports, manifests):
a temporary file beside the target, ``fsync``, ``rename``.  Every OS error
becomes an :class:`~solver.errors.OutputError` naming the path (exit 73,
or 74 when the device failed: a full disk, a quota, ``/dev/full``);
:func:`check_output_path` runs the same checks before any work is done.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from glob import escape as glob_escape
from pathlib import Path
from typing import Any

from solver import runtime
from solver.errors import InstanceError, Interrupted, MissingFileError, OptionError, OutputError, Problem

# The reading half, re-exported so ``solver.model.files.read_document`` etc. keep working.
from solver.model.inputs import (
    BATCH_SUFFIXES,
    CHUNK,
    DECODE_BYTES_PER_CHAR,
    DEFAULT_INPUT_LIMIT,
    INPUT_ENV,
    INPUT_LIMIT_RANGE,
    VALIDATION_HEADROOM,
    check_decode,
    check_not_an_input,
    dumps,
    input_limit,
    is_batch,
    iter_lines,
    json_safe,
    private_reads,
    read_bytes,
    read_document,
    read_text,
    reset_inputs,
)

#: Plot formats a ``--plot`` path may name (by its suffix; no suffix is PNG).
PLOT_FORMATS = {"": "png", ".png": "png", ".svg": "svg", ".pdf": "pdf"}



# --------------------------------------------------------------------------- writing, atomic


def _temp_prefix(name: str) -> str:
    """``.<name>`` (the temporary files' prefix), shortened for names near the file system's limit."""
    raw = os.fsencode(name)  # the bytes on disk: a name that is not UTF-8 comes as surrogate escapes
    if len(raw) <= 200:
        return f".{name}"
    digest = hashlib.sha1(raw).hexdigest()[:12]
    return f".{os.fsdecode(raw[:160].decode(errors='ignore').encode())}~{digest}"


def _remove_stale_temps(target: Path) -> None:
    """Delete ``.<name>.<pid>.tmp`` files of ``target`` left by writers that were killed (their pid is gone)."""
    prefix = _temp_prefix(target.name)
    for old in target.parent.glob(f"{glob_escape(prefix)}.*.tmp"):
        pid = old.name[len(prefix) + 1: -len(".tmp")]
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):  # a directory of that name is not ours to remove: left alone
                old.unlink(missing_ok=True)
        except (PermissionError, OverflowError, OSError):
            continue  # alive under another user, or not a pid we can ask about: leave it


def _is_dir_name(path: str | Path) -> bool:
    return str(path).endswith(("/", os.sep))


def _not_a_file(path: str | Path, option: str) -> OptionError:
    shown = f"{option} {path}" if option else str(path)
    return OptionError(f"{shown}: is a directory; give a file name")


def _existing(path: Path) -> os.stat_result | None:
    """``stat`` of ``path`` following links; ``None`` when it does not exist; other OS errors are raised."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _first_existing_ancestor(path: Path) -> Path:
    parent = path.parent
    while not os.path.lexists(parent) and parent != parent.parent:
        parent = parent.parent
    return parent


def check_output_path(path: str | Path | None, option: str = "--output") -> None:
    """Before any work: can ``path`` be written?  Raise what writing it would raise, without writing it.

    A directory (or a name ending in ``/``) is a usage error (exit 2); a path below a regular file, a
    symlink loop, a name too long, no permission or a read-only file system an
    :class:`~solver.errors.OutputError` (exit 73).  The directory is probed by creating (and removing)
    an empty temporary file in it.
    """
    if path is None or str(path) == "-":
        return
    target = Path(path)
    shown = str(path)
    if _is_dir_name(path):
        raise _not_a_file(path, option)
    try:
        st = _existing(target)
        if st is not None:
            if stat.S_ISDIR(st.st_mode):
                raise _not_a_file(path, option)
            if not stat.S_ISREG(st.st_mode):
                return  # a device or a FIFO: written through when the time comes
            check_not_an_input(path, option, st)
        real = Path(os.path.realpath(target))
        ancestor = _first_existing_ancestor(real)
        if not os.path.isdir(ancestor):
            raise OSError(errno.ENOTDIR, f"{ancestor} is not a directory")
        max_name = os.pathconf(ancestor, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
        for part in real.relative_to(ancestor).parts or (real.name,):
            if len(os.fsencode(part)) > max_name:
                raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
        if ancestor != real.parent:
            if not os.access(ancestor, os.W_OK | os.X_OK):
                raise OSError(errno.EACCES, f"cannot create a directory in {ancestor}: "
                                            f"{os.strerror(errno.EACCES)}")
            return
        probe = real.parent / f"{_temp_prefix(real.name)}.{os.getpid()}.tmp"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
        os.unlink(probe)
    except OptionError:
        raise
    except FileExistsError:
        return  # our own probe name is taken: a writer of ours is running; the write itself will tell
    except OSError as e:
        raise OutputError.from_os(shown, e) from None


def check_output_dir(path: str | Path, option: str = "--out", *, probe: bool = True) -> None:
    """Before any work: can ``path`` be (or become) a directory kassign writes files into?

    An existing directory is probed by creating (and removing) an empty temporary file in it; a missing one
    needs an existing directory above it that accepts a new entry (``probe=False``: neither is tried, for a
    run that only reads the directory).  Anything else -- a regular file or a
    device in the way, a path below a regular file, a symlink loop or a dangling link, a name too long, a
    read-only file system -- is an :class:`~solver.errors.OutputError` naming the path (exit 73).
    """
    target = Path(path)
    shown = str(path)
    try:
        st = _existing(target)
        if st is None and os.path.lexists(target):
            raise OSError(errno.ENOENT, "a symbolic link to a directory that does not exist")
        if st is not None:
            if not stat.S_ISDIR(st.st_mode):
                raise OutputError(shown, f"exists and is not a directory ({option} names a directory)")
            if probe:
                name = target / f".kassign-probe.{os.getpid()}.tmp"
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                os.close(fd)
                os.unlink(name)
            return
        real = Path(os.path.realpath(target))
        ancestor = _first_existing_ancestor(real)
        if not os.path.isdir(ancestor):
            raise OSError(errno.ENOTDIR, f"{ancestor} is not a directory")
        max_name = os.pathconf(ancestor, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
        if any(len(os.fsencode(part)) > max_name for part in real.relative_to(ancestor).parts):
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG))
        if probe and not os.access(ancestor, os.W_OK | os.X_OK):
            raise OSError(errno.EACCES, f"cannot create a directory in {ancestor}: {os.strerror(errno.EACCES)}")
    except FileExistsError:
        return  # our own probe name is taken: a run of ours is writing there
    except OSError as e:
        raise OutputError.from_os(shown, e) from None


def check_input_dir(path: str | Path) -> None:
    """``path`` is a directory kassign can read: missing is a :class:`~solver.errors.MissingFileError`
    (exit 66); a file, a link loop, a name too long or another OS error an
    :class:`~solver.errors.InstanceError` naming it (exit 65)."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise MissingFileError(str(path), [Problem("", "no such directory")]) from None
    except OSError as e:
        raise InstanceError(str(path), [Problem("", f"cannot read: {e.strerror or e}")]) from None
    if not stat.S_ISDIR(st.st_mode):
        raise InstanceError(str(path), [Problem("", "not a directory")])


def _write_through(path: Path, data: bytes, shown: str) -> None:
    """Write to a device or a FIFO in place (replacing ``/dev/null`` would destroy it)."""
    try:
        with open(path, "wb") as out:
            out.write(data)
    except OSError as e:
        raise OutputError.from_os(shown, e, partial=True) from None


class _Staged:
    """One target's temporary file, written and fsynced, waiting to be renamed into place."""

    def __init__(self, target: Path, tmp: str, shown: str) -> None:
        self.target = target
        self.tmp = tmp
        self.shown = shown

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)
        runtime.untrack_temp(self.tmp)


def _as_bytes(data: str | bytes) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def _stage(path: str | Path, data: bytes) -> _Staged | None:
    """Write ``data`` to a temporary file beside ``path``; ``None`` when ``path`` was written through."""
    shown = str(path)
    if _is_dir_name(path):
        raise _not_a_file(path, "")
    target = Path(path)
    tmp = ""
    try:
        st = _existing(target)
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise _not_a_file(path, "")
        if st is not None and not stat.S_ISREG(st.st_mode):
            _write_through(target, data, shown)
            return None
        if st is not None:
            check_not_an_input(path, "", st)  # read after the options were checked (a batch's later input)
        target = Path(os.path.realpath(target))  # a link: replace the file it points to, not the link
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise OSError(errno.ENOTDIR, "a parent of it is not a directory") from None
        _remove_stale_temps(target)
        tmp = str(target.parent / f"{_temp_prefix(target.name)}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # our own, from a write this process gave up on
        # 0666 minus the umask, the mode a plain open() gives
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        runtime.track_temp(tmp)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        return _Staged(target, tmp, shown)
    except OptionError:
        raise
    except OSError as e:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            runtime.untrack_temp(tmp)
        raise OutputError.from_os(shown, e) from None


def _publish(staged: Sequence[_Staged]) -> None:
    """Rename every staged file into place (nothing is published once a stop was requested).

    A target staged twice in one transaction shares one temporary file, which holds the last data written:
    it is renamed once (the last write wins, as for two plain writes).
    """
    staged = list({s.tmp: s for s in staged}.values())
    dirs: set[Path] = set()
    try:
        with runtime.publishing():  # a stop request that comes now waits until the renames are done
            for k, s in enumerate(staged):
                try:
                    os.replace(s.tmp, s.target)
                except OSError as e:
                    for rest in staged[k:]:
                        rest.discard()
                    raise OutputError.from_os(s.shown, e) from None
                runtime.untrack_temp(s.tmp)
                runtime.note_published(s.shown)
                dirs.add(s.target.parent)
    except Interrupted:
        for s in staged:
            s.discard()
        raise
    for d in dirs:  # the renames themselves survive a crash only once their directory is synced
        with contextlib.suppress(OSError):
            fd = os.open(d, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


_open = threading.local()


@contextlib.contextmanager
def transaction() -> Iterator[None]:
    """Within the block, writes are staged; they are published together when it ends, discarded on an error.

    A command that writes several files (``frontier -o F --plot P``, a report) then leaves either all of
    them or none (nearly: the renames at the end are not one operation, but nothing can fail between
    them except the renames themselves).  Nested blocks join the outermost one.
    """
    if getattr(_open, "staged", None) is not None:
        yield
        return
    staged: list[_Staged] = []
    _open.staged = staged
    try:
        yield
    except BaseException:
        for s in staged:
            s.discard()
        raise
    finally:
        _open.staged = None
    _publish(staged)


def write_files(items: Sequence[tuple[str | Path, str | bytes]]) -> None:
    """Write several files nearly all-or-nothing: every one staged (written, fsynced) before any is renamed.

    A failure while staging leaves every target as it was; see :func:`write_atomic`.  Inside
    :func:`transaction` the files are published when the transaction ends.
    """
    staged: list[_Staged] = []
    try:
        for path, data in items:
            s = _stage(path, _as_bytes(data))
            if s is not None:
                staged.append(s)
    except BaseException:
        for s in staged:
            s.discard()
        raise
    outer = getattr(_open, "staged", None)
    if outer is not None:
        outer.extend(staged)
        return
    _publish(staged)


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text is UTF-8) to ``path`` via a temporary file, so a failure leaves nothing half written.

    The temporary file is ``.<name>.<pid>.tmp`` beside the target, fsynced, then renamed over it; one
    left by a writer killed with SIGKILL (no clean-up possible) is deleted by the next write to the same
    target.  A symlink is followed (the file it points to is replaced); a device or a FIFO
    (``/dev/null``, ``/dev/stdout``) is written through.  Missing parent directories are created.

    Raises
    ------
    OutputError
        Any OS error, with the path and the reason (exit 73; 74 when the device failed).
    OptionError
        ``path`` is a directory.
    """
    write_files([(path, data)])


@contextlib.contextmanager
def drawing(path: str | Path) -> Iterator[None]:
    """Around drawing a plot: memory running out inside matplotlib is a :class:`MemoryError` (exit 65).

    FreeType reports an allocation that failed as a ``RuntimeError`` (``FT_Open_Face ... invalid stream
    operation``), and matplotlib's font callback can only print its ``MemoryError`` (Python's
    "Exception ignored in ..." traceback) and go on to draw text without glyphs.  Within the block such an
    ignored exception is recorded instead of printed, and either kind ends the command as out of memory:
    never a traceback, never a plot with missing text.  A ``RuntimeError`` while no memory limit is in
    effect (``ulimit -v``, ``ulimit -d``) is left alone: that is a bug, not the machine.
    """
    import sys

    from solver.resources import _rlimits

    ignored: list[type[BaseException]] = []
    previous = sys.unraisablehook
    sys.unraisablehook = lambda u: ignored.append(u.exc_type)
    try:
        yield
    except RuntimeError as e:
        if not (_rlimits() or any(issubclass(t, MemoryError) for t in ignored)):
            raise
        raise MemoryError(f"drawing {path}: {e}") from None
    finally:
        sys.unraisablehook = previous
    if any(issubclass(t, MemoryError) for t in ignored):
        raise MemoryError(f"drawing {path}: a font could not be loaded")
    others = [t for t in ignored if not issubclass(t, MemoryError)]
    if others:  # not ours to hide: said in one line, as Python would have (without the traceback)
        sys.stderr.write(f"warning: ignored {', '.join(t.__name__ for t in others)} while drawing {path}\n")


def figure_bytes(fig: Any, path: str | Path, dpi: int = 110) -> bytes:
    """A matplotlib figure rendered in the format ``path``'s suffix names (``.png``, ``.svg``, ``.pdf``)."""
    fmt = PLOT_FORMATS.get(Path(path).suffix.lower(), "png")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi)
    return buf.getvalue()


def _same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` name one regular file (existing or to be created; devices are written through)."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            sa, sb = os.stat(a), os.stat(b)
            return stat.S_ISREG(sa.st_mode) and (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)
        return os.path.realpath(a) == os.path.realpath(b)
    except (OSError, ValueError):
        return False


def check_distinct_outputs(*outputs: tuple[str, str | Path | None]) -> None:
    """Before any work: the ``(option, path)`` outputs of one command name different files.

    Two options naming one file (``frontier -o x --plot x``, ``capture -o f --current f``, or through a link)
    would publish one over the other: a usage error (exit 2).
    """
    given = [(opt, p) for opt, p in outputs if p is not None and str(p) != "-"]
    for i, (opt_a, a) in enumerate(given):
        for opt_b, b in given[i + 1:]:
            if _same_file(a, b):
                raise OptionError(f"{opt_a} {a} and {opt_b} {b} name the same file; give each its own")


def check_plot_path(path: str | Path | None, option: str = "--plot") -> None:
    """:func:`check_output_path` for a plot, whose suffix must name a format (``.png``, ``.svg``, ``.pdf``)."""
    if path is None:
        return
    suffix = Path(path).suffix.lower()
    if not _is_dir_name(path) and suffix not in PLOT_FORMATS:
        raise OptionError(f"{option} {path}: unknown plot format {suffix!r} (use .png, .svg or .pdf)")
    check_output_path(path, option)


__all__ = [
    "BATCH_SUFFIXES",
    "CHUNK",
    "DECODE_BYTES_PER_CHAR",
    "DEFAULT_INPUT_LIMIT",
    "INPUT_ENV",
    "INPUT_LIMIT_RANGE",
    "PLOT_FORMATS",
    "VALIDATION_HEADROOM",
    "check_decode",
    "check_distinct_outputs",
    "check_input_dir",
    "check_not_an_input",
    "check_output_dir",
    "check_output_path",
    "check_plot_path",
    "drawing",
    "dumps",
    "figure_bytes",
    "input_limit",
    "is_batch",
    "iter_lines",
    "json_safe",
    "private_reads",
    "read_bytes",
    "read_document",
    "read_text",
    "reset_inputs",
    "transaction",
    "write_atomic",
    "write_files",
]
