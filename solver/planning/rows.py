"""One row of the plan table: for ``n`` instances, balance, fewest moves, Kafka's answer and N-K resilience.

See :mod:`solver.planning.plan` (*Per n*) for the model.
"""

from __future__ import annotations

import math
from typing import Any

from solver.model import Instance
from solver.planning.balance import Balance, balance
from solver.planning.config import PlanConfig
from solver.planning.kafka import KafkaRun
from solver.planning.minimum import Minimum
from solver.planning.moves import Moves, fewest_moves
from solver.planning.planner import Planner, real_caps
from solver.planning.resilience import Resilience, resilience


def default_range(mn: Minimum, m: int, k: int) -> tuple[int, int]:
    """Rows shown by default: from one below the minimum (or today's size) to two above (or today's size + k).

    Parameters
    ----------
    mn
        The minimum instance count.
    m
        Today's instance count.
    k
        Resilience ``K``.

    Returns
    -------
    tuple of int
        ``(first, last)`` instance counts, at most 41 rows.
    """
    lo = max(1, min(mn.min_instances or 1, m if m else 10**9) - 1)
    hi = max((mn.min_instances or 1) + k + 2, m)
    if hi - lo > 40:
        hi = lo + 40
    return lo, hi


def plan_row(pl: Planner, instance: Instance, mn: Minimum, n: int, cfg: PlanConfig, kafka_assignor: Any,
             kafka_fn: Any) -> dict[str, Any]:
    """The table row for ``n`` instances: fit, best balance, fewest moves, Kafka's answer, N-K resilience.

    Parameters
    ----------
    pl
        The planning run.
    instance
        The instance planned (Kafka's assignor runs on it).
    mn
        The minimum instance count (decides ``fits`` when proven).
    n
        Instances of this row.
    cfg
        Planning parameters (resilience ``K``).
    kafka_assignor
        Registry spec of Kafka's assignor, or ``None``.
    kafka_fn
        :func:`solver.planning.kafka.kafka_consumer` or
        :func:`solver.planning.kafka.kafka_streams`.

    Returns
    -------
    dict
        The row of the JSON document (``rows`` in ``docs/planning.md``).
    """
    items = pl.items
    if mn.proof_kind != "gap" and mn.min_instances is not None:
        fits: bool | None = n >= mn.min_instances
    else:
        fits = True if n >= mn.upper_bound else (False if n < mn.lower_bound else None)
    row: dict[str, Any] = {"n": n, "fits": fits}
    # the row's time: a third for the best balance, half of the rest for the fewest moves, the rest for N-K
    with pl.share(1 / 3):
        bal = balance(pl, n) if fits is not False else Balance("infeasible", None, None, None, None)
    if fits is None and bal.status in ("optimal", "feasible"):
        fits = row["fits"] = True
    row["max_utilisation"] = _r(bal.max_utilisation)
    row["max_utilisation_bound"] = _r_down(bal.bound)
    row["balance_status"] = bal.status
    row["headroom"] = _r(1 - bal.max_utilisation) if bal.max_utilisation is not None else None
    caps = real_caps(pl, n)
    row["spare_capacity"] = _r(float(caps.sum() - items.raw.sum()) / items.divisor)
    with pl.share(1 / 2):
        mv = fewest_moves(pl, n) if fits is not False else Moves("infeasible", None, None, 0, 0.0, (), None, None)
    row["moved_partitions"] = mv.moved_partitions
    row["moved_state"] = _r(mv.moved_state)
    row["moved_partitions_bound"] = mv.bound_partitions if mv.moved_partitions is not None else None
    row["moved_state_bound"] = _r_down(mv.bound_state) if mv.moved_state is not None else None
    row["moves_status"] = mv.status
    row["plan_max_utilisation"] = _r(mv.max_utilisation)
    row["kept"] = [pl.member_name(j) for j in mv.kept] if mv.kept else None
    if mv.kept and n < pl.m:
        row["removed"] = [pl.member_name(j) for j in range(pl.m) if j not in set(mv.kept)]
    # Kafka's assignor on the same instances (kept by the plan, else the first n in input order).
    kept = list(mv.kept) if mv.kept else (list(range(min(n, pl.m))) + list(range(pl.m, n)))
    kr = KafkaRun("unavailable")
    if kafka_assignor is not None:
        try:
            kr = kafka_fn(instance, items, pl, kept, n, kafka_assignor)
        except Exception as e:  # a baseline failing must not hide the plan
            kr = KafkaRun(f"error: {type(e).__name__}: {e}")
    row["kafka_status"] = kr.status
    row["kafka_moved_partitions"] = kr.moved_partitions
    row["kafka_moved_state"] = _r(kr.moved_state)
    row["kafka_max_utilisation"] = _r(kr.max_utilisation)
    row["kafka_fits"] = kr.fits
    row["kafka_rounds"] = kr.rounds
    row["kafka_copartition_violations"] = kr.copartition_violations
    row["kafka_unplaced"] = kr.unplaced
    if fits is False:
        # n instances cannot hold the load: they cannot survive losing K of them either (N-0 = fits)
        res = Resilience(cfg.resilience, False, None, None, None, (), True, "does not fit with all n instances")
    else:
        res = resilience(pl, mv, cfg.resilience, mn.min_instances if mn.proof_kind != "gap" else None)
    row["resilience_k"] = res.k
    row["resilience_fits"] = res.fits
    row["resilience_moved_partitions"] = res.moved_partitions
    row["resilience_moved_state"] = _r(res.moved_state)
    row["resilience_forced_moved_state"] = _r(res.forced_moved_state)
    row["resilience_worst_lost"] = list(res.worst_lost)
    row["resilience_exact"] = res.exact
    if res.note:
        row["resilience_note"] = res.note
    return row


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(float(x), nd)


def _r_down(x: float | None, nd: int = 6) -> float | None:
    """Round a lower bound *down*, so that the printed bound stays a bound."""
    if x is None:
        return None
    f = 10.0**nd
    return math.floor(float(x) * f + 1e-9) / f
