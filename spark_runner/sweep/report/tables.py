"""The sweep report's tables: readable metric names, the per-assignor summary, per-event, gap and Streams tables."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spark_runner.sweep.evaluate import (
    OPTIMAL,
    REFERENCE,
)
from spark_runner.sweep.report.load import GAPS, load_rows
from spark_runner.sweep.report_gaps import (
    gap_table,
    gap_unit,
    kinds_present,
    weight_kind,
)

STATS = ("mean", "p50", "p95", "max")


#: Metric names a person reads and their units; tables and plots show the raw column name beside them.
LABELS: dict[str, tuple[str, str]] = {
    "max_load_gap": ("busiest member above the optimum's", "topic-partitions per capacity unit, weights when weighted"),
    "sum_sq_gap": ("imbalance above the optimum's", "sum of squared loads"),
    "excess_moves": ("moves beyond the fewest at that balance", "topic-partitions, move_costs when set"),
    "moved": ("moved partitions", "topic-partitions per step"),
    "moved_total": ("moved partitions, total", "topic-partitions over all steps"),
    "moved_cost": ("moved state", "move_costs per step; topic-partitions without them"),
    "rounds": ("rebalance rounds", "rounds per step"),
    "ms": ("time per assignment", "milliseconds"),
    "good_share": ("as good as the optimum, the ranking figure", "% of steps"),
    "kafka": ("ships in Kafka", "release"),
    "split_steps": ("steps splitting co-partitioned units", "steps"),
    "failed_steps": ("failed or invalid steps", "steps"),
    "setting": ("how to deploy it", "config key=value"),
    "excess_moves_mean": ("moves beyond the fewest at that balance, mean", "over the valid steps"),
    "restoration_gap_mean": ("state to restore above the optimum's, mean", "offsets, over the valid steps"),
    "proposal": ("proposal", ""),
    "what": ("what it is", ""),
    "gain": ("gain over the best that ships", "percentage points"),
    "steps": ("steps", "scenario-steps"),
    "scenarios": ("scenarios", "count"),
    "errors": ("steps that raised", "steps"),
    "invalid": ("invalid assignments", "steps"),
    "copartition_violations": ("steps splitting co-partitioned units", "steps"),
    "split": ("steps splitting co-partitioned units", "steps (outcome split)"),
    "balance_optimal_share": ("as balanced as the optimum", "% of steps"),
    "not_caught_up": ("steps with an active on a lagging client", "steps"),
    "moved_actives": ("moved active tasks", "tasks per step"),
    "moved_actives_total": ("moved active tasks, total", "tasks over all steps"),
    "restoration_cost": ("state to restore", "offsets per step"),
    "warmups": ("warm-up replicas", "replicas per step"),
    "probing_share": ("asked for a probing rebalance", "% of steps"),
    "active_balance_gap": ("busiest thread's actives above the optimum's", "active tasks per thread"),
    "total_balance_gap": ("busiest thread's replicas above the optimum's", "tasks per thread"),
    "restoration_gap": ("state to restore above the optimum's", "offsets"),
    "proven_steps": ("steps with a proven optimum", "the statistics are drawn from these"),
    "unproven": ("steps whose optimum is not proven", "steps, left out of the gap statistics"),
    "event": ("event", "kind of rebalance"),
    "assignor": ("assignor", ""),
}


_STAT_WORDS = {"mean": "mean", "p50": "median", "p95": "95th percentile", "max": "max", "total": "total"}


def label(raw: str) -> tuple[str, str]:
    """``(words, unit)`` for a column: a metric of :data:`LABELS`, or ``metric_stat`` (e.g. ``moved_mean``).

    Examples
    --------
    >>> label("moved_mean")
    ('moved partitions, mean', 'topic-partitions per step')
    >>> label("p95")
    ('95th percentile', '')
    """
    if raw in LABELS:
        return LABELS[raw]
    base, _, stat = raw.rpartition("_")
    if base in LABELS and stat in _STAT_WORDS:
        words, unit = LABELS[base]
        return f"{words}, {_STAT_WORDS[stat]}", unit
    if raw in _STAT_WORDS:
        return _STAT_WORDS[raw], ""
    return raw.replace("_", " "), ""


def _title(raw: str) -> str:
    """A section title: words, then the raw name and the unit in brackets."""
    words, unit = label(raw)
    return f"{words[:1].upper()}{words[1:]} ({raw}{', ' + unit if unit else ''})"


def _order(names: Sequence[str]) -> list[str]:
    refs = set(REFERENCE.values())
    return sorted(set(names), key=lambda n: (n in refs, n))


def _stat(s: pd.Series, how: str) -> float:
    s = pd.to_numeric(s, errors="coerce").dropna()
    if s.empty:
        return math.nan
    if how == "mean":
        return float(s.mean())
    if how == "max":
        return float(s.max())
    return float(np.percentile(s.to_numpy(dtype=float), 50 if how == "p50" else 95))


def _share(s: pd.Series) -> float:
    s = s.dropna()
    return float(s.astype(bool).mean()) if len(s) else math.nan


def _true_share(s: pd.Series) -> float:
    """Share of rows that are true, over every row (unknown counts as not true)."""
    return float((s == True).mean()) if len(s) else math.nan  # noqa: E712 (nullable column)


def _ms(g: pd.DataFrame, how: str) -> float:
    return 1000.0 * _stat(g["seconds"], how)


def _counts(name: str, g: pd.DataFrame) -> dict[str, Any]:
    """The columns every per-assignor table starts with: steps, scenarios, errors, invalid steps."""
    return {
        "assignor": name,
        "steps": len(g),
        "scenarios": g["scenario_id"].nunique(),
        "errors": int(g["error"].notna().sum()),
        "invalid": int((g["valid"] == False).sum()),  # noqa: E712 (nullable column)
    }


def _by_assignor(df: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """``(assignor, its rows)`` in table order (heuristics by name, then the optimum)."""
    for name in _order(df["assignor"].unique()):
        yield name, df[df["assignor"] == name]


def _positive(col: pd.Series) -> int:
    """Steps where a nullable count is above 0."""
    return int(pd.to_numeric(col).fillna(0).gt(0).sum())


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per assignor: steps, errors, validity, balance-optimal share, moves, rounds, time.

    The gap statistics are per load unit and drawn from steps with a proven optimum: :func:`gap_tables`.
    """
    out = []
    for name, g in _by_assignor(df):
        row: dict[str, Any] = {
            **_counts(name, g),
            "copartition_violations": _positive(g["copartition_violations"]),
        }
        row["balance_optimal_share"] = _true_share(g["balance_optimal"])
        row["moved_mean"] = _stat(g["moved"], "mean")
        row["moved_total"] = float(pd.to_numeric(g["moved"]).sum())
        row["moved_cost_mean"] = _stat(g["moved_cost"], "mean")
        row["rounds_mean"] = _stat(g["rounds"], "mean")
        row["rounds_max"] = _stat(g["rounds"], "max")
        row["ms_mean"] = _ms(g, "mean")
        row["ms_p95"] = _ms(g, "p95")
        row["ms_max"] = _ms(g, "max")
        out.append(row)
    return pd.DataFrame(out)


