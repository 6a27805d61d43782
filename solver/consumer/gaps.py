"""Gap metrics of an assignment against the optimum: ``max_load_gap``, ``sum_sq_gap``, ``excess_moves``.

* ``max_load_gap`` = this assignment's max load - the optimum's max load;
* ``sum_sq_gap`` = its sum of squared loads - the optimum's;
* ``excess_moves`` = its ``moved_cost`` - the fewest moved cost of any valid
  assignment *at least as balanced*: every load at most this assignment's max
  load **and** a sum of squared loads at most its own (the fair stickiness
  gap: moves wasted compared with an assignment no less balanced).

``excess_moves`` is in the unit the optimum minimises, the scorer's
``moved_cost`` (``move_costs`` summed; topic-partitions when the instance has
none, so then it counts moved topic-partitions).  With both balance measures
capped, a proven optimum -- most balanced first, then fewest moved cost --
has ``excess_moves = 0`` by construction.  (Capping only the max load counted
as waste what is not: handing a joining member its share is less moving than
leaving it nearly empty at the same max load; and counting partitions while
the optimum minimises ``move_costs`` counted cheap moves against it.)

Loads are the balance measure the optimum minimises: topic-partitions per
capacity, or partition weights per capacity when the instance has weights.
The fewest moved cost is a min-cost flow with member capacities
``floor(max_load * capacity / item load)`` when all items have the same load
and the flow's fewest-moves (or most balanced) answer meets the sum-of-squares
cap, else a CP-SAT model with both caps (an assignment with co-partition
violations is compared with assignments free of the co-partition constraint,
one that leaves not-joinable partitions idle with assignments that may too);
what CP-SAT leaves open in a tenth of the time goes to the exact engine's
column generation at the load cap alone, from the measured assignment, whose
bound holds under both caps.  If neither proves the answer within the time
limit, ``excess_moves_proven`` is false and ``excess_moves`` is a lower
estimate (computed from the best assignment found, never below 0).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from solver.consumer.flow import solve_flow
from solver.consumer.items import build_classes
from solver.consumer.weighted_cpsat import solve_cpsat
from solver.errors import InfeasibleError
from solver.model import Assignment, Instance
from solver.model.semantics import GroupView
from solver.result import Result

#: Share of ``fewest_moves``'s time limit for CP-SAT's first try, and for the column generation after it.
CPSAT_FIRST = 0.1
COLGEN_SHARE = 0.5


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


def _close_le(a: float, b: float) -> bool:
    """``a <= b`` up to float rounding of sums of load ratios."""
    return a <= b + 1e-9 * max(1.0, abs(b))


def _flow_sum_sq(ic: Any, flows: Any, caps: np.ndarray) -> float:
    """Sum of squared loads per capacity of a flow's ``(class, member, count)`` triples."""
    loads = np.zeros(len(caps))
    for c, m, k in flows:
        loads[m] += k * float(ic.weight[c])
    return float(((loads / caps) ** 2).sum())


