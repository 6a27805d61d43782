"""The sweep report's PNG plots: gap distributions, moves over the steps, the optimum's cost, Streams gaps."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from solver.model.files import figure_bytes, write_atomic
from spark_runner.sweep.evaluate import (
    OPTIMAL,
    STREAMS_OPTIMAL,
)
from spark_runner.sweep.report.load import GAPS, STREAMS_GAPS
from spark_runner.sweep.report.tables import _order, label
from spark_runner.sweep.report_gaps import (
    gap_boxplots,
    kinds_present,
    plain_axis,
)


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
