"""The sweep report: summary tables and plots from the Parquet rows of a sweep.

``build_report(DIR)`` reads ``DIR/rows`` and writes ``DIR/report/``:

- ``index.html``: the answer (which assignor to run, what it costs, its worst step and the command
  that reproduces it; :func:`recommend`), summary tables and the plots;
- ``summary.md``: the same in Markdown (for a KIP or a pull request);
- ``summary.csv``: the per-assignor table as CSV (raw column names);
- ``gaps.png`` (gap distributions per assignor, invalid and unit-splitting steps left out and counted),
  ``moves.png`` (mean cumulative moved partitions over the steps, one panel per assignor beside the
  optimum), ``optimum.png`` (share of steps proven and seconds against instance size);
- ``worst-<assignor>.yaml``: a one-scenario grid that re-runs the recommended assignor's worst step;
- when the sweep has Kafka Streams rows (``protocol = streams``): Streams
  tables (``summary_streams.csv``) and ``streams_gaps.png``.

"Optimal on balance" means ``max_load_gap`` and ``sum_sq_gap`` are both zero:
the assignor's load vector is as balanced as the optimum's.  For Streams it
means ``active_balance_gap`` and ``total_balance_gap`` are both zero.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from heuristics.shipped import PROPOSALS, shipped
from solver.errors import InstanceError, Problem
from solver.model.files import check_input_dir, figure_bytes, write_atomic
from solver.model.scoring import INVALID, SPLIT, VALID
from spark_runner.sweep.evaluate import (
    EPS,
    OPTIMAL,
    REFERENCE,
    ROW_KEY,
    STREAMS_OPTIMAL,
    arrow_schema,
    check_row_parts,
    unreadable_rows,
)
from spark_runner.sweep.report_gaps import (
    WEIGHT_KINDS,
    gap_boxplots,
    gap_table,
    gap_unit,
    kinds_present,
    plain_axis,
    proven_words,
    weight_kind,
)
from spark_runner.sweep.verdict import Verdict, fmt_mean, verdicts, workload_class
from spark_runner.units import number

GAPS = ("max_load_gap", "sum_sq_gap", "excess_moves")
STREAMS_GAPS = ("active_balance_gap", "total_balance_gap", "restoration_gap")
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


#: The columns the report reads (a large sweep has millions of rows; params_json alone would be big).
REPORT_COLUMNS = ("scenario_id", "seed", "step", "event", "protocol", "members", "partitions", "status", "seconds",
                  "rounds", "error", "valid", "outcome", "param_copartition", "copartition_violations", "moved",
                  "moved_cost", "max_load_gap", "sum_sq_gap", "excess_moves", "excess_moves_proven", "balance_optimal",
                  "opt_status",
                  "not_caught_up_actives", "moved_actives", "warmups", "probing_rebalance", "restoration_cost",
                  "kafka_version", "param_weights", *STREAMS_GAPS)


def load_rows(out: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Rows under ``out/rows`` (all columns, or ``columns`` plus ``assignor`` as a plain string column)."""
    check_input_dir(out)  # missing: exit 66; a file, a link loop, a name too long: 65
    rows = Path(out) / "rows"
    if not rows.is_dir() or not any(rows.glob("assignor=*/*.parquet")):
        raise InstanceError(str(out), [Problem("", "no sweep rows (expected Parquet under rows/assignor=*/)")])
    import pyarrow as pa
    import pyarrow.dataset as ds

    # the full row schema: columns added since older files were written (protocol, Streams) read as null
    schema = arrow_schema()
    part = ds.partitioning(pa.schema([schema.field("assignor")]), flavor="hive")
    cols = None if columns is None else list(dict.fromkeys([*columns, *ROW_KEY]))
    check_row_parts(rows)  # a foreign part, or one without a column the others have: exit 65 naming it
    with unreadable_rows(rows):
        dataset = ds.dataset(str(rows), format="parquet", partitioning=part, schema=schema)
        df = dataset.to_table(columns=cols).to_pandas()
    df["assignor"] = df["assignor"].astype(str)
    # One row per (scenario, step, assignor), whatever an interrupted run left (store.clear_uncommitted).
    df = df.drop_duplicates(subset=list(ROW_KEY), keep="first", ignore_index=True)
    if columns is not None:
        df = df[list(dict.fromkeys([*columns, "assignor"]))]
    if "protocol" in df.columns:
        df["protocol"] = df["protocol"].fillna("consumer").astype(str)
    return _normalize(df)


def _normalize(df: pd.DataFrame) -> pd.DataFrame:
    """One rule for every reader: gaps are defined for a ``valid`` outcome only.

    ``outcome`` is derived from ``valid`` and ``copartition_violations`` where a row lacks it (sweeps
    written before the column existed); rows of another outcome get no gaps and are not balance
    optimal; ``balance_optimal`` is recomputed from the gaps (both 0).
    """
    if not {"valid", "copartition_violations"} <= set(df.columns):
        return df
    valid = df["valid"]
    split = pd.to_numeric(df["copartition_violations"], errors="coerce").fillna(0) > 0
    derived = pd.Series(None, index=df.index, dtype=object)
    derived[valid == False] = INVALID  # noqa: E712 (nullable column)
    derived[(valid == True) & split] = SPLIT  # noqa: E712
    derived[(valid == True) & ~split] = VALID  # noqa: E712
    have = df["outcome"] if "outcome" in df.columns else pd.Series(None, index=df.index, dtype=object)
    df["outcome"] = have.where(have.notna(), derived)
    other = df["outcome"].notna() & (df["outcome"] != VALID)
    for gap in (*GAPS, *STREAMS_GAPS):
        if gap in df.columns:
            df[gap] = pd.to_numeric(df[gap], errors="coerce").where(~other)
    if "excess_moves_proven" in df.columns:
        df["excess_moves_proven"] = df["excess_moves_proven"].astype(object).where(~other, None)
    if "balance_optimal" in df.columns:
        def both_zero(a: str, b: str) -> pd.Series:
            if a not in df.columns or b not in df.columns:
                return pd.Series(None, index=df.index, dtype=object)
            x, y = pd.to_numeric(df[a], errors="coerce"), pd.to_numeric(df[b], errors="coerce")
            return ((x <= EPS) & (y <= EPS)).astype(object).where(x.notna() & y.notna(), None)

        streams = df["protocol"] == "streams" if "protocol" in df.columns else pd.Series(False, index=df.index)
        bo = both_zero("max_load_gap", "sum_sq_gap").where(~streams, both_zero("active_balance_gap",
                                                                                 "total_balance_gap"))
        df["balance_optimal"] = bo.where(~other, False)
    return df


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