def event_table(df: pd.DataFrame, column: str, how: str = "mean") -> pd.DataFrame:
    """Event kind x assignor table of ``column`` (``mean``, or ``share`` of true values)."""
    events = sorted(df["event"].unique(), key=lambda e: (e != "initial", e))
    data = {}
    for name, g in _by_assignor(df):
        col = {}
        for ev in events:
            s = g.loc[g["event"] == ev, column]
            col[ev] = _true_share(s) if how == "share" else _stat(s, "mean")
        data[name] = col
    t = pd.DataFrame(data, index=events)
    t.index.name = "event"
    return t.reset_index()


#: What each consumer gap is, for the sentence under its tables.
_GAP_WHAT = {
    "max_load_gap": "The busiest member's load minus the optimum's, per unit of capacity. 0 = as good as the optimum.",
    "sum_sq_gap": "Sum of squared member loads minus the optimum's: how much less even the whole load vector is. "
                  "0 = as even as the optimum.",
    "excess_moves": "Moved cost above the fewest of any valid assignment at least as balanced (max load and sum "
                    "of squares no higher). 0 = no move was wasted; the optimum's own value is 0 by definition "
                    "(docs/format.md).",
}


def _proven_gap_rows(df: pd.DataFrame, gap: str, reference: str) -> pd.Series:
    """Rows whose ``gap`` is measured against a proven optimum (the reference's own rows at such steps too)."""
    from spark_runner.sweep.report_gaps import proven_steps, usable

    _, proven = usable(df, gap, reference)
    return proven | ((df["assignor"] == reference) & proven_steps(df, reference))


