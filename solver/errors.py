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

    def render(self) -> str:
        """One line per problem, each prefixed by the source."""
        return "\n".join(f"{self.source}: {p}" for p in self.problems)


class MissingFileError(InstanceError):
    """An input file does not exist (exit 66, ``EX_NOINPUT``): nothing was read, so nothing is invalid."""

    exit_code = 66


class InfeasibleError(KassignError):
    """No assignment satisfies the hard constraints, or none was found in the limit."""

    exit_code = 3


class OptionError(KassignError, ValueError):
    """A solver option (``-O KEY=VALUE``, ``--objective``) is unknown or has a bad value: a usage error."""

    exit_code = 2
