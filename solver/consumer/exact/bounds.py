"""Lower bounds for the exact engine: LP bound of the max load, knapsack bound of the moved cost.

Both are valid for the full model, so they also certify results of a model
restricted to member neighbourhoods.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from solver.consumer.items import ItemClasses
from solver.runtime import run_mip

#: Relative slack taken off the LP optimum before rounding up (floating-point LP).
LP_SLACK = 1e-7


def max_load_bound(ic: ItemClasses, wint: list[int], ratio: list[int], *, use_lp: bool = True) -> int:
    """Lower bound on the scaled max load ``Z`` (an integer, so bounds round up).

    The largest of: each item on its best eligible member; for every eligible
    set ``E``, the load of the classes confined to ``E`` spread over ``E``
    (exact rationals); and, with ``use_lp``, the LP relaxation of the
    class-count model (GLOP), less a relative slack of :data:`LP_SLACK`.
    """
    nc = ic.n_classes
    best = 0
    min_ratio = [min(ratio[m] for m in e.tolist()) for e in ic.eligsets]
    for c in range(nc):
        if ic.count[c] > 0 and wint[c] > 0:
            best = max(best, wint[c] * min_ratio[int(ic.cls_elig[c])])
    per_set: dict[int, int] = {}
    for c in range(nc):
        per_set[int(ic.cls_elig[c])] = per_set.get(int(ic.cls_elig[c]), 0) + wint[c] * int(ic.count[c])
    sets = [(e, frozenset(ic.eligsets[e].tolist())) for e in per_set]
    if len(sets) <= 300:
        for e, members in sets:
            load = sum(v for f, v in per_set.items() if f == e or ic_sub(ic, f, members))
            room = sum(Fraction(1, ratio[m]) for m in members)
            if room > 0:
                best = max(best, math.ceil(Fraction(load) / room))
    # with one eligible set the LP optimum is that set's spread load, already counted above
    if use_lp and nc and len({int(e) for e in ic.cls_elig.tolist()}) > 1:
        best = max(best, _lp_bound(ic, wint, ratio))
    return best


def ic_sub(ic: ItemClasses, e: int, members: frozenset[int]) -> bool:
    """Whether eligible set ``e`` lies inside ``members``."""
    s = ic.eligsets[e]
    return len(s) <= len(members) and all(int(m) in members for m in s.tolist())


def _lp_bound(ic: ItemClasses, wint: list[int], ratio: list[int]) -> int:
    from ortools.linear_solver import pywraplp

    lp = pywraplp.Solver.CreateSolver("GLOP")
    if lp is None:
        return 0
    rows: list[list[tuple[int, Any]]] = [[] for _ in range(ic.n_members)]
    for c in range(ic.n_classes):
        cnt = int(ic.count[c])
        if cnt == 0:
            continue
        xs = []
        for m in ic.eligsets[int(ic.cls_elig[c])].tolist():
            v = lp.NumVar(0, cnt, "")
            xs.append(v)
            if wint[c]:
                rows[m].append((wint[c], v))
        lp.Add(lp.Sum(xs) == cnt)
    z = lp.NumVar(0, lp.infinity(), "z")
    for m, row in enumerate(rows):
        if row:
            lp.Add(z >= ratio[m] * lp.Sum([w * v for w, v in row]))
    lp.Minimize(z)
    if run_mip(lp) != pywraplp.Solver.OPTIMAL:
        return 0
    val = z.solution_value()
    return max(0, math.ceil(val - max(1e-6, LP_SLACK * abs(val))))


def moves_bound(ic: ItemClasses, wint: list[int], ratio: list[int], owned: list[int],
                own: list[dict[int, int]], zcap: int) -> int:
    """Lower bound on the scaled moved cost of any assignment with every ``NL_m <= zcap``.

    Items that cannot stay pay their cheapest move; a member whose kept owned
    load exceeds ``zcap`` sheds at least the excess, at the least cost per
    unit of load (fractional knapsack over its singly-owned classes).
    """
    total = 0
    shed: dict[int, list[tuple[Fraction, int, int]]] = {}
    kept: dict[int, int] = {}
    elig = [set(e.tolist()) for e in ic.eligsets]
    for c in range(ic.n_classes):
        cnt = int(ic.count[c])
        members = elig[int(ic.cls_elig[c])]
        # the cheapest destination: the eligible owner holding the most of the item's state, else anyone
        cheapest = owned[c] - max((k for m, k in own[c].items() if m in members), default=0)
        total += cnt * cheapest
        if len(own[c]) == 1 and cheapest == 0:
            (o, cost), = own[c].items()
            if cost == owned[c] and wint[c] > 0:
                kept[o] = kept.get(o, 0) + wint[c] * cnt
                shed.setdefault(o, []).append((Fraction(cost, wint[c]), wint[c], cnt))
    extra = Fraction(0)
    for m, load in kept.items():
        excess = load - Fraction(zcap, ratio[m])
        if excess <= 0:
            continue
        for per, w, cnt in sorted(shed[m]):
            take = min(Fraction(w * cnt), excess)
            extra += take * per
            excess -= take
            if excess <= 0:
                break
    return total + math.ceil(extra)