def fewest_moves(instance: Instance, max_load: float, sum_sq: float | None = None, *, time_limit: float = 10.0,
                 seed: int = 0, not_joinable: bool = True, upper: float | None = None,
                 deterministic: bool = True, starts: Sequence[Assignment] = ()) -> tuple[float, bool]:
    """Fewest moved cost of a valid assignment with every load ``<= max_load`` and sum of squares ``<= sum_sq``.

    The moved cost is the scorer's ``moved_cost`` and the optimum's ``moves``
    stage (``move_costs`` summed, 1 per topic-partition without them).
    ``not_joinable=False`` leaves not-joinable partitions out (for comparing
    with an assignment that leaves them unassigned, as KIP-315 does).
    ``upper``: the moved cost of an assignment known to meet both caps (the
    one being measured); it only prunes the search, the answer is the same.
    ``deterministic``: CP-SAT's limit counts deterministic time, so the same
    inputs give the same answer on a busy machine (the default; ``False``: the wall clock).
    ``starts``: valid assignments within both caps (the one being measured);
    with items of different loads, when CP-SAT does not prove its answer in a
    share of the time, the column generation of the exact engine
    (:func:`~solver.consumer.exact.colgen.fewest_moves_at`) runs from the
    cheapest: its bound on the fewest moved cost under the load cap alone is a
    bound here too, and its answer is one here when it keeps the
    sum-of-squares cap.

    Returns
    -------
    (moved_cost, proven)
        ``proven`` is false when CP-SAT stopped at its time limit (``moved_cost``
        is then the best found, an upper bound; with ``upper`` and nothing found
        in time, ``upper`` itself).  Raises
        :class:`~solver.errors.InfeasibleError` when no such assignment exists.
    """
    view = GroupView(instance)
    ic = build_classes(instance, view, not_joinable=not_joinable)
    if ic.total_items == 0:
        return 0.0, True
    caps = np.array([m.capacity for m in instance.members], dtype=np.float64)
    weights = set(ic.weight[ic.count > 0].tolist())
    racks = [m.rack for m in instance.members]
    if len(weights) == 1:
        # equal items: min-cost flow under the load cap; CP-SAT only when the sum-of-squares cap binds
        w = weights.pop()
        item_caps = np.floor(max_load * caps / w + 1e-9).astype(np.int64) if w > 0 else None
        equal_caps = len(set(caps.tolist())) == 1
        # fewest moves first (then the most balanced of those when capacities are equal): exact if it meets
        # the sum-of-squares cap
        out = solve_flow(ic, racks, order=("moves", "balance") if equal_caps else ("moves",), caps=item_caps)
        least = out.moved_cost_int / out.move_scale  # without the sum-of-squares cap: a lower bound
        if sum_sq is None or _close_le(_flow_sum_sq(ic, out.flows, caps), sum_sq):
            return least, True
        if upper is not None and upper <= least + 1e-9 * max(1.0, least):
            return least, True  # an assignment within both caps already moves only the lower bound
        if equal_caps:
            # the cap at the least sum of squares possible: the most balanced flow's fewest moves
            out = solve_flow(ic, racks, order=("balance", "moves"), caps=item_caps)
            if _close_le(sum_sq, _flow_sum_sq(ic, out.flows, caps)):
                return out.moved_cost_int / out.move_scale, True
    def cpsat(seconds: float, best: float | None) -> tuple[float, bool] | None:
        try:
            cout = solve_cpsat(ic, caps, racks, stages=("moves",), time_limit=seconds, seed=seed,
                               deterministic=deterministic, load_cap=max_load * (1 + 1e-12), sum_sq_cap=sum_sq,
                               moves_cap=None if best is None else best * (1 + 1e-12) + 1e-9)
        except InfeasibleError:
            if best is None:
                raise
            return None  # nothing found in time (or nothing cheaper than ``best`` exists: not proven here)
        rep = cout.stages[0]
        return rep.value, rep.proven and cout.exact

    if not starts or sum_sq is None:
        got = cpsat(time_limit, upper)
        # nothing found in time: the assignment being measured is the best known (excess 0, not proven)
        return got if got is not None else (float(upper), False)  # type: ignore[arg-type]
    # CP-SAT proves most of these at once (in under 0.2 s on the research grid's steps); the rest get the column
    # generation's bound (on the grid's lognormal steps CP-SAT proved none of those in its 3 s, the column
    # generation about a third in under a second), then CP-SAT again
    got = cpsat(time_limit * CPSAT_FIRST, upper) if CPSAT_FIRST > 0 else None
    if got is not None and got[1]:
        return got
    best = got[0] if got is not None else upper
    cg = _colgen(ic, instance, caps, max_load, sum_sq, starts, time_limit * COLGEN_SHARE, deterministic, seed)
    if cg is None:
        rest = cpsat(time_limit * (1 - CPSAT_FIRST), best)
        return rest if rest is not None else (float(best), False)  # type: ignore[arg-type]
    lower, cheaper = cg
    if cheaper is not None and (best is None or cheaper < best):
        best = cheaper
    if best is not None and best <= lower + 1e-9 * max(1.0, abs(lower)):
        return float(best), True
    rest = cpsat(time_limit * (1 - CPSAT_FIRST - COLGEN_SHARE), best)
    if rest is None:
        return float(best), False  # type: ignore[arg-type]
    return rest[0], rest[1] or rest[0] <= lower + 1e-9 * max(1.0, abs(lower))


