"""The sweep report's answer on top: which assignor to run, what it costs, its worst step and how to re-run it."""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from heuristics.shipped import PROPOSALS, shipped
from solver.model.files import write_atomic
from spark_runner.sweep.evaluate import (
    OPTIMAL,
    STREAMS_OPTIMAL,
)
from spark_runner.sweep.report.format import _fmt, _share_fmt, html_table, markdown_table, md_inline_html
from spark_runner.sweep.report.load import GAPS, STREAMS_GAPS
from spark_runner.sweep.verdict import Verdict, fmt_mean, verdicts, workload_class

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
