"""Capacity planning parameters: :class:`PlanConfig`, its checks, ``--range`` parsing, shared limits.

See :mod:`solver.planning.plan` for the model.
"""

from __future__ import annotations

from dataclasses import dataclass

from solver.errors import OptionError

#: Above this many item x instance pairs CP-SAT models are skipped for greedy + bounds.
SAT_PAIR_LIMIT = 150_000
#: Most rows (instance counts) one plan tabulates: each row solves its own models.
MAX_PLAN_ROWS = 200
#: Rows of the default table (no ``--range``): see :func:`solver.planning.rows.default_range`.
MAX_PLAN_DEFAULT_ROWS = 41
#: Largest ``--resilience K`` without ``--range``: the default table then still ends above ``K`` (it
#: reaches the minimum + K + 2 within its 41 rows).
MAX_DEFAULT_RESILIENCE = MAX_PLAN_DEFAULT_ROWS - 3
#: Relative tolerance when comparing float loads with capacity.
EPS = 1e-9


class PlanUsageError(OptionError):
    """A planning request that cannot be carried out as given (bad capacity, range ...): exit 2."""


@dataclass(frozen=True)
class PlanConfig:
    """Planning parameters (see :func:`solver.planning.plan.plan`)."""

    capacity: float
    resilience: int = 0
    range: tuple[int, int] | None = None
    catch_up_seconds: float | None = None
    lag_threshold: float = 10.0
    #: Capacity multiplier of an instance added beyond today's; ``None``: today's instances' size (the most
    #: common multiplier among them, the larger on a tie; 1 without instances).
    new_capacity: float | None = None
    time_limit: float = 10.0
    seed: int = 0
    kafka: bool = True
    sat_pair_limit: int = SAT_PAIR_LIMIT
    active_load: float = 1.0
    standby_load: float = 1.0
    kafka_version: str | None = None


def check_config(cfg: PlanConfig) -> None:
    """Raise :class:`PlanUsageError` for a request that makes no sense.

    Every number is checked against its range in the one option schema (:mod:`solver.options`):
    capacity, loads and multipliers finite and within bounds that keep every ratio a normal float
    (``0``, ``-0``, ``1e308``, ``inf``, ``NaN``, negative and subnormal values are refused).

    Parameters
    ----------
    cfg
        The planning parameters to check.

    Raises
    ------
    PlanUsageError
        A value out of its range (the message names the option and the range), or an empty range.
    """
    from solver.errors import OptionError
    from solver.options import (
        ACTIVE_LOAD,
        CAPACITY,
        CATCH_UP_SECONDS,
        LAG_THRESHOLD,
        NEW_CAPACITY,
        RESILIENCE,
        SEED,
        STANDBY_LOAD,
        TIME_LIMIT,
        check_optional,
    )

    try:
        CAPACITY.check(cfg.capacity)
        RESILIENCE.check(cfg.resilience)
        check_optional(CATCH_UP_SECONDS, cfg.catch_up_seconds)
        LAG_THRESHOLD.check(cfg.lag_threshold)
        check_optional(NEW_CAPACITY, cfg.new_capacity)
        check_optional(TIME_LIMIT, cfg.time_limit)
        SEED.check(cfg.seed)
        ACTIVE_LOAD.check(cfg.active_load)
        STANDBY_LOAD.check(cfg.standby_load)
    except OptionError as e:
        raise PlanUsageError(str(e)) from None
    if cfg.range is not None:
        a, b = cfg.range
        _check_range(a, b, f"{a}:{b}")
        if cfg.resilience >= b:
            raise PlanUsageError(f"--resilience {cfg.resilience}: every instance count of --range {a}:{b} is at most "
                                 f"{cfg.resilience}, so losing {cfg.resilience} instances leaves none (K must be "
                                 f"below the largest count)")
    elif cfg.resilience > MAX_DEFAULT_RESILIENCE:
        raise PlanUsageError(f"--resilience {cfg.resilience}: the default table ({MAX_PLAN_DEFAULT_ROWS} counts from "
                             f"the minimum) has no count above K; give --range A:B with B > {cfg.resilience}")


def _check_range(lo: int, hi: int, shown: str) -> None:
    """``--range`` (written ``shown``) must be non-empty, start at 1 or above and fit in one plan."""
    if isinstance(lo, bool) or isinstance(hi, bool) or not (isinstance(lo, int) and isinstance(hi, int)):
        raise PlanUsageError(f"--range {shown}: expected integers A:B")
    if hi > 2**31 - 1:
        raise PlanUsageError(f"--range {shown}: at most {2**31 - 1} instances (a Java int)")
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
