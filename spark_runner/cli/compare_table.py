"""The ``kassign compare`` table: key columns first, the instance's units, and the one line that answers.

Columns, in order (the first ones are what a user reads; a terminal of 80 columns shows them in the
first block):

* consumer: ``assignor``, ``outcome``, ``copartition_violations`` (with ``copartition``), then the
  busiest member's load -- ``max_load`` (topic-partitions per capacity), or on a weighted instance
  ``weighted_max_load`` in the instance's unit (``units``; MB/s for bytes/s) and ``x_optimum`` (that
  load over the optimum's) -- and ``max_load_gap`` in the same unit, ``moved``, ``moved_cost`` (with
  ``move_costs``), ``excess_moves`` (shown ``>=N`` when only a lower estimate), ``sum_sq_gap`` (unit
  loads only: squared bytes/s read as nothing),
  ``cross_rack`` (with racks), ``rounds``;
* Streams: ``assignor``, ``outcome``, ``max_active_load``, ``active_balance_gap``,
  ``max_total_load``, ``total_balance_gap``, ``restoration_cost``, ``restoration_gap``,
  ``moved_actives``, ``not_caught_up_actives``, ``standby_shortfall``, ``warmups``.

Times, solver statuses and every other metric are in ``--json``.  Below the table: one note per outcome
other than ``valid`` (and per assignor that refused the input), then one line: the best assignor that
ships with Kafka on this instance, what it costs against the optimum, and how to run the optimum.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from heuristics.shipped import shipped
from spark_runner.cli.tables import Column
from spark_runner.units import Scale, instance_units, number

Cell = Callable[[str, Any], str]


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _ratio(v: Any, ref: Any) -> str:
    a, b = _finite(v), _finite(ref)
    if a is None or b is None or b <= 0:
        return "-"
    return f"{a / b:.2f}x"


def columns(instance: Any, rows: Sequence[Mapping[str, Any]]) -> tuple[list[Column], Cell]:
    """The table's columns for ``instance`` and a cell formatter that shows each in its unit."""
    units = instance_units(instance)
    scales: dict[str, Scale] = {}

    def scale(key: str, unit: str) -> Scale:
        scales[key] = Scale.for_values([r.get(key) for r in rows], unit)
        return scales[key]

    cols = [Column("assignor", align="left"), Column("outcome", align="left")]
    if instance.protocol != "streams" and instance.copartition:
        cols.append(Column("copartition_violations", "split"))  # why an outcome is "split"
    if instance.protocol == "streams":
        cols += [Column("max_active_load", "actives"), Column("active_balance_gap", "+opt"),
                 Column("max_total_load", "replicas"), Column("total_balance_gap", "+opt"),
                 Column("restoration_cost", "restore"), Column("restoration_gap", "+opt"),
                 Column("moved_actives", "moved"), Column("not_caught_up_actives", "lagging"),
                 Column("standby_shortfall", "no standby"), Column("warmups")]
    else:
        has_costs = any(t.move_costs is not None for t in instance.topics.values())
        cost_unit = units["move_costs"] if has_costs else "partitions"
        if instance.has_weights:
            w = scale("weighted_max_load", units["weights"])
            scales["max_load_gap"] = w
            cols += [Column("weighted_max_load", f"busiest {w.unit}".strip()), Column("x_optimum", "x opt"),
                     Column("max_load_gap", f"+opt {w.unit}".strip()), Column("moved")]
        else:
            cols += [Column("max_load", "busiest"), Column("max_load_gap", "+opt"), Column("moved")]
        if has_costs:
            c = scale("moved_cost", cost_unit)
            scales["excess_moves"] = c
            cols.append(Column("moved_cost", f"moved {c.unit}" if c.unit not in ("", "move_costs")
                               else "moved state"))
        cols.append(Column("wasted", "wasted"))
        if not instance.has_weights:
            cols.append(Column("sum_sq_gap", "sum_sq +opt"))
        if any(t.racks for t in instance.topics.values()) and any(m.rack for m in instance.members):
            cols.append(Column("cross_rack", "cross-rack"))
        cols.append(Column("rounds"))

    def cell(key: str, v: Any) -> str:
        if key == "wasted":
            value, proven = v if isinstance(v, tuple) else (v, True)
            text = scales["excess_moves"].show(value) if "excess_moves" in scales else number(value)
            return text if proven or value is None else f">={text}"
        if key in scales:
            return scales[key].show(v)
        return number(v)

    return cols, cell