def gap_tables(df: pd.DataFrame) -> list[tuple[str, str, str, pd.DataFrame]]:
    """``(gap, weight kind, unit, table)`` per consumer gap and weight kind present: the :func:`gap_table` of the
    heuristics at the steps of that kind, each in its own unit, drawn from steps whose optimum is proven."""
    heur = [n for n in _order(df["assignor"].unique()) if n != OPTIMAL]
    kinds = weight_kind(df)
    out = []
    for gap in GAPS:
        for kind in kinds_present(df):
            out.append((gap, kind, gap_unit(gap, kind), gap_table(df[kinds == kind], gap, OPTIMAL, heur)))
    return out


def gaps_csv(df: pd.DataFrame) -> pd.DataFrame:
    """:func:`gap_tables` as one long table (``gaps.csv``): ``gap``, ``weights``, ``unit``, then the table's
    columns, every statistic drawn from steps whose optimum is proven."""
    parts = [t.assign(gap=gap, weights=kind, unit=unit) for gap, kind, unit, t in gap_tables(df)]
    if not parts:
        return pd.DataFrame()
    t = pd.concat(parts, ignore_index=True)
    return t[["gap", "weights", "unit", *[c for c in t.columns if c not in ("gap", "weights", "unit")]]]


def unproven_by_point(out: str | Path) -> pd.DataFrame:
    """Consumer optimum steps per grid point (distinct generator parameters) and how many are not proven.

    Columns ``point`` (the parameters that differ between the grid's points,
    ``key=value``), ``steps``, ``unproven``; only points with an unproven step.
    """
    opt = load_rows(out, ("status", "protocol", "params_json"))
    opt = opt[(opt["assignor"] == OPTIMAL) & (opt["protocol"] != "streams")]
    cols = ["point", "steps", "unproven"]
    if not len(opt):
        return pd.DataFrame(columns=cols)
    params = {pj: json.loads(pj) for pj in opt["params_json"].dropna().unique()}
    keys = {k for d in params.values() for k in d}
    varying = sorted(k for k in keys if len({json.dumps(p.get(k)) for p in params.values()}) > 1)
    rows = []
    for pj, g in opt.groupby("params_json", sort=False):
        bad = int((g["status"] != "optimal").sum())
        if bad:
            label = ", ".join(f"{k}={json.dumps(params[pj].get(k))}" for k in varying) or "(one point)"
            rows.append({"point": label, "steps": len(g), "unproven": bad})
    return pd.DataFrame(rows, columns=cols)


def streams_summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Streams rows, one row per assignor: validity, Streams gap statistics, moves, warm-ups, probing, time."""
    out = []
    for name, g in _by_assignor(df):
        row: dict[str, Any] = {
            **_counts(name, g),
            "not_caught_up": _positive(g["not_caught_up_actives"]),
            "balance_optimal_share": _true_share(g["balance_optimal"]),
        }
        row["moved_actives_mean"] = _stat(g["moved_actives"], "mean")
        row["moved_actives_total"] = float(pd.to_numeric(g["moved_actives"]).sum())
        row["restoration_cost_mean"] = _stat(g["restoration_cost"], "mean")
        row["warmups_mean"] = _stat(g["warmups"], "mean")
        row["probing_share"] = _share(g["probing_rebalance"])
        row["ms_mean"] = _ms(g, "mean")
        row["ms_max"] = _ms(g, "max")
        out.append(row)
    return pd.DataFrame(out)