# --------------------------------------------------------------------------- plots


def _step_counts(df: pd.DataFrame) -> pd.Series:
    """Scenarios that reach each step (scenarios have different step counts)."""
    return df.groupby("step")["scenario_id"].nunique()


def _counts_note(counts: pd.Series) -> str:
    """``"mean over 20 scenarios at steps 0-6, 16 at steps 7-8"``: whom each step's mean is over."""
    runs: list[tuple[int, int, int]] = []
    for step, n in counts.items():
        if runs and runs[-1][2] == n and runs[-1][1] == int(step) - 1:
            runs[-1] = (runs[-1][0], int(step), int(n))
        else:
            runs.append((int(step), int(step), int(n)))
    parts = [f"{n} at step{'s' if a != b else ''} {a}{'-' + str(b) if a != b else ''}" for a, b, n in runs]
    return "mean over the scenarios that reach the step: " + ", ".join(parts)


def _plots(df: pd.DataFrame, folder: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    heur = [n for n in _order(df["assignor"].unique()) if n != OPTIMAL]

    # 1. gap distributions: one row of panels per weight kind (no box mixes load units), proven steps only
    fig = gap_boxplots(plt, df, heur, GAPS, OPTIMAL, "Gap to the optimum per step, at steps where the optimum is "
                       "proven (0 = as good as the optimum)", label, kinds_present(df))
    fig.tight_layout()
    write_atomic(folder / "gaps.png", figure_bytes(fig, "gaps.png"))
    plt.close(fig)
    made.append(("gaps.png", "Gap distributions per assignor and weight kind, each in its unit, at steps where the "
                              "optimum is proven (box: middle half of the steps; invalid or split steps and those "
                              "whose optimum is not proven left out and counted in the label)"))

    # 2. cumulative moves over steps: one small panel per assignor, the optimum in each (no line hides another)
    def curve(name: str) -> pd.Series:
        g = df[df["assignor"] == name][["scenario_id", "step", "moved"]].copy()
        g["moved"] = pd.to_numeric(g["moved"], errors="coerce").fillna(0)
        g = g.sort_values(["scenario_id", "step"])
        g["cum"] = g.groupby("scenario_id")["moved"].cumsum()
        return g.groupby("step")["cum"].mean()

    opt_curve = curve(OPTIMAL) if (df["assignor"] == OPTIMAL).any() else None
    ncols = min(3, max(1, len(heur)))
    nrows = max(1, math.ceil(len(heur) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 2.9 * nrows + 0.9), sharex=True, sharey=True,
                             squeeze=False)
    for ax, n in zip(axes.flat, heur, strict=False):
        if opt_curve is not None:
            ax.plot(opt_curve.index, opt_curve.to_numpy(), color="black", lw=1.2, ls="--", label=OPTIMAL)
        c = curve(n)
        ax.plot(c.index, c.to_numpy(), marker="o", markersize=3, color="tab:blue", lw=1.6, label=n)
        ax.set_title(n, fontsize=10)
        plain_axis(ax.yaxis)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    for ax in list(axes.flat)[len(heur):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("step (rebalance events)")
    for ax in axes[:, 0]:
        ax.set_ylabel("cumulative moved\ntopic-partitions")
    fig.suptitle("Cumulative moved topic-partitions per scenario, mean over scenarios (dashed: the optimum)\n"
                 + _counts_note(_step_counts(df[df["assignor"] == (OPTIMAL if opt_curve is not None else heur[0])]))
                 if heur else "no heuristic rows", fontsize=10)
    fig.tight_layout()
    write_atomic(folder / "moves.png", figure_bytes(fig, "moves.png"))
    plt.close(fig)
    made.append(("moves.png", "Cumulative moved topic-partitions over the steps, one panel per assignor"))

    # 3. what the optimum costs: proven share and solve time against instance size
    opt = df[df["assignor"] == OPTIMAL]
    if len(opt):
        size = pd.to_numeric(opt["partitions"], errors="coerce")
        edges = np.unique(np.quantile(size.dropna(), np.linspace(0, 1, 7))) if size.notna().any() else np.array([])
        if edges.size >= 2:
            bins = pd.cut(size, edges, include_lowest=True, duplicates="drop")
        else:
            bins = pd.Series(["all"] * len(opt), index=opt.index)
        grp = opt.assign(_bin=bins, _proven=opt["status"] == "optimal",
                         _sec=pd.to_numeric(opt["seconds"], errors="coerce")).groupby("_bin", observed=True)
        share = grp["_proven"].mean() * 100
        med = grp["_sec"].median()
        p95 = grp["_sec"].quantile(0.95)
        count = grp.size()
        labels = [f"{math.floor(b.left) + 1}-{math.floor(b.right)}" if isinstance(b, pd.Interval) else str(b)
                  for b in share.index]
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2))
        xs = np.arange(len(labels))
        a1.bar(xs, share.to_numpy(), color="tab:green")
        for x, v, k in zip(xs, share.to_numpy(), count.to_numpy(), strict=True):
            a1.annotate(f"{v:.0f}% of {k}", (x, v), ha="center", va="bottom", fontsize=8)
        a1.set_ylim(0, 110)
        a1.set_xticks(xs, labels, rotation=20, fontsize=8)
        a1.set_xlabel("instance size (topic-partitions)")
        a1.set_ylabel("steps solved with proof (%)")
        a1.set_title("How often the optimum is proven")
        a2.plot(xs, med.to_numpy(), "o-", label="median")
        a2.plot(xs, p95.to_numpy(), "s--", label="95th percentile")
        a2.set_xticks(xs, labels, rotation=20, fontsize=8)
        a2.set_xlabel("instance size (topic-partitions)")
        a2.set_ylabel("seconds per optimal assignment")
        a2.set_yscale("log")
        a2.set_title("What it costs in time")
        a2.legend(fontsize=8)
        a2.grid(alpha=0.3, which="both")
        fig.tight_layout()
        write_atomic(folder / "optimum.png", figure_bytes(fig, "optimum.png"))
        plt.close(fig)
        made.append(("optimum.png", "The optimum: share proven and seconds per assignment against instance size "
                                    "(use it to pick solver_time_limit and instance sizes)"))
    return made


