"""The sweep report: summary tables and plots from the Parquet rows of a sweep.

``build_report(DIR)`` reads ``DIR/rows`` and writes ``DIR/report/``:

- ``index.html``: summary tables and the plots;
- ``summary.md``: the same tables in Markdown (for a KIP or a pull request);
- ``summary.csv``: the per-assignor table as CSV;
- ``gaps.png`` (gap distributions per assignor), ``moves.png`` (mean
  cumulative moved partitions over the steps), ``solve_time.png`` (seconds
  against instance size);
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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from solver.errors import InstanceError, Problem
from spark_runner.sweep.evaluate import OPTIMAL, REFERENCE, STREAMS_OPTIMAL, arrow_schema

GAPS = ("max_load_gap", "sum_sq_gap", "excess_moves")
STREAMS_GAPS = ("active_balance_gap", "total_balance_gap", "restoration_gap")
STATS = ("mean", "p50", "p95", "max")


#: The columns the report reads (a large sweep has millions of rows; params_json alone would be big).
REPORT_COLUMNS = ("scenario_id", "step", "event", "protocol", "members", "partitions", "status", "seconds", "rounds",
                  "error", "valid", "copartition_violations", "moved", "max_load_gap", "sum_sq_gap", "excess_moves",
                  "excess_moves_proven", "balance_optimal", "opt_status", "not_caught_up_actives",
                  "moved_actives", "warmups", "probing_rebalance", "restoration_cost", *STREAMS_GAPS)


def load_rows(out: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Rows under ``out/rows`` (all columns, or ``columns`` plus ``assignor`` as a plain string column)."""
    rows = Path(out) / "rows"
    if not rows.exists() or not any(rows.glob("assignor=*/*.parquet")):
        raise InstanceError(str(out), [Problem("", "no sweep rows (expected Parquet under rows/assignor=*/)")])
    import pyarrow as pa
    import pyarrow.dataset as ds

    # the full row schema: columns added since older files were written (protocol, Streams) read as null
    schema = arrow_schema()
    part = ds.partitioning(pa.schema([schema.field("assignor")]), flavor="hive")
    dataset = ds.dataset(str(rows), format="parquet", partitioning=part, schema=schema)
    cols = None if columns is None else [*columns, "assignor"]
    df = dataset.to_table(columns=cols).to_pandas()
    df["assignor"] = df["assignor"].astype(str)
    if "protocol" in df.columns:
        df["protocol"] = df["protocol"].fillna("consumer").astype(str)
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


def _counts(name: str, g: pd.DataFrame) -> dict[str, Any]:
    """The columns every per-assignor table starts with: steps, scenarios, errors, invalid steps."""
    return {
        "assignor": name,
        "steps": len(g),
        "scenarios": g["scenario_id"].nunique(),
        "errors": int(g["error"].notna().sum()),
        "invalid": int((g["valid"] == False).sum()),  # noqa: E712 (nullable column)
    }


def _positive(col: pd.Series) -> int:
    """Steps where a nullable count is above 0."""
    return int(pd.to_numeric(col).fillna(0).gt(0).sum())


def summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per assignor: steps, errors, validity, gap statistics, balance-optimal share, moves, rounds, time."""
    out = []
    for name in _order(df["assignor"].unique()):
        g = df[df["assignor"] == name]
        row: dict[str, Any] = {
            **_counts(name, g),
            "copartition_violations": _positive(g["copartition_violations"]),
        }
        for gap in GAPS:
            for how in STATS:
                row[f"{gap}_{how}"] = _stat(g[gap], how)
        row["balance_optimal_share"] = _share(g["balance_optimal"])
        row["moved_mean"] = _stat(g["moved"], "mean")
        row["moved_total"] = float(pd.to_numeric(g["moved"]).sum())
        row["rounds_mean"] = _stat(g["rounds"], "mean")
        row["rounds_max"] = _stat(g["rounds"], "max")
        row["seconds_mean"] = _stat(g["seconds"], "mean")
        row["seconds_p95"] = _stat(g["seconds"], "p95")
        row["seconds_max"] = _stat(g["seconds"], "max")
        out.append(row)
    return pd.DataFrame(out)


def event_table(df: pd.DataFrame, column: str, how: str = "mean") -> pd.DataFrame:
    """Event kind x assignor table of ``column`` (``mean``, or ``share`` of true values)."""
    names = _order(df["assignor"].unique())
    events = sorted(df["event"].unique(), key=lambda e: (e != "initial", e))
    data = {}
    for name in names:
        g = df[df["assignor"] == name]
        col = {}
        for ev in events:
            s = g.loc[g["event"] == ev, column]
            col[ev] = _share(s) if how == "share" else _stat(s, "mean")
        data[name] = col
    t = pd.DataFrame(data, index=events)
    t.index.name = "event"
    return t.reset_index()


# --------------------------------------------------------------------------- plots


def _gap_boxplots(plt: Any, df: pd.DataFrame, heur: list[str], gaps: tuple[str, ...], title: str) -> Any:
    """One horizontal box plot per gap column, one box per assignor; the figure (saved by the caller)."""
    fig, axes = plt.subplots(1, len(gaps), figsize=(5 * len(gaps), 0.45 * max(4, len(heur)) + 1.5))
    for ax, gap in zip(np.atleast_1d(axes), gaps, strict=True):
        data = [pd.to_numeric(df.loc[df["assignor"] == n, gap], errors="coerce").dropna().to_numpy() for n in heur]
        if any(d.size for d in data):
            ax.boxplot([d if d.size else np.array([np.nan]) for d in data], orientation="horizontal", widths=0.6,
                       flierprops={"markersize": 2, "alpha": 0.4})
            ax.set_yticks(range(1, len(heur) + 1), heur)
        else:
            ax.text(0.5, 0.5, "not available", ha="center", va="center", transform=ax.transAxes)
            ax.set_yticks([])
        ax.set_title(gap)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(title)
    return fig


def _plots(df: pd.DataFrame, folder: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    heur = [n for n in _order(df["assignor"].unique()) if n != OPTIMAL]
    colors = {n: plt.get_cmap("tab10")(i % 10) for i, n in enumerate(_order(df["assignor"].unique()))}

    # 1. gap distributions
    fig = _gap_boxplots(plt, df, heur, GAPS, "Gap to the optimum per step (0 = as good as the optimum)")
    fig.tight_layout()
    fig.savefig(folder / "gaps.png", dpi=110)
    plt.close(fig)
    made.append(("gaps.png", "Gap distributions per assignor"))

    # 2. cumulative moves over steps
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for n in _order(df["assignor"].unique()):
        g = df[df["assignor"] == n][["scenario_id", "step", "moved"]].copy()
        g["moved"] = pd.to_numeric(g["moved"], errors="coerce").fillna(0)
        g = g.sort_values(["scenario_id", "step"])
        g["cum"] = g.groupby("scenario_id")["moved"].cumsum()
        curve = g.groupby("step")["cum"].mean()
        ax.plot(curve.index, curve.to_numpy(), marker="o", markersize=3, label=n, color=colors[n],
                linewidth=2.5 if n == OPTIMAL else 1.5, linestyle="--" if n == OPTIMAL else "-")
    ax.set_xlabel("step")
    ax.set_ylabel("cumulative moved partitions (mean over scenarios)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(folder / "moves.png", dpi=110)
    plt.close(fig)
    made.append(("moves.png", "Cumulative moves over the steps"))

    # 3. solve time against size
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for n in _order(df["assignor"].unique()):
        g = df[df["assignor"] == n]
        x = pd.to_numeric(g["partitions"], errors="coerce")
        y = pd.to_numeric(g["seconds"], errors="coerce").clip(lower=1e-6)
        ax.scatter(x, y, s=6 if n != OPTIMAL else 10, alpha=0.5, label=n, color=colors[n],
                   marker="x" if n == OPTIMAL else "o")
    ax.set_yscale("log")
    ax.set_xlabel("topic-partitions in the instance")
    ax.set_ylabel("seconds per assignment (settled)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, ncol=2, markerscale=2)
    fig.tight_layout()
    fig.savefig(folder / "solve_time.png", dpi=110)
    plt.close(fig)
    made.append(("solve_time.png", "Solve time against instance size"))
    return made


# --------------------------------------------------------------------------- rendering


def _int_fmt(n: int) -> str:
    # the same grouping as large floats, so that one column reads alike
    return f"{n:,}" if abs(n) >= 1000 else str(n)


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (int, np.integer)):
        return _int_fmt(int(v))
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if v.is_integer() and abs(v) < 1e12:
            return _int_fmt(int(v))
        return f"{v:.4g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _share_fmt(v: Any) -> str:
    return "n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * float(v):.1f}%"


def markdown_table(df: pd.DataFrame, share_cols: Sequence[str] = ()) -> str:
    """A GitHub Markdown table."""
    cols = list(df.columns)
    rule = "|".join("---" if i == 0 else "---:" for i in range(len(cols)))
    lines = ["| " + " | ".join(cols) + " |", f"|{rule}|"]
    for _, r in df.iterrows():
        lines.append("| " + " | ".join(_share_fmt(r[c]) if c in share_cols else _fmt(r[c]) for c in cols) + " |")
    return "\n".join(lines)


def html_table(df: pd.DataFrame, share_cols: Sequence[str] = ()) -> str:
    """An HTML table (numbers right-aligned)."""
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = []
    for _, r in df.iterrows():
        cells = []
        for i, c in enumerate(df.columns):
            text = _share_fmt(r[c]) if c in share_cols else _fmt(r[c])
            cells.append(f"<td{' class=l' if i == 0 else ''}>{html.escape(text)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _sections(df: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame, tuple[str, ...]]]:
    s = summary_table(df)
    sections: list[tuple[str, str, pd.DataFrame, tuple[str, ...]]] = []
    cols = ["assignor", "steps", "scenarios", "errors", "invalid", "copartition_violations", "balance_optimal_share"]
    sections.append(("Overview", "Steps evaluated per assignor; *balance optimal* = as balanced as the optimum "
                     "(max_load_gap = sum_sq_gap = 0).", s[cols], ("balance_optimal_share",)))
    for gap, what in (("max_load_gap", "max load minus the optimum's (topic-partitions, or weights when weighted)"),
                      ("sum_sq_gap", "sum of squared loads minus the optimum's"),
                      ("excess_moves", "moves beyond the fewest needed by any valid assignment at least as "
                                       "balanced")):
        t = s[["assignor", *(f"{gap}_{h}" for h in STATS)]].rename(columns={f"{gap}_{h}": h for h in STATS})
        sections.append((gap, what, t, ()))
    t = s[["assignor", "moved_mean", "moved_total", "rounds_mean", "rounds_max", "seconds_mean", "seconds_p95",
           "seconds_max"]]
    sections.append(("Moves, rounds and time", "Moved partitions per step (from the claims before the first round "
                     "to the settled assignment), rebalance rounds per step, seconds per assignment.", t, ()))
    share = event_table(df, "balance_optimal", "share")
    sections.append(("Balance optimal by event", "Share of steps as balanced as the optimum, per event kind.",
                     share, tuple(c for c in share.columns if c != "event")))
    sections.append(("Excess moves by event", "Mean excess_moves per event kind.",
                     event_table(df, "excess_moves"), ()))
    sections.append(("Moved partitions by event", "Mean moved partitions per event kind.",
                     event_table(df, "moved"), ()))
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
        notes.append(f"{unproven} of {len(opt)} optimum steps are not proven optimal (time limit); gaps at those "
                     "steps are measured against the best solution found and can be negative.")
    dup = int(df.duplicated(["scenario_id", "step", "assignor"]).sum())
    if dup:
        notes.append(f"WARNING: {dup} duplicate (scenario, step, assignor) rows.")
    unproven_moves = int((df["excess_moves_proven"] == False).sum())  # noqa: E712 (nullable column)
    if unproven_moves:
        notes.append(f"{unproven_moves} excess_moves value(s) are lower estimates (the fewest-moves CP-SAT model "
                     "hit its time limit).")
    neg = df[(pd.to_numeric(df["copartition_violations"], errors="coerce").fillna(0) > 0)
             & (pd.to_numeric(df["max_load_gap"], errors="coerce") < 0)]
    if len(neg):
        notes.append(f"{len(neg)} step(s) have negative balance gaps: those assignments break co-partitioning, "
                     "which the optimum respects.")
    errs = df[df["error"].notna()]
    for name, g in errs.groupby("assignor"):
        notes.append(f"{name}: {len(g)} step(s) raised, e.g. {g['error'].iloc[0]}")
    return notes


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
td.l{text-align:left}th{background:#f3f3f3}img{max-width:100%;border:1px solid #ddd;margin:.5em 0}
.note{background:#fff8e0;padding:.4em .8em;border-left:4px solid #e0b000}code{background:#f5f5f5}"""


