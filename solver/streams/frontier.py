"""Balance-movement Pareto frontier of a Kafka Streams instance.

The Streams counterpart of :mod:`solver.consumer.frontier`: for each budget
``B`` of moved actives (tasks whose active leaves its previous client, the
scorer's ``moved_actives``), the most balanced assignment that respects the
optimum's hard constraints (:mod:`solver.streams.optimal`: one active per
task, distinct standbys, stateful actives on caught-up clients) and moves at
most ``B`` actives: first the largest number of active tasks per stream
thread, then the largest number of replicas (actives and standbys) per thread.

Budgets run from the moves no assignment can avoid (tasks whose previous
clients are all gone or not caught up) to the moves of ``optimal-streams``
(whose balance is the best of all), each point one CP-SAT model with a moves
cap, two lexicographic stages, ``proven`` when both are.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from solver.consumer.frontier import budget_steps, dominating, plot_panels, point_at, run_each
from solver.errors import InfeasibleError
from solver.model import Instance
from solver.result import Params
from solver.runtime import run_cpsat, set_budget
from solver.streams.cpsat import StreamsSat
from solver.streams.optimal import greedy, solve_streams
from solver.streams.problem import StreamsProblem

DEFAULT_POINT_LIMIT = 10.0
#: The balance stages of each point, in order.
POINT_STAGES = ("active_balance", "total_balance")


def forced_moves(p: StreamsProblem) -> int:
    """Actives that must move: the task had a previous active client and none of them may take it."""
    return sum(1 for t in range(p.n_tasks)
               if p.prev_active[t] and not set(p.prev_active[t]) & set(p.allowed_active[t]))


def _point(p: StreamsProblem, budget: int, params: Params, limit: float) -> dict[str, Any] | None:
    """The frontier's point at ``budget`` moved actives; ``None`` when a stage finds no assignment in its time
    (fewer CP-SAT workers under a memory limit, a loaded machine): the point is left out, and said so."""
    from ortools.sat.python import cp_model

    m = StreamsSat(p)
    m.model.add(m.exprs["movement"] <= budget)
    active, standby = greedy(p)
    values: dict[str, int] = {}
    proven = True
    for k, stage in enumerate(POINT_STAGES):
        m.hint(active, standby)
        expr = m.exprs[stage]
        m.model.minimize(expr)
        solver = cp_model.CpSolver()
        # reproducible by default: one worker, deterministic time (-O deterministic=0: workers, wall clock)
        set_budget(solver, limit / (len(POINT_STAGES) - k), seed=params.seed,
                   deterministic=bool(params.options.get("deterministic", True)),
                   workers=int(params.options.get("workers", 2)))
        code = run_cpsat(solver, m.model)
        if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None
        active, standby = m.read(solver)
        proven = proven and code == cp_model.OPTIMAL
        values[stage] = int(solver.value(expr))
        m.model.add(expr <= values[stage])
    moved = sum(1 for t in range(p.n_tasks) if p.prev_active[t] and active[t] not in p.prev_active[t])
    return {"budget": budget, "max_active_load": values["active_balance"] / p.scale,
            "max_total_load": values["total_balance"] / p.scale, "moved": moved, "proven": proven}


def compute_streams_frontier(instance: Instance, params: Params, max_points: int = 60) -> dict[str, Any]:
    """The Streams frontier as a JSON-ready dict.

    Parameters
    ----------
    instance
        A ``protocol: streams`` instance.
    params
        ``time_limit``: seconds per point (default 10) and for the optimum;
        ``seed``; ``options["deterministic"]`` (default true: one CP-SAT worker and deterministic time,
        the same frontier on an idle or a busy machine); ``options["workers"]`` (CP-SAT workers when not
        deterministic, default 2).
    max_points
        At most this many budgets (evenly spaced, both ends kept).

    Returns
    -------
    dict
        ``protocol`` (``"streams"``), ``engine`` (``"cpsat"``),
        ``optimum_moves`` (moved actives of ``optimal-streams``),
        ``optimum_status``, ``points``: one per budget with ``budget``,
        ``max_active_load``, ``max_total_load`` (tasks per thread), ``moved``
        and ``proven``.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> uid = "00000000-0000-0000-0000-00000000000{}".format
    >>> inst = parse_instance({"format": "kassign/v1", "protocol": "streams",
    ...     "tasks": [{"id": f"0_{i}", "stateful": False} for i in range(4)],
    ...     "clients": [{"id": "a", "process_id": uid(1), "active": ["0_0", "0_1", "0_2", "0_3"]},
    ...                 {"id": "b", "process_id": uid(2)}]})
    >>> [(p["budget"], p["max_active_load"]) for p in compute_streams_frontier(inst, Params())["points"]]
    [(0, 4.0), (1, 3.0), (2, 2.0)]
    """
    t0 = time.perf_counter()
    full = params.options.get("full_restore_lag")
    p = StreamsProblem.of(instance, int(full) if full is not None else None)
    if p.n_tasks == 0:
        return {"instance": instance.name, "protocol": "streams", "engine": "none", "optimum_moves": 0,
                "optimum_status": "optimal", "seconds": 0.0,
                "points": [{"budget": 0, "max_active_load": 0.0, "max_total_load": 0.0, "moved": 0,
                            "proven": True}]}
    # the default stage order ends with movement: the optimum's moves bound the budgets
    opt = solve_streams(instance, replace(params, objective=None))  # InfeasibleError without clients
    top = int(opt.objective[opt.extra["stages"].index("movement")])
    lo = forced_moves(p)
    limit = params.time_limit if params.time_limit is not None else DEFAULT_POINT_LIMIT
    points: list[dict[str, Any]] = []
    unsolved: list[int] = []
    for b in budget_steps(lo, max(lo, top), max_points):
        point = _point(p, b, params, limit)
        if point is None:
            unsolved.append(int(b))
        else:
            points.append(point)
    if not points:
        raise InfeasibleError(f"{instance.name or 'instance'}: no frontier point found within the time limit "
                              f"({limit:g} s per point; raise --time-limit)")
    doc: dict[str, Any] = {"instance": instance.name, "protocol": "streams", "engine": "cpsat", "optimum_moves": top,
                           "optimum_status": opt.status.value, "points": points,
                           "seconds": round(time.perf_counter() - t0, 3)}
    if unsolved:
        doc["unsolved_budgets"] = unsolved
    return doc


def place_streams(instance: Instance, doc: dict[str, Any], specs: Sequence[Any], params: Params,
                  err: Any = None) -> list[dict[str, Any]]:
    """Each Streams assignor's (moved actives, balance) and the frontier's best balance at its moves.

    ``specs`` are registry specs (:class:`solver.registry.AssignorSpec`);
    ``on_frontier``: a valid assignment that no frontier point dominates (no
    more moved actives, no worse active or total balance, better in one): one
    as balanced as the frontier that moved more actives than it needs is off
    it (an invalid one may look better than the frontier: it breaks a hard
    constraint, and is never on it).
    """
    from solver.streams.scoring import score_streams

    out = []
    pts = doc["points"]
    for name, res in run_each(instance, specs, params, err):
        s = score_streams(instance, res.assignment)
        moved = int(s["moved_actives"])
        best = point_at(pts, moved)
        act, tot = float(s["max_active_load"]), float(s["max_total_load"])
        out.append({"assignor": name, "valid": bool(s["valid"]), "outcome": s["outcome"],
                    "moved": moved, "max_active_load": act,
                    "max_total_load": tot, "frontier_max_active_load": best["max_active_load"],
                    "frontier_max_total_load": best["max_total_load"],
                    "on_frontier": bool(s["valid"]) and dominating(
                        {"moved": moved, "max_active_load": act, "max_total_load": tot}, pts,
                        ("moved", "max_active_load", "max_total_load")) is None})
    return out


def plot_streams_frontier(doc: dict[str, Any], path: str | Path) -> None:
    """PNG: active and total tasks per thread against moved actives, assignors as labelled points."""
    plot_panels(doc, path, (("max_active_load", "max active tasks per thread"),
                            ("max_total_load", "max tasks (active + standby) per thread")),
                "moved actives (budget)",
                f"Streams balance-movement frontier: {doc.get('instance') or 'instance'}", merge_labels=False)


__all__ = ["compute_streams_frontier", "forced_moves", "place_streams", "plot_streams_frontier"]