# --------------------------------------------------------------------------- the answer


#: The gap columns of each protocol, in the order a worst step is looked for.
WORST_GAPS = {"consumer": GAPS, "streams": STREAMS_GAPS}


def worst_step(rows: pd.DataFrame, protocol: str) -> dict[str, Any]:
    """The worst row of one assignor: failed or invalid first, then split units, then the largest gaps."""
    g = rows.copy()
    bad = (2 * (g["error"].notna() | (g["outcome"] == "invalid")).astype(int) + (g["outcome"] == "split").astype(int))
    gaps = WORST_GAPS[protocol]
    for c in gaps:
        g[f"_{c}"] = pd.to_numeric(g[c], errors="coerce").fillna(-math.inf)
    g["_bad"] = bad
    w = g.sort_values(["_bad", *(f"_{c}" for c in gaps)], ascending=False).iloc[0]
    keys = ("scenario_id", "seed", "step", "event", "outcome", "error", "copartition_violations", *gaps)
    return {k: (None if pd.isna(w[k]) else w[k]) for k in keys}


def recommend(df: pd.DataFrame) -> dict[str, Any] | None:
    """The first verdict with a winner (:func:`spark_runner.sweep.verdict.verdicts`) as a dict, or ``None``.

    Keys: ``class``, ``assignor``, ``good_share``, ``balance_share``, ``worst`` (its worst step).
    """
    for v in verdicts(df):
        if v.winner is not None:
            r = v.ranked.iloc[0]
            mine = df[(workload_class(df) == v.key) & (df["assignor"] == v.winner)]
            return {"class": v.key, "assignor": v.winner, "good_share": float(r["good_share"]),
                    "balance_share": float(r["balance_share"]), "worst": worst_step(mine, v.protocol)}
    return None


def write_worst_grid(out: Path, folder: Path, name: str, worst: dict[str, Any], meta: dict[str, Any],
                     tag: str = "") -> Path | None:
    """A one-scenario grid (``folder/worst-[tag-]<name>.yaml``) that reproduces a worst step; ``None`` if unknown."""
    import pyarrow.dataset as ds
    import yaml

    sid = worst["scenario_id"]
    dataset = ds.dataset(str(out / "rows"), format="parquet", partitioning="hive")
    t = dataset.to_table(columns=["params_json", "seed"], filter=ds.field("scenario_id") == sid)
    if t.num_rows == 0:
        return None
    params = {k: v for k, v in json.loads(t.column("params_json")[0].as_py()).items() if v is not None}
    grid = {"name": f"worst-{name}",
            "description": f"scenario {sid}, step {worst['step']}: the worst step of {name} "
                           f"in the sweep {meta.get('grid', out.name)}",
            "seeds": [int(t.column("seed")[0].as_py())], "assignors": [name],
            "solver_time_limit": meta.get("solver_time_limit") or 10, "params": params}
    path = folder / f"worst-{tag + '-' if tag else ''}{name}.yaml"
    write_atomic(path, yaml.safe_dump(grid, sort_keys=False))
    return path


#: A block of the answer: ``("h3", text)``, ``("p", text)``, ``("ul", [items])`` or ``("table", df, share_cols)``.
Block = tuple[Any, ...]

_GOOD_WORDS = {"consumer": "valid, co-partitioned units kept together, as balanced, no move wasted",
               "streams": "valid, as balanced, no more state to restore"}


def _plural(n: float, one: str, many: str | None = None) -> str:
    return f"{_fmt(n)} {one if n == 1 else (many or one + 's')}"


def _ranked_table(v: Verdict) -> pd.DataFrame:
    def ships(n: str) -> str:
        s = shipped(n)
        return "" if s is None else f"{s.since}+"

    def setting(n: str) -> str:
        s = shipped(n)
        return "" if s is None else s.setting + (f" ({s.needs})" if s.needs else "")

    t = v.ranked
    cols: dict[str, Any] = {"assignor": t["assignor"], "kafka": t["assignor"].map(ships),
                            "good_share": t["good_share"], "balance_optimal_share": t["balance_share"],
                            "split_steps": t["split_steps"], "failed_steps": t["failed_steps"]}
    if v.protocol == "streams":
        cols["restoration_gap_mean"] = t["restoration_gap_mean"]
        cols["moved_actives_mean"] = t["moved_mean"]
    else:
        cols["excess_moves_mean"] = t["excess_moves_mean"]
        cols["moved_mean"] = t["moved_mean"]
        cols["rounds_mean"] = t["rounds_mean"]
    cols["setting"] = t["assignor"].map(setting)
    out = pd.DataFrame(cols)
    # counts that are 0 for every candidate say nothing (e.g. split steps where no group has a join)
    return out.drop(columns=[c for c in ("split_steps", "failed_steps") if not out[c].any()])


