"""Balance-movement Pareto frontier: for each movement budget, the best achievable balance.

For budgets ``B = 0 .. M*`` (``M*`` = moves of the most balanced assignment
with fewest moves) the frontier point is the most balanced assignment with
moved cost ``<= B`` (maximum load, then sum of squared loads, then fewest
moves).  Moves are counted per topic-partition as the scorer does, so that
heuristics can be placed on the same axes.

Engines: when every item has the same load, capacities are equal, all items
share one eligible set and all owned items have the same move cost, the budget
is one gate arc in the min-cost flow network (exact and fast); otherwise each
point is a CP-SAT solve with a moves cap (status per point).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from solver.consumer.cpsat import solve_cpsat
from solver.consumer.flow import solve_flow
from solver.consumer.items import ItemClasses, build_classes
from solver.model import Instance
from solver.result import Params

DEFAULT_POINT_LIMIT = 10.0


def _budgets(top: int, max_points: int) -> list[int]:
    if top + 1 <= max_points:
        return list(range(top + 1))
    return sorted({round(x) for x in np.linspace(0, top, max_points)})


def _loads(ic: ItemClasses, flows: Sequence[tuple[int, int, int]], caps: np.ndarray) -> np.ndarray:
    load = np.zeros(ic.n_members)
    for c, m, k in flows:
        load[m] += k * float(ic.weight[c])
    return load / caps


def _flow_ok(instance: Instance, ic: ItemClasses) -> bool:
    if len({m.capacity for m in instance.members}) > 1:
        return False
    if len(set(ic.weight[ic.count > 0].tolist())) > 1:
        return False
    if len(set(ic.cls_elig.tolist())) > 1:
        return False
    return len({float(c) for c in ic.owned_cost[ic.owned_cost > 0].tolist()}) <= 1


def compute_frontier(instance: Instance, params: Params, max_points: int = 60) -> dict[str, Any]:
    """The frontier as a JSON-ready dict.

    Returns
    -------
    dict
        ``engine``, ``optimum_moves`` (``M*``), ``points``: one per budget with
        ``budget``, ``max_load``, ``sum_sq``, ``moved``, ``proven``.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4}, "members": [
    ...     {"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}, "generation": 1},
    ...     {"id": "b", "topics": ["T"]}]})
    >>> [(p["budget"], p["max_load"]) for p in compute_frontier(inst, Params())["points"]]
    [(0, 4.0), (1, 3.0), (2, 2.0)]
    """
    from solver.consumer.gaps import _unit_move_costs

    instance = _unit_move_costs(instance)  # the budget counts moved topic-partitions, as the scorer's moved
    ic = build_classes(instance)
    caps = np.array([m.capacity for m in instance.members], dtype=np.float64)
    racks = [m.rack for m in instance.members]
    points: list[dict[str, Any]] = []
    if ic.total_items == 0 or not instance.members:
        return {"instance": instance.name, "engine": "none", "optimum_moves": 0,
                "points": [{"budget": 0, "max_load": 0.0, "sum_sq": 0.0, "moved": 0.0, "proven": True}]}
    tl = params.time_limit if params.time_limit is not None else DEFAULT_POINT_LIMIT
    use_flow = _flow_ok(instance, ic)

    def solve_at(budget: float | None) -> tuple[list[tuple[int, int, int]], float, bool]:
        if use_flow:
            if budget is None:
                out = solve_flow(ic, racks, order=("balance", "moves"))
            else:
                out = solve_flow(ic, racks, order=("balance", "moves"), move_budget=round(budget))
            return out.flows, out.moved_cost_int / out.move_scale, True
        cout = solve_cpsat(ic, caps, racks, stages=("max_load", "sum_sq", "moves"), time_limit=tl,
                           seed=params.seed, moves_cap=budget)
        proven = all(r.proven for r in cout.stages) and cout.exact and not cout.restricted
        return cout.flows, cout.stages[-1].value, proven

    _, top, _ = solve_at(None)
    for b in _budgets(round(top), max_points):
        flows, moved, proven = solve_at(float(b))
        loads = _loads(ic, flows, caps)
        points.append({"budget": b, "max_load": float(loads.max()), "sum_sq": float((loads**2).sum()),
                       "moved": moved, "proven": proven})
    return {"instance": instance.name, "engine": "flow" if use_flow else "cpsat", "optimum_moves": top,
            "points": points}


def dominating(h: dict[str, Any], points: Sequence[dict[str, Any]],
               keys: Sequence[str] = ("moved", "max_load", "sum_sq")) -> dict[str, Any] | None:
    """A frontier point that dominates ``h`` (no more moves, no worse balance, better in one), else ``None``.

    ``h`` and the points carry ``keys``: the moves, then the balance measures (Streams:
    ``moved``, ``max_active_load``, ``max_total_load``).  A
    heuristic is on the frontier only when no point dominates it: one as
    balanced as the optimum that moved more than the optimum is not.

    Examples
    --------
    >>> pts = [{"moved": 0, "max_load": 4.0, "sum_sq": 16.0}, {"moved": 2, "max_load": 2.0, "sum_sq": 8.0}]
    >>> dominating({"moved": 5, "max_load": 2.0, "sum_sq": 8.0}, pts)["moved"]
    2
    >>> dominating({"moved": 2, "max_load": 2.0, "sum_sq": 8.0}, pts) is None
    True
    """
    def le(a: float, b: float) -> bool:
        return a <= b or bool(np.isclose(a, b))

    def lt(a: float, b: float) -> bool:
        return a < b and not bool(np.isclose(a, b))

    for p in points:
        if all(le(float(p[k]), float(h[k])) for k in keys) and any(lt(float(p[k]), float(h[k])) for k in keys):
            return p
    return None


def place(instance: Instance, doc: dict[str, Any], specs: Sequence[Any], params: Params,
          err: Any = None) -> list[dict[str, Any]]:
    """Each heuristic's (moved, max_load, sum_sq) and the frontier's best balance at its moves.

    ``specs`` are registry specs (:class:`solver.registry.AssignorSpec`) of the heuristics to place.
    """
    from solver.consumer.gaps import member_loads
    from solver.model.scoring import score

    by_name = {s.name: s for s in specs}
    chosen = sorted(by_name)
    out = []
    pts = doc["points"]
    for name in chosen:
        try:
            res = by_name[name].run(instance, params)
        except Exception as e:  # refused input: reported, not fatal
            if err is not None:
                err.print(f"{name}: {type(e).__name__}: {e}", markup=False)
            continue
        s = score(instance, res.assignment)
        loads = member_loads(instance, res.assignment)
        moved = int(s["moved"])
        # best frontier point with budget <= moved (budgets are sampled: the closest below)
        below = [p for p in pts if p["budget"] <= moved] or pts[:1]
        best = below[-1]
        h = {"moved": moved, "max_load": float(loads.max()), "sum_sq": float((loads**2).sum())}
        out.append({"assignor": name, "valid": s["valid"], **h, "frontier_max_load": best["max_load"],
                    "frontier_sum_sq": best["sum_sq"],
                    # an assignment outside the optimum's feasible set (invalid, split co-partition units) is
                    # never on the frontier, even when it looks more balanced
                    "on_frontier": bool(s["valid"]) and not s.get("copartition_violations")
                    and dominating(h, pts) is None})
    return out


def label_positions(heur: Sequence[dict[str, Any]], key: str,
                    gap: float = 0.06) -> list[tuple[tuple[float, float], str, float]]:
    """One label per distinct point (names joined), label heights at least ``gap`` of the range apart.

    Returns ``((x, y), text, text_y)`` per point.  Labels of points at the same place are merged
    ("fair, roundrobin"); the others are spread vertically so that no two overlap.

    Examples
    --------
    >>> hs = [{"assignor": "fair", "moved": 11, "max_load": 7.0, "valid": True},
    ...       {"assignor": "roundrobin", "moved": 11, "max_load": 7.0, "valid": True},
    ...       {"assignor": "range", "moved": 4, "max_load": 8.0, "valid": True}]
    >>> [(t, y) for _, t, y in label_positions(hs, "max_load")]
    [('fair, roundrobin', 7.0), ('range', 8.0)]
    """
    groups: dict[tuple[float, float], list[str]] = {}
    for h in heur:
        pt = (float(h["moved"]), float(h[key]))
        groups.setdefault(pt, []).append(h["assignor"] + ("" if h["valid"] else " (invalid)"))
    order = sorted(groups, key=lambda p: (p[1], p[0]))
    ys = [p[1] for p in order]
    span = (max(ys) - min(ys)) if ys else 0.0
    step = gap * (span if span > 0 else max(1.0, abs(ys[0]) if ys else 1.0))
    out = []
    last = -np.inf
    for pt in order:
        ty = max(pt[1], last + step)
        last = ty
        out.append((pt, ", ".join(sorted(groups[pt])), ty))
    return out


def plot_frontier(doc: dict[str, Any], path: str | Path) -> None:
    """PNG: max load and sum of squares against moves, heuristics as labelled points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = doc["points"]
    xs = [p["budget"] for p in pts]
    heur = doc.get("heuristics", [])
    x_end = max([xs[-1], *[h["moved"] for h in heur]])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, key, label in ((axes[0], "max_load", "max load"), (axes[1], "sum_sq", "sum of squared loads")):
        ys = [p[key] for p in pts]
        # beyond the optimum's moves the best balance stays the optimum's
        ax.step([*xs, x_end], [*ys, ys[-1]], where="post", color="black", label="optimal frontier")
        for h in heur:
            ax.scatter([h["moved"]], [h[key]], zorder=3, marker="o" if h["valid"] else "x")
        for (x, y), text, ty in label_positions(heur, key):
            ax.annotate(text, (x, y), xytext=(x, ty), textcoords="data", fontsize=8,
                        arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "grey"} if ty != y else None)
        ax.set_xlabel("moved topic-partitions (budget)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=8)
    fig.suptitle(f"balance-movement frontier: {doc.get('instance') or 'instance'} ({doc['engine']})")
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)
    plt.close(fig)
