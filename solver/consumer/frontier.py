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

import time
from collections.abc import Callable, Iterator, Sequence
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


def _counts(ic: ItemClasses, flows: Sequence[tuple[int, int, int]]) -> np.ndarray:
    out = np.zeros((ic.n_classes, ic.n_members), dtype=np.int64)
    for c, m, k in flows:
        out[c, m] = k
    return out


def _loads_counts(ic: ItemClasses, counts: np.ndarray, caps: np.ndarray) -> np.ndarray:
    return (np.asarray(ic.weight, dtype=np.float64) @ counts) / caps


def moved_cost(ic: ItemClasses, counts: np.ndarray) -> float:
    """The moved cost of class x member ``counts``: an item costs its owned cost less what its host owned."""
    total = 0.0
    for c in range(ic.n_classes):
        own = dict(ic.owners[c])
        for m in np.nonzero(counts[c])[0].tolist():
            total += int(counts[c, m]) * (float(ic.owned_cost[c]) - float(own.get(m, 0.0)))
    return total


def stay_counts(ic: ItemClasses, caps: np.ndarray) -> np.ndarray:
    """The stickiest assignment: each item on the eligible previous owner that owned most of it (the fewest
    moves there are), the others on the least loaded eligible member (per capacity)."""
    counts = np.zeros((ic.n_classes, ic.n_members), dtype=np.int64)
    load = np.zeros(ic.n_members)
    rest: list[int] = []
    for c in range(ic.n_classes):
        elig = set(ic.eligsets[int(ic.cls_elig[c])].tolist())
        owners = [(cost, o) for o, cost in ic.owners[c] if o in elig]
        if owners and ic.count[c] > 0:
            o = max(owners)[1]
            counts[c, o] = int(ic.count[c])
            load[o] += int(ic.count[c]) * float(ic.weight[c])
        elif ic.count[c] > 0:
            rest.append(c)
    for c in sorted(rest, key=lambda c: -float(ic.weight[c])):
        hosts = [int(j) for j in ic.eligsets[int(ic.cls_elig[c])].tolist()]
        for _ in range(int(ic.count[c])):
            m = int(min(hosts, key=lambda j: ((load[j] + float(ic.weight[c])) / caps[j], j)))
            counts[c, m] += 1
            load[m] += float(ic.weight[c])
    return counts


#: Share of a point's time the levelling of its start takes (the rest is the exact engine's).
LEVEL_SHARE = 0.2


def _levelled(ic: ItemClasses, caps: np.ndarray, counts: np.ndarray, budget: float, seconds: float,
              deterministic: bool) -> np.ndarray:
    """``counts`` levelled within the moved-cost ``budget``: the most loaded members give to the least loaded
    ones while the budget lasts (:func:`solver.consumer.exact.primal.local.level`); ``counts`` when that
    does not lower the max load."""
    from solver.consumer.exact.data import local_data, scale
    from solver.consumer.exact.primal.local import level
    from solver.consumer.exact.primal.search import STEPS_PER_SECOND

    sc = scale(ic, caps.tolist())
    data = local_data(ic, sc)
    w = np.asarray(sc.wint, dtype=np.int64)
    ratio = np.asarray(sc.ratio, dtype=np.int64)
    cap = int(((w @ counts) * ratio).max(initial=0))
    moves_cap = int(np.floor(budget / float(sc.move_unit) + 1e-9))
    if deterministic:
        out = level(data, counts, cap, moves_cap, max_steps=int(LEVEL_SHARE * seconds * STEPS_PER_SECOND))
    else:
        out = level(data, counts, cap, moves_cap, deadline=time.perf_counter() + LEVEL_SHARE * seconds)
    better = _loads_counts(ic, out, caps).max() < _loads_counts(ic, counts, caps).max()
    return out if better and moved_cost(ic, out) <= budget * (1 + 1e-12) + 1e-9 else counts


def _flow_ok(instance: Instance, ic: ItemClasses) -> bool:
    if len({m.capacity for m in instance.members}) > 1:
        return False
    if len(set(ic.weight[ic.count > 0].tolist())) > 1:
        return False
    if len(set(ic.cls_elig.tolist())) > 1:
        return False
    return len({float(c) for c in ic.owned_cost[ic.owned_cost > 0].tolist()}) <= 1


