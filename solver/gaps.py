"""Gaps against the optimum, both protocols: the one front door.

``kassign compare``, ``kassign score`` and the Spark sweep all measure an
assignment against the optimum through this module, so each rule is written
once:

* **the settle rule** (:data:`SETTLE`): heuristics run with
  ``rounds="settle"``, so cooperative assignors are measured where their
  follow-up rebalances end, not after their first round;
* **the defined rule** (:func:`defined_gaps`): gaps exist for an assignment
  whose ``outcome`` is ``valid`` only; an invalid one, or one that splits
  co-partitioned units, is outside the set the optimum is the best of, so
  every gap is ``None`` (a gap against it, often negative, says nothing);
* **the consumer rule** (:func:`consumer_gaps`): ``max_load_gap``,
  ``sum_sq_gap`` and ``excess_moves`` of
  :func:`solver.consumer.gaps.gap_metrics`, with **its fallback**: when no
  assignment within the optimum's hard constraints is as balanced as this one
  (:class:`~solver.errors.InfeasibleError`), the balance gaps only and
  ``excess_moves`` ``None``;
* **the Streams rule** (:func:`streams_gap_metrics`): differences of the
  :func:`solver.streams.scoring.score_streams` metrics against
  ``optimal-streams``' on the same instance;
* :func:`balance_optimal`: as balanced as the optimum, up to :data:`EPS`.

:func:`gaps` chooses the rule by the instance's protocol, as networkx's
``maximum_flow`` chooses its algorithm.  The consumer rule's machinery (the
fewest moves at a balance: min-cost flow, else CP-SAT) stays in
:mod:`solver.consumer.gaps` beside the engines it drives; the Streams rule is a
difference of scores and needs no solver, so it is written here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from solver.model import Assignment, Instance
from solver.model.scoring import VALID
from solver.result import Result

#: Options given to every heuristic that is measured: cooperative assignors settle their rounds (others ignore it).
SETTLE: Mapping[str, Any] = MappingProxyType({"rounds": "settle"})

#: Tolerance for "optimal on balance" (loads are floats).
EPS = 1e-9

#: The gap columns of the consumer protocol.
CONSUMER_GAPS = ("max_load_gap", "sum_sq_gap", "excess_moves", "excess_moves_proven")
#: The gap columns of Kafka Streams (``balance_optimal`` beside them).
STREAMS_GAPS = ("active_balance_gap", "total_balance_gap", "restoration_gap", "member_balance_gap")
#: Every gap column of either protocol.
GAP_KEYS = CONSUMER_GAPS + STREAMS_GAPS


def gaps_defined(scores: Mapping[str, Any]) -> bool:
    """Whether an assignment with these scores has gaps: its ``outcome`` is ``valid`` (the defined rule).

    Examples
    --------
    >>> gaps_defined({"outcome": "valid"}), gaps_defined({"outcome": "split"})
    (True, False)
    """
    return scores.get("outcome", VALID) == VALID


def defined_gaps(scores: Mapping[str, Any], compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``compute()`` when the assignment's ``outcome`` is ``valid``, else every gap ``None``.

    The consumer's scores (they have ``max_load``) give :data:`CONSUMER_GAPS`, the Streams scores
    :data:`STREAMS_GAPS` and ``balance_optimal`` false.

    Examples
    --------
    >>> defined_gaps({"outcome": "invalid", "max_load": 3.0}, dict)
    {'max_load_gap': None, 'sum_sq_gap': None, 'excess_moves': None, 'excess_moves_proven': None}
    >>> defined_gaps({"outcome": "valid"}, lambda: {"restoration_gap": 0.0})
    {'restoration_gap': 0.0}
    """
    if gaps_defined(scores):
        return compute()
    if "max_load" in scores:
        return dict.fromkeys(CONSUMER_GAPS)
    return {**dict.fromkeys(STREAMS_GAPS), "balance_optimal": False}


def balance_optimal(*gaps: float | None) -> bool | None:
    """As balanced as the optimum: every balance gap is 0 (up to :data:`EPS`); ``None`` if one is unknown.

    A gap below 0 is only possible against an optimum that is not proven (the assignment beat the best
    found); it counts as balanced as the optimum, as 0 does.

    Examples
    --------
    >>> balance_optimal(0.0, 0.0), balance_optimal(0.0, 2.0), balance_optimal(None, 0.0)
    (True, False, None)
    """
    if any(g is None for g in gaps):
        return None
    return all(float(g) <= EPS for g in gaps)  # type: ignore[arg-type]


def balance_gaps(instance: Instance, assignment: Assignment, optimum: Result | Mapping[str, Any] | Assignment,
                 scores: Mapping[str, Any]) -> dict[str, Any]:
    """The consumer's balance gaps alone (``max_load_gap``, ``sum_sq_gap``; ``excess_moves`` ``None``): no solve."""
    from solver.consumer.gaps import gap_metrics

    return gap_metrics(instance, assignment, optimum, scores={**scores, "valid": False})