def _proposal_table(v: Verdict, best_share: float) -> pd.DataFrame:
    t = v.proposals
    gain = [f"{100 * (float(x) - best_share):+.1f} points" for x in t["good_share"]]
    out = pd.DataFrame({"proposal": t["assignor"], "what": t["assignor"].map(lambda n: PROPOSALS.get(n, "")),
                        "good_share": t["good_share"], "gain": gain, "split_steps": t["split_steps"]})
    return out if out["split_steps"].any() else out.drop(columns="split_steps")


def answer_blocks(df: pd.DataFrame, out: Path, folder: Path, meta: dict[str, Any]) -> list[Block]:
    """The report's answer: per workload class, which assignor to run, how to deploy it, what it costs."""
    blocks: list[Block] = []
    cls = workload_class(df)
    for v in verdicts(df):
        blocks.append(("h3", f"{v.title}: {_plural(v.steps, 'step')} in {_plural(v.scenarios, 'scenario')}"))
        blocks.append(("p", f"Drawn from the {_plural(v.proven_steps, 'step')} where the optimum is proven."
                       if v.proven_steps else
                       "No step of this class has a proven optimum: the verdict compares with the best solutions "
                       "found (not proven)."))
        items: list[str] = []
        best_share = float(v.ranked.iloc[0]["good_share"]) if len(v.ranked) else 0.0
        if v.winner is not None:
            s = shipped(v.winner)
            r = v.ranked.iloc[0]
            assert s is not None  # verdicts() names shipped assignors only
            verb = "Leave" if s.setting.endswith(" unset") else "Set"
            blocks.append(("p", f"**Run `{v.winner}`.** {verb} `{s.setting}` (Kafka {s.since} or later"
                                f"{', ' + s.needs if s.needs else ''}). It is as good as the optimum "
                                f"({_GOOD_WORDS[v.protocol]}) in {_share_fmt(r['good_share'])} of its "
                                f"{_plural(int(r['steps']), 'step')}, the figure the ranking below uses; as "
                                f"balanced in {_share_fmt(r['balance_share'])} (`balance_optimal`)."))
            items += v.ties
        elif len(v.ranked):
            closest = v.ranked.iloc[0]
            blocks.append(("p", f"**No assignor on this grid qualifies**: none that ships with Kafka is as good as "
                                f"the optimum ({_GOOD_WORDS[v.protocol]}) in any step; the closest, "
                                f"`{closest['assignor']}`, is as balanced in {_share_fmt(closest['balance_share'])}. "
                                "To run the optimum itself: `kassign assign GROUP.json --assignor "
                                f"{STREAMS_OPTIMAL if v.protocol == 'streams' else OPTIMAL}` "
                                "(docs/capture.md: live)."))
        else:
            blocks.append(("p", "**No assignor that ships with Kafka keeps co-partitioned units together on this "
                                "grid**; run the optimum (`kassign assign GROUP.json --assignor optimal`) or a "
                                "proposal below."))
        if v.excluded:
            left = ", ".join(f"`{n}` ({k} of its steps)" for n, k in v.excluded)
            items.append(f"**Never under a join**: {left} split co-partitioned units, so a stream-stream join "
                         "would read wrong data; they are left out of this verdict.")
        if v.winner is not None:
            r = v.ranked.iloc[0]
            mine = df[(cls == v.key) & (df["assignor"] == v.winner)]
            ref = df[(cls == v.key) & (df["assignor"] == (STREAMS_OPTIMAL if v.protocol == "streams" else OPTIMAL))]
            if v.protocol == "consumer":
                opt_mv = pd.to_numeric(ref["moved"], errors="coerce").mean() if len(ref) else math.nan
                opt_cost = pd.to_numeric(ref["moved_cost"], errors="coerce").mean() if len(ref) else math.nan
                items.append(f"**What it costs you**: {fmt_mean(r['moved_mean'])} moved topic-partitions per step "
                             f"(`moved`, mean; the optimum: {fmt_mean(opt_mv)}), {fmt_mean(r['excess_moves_mean'])} "
                             f"of them beyond the fewest at that balance (`excess_moves`, mean over the "
                             f"{_plural(int(r['defined_steps']), 'step')} of {int(r['steps'])} where it is defined: "
                             f"valid, no unit split); moved state {fmt_mean(r['moved_cost_mean'])} per step "
                             f"(`moved_cost`; the optimum: {fmt_mean(opt_cost)}); "
                             f"{_plural(r['rounds_mean'], 'rebalance round')} per step (`rounds`, mean; at most "
                             f"{_fmt(r['rounds_max'])}).")
            else:
                items.append(f"**What it costs you**: {fmt_mean(r['moved_mean'])} moved active tasks per step "
                             f"(`moved_actives`, mean); {fmt_mean(r['restoration_gap_mean'])} offsets more to "
                             f"restore than the optimum per step (`restoration_gap`, mean over the "
                             f"{_plural(int(r['defined_steps']), 'valid step')} of {int(r['steps'])}).")
            w = worst_step(mine, v.protocol)
            gaps = ", ".join(f"`{c}` {_fmt(w[c])}" for c in WORST_GAPS[v.protocol])
            if w["error"]:
                what = "failed: " + str(w["error"])
            elif w["outcome"] == "invalid":
                what = "an invalid assignment"
            elif w["outcome"] == "split":
                what = f"split {_fmt(w['copartition_violations'])} co-partitioned unit(s)"
            else:
                what = gaps
            items.append(f"**Its worst step**: scenario `{w['scenario_id']}` (seed {_fmt(w['seed'])}), step "
                         f"{_fmt(w['step'])} ({w['event']}): {what}.")
            grid = write_worst_grid(out, folder, v.winner, w, meta, v.key)
            if grid is not None:
                items.append(f"**Reproduce it**: `kassign sweep {grid} --out {grid.parent.parent}-{grid.stem}` "
                             f"(that scenario alone; its step {_fmt(w['step'])} row is the one above).")
        if items:
            blocks.append(("ul", items))
        if len(v.ranked):
            blocks.append(("p", "Assignors that ship with Kafka, best first (*as good as the optimum* is the "
                                "ranking figure; ties go to the next column that differs)"
                                + (", those that split units left out:" if v.excluded else ":")))
            blocks.append(("table", _ranked_table(v), ("good_share", "balance_optimal_share")))
        if len(v.proposals):
            ref_name = f"`{v.winner}`" if v.winner else "the best that ships"
            blocks.append(("p", f"What a proposal would gain (no Kafka release ships these; *gain* is against "
                                f"{ref_name}, in percentage points of steps as good as the optimum):"))
            blocks.append(("table", _proposal_table(v, best_share), ("good_share",)))
    return blocks


