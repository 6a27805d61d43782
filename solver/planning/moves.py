"""Fewest moves from today's assignment to ``n`` instances within capacity: bound, greedy, CP-SAT.

See :mod:`solver.planning.plan` (*Per n*) for the model.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from solver.planning import binpacking as bp
from solver.planning.binpacking import IntArray
from solver.planning.moves_greedy import greedy_moves, keep_values
from solver.planning.planner import Fleet, Planner


@dataclass
class Moves:
    """Fewest moves from today's assignment to ``n`` instances within capacity."""

    status: str
    moved_partitions: int | None
    moved_state: float | None
    bound_partitions: int
    bound_state: float
    kept: tuple[int, ...]
    owner: IntArray | None  # item -> member index (>= m: new instance)
    max_utilisation: float | None


def move_costs_matrix(pl: Planner, fleet: Fleet) -> tuple[IntArray, IntArray]:
    """Integer (state, partitions) cost of every item on every fleet instance.

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).
    fleet
        The instances available for the plan (:meth:`Planner.fleet`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(state, partitions)``, each items x fleet instances; state is scaled
        by ``pl.state_scale``.
    """
    items = pl.items
    k = len(fleet.members)
    st = np.empty((items.n_items, k), dtype=np.int64)
    pa = np.empty((items.n_items, k), dtype=np.int64)
    sc = pl.state_scale
    base_s = np.round(items.prev_state * sc).astype(np.int64)
    st[:] = base_s[:, None]
    pa[:] = items.prev_parts[:, None]
    col = {j: c for c, j in enumerate(fleet.members)}
    for i, h in enumerate(items.held):
        for j, (p, s) in h.items():
            c = col.get(j)
            if c is not None:
                st[i, c] = base_s[i] - round(s * sc)
                pa[i, c] = int(items.prev_parts[i]) - p
    return st, pa


def moves_bound(pl: Planner, fleet: Fleet) -> tuple[float, int]:
    """Lower bounds on moved state and moved partitions (knapsack relaxation per kept member).

    Each kept member keeps at most a capacity-bounded (fractional) knapsack of
    what it holds today; only the ``n`` best of those can be kept.

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).
    fleet
        The instances available for the plan (:meth:`Planner.fleet`).

    Returns
    -------
    tuple
        ``(moved state bound, moved partitions bound)``.
    """
    items = pl.items
    caps = pl.int_caps(pl.member_caps, proof=True) if pl.m else np.zeros(0, dtype=np.int64)
    out = []
    for stage in ("state", "parts"):
        vals = keep_values(pl, fleet, caps, stage)
        keep = np.sort(vals)[::-1][: min(fleet.choose, pl.m)].sum() if pl.m else 0.0
        total = float(items.prev_state.sum()) if stage == "state" else float(items.prev_parts.sum())
        out.append(max(0.0, total - keep))
    st_b = out[0]
    pa_b = math.ceil(out[1] - 1e-9)
    return st_b, pa_b


def fewest_moves(pl: Planner, n: int) -> Moves:
    """Fewest (state, then partitions) moves to an assignment within capacity on ``n`` instances.

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).
    n
        Number of instances.

    Returns
    -------
    Moves
        Status, moved partitions and state with their bounds, the kept
        instances, the item owners and the plan's maximum utilisation.
    """
    items = pl.items
    fleet = pl.fleet(n)
    b_state, b_parts = moves_bound(pl, fleet)
    if items.n_items == 0:
        return Moves("optimal", 0, 0.0, 0, 0.0, tuple(fleet.members[:n]), np.zeros(0, dtype=np.int64), 0.0)
    g = greedy_moves(pl, fleet)
    st_cost, pa_cost = move_costs_matrix(pl, fleet)
    best: tuple[tuple[int, ...], IntArray] | None = None
    status = "unknown"
    if g is not None:
        best = g
        status = "feasible"
    if pl.small(len(fleet.members)):
        out = _sat_moves(pl, fleet, st_cost, pa_cost, g)
        if out is not None:
            status, best = out[0], (out[1], out[2]) if out[2] is not None else best
    if best is None:
        return Moves(status if status == "infeasible" else "unknown", None, None, b_parts, b_state, (), None, None)
    kept, cols = best
    owner = np.asarray(fleet.members, dtype=np.int64)[cols]
    rows = np.arange(items.n_items)
    mp = int(pa_cost[rows, cols].sum())
    ms = float(sum(items.cost(i, int(owner[i]))[1] for i in range(items.n_items)))
    if status == "feasible" and round(ms * pl.state_scale) <= math.ceil(b_state * pl.state_scale - 1e-6) \
            and mp <= b_parts:
        status = "optimal"
    if status == "optimal":
        b_state, b_parts = ms, mp
    caps = fleet.caps
    loads = np.bincount(cols, weights=items.raw, minlength=len(fleet.members))
    used = np.asarray([fleet.members.index(j) for j in kept], dtype=np.int64)
    util = float((loads[used] / caps[used]).max()) if used.size else 0.0
    return Moves(status, mp, ms, min(b_parts, mp), min(b_state, ms), tuple(kept), owner, util)