def consumer_gaps(instance: Instance, assignment: Assignment, optimum: Result | Mapping[str, Any] | Assignment, *,
                  scores: Mapping[str, Any], time_limit: float = 10.0, deterministic: bool = True,
                  known: Sequence[Assignment] = ()) -> dict[str, Any]:
    """:data:`CONSUMER_GAPS` of a consumer ``assignment``, under the defined rule, with the fallback.

    Parameters are those of :func:`solver.consumer.gaps.gap_metrics`; ``scores`` (the scorer's metrics of
    ``assignment``) decide whether the gaps are defined.  When no valid assignment is as balanced as this one
    (the fewest moves raise :class:`~solver.errors.InfeasibleError`), the balance gaps are still given and
    ``excess_moves`` is ``None``.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4}, "members": [
    ...     {"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}}, {"id": "b", "topics": ["T"]}]})
    >>> a = Assignment.from_lists({"a": {"T": [3]}, "b": {"T": [0, 1, 2]}})
    >>> from solver.model.scoring import score
    >>> consumer_gaps(inst, a, {"max_load": 2.0, "sum_sq": 8.0}, scores=score(inst, a))
    {'max_load_gap': 1.0, 'sum_sq_gap': 2.0, 'excess_moves': 2, 'excess_moves_proven': True}
    """
    from solver.consumer.gaps import gap_metrics
    from solver.errors import InfeasibleError

    def compute() -> dict[str, Any]:
        try:
            return gap_metrics(instance, assignment, optimum, scores=scores, time_limit=time_limit,
                               deterministic=deterministic, known=known)
        except InfeasibleError:  # nothing valid is as balanced as this assignment: balance gaps only
            return balance_gaps(instance, assignment, optimum, scores)

    return defined_gaps(scores, compute)


def _clean(x: float) -> float:
    """A difference of per-thread loads; float noise below :data:`EPS` is 0."""
    return 0.0 if abs(x) <= EPS else x


def streams_gap_metrics(metrics: Mapping[str, Any], reference: Mapping[str, Any]) -> dict[str, Any]:
    """Gaps of a Streams assignment's metrics against ``optimal-streams``' on the same instance.

    ``active_balance_gap`` = max active tasks per thread minus the optimum's;
    ``total_balance_gap`` = max replicas (actives, standbys, warm-ups) per
    thread minus the optimum's; ``restoration_gap`` = restoration cost minus
    the optimum's.  The optimum is lexicographic (active balance, total
    balance, restoration), so against a proven optimum a valid assignment has
    ``active_balance_gap >= 0``; ``total_balance_gap >= 0`` when its active
    balance gap is 0; ``restoration_gap >= 0`` when both balance gaps are 0.
    Otherwise a negative value is real: the assignment bought a lower later
    stage with a worse earlier one (e.g. less restoration for worse balance).
    ``balance_optimal``: both balance gaps are 0.  Under the Streams rebalance
    protocol (KIP-1071), ``member_balance_gap`` = the most tasks on one member
    minus the optimum's (``None`` when either says nothing per member).

    The reference must be the optimum of the instance the assignor saw (its own previous tasks and lags):
    caught-up sets and restoration costs depend on each assignor's history.

    Examples
    --------
    >>> m = {"max_active_load": 2.0, "max_total_load": 3.0, "restoration_cost": 5}
    >>> o = {"max_active_load": 1.5, "max_total_load": 3.0, "restoration_cost": 7}
    >>> streams_gap_metrics(m, o)
    {'active_balance_gap': 0.5, 'total_balance_gap': 0.0, 'restoration_gap': -2.0, 'member_balance_gap': None, \
'balance_optimal': False}
    """
    m, o = metrics, reference
    a = _clean(float(m["max_active_load"]) - float(o["max_active_load"]))
    t = _clean(float(m["max_total_load"]) - float(o["max_total_load"]))
    r = float(m["restoration_cost"]) - float(o["restoration_cost"])
    mm, om = m.get("max_member_tasks"), o.get("max_member_tasks")
    member = None if mm is None or om is None else float(mm) - float(om)
    return {"active_balance_gap": a, "total_balance_gap": t, "restoration_gap": r, "member_balance_gap": member,
            "balance_optimal": balance_optimal(a, t)}


def streams_gaps(metrics: Mapping[str, Any], reference: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`streams_gap_metrics` under the defined rule (:data:`STREAMS_GAPS` and ``balance_optimal``)."""
    return defined_gaps(metrics, lambda: streams_gap_metrics(metrics, reference))


def gaps(instance: Instance, assignment: Any, optimum: Result, *, scores: Mapping[str, Any],
         optimum_scores: Mapping[str, Any] | None = None, time_limit: float = 10.0, deterministic: bool = True,
         known: Sequence[Assignment] = ()) -> dict[str, Any]:
    """The gaps of ``assignment`` against ``optimum`` by the instance's protocol, under the defined rule.

    Parameters
    ----------
    instance
        The group state, either protocol.
    assignment
        The assignment measured (a consumer :class:`~solver.model.Assignment` or a
        :class:`~solver.streams.model.StreamsAssignment`).
    optimum
        The optimum's result on ``instance`` (``optimal``, or ``optimal-streams``).
    scores
        The scorer's metrics of ``assignment``.
    optimum_scores
        Streams: the scorer's metrics of the optimum's assignment, when already computed.
    time_limit, deterministic, known
        Consumer: how ``excess_moves`` is searched (:func:`consumer_gaps`).

    Returns
    -------
    dict
        :func:`consumer_gaps` or :func:`streams_gaps`.
    """
    if instance.protocol == "streams":
        if optimum_scores is None:
            from solver.streams.scoring import score_streams

            optimum_scores = score_streams(instance, optimum.assignment)  # type: ignore[arg-type]
        return streams_gaps(scores, optimum_scores)
    return consumer_gaps(instance, assignment, optimum, scores=scores, time_limit=time_limit,
                         deterministic=deterministic, known=known)


__all__ = ["CONSUMER_GAPS", "EPS", "GAP_KEYS", "SETTLE", "STREAMS_GAPS", "balance_gaps", "balance_optimal",
           "consumer_gaps", "defined_gaps", "gaps", "gaps_defined", "streams_gap_metrics", "streams_gaps"]
