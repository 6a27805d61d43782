"""Integer scaling: every way kassign turns real loads, capacities and costs into integers.

The engines work in integers (CP-SAT, min-cost flow, the exact class-count
engine, bin packing), so a proof about the integers must be a proof about the
input.  Three scalings, one home:

- :func:`decimal_scale` / :func:`decimal_power`: the smallest power of ten
  making values integral (the flow engine, the weighted-sum model, exact sums
  of decimal weights, capacity planning's costs);
- :func:`integerize`: sizes and bin capacities for bin packing, exact when a
  power of ten fits and otherwise rounded conservatively in both directions
  (:class:`IntData`);
- :func:`integer_scale` and :func:`capacity_ratios`: the exact engine's
  scaling, below.

A value given as a float is read as the rational it stands for
(:func:`as_rational`, :func:`rational`): the float itself when its denominator
(a power of two) is small, else the simplest fraction with a denominator up to
:data:`MAX_DENOMINATOR` whose nearest float is that value (``0.1`` is
``1/10``).  For the exact engine, all values of one kind are then multiplied by
the lcm of their denominators and divided by the gcd of the numerators, so
loads ``393000, 541000, ...`` become ``393, 541, ...``: integrality then closes
the LP bound (``ceil``) and a proven integer optimum is the optimum in original
units.  When no such exact scale fits the integer range the solvers need,
values are rounded to a fixed resolution and the result is proven only up to
that resolution (``exact = False``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

#: Move costs and weights are made integral by a power of ten up to this exponent.
MAX_DECIMALS = 6

#: Largest denominator read as an exact rational.
MAX_DENOMINATOR = 10**MAX_DECIMALS

#: Largest integer magnitude bin packing lets into a CP-SAT linear expression (sizes x counts).
INT_LIMIT = 2**52

#: Resolution of bin packing's conservative rounding when no exact decimal scaling exists.
TARGET_CAPACITY = 10**7

IntArray = npt.NDArray[np.int64]


def decimal_power(values: np.ndarray, max_decimals: int = MAX_DECIMALS, *, int_limit: float | None = None
                  ) -> int | None:
    """Smallest power of ten ``10**d`` (``d <= max_decimals``) making ``values`` integral, or ``None``.

    A scaled value counts as integral within a relative ``1e-9``.  With ``int_limit``, ``None`` also when
    the largest scaled magnitude times the number of values exceeds it before an integral power is found.

    Examples
    --------
    >>> decimal_power(np.array([1.5, 2.25])), decimal_power(np.array([1 / 3])) is None
    (100, True)
    >>> decimal_power(np.array([2.0**60, 0.5]), int_limit=INT_LIMIT) is None
    True
    """
    if values.size == 0:
        return 1
    for d in range(max_decimals + 1):
        s = values * (10**d)
        if int_limit is not None and float(np.abs(s).max()) * max(values.size, 1) > int_limit:
            return None
        if np.all(np.abs(s - np.round(s)) <= 1e-9 * np.maximum(1.0, np.abs(s))):
            return 10**d
    return None


def decimal_scale(values: np.ndarray, max_decimals: int = MAX_DECIMALS) -> int:
    """Smallest power of ten ``10**d`` (``d <= max_decimals``) making ``values`` integral.

    Returns ``10**max_decimals`` when no smaller power works (values are then
    rounded to ``max_decimals`` decimals).

    Examples
    --------
    >>> decimal_scale(np.array([1.0, 2.5, 0.25]))
    100
    >>> decimal_scale(np.array([3.0]))
    1
    """
    power = decimal_power(values, max_decimals)
    return 10**max_decimals if power is None else power


def as_rational(value: float, max_denominator: int = MAX_DENOMINATOR) -> Fraction | None:
    """The rational a float stands for, or ``None`` when it has no small denominator.

    Examples
    --------
    >>> as_rational(0.1), as_rational(393000.0), as_rational(2.5)
    (Fraction(1, 10), Fraction(393000, 1), Fraction(5, 2))
    >>> as_rational(float("nan")) is None
    True
    """
    if not math.isfinite(value):
        return None
    exact = Fraction(value)
    if exact.denominator <= max_denominator:
        return exact
    near = exact.limit_denominator(max_denominator)
    return near if float(near) == value else None


def rational(value: float, max_denominator: int = MAX_DENOMINATOR) -> Fraction:
    """The rational a float stands for (:func:`as_rational`), else the float's exact value.

    >>> rational(0.1), rational(1.37), rational(0.5)
    (Fraction(1, 10), Fraction(137, 100), Fraction(1, 2))
    """
    near = as_rational(value, max_denominator)
    return Fraction(value) if near is None else near


@dataclass(frozen=True)
class IntData:
    """Bin-packing sizes and capacities scaled to integers (:func:`integerize`).

    Attributes
    ----------
    factor
        Real value x is represented by about ``x * factor``.
    exact
        True when every value scaled to an integer exactly (then the ``up`` and
        ``down`` arrays coincide).
    sizes_up, caps_down
        Rounded so that any integer packing is a real packing (use to find and
        certify assignments).
    sizes_down, caps_up
        Rounded so that integer infeasibility implies real infeasibility (use
        for lower bounds and infeasibility proofs).
    """

    factor: float
    exact: bool
    sizes_up: IntArray
    caps_down: IntArray
    sizes_down: IntArray
    caps_up: IntArray


def integerize(sizes: npt.ArrayLike, capacities: npt.ArrayLike) -> IntData:
    """Scale ``sizes`` and bin ``capacities`` to integers (see :class:`IntData`).

    Exact when one power of ten (:func:`decimal_power`) makes every value integral within :data:`INT_LIMIT`;
    otherwise rounded to a resolution of :data:`TARGET_CAPACITY` per largest capacity, sizes up and
    capacities down for packings, the other way for infeasibility proofs.

    Examples
    --------
    >>> d = integerize([1.5, 2.25], [4.0])
    >>> d.exact, d.sizes_up.tolist(), d.caps_down.tolist()
    (True, [6, 9], [16])
    >>> d = integerize([1 / 3], [1.0])
    >>> d.exact, bool(d.sizes_up[0] * 3 > d.caps_down[0]), bool(d.sizes_down[0] * 3 <= d.caps_up[0])
    (False, True, True)
    """
    s = np.asarray(sizes, dtype=np.float64)
    c = np.asarray(capacities, dtype=np.float64)
    both = np.concatenate([s, c])
    f = decimal_power(both, int_limit=INT_LIMIT)
    if f is not None:
        si = np.round(s * f).astype(np.int64)
        ci = np.round(c * f).astype(np.int64)
        g = int(np.gcd.reduce(np.concatenate([si, ci]))) if si.size + ci.size else 1
        if g > 1:  # smaller integers make CP-SAT's job easier
            si, ci = si // g, ci // g
        return IntData(float(f) / max(g, 1), True, si, ci, si, ci)
    top = float(c.max()) if c.size else 1.0
    top = top if top > 0 else 1.0
    fac = TARGET_CAPACITY / top
    # an item far larger than every capacity (load 1e99, capacity 1e-100) would overflow int64; clipped, it
    # still exceeds every capacity (at most TARGET_CAPACITY), which is all that matters about it
    sf = np.minimum(s * fac, float(INT_LIMIT))
    return IntData(
        fac,
        False,
        np.ceil(sf).astype(np.int64),
        np.floor(c * fac).astype(np.int64),
        np.floor(sf).astype(np.int64),
        np.ceil(c * fac).astype(np.int64),
    )


@dataclass(frozen=True)
class IntegerScale:
    """Integers standing for values: ``value = ints * unit`` (exactly when ``exact``)."""

    ints: list[int]
    unit: Fraction
    exact: bool


def integer_scale(values: Sequence[float] | np.ndarray, *, limit: int, total: float | None = None) -> IntegerScale:
    """Scale non-negative ``values`` to integers with their gcd divided out.

    Parameters
    ----------
    values
        Non-negative finite floats.
    limit
        Largest allowed scaled value (or scaled ``total`` when given).
    total
        When given, the scaled values times their multiplicities must sum to
        at most ``limit``: ``total`` is that multiplicity-weighted sum in
        units of the unscaled values, computed by the caller as
        ``sum(count * value)``; only its scale matters.

    Returns
    -------
    IntegerScale

    Examples
    --------
    >>> s = integer_scale([393000.0, 541000.0, 0.0], limit=2**40)
    >>> s.ints, s.unit, s.exact
    ([393, 541, 0], Fraction(1000, 1), True)
    >>> integer_scale([0.5, 1.25], limit=2**40).ints
    [2, 5]
    """
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0:
        return IntegerScale([], Fraction(1), True)
    for d in range(7):
        # fast path: values with at most d decimals (most inputs), exact in integers below 2**53
        scaled = arr * 10**d
        ints_np = np.round(scaled)
        if np.all(np.abs(ints_np) < 2**53) and np.all(ints_np / 10**d == arr):
            iv = ints_np.astype(np.int64)
            g = int(np.gcd.reduce(iv)) if iv.size else 0
            g = g or 1
            unit = Fraction(g, 10**d)
            out = (iv // g).tolist()
            biggest = max(out) if total is None else float(total) / float(unit)
            if biggest <= limit:
                return IntegerScale(out, unit, True)
            break
    vals = arr.tolist()
    fr = [as_rational(v) for v in vals]
    if all(f is not None for f in fr):
        den = 1
        for f in fr:
            den = math.lcm(den, f.denominator)  # type: ignore[union-attr]
        nums = [int(f * den) for f in fr]  # type: ignore[operator]
        g = 0
        for v in nums:
            g = math.gcd(g, v)
        g = g or 1
        ints = [v // g for v in nums]
        unit = Fraction(g, den)
        biggest = max(ints) if total is None else float(total) / float(unit)
        if biggest <= limit:
            return IntegerScale(ints, unit, True)
    # no exact scale within range: a fixed resolution, rounded down (bounds stay valid lower bounds)
    top = max(vals) if total is None else float(total)
    if top <= 0:
        return IntegerScale([0] * len(vals), Fraction(1), True)
    unit_f = top / limit
    unit = Fraction(unit_f).limit_denominator(2**40) or Fraction(1, 2**40)
    ints = [math.floor(Fraction(v) / unit) for v in vals]
    return IntegerScale(ints, unit, False)


def capacity_ratios(capacities: Iterable[float]) -> tuple[list[int], Fraction, bool]:
    """Integer multipliers ``r_m`` with ``load / capacity_m = load * r_m / P``.

    Capacities ``p_m / q_m`` (rationals) give ``P = lcm(p_m)`` and
    ``r_m = q_m * P / p_m``.  Returns ``(ratios, P, exact)``; inexact
    capacities (no small rational, or ``P`` above ``10**6``) fall back to
    ratios rounded from ``max(c) / c_m`` times 1000.

    Examples
    --------
    >>> capacity_ratios([1.0, 2.0, 4.0])
    ([4, 2, 1], Fraction(4, 1), True)
    >>> capacity_ratios([1.5, 1.0])
    ([2, 3], Fraction(3, 1), True)
    """
    caps = [float(c) for c in capacities]
    if not caps:
        return [], Fraction(1), True
    fr = [as_rational(c, 10**4) for c in caps]
    if all(f is not None and f > 0 for f in fr):
        big = 1
        for f in fr:
            big = math.lcm(big, f.numerator)  # type: ignore[union-attr]
        if big <= 10**6:
            ratios = [f.denominator * big // f.numerator for f in fr]  # type: ignore[union-attr]
            return ratios, Fraction(big), True
    top = max(caps)
    ratios = [max(1, round(1000 * top / c)) for c in caps]
    return ratios, Fraction(1000) * Fraction(top).limit_denominator(10**6), False
