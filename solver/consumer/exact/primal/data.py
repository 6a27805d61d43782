"""The integer model every primal search works on: classes of equal items, members, move costs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Data"]


@dataclass(frozen=True)
class Data:
    """The integer model the search works on.

    Parameters
    ----------
    weights
        Class -> scaled integer load of one item (``W_c``).
    counts
        Class -> number of items.
    eligible
        Class -> members that may hold it.
    cost
        Class -> ``{member: move cost there}`` for members where it differs
        from the class's default cost (the default is ``default_cost[c]``).
    ratio
        Member -> capacity ratio: ``NL_m = ratio[m] * load_m``.
    default_cost
        Class -> move cost on a member not in ``cost[c]`` (default ``0``).
    """

    weights: Sequence[int]
    counts: Sequence[int]
    eligible: Sequence[Sequence[int]]
    cost: Sequence[dict[int, int]]
    ratio: Sequence[int]
    default_cost: Sequence[int] | None = None
