"""One schema for every option a user gives, on the command line or from Python, with its range.

Every numeric option has a range -- finite, a sign, a magnitude -- so that a
value far outside what the engines can represent (``--balance-tolerance
1e308``, ``--capacity 5e-324``, ``-O workers=10**12``, ``NaN``) is refused
once, before any work, with one message naming the option (exit 2), instead
of overflowing somewhere inside a solver.  The CLI checks the values it parses
with these objects; the Python API checks the same objects where its values
arrive (:class:`solver.result.Params`, :class:`solver.planning.config.PlanConfig`,
:meth:`solver.registry.AssignorSpec.run`).  ``docs/cli.md`` lists the ranges.

Examples
--------
>>> TIME_LIMIT.check(2.5)
2.5
>>> BALANCE_TOLERANCE.check(float("nan"))
Traceback (most recent call last):
...
solver.errors.OptionError: --balance-tolerance must be a number between 0 and 1000, got nan
>>> check_assignor_options("optimal", {"workers": 4, "deterministic": "yes"})
{'workers': 4, 'deterministic': True}
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from solver.errors import OptionError

#: Largest Java ``int`` and ``long`` (Kafka holds counts and offsets in them).
JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1


def shown(value: Any, width: int = 40) -> str:
    """A value as a message shows it: JSON-like, cut after ``width`` characters.

    Examples
    --------
    >>> shown("abc"), shown(10**50)
    ('"abc"', '100000000000000000000000000000000000000...')
    """
    import json

    try:
        text = json.dumps(value) if not isinstance(value, float) else repr(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= width else text[:width - 1] + "..."


def _num(x: float) -> str:
    if isinstance(x, int) or (float(x).is_integer() and abs(x) < 1e16):
        return f"{int(x)}"
    return f"{x:g}"


@dataclass(frozen=True)
class Number:
    """A numeric option: ``integer`` or a float, within ``[lo, hi]`` (``lo`` excluded when ``lo_open``).

    Floats must be finite and not subnormal; ``-0.0`` reads as ``0.0``.  Booleans are not numbers.
    """

    name: str
    lo: float
    hi: float
    integer: bool = False
    lo_open: bool = False
    what: str = ""
    words: str = ""

    def describe(self) -> str:
        """The range in words, as messages and docs say it."""
        kind = "an integer" if self.integer else "a number"
        if self.words:
            return f"{self.words} (between {_num(self.lo)} and {_num(self.hi)}{self.what})"
        if self.lo_open:
            return f"{kind} > {_num(self.lo)} and <= {_num(self.hi)}{self.what}"
        return f"{kind} between {_num(self.lo)} and {_num(self.hi)}{self.what}"

    def check(self, value: Any) -> Any:
        """``value`` checked and normalised (an ``int``, or a finite ``float``); else :class:`OptionError`."""
        ok = not isinstance(value, bool) and isinstance(value, (int, float))
        if ok and self.integer and not isinstance(value, int):
            ok = False
        if ok and isinstance(value, float):
            # finite and normal: a subnormal (below 2.2e-308) loses precision and overflows when divided by
            ok = math.isfinite(value) and (value == 0 or abs(value) >= sys.float_info.min)
            value = value + 0.0  # -0.0 -> 0.0
        if ok:
            ok = (value > self.lo if self.lo_open else value >= self.lo) and value <= self.hi
        if not ok:
            raise OptionError(f"{self.name} must be {self.describe()}, got {shown(value)}")
        return value


@dataclass(frozen=True)
class Choice:
    """An option taking one of a few words."""

    name: str
    choices: tuple[str, ...]

    def describe(self) -> str:
        """The choices in words."""
        return "one of " + ", ".join(self.choices)

    def check(self, value: Any) -> str:
        """``value`` if it is one of the choices; else :class:`OptionError`."""
        if not isinstance(value, str) or value not in self.choices:
            raise OptionError(f"{self.name} must be {self.describe()}, got {shown(value)}")
        return value


_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


@dataclass(frozen=True)
class Flag:
    """A true/false option (``true``/``false``, ``1``/``0``, ``yes``/``no``, ``on``/``off``)."""

    name: str

    def describe(self) -> str:
        """The accepted spellings."""
        return "true or false"

    def check(self, value: Any) -> bool:
        """``value`` as a bool; else :class:`OptionError`."""
        if isinstance(value, bool):
            return value
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            text = str(value).strip().lower()
            if text in _TRUE or text in _FALSE:
                return text in _TRUE
        raise OptionError(f"{self.name} must be {self.describe()}, got {shown(value)}")


Option = Number | Choice | Flag

# --------------------------------------------------------------------------- run parameters (every solver)

#: Seconds a solver (or a whole command, for ``plan``) may use.
TIME_LIMIT = Number("--time-limit", 1e-3, 1e7, what=" seconds")
#: Random seed; CP-SAT's seed is a 32-bit int.
SEED = Number("--seed", 0, JAVA_INT_MAX, integer=True)
#: The optimum's balance-movement trade: max load at most (1 + EPS) x the optimal max load.  Beyond 1000
#: (100,000 %) every assignment qualifies; the bound keeps scaled loads within 64-bit integers.
BALANCE_TOLERANCE = Number("--balance-tolerance", 0.0, 1000.0)
#: Weights of ``--objective weighted:balance=A,moves=B,racks=C``.
OBJECTIVE_WEIGHT = Number("--objective weight", 0.0, 1e6)

# --------------------------------------------------------------------------- assignor options (-O KEY=VALUE)

WORKERS = Number("-O workers", 1, 64, integer=True)
_SOLVER_OPTIONS: dict[str, Option] = {
    "workers": WORKERS,
    "interleave": Flag("-O interleave"),
    "deterministic": Flag("-O deterministic"),
    "max_vars": Number("-O max_vars", 1, JAVA_INT_MAX, integer=True),
    "backend": Choice("-O backend", ("cpsat", "highs", "scip")),
}
#: ``-O java=N``: the Java release running Kafka's assignor, for assignors whose answer depends on how the JVM
#: sizes a copied ``HashSet`` (Java 19 changed it); Kafka 3.0 runs on Java 8 and later.
JAVA = Number("-O java", 8, 99, integer=True)
#: ``-O KEY=VALUE`` options by assignor (the others take none).
ASSIGNOR_OPTIONS: Mapping[str, Mapping[str, Option]] = {
    "uniform": {"java": JAVA},
    "sticky-task": {"java": JAVA},
    "kip924-sticky": {"java": JAVA},
    "optimal": _SOLVER_OPTIONS,
    "optimal-cpsat": _SOLVER_OPTIONS,
    "optimal-streams": {
        "workers": WORKERS,
        "engine": Choice("-O engine", ("auto", "highs", "scip", "cp-sat")),
        "flows": Flag("-O flows"),
        "interleave": Flag("-O interleave"),
        "deterministic": Flag("-O deterministic"),
        "full_restore_lag": Number("-O full_restore_lag", 0, JAVA_LONG_MAX, integer=True),
    },
    "cooperative-sticky": {"rounds": Choice("-O rounds", ("settle",)), "settle": Flag("-O settle")},
}


def check_assignor_options(assignor: str, options: Mapping[str, Any], *, strict: bool = True) -> dict[str, Any]:
    """``options`` for ``assignor`` checked against :data:`ASSIGNOR_OPTIONS`, values normalised.

    Parameters
    ----------
    assignor
        A registry name.
    options
        ``-O`` options (``Params.options``).
    strict
        Refuse keys the assignor does not know (the CLI); without, they are passed on unchecked (the
        Python API hands one ``options`` mapping to several assignors).

    Raises
    ------
    OptionError
        An unknown key (listing the known ones), a bad value, or options that contradict each other.
    """
    known = ASSIGNOR_OPTIONS.get(assignor, {})
    out: dict[str, Any] = {}
    for key, value in options.items():
        spec = known.get(key)
        if spec is None:
            if strict:
                listed = ", ".join(sorted(known)) if known else "none"
                raise OptionError(f"-O {key}: unknown option for {assignor!r} (its options: {listed})")
            out[key] = value
            continue
        out[key] = spec.check(value)
    if out.get("rounds") == "settle" and out.get("settle") is False:
        raise OptionError("-O rounds=settle and -O settle=false contradict each other (--settle sets both)")
    return out


# --------------------------------------------------------------------------- capacity planning

#: ``plan --capacity``: load one instance holds, in the weights' unit; the weights of a document sum to at
#: most 1e100, so the range keeps every load / capacity ratio a normal float.
CAPACITY = Number("--capacity", 1e-100, 1e100, words="a positive number")
#: ``plan --resilience K``: instances lost.  Also at most the plan's largest fleet minus one (checked with
#: the instance).
RESILIENCE = Number("--resilience", 0, 10_000, integer=True)
CATCH_UP_SECONDS = Number("--catch-up-seconds", 1e-3, 1e9)
LAG_THRESHOLD = Number("--lag-threshold", 1e-3, 1e18)
#: Capacity multiplier of an added instance: the range of a member's ``capacity``.
NEW_CAPACITY = Number("--new-capacity", 1e-6, 1e6)
#: Streams loads of an active task and of a standby replica: 0 (free) or a normal float, at most 1e6.
ACTIVE_LOAD = Number("--active-load", 0.0, 1e6)
STANDBY_LOAD = Number("--standby-load", 0.0, 1e6)

# --------------------------------------------------------------------------- other commands

FRONTIER_POINTS = Number("--points", 2, 10_000, integer=True)
SWEEP_PARTITIONS = Number("--partitions", 1, 100_000, integer=True)
SWEEP_BATCH_SIZE = Number("--batch-size", 1, 1_000_000, integer=True)
PROGRESS_EVERY = Number("--progress-every", 0.1, 86_400.0)
CAPTURE_SAMPLE = Number("--sample", 0.1, 3600.0, what=" seconds")
CAPTURE_TIMEOUT = Number("--timeout", 0.1, 86_400.0, what=" seconds")
NUM_STANDBY_REPLICAS = Number("--num-standby-replicas", 0, JAVA_INT_MAX, integer=True)
ACCEPTABLE_RECOVERY_LAG = Number("--acceptable-recovery-lag", 0, JAVA_LONG_MAX, integer=True)
MAX_WARMUP_REPLICAS = Number("--max-warmup-replicas", 1, JAVA_INT_MAX, integer=True)


def check_text(option: str, value: str | None) -> str | None:
    """A free-text option written into a document (``--name``, ``--title``, ``--group``): Unicode text, so that
    what is written can be read back.  An argument that is not UTF-8 arrives with surrogate escapes.

    Examples
    --------
    >>> check_text("--name", "app"), check_text("--name", None)
    ('app', None)
    """
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        shown_text = value.encode("utf-8", "backslashreplace").decode()
        raise OptionError(f"{option} must be UTF-8 text, got '{shown_text}'") from None
    return value


def check_optional(option: Number, value: Any) -> Any:
    """``option.check(value)``, letting ``None`` (not given) through."""
    return None if value is None else option.check(value)


__all__ = ["ACCEPTABLE_RECOVERY_LAG", "ACTIVE_LOAD", "ASSIGNOR_OPTIONS", "BALANCE_TOLERANCE", "CAPACITY",
           "CAPTURE_SAMPLE", "CAPTURE_TIMEOUT", "CATCH_UP_SECONDS", "FRONTIER_POINTS", "JAVA_INT_MAX",
           "JAVA_LONG_MAX", "LAG_THRESHOLD", "MAX_WARMUP_REPLICAS", "NEW_CAPACITY", "NUM_STANDBY_REPLICAS",
           "OBJECTIVE_WEIGHT", "PROGRESS_EVERY", "RESILIENCE", "SEED", "STANDBY_LOAD",
           "SWEEP_BATCH_SIZE", "SWEEP_PARTITIONS", "TIME_LIMIT", "WORKERS", "Choice", "Flag", "Number", "Option",
           "check_assignor_options", "check_optional", "check_text", "shown"]