def streams_summary_table(df: pd.DataFrame) -> pd.DataFrame:
    """Streams rows, one row per assignor: validity, Streams gap statistics, moves, warm-ups, probing, time."""
    out = []
    for name in _order(df["assignor"].unique()):
        g = df[df["assignor"] == name]
        row: dict[str, Any] = {
            **_counts(name, g),
            "not_caught_up": _positive(g["not_caught_up_actives"]),
            "balance_optimal_share": _share(g["balance_optimal"]),
        }
        for gap in STREAMS_GAPS:
            for how in STATS:
                row[f"{gap}_{how}"] = _stat(g[gap], how)
        row["moved_actives_mean"] = _stat(g["moved_actives"], "mean")
        row["moved_actives_total"] = float(pd.to_numeric(g["moved_actives"]).sum())
        row["restoration_cost_mean"] = _stat(g["restoration_cost"], "mean")
        row["warmups_mean"] = _stat(g["warmups"], "mean")
        row["probing_share"] = _share(g["probing_rebalance"])
        row["seconds_mean"] = _stat(g["seconds"], "mean")
        row["seconds_max"] = _stat(g["seconds"], "max")
        out.append(row)
    return pd.DataFrame(out)


def _streams_sections(df: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame, tuple[str, ...]]]:
    s = streams_summary_table(df)
    sections: list[tuple[str, str, pd.DataFrame, tuple[str, ...]]] = []
    cols = ["assignor", "steps", "scenarios", "errors", "invalid", "not_caught_up", "balance_optimal_share",
            "moved_actives_mean", "moved_actives_total", "restoration_cost_mean", "warmups_mean", "probing_share",
            "seconds_mean", "seconds_max"]
    sections.append(("Streams summary", "Kafka Streams steps per assignor. Gaps are measured against "
                     f"{STREAMS_OPTIMAL} solved on the instance the assignor saw (its own previous tasks and lags); "
                     "*balance optimal* = active_balance_gap = total_balance_gap = 0; *not_caught_up* = steps "
                     "with a stateful active on a client that is not caught up while one is; *probing_share* = "
                     "steps that asked for a probing rebalance.",
                     s[cols], ("balance_optimal_share", "probing_share")))
    for gap, what in (("active_balance_gap", "max active tasks per thread minus the optimum's"),
                      ("total_balance_gap", "max replicas (actives, standbys, warm-ups) per thread minus the "
                                            "optimum's"),
                      ("restoration_gap", "state to restore (offsets) minus the optimum's; negative when the "
                                          "assignment restores less at the price of balance")):
        t = s[["assignor", *(f"{gap}_{h}" for h in STATS)]].rename(columns={f"{gap}_{h}": h for h in STATS})
        sections.append((f"Streams {gap}", what, t, ()))
    share = event_table(df, "balance_optimal", "share")
    sections.append(("Streams balance optimal by event", "Share of Streams steps as balanced as the optimum, per "
                     "event kind.", share, tuple(c for c in share.columns if c != "event")))
    sections.append(("Streams moved actives by event", "Mean moved active tasks per event kind.",
                     event_table(df, "moved_actives"), ()))
    sections.append(("Streams restoration gap by event", "Mean restoration_gap per event kind.",
                     event_table(df, "restoration_gap"), ()))
    return sections


