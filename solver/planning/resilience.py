"""N-K resilience of a plan: after losing any ``K`` instances, does the load fit, and what must move.

See :mod:`solver.planning.plan` for the model.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from solver.planning import binpacking as bp
from solver.planning.binpacking import FloatArray, IntArray
from solver.planning.moves import Moves
from solver.planning.planner import Planner

#: Loss sets enumerated for the resilience worst case.
RESILIENCE_ENUM_LIMIT = 5_000
#: CP-SAT re-packings allowed for loss sets whose orphans do not fit greedily.
RESILIENCE_SAT_LIMIT = 20


@dataclass
class Resilience:
    """N-K resilience of a plan."""

    k: int
    fits: bool | None
    moved_partitions: int | None
    moved_state: float | None
    forced_moved_state: float | None
    worst_lost: tuple[str, ...]
    exact: bool
    note: str = ""


def resilience(pl: Planner, mv: Moves, k: int, min_n: int | None) -> Resilience:
    """After losing any ``k`` instances of the plan ``mv``: fit, and the worst-case fewest moves.

    *Fit.*  With identical instances, whether ``n - k`` instances hold the load
    does not depend on which are lost: it fits iff ``n - k >= min_instances``.
    With different capacities the worst loss is the ``k`` largest instances
    (the survivors of any other loss are at least as large, one by one), so
    feasibility is checked on the plan's ``n - k`` smallest.

    *Moves.*  Every item on a lost instance must move (``forced``).  For a loss
    set whose orphans fit into the survivors' free capacity, exactly those move;
    otherwise survivors must shed items too and CP-SAT finds the fewest.  The
    worst case is taken over *all* loss sets when there are at most
    :data:`RESILIENCE_ENUM_LIMIT` of them (``exact``), else the forced moves of
    the ``k`` instances holding the most state (a lower bound; ``exact`` false).
    Moving an item moves all of its partitions (they sit together in a plan).

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).
    mv
        The plan (its kept instances and item owners).
    k
        Instances lost.
    min_n
        The proven minimum instance count, or ``None``.

    Returns
    -------
    Resilience
        Fit after the worst loss, its fewest moves (or a lower bound), and
        which instances make it worst.
    """
    items = pl.items
    kept = list(mv.kept)
    n = len(kept)
    if k == 0:
        return Resilience(0, True, 0, 0.0, 0.0, (), True)
    if mv.owner is None:
        return Resilience(k, None, None, None, None, (), False, "no plan for this n")
    if k >= n:
        return Resilience(k, items.n_items == 0, None, None, None, tuple(pl.member_name(j) for j in kept), True,
                          f"losing {k} of {n} instances leaves none")
    caps_by = {j: (pl.member_caps[j] if j < pl.m else pl.new_cap) for j in kept}
    # Fit: identical -> compare with the minimum; else test the smallest survivors.
    if pl.identical and min_n is not None:
        fits: bool | None = n - k >= min_n
    else:
        surv_caps = np.sort(np.asarray([caps_by[j] for j in kept]))[: n - k]
        st, _ = _fit_caps(pl, surv_caps)
        fits = {"yes": True, "no": False}.get(st)
    owner = mv.owner
    per_state = {j: float(items.move_state[owner == j].sum()) for j in kept}
    per_parts = {j: int(items.move_parts[owner == j].sum()) for j in kept}
    if fits is False:
        worst = sorted(kept, key=lambda j: (-per_state[j], j))[:k]
        return Resilience(k, False, None, None, float(sum(per_state[j] for j in worst)),
                          tuple(pl.member_name(j) for j in worst), True, "the load does not fit after this loss")
    total_sets = math.comb(n, k)
    worst_forced = sorted(kept, key=lambda j: (-per_state[j], -per_parts[j], j))[:k]
    forced_bound = float(sum(per_state[j] for j in worst_forced))
    if total_sets > RESILIENCE_ENUM_LIMIT:
        sets: list[tuple[int, ...]] = [tuple(worst_forced)]
        exact = False
    else:
        sets = list(itertools.combinations(kept, k))
        exact = True
    best: tuple[float, int, tuple[int, ...]] | None = None
    sat_calls = 0
    for lost in sets:
        if exact and len(sets) > 1 and pl.step_expired():  # out of this row's time: the bound below stands
            exact = False
            break
        r = _after_loss(pl, owner, kept, set(lost), caps_by, allow_sat=sat_calls < RESILIENCE_SAT_LIMIT)
        if r is None:
            exact = False
            continue
        if r[2]:
            sat_calls += 1
        state, parts = r[0], r[1]
        if state is None:
            return Resilience(k, False, None, None, forced_bound, tuple(pl.member_name(j) for j in lost), exact,
                              "the load does not fit after losing these instances")
        key = (state, parts, lost)
        if best is None or (key[0], key[1]) > (best[0], best[1]):
            best = key
    if best is None or not exact:
        # Not every loss set was settled: only the forced moves are a proven lower bound on the worst case.
        lower = max(forced_bound, best[0]) if best is not None else forced_bound
        return Resilience(k, fits, None, None, lower, tuple(pl.member_name(j) for j in worst_forced), False,
                          "worst case not settled for every loss set: at least the forced moves")
    return Resilience(k, fits, best[1], best[0], forced_bound, tuple(pl.member_name(j) for j in best[2]), True)


def _fit_caps(pl: Planner, caps_real: FloatArray) -> tuple[str, IntArray | None]:
    caps = pl.int_caps(np.asarray(caps_real))
    g = pl.items.groups
    b = bp.greedy_pack(pl.sizes_up, caps, g)
    if b is not None:
        return "yes", b
    if not pl.small(caps.size):
        return "unknown", None
    if pl.ints.exact:
        out = bp.sat_pack(pl.sizes_up, caps, g, time_limit=pl.budget(), seed=pl.cfg.seed)
        return {"optimal": "yes", "infeasible": "no"}.get(out.status, "unknown"), out.bins
    # Inexact loads: sizes rounded down against capacities rounded up can only prove "no"; a packing
    # of that relaxation is not a real one, so "yes" needs a packing with sizes up and capacities down.
    relaxed = bp.sat_pack(pl.sizes_lo, pl.int_caps(np.asarray(caps_real), proof=True), g,
                          time_limit=pl.budget(), seed=pl.cfg.seed)
    if relaxed.status == "infeasible":
        return "no", None
    real = bp.sat_pack(pl.sizes_up, caps, g, time_limit=pl.budget(), seed=pl.cfg.seed)
    return ("yes", real.bins) if real.status == "optimal" else ("unknown", None)


def _after_loss(pl: Planner, owner: IntArray, kept: list[int], lost: set[int], caps_by: dict[int, float],
                allow_sat: bool) -> tuple[float | None, int, bool] | None:
    """Fewest (state, partitions) moves after losing ``lost``; ``(None, 0, used_sat)`` when it cannot fit."""
    items = pl.items
    surv = [j for j in kept if j not in lost]
    orphan = np.isin(owner, list(lost))
    forced_state = float(items.move_state[orphan].sum())
    forced_parts = int(items.move_parts[orphan].sum())
    s = pl.sizes_up
    surv_caps = pl.int_caps(np.asarray([caps_by[j] for j in surv]))
    col = {j: c for c, j in enumerate(surv)}
    stay = np.flatnonzero(~orphan)
    g = items.groups
    # Orphans fit into the survivors' free capacity: exactly the forced moves.
    col_of = np.full(max(kept) + 1, -1, dtype=np.int64)
    col_of[surv] = np.arange(len(surv))
    surv_bins = col_of[owner]
    if bp.pack_rest(s, surv_bins, ~orphan, surv_caps, g) is not None:
        return forced_state, forced_parts, False
    if not allow_sat or not pl.small(len(surv)):
        return None
    # Survivors must shed items: CP-SAT, cost = whole item's state for every item that changes instance.
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    ni, k = items.n_items, len(surv)
    x = bp.item_vars(model, ni, k)
    for c in range(k):
        model.add(sum(x[i][c] * int(s[i]) for i in range(ni)) <= int(surv_caps[c]))
    bp.add_anti_affinity(model, x, g)  # one item alone in its group needs no constraint
    sc = pl.state_scale
    stay_terms = []
    for i in stay.tolist():
        c = col[int(owner[i])]
        stay_terms.append((x[i][c], round(items.move_state[i] * sc), int(items.move_parts[i])))
    total_s = round(float(items.move_state.sum()) * sc)
    total_p = int(items.move_parts.sum())
    state_expr = total_s - sum(v * w for v, w, _ in stay_terms)
    parts_expr = total_p - sum(v * p for v, _, p in stay_terms)
    solver = bp.new_solver(pl.budget(), pl.cfg.seed)
    st = bp.minimise(solver, model, state_expr)
    if st == "infeasible":
        return None, 0, True
    if st != "optimal":
        return None
    best_state = round(solver.objective_value)
    model.add(state_expr <= best_state)
    if bp.minimise(solver, model, parts_expr) != "optimal":
        return None
    return best_state / sc, round(solver.objective_value), True
