"""Brute force over every assignment of a tiny consumer instance: the reference of the optimal-engine tests."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from solver.model import Instance
from tests.solver.consumer.flow_nx import nx_items


def all_assignments(inst: Instance) -> list[dict[str, float]]:
    """(max_load, sum_sq, moves) of every assignment of a tiny instance (loads per capacity, move costs).

    Each row also has ``sum_sq_items`` (the sum of squared item counts per member, the flow engine's
    balance) and ``racks`` (cross-rack topic-partitions).
    """
    items = nx_items(inst)
    caps = np.array([m.capacity for m in inst.members])

    def w(it: Any) -> float:
        return sum(float(inst.topics[t].weights[p]) if inst.topics[t].weights is not None else 1.0
                   for t, p in it.tps)

    ws = [w(it) for it in items]
    out = []
    for combo in itertools.product(*[range(len(it.eligible)) for it in items]):
        loads = np.zeros(len(inst.members))
        counts = [0] * len(inst.members)
        moves = 0.0
        racks = 0
        for it, wt, j in zip(items, ws, combo, strict=True):
            loads[it.eligible[j]] += wt
            counts[it.eligible[j]] += 1
            moves += it.move[j]
            racks += it.rack[j]
        nl = loads / caps
        out.append({"max_load": round(float(nl.max()), 9), "sum_sq": round(float((nl**2).sum()), 9),
                    "moves": round(moves, 9), "sum_sq_items": sum(c * c for c in counts), "racks": racks})
    return out


def lexmin(rows: Sequence[dict[str, float]], order: Sequence[str]) -> tuple[float, ...]:
    """The lexicographically least ``order`` values over ``rows``."""
    return min(tuple(r[s] for s in order) for r in rows)


def small(inst: Instance, limit: int) -> bool:
    """Whether the instance has at most ``limit`` assignments (brute force stays quick)."""
    return math.prod(len(it.eligible) for it in nx_items(inst)) <= limit
