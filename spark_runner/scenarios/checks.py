"""Parameter checks shared by the scenario generators: value checks, size limits, :class:`CheckedParams`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, fields
from types import MappingProxyType
from typing import Any, ClassVar, Self

import numpy as np

#: Largest Java ``int`` / ``long``: Kafka holds counts in ``int`` s, offsets and lags in ``long`` s.
JAVA_INT_MAX = 2**31 - 1
JAVA_LONG_MAX = 2**63 - 1
#: Size limits of one generated scenario (docs/sweeps.md, "Limits"): a sweep runs many small groups, and
#: a grid value far beyond them would only exhaust a Spark worker's memory.
MAX_SCENARIO_PARTITIONS = 100_000
MAX_SCENARIO_MEMBERS = 10_000
MAX_SCENARIO_PAIRS = 10**8
MAX_SCENARIO_STEPS = 1_000


def size_problems(items: tuple[str, int, str], group: tuple[str, int, str], pairs: int,
                  pairs_what: str) -> list[tuple[str, str]]:
    """One scenario's size against :data:`MAX_SCENARIO_PARTITIONS`, :data:`MAX_SCENARIO_MEMBERS` and
    :data:`MAX_SCENARIO_PAIRS` (the first one crossed): ``(field, message)`` pairs for ``problems()``.

    ``items``: (how they are counted, how many, what they are); ``group``: (its field, its cap, how the cap
    is set); ``pairs``: items x group (x replicas), said as ``pairs_what``.
    """
    how, n_items, what = items
    field, cap, rule = group
    if n_items > MAX_SCENARIO_PARTITIONS:
        return [("partitions_max", f"{how} = {n_items:,} {what}, more than a scenario's limit of "
                                   f"{MAX_SCENARIO_PARTITIONS:,}")]
    if cap > MAX_SCENARIO_MEMBERS:
        return [(field, f"up to {cap:,} {field} ({rule}), more than a scenario's limit of {MAX_SCENARIO_MEMBERS:,}")]
    if pairs > MAX_SCENARIO_PAIRS:
        return [(field, f"{pairs_what}, more than a scenario's limit of {MAX_SCENARIO_PAIRS:,} pairs")]
    return []


def _shown(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:39] + "..."


def _int_at_least(lo: int, hi: int = JAVA_INT_MAX) -> Callable[[Any], str | None]:
    """An integer in ``lo..hi`` (a Java ``int`` unless said otherwise)."""
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            return f"expected an integer, got {_shown(v)}"
        if v > hi:
            return f"must be <= {hi}{' (a Java int)' if hi == JAVA_INT_MAX else ''}, got {_shown(v)}"
        return None if v >= lo else f"must be >= {lo}, got {v}"

    return check


def _float_range(lo: float, hi: float = 1e6, lo_open: bool = False) -> Callable[[Any], str | None]:
    """A finite number in ``lo..hi`` (``lo`` excluded when ``lo_open``)."""
    def check(v: Any) -> str | None:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or v != v:
            return f"expected a number, got {_shown(v)}"
        if not math.isfinite(v):
            return f"must be a finite number, got {v}"
        if (v <= lo) if lo_open else (v < lo):
            return f"must be {'>' if lo_open else '>='} {lo}, got {v}"
        if hi is not None and v > hi:
            return f"must be <= {hi}, got {v}"
        return None

    return check


def _choice(options: Sequence[str]) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in options else f"must be one of {', '.join(options)}; got {v!r}"

    return check


def _optional(check: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    return lambda v: None if v is None else check(v)


def _events_check(known: Sequence[str], what: str = "event kind") -> Callable[[Any], str | None]:
    """Check of an ``events`` value: a non-empty list of distinct kinds out of ``known`` (one generator's)."""
    def check(v: Any) -> str | None:
        if not isinstance(v, (tuple, list)) or not v:
            return "expected a non-empty list of event kinds"
        bad = [e for e in v if e not in known]
        if bad:
            return f"unknown {what}(s) {', '.join(map(repr, bad))}; known: {', '.join(known)}"
        if len(set(v)) != len(v):
            return "an event kind is listed twice"
        return None

    return check


class CheckedParams:
    """Shared machinery of generator parameters (frozen dataclasses that inherit it).

    ``_CHECKS`` maps each field to its check (one value -> message or None);
    :meth:`_cross_problems` adds the rules between fields.  Construction
    validates; :meth:`to_dict` / :meth:`from_dict` / :meth:`canonical_json`
    give the JSON form that scenario ids hash.
    """

    _CHECKS: ClassVar[Mapping[str, Callable[[Any], str | None]]] = MappingProxyType({})
    #: What an unknown key is called in :meth:`from_dict` errors.
    _WHAT: ClassVar[str] = "parameter"

    def __post_init__(self) -> None:
        events = self.__dict__.get("events")
        if isinstance(events, list):
            object.__setattr__(self, "events", tuple(events))
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(f"{k}: {v}" for k, v in problems))

    def problems(self) -> list[tuple[str, str]]:
        """Every problem as ``(field, message)``; empty when the parameters are valid."""
        out = []
        for name, check in self._CHECKS.items():
            msg = check(getattr(self, name))
            if msg:
                out.append((name, msg))
        # rules between fields only once every field is valid on its own
        return out or self._cross_problems()

    def _cross_problems(self) -> list[tuple[str, str]]:
        return []

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (``events`` as a list)."""
        d = asdict(self)  # type: ignore[call-overload]  # subclasses are dataclasses
        d["events"] = list(d["events"])
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """Build from a dict (unknown keys raise ``ValueError``)."""
        known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown {cls._WHAT}(s): {', '.join(unknown)}")
        d = dict(data)
        if "events" in d and isinstance(d["events"], list):
            d["events"] = tuple(d["events"])
        return cls(**d)

    def canonical_json(self) -> str:
        """Stable JSON (sorted keys) used for scenario ids."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))


def check_seed(seed: Any) -> int:
    """``seed`` as an ``int``; a ``ValueError`` unless it is a non-negative integer."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)