def blocks_markdown(blocks: list[Block]) -> list[str]:
    """The answer's blocks as Markdown lines."""
    md: list[str] = []
    for b in blocks:
        if b[0] == "h3":
            md += [f"### {b[1]}", ""]
        elif b[0] == "p":
            md += [b[1], ""]
        elif b[0] == "ul":
            md += [f"- {x}" for x in b[1]] + [""]
        else:
            md += [markdown_table(b[1], b[2]), ""]
    return md


def blocks_html(blocks: list[Block]) -> str:
    """The answer's blocks as HTML."""
    parts = []
    for b in blocks:
        if b[0] == "h3":
            parts.append(f"<h3>{html.escape(b[1])}</h3>")
        elif b[0] == "p":
            parts.append(f"<p>{md_inline_html(b[1])}</p>")
        elif b[0] == "ul":
            parts.append("<ul>" + "".join(f"<li>{md_inline_html(x)}</li>" for x in b[1]) + "</ul>")
        else:
            parts.append(html_table(b[1], b[2]))
    return "".join(parts)


# --------------------------------------------------------------------------- rendering


def _int_fmt(n: int) -> str:
    # the same grouping as large floats, so that one column reads alike
    return f"{n:,}" if abs(n) >= 1000 else str(n)


#: Values closer to zero than this print as 0: sums of floats leave noise (-5.114e-17) where the exact value
#: is 0, and no load, gap or move in a sweep is meaningful at that size.
ZERO_NOISE = 1e-9


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return _int_fmt(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if abs(v) < ZERO_NOISE:  # float noise around zero (-5.114e-17, 7.105e-15) is 0
            return "0"
        if v.is_integer() and abs(v) < 1e12:
            return _int_fmt(int(v))
        return number(v)  # 4 significant digits, thousands separated, never an exponent (1.2e-05)
    return str(v)


def _share_fmt(v: Any) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * float(v):.1f}%"


def _md_header(raw: str) -> str:
    words, unit = label(raw)
    if raw in ("assignor", "event") or words == raw:
        return raw
    return f"{words} (`{raw}`{', ' + unit if unit else ''})"


def markdown_table(df: pd.DataFrame, share_cols: Sequence[str] = ()) -> str:
    """A GitHub Markdown table; headers in words with the raw column name and unit beside."""
    cols = list(df.columns)
    rule = "|".join("---" if i == 0 else "---:" for i in range(len(cols)))
    lines = ["| " + " | ".join(_md_header(str(c)) for c in cols) + " |", f"|{rule}|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(_share_fmt(r[c]) if c in share_cols else _fmt(r[c]) for c in cols) + " |")
    return "\n".join(lines)


#: Text columns of a table: left-aligned, and their long tokens may wrap (a config key=value is one token).
_TEXT_COLUMNS = ("setting", "what", "point")


def breakable(text: str) -> str:
    """``text`` escaped for HTML, with a line-break opportunity (``<wbr>``) after each ``.``, ``=``, ``_``, ``/``
    and ``,`` of a long token, so that a config key=value or a raw column name wraps inside its cell instead of
    pushing the table past the page; numbers (``1,234,567``) and short words are left whole.

    Examples
    --------
    >>> breakable("partition.assignment.strategy=a.B")
    'partition.<wbr>assignment.<wbr>strategy=<wbr>a.<wbr>B'
    >>> breakable("balance_optimal_share"), breakable("1,234,567"), breakable("x<y")
    ('balance_<wbr>optimal_<wbr>share', '1,234,567', 'x&lt;y')
    """
    out = []
    for token in re.split(r"(\s+)", text):
        esc = html.escape(token)
        if len(token) > 12 and re.search(r"[A-Za-z]", token):
            esc = re.sub(r"([.=_/,])(?!$)", r"\1<wbr>", esc)
        out.append(esc)
    return "".join(out)


def html_table(df: pd.DataFrame, share_cols: Sequence[str] = ()) -> str:
    """An HTML table (numbers right-aligned) that fits the page: headers and text cells wrap (long tokens at
    their dots, underscores and equals signs, :func:`breakable`); its box scrolls sideways only as a last
    resort."""
    def th(raw: str) -> str:
        words, unit = label(raw)
        if raw in ("assignor", "event") or words == raw:
            return f"<th>{html.escape(raw)}</th>"
        return (f"<th{' class=t' if raw in _TEXT_COLUMNS else ''}>{html.escape(words)}<br><code>{breakable(raw)}</code>"
                f"{'<br><small>' + html.escape(unit) + '</small>' if unit else ''}</th>")

    head = "".join(th(str(c)) for c in df.columns)
    body = []
    for _, r in df.iterrows():
        cells = []
        for i, c in enumerate(df.columns):
            text = _share_fmt(r[c]) if c in share_cols else _fmt(r[c])
            if c in _TEXT_COLUMNS:
                cells.append(f"<td class=t>{breakable(text)}</td>")
            elif i == 0:
                cells.append(f"<td class=l>{html.escape(text)}</td>")
            else:
                cells.append(f"<td>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<div class=scroll><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
            "</div>")


def md_inline_html(text: str) -> str:
    """Escape ``text`` for HTML and render its Markdown ``*emphasis*`` and ```code``` (no literal asterisks).

    Examples
    --------
    >>> md_inline_html("*balance optimal* = `max_load_gap` < 1")
    '<em>balance optimal</em> = <code>max_load_gap</code> &lt; 1'
    >>> md_inline_html("**Run `uniform`.** Then *this*.")
    '<strong>Run <code>uniform</code>.</strong> Then <em>this</em>.'
    """
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"\*([^*\s][^*]*?)\*", r"<em>\1</em>", out)


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


