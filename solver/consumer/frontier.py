"""Balance-movement Pareto frontier: for each moved-cost budget, the best achievable balance.

For budgets ``B`` from 0 to ``M*`` (the moved cost of the optimum: the
fewest moves at the best balance) the frontier point is the best assignment
with moved cost ``<= B``.  The x axis is the moved cost (``move_costs``,
default 1 per topic-partition, counted per topic-partition as the scorer's
``moved_cost``), so heuristics can be placed on the same axes.

Engines: when every item has the same load, capacities are equal, all items
share one eligible set and all owned items have the same move cost, the budget
is one gate arc in the min-cost flow network (exact and fast; the point is the
most balanced assignment within the budget).  Otherwise each point is a solve
of the exact engine (:mod:`solver.consumer.exact`): for items of different
loads the least max load within the budget, then the fewest moves at that max
load; for items of one load (other eligible sets or move costs) the max load,
then the sum of squares, then the moves.  ``proven`` marks points whose stages
are all proven (``bound`` is the max-load lower bound either way).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from solver.consumer.exact import solve_exact
from solver.consumer.flow import solve_flow
from solver.consumer.items import ItemClasses, build_classes
from solver.consumer.optimal import differs_in_load
from solver.errors import InfeasibleError
from solver.model import Instance
from solver.model.files import figure_bytes, write_atomic
from solver.result import Params

DEFAULT_POINT_LIMIT = 10.0


def budget_steps(lo: int, hi: int, max_points: int) -> list[int]:
    """Up to ``max_points`` integers from ``lo`` to ``hi``: all of them, or evenly spaced with both ends kept.

    Examples
    --------
    >>> budget_steps(2, 5, 10), budget_steps(0, 10, 3)
    ([2, 3, 4, 5], [0, 5, 10])
    """
    if hi - lo + 1 <= max_points:
        return list(range(lo, hi + 1))
    return sorted({round(x) for x in np.linspace(lo, hi, max_points)})


def _budgets(top: float, max_points: int, unit: float) -> list[float]:
    """Up to ``max_points`` budgets from 0 to ``top`` (multiples of ``unit``, ends kept)."""
    steps = round(top / unit) if unit > 0 else 0
    return [k * unit for k in budget_steps(0, steps, max_points)]


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
        ``engine``, ``optimum_moves`` (``M*``, moved cost), ``points``: one per
        budget with ``budget``, ``max_load``, ``bound`` (lower bound of the
        least max load within the budget), ``sum_sq``, ``moved`` (moved cost),
        ``proven``.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4}, "members": [
    ...     {"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}, "generation": 1},
    ...     {"id": "b", "topics": ["T"]}]})
    >>> [(p["budget"], p["max_load"]) for p in compute_frontier(inst, Params())["points"]]
    [(0.0, 4.0), (1.0, 3.0), (2.0, 2.0)]
    """
    ic = build_classes(instance)
    caps = np.array([m.capacity for m in instance.members], dtype=np.float64)
    racks = [m.rack for m in instance.members]
    points: list[dict[str, Any]] = []
    if ic.total_items == 0 or not instance.members:
        return {"instance": instance.name, "engine": "none", "optimum_moves": 0.0, "x_axis": "moved_cost",
                "points": [{"budget": 0.0, "max_load": 0.0, "bound": 0.0, "sum_sq": 0.0, "moved": 0.0,
                            "proven": True}]}
    tl = params.time_limit if params.time_limit is not None else DEFAULT_POINT_LIMIT
    deterministic = bool((params.options or {}).get("deterministic", True))
    use_flow = _flow_ok(instance, ic)
    scale = [1]
    # items of one load: the most balanced point (max load, then sum of squares); else the least max load
    stages = ("max_load", "moves") if differs_in_load(instance, ic) else ("max_load", "sum_sq", "moves")

    seed_flows: list[list[tuple[int, int, int]]] = []  # the last point's answer: feasible for the next budget

    def solve_at(budget: float | None) -> tuple[list[tuple[int, int, int]], float, float, bool]:
        """(flows, moved cost, max-load bound, proven) of the best assignment within ``budget``."""
        if use_flow:
            if budget is None:
                out = solve_flow(ic, racks, order=("balance", "moves"))
                scale[0] = out.move_scale
            else:
                out = solve_flow(ic, racks, order=("balance", "moves"), move_budget=round(budget * scale[0]))
            ml = float(_loads(ic, out.flows, caps).max())
            return out.flows, out.moved_cost_int / out.move_scale, ml, True
        cout = solve_exact(ic, caps, racks, stages=stages, time_limit=tl, seed=params.seed,
                           deterministic=deterministic, moves_cap=budget,
                           start=seed_flows[-1] if seed_flows and budget is not None else None)
        if budget is not None:
            seed_flows.append(cout.flows)
        first = cout.stages[0]
        return cout.flows, cout.stages[-1].value, first.bound, all(r.proven for r in cout.stages)

    _, top, _, _ = solve_at(None)
    owned = ic.owned_cost[ic.owned_cost > 0]
    unit = float(owned.min()) if use_flow and owned.size else 1.0
    budgets = _budgets(top, max_points, unit) if use_flow else sorted(
        {float(x) for x in np.linspace(0.0, top, max(2, min(max_points, int(top) + 1)))})
    unsolved: list[float] = []
    for b in budgets:
        try:
            flows, moved, bound, proven = solve_at(float(b))
        except InfeasibleError:
            # no assignment within this budget found in the time: the point is left out, and said so
            unsolved.append(float(b))
            continue
        loads = _loads(ic, flows, caps)
        points.append({"budget": float(b), "max_load": float(loads.max()), "bound": min(float(loads.max()), bound),
                       "sum_sq": float((loads**2).sum()), "moved": moved, "proven": proven})
    # a heuristic is off the frontier when a point is no worse on the frontier's criteria and better on one
    dominance = ["moved", "max_load"] if stages == ("max_load", "moves") and not use_flow else [
        "moved", "max_load", "sum_sq"]
    doc: dict[str, Any] = {"instance": instance.name, "engine": "flow" if use_flow else "exact",
                           "optimum_moves": top, "x_axis": "moved_cost", "dominance": dominance, "points": points}
    if unsolved:
        doc["unsolved_budgets"] = unsolved
    return doc


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