def _streams_plot(df: pd.DataFrame, folder: Path) -> list[tuple[str, str]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    heur = [n for n in _order(df["assignor"].unique()) if n != STREAMS_OPTIMAL]
    fig = _gap_boxplots(plt, df, heur, STREAMS_GAPS,
                        f"Kafka Streams: gap to {STREAMS_OPTIMAL} per step (0 = as good as the optimum)")
    fig.tight_layout()
    fig.savefig(folder / "streams_gaps.png", dpi=110)
    plt.close(fig)
    return [("streams_gaps.png", "Kafka Streams gap distributions per assignor")]


def _streams_notes(df: pd.DataFrame) -> list[str]:
    notes = []
    unproven = int((df["opt_status"] != "optimal").sum())
    if unproven:
        notes.append(f"Streams: {unproven} of {len(df)} step(s) have a reference optimum that is not proven "
                     "(time limit); their gaps are against the best solution found.")
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
    return " ".join(parts)


def build_report(out: str | Path, title: str | None = None) -> Path:
    """Write ``out/report/`` from ``out/rows``; returns the path of ``index.html``."""
    out = Path(out)
    rows = load_rows(out, REPORT_COLUMNS)
    manifest = out / "manifest.json"
    meta: dict[str, Any] = json.loads(manifest.read_text()) if manifest.exists() else {}
    title = title or meta.get("grid") or out.name
    folder = out / "report"
    folder.mkdir(parents=True, exist_ok=True)
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
                             "a stage hit the time limit), per grid point; gaps there are against the best "
                             "solution found.", unproven_by_point(out), ()))
        summary_table(df).to_csv(folder / "summary.csv", index=False)
    if len(st):
        plots += _streams_plot(st, folder)
        sections += _streams_sections(st)
        notes += _streams_notes(st)
        streams_summary_table(st).to_csv(folder / "summary_streams.csv", index=False)
    facts = _facts(df, st)

    md = [f"# Sweep report: {title}", "", facts, ""]
    md += [f"> {n}" for n in notes] + ([""] if notes else [])
    for name, what, table, share_cols in sections:
        md += [f"## {name}", "", what, "", markdown_table(table, share_cols), ""]
    md += ["## Plots", ""] + [f"![{alt}]({png})" for png, alt in plots] + [""]
    (folder / "summary.md").write_text("\n".join(md), encoding="utf-8")

    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>Sweep report: {html.escape(title)}</h1><p>{html.escape(facts)}</p>"]
    parts += [f"<p class=note>{html.escape(n)}</p>" for n in notes]
    for name, what, table, share_cols in sections:
        parts.append(f"<h2>{html.escape(name)}</h2><p>{html.escape(what)}</p>{html_table(table, share_cols)}")
    parts.append("<h2>Plots</h2>")
    parts += [f"<h3>{html.escape(alt)}</h3><img src='{png}' alt='{html.escape(alt)}'>" for png, alt in plots]
    csvs = " and ".join(f"<a href='{c}'>{c}</a>" for c in ("summary.csv", "summary_streams.csv")
                        if (folder / c).exists())
    parts.append("<p>Rows: <code>rows/</code> (Parquet, partitioned by assignor); tables also in "
                 f"<a href='summary.md'>summary.md</a> and {csvs}.</p></body></html>")
    index = folder / "index.html"
    index.write_text("\n".join(parts), encoding="utf-8")
    return index
