"""Reference formulation of the flow model in networkx (no aggregation): a test oracle, not product code.

Every item (topic-partition, or co-partition unit) is its own node with an arc
to every eligible member; each member has one unit arc per load level ``k``
(cost ``2k - 1``) to the sink.  It is written independently of
:mod:`solver.consumer.items` / :mod:`solver.consumer.flow` (items are derived here from the
instance directly) so that the tests compare two formulations, not one.
Only for small instances (unit weights, equal capacities, co-partition units of
one size).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx

from solver.model import Instance
from solver.model.semantics import GroupView


@dataclass(frozen=True)
class NxItem:
    """One item: its topic-partitions, eligible members, per-member move and rack costs."""

    tps: tuple[tuple[str, int], ...]
    eligible: tuple[int, ...]
    move: tuple[int, ...]  # per eligible member
    rack: tuple[int, ...]  # per eligible member


def nx_items(instance: Instance) -> list[NxItem]:
    """Every item of ``instance`` with its costs (unit move costs per topic-partition)."""
    view = GroupView(instance)
    prev = view.previous_owners
    members = instance.members

    def rack_miss(t: str, p: int, m: int) -> int:
        racks = instance.topics[t].racks
        r = members[m].rack
        return int(racks is not None and r is not None and r not in racks[p])

    def mcost(t: str, p: int) -> int:
        mc = instance.topics[t].move_costs
        return round(mc[p]) if mc is not None else 1

    items: list[NxItem] = []
    for t in instance.topics:
        subs = view.subscribers[t]
        if not subs:
            continue
        start = view.limits[t] if t in view.group_of else 0
        for p in range(start, instance.topics[t].partitions):
            o = int(prev[t][p])
            move = tuple(0 if o < 0 or o == m else mcost(t, p) for m in subs)
            items.append(NxItem(((t, p),), subs, move, tuple(rack_miss(t, p, m) for m in subs)))
    for g, group in enumerate(instance.copartition):
        if not any(view.subscribers[t] for t in group):
            continue
        elig = view.unit_eligible(g)
        for p in range(view.limits[group[0]]):
            tps = tuple((t, p) for t in group)
            # each topic-partition of the unit counts when its own previous owner is not m
            move = tuple(sum(mcost(t, p) for t in group if prev[t][p] >= 0 and prev[t][p] != m) for m in elig)
            rack = tuple(sum(rack_miss(t, p, m) for t in group) for m in elig)
            items.append(NxItem(tps, elig, move, rack))
    return items


def nx_solve(instance: Instance, order: Sequence[str] = ("balance", "moves", "racks")) -> dict[str, int]:
    """Lexicographic optimum by networkx network simplex.

    Returns
    -------
    dict
        ``sum_sq_items`` (sum of squared item counts), ``moves``, ``racks``
        of an optimal flow, and ``loads`` (item count per member).
    """
    items = nx_items(instance)
    n = len(instance.members)
    total = len(items)
    max_move = sum(max(it.move, default=0) for it in items)
    max_rack = sum(max(it.rack, default=0) for it in items)
    ranges = {"balance": total * total, "moves": max_move, "racks": max_rack}
    scale: dict[str, int] = {}
    acc = 0
    for crit in reversed(order):
        scale[crit] = acc + 1
        acc += scale[crit] * ranges[crit]
    s_b, s_m, s_r = (scale.get(c, 0) for c in ("balance", "moves", "racks"))
    g = nx.DiGraph()
    g.add_node("sink", demand=total)
    for i, it in enumerate(items):
        g.add_node(("i", i), demand=-1)
        for m, mv, rk in zip(it.eligible, it.move, it.rack, strict=True):
            g.add_edge(("i", i), ("m", m), capacity=1, weight=s_m * mv + s_r * rk)
    elig_count = [0] * n
    for it in items:
        for m in it.eligible:
            elig_count[m] += 1
    for m in range(n):
        for k in range(1, elig_count[m] + 1):
            g.add_edge(("m", m), ("l", m, k), capacity=1, weight=s_b * (2 * k - 1))
            g.add_edge(("l", m, k), "sink", capacity=1, weight=0)
    flow = nx.min_cost_flow(g)
    loads = [0] * n
    moves = racks = 0
    for i, it in enumerate(items):
        for m, mv, rk in zip(it.eligible, it.move, it.rack, strict=True):
            if flow[("i", i)].get(("m", m), 0):
                loads[m] += 1
                moves += mv
                racks += rk
    return {"sum_sq_items": sum(x * x for x in loads), "moves": moves, "racks": racks, "loads": loads}  # type: ignore[dict-item]

