"""Offline capacity planning: how many instances, what scaling costs, what failure costs.

The question of an SRE sizing a consumer group (or a Kafka Streams
application), answered with proofs.  The model, in one place:

*Items.*  A partition is an item; a co-partition unit (partition ``i`` of every
topic of a ``copartition`` group, KIP-315) is one item that cannot be split.  Its
*load* is the sum of its partitions' ``weights`` (bytes/s, records/s ...).  With
``catch_up_seconds`` the weights are read as *lag* (records behind) and the load
is ``lag / catch_up_seconds``: the consumption rate that drains the backlog in
that time.  Partitions of a co-partition group at or above the group's smallest
partition count are not joinable (KIP-315 leaves them unassigned) and carry no
load here.  Streams: each stateful task's active and its
``num_standby_replicas`` standbys are items of one *anti-affinity group* (they
must sit on distinct instances); see :func:`streams_items`.

*Instances.*  An instance holds load up to ``capacity`` (same unit as the
loads).  A member's ``capacity`` field is a multiplier: member ``j`` holds
``capacity * members[j].capacity``.  The plan for ``n`` instances keeps ``n`` of
today's members when ``n <= m`` (the ``m`` members of the input; *which* ones is
chosen by the optimisation: the cheapest to keep) and adds ``n - m`` new
instances of multiplier ``new_capacity`` (default 1) when ``n > m``.  Every
instance is a replica of the same application: it may take any planned item
(the union of the members' subscriptions is planned; differing subscriptions
are reported in ``notes``).

*Minimum.*  The smallest ``n`` for which an assignment within capacity exists.
Feasibility is shown by an assignment; minimality by a lower bound equal to
``n`` (``proof_kind = "bound"``) or by CP-SAT proving ``n - 1`` infeasible
(``"cp-sat"``); when neither closes in the time limit the gap is reported
(``"gap"``).  With different capacities the ``n`` largest instances are the
best choice for feasibility (a packing into smaller instances also fits into
larger ones), so feasibility of ``n`` is checked on them.

*Per ``n``.*  ``max_utilisation``: the best-balanced assignment's busiest
instance (load / capacity), minimised.  ``moved_state`` then
``moved_partitions``: the fewest moves (lexicographically: ``move_costs`` first,
then partitions) from the current assignment (members' ``owned``, previous-owner
rules of docs/format.md) to any assignment within capacity on ``n`` instances.  A
partition *moves* when it had a previous owner and ends on another instance
(also when its owner is removed).  ``kafka_*``: what Kafka's cooperative-sticky
does on the same kept instances (run until settled); it balances partition
counts, not loads, so it may not fit.  Resilience: after losing *any* ``K``
instances of the plan, does the load fit on the survivors, and the worst case
of the fewest moves needed (see :func:`resilience`).

*Code.*  This module is the entry point (:func:`plan`, the JSON document) and
re-exports the public names of the modules doing the work:
:mod:`solver.planning.config` (parameters, checks), :mod:`solver.planning.items`
(items), :mod:`solver.planning.planner` (fleets, integer data),
:mod:`solver.planning.minimum` (minimum and proof), :mod:`solver.planning.balance`
and :mod:`solver.planning.moves` / :mod:`solver.planning.moves_greedy` (per-``n``
balance and fewest moves), :mod:`solver.planning.resilience` (N-K),
:mod:`solver.planning.kafka` (Kafka's answer), :mod:`solver.planning.baselines`
(rules of thumb) and :mod:`solver.planning.rows` (one table row).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from solver.model import Instance
from solver.planning.balance import Balance, balance
from solver.planning.baselines import baselines
from solver.planning.binpacking import FloatArray, IntArray
from solver.planning.config import EPS, SAT_PAIR_LIMIT, PlanConfig, PlanUsageError, check_config, parse_range
from solver.planning.items import PlanItems, consumer_items, streams_items
from solver.planning.kafka import KafkaFn, KafkaRun, kafka_consumer, kafka_streams
from solver.planning.minimum import Minimum, feasible, greedy_count, lower_bound, minimum
from solver.planning.moves import Moves, fewest_moves, move_costs_matrix, moves_bound
from solver.planning.moves_greedy import greedy_moves
from solver.planning.planner import Fleet, Planner, check_items
from solver.planning.resilience import RESILIENCE_ENUM_LIMIT, RESILIENCE_SAT_LIMIT, Resilience, resilience
from solver.planning.rows import default_range, plan_row

__all__ = [
    "EPS",
    "RESILIENCE_ENUM_LIMIT",
    "RESILIENCE_SAT_LIMIT",
    "SAT_PAIR_LIMIT",
    "Balance",
    "Fleet",
    "FloatArray",
    "IntArray",
    "KafkaFn",
    "KafkaRun",
    "Minimum",
    "Moves",
    "PlanConfig",
    "PlanItems",
    "PlanUsageError",
    "Planner",
    "Resilience",
    "balance",
    "baselines",
    "check_config",
    "check_items",
    "consumer_items",
    "default_range",
    "feasible",
    "fewest_moves",
    "greedy_count",
    "greedy_moves",
    "kafka_consumer",
    "kafka_streams",
    "lower_bound",
    "minimum",
    "move_costs_matrix",
    "moves_bound",
    "parse_range",
    "plan",
    "resilience",
    "streams_items",
]


#: Bytes per planning item (labels, previous holders, per-row arrays), measured with margin.
PLAN_BYTES_PER_ITEM = 1500
#: Bytes per (fleet instance x fleet instance) pair: the relabelling assignment of each row is dense.
PLAN_BYTES_PER_FLEET_PAIR = 64
#: Most items a plan takes: the first row runs to the end whatever ``--time-limit`` says, and 100,000 items
#: (a Streams app with Kafka's high-availability beside it) take about 45 s.
PLAN_MAX_ITEMS = 100_000


def check_plan_size(instance: Instance, cfg: PlanConfig) -> None:
    """Refuse a plan that cannot fit in memory, before its items are built.

    Items are topic-partitions (consumer) or task replicas (Streams: an active
    and ``num_standby_replicas`` standbys per stateful task); each row also
    relabels a packing over the whole fleet (today's members or the row's
    count, whichever is larger), a dense square assignment.

    Raises
    ------
    solver.resources.TooLargeError
        Saying how much memory the plan needs and how much is available.
    """
    from solver.errors import Problem
    from solver.resources import Need, TooLargeError, check_fits, solver_base

    if instance.protocol == "streams":
        spec = instance.streams
        stateful = sum(1 for t in spec.tasks if t.stateful)
        n_items = len(spec.tasks) + stateful * int(spec.config.num_standby_replicas)
        members = len(spec.clients)
        path = "config.num_standby_replicas" if spec.config.num_standby_replicas > members else "tasks"
    else:
        n_items = instance.total_partitions
        members = len(instance.members)
        path = "members" if members * members > n_items else "topics"
    if n_items > PLAN_MAX_ITEMS:
        raise TooLargeError(instance.name or "instance", [Problem(path, (
            f"plan of {n_items:,} items: at most {PLAN_MAX_ITEMS:,} (its greedy packings and Kafka's assignor run item "
            f"by item: 100,000 take about 45 s; see docs/format.md#limits)"))])
    fleet = max(members, cfg.range[1] if cfg.range is not None else members + 1)
    # one CP-SAT worker: run_cpsat starts only as many as the memory left holds
    need = solver_base() + PLAN_BYTES_PER_ITEM * n_items + PLAN_BYTES_PER_FLEET_PAIR * fleet * fleet
    check_fits(Need(need, f"plan of {n_items} items on a fleet of up to {fleet} instances", path),
               instance.name or "instance")


def _kafka_version(kafka_assignor: Any, cfg: PlanConfig, instance: Instance) -> str | None:
    """The Kafka release the compared assignor follows (``None`` without one)."""
    if kafka_assignor is None or getattr(kafka_assignor, "versions", None) is None:
        return None
    from solver.kafka_version import resolve

    return str(resolve(cfg.kafka_version, instance.kafka_version))


def first_rows(lo: int, hi: int, minimum: int | None, today: int, k: int) -> list[int]:
    """The counts a user asks about first: the minimum, the counts that survive losing ``k`` instances
    (minimum + 1 .. minimum + k), then today's count (those within ``lo..hi``).

    >>> first_rows(15, 20, 16, 20, 2)
    [16, 17, 18, 20]
    """
    wanted = [minimum, *(minimum + j for j in range(1, k + 1))] if minimum else []
    return list(dict.fromkeys(n for n in [*wanted, today] if lo <= n <= hi))


def row_order(lo: int, hi: int, minimum: int | None, today: int, k: int) -> list[int]:
    """The counts ``lo..hi`` in the order they are computed: what a user asks about first.

    :func:`first_rows`, then the others ascending -- so that a time limit cuts the rows that matter least.

    >>> row_order(15, 20, 16, 20, 2)
    [16, 17, 18, 20, 15, 19]
    """
    ordered = first_rows(lo, hi, minimum, today, k)
    return ordered + [n for n in range(lo, hi + 1) if n not in ordered]


#: Units (an instance's ``units.weights``) that count records behind: lag.
LAG_UNITS = ("records", "lag", "offsets", "messages")


def weights_unit(instance: Instance) -> str:
    """The unit of the instance's weights (``units.weights``; ``weight`` when it says none).

    >>> from solver.io import parse_instance
    >>> weights_unit(parse_instance({"format": "kassign/v1", "topics": {"T": 1}, "units": {"weights": "bytes/s"}}))
    'bytes/s'
    """
    if instance.protocol == "streams":
        return "weight"  # --active-load / --standby-load per replica
    units = (instance.meta or {}).get("units") or {}
    return str(units.get("weights") or "weight")


def weights_are_lag(instance: Instance, cfg: PlanConfig) -> bool:
    """True when the weights count records behind: ``--catch-up-seconds`` or a lag unit (consumer instances).

    A Streams plan's items are task replicas of ``--active-load`` / ``--standby-load``: no lag (KEDA's rule
    would count tasks as records).
    """
    if instance.protocol == "streams":
        return False
    return cfg.catch_up_seconds is not None or weights_unit(instance) in LAG_UNITS


def todays_size(multipliers: Any) -> float:
    """The capacity multiplier of today's instances: the most common one (the larger on a tie), 1 without any.

    >>> todays_size([4.0, 4.0, 2.0]), todays_size([]), todays_size([1.0, 2.0])
    (4.0, 1.0, 2.0)
    """
    vals = [float(x) for x in multipliers]
    if not vals:
        return 1.0
    return max(set(vals), key=lambda v: (vals.count(v), v))


def survives(rows: Sequence[Mapping[str, Any]], k: int) -> dict[str, Any] | None:
    """The answer to N-K: the fewest instances of the table whose every loss of ``k`` still fits.

    ``{"k", "instances"}`` (``instances`` ``None`` when no row of the table survives), ``undecided``: counts
    below it whose N-K is not decided (time limit); ``None`` without ``--resilience``.

    >>> survives([{"n": 9, "resilience_fits": False}, {"n": 10, "resilience_fits": None},
    ...           {"n": 11, "resilience_fits": True}], 2)
    {'k': 2, 'instances': 11, 'undecided': [10]}
    """
    if not k:
        return None
    ok = [r["n"] for r in rows if r.get("resilience_fits") is True]
    first = min(ok) if ok else None
    undecided = [r["n"] for r in rows if r.get("resilience_fits") is None and (first is None or r["n"] < first)]
    return {"k": k, "instances": first, "undecided": undecided}


def plan(instance: Instance, cfg: PlanConfig, kafka_assignor: Any = None,
         progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Capacity plan of ``instance`` (see this module's docstring); returns the JSON document.

    Parameters
    ----------
    instance
        Consumer or Streams instance.
    cfg
        Capacity, resilience K, range, catch-up seconds, KEDA threshold, limits.
    kafka_assignor
        A registry spec (``cooperative-sticky`` / ``high-availability``) to
        compare with, or ``None`` (the ``kafka_*`` columns say ``unavailable``).
    progress
        Called with short messages while working (for stderr).

    Raises
    ------
    PlanUsageError
        For a request that makes no sense (capacity <= 0, empty range ...).
    solver.errors.InfeasibleError
        When an item is larger than every instance (no count fits).
    """
    check_config(cfg)
    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    check_plan_size(instance, cfg)
    if instance.protocol == "streams":
        items = streams_items(instance, cfg.active_load, cfg.standby_load)
    else:
        items = consumer_items(instance, cfg.catch_up_seconds)
    new_source = "--new-capacity" if cfg.new_capacity is not None else "today's instances"
    if cfg.new_capacity is None:
        cfg = replace(cfg, new_capacity=todays_size(items.multipliers))
    pl = Planner(items, cfg)
    if cfg.time_limit is not None:
        pl.deadline = t0 + cfg.time_limit  # the whole command, reading the items included
    check_items(pl)
    say(f"{items.n_items:,} items: proving the minimum")
    mn = minimum(pl)
    lo, hi = cfg.range if cfg.range is not None else default_range(mn, pl.m, cfg.resilience)
    rows: list[dict[str, Any]] = []
    kafka_fn = kafka_streams if instance.protocol == "streams" else kafka_consumer
    late: list[str] = []
    order = row_order(lo, hi, mn.min_instances, pl.m, cfg.resilience)
    n_first = len(first_rows(lo, hi, mn.min_instances, pl.m, cfg.resilience))
    for i, n in enumerate(order):
        if rows and pl.expired():
            left = sorted(order[i:])
            late = [f"time limit ({cfg.time_limit:g} s) reached: rows {', '.join(map(str, left))} not computed "
                    "(raise --time-limit)"]
            say(late[0])
            break
        say(f"n = {n}")
        # the time left is shared: first among the rows a user asks about first (minimum .. minimum + K,
        # today's), then among the others; a row that cannot prove its answer in its share keeps the best found
        group_left = (n_first if i < n_first else len(order)) - i
        with pl.share(1.0 / group_left):
            rows.append(plan_row(pl, instance, mn, n, cfg, kafka_assignor, kafka_fn))
    rows.sort(key=lambda r: r["n"])
    if rows:
        lo, hi = rows[0]["n"], rows[-1]["n"]
    new_cap = float(cfg.new_capacity if cfg.new_capacity is not None else 1.0)
    doc: dict[str, Any] = {
        "format": "kassign/v1",
        "kind": "plan",
        "name": instance.name,
        "protocol": instance.protocol,
        "capacity": cfg.capacity,
        # what --capacity is per: a member's `capacity` (a Streams client's stream threads) multiplies it
        "capacity_per": ("stream thread" if instance.protocol == "streams" else
                         "instance" if bool((items.multipliers == 1).all()) and new_cap == 1
                         else "unit of member capacity"),
        "instance_capacity": ([float(items.multipliers.min() * cfg.capacity),
                               float(items.multipliers.max() * cfg.capacity)] if pl.m else None),
        "new_instance_capacity": float(new_cap * cfg.capacity),
        "new_capacity": new_cap,
        # where an added instance's size comes from: today's instances (the default) or --new-capacity
        "new_capacity_source": new_source,
        "load_unit": "lag/s" if cfg.catch_up_seconds else weights_unit(instance),
        "weights_are_lag": weights_are_lag(instance, cfg),
        "state_unit": str(((instance.meta or {}).get("units") or {}).get("move_costs") or "move_costs"),
        "catch_up_seconds": cfg.catch_up_seconds,
        "items": items.n_items,
        "partitions": items.partitions,
        "not_joinable": items.not_joinable,
        "total_load": float(items.raw.sum() / items.divisor),
        "largest_item": float(items.raw.max() / items.divisor) if items.n_items else 0.0,
        "current_instances": pl.m,
        "identical_instances": pl.identical,
        "exact_arithmetic": pl.ints.exact,
        "min_instances": mn.min_instances,
        "lower_bound": mn.lower_bound,
        "lower_bound_name": mn.bound_name,
        "upper_bound": mn.upper_bound,
        "proof_kind": mn.proof_kind,
        "proof": mn.proof,
        "min_seconds": round(mn.seconds, 3),
        "resilience": cfg.resilience,
        "range": [lo, hi],
        "rows": rows,
        "survives": survives(rows, cfg.resilience),
        "baselines": baselines(pl, mn, cfg, instance.protocol, weights_are_lag(instance, cfg)),
        "kafka_assignor": (kafka_assignor.name if kafka_assignor is not None else None),
        "kafka_version": _kafka_version(kafka_assignor, cfg, instance),
        "notes": list(items.notes) + late + ([] if pl.ints.exact else [
            "loads are not exact decimals: integer rounding is conservative (sizes up for packings, down for "
            "proofs)"]),
        "seconds": 0.0,
    }
    doc["seconds"] = round(time.perf_counter() - t0, 3)
    return doc
