"""The sweep report's gap tables and box plots: one per load unit, from steps whose optimum is proven.

A consumer gap is in the load unit of its instance: ``max_load_gap`` in topic-partitions per capacity
unit on an unweighted group, in the instance's weight per capacity unit on a weighted one (and
``sum_sq_gap`` in that unit squared).  A mean over unweighted, lognormal and hot-partition scenarios
together would add unlike things, so every gap table and box plot is drawn per **weight kind** (the
grid's ``weights`` parameter, :data:`WEIGHT_KINDS`), and says its unit.  ``excess_moves`` is in
topic-partitions (``move_costs`` when set) whatever the weights, and is split alike so each table reads
on its own.

Every statistic is drawn from the steps whose optimum is **proven** (the optimum's ``status`` is
``optimal`` at that step; for ``excess_moves`` also ``excess_moves_proven``): elsewhere a gap is
measured against the best solution found and can be negative.  Each table counts the steps it left
out for that reason in a column of its own (``unproven``).

Examples
--------
>>> load_unit("uniform"), load_unit("lognormal"), load_unit("hot", squared=True)
('topic-partitions per capacity unit', 'weight per capacity unit', '(weight per capacity unit)²')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from spark_runner.units import number

#: The grid's ``weights`` values, in report order, and what each is in words.
WEIGHT_KINDS: dict[str, str] = {
    "uniform": "unweighted groups (every partition counts 1)",
    "lognormal": "lognormal partition weights (median 1)",
    "hot": "hot partitions (weight 1, hot ones hot_factor)",
    "zipf": "Zipf partition weights",
    "unknown": "groups whose weights the rows do not say",
}

#: The gap columns whose unit is the load unit (``sum_sq_gap`` squared); others are in moves.
LOAD_GAPS = {"max_load_gap": False, "sum_sq_gap": True}

STATS = ("mean", "p50", "p95", "max")


def load_unit(kind: str, squared: bool = False) -> str:
    """The load unit of a weight kind: topic-partitions unweighted, else the instance's weight unit."""
    unit = {"uniform": "topic-partitions per capacity unit",
            "unknown": "each group's load unit per capacity unit"}.get(kind, "weight per capacity unit")
    return f"({unit})²" if squared else unit


def gap_unit(gap: str, kind: str) -> str:
    """The unit of a consumer gap column on groups of one weight kind."""
    if gap in LOAD_GAPS:
        return load_unit(kind, LOAD_GAPS[gap])
    return "topic-partitions (move_costs when set)"


def weight_kind(df: pd.DataFrame) -> pd.Series:
    """Each row's weight kind: the grid's ``weights`` parameter (``unknown`` where a row lacks it)."""
    if "param_weights" not in df.columns:
        return pd.Series("unknown", index=df.index, dtype=object)
    return df["param_weights"].astype(object).where(df["param_weights"].notna(), "unknown").astype(str)


def kinds_present(df: pd.DataFrame) -> list[str]:
    """The weight kinds of ``df`` in report order (:data:`WEIGHT_KINDS`, then any other by name)."""
    have = set(weight_kind(df).unique())
    return [k for k in WEIGHT_KINDS if k in have] + sorted(have - set(WEIGHT_KINDS))


def proven_steps(df: pd.DataFrame, reference: str) -> pd.Series:
    """True for rows measured against a proven optimum: the row's own ``opt_status`` is ``optimal`` (a Streams
    row's reference is the optimum of the instance that assignor saw); where a row has none, the reference row
    of that (scenario, step) has status ``optimal`` (the reference's own rows included)."""
    ref = df[df["assignor"] == reference]
    proven = {(a, b) for a, b in ref.loc[ref["status"] == "optimal", ["scenario_id", "step"]]
              .itertuples(index=False, name=None)}
    keys = df[["scenario_id", "step"]].itertuples(index=False, name=None)
    out = pd.Series([k in proven for k in keys], index=df.index, dtype=bool)
    if "opt_status" in df.columns:
        own = df["opt_status"].astype(object)
        have = own.notna()
        out[have] = (own[have] == "optimal").to_numpy(dtype=bool)
    return out


def usable(df: pd.DataFrame, gap: str, reference: str) -> tuple[pd.Series, pd.Series]:
    """``(defined, proven)`` masks for ``gap``: the rows where it has a value, and among them those
    measured against a proven optimum (``excess_moves`` also needs ``excess_moves_proven``)."""
    defined = pd.to_numeric(df[gap], errors="coerce").notna()
    # an invalid step, or one that splits co-partitioned units, has no gap (a negative one there is a broken
    # constraint, not a gain), also in rows read without the report's normalisation
    if "valid" in df.columns:
        defined &= df["valid"].astype(object).map(lambda v: v is not False and v is not np.False_)
    if "copartition_violations" in df.columns:
        defined &= ~(pd.to_numeric(df["copartition_violations"], errors="coerce").fillna(0) > 0)
    proven = proven_steps(df, reference)
    if gap == "excess_moves" and "excess_moves_proven" in df.columns:
        proven &= df["excess_moves_proven"].astype(object).map(lambda v: v is not False and v is not np.False_)
    return defined, defined & proven


def _stat(values: np.ndarray, how: str) -> float:
    if values.size == 0:
        return math.nan
    if how == "mean":
        return float(values.mean())
    if how == "max":
        return float(values.max())
    return float(np.percentile(values, 50 if how == "p50" else 95))