def run_each(instance: Instance, specs: Sequence[Any], params: Params,
             err: Any = None) -> Iterator[tuple[str, Any]]:
    """``(name, result)`` of each assignor to place, by name; one that raises is reported on ``err`` and left out.

    ``specs`` are registry specs (:class:`solver.registry.AssignorSpec`); ``err`` a rich console.
    """
    by_name = {s.name: s for s in specs}
    for name in sorted(by_name):
        try:
            res = by_name[name].run(instance, params)
        except Exception as e:  # refused input: reported, not fatal
            if err is not None:
                err.print(f"{name}: {type(e).__name__}: {e}", markup=False)
            continue
        yield name, res


def point_at(points: Sequence[dict[str, Any]], moved: float) -> dict[str, Any]:
    """The frontier point of the largest budget ``<= moved`` (budgets are sampled: the closest below)."""
    below = [p for p in points if p["budget"] <= moved] or points[:1]
    return below[-1]


def place(instance: Instance, doc: dict[str, Any], specs: Sequence[Any], params: Params,
          err: Any = None) -> list[dict[str, Any]]:
    """Each heuristic's (moved, max_load, sum_sq) and the frontier's best balance at its moves.

    ``specs`` are registry specs (:class:`solver.registry.AssignorSpec`) of the heuristics to place.
    """
    from solver.consumer.gaps import member_loads
    from solver.model.scoring import score

    out = []
    pts = doc["points"]
    for name, res in run_each(instance, specs, params, err):
        s = score(instance, res.assignment)
        loads = member_loads(instance, res.assignment)
        moved = float(s["moved_cost"])
        best = point_at(pts, moved)
        h = {"moved": moved, "max_load": float(loads.max(initial=0.0)), "sum_sq": float((loads**2).sum())}
        out.append({"assignor": name, "valid": s["valid"], "outcome": s["outcome"], **h,
                    "frontier_max_load": best["max_load"],
                    "frontier_sum_sq": best["sum_sq"],
                    # an assignment outside the optimum's feasible set (invalid, split co-partition units) is
                    # never on the frontier, even when it looks more balanced
                    "on_frontier": bool(s["valid"]) and not s.get("copartition_violations")
                    and dominating(h, pts, doc.get("dominance", ("moved", "max_load", "sum_sq"))) is None})
    return out