def table_rows(instance: Any, doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of ``compare``'s JSON document with the derived display keys (``ms``, ``x_optimum``)."""
    rows = []
    ref = doc["rows"][0] if doc["rows"] else {}
    for r in doc["rows"]:
        row = {**r, "ms": None if r.get("seconds") is None else 1000.0 * float(r["seconds"]),
               "outcome": r.get("outcome") or ("error" if r.get("error") else None),
               "status": r.get("status") or r.get("error")}
        if instance.protocol != "streams" and instance.has_weights:
            row["x_optimum"] = _ratio(r.get("weighted_max_load"), ref.get("weighted_max_load"))
        if instance.protocol != "streams":
            # wasted moves with whether they are proven (">=": a lower estimate, the time limit cut the search)
            row["wasted"] = (r.get("excess_moves"), bool(r.get("excess_moves_proven", True)))
        rows.append(row)
    return rows


_NOTES = {
    "split": "split: valid partition by partition, but it splits co-partitioned units, so a stream-stream "
             "join reads wrong data; no gaps (the optimum keeps units together, a gap would compare unlike "
             "things).",
    "invalid": "invalid: breaks a rule Kafka enforces (see `kassign score`); no gaps.",
}


def notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """One line per outcome other than ``valid`` that appears in the table, one for Streams balance gaps below
    zero, one for lower estimates of wasted moves, one per assignor that failed."""
    seen = {r.get("outcome") for r in rows}
    out = [_NOTES[k] for k in ("split", "invalid") if k in seen]
    balance = ("active_balance_gap", "total_balance_gap")
    if any((_finite(r.get(k)) or 0.0) < -1e-9 for r in rows for k in balance):
        out.append("a negative +opt: more balanced than the optimum, which never puts an active on a client that is "
                   "not caught up while one is, nor places fewer standbys than configured; Kafka allows both "
                   "(lagging, no standby), and restore shows what it costs.")
    if any(isinstance(r.get("wasted"), tuple) and r["wasted"][0] is not None and not r["wasted"][1] for r in rows):
        out.append(">=: a lower estimate of the wasted moves: the fewest moves at that balance were not proven "
                   "within the time limit (--json: excess_moves_proven).")
    return out + [f"error: {r['assignor']} refused this input: {r['error']}" for r in rows if r.get("error")]


def _best_key(instance: Any, r: Mapping[str, Any]) -> tuple[Any, ...]:
    def n(k: str) -> float:
        v = _finite(r.get(k))
        return float("inf") if v is None else round(v, 9)

    s = shipped(str(r["assignor"]))
    # ties: a public setting before an internal one (internal.task.assignor.class), then the older release
    since = (int(s.key.startswith("internal.")), *(int(x) for x in s.since.split("."))) if s else (1, 99)
    if instance.protocol == "streams":
        return (n("active_balance_gap"), n("total_balance_gap"), n("restoration_gap"), n("moved_actives"), since)
    if instance.has_weights:
        return (n("max_load_gap"), n("moved_cost"), n("sum_sq_gap"), since)
    return (n("max_load_gap"), n("sum_sq_gap"), n("moved_cost"), since)


def verdict_line(instance: Any, rows: Sequence[Mapping[str, Any]], source: str) -> str:
    """One line: the best assignor Kafka ships here, its cost against the optimum, how to run the optimum."""
    streams = instance.protocol == "streams"
    ref = rows[0] if rows else {}
    optimum = "optimal-streams" if streams else "optimal"
    run = f"run the optimum: kassign assign {source} --assignor {optimum} -o assignment.json"
    tol = next((r for r in rows if str(r.get("assignor", "")).startswith(f"{optimum}~")), None)
    if tol is not None and "error" not in tol and float(tol.get("moved_cost") or 0) < float(ref.get("moved_cost") or 0):
        # weighted groups: what to deploy is the fewest moves within the tolerance of the best balance, when
        # that moves less than the strict optimum
        eps = str(tol["assignor"]).split("~", 1)[1]
        run = (f"deploy the optimum within {float(eps):.0%} of the best balance (moves "
               f"{number(tol.get('moved'))} partitions, the strict optimum {number(ref.get('moved'))}): "
               f"kassign assign {source} --assignor {optimum} --balance-tolerance {eps} -o assignment.json")
    kafka = [r for r in rows[1:] if shipped(str(r["assignor"])) and r.get("outcome") == "valid"]
    if not kafka:
        return f"No assignor that ships with Kafka gives a valid assignment that keeps units together here; {run}"
    best = min(kafka, key=lambda r: _best_key(instance, r))
    s = shipped(str(best["assignor"]))
    assert s is not None
    if streams:
        cost = (f"busiest thread {number(best.get('max_active_load'))} actives (optimum "
                f"{number(ref.get('max_active_load'))}), restores {number(best.get('restoration_cost'))} offsets "
                f"(optimum {number(ref.get('restoration_cost'))})")
    elif instance.has_weights:
        sc = Scale.for_values([ref.get("weighted_max_load"), best.get("weighted_max_load")],
                              instance_units(instance)["weights"])
        cost = (f"busiest member {sc.with_unit(best.get('weighted_max_load'))}, "
                f"{_ratio(best.get('weighted_max_load'), ref.get('weighted_max_load'))} the optimum's "
                f"{sc.with_unit(ref.get('weighted_max_load'))}; moves {number(best.get('moved'))} partitions "
                f"(optimum {number(ref.get('moved'))})")
    else:
        cost = (f"busiest member {number(best.get('max_load'))} partitions (optimum {number(ref.get('max_load'))}), "
                f"moves {number(best.get('moved'))} (optimum {number(ref.get('moved'))})")
    needs = f", {s.needs}" if s.needs else ""  # what else deploying it takes (KIP-848's group.protocol=consumer)
    return f"Best Kafka assignor here: {best['assignor']} ({s.setting}, Kafka {s.since}+{needs}): {cost}; {run}"


#: The unit of a consumer metric: ``"load"`` (the instance's load unit), ``"load2"`` (squared), ``"cost"``
#: (moved state), or the words to print.
_METRIC_UNITS = {
    "max_load": "topic-partitions per capacity", "min_load": "topic-partitions per capacity",
    "spread": "topic-partitions per capacity", "sum_sq_load": "(topic-partitions per capacity)²",
    "weighted_max_load": "load", "max_load_gap": "load", "sum_sq_gap": "load2", "moved": "topic-partitions",
    "moved_cost": "cost", "excess_moves": "cost", "unassigned": "topic-partitions",
    "not_joinable": "topic-partitions", "copartition_violations": "units", "cross_rack": "topic-partitions",
    "restoration_cost": "offsets", "restoration_gap": "offsets", "max_active_load": "active tasks per thread",
    "active_balance_gap": "active tasks per thread", "max_total_load": "replicas per thread",
    "total_balance_gap": "replicas per thread", "moved_actives": "tasks",
    "unassigned_tasks": "tasks", "duplicate_actives": "tasks", "standby_shortfall": "standbys",
    "not_caught_up_actives": "tasks", "min_active_load": "active tasks per thread",
    "active_spread": "active tasks per thread", "min_total_load": "replicas per thread",
    "total_spread": "replicas per thread", "standbys": "standbys", "warmups": "warm-up replicas",
    "cross_rack_traffic": "KIP-925 traffic cost", "max_member_tasks": "tasks", "member_spread": "tasks",
    "moved_member_actives": "tasks", "member_balance_gap": "tasks",
}


#: On a weighted instance the weighted loads come first (right after validity), then the partition counts.
_WEIGHTED_FIRST = ("weighted_max_load", "max_load_gap", "sum_sq_gap")


def metric_rows(instance: Any, metrics: Mapping[str, Any]) -> list[dict[str, str]]:
    """``kassign score``'s table: one row per metric, the value for a person and its unit.

    On a weighted instance the weighted loads (``weighted_max_load``, ``max_load_gap``, ``sum_sq_gap``) come
    first, in the instance's unit (MB/s for bytes/s; ``sum_sq_gap`` in that unit squared), before the
    partition counts (``max_load`` ...). Counts with thousands separators, lists one item a line; never
    ``None`` or an exponent.
    """
    units = instance_units(instance)
    weighted = instance.protocol != "streams" and instance.has_weights
    has_costs = instance.protocol != "streams" and any(t.move_costs is not None for t in instance.topics.values())
    load_unit = units["weights"] if weighted else "topic-partitions per capacity"
    load = Scale.for_values([metrics.get("weighted_max_load"), metrics.get("max_load_gap")], load_unit)
    squared = Scale(load.factor ** 2, f"({load.unit})²" if load.unit else "")
    cost = Scale.for_values([metrics.get("moved_cost"), metrics.get("excess_moves")],
                            units["move_costs"] if has_costs else "topic-partitions")
    keys = list(metrics)
    if weighted and "max_load" in keys:
        first = [k for k in _WEIGHTED_FIRST if k in metrics]
        rest = [k for k in keys if k not in first]
        at = rest.index("max_load")
        keys = rest[:at] + first + rest[at:]
    rows = []
    for k in keys:
        v = metrics[k]
        kind = _METRIC_UNITS.get(k, "")
        if isinstance(v, list):
            text, unit = "\n".join(map(str, v)) if v else "-", ""
        elif kind == "load":
            text, unit = load.show(v), load.unit
        elif kind == "cost":
            text, unit = cost.show(v), cost.unit
        elif kind == "load2":
            if weighted:
                text, unit = squared.show(v), squared.unit
            else:
                text, unit = number(v), "(topic-partitions per capacity)²"
        else:
            text, unit = number(v), kind
        rows.append({"metric": k, "value": text, "unit": unit if text != "-" else ""})
    return rows


__all__ = ["columns", "metric_rows", "notes", "table_rows", "verdict_line"]