def gap_table(df: pd.DataFrame, gap: str, reference: str, order: Sequence[str]) -> pd.DataFrame:
    """Per assignor of ``order``: ``proven_steps`` (the steps the statistics are drawn from), the
    :data:`STATS` of ``gap`` over them, and ``unproven`` (steps with a gap against an unproven optimum, left
    out)."""
    defined, proven = usable(df, gap, reference)
    rows = []
    for name in order:
        mine = df["assignor"] == name
        vals = pd.to_numeric(df.loc[mine & proven, gap], errors="coerce").to_numpy(dtype=float)
        row: dict[str, Any] = {"assignor": name, "proven_steps": int(vals.size)}
        row.update({how: _stat(vals, how) for how in STATS})
        row["unproven"] = int((mine & defined & ~proven).sum())
        rows.append(row)
    return pd.DataFrame(rows, columns=["assignor", "proven_steps", *STATS, "unproven"])


def proven_words(df: pd.DataFrame, gap: str, reference: str) -> str:
    """The sentence under a gap table: the scenario-steps its statistics are drawn from (the optimum proven)
    and those left out (a gap against an optimum that is not proven)."""
    defined, proven = usable(df, gap, reference)
    heur = df["assignor"] != reference

    def steps(mask: pd.Series) -> int:
        return len(set(df.loc[mask & heur, ["scenario_id", "step"]].itertuples(index=False, name=None)))

    used, left = steps(proven), steps(defined & ~proven)
    text = f"Drawn from the {number(used)} step(s) where the optimum is proven"
    if left:
        return (text + f"; {number(left)} step(s) measured against an optimum that is not proven are left out "
                       "(per assignor in *unproven*).")
    return text + "."


def box_data(df: pd.DataFrame, heur: Sequence[str], gap: str, reference: str
             ) -> tuple[list[np.ndarray], list[str]]:
    """The values of ``gap`` per assignor at steps with a proven optimum, and the labels, which count the
    steps left out: invalid or split (no gap) and those against an unproven optimum."""
    defined, proven = usable(df, gap, reference)
    data, names = [], []
    for n in heur:
        mine = df["assignor"] == n
        data.append(pd.to_numeric(df.loc[mine & proven, gap], errors="coerce").to_numpy(dtype=float))
        no_gap = int((mine & ~defined).sum())
        open_ = int((mine & defined & ~proven).sum())
        left = [f"{no_gap} invalid or split" if no_gap else "", f"{open_} not proven" if open_ else ""]
        left = [x for x in left if x]
        names.append(f"{n}\n({', '.join(left)}, not shown)" if left else n)
    return data, names


def plain_axis(axis: Any) -> None:
    """Tick labels a person reads: thousands separated, never an exponent or an offset."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _pos: number(0.0 if abs(v) < 1e-9 else float(v))))


def gap_boxplots(plt: Any, df: pd.DataFrame, heur: list[str], gaps: tuple[str, ...], reference: str,
                 title: str, label: Callable[[str], tuple[str, str]], kinds: Sequence[str] | None = None) -> Any:
    """Box plots of ``gaps`` (columns) per weight kind (rows; ``kinds``, or one row when ``None``), one box per
    assignor, from steps whose optimum is proven; each panel names its unit (``label(gap)`` gives its words and
    its unit when not per weight kind).  The figure (saved by the caller).
    """
    groups: list[tuple[str | None, pd.DataFrame]]
    if kinds is None:
        groups = [(None, df)]
    else:
        wk = weight_kind(df)
        groups = [(k, df[wk == k]) for k in kinds]
    fig, axes = plt.subplots(len(groups), len(gaps), squeeze=False,
                             figsize=(5.6 * len(gaps), (0.45 * max(4, len(heur)) + 1.9) * len(groups) + 0.6))
    for (kind, g), row in zip(groups, axes, strict=True):
        for ax, gap in zip(row, gaps, strict=True):
            data, names = box_data(g, heur, gap, reference)
            if any(d.size for d in data):
                ax.boxplot([d if d.size else np.array([np.nan]) for d in data], orientation="horizontal",
                           widths=0.6, flierprops={"markersize": 2, "alpha": 0.4})
                ax.set_yticks(range(1, len(heur) + 1), names, fontsize=8)
            else:
                ax.text(0.5, 0.5, "no step with a proven optimum", ha="center", va="center",
                        transform=ax.transAxes)
                ax.set_yticks([])
            words, unit = label(gap)
            head = f"{words}\n({gap})"
            if kind is not None:
                head += f"\n{WEIGHT_KINDS.get(kind, kind)}"
                unit = gap_unit(gap, kind)
            ax.set_title(head, fontsize=9)
            ax.set_xlabel(unit, fontsize=9)
            plain_axis(ax.xaxis)
            ax.axvline(0, color="green", lw=0.8, ls=":")
            ax.grid(axis="x", alpha=0.3)
    fig.suptitle(title)
    return fig


__all__ = ["LOAD_GAPS", "STATS", "WEIGHT_KINDS", "box_data", "gap_boxplots", "gap_table", "gap_unit",
           "kinds_present", "load_unit", "plain_axis", "proven_steps", "proven_words", "usable", "weight_kind"]