#: How each outcome is drawn: an assignment outside the optimum's feasible set (invalid, or splitting
#: co-partitioned units) is marked and labelled, never read as a point below the frontier.
_MARKER = {"valid": "o", "split": "D", "invalid": "x"}
_TAG = {"valid": "", "split": " (split)", "invalid": " (invalid)"}
_LEGEND = {"split": "splits co-partitioned units: not comparable", "invalid": "invalid: not comparable"}


def _outcome(h: dict[str, Any]) -> str:
    return str(h.get("outcome") or ("valid" if h["valid"] else "invalid"))


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
        groups.setdefault(pt, []).append(h["assignor"] + _TAG[_outcome(h)])
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


def plot_panels(doc: dict[str, Any], path: str | Path, panels: Sequence[tuple[str, str]], xlabel: str,
                title: str, merge_labels: bool = True) -> None:
    """PNG: one panel per ``(point key, axis label)``, the frontier as a step line against the budget.

    ``doc["heuristics"]`` are drawn as points (red ``x``: invalid; red diamond: splits co-partitioned
    units, labelled "not comparable": the frontier keeps units together), labelled by
    :func:`label_positions` (``merge_labels``) or each beside its point.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = doc["points"]
    xs = [p["budget"] for p in pts]
    heur = doc.get("heuristics", [])
    x_end = max([xs[-1], *[h["moved"] for h in heur]])
    fig, axes = plt.subplots(1, len(panels), figsize=(11, 4.2))
    for ax, (key, label) in zip(axes, panels, strict=True):
        ys = [p[key] for p in pts]
        # beyond the optimum's moves the best balance stays the optimum's
        ax.step([*xs, x_end], [*ys, ys[-1]], where="post", color="black", label="optimal frontier")
        for h in heur:
            kind = _outcome(h)
            ax.scatter([h["moved"]], [h[key]], zorder=3, marker=_MARKER[kind],
                       **({} if kind == "valid" else {"color": "tab:red", "alpha": 0.6}))
            if not merge_labels:
                ax.annotate(h["assignor"] + _TAG[kind], (h["moved"], h[key]),
                            textcoords="offset points", xytext=(4, 4), fontsize=8)
        if merge_labels:
            for (x, y), text, ty in label_positions(heur, key):
                ax.annotate(text, (x, y), xytext=(x, ty), textcoords="data", fontsize=8,
                            arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "grey"} if ty != y else None)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    for kind in sorted({_outcome(h) for h in heur} - {"valid"}):
        axes[0].scatter([], [], marker=_MARKER[kind], color="tab:red", alpha=0.6, label=_LEGEND[kind])
    axes[0].legend(loc="best", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    data = figure_bytes(fig, path, dpi=110)
    plt.close(fig)
    write_atomic(path, data)


def plot_frontier(doc: dict[str, Any], path: str | Path) -> None:
    """PNG: max load and sum of squares against moves, heuristics as labelled points."""
    plot_panels(doc, path, (("max_load", "max load"), ("sum_sq", "sum of squared loads")),
                "moved cost (budget; move_costs, 1 per topic-partition by default)",
                f"balance-movement frontier: {doc.get('instance') or 'instance'} ({doc['engine']})")