def frontier_units(instance: Instance) -> dict[str, str]:
    """The units of a frontier's axes from the instance's ``units`` (docs/format.md): ``moved`` (move
    costs), ``load`` (weights per capacity) and ``sum_sq`` (their square); empty when it says none."""
    units = (instance.meta or {}).get("units") or {}
    out: dict[str, str] = {}
    if units.get("move_costs"):
        out["moved"] = str(units["move_costs"])
    if units.get("weights"):
        out["load"] = str(units["weights"])
        out["sum_sq"] = f"({units['weights']})²"
    return out


def compute_frontier(instance: Instance, params: Params, max_points: int = 60,
                     progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The frontier as a JSON-ready dict (``progress`` is told which budget is being solved).

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

    def solve_at(budget: float | None, start: np.ndarray | None = None
                 ) -> tuple[list[tuple[int, int, int]], float, float, bool]:
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
                           start=_count_flows(start) if start is not None
                           else seed_flows[-1] if seed_flows and budget is not None else None)
        if budget is not None:
            seed_flows.append(cout.flows)
        first = cout.stages[0]
        return cout.flows, cout.stages[-1].value, first.bound, all(r.proven for r in cout.stages)

    top_flows, top, _, _ = solve_at(None)
    owned = ic.owned_cost[ic.owned_cost > 0]
    unit = float(owned.min()) if use_flow and owned.size else 1.0
    budgets = _budgets(top, max_points, unit) if use_flow else sorted(
        {float(x) for x in np.linspace(0.0, top, max(2, min(max_points, int(top) + 1)))})
    unsolved: list[float] = []
    # every point starts from a known answer within its budget: the previous point's (within a smaller
    # budget), the stickiest assignment, or the optimum's; a point whose solve finds nothing within its
    # budget is listed in unsolved_budgets, never drawn at a moved cost above its budget
    known: list[tuple[float, np.ndarray]] = []
    if not use_flow:
        sticky = stay_counts(ic, caps)
        known = [(moved_cost(ic, sticky), sticky), (top, _counts(ic, top_flows))]
    for k, b in enumerate(budgets):
        if progress is not None:
            progress(f"budget {k + 1:,} of {len(budgets):,}")
        seed = None
        fits = [(m, k) for m, k in known if m <= b * (1 + 1e-12) + 1e-9]
        if fits:
            seed = min(fits, key=lambda mk: float(_loads_counts(ic, mk[1], caps).max()))[1]
            seed = _levelled(ic, caps, seed, float(b), tl, deterministic)
        try:
            flows, moved, bound, proven = solve_at(float(b), seed)
        except InfeasibleError:
            # no assignment within this budget found in the time: the point is left out, and said so
            unsolved.append(float(b))
            continue
        moved = moved_cost(ic, _counts(ic, flows)) if not use_flow else moved
        if moved > b * (1 + 1e-9) + 1e-6:  # never a point above its budget
            unsolved.append(float(b))
            continue
        if not use_flow:
            known.append((moved, _counts(ic, flows)))
        loads = _loads(ic, flows, caps)
        points.append({"budget": float(b), "max_load": float(loads.max()), "bound": min(float(loads.max()), bound),
                       "sum_sq": float((loads**2).sum()), "moved": moved, "proven": proven})
    # a heuristic is off the frontier when a point is no worse on the frontier's criteria and better on one
    dominance = ["moved", "max_load"] if stages == ("max_load", "moves") and not use_flow else [
        "moved", "max_load", "sum_sq"]
    doc: dict[str, Any] = {"instance": instance.name, "engine": "flow" if use_flow else "exact",
                           "optimum_moves": top, "x_axis": "moved_cost", "dominance": dominance, "points": points}
    units = frontier_units(instance)
    if units:
        doc["units"] = units
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


#: Byte units shown through decimal prefixes on a plot's axes (as the tables do).
_BYTE_UNITS = {"bytes": "B", "bytes/s": "B/s", "B": "B", "B/s": "B/s"}
_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def axis_scale(values: Sequence[float], unit: str | None) -> tuple[float, str]:
    """``(factor, unit)`` of an axis: a byte unit takes the decimal prefix of its largest value; others as given.

    Examples
    --------
    >>> axis_scale([8.5e9, 2.6e11], "bytes"), axis_scale([3.0], "records"), axis_scale([3.0], None)
    ((1000000000.0, 'GB'), (1.0, 'records'), (1.0, ''))
    >>> axis_scale([4e14], "(bytes/s)²")
    (1000000000000.0, '(MB/s)²')
    """
    unit = unit or ""
    if unit.startswith("(") and unit.endswith(")²"):  # squares of a unit: the square of its prefix
        top = max((abs(float(v)) for v in values), default=0.0)
        factor, inner = axis_scale([top**0.5], unit[1:-2])
        return factor * factor, f"({inner})²"
    if unit not in _BYTE_UNITS:
        return 1.0, unit
    top = max((abs(float(v)) for v in values), default=0.0)
    for factor, prefix in _PREFIXES:
        if top >= factor:
            return factor, prefix + _BYTE_UNITS[unit]
    return 1.0, _BYTE_UNITS[unit]


