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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heuristics.shipped import shipped
from spark_runner.cli.tables import Column
from spark_runner.units import Scale, instance_units, number

if TYPE_CHECKING:
    from solver.model import Instance

Cell = Callable[[str, Any], str]


def _finite(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _ratio(v: Any, ref: Any) -> str:
    a, b = _finite(v), _finite(ref)
    if a is None or b is None or b <= 0:
        return "-"
    return f"{a / b:.2f}x"


#: The table's columns of each Streams stage of the optimum.
_STAGE_COLUMNS = {
    "active_balance": [Column("max_active_load", "actives"), Column("active_balance_gap", "+opt")],
    "total_balance": [Column("max_total_load", "replicas"), Column("total_balance_gap", "+opt")],
    "cross_rack_traffic": [Column("cross_rack_traffic", "cross-rack")],
    "restoration": [Column("restoration_cost", "restore"), Column("restoration_gap", "+opt")],
    "movement": [Column("moved_actives", "moved")],
}
#: The stages of the optimum of a Streams instance, in order (docs/streams.md), and the row key of each.
STREAMS_STAGES = ("active_balance", "total_balance", "cross_rack_traffic", "restoration", "movement")
_STAGE_KEY = {"active_balance": "max_active_load", "total_balance": "max_total_load",
              "cross_rack_traffic": "cross_rack_traffic", "restoration": "restoration_cost",
              "movement": "moved_actives"}
_STAGE_WORDS = {"active_balance": ("busiest thread", "actives"), "total_balance": ("", "replicas per thread"),
                "cross_rack_traffic": ("cross-rack traffic", ""), "restoration": ("restores", "offsets"),
                "movement": ("moves", "active tasks")}

_STAGE_NOUN = {"active_balance": "active balance", "total_balance": "total balance",
               "cross_rack_traffic": "cross-rack traffic", "restoration": "restoration", "movement": "moves"}


def streams_stages(instance: Instance, stages: Sequence[str] | None = None) -> list[str]:
    """The optimum's stages of a Streams instance, in order: ``stages`` when given (the optimum's own,
    ``compare --json``'s ``optimal.stages``), else every stage, ``cross_rack_traffic`` only when rack
    awareness is on (every client has a rack and ``rack_aware_assignment_strategy`` is not ``none``)."""
    if stages:
        return [s for s in stages if s in _STAGE_COLUMNS]
    spec = getattr(instance, "streams", None)
    clients = getattr(spec, "clients", ()) or ()
    racks = bool(clients) and all(getattr(c, "rack", None) for c in clients) and getattr(
        getattr(spec, "config", None), "rack_aware_assignment_strategy", "none") != "none"
    return [s for s in STREAMS_STAGES if s != "cross_rack_traffic" or racks]


def columns(instance: Instance, rows: Sequence[Mapping[str, Any]],
            stages: Sequence[str] | None = None) -> tuple[list[Column], Cell]:
    """The table's columns for ``instance`` and a cell formatter that shows each in its unit (Streams: one
    per stage of the optimum, ``stages`` in its order, see :func:`streams_stages`)."""
    units = instance_units(instance)
    scales: dict[str, Scale] = {}

    def scale(key: str, unit: str) -> Scale:
        scales[key] = Scale.for_values([r.get(key) for r in rows], unit)
        return scales[key]

    cols = [Column("assignor", align="left"), Column("outcome", align="left")]
    if instance.protocol != "streams" and instance.copartition:
        cols.append(Column("copartition_violations", "split"))  # why an outcome is "split"
    if instance.protocol == "streams":
        # one column (and its +opt) per stage of the optimum, in the optimum's order: a later stage's figure
        # reads beside the earlier ones it is traded against
        for stage in streams_stages(instance, stages):
            cols += _STAGE_COLUMNS[stage]
        cols += [Column("not_caught_up_actives", "lagging"), Column("standby_shortfall", "no standby"),
                 Column("warmups")]
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
        # partitions without a previous owner (their member left the group) change host too: beside `moved`
        unowned = any((_finite(r.get("reassigned_unowned")) or 0) > 0 for r in rows)
        if unowned:
            cols.append(Column("reassigned_unowned", "from departed"))
        if has_costs:
            c = scale("moved_cost", cost_unit)
            scales["excess_moves"] = c
            cols.append(Column("moved_cost", f"moved {c.unit}" if c.unit not in ("", "move_costs")
                               else "moved state"))
            if unowned:
                scales["reassigned_unowned_cost"] = c
                cols.append(Column("reassigned_unowned_cost", f"from departed {c.unit}"
                                   if c.unit not in ("", "move_costs") else "from departed state"))
        cols.append(Column("wasted", "wasted"))
        if not instance.has_weights:
            cols.append(Column("sum_sq_gap", "sum_sq +opt"))
        if any(t.racks for t in instance.topics.values()) and any(m.rack for m in instance.members):
            cols.append(Column("cross_rack", "cross-rack"))
        cols.append(Column("rounds"))

    def cell(key: str, v: Any) -> str:
        if isinstance(v, NotProven):
            return cell(key, v.value) + MARK
        if key == "wasted":
            value, proven = v if isinstance(v, tuple) else (v, True)
            text = scales["excess_moves"].show(value) if "excess_moves" in scales else number(value)
            return text if proven or value is None else f">={text}"
        if key in scales:
            return scales[key].show(v)
        return number(v)

    return cols, cell


@dataclass(frozen=True)
class NotProven:
    """A figure that is not proven: shown with :data:`MARK` after it (:func:`marked_rows`)."""

    value: Any


#: The mark after a figure that is not proven; the legend under the table says what it means.
MARK = "*"


def marked_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows to display: each figure a row's ``not_proven`` names (:func:`spark_runner.comparison.
    mark_not_proven`) wrapped in :class:`NotProven`, and ``x opt`` beside an unproven ``max_load_gap``."""
    out = []
    for r in rows:
        row = dict(r)
        keys = list(r.get("not_proven") or [])
        if "max_load_gap" in keys:
            keys.append("x_optimum")  # the same ratio to the optimum's best found
        for k in keys:
            if k in row and row[k] is not None and k != "excess_moves":  # wasted reads >= already
                row[k] = NotProven(row[k])
        out.append(row)
    return out


def proof_legend(opt: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The line under the table that says what :data:`MARK` means, naming the optimum's stages that are not
    proven, in the words of the title; ``None`` when no figure is marked."""
    if not any(k != "excess_moves" for r in rows for k in (r.get("not_proven") or [])):
        return None
    stages = [st for st, ok in zip(opt.get("stages") or [], opt.get("stage_proven") or [], strict=False) if not ok]
    names = ", ".join(stages[:-1]) + " and " + stages[-1] if len(stages) > 1 else "".join(stages)
    which = (f"the optimum's {names} stage{'s' if len(stages) > 1 else ''} "
             f"{'are' if len(stages) > 1 else 'is'} not proven" if stages else "a solver row's stage is not proven")
    return (f"{MARK}: not proven -- {which} (stderr says why): the marked figures of the optimum's rows are the "
            "best found, and the marked gaps are measured against it (--json: each row's not_proven, "
            "optimal.stage_proven).")


def table_rows(instance: Instance, doc: Mapping[str, Any]) -> list[dict[str, Any]]:
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
            if str(r.get("assignor", "")).startswith("optimal") and r.get("excess_moves") == 0:
                # the optimum's rows are the yardstick of their own moves: 0 wasted, not a lower estimate
                row["wasted"] = (0, True)
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
    if any((_finite(r.get("reassigned_unowned")) or 0) > 0 for r in rows):
        out.append("from departed: partitions with no previous owner among the members -- their owner left the "
                   "group, or they are new (or two members claimed them at one generation); they change host too, "
                   "so with moved they are the whole of the state that moves (--json: reassigned_unowned).")
    if any(isinstance(r.get("wasted"), tuple) and r["wasted"][0] is not None and not r["wasted"][1] for r in rows):
        out.append(">=: a lower estimate of the wasted moves: the fewest moves at that balance were not proven "
                   "within the time limit (--json: excess_moves_proven).")
    return out + [f"error: {r['assignor']} refused this input: {r['error']}" for r in rows if r.get("error")]


def _since(name: str) -> tuple[int, ...]:
    s = shipped(name)
    # ties: a public setting before an internal one (internal.task.assignor.class), then the older release
    return (int(s.key.startswith("internal.")), *(int(x) for x in s.since.split("."))) if s else (1, 99)


def _n(r: Mapping[str, Any], k: str) -> float:
    v = _finite(r.get(k))
    return float("inf") if v is None else round(v, 9)


def _best_key(instance: Instance, r: Mapping[str, Any], stages: Sequence[str] | None = None) -> tuple[Any, ...]:
    since = _since(str(r["assignor"]))
    if instance.protocol == "streams":
        # the optimum's stages in its order: a later stage never outweighs an earlier one
        return (*(_n(r, _STAGE_KEY[st]) for st in streams_stages(instance, stages)), since)
    if instance.has_weights:
        return (_n(r, "max_load_gap"), _n(r, "moved_cost"), _n(r, "sum_sq_gap"), since)
    return (_n(r, "max_load_gap"), _n(r, "sum_sq_gap"), _n(r, "moved_cost"), since)


def _opt(ref: Mapping[str, Any], key: str, text: str) -> str:
    """An optimum's figure for the closing line, with :data:`MARK` when it is not proven (as in the table)."""
    return text + MARK if key in (ref.get("not_proven") or []) else text


def _streams_cost(instance: Instance, best: Mapping[str, Any], ref: Mapping[str, Any],
                  stages: Sequence[str] | None) -> str:
    """Each stage of the optimum, in its order: the assignor's figure and the optimum's; a later stage where
    it does better than the optimum is said to come at the cost of the earlier stage where it does worse."""
    order = streams_stages(instance, stages)
    parts = []
    for st in order:
        what, unit = _STAGE_WORDS[st]
        unit = f" {unit}" if unit else ""
        parts.append(f"{what + ' ' if what else ''}{number(best.get(_STAGE_KEY[st]))}{unit} "
                     f"(optimum {_opt(ref, _STAGE_KEY[st], number(ref.get(_STAGE_KEY[st])))})")
    text = ", ".join(parts)
    worse = next((st for st in order if _n(best, _STAGE_KEY[st]) > _n(ref, _STAGE_KEY[st])), None)
    if worse is not None:
        later = order[order.index(worse) + 1:]
        better = [st for st in later if _n(best, _STAGE_KEY[st]) < _n(ref, _STAGE_KEY[st])]
        if better:
            text += (f" -- below the optimum on {', '.join(_STAGE_NOUN[st] for st in better)} only by doing worse "
                     f"on {_STAGE_NOUN[worse]}, a stage the optimum puts first")
    lag = _finite(best.get("not_caught_up_actives")) or 0
    if lag:
        text += f", {number(best.get('not_caught_up_actives'))} active tasks on clients not caught up"
    return text


def verdict_line(instance: Instance, rows: Sequence[Mapping[str, Any]], source: str,
                 stages: Sequence[str] | None = None) -> str:
    """One line: the best assignor Kafka ships here, its cost against the optimum, how to run the optimum.

    Among public settings first: an internal one (``internal.task.assignor.class``) is only recommended
    when no public setting gives a valid assignment; one that ranks higher is named as a caveat, with the
    active tasks it puts on clients that are not caught up.  Streams rows rank by the optimum's
    ``stages``, in order.
    """
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
               f"{_opt(tol, 'moved', number(tol.get('moved')))} partitions, the strict optimum "
               f"{_opt(ref, 'moved', number(ref.get('moved')))}): "
               f"kassign assign {source} --assignor {optimum} --balance-tolerance {eps} -o assignment.json")
    kafka = [r for r in rows[1:] if shipped(str(r["assignor"])) and r.get("outcome") == "valid"]
    if not kafka:
        return f"No assignor that ships with Kafka gives a valid assignment that keeps units together here; {run}"

    def key(r: Mapping[str, Any]) -> tuple[Any, ...]:
        return _best_key(instance, r, stages)

    public = [r for r in kafka if not _since(str(r["assignor"]))[0]]
    best = min(public or kafka, key=key)
    caveat = ""
    internal = min((r for r in kafka if r not in public), key=key, default=None)
    if public and internal is not None and key(internal)[:-1] < key(best)[:-1]:
        si = shipped(str(internal["assignor"]))
        assert si is not None
        lag = _finite(internal.get("not_caught_up_actives")) or 0
        caveat = (f" ({internal['assignor']} ranks higher but is an internal setting ({si.key}, not a public "
                  "API, may change without notice)" + (
                      f" and puts {number(internal.get('not_caught_up_actives'))} active tasks on clients that "
                      "are not caught up (they restore before processing)" if lag else "") + ")")
    s = shipped(str(best["assignor"]))
    assert s is not None
    if streams:
        cost = _streams_cost(instance, best, ref, stages)
    elif instance.has_weights:
        sc = Scale.for_values([ref.get("weighted_max_load"), best.get("weighted_max_load")],
                              instance_units(instance)["weights"])
        cost = (f"busiest member {sc.with_unit(best.get('weighted_max_load'))}, "
                f"{_ratio(best.get('weighted_max_load'), ref.get('weighted_max_load'))} the optimum's "
                f"{_opt(ref, 'weighted_max_load', sc.with_unit(ref.get('weighted_max_load')))}; moves "
                f"{number(best.get('moved'))} partitions (optimum {_opt(ref, 'moved', number(ref.get('moved')))})")
    else:
        cost = (f"busiest member {number(best.get('max_load'))} partitions (optimum "
                f"{_opt(ref, 'max_load', number(ref.get('max_load')))}), moves {number(best.get('moved'))} "
                f"(optimum {_opt(ref, 'moved', number(ref.get('moved')))})")
    needs = f", {s.needs}" if s.needs else ""  # what else deploying it takes (KIP-848's group.protocol=consumer)
    return (f"Best Kafka assignor here: {best['assignor']} ({s.setting}, Kafka {s.since}+{needs}): {cost}"
            f"{caveat}; {run}")


#: The unit of a consumer metric: ``"load"`` (the instance's load unit), ``"load2"`` (squared), ``"cost"``
#: (moved state), or the words to print.
_METRIC_UNITS = {
    "max_load": "topic-partitions per capacity", "min_load": "topic-partitions per capacity",
    "spread": "topic-partitions per capacity", "sum_sq_load": "(topic-partitions per capacity)²",
    "weighted_max_load": "load", "max_load_gap": "load", "sum_sq_gap": "load2", "moved": "topic-partitions",
    "moved_cost": "cost", "excess_moves": "cost", "reassigned_unowned": "topic-partitions",
    "reassigned_unowned_cost": "cost", "unassigned": "topic-partitions",
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


def metric_rows(instance: Instance, metrics: Mapping[str, Any]) -> list[dict[str, str]]:
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
    cost = Scale.for_values([metrics.get("moved_cost"), metrics.get("excess_moves"),
                             metrics.get("reassigned_unowned_cost")],
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


__all__ = ["MARK", "NotProven", "columns", "marked_rows", "metric_rows", "notes", "proof_legend", "table_rows",
           "verdict_line"]