def _sat_moves(pl: Planner, fleet: Fleet, st_cost: IntArray, pa_cost: IntArray,
               hint: tuple[tuple[int, ...], IntArray] | None) -> tuple[str, tuple[int, ...], IntArray | None] | None:
    """CP-SAT: choose kept members and places; minimise moved state, then moved partitions."""
    from ortools.sat.python import cp_model

    items = pl.items
    s = pl.sizes_up
    caps = pl.int_caps(fleet.caps)
    k = len(fleet.members)
    ni = items.n_items
    model = cp_model.CpModel()
    x = bp.item_vars(model, ni, k)
    shrinking = fleet.choose < k
    y = [model.new_bool_var(f"y{c}") for c in range(k)] if shrinking else None
    loads = []
    for c in range(k):
        load = sum(x[i][c] * int(s[i]) for i in range(ni))
        loads.append(load)
        if y is not None:
            model.add(load <= int(caps[c]) * y[c])
        else:
            model.add(load <= int(caps[c]))
    if y is not None:
        model.add(sum(y) == fleet.choose)
    bp.add_anti_affinity(model, x, items.groups)
    # New instances are interchangeable: order them by load (symmetry breaking).
    new_cols = [c for c, j in enumerate(fleet.members) if j >= pl.m]
    for a, b in itertools.pairwise(new_cols):
        model.add(loads[a] >= loads[b])
    if hint is not None:
        kept_h, cols_h = hint
        hc = cols_h.copy()
        if new_cols:
            # Relabel new instances of the hint by decreasing load to respect the symmetry breaking.
            nl = {c: float(s[hc == c].sum()) for c in new_cols}
            order = sorted(new_cols, key=lambda c: -nl[c])
            remap = dict(zip(order, new_cols, strict=True))
            hc = np.array([remap.get(int(c), int(c)) for c in hc], dtype=np.int64)
        for i in range(ni):
            for c in range(k):
                model.add_hint(x[i][c], int(hc[i]) == c)
        if y is not None:
            kept_cols = {fleet.members.index(j) for j in kept_h}
            for c in range(k):
                model.add_hint(y[c], c in kept_cols)
    state_expr = sum(int(st_cost[i, c]) * x[i][c] for i in range(ni) for c in range(k) if st_cost[i, c])
    parts_expr = sum(int(pa_cost[i, c]) * x[i][c] for i in range(ni) for c in range(k) if pa_cost[i, c])
    solver = bp.new_solver(pl.budget(), pl.cfg.seed)
    st = bp.minimise(solver, model, state_expr)
    if st == "infeasible":
        return "infeasible", (), None
    if st not in ("optimal", "feasible"):
        return None
    stage1 = st
    best_state = round(solver.objective_value)
    sol = bp.read_bins(solver, x)
    # Stage 2: fewest partitions among the best moved state found.
    model.add(state_expr <= best_state)
    model.clear_hints()
    for i in range(ni):
        for c in range(k):
            model.add_hint(x[i][c], int(sol[i]) == c)
    if y is not None:
        used = set(sol.tolist())
        # Hint y consistently with the stage-1 solution (kept = instances used, padded).
        yv = [c in used for c in range(k)]
        extra = fleet.choose - sum(yv)
        for c in range(k):
            if not yv[c] and extra > 0:
                yv[c] = True
                extra -= 1
            model.add_hint(y[c], yv[c])
    st2 = bp.minimise(solver, model, parts_expr)
    if st2 in ("optimal", "feasible"):
        sol = bp.read_bins(solver, x)
    status = "optimal" if stage1 == "optimal" and st2 == "optimal" else "feasible"
    if y is not None:
        kept = tuple(fleet.members[c] for c in range(k) if solver.boolean_value(y[c])) if st2 in (
            "optimal", "feasible") else tuple(sorted({fleet.members[int(c)] for c in sol}))
    else:
        kept = tuple(fleet.members)
    return status, kept, sol