def tick_text(v: float) -> str:
    """A tick label for a person: thousands separators, never an exponent.

    Examples
    --------
    >>> tick_text(12500000.0), tick_text(2.5), tick_text(0.125), tick_text(-0.0)
    ('12,500,000', '2.5', '0.125', '0')
    """
    if round(v, 3) == 0:
        return "0"
    if abs(v) >= 100 or v == int(v):
        return f"{v:,.0f}"
    return f"{v:,.3f}".rstrip("0").rstrip(".")


def _units_axis(ax: Any, which: str, values: Sequence[float], unit: str | None) -> str:
    """Ticks of ``ax``'s ``which`` axis in ``unit`` (prefixed for bytes), no offset text; the unit label."""
    from matplotlib.ticker import FuncFormatter

    factor, shown = axis_scale(values, unit)
    fmt = FuncFormatter(lambda v, _pos: tick_text(v / factor))
    (ax.xaxis if which == "x" else ax.yaxis).set_major_formatter(fmt)
    return f" ({shown})" if shown else ""


def frontier_label(doc: dict[str, Any]) -> str:
    """The frontier line's legend: ``optimal frontier``, or how many of its points are not proven and which
    budgets were left out, in the words stderr uses.

    Examples
    --------
    >>> frontier_label({"points": [{"proven": True}, {"proven": False}], "unsolved_budgets": [3.0]})
    'frontier: 1 of 2 points not proven; 1 budget(s) left out (unsolved_budgets)'
    """
    pts = doc.get("points", [])
    open_pts = sum(1 for p in pts if not p.get("proven", True))
    left = len(doc.get("unsolved_budgets", []))
    if not open_pts and not left:
        return "optimal frontier"
    parts = ([f"{open_pts} of {len(pts)} points not proven"] if open_pts else []) + (
        [f"{left} budget(s) left out (unsolved_budgets)"] if left else [])
    return "frontier: " + "; ".join(parts)


def plot_panels(doc: dict[str, Any], path: str | Path, panels: Sequence[tuple[str, str]], xlabel: str,
                title: str, merge_labels: bool = True) -> None:
    """PNG: one panel per ``(point key, axis label)``, the frontier as a step line against the budget.

    The frontier's own points are filled when proven and hollow when not ("point not proven" in the legend).
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
        ax.step([*xs, x_end], [*ys, ys[-1]], where="post", color="black", label=frontier_label(doc))
        # each point says whether it is proven: filled when it is, hollow when not (the legend's words)
        shut = [k for k, p in enumerate(pts) if p.get("proven", True)]
        open_ = [k for k, p in enumerate(pts) if not p.get("proven", True)]
        ax.scatter([xs[k] for k in shut], [ys[k] for k in shut], s=16, color="black", zorder=3,
                   label="point proven optimal" if ax is axes[0] and open_ else None)
        if open_:
            ax.scatter([xs[k] for k in open_], [ys[k] for k in open_], s=36, facecolors="white",
                       edgecolors="black", zorder=4, label="point not proven" if ax is axes[0] else None)
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
        units = doc.get("units") or {}
        y_unit = units.get("sum_sq" if key == "sum_sq" else "load") if key in ("max_load", "sum_sq") else None
        x_unit = units.get("moved")
        ax.set_xlabel(xlabel + _units_axis(ax, "x", [*xs, *[h["moved"] for h in heur]], x_unit))
        ax.set_ylabel(label + _units_axis(ax, "y", [*ys, *[h[key] for h in heur]], y_unit))
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
    units = doc.get("units") or {}
    plot_panels(doc, path, (("max_load", "max load"), ("sum_sq", "sum of squared loads")),
                "moved cost (budget)" if units.get("moved") else
                "moved cost (budget; move_costs,\n1 per topic-partition by default)",
                f"balance-movement frontier: {doc.get('instance') or 'instance'} ({doc['engine']})")


def _count_flows(counts: np.ndarray) -> list[tuple[int, int, int]]:
    """Class x member counts as the exact engine's ``(class, member, count)`` flows."""
    cs, ms = np.nonzero(counts)
    return [(int(c), int(m), int(counts[c, m])) for c, m in zip(cs.tolist(), ms.tolist(), strict=True)]
