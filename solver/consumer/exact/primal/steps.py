"""One step of the local search chosen: the members to try, the step among the candidates, item pairs.

Pure functions of arrays (no search state), shared by the moves, swaps and pair steps of :mod:`.local`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["item_pairs", "most_room", "pick"]


def most_room(room: np.ndarray, a: int, k: int) -> list[int]:
    """The ``k`` members other than ``a`` with the most room, most first (ties: lower index), room above 0.

    >>> most_room(np.array([5, 0, 7, 5, -2, 9]), a=5, k=3)
    [2, 0, 3]
    """
    idx = np.flatnonzero(room > 0)
    idx = idx[idx != a]
    return idx[np.lexsort((idx, -room[idx]))][:k].tolist()  # type: ignore[no-any-return]


def pick(D: np.ndarray, dc: np.ndarray, ok: np.ndarray, need: int) -> tuple[int, int]:
    """Row and column of the step to take among ``ok`` ones (at least one): the cheapest that shifts at
    least ``need``, else the one that shifts most (then the cheapest)."""
    full = ok & (need <= D)
    if full.any():
        flat = int(np.argmin(np.where(full, dc, np.iinfo(np.int64).max)))
    else:
        big = int(np.abs(dc).max()) + 1
        flat = int(np.argmax(np.where(ok, D * (2 * big) - dc, np.iinfo(np.int64).min)))
    r, col = divmod(flat, D.shape[1])
    return r, col


def item_pairs(items: np.ndarray, *, with_empty: bool) -> np.ndarray:
    """Rows of one or two items (``-1`` pads), optionally with an empty row first: shape ``(g, 2)``."""
    k = items.size
    rows = [[-1, -1]] if with_empty else []
    rows += [[int(items[x]), -1] for x in range(k)]
    rows += [[int(items[x]), int(items[y])] for x in range(k) for y in range(x + 1, k)]
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)
