"""Capacity planning parameters: :class:`PlanConfig`, its checks, ``--range`` parsing, shared limits.

See :mod:`solver.planning.plan` for the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: Above this many item x instance pairs CP-SAT models are skipped for greedy + bounds.
SAT_PAIR_LIMIT = 150_000
#: Most rows (instance counts) one plan tabulates: each row solves its own models.
MAX_PLAN_ROWS = 200
#: Relative tolerance when comparing float loads with capacity.
EPS = 1e-9


class PlanUsageError(ValueError):
    """A planning request that cannot be carried out as given (bad capacity, range ...)."""


@dataclass(frozen=True)
class PlanConfig:
    """Planning parameters (see :func:`solver.planning.plan.plan`)."""

    capacity: float
    resilience: int = 0
    range: tuple[int, int] | None = None
    catch_up_seconds: float | None = None
    lag_threshold: float = 10.0
    new_capacity: float = 1.0
    time_limit: float = 10.0
    seed: int = 0
    kafka: bool = True
    sat_pair_limit: int = SAT_PAIR_LIMIT
    active_load: float = 1.0
    standby_load: float = 1.0
    kafka_version: str | None = None


def check_config(cfg: PlanConfig) -> None:
    """Raise :class:`PlanUsageError` for a request that makes no sense.

    Parameters
    ----------
    cfg
        The planning parameters to check.

    Raises
    ------
    PlanUsageError
        Capacity not a positive finite number, negative resilience, non-positive
        catch-up seconds, lag threshold, new capacity or time limit, or an
        empty range.
    """
    if not (cfg.capacity > 0 and math.isfinite(cfg.capacity)):
        raise PlanUsageError(f"--capacity must be a positive number, got {cfg.capacity:g}")
    if cfg.resilience < 0:
        raise PlanUsageError(f"--resilience must be >= 0, got {cfg.resilience}")
    if cfg.catch_up_seconds is not None and not (cfg.catch_up_seconds > 0 and math.isfinite(cfg.catch_up_seconds)):
        raise PlanUsageError(f"--catch-up-seconds must be positive, got {cfg.catch_up_seconds:g}")
    if not cfg.lag_threshold > 0:
        raise PlanUsageError(f"--lag-threshold must be positive, got {cfg.lag_threshold:g}")
    if not cfg.new_capacity > 0:
        raise PlanUsageError(f"new instance capacity multiplier must be positive, got {cfg.new_capacity:g}")
    if cfg.time_limit is not None and not (cfg.time_limit > 0 and math.isfinite(cfg.time_limit)):
        raise PlanUsageError(f"--time-limit must be a positive number of seconds, got {cfg.time_limit:g}")
    if not 0 <= cfg.seed <= 2**31 - 1:
        raise PlanUsageError(f"--seed must be between 0 and {2**31 - 1} (CP-SAT's seed is a 32-bit int)")
    if cfg.range is not None:
        a, b = cfg.range
        _check_range(a, b, f"{a}:{b}")


def _check_range(lo: int, hi: int, shown: str) -> None:
    """``--range`` (written ``shown``) must be non-empty, start at 1 or above and fit in one plan."""
    if lo < 1 or hi < lo:
        raise PlanUsageError(f"--range {shown} is empty or starts below 1 (use A:B with 1 <= A <= B)")
    if hi - lo + 1 > MAX_PLAN_ROWS:
        raise PlanUsageError(f"--range {shown} asks for {hi - lo + 1} rows; at most {MAX_PLAN_ROWS} per plan "
                             f"(split the range)")


def parse_range(text: str) -> tuple[int, int]:
    """Parse ``"A:B"`` (both inclusive) or a single ``"N"``.

    Parameters
    ----------
    text
        The ``--range`` option.

    Returns
    -------
    tuple of int
        ``(A, B)`` with ``1 <= A <= B``.

    Raises
    ------
    PlanUsageError
        Not integers, or an empty range or one starting below 1.

    Examples
    --------
    >>> parse_range("3:6"), parse_range("4")
    ((3, 6), (4, 4))
    """
    a, sep, b = text.partition(":")
    try:
        lo = int(a)
        hi = int(b) if sep else lo
    except ValueError:
        raise PlanUsageError(f"--range expects A:B with integers, got {text!r}") from None
    _check_range(lo, hi, text)
    return lo, hi
