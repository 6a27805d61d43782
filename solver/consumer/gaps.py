"""Gap metrics of an assignment against the optimum: ``max_load_gap``, ``sum_sq_gap``, ``excess_moves``.

* ``max_load_gap`` = this assignment's max load - the optimum's max load;
* ``sum_sq_gap`` = its sum of squared loads - the optimum's;
* ``excess_moves`` = its ``moved`` - the fewest moved topic-partitions of any
  valid assignment whose every load is at most this assignment's max load
  (the fair stickiness gap: moves wasted compared with an assignment at least
  as balanced).

Loads are the balance measure the optimum minimises: topic-partitions per
capacity, or partition weights per capacity when the instance has weights.
``moved`` is the scorer's (per topic-partition).  The fewest moves are a
min-cost flow with member capacities ``floor(max_load * capacity / item
load)`` when all items have the same load, else the exact class-count engine
(:mod:`solver.consumer.exact`) with the load cap (an assignment with co-partition violations is
compared with assignments
free of the co-partition constraint, one that leaves not-joinable partitions
idle with assignments that may too); if CP-SAT does not prove its answer within the time limit,
``excess_moves_proven`` is false and ``excess_moves`` is a lower estimate
(computed from the best assignment found, never below 0).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from solver.consumer.exact import solve_exact
from solver.consumer.flow import solve_flow
from solver.consumer.items import build_classes
from solver.model import Assignment, Instance
from solver.model.semantics import GroupView
from solver.result import Result

GAP_NAMES = ("max_load_gap", "sum_sq_gap", "excess_moves")


def member_loads(instance: Instance, assignment: Assignment) -> np.ndarray:
    """Load per member (weights or topic-partitions, divided by capacity), input order."""
    out = np.zeros(len(instance.members), dtype=np.float64)
    for i, m in enumerate(instance.members):
        total = 0.0
        for t, parts in assignment.members.get(m.id, {}).items():
            topic = instance.topics.get(t)
            if topic is None:
                continue
            ok = parts[(parts >= 0) & (parts < topic.partitions)]
            total += float(topic.weights[ok].sum()) if topic.weights is not None else float(ok.size)
        out[i] = total / m.capacity
    return out


def _optimum_balance(instance: Instance, optimum: Result | Mapping[str, Any] | Assignment) -> tuple[float, float]:
    if isinstance(optimum, Result):
        stages = list(optimum.extra.get("stages", ()))
        if "max_load" in stages and "sum_sq" in stages:
            return (float(optimum.objective[stages.index("max_load")]),
                    float(optimum.objective[stages.index("sum_sq")]))
        loads = member_loads(instance, optimum.assignment)
        return float(loads.max(initial=0.0)), float((loads**2).sum())
    if isinstance(optimum, Assignment):
        loads = member_loads(instance, optimum)
        return float(loads.max(initial=0.0)), float((loads**2).sum())
    if "loads_sorted" in optimum:
        ls = np.asarray(optimum["loads_sorted"], dtype=np.float64)
        return float(ls.max(initial=0.0)), float((ls**2).sum())
    return float(optimum["max_load"]), float(optimum["sum_sq"])


def _unit_move_costs(instance: Instance) -> Instance:
    """The instance with every move cost 1 (``moved`` counts topic-partitions)."""
    if all(t.move_costs is None for t in instance.topics.values()):
        return instance
    topics = {k: dataclasses.replace(t, move_costs=None) for k, t in instance.topics.items()}
    return dataclasses.replace(instance, topics=topics)


def _truncate_not_joinable(instance: Instance) -> Instance:
    """The instance without its not-joinable partitions (co-partition topics cut to the group limit)."""
    limits = GroupView(instance).limits
    topics = {}
    for name, t in instance.topics.items():
        k = limits[name]
        if k >= t.partitions:
            topics[name] = t
            continue
        topics[name] = dataclasses.replace(
            t, partitions=k,
            weights=None if t.weights is None else t.weights[:k],
            move_costs=None if t.move_costs is None else t.move_costs[:k],
            racks=None if t.racks is None else t.racks[:k])
    return dataclasses.replace(instance, topics=topics)


def fewest_moves(instance: Instance, max_load: float, *, time_limit: float = 10.0, seed: int = 0,
                 not_joinable: bool = True) -> tuple[int, bool]:
    """Fewest moved topic-partitions of a valid assignment with every load ``<= max_load``.

    ``not_joinable=False`` leaves not-joinable partitions out (for comparing
    with an assignment that leaves them unassigned, as KIP-315 does).

    Returns
    -------
    (moves, proven)
        ``proven`` is false when CP-SAT stopped at its time limit (``moves`` is
        then the best found, an upper bound).  Raises
        :class:`~solver.errors.InfeasibleError` when no such assignment exists.
    """
    inst = _unit_move_costs(instance)
    view = GroupView(inst)
    ic = build_classes(inst, view, not_joinable=not_joinable)
    if ic.total_items == 0:
        return 0, True
    caps = np.array([m.capacity for m in inst.members], dtype=np.float64)
    weights = set(ic.weight[ic.count > 0].tolist())
    racks = [m.rack for m in inst.members]
    if len(weights) == 1:
        w = weights.pop()
        item_caps = np.floor(max_load * caps / w + 1e-9).astype(np.int64) if w > 0 else None
        out = solve_flow(ic, racks, order=("moves",), caps=item_caps)
        return round(out.moved_cost_int / out.move_scale), True
    cout = solve_exact(ic, caps, racks, stages=("moves",), time_limit=time_limit, seed=seed,
                       load_cap=max_load * (1 + 1e-12))
    rep = cout.stages[0]
    return round(rep.value), rep.proven and cout.exact


def gap_metrics(
    instance: Instance,
    assignment: Assignment,
    optimum: Result | Mapping[str, Any] | Assignment,
    *,
    scores: Mapping[str, Any] | None = None,
    time_limit: float = 10.0,
) -> dict[str, Any]:
    """The three gap metrics of ``assignment`` (see module docstring).

    Parameters
    ----------
    instance
        The group state.
    assignment
        The assignment to measure.
    optimum
        The optimal solver's :class:`~solver.result.Result`, an optimal
        assignment, or a mapping with ``max_load`` and ``sum_sq`` (or
        ``loads_sorted``) in the balance measure.
    scores
        The scorer's metrics of ``assignment`` if already computed (``moved``
        and ``valid`` are used).
    time_limit
        CP-SAT limit for ``excess_moves`` on instances with items of
        different loads.

    Returns
    -------
    dict
        ``max_load_gap``, ``sum_sq_gap``, ``excess_moves`` (``None`` for an
        invalid assignment) and ``excess_moves_proven``.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4}, "members": [
    ...     {"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}}, {"id": "b", "topics": ["T"]}]})
    >>> a = Assignment.from_lists({"a": {"T": [3]}, "b": {"T": [0, 1, 2]}})
    >>> g = gap_metrics(inst, a, {"max_load": 2.0, "sum_sq": 8.0})
    >>> g["max_load_gap"], g["sum_sq_gap"], g["excess_moves"]
    (1.0, 2.0, 2)
    """
    if scores is None:
        from solver.model.scoring import score

        scores = score(instance, assignment)
    opt_max, opt_sq = _optimum_balance(instance, optimum)
    loads = member_loads(instance, assignment)
    active = np.array([any(t in instance.topics for t in m.topics) for m in instance.members], dtype=bool)
    cur_max = float(loads[active].max()) if active.any() else 0.0
    out: dict[str, Any] = {
        "max_load_gap": cur_max - opt_max,
        "sum_sq_gap": float((loads**2).sum()) - opt_sq,
        "excess_moves": None,
        "excess_moves_proven": False,
    }
    if not scores.get("valid", False):
        return out
    # an assignment that leaves not-joinable partitions idle is compared with assignments that may
    # too; one that ignores co-partitioning with assignments that may ignore it too
    cmp_inst = instance
    idle = int(scores.get("not_joinable", 0)) > 0
    if int(scores.get("copartition_violations", 0)) > 0:
        cmp_inst = dataclasses.replace(_truncate_not_joinable(instance) if idle else instance, copartition=())
        idle = False
    fewest, proven = fewest_moves(cmp_inst, cur_max, time_limit=time_limit, not_joinable=not idle)
    excess = int(scores["moved"]) - fewest
    if excess < 0 and proven:
        raise AssertionError(f"internal: fewest moves {fewest} above the assignment's own {scores['moved']}")
    out["excess_moves"] = max(0, excess)
    out["excess_moves_proven"] = proven
    return out


__all__ = ["GAP_NAMES", "fewest_moves", "gap_metrics", "member_loads"]
