"""Domain errors with readable, located messages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One problem in an input: where (a JSON path) and what.

    Examples
    --------
    >>> str(Problem("members[2].owned.T9", "topic not in topics"))
    'members[2].owned.T9: topic not in topics'
    """

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def json_path(loc: Iterable[str | int]) -> str:
    """Render a location tuple as a JSON path.

    Examples
    --------
    >>> json_path(("members", 2, "owned", "T9"))
    'members[2].owned.T9'
    >>> json_path(())
    ''
    """
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class KassignError(Exception):
    """Base class of kassign's user-facing errors."""

    exit_code = 1


class InstanceError(KassignError):
    """An input file is invalid; carries every problem found.

    Parameters
    ----------
    source
        The file (and line, for JSON lines) the problems are in.
    problems
        All problems found, each with its JSON path.
    """

    exit_code = 65

    def __init__(self, source: str, problems: Sequence[Problem]) -> None:
        self.source = source
        self.problems = list(problems)
        super().__init__(self.render())

    #: Most problems rendered one per line; the rest are counted on a last line.
    MAX_RENDERED = 10_000

    def render(self) -> str:
        """One line per problem, each prefixed by the source (at most :attr:`MAX_RENDERED`, then how many more)."""
        lines = [f"{self.source}: {p}" for p in self.problems[:self.MAX_RENDERED]]
        if len(self.problems) > self.MAX_RENDERED:
            lines.append(f"{self.source}: ... and {len(self.problems) - self.MAX_RENDERED:,} more problems")
        return "\n".join(lines)


class MissingFileError(InstanceError):
    """An input file does not exist (exit 66, ``EX_NOINPUT``): nothing was read, so nothing is invalid."""

    exit_code = 66


class InfeasibleError(KassignError):
    """No assignment satisfies the hard constraints, or none was found in the limit."""

    exit_code = 3


class OptionError(KassignError, ValueError):
    """A solver option (``-O KEY=VALUE``, ``--objective``) is unknown or has a bad value: a usage error."""

    exit_code = 2


class OutputError(KassignError):
    """An output cannot be written: the path names what, ``reason`` why (exit 73, or 74 for an I/O failure).

    73 (``EX_CANTCREAT``): the file cannot be created where it was asked for (a directory in the way, a
    path below a regular file, a symlink loop, a name too long, no permission, a read-only file system).
    74 (``EX_IOERR``): writing failed on the way (the disk is full, a quota, a file size limit, an I/O
    error, ``stdout`` on ``/dev/full``).

    Examples
    --------
    >>> import errno
    >>> e = OutputError.from_os("out/x.json", OSError(errno.ENOSPC, "No space left on device"))
    >>> str(e), e.exit_code
    ('cannot write out/x.json: No space left on device (nothing was written)', 74)
    """

    exit_code = 73

    #: errnos of a write that started and failed (the device), not of a path that cannot be created.
    IO_ERRNOS = frozenset({28, 122, 27, 5, 32})  # ENOSPC, EDQUOT, EFBIG, EIO, EPIPE

    def __init__(self, path: str, reason: str, exit_code: int = 73) -> None:
        self.path = path
        self.reason = reason
        self.exit_code = exit_code
        super().__init__(f"cannot write {path}: {reason}")

    @classmethod
    def from_os(cls, path: str, err: OSError, *, partial: bool = False) -> OutputError:
        """The error for ``err`` (an ``OSError`` of writing ``path``); ``partial``: the output may be incomplete."""
        reason = err.strerror or str(err)
        code = 74 if err.errno in cls.IO_ERRNOS else 73
        tail = " (what was written before may be incomplete)" if partial else " (nothing was written)"
        return cls(path, reason + tail, code)


class Interrupted(BaseException):
    """The run was stopped by a signal (SIGINT: exit 130, SIGTERM: 143, as a shell reports ``128 + N``).

    A ``BaseException``, like ``KeyboardInterrupt``: code that recovers from a solver's ``Exception`` (a
    fallback engine, a retry) must not recover from a stop request.
    """

    def __init__(self, signum: int, message: str = "") -> None:
        self.signum = signum
        self.exit_code = 128 + signum
        self.own_message = bool(message)  # False: the default line, which says nothing was written
        super().__init__(message or f"interrupted ({signal_name(signum)}); nothing was written")


def signal_name(signum: int) -> str:
    """``SIGINT`` for 2, ``signal 99`` for a number no signal has.

    >>> signal_name(15), signal_name(99)
    ('SIGTERM', 'signal 99')
    """
    import signal

    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class BusyError(KassignError):
    """Another kassign process holds what this one needs (a sweep's output directory): exit 75, try again."""

    exit_code = 75
