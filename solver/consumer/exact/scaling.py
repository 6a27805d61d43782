"""Exact integer scaling of item loads, member capacities and move costs.

The exact engine works in integers.  A value given as a float is read as the
rational it stands for: the float itself when its denominator (a power of
two) is small, else the simplest fraction with a denominator up to
:data:`MAX_DENOMINATOR` whose nearest float is that value (``0.1`` is
``1/10``).  All values of one kind are then multiplied by the lcm of their
denominators and divided by the gcd of the numerators, so loads
``393000, 541000, ...`` become ``393, 541, ...``: integrality then closes the
LP bound (``ceil``) and a proven integer optimum is the optimum in original
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

#: Largest denominator read as an exact rational.
MAX_DENOMINATOR = 10**6


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


@dataclass(frozen=True)
class Scale:
    """Integers standing for values: ``value = ints * unit`` (exactly when ``exact``)."""

    ints: list[int]
    unit: Fraction
    exact: bool


def integer_scale(values: Sequence[float] | np.ndarray, *, limit: int, total: float | None = None) -> Scale:
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
    Scale

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
        return Scale([], Fraction(1), True)
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
                return Scale(out, unit, True)
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
            return Scale(ints, unit, True)
    # no exact scale within range: a fixed resolution, rounded down (bounds stay valid lower bounds)
    top = max(vals) if total is None else float(total)
    if top <= 0:
        return Scale([0] * len(vals), Fraction(1), True)
    unit_f = top / limit
    unit = Fraction(unit_f).limit_denominator(2**40) or Fraction(1, 2**40)
    ints = [math.floor(Fraction(v) / unit) for v in vals]
    return Scale(ints, unit, False)


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
