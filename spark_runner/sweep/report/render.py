"""The sweep report's pages: ``index.html``, ``summary.md`` and the CSV files, written by :func:`build_report`."""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from solver.model.files import write_atomic
from solver.model.scoring import SPLIT
from spark_runner.sweep.evaluate import (
    EPS,
    OPTIMAL,
    STREAMS_OPTIMAL,
)
from spark_runner.sweep.report.answer import _plural, answer_blocks, blocks_html, blocks_markdown
from spark_runner.sweep.report.format import html_table, markdown_table, md_inline_html
from spark_runner.sweep.report.load import REPORT_COLUMNS, load_rows
from spark_runner.sweep.report.plots import _plots, _streams_plot
from spark_runner.sweep.report.tables import (
    _GAP_WHAT,
    _order,
    _proven_gap_rows,
    _title,
    event_table,
    gap_tables,
    gaps_csv,
    label,
    streams_summary_table,
    summary_table,
    unproven_by_point,
)
from spark_runner.sweep.report_gaps import (
    WEIGHT_KINDS,
    gap_table,
    proven_words,
    weight_kind,
)


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