def _colgen(ic: Any, instance: Instance, caps: np.ndarray, max_load: float, sum_sq: float,
            starts: Sequence[Assignment], seconds: float, deterministic: bool,
            seed: int) -> tuple[float, float | None] | None:
    """The column generation's bound on the fewest moved cost with every load ``<= max_load`` (a bound with the
    sum-of-squares cap too) and the moved cost of its answer if that keeps ``sum_sq``; ``None`` where it does not
    apply (no start of single items, or loads without an exact integer scale: its cap would not be this one)."""
    from fractions import Fraction

    from solver.consumer.exact.colgen import fewest_moves_at, moved
    from solver.consumer.exact.data import scale
    from solver.consumer.items import class_counts

    sc = scale(ic, caps.tolist())
    if not sc.exact:
        return None
    xs = [x for x in (class_counts(ic, instance, a) for a in starts) if x is not None]
    if not xs:
        return None
    wint = np.asarray(sc.wint, dtype=np.int64)
    ratio = np.asarray(sc.ratio, dtype=np.int64)
    # every load <= max_load (CP-SAT's own 1e-12 slack): NL_m * load_unit <= max_load
    zcap = math.floor(Fraction(max_load * (1 + 1e-12)) / Fraction(sc.load_unit))
    xs = [x for x in xs if int(((wint @ x) * ratio).max(initial=0)) <= zcap]
    if not xs:
        return None
    xs.sort(key=lambda x: moved(ic, sc, x))
    got = fewest_moves_at(ic, sc, zcap, xs[0], seconds=seconds, deterministic=deterministic, seed=seed,
                          others=xs[1:])
    unit = float(sc.move_unit)
    loads = (got.solution * np.asarray(ic.weight, dtype=np.float64)[:, None]).sum(axis=0) / caps
    keeps = float((loads**2).sum()) <= sum_sq * (1 + 1e-12)  # CP-SAT's and :func:`_within`'s slack
    return got.bound * unit, (got.cost * unit if keeps else None)


def _number(v: float) -> float | int:
    """An integral float as an int (moved costs without ``move_costs`` are counts)."""
    r = round(v)
    return r if abs(v - r) <= 1e-9 * max(1.0, abs(v)) else v


def _difference(a: float, b: float) -> float:
    """``a - b``, or 0 where the two differ only by float rounding (loads summed in another order)."""
    d = a - b
    return 0.0 if abs(d) <= 1e-12 * max(1.0, abs(a), abs(b)) else d


def _within(instance: Instance, assignment: Assignment, max_load: float, sum_sq: float) -> float | None:
    """The moved cost of a valid ``assignment`` whose loads are within both caps, else ``None``."""
    from solver.model.scoring import score

    s = score(instance, assignment)
    if not s.get("valid", False):
        return None
    loads = member_loads(instance, assignment)
    active = np.array([any(t in instance.topics for t in m.topics) for m in instance.members], dtype=bool)
    top = float(loads[active].max()) if active.any() else 0.0
    # the same sums as the caps, so only CP-SAT's own 1e-12 slack is allowed
    if top > max_load * (1 + 1e-12) or float((loads**2).sum()) > sum_sq * (1 + 1e-12):
        return None
    return float(s["moved_cost"])


def gap_metrics(
    instance: Instance,
    assignment: Assignment,
    optimum: Result | Mapping[str, Any] | Assignment,
    *,
    scores: Mapping[str, Any] | None = None,
    time_limit: float = 10.0,
    deterministic: bool = True,
    known: Sequence[Assignment] = (),
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
    deterministic
        Count that limit in CP-SAT's deterministic time (the default: the same answer on a busy machine;
        ``False``: the wall clock, for latency).
    known
        Further valid assignments of ``instance`` (e.g. the optimum within a
        balance tolerance).  Each one at least as balanced as ``assignment``
        bounds the fewest moved cost from above, as the optimum's own
        assignment does: ``excess_moves`` is then at least ``moved_cost``
        minus the least of theirs, even when CP-SAT finds nothing better in
        its time.

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
    cur_sq = float((loads**2).sum())
    out: dict[str, Any] = {
        "max_load_gap": _difference(cur_max, opt_max),
        "sum_sq_gap": _difference(cur_sq, opt_sq),
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
    own = float(scores["moved_cost"])
    if own <= 0.0:  # nothing moved: nothing wasted
        out.update(excess_moves=0, excess_moves_proven=True)
        return out
    # a known assignment within both caps moves at least the fewest: the search starts below it.  Leaving
    # out not-joinable partitions or the co-partition rule only enlarges the set it is the fewest of.
    opt_asg = optimum.assignment if isinstance(optimum, Result) else optimum
    cands = [*known, *([opt_asg] if isinstance(opt_asg, Assignment) else [])]
    within = [(a, c) for a, c in ((a, _within(instance, a, cur_max, cur_sq)) for a in cands) if c is not None]
    upper = min([own, *(c for _, c in within)])
    starts = [assignment, *(a for a, _ in within)]
    fewest, proven = fewest_moves(cmp_inst, cur_max, cur_sq, time_limit=time_limit, not_joinable=not idle,
                                  upper=upper, deterministic=deterministic, starts=starts)
    proven = proven or fewest <= 0.0  # nothing moved at that balance: no assignment moves less
    excess = own - fewest
    if excess < -1e-9 * max(1.0, fewest) and proven:
        raise AssertionError(f"internal: fewest moved cost {fewest} above the assignment's own {scores['moved_cost']}")
    out["excess_moves"] = _number(max(0.0, excess))
    out["excess_moves_proven"] = proven
    return out


__all__ = ["fewest_moves", "gap_metrics", "member_loads"]