def gap_sections(df: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame, tuple[str, ...]]]:
    """One section per consumer gap and weight kind: no statistic adds loads of different units, and each is
    drawn from steps whose optimum is proven (the steps left out are counted apart)."""
    sections: list[tuple[str, str, pd.DataFrame, tuple[str, ...]]] = []
    kinds = weight_kind(df)
    for gap, kind, unit, t in gap_tables(df):
        words = label(gap)[0]
        title = f"{words[:1].upper()}{words[1:]} ({gap}, {unit}): {WEIGHT_KINDS.get(kind, kind)}"
        what = (f"{_GAP_WHAT[gap]} In {unit}. {proven_words(df[kinds == kind], gap, OPTIMAL)} A step that is "
                "invalid or splits co-partitioned units has no gap (the overview counts them).")
        sections.append((title, what, t, ()))
    return sections


def _sections(df: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame, tuple[str, ...]]]:
    s = summary_table(df)
    sections: list[tuple[str, str, pd.DataFrame, tuple[str, ...]]] = []
    cols = ["assignor", "steps", "scenarios", "errors", "invalid", "copartition_violations", "balance_optimal_share"]
    sections.append(("Overview", "Steps evaluated per assignor; *as balanced as the optimum* = "
                     "`max_load_gap` = `sum_sq_gap` = 0, over every step (a step that failed, is invalid or splits "
                     "co-partitioned units never counts).", s[cols], ("balance_optimal_share",)))
    sections += gap_sections(df)
    t = s[["assignor", "moved_mean", "moved_total", "moved_cost_mean", "rounds_mean", "rounds_max", "ms_mean",
           "ms_p95", "ms_max"]]
    sections.append(("Moves, rounds and time", "Moved topic-partitions per step (mean; from the claims before the "
                     "first round to the settled assignment) and over all steps (total), moved state per step "
                     "(`move_costs`; topic-partitions when the instance has none), rebalance rounds per step, "
                     "milliseconds per assignment.", t, ()))
    share = event_table(df, "balance_optimal", "share")
    sections.append(("As balanced as the optimum, by event (balance_optimal, % of steps)",
                     "Share of steps as balanced as the optimum, per event kind (columns: assignors).",
                     share, tuple(c for c in share.columns if c != "event")))
    proven = df[_proven_gap_rows(df, "excess_moves", OPTIMAL)]
    sections.append(("Moves beyond the fewest, by event (excess_moves, mean per step)",
                     "Mean `excess_moves` per event kind, in topic-partitions (`move_costs` when set), at the "
                     f"{_plural(proven[proven['assignor'] == OPTIMAL].shape[0], 'step')} where the optimum is "
                     "proven.", event_table(proven, "excess_moves"), ()))
    sections.append(("Moved partitions by event (moved, mean topic-partitions per step)",
                     "Mean moved topic-partitions per event kind.", event_table(df, "moved"), ()))
    return sections


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


def _notes(df: pd.DataFrame) -> list[str]:
    notes = []
    opt = df[df["assignor"] == OPTIMAL]
    unproven = int((opt["status"] != "optimal").sum())
    if unproven:
        notes.append(f"{unproven} of {len(opt)} optimum steps are not proven optimal (a stage hit the time limit, "
                     "or the loads have no exact integer scale: `kassign assign STEP --assignor optimal` says which "
                     "on stderr); gaps at those "
                     "steps are measured against the best solution found and can be negative.")
    dup = int(df.duplicated(["scenario_id", "step", "assignor"]).sum())
    if dup:
        notes.append(f"WARNING: {dup} duplicate (scenario, step, assignor) rows.")
    unproven_moves = int((df["excess_moves_proven"] == False).sum())  # noqa: E712 (nullable column)
    if unproven_moves:
        notes.append(f"{unproven_moves} excess_moves value(s) are lower estimates (the fewest-moves CP-SAT model "
                     "hit its time limit).")
    split = int((df["outcome"] == SPLIT).sum())
    if split:
        notes.append(f"{split} step(s) split co-partitioned units (outcome `split`): a stream-stream join would "
                     "read wrong data there. They have no gaps (the optimum keeps units together, so a gap "
                     "would compare unlike things), never count as balanced as the optimum, and are left out "
                     "of the gap tables, the box plots and the join verdict.")
    notes += _negative_gap_notes(df)
    errs = df[df["error"].notna()]
    for name, g in errs.groupby("assignor"):
        notes.append(f"{name}: {len(g)} step(s) raised, e.g. {g['error'].iloc[0]}")
    return notes


