"""The exact engine's integer data: loads per capacity and move costs as exact integers.

:func:`scale` turns an instance's item classes into :class:`Scaled` integers
(:mod:`.scaling`); :func:`local_data` gives the primal heuristics
(:mod:`.primal`) the same numbers as :class:`.primal.local.Data`; :func:`levelled` runs
the primal levelling on a CP-SAT solution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from solver.consumer.exact.primal.data import Data
from solver.consumer.exact.primal.local import MAX_ITEMS, level
from solver.consumer.items import ItemClasses
from solver.scaling import capacity_ratios, integer_scale

#: Largest scaled total load per capacity (linear stages; int64 with room).
MAX_LINEAR = 2**40


@dataclass
class Scaled:
    """The integer data of one instance."""

    wint: list[int]
    ratio: list[int]
    load_unit: Fraction  # original load per capacity = NL * load_unit
    move_unit: Fraction
    owned: list[int]
    own: list[dict[int, int]]
    exact: bool
    notes: list[str] = field(default_factory=list)


def scale(ic: ItemClasses, caps: Sequence[float]) -> Scaled:
    """Exact integers for loads per capacity and move costs (see :mod:`.scaling`)."""
    ratio, big_p, exact_caps = capacity_ratios(caps)
    max_ratio = max(ratio, default=1)
    total = float((ic.weight * ic.count).sum())
    ws = integer_scale(ic.weight.tolist(), limit=max(1, MAX_LINEAR // max_ratio), total=total)
    mvals = [float(v) for v in ic.owned_cost.tolist()] + [c for own in ic.owners for _, c in own]
    ms = integer_scale(mvals, limit=2**40 // max(1, ic.total_items))
    nc = ic.n_classes
    owned = ms.ints[:nc]
    rest = iter(ms.ints[nc:])
    own = [{o: next(rest) for o, _ in ic.owners[c]} for c in range(nc)]
    notes = []
    if not ws.exact:
        notes.append("item loads have no exact integer scale: proven up to a load resolution of "
                      f"{float(ws.unit / big_p):.3g}")
    if not exact_caps:
        notes.append("capacities have no small rational form: loads per capacity are rounded")
    if not ms.exact:
        notes.append(f"move costs rounded to a resolution of {float(ms.unit):.3g}")
    return Scaled(ws.ints, ratio, ws.unit / big_p, ms.unit, owned, own,
                  ws.exact and exact_caps and ms.exact, notes)


def eligible_lists(ic: ItemClasses) -> list[list[int]]:
    """Per class, its eligible members: one shared list per eligible set (the heuristics key their caches on it)."""
    lists = [e.tolist() for e in ic.eligsets]
    return [lists[int(e)] for e in ic.cls_elig.tolist()]


def local_data(ic: ItemClasses, sc: Scaled, eligible: Sequence[Sequence[int]] | None = None) -> Data:
    """The engine's integer model for :mod:`.primal`: scaled loads, capacity ratios, move costs per member."""
    if eligible is None:
        eligible = eligible_lists(ic)
    return Data(weights=sc.wint, counts=[int(k) for k in ic.count.tolist()], eligible=eligible,
                cost=[{m: sc.owned[c] - k for m, k in sc.own[c].items()} for c in range(ic.n_classes)],
                ratio=sc.ratio, default_cost=sc.owned)


def levelled(sol: dict[tuple[int, int], int], cand: list[list[int]], ic: ItemClasses, sc: Scaled, zcap: int,
             moves_cap: int, deadline: float | None, max_steps: int | None) -> dict[tuple[int, int], int]:
    """A CP-SAT solution (counts by class and member) with a lower sum of squares
    (:func:`.primal.local.level`), items kept inside their candidates ``cand``."""
    if ic.total_items > MAX_ITEMS:
        return sol
    counts = np.zeros((ic.n_classes, ic.n_members), dtype=np.int64)
    for (c, m), k in sol.items():
        counts[c, m] = k
    out = level(local_data(ic, sc, cand), counts, zcap, moves_cap, deadline=deadline, max_steps=max_steps)
    return {(int(c), int(m)): int(out[c, m]) for c, m in zip(*np.nonzero(out), strict=True)}
