"""Rules of thumb people size with today (KEDA, first/best-fit decreasing, one per partition) against the minimum.

See :mod:`solver.planning.plan` for the model.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from solver.planning.config import PlanConfig
from solver.planning.minimum import Minimum, greedy_count
from solver.planning.planner import Planner


def _plain(x: float) -> str:
    """``x`` with thousands separators and no exponent: ``10000000.0`` -> ``10,000,000``, ``2.5`` -> ``2.5``.

    >>> _plain(1e7), _plain(2.5), _plain(10.0)
    ('10,000,000', '2.5', '10')
    """
    if float(x).is_integer():
        return f"{x:,.0f}"
    return f"{x:,.6f}".rstrip("0").rstrip(".")


def _first_of_group(groups: Any) -> Any:
    """Index of the first item of each group (a Streams task's active replica)."""
    _, first = np.unique(groups, return_index=True)
    return np.sort(first)


def baselines(pl: Planner, mn: Minimum, cfg: PlanConfig, protocol: str,
              weights_are_lag: bool = True) -> list[dict[str, Any]]:
    """Instance counts people's rules of thumb ask for, against the proven minimum.

    - ``keda``: KEDA's Kafka scaler, ``ceil(total lag / lagThreshold)`` capped
      at the partition count (its default without ``allowIdleConsumers``);
      only when ``weights_are_lag`` (the weights count records behind: bytes/s are no lag).
    - ``first-fit-decreasing``, ``best-fit-decreasing``: the classic greedy packings.
    - ``one-partition-per-consumer``: one instance per item (a co-partition unit
      counts once: its partitions must sit together).

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).
    mn
        The minimum instance count (``vs_min`` and ``fits`` compare with it).
    cfg
        Planning parameters (``lag_threshold``, ``catch_up_seconds``).
    protocol
        ``consumer`` or ``streams`` (the rules are the same for both).

    Returns
    -------
    list of dict
        One entry per rule: ``name``, ``instances``, ``rule``, ``vs_min``, ``fits``.
    """
    items = pl.items
    out: list[dict[str, Any]] = []
    streams = protocol == "streams" and items.groups is not None
    # Streams: one item per task replica; the rules count tasks (input partitions), never standbys
    units = len(np.unique(items.groups)) if streams and items.groups is not None else items.n_items
    cap = units if streams else items.partitions
    what = "tasks" if streams else "partitions"
    lag = items.raw[_first_of_group(items.groups)] if streams and items.groups is not None else items.raw
    total_lag = float(lag.sum())
    keda = min(math.ceil(total_lag / cfg.lag_threshold - 1e-12), cap) if total_lag > 0 else 0
    if weights_are_lag:
        out.append({"name": "keda", "instances": int(keda),
                    "rule": f"ceil(total lag {total_lag:,.0f} / lagThreshold {_plain(cfg.lag_threshold)}), "
                            f"capped at {cap:,} {what}", "weights_as_lag": True})
    for name, bf in (("first-fit-decreasing", False), ("best-fit-decreasing", True)):
        cnt, _ = greedy_count(pl, best_fit=bf)
        out.append({"name": name, "instances": int(cnt), "rule": "greedy packing, largest item first"})
    out.append({"name": "one-partition-per-consumer", "instances": units,
                "rule": "one instance per task (standbys not counted)" if streams
                else "one instance per partition (co-partition unit)"})
    for b in out:
        b["vs_min"] = (b["instances"] - mn.min_instances) if mn.proof_kind != "gap" and \
            mn.min_instances is not None else None
        if mn.proof_kind != "gap" and mn.min_instances is not None:
            b["fits"] = bool(b["instances"] >= mn.min_instances)
        else:
            b["fits"] = True if b["instances"] >= mn.upper_bound else (
                False if b["instances"] < mn.lower_bound else None)
    return out