def _negative_gap_notes(df: pd.DataFrame) -> list[str]:
    """What negative gaps mean, per stage: below the optimum's max load only where the optimum is not proven;
    below its sum of squares also at a proven optimum, as sum of squares is a later stage than moves."""
    opt = df[df["assignor"] == OPTIMAL]
    proven = {(a, b) for a, b in opt.loc[opt["status"] == "optimal", ["scenario_id", "step"]].itertuples(
        index=False, name=None)}
    rows = df[(df["assignor"] != OPTIMAL) & (df["outcome"] == "valid")]
    at_proven = [(a, b) in proven for a, b in rows[["scenario_id", "step"]].itertuples(index=False, name=None)]
    at_proven_s = pd.Series(at_proven, index=rows.index, dtype=bool)
    out = []
    ml = pd.to_numeric(rows["max_load_gap"], errors="coerce") < -EPS
    if ml.any():
        out.append(f"{int(ml.sum())} step(s) have a negative max_load_gap: the assignment is more balanced than "
                   "an optimum that is not proven there (the optimum's best found is the reference).")
    sq = (pd.to_numeric(rows["sum_sq_gap"], errors="coerce") < -EPS) & ~ml
    if sq.any():
        n_proven = int((sq & at_proven_s).sum())
        out.append(f"{int(sq.sum())} step(s) have a negative sum_sq_gap ({n_proven} of them at a proven optimum): "
                   "sum of squares is a later stage of the optimum than max load and moves, so an assignor that "
                   "moves more (or has a higher max load) may well have a smaller sum of squares. A gap at a "
                   "later stage says something only where the earlier stages are equal: read max_load_gap "
                   "first, then excess_moves, then sum_sq_gap.")
    return out


