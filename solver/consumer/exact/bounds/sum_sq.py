"""Lower bound on the sum of squared loads per capacity: the even split."""

from __future__ import annotations

import math
from fractions import Fraction


def sum_sq_bound(total: int, ratio: list[int]) -> int:
    """Least ``sum_m (ratio_m * load_m)**2`` over loads summing to ``total`` (integers when ratios are equal).

    A relaxation of every assignment (items, eligibility and caps ignored), so
    valid for the full model.

    >>> sum_sq_bound(10, [1, 1, 1])  # 4, 3, 3
    34
    >>> sum_sq_bound(10, [1, 2])  # loads 8 and 2 in the reals: 64 + 16
    80
    """
    if not ratio or total <= 0:
        return 0
    if len(set(ratio)) == 1:
        q, rem = divmod(total, len(ratio))
        return ratio[0] ** 2 * (rem * (q + 1) ** 2 + (len(ratio) - rem) * q * q)
    inv = sum(Fraction(1, r * r) for r in ratio)
    return math.ceil(Fraction(total * total) / inv)