#: The page fits a 1280 px window (and narrower ones down to ~800 px): the body is at most 1200 px wide, tables
#: take at most the body's width and wrap their headers and text cells (td.t: settings, descriptions) at the break
#: opportunities :func:`breakable` adds; a table box scrolls sideways only when even that cannot fit.
_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;max-width:100%}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:right}
td.l{text-align:left;white-space:nowrap}td.t{text-align:left;min-width:12em;overflow-wrap:anywhere}th.t{text-align:left}
th{background:#f3f3f3}img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
.note{background:#fff8e0;padding:.4em .8em;border-left:4px solid #e0b000}code{background:#f5f5f5}
p code,li code{overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%}th{vertical-align:bottom;font-weight:normal}th code{font-weight:bold}
th small{color:#666}.answer{background:#eef6ee;padding:.6em 1em;border-left:4px solid #2a8a2a}"""


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


def _streams_sections(df: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame, tuple[str, ...]]]:
    s = streams_summary_table(df)
    sections: list[tuple[str, str, pd.DataFrame, tuple[str, ...]]] = []
    cols = ["assignor", "steps", "scenarios", "errors", "invalid", "not_caught_up", "balance_optimal_share",
            "moved_actives_mean", "moved_actives_total", "restoration_cost_mean", "warmups_mean", "probing_share",
            "ms_mean", "ms_max"]
    sections.append(("Streams summary", "Kafka Streams steps per assignor. Gaps are measured against "
                     f"{STREAMS_OPTIMAL} solved on the instance the assignor saw (its own previous tasks and lags); "
                     "*balance optimal* = active_balance_gap = total_balance_gap = 0; *not_caught_up* = steps "
                     "with a stateful active on a client that is not caught up while one is; *probing_share* = "
                     "steps that asked for a probing rebalance.",
                     s[cols], ("balance_optimal_share", "probing_share")))
    heur = [n for n in _order(df["assignor"].unique()) if n != STREAMS_OPTIMAL]
    for gap, what in (("active_balance_gap", "max active tasks per thread minus the optimum's"),
                      ("total_balance_gap", "max replicas (actives, standbys, warm-ups) per thread minus the "
                                            "optimum's"),
                      ("restoration_gap", "state to restore (offsets) minus the optimum's; negative when the "
                                          "assignment restores less at the price of balance")):
        t = gap_table(df, gap, STREAMS_OPTIMAL, heur)
        sections.append((f"Streams: {_title(gap)}", f"{what[:1].upper()}{what[1:]}, over the valid steps (invalid "
                         f"ones have no gap). {proven_words(df, gap, STREAMS_OPTIMAL)}", t, ()))
    share = event_table(df, "balance_optimal", "share")
    sections.append(("Streams: as balanced as the optimum, by event (balance_optimal, % of steps)",
                     "Share of Streams steps as balanced as the optimum, per "
                     "event kind.", share, tuple(c for c in share.columns if c != "event")))
    sections.append(("Streams: moved active tasks by event (moved_actives, mean tasks per step)",
                     "Mean moved active tasks per event kind.",
                     event_table(df, "moved_actives"), ()))
    proven = df[_proven_gap_rows(df, "restoration_gap", STREAMS_OPTIMAL)]
    sections.append(("Streams: state to restore above the optimum's, by event (restoration_gap, mean offsets)",
                     "Mean `restoration_gap` per event kind, at the "
                     f"{_plural(proven[proven['assignor'] == STREAMS_OPTIMAL].shape[0], 'step')} where the optimum "
                     "is proven.", event_table(proven, "restoration_gap"), ()))
    return sections


def _streams_plot(df: pd.DataFrame, folder: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heur = [n for n in _order(df["assignor"].unique()) if n != STREAMS_OPTIMAL]
    fig = gap_boxplots(plt, df, heur, STREAMS_GAPS, STREAMS_OPTIMAL,
                       f"Kafka Streams: gap to {STREAMS_OPTIMAL} per step, at steps where it is proven "
                       "(0 = as good as the optimum)", label)
    fig.tight_layout()
    write_atomic(folder / "streams_gaps.png", figure_bytes(fig, "streams_gaps.png"))
    plt.close(fig)
    return [("streams_gaps.png", "Kafka Streams gap distributions per assignor, at steps where the optimum is "
                                 "proven (steps left out counted in the label)")]


def _streams_notes(df: pd.DataFrame) -> list[str]:
    notes = []
    unproven = int((df["opt_status"] != "optimal").sum())
    if unproven:
        notes.append(f"Streams: {unproven} of {len(df)} step(s) have a reference optimum that is not proven "
                     "(a stage hit the time limit); their gaps are against the best solution found.")
    errs = df[df["error"].notna()]
    for name, g in errs.groupby("assignor"):
        notes.append(f"{name}: {len(g)} Streams step(s) raised, e.g. {g['error'].iloc[0]}")
    return notes


def _facts(consumer: pd.DataFrame, streams: pd.DataFrame) -> str:
    parts = []
    if len(consumer):
        parts.append(f"{consumer['scenario_id'].nunique()} consumer scenario(s), "
                     f"{consumer[consumer['assignor'] == OPTIMAL].shape[0] or len(consumer)} scenario-step(s), "
                     f"{len(consumer)} row(s); assignors: {', '.join(_order(consumer['assignor'].unique()))}; "
                     f"instance sizes {int(consumer['partitions'].min())}-{int(consumer['partitions'].max())} "
                     f"topic-partitions, {int(consumer['members'].min())}-{int(consumer['members'].max())} members.")
    if len(streams):
        parts.append(f"{streams['scenario_id'].nunique()} Kafka Streams scenario(s), "
                     f"{streams[streams['assignor'] == STREAMS_OPTIMAL].shape[0] or len(streams)} scenario-step(s), "
                     f"{len(streams)} row(s); assignors: {', '.join(_order(streams['assignor'].unique()))}; "
                     f"{int(streams['partitions'].min())}-{int(streams['partitions'].max())} tasks, "
                     f"{int(streams['members'].min())}-{int(streams['members'].max())} clients.")
    releases = _releases(pd.concat([consumer, streams]))
    if releases:
        parts.append(f"Kafka's assignors follow {releases}.")
    return " ".join(parts)


def _releases(df: pd.DataFrame) -> str:
    """Which Kafka release each Kafka-named assignor followed (``kafka_version``), as one phrase."""
    if "kafka_version" not in df.columns or df["kafka_version"].isna().all():
        return ""
    by_release: dict[str, list[str]] = {}
    for (name, release), _ in df[df["kafka_version"].notna()].groupby(["assignor", "kafka_version"]):
        by_release.setdefault(str(release), []).append(str(name))
    return "; ".join(f"Kafka {r} ({', '.join(_order(names))})" for r, names in sorted(by_release.items()))


def build_report(out: str | Path, title: str | None = None) -> Path:
    """Write ``out/report/`` from ``out/rows``; returns the path of ``index.html``."""
    out = Path(out)
    rows = load_rows(out, REPORT_COLUMNS)
    from spark_runner.sweep.store import read_manifest

    meta = read_manifest(out)
    title = title or meta.get("grid") or out.name
    folder = out / "report"  # created by the first write (solver.model.files.write_atomic)
    df = rows[rows["protocol"] != "streams"]
    st = rows[rows["protocol"] == "streams"]
    plots: list[tuple[str, str]] = []
    sections: list[tuple[str, str, pd.DataFrame, tuple[str, ...]]] = []
    notes: list[str] = []
    if len(df):
        plots += _plots(df, folder)
        sections += _sections(df)
        notes += _notes(df)
        if (df[df["assignor"] == OPTIMAL]["status"] != "optimal").any():
            sections.append(("Unproven optima by grid point", "Steps whose optimum is not proven (status feasible: "
                             "a stage hit the time limit, or the loads have no exact integer scale), per grid "
                             "point; gaps there are against the best solution found.", unproven_by_point(out), ()))
        write_atomic(folder / "summary.csv", summary_table(df).to_csv(index=False))
        write_atomic(folder / "gaps.csv", gaps_csv(df).to_csv(index=False))
    if len(st):
        plots += _streams_plot(st, folder)
        sections += _streams_sections(st)
        notes += _streams_notes(st)
        write_atomic(folder / "summary_streams.csv", streams_summary_table(st).to_csv(index=False))
    facts = _facts(df, st)
    for old in folder.glob("worst-*.yaml"):  # a rebuilt report names only its own worst steps
        old.unlink()
    blocks = answer_blocks(rows, out, folder, meta)
    question = "Which assignor should I run, and what does it cost me?"
    answer = [f"## {question}", "", *blocks_markdown(blocks)] if blocks else []

    md = [f"# Sweep report: {title}", "", *answer, facts, ""]
    md += [f"> {n}" for n in notes] + ([""] if notes else [])
    for name, what, table, share_cols in sections:
        md += [f"## {name}", "", what, "", markdown_table(table, share_cols), ""]
    md += ["## Plots", ""] + [f"![{alt}]({png})" for png, alt in plots] + [""]
    write_atomic(folder / "summary.md", "\n".join(md))

    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>Sweep report: {html.escape(title)}</h1>"]
    if blocks:
        parts.append(f"<div class=answer><h2>{html.escape(question)}</h2>{blocks_html(blocks)}</div>")
    parts.append(f"<p>{html.escape(facts)}</p>")
    parts += [f"<p class=note>{md_inline_html(n)}</p>" for n in notes]
    for name, what, table, share_cols in sections:
        parts.append(f"<h2>{html.escape(name)}</h2><p>{md_inline_html(what)}</p>{html_table(table, share_cols)}")
    parts.append("<h2>Plots</h2>")
    parts += [f"<h3>{html.escape(alt)}</h3><img src='{png}' alt='{html.escape(alt)}'>" for png, alt in plots]
    csvs = " and ".join(f"<a href='{c}'>{c}</a>" for c, rows_of in (("summary.csv", df), ("summary_streams.csv", st))
                        if len(rows_of))
    parts.append("<p>Rows: <code>rows/</code> (Parquet, partitioned by assignor); tables also in "
                 f"<a href='summary.md'>summary.md</a> and {csvs}.</p></body></html>")
    index = folder / "index.html"
    write_atomic(index, "\n".join(parts))
    return index
