"""The sweep report's answer: which assignor to run, per workload class, among what Kafka ships.

A sweep's rows fall into workload classes (:data:`CLASSES`): consumer groups without co-partitioned
joins, consumer groups with them (``copartition`` > 0 in the grid point), Kafka Streams applications.
For each class :func:`verdicts` ranks the assignors that ship with Kafka
(:data:`heuristics.shipped.SHIPPED`) by the share of steps *as good as the optimum* and names the
first, with the setting that deploys it; proposals (:data:`heuristics.shipped.PROPOSALS`) are ranked
apart, as what they would gain.

*As good as the optimum* (consumer): the step did not fail, its outcome is ``valid`` (not invalid, no
co-partitioned unit split), it is as balanced as the optimum (``max_load_gap`` and ``sum_sq_gap`` 0)
and it wasted no move (``excess_moves`` 0).  Streams: valid, as balanced (``active_balance_gap`` and
``total_balance_gap`` 0) and no more state to restore than the optimum (``restoration_gap`` <= 0).

Ties on that share are broken, in order, by :data:`TIE_RULES`; the report names the rule that broke
each tie.  In the join class an assignor that split co-partitioned units in any step is never named
(a stream-stream join would read wrong data).  When the best share is 0, no assignor qualifies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from heuristics.shipped import shipped
from solver.model.scoring import VALID
from spark_runner.sweep.evaluate import EPS, OPTIMAL, STREAMS_OPTIMAL
from spark_runner.sweep.report_gaps import proven_steps
from spark_runner.units import number

#: ``(key, title, protocol)`` of each workload class, in report order.
CLASSES: tuple[tuple[str, str, str], ...] = (
    ("consumer", "Consumer groups without co-partitioned joins", "consumer"),
    ("joins", "Consumer groups with co-partitioned joins (stream-stream joins, KIP-315)", "consumer"),
    ("streams", "Kafka Streams applications", "streams"),
)


def workload_class(df: pd.DataFrame) -> pd.Series:
    """The class key of each row: ``streams``, ``joins`` (grid point with ``copartition`` > 0) or ``consumer``."""
    co = pd.to_numeric(df["param_copartition"], errors="coerce").fillna(0) if "param_copartition" in df \
        else pd.Series(0, index=df.index)
    out = pd.Series("consumer", index=df.index, dtype=object)
    out[co > 0] = "joins"
    out[df["protocol"] == "streams"] = "streams"
    return out


def _num(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s, errors="coerce")


def good_steps(df: pd.DataFrame, protocol: str) -> pd.Series:
    """True for the rows *as good as the optimum* (see the module docstring)."""
    ok = df["error"].isna() & (df["outcome"] == VALID) & (df["balance_optimal"] == True)  # noqa: E712
    if protocol == "streams":
        return ok & (_num(df["restoration_gap"]).fillna(math.inf) <= EPS)
    return ok & (_num(df["excess_moves"]).fillna(math.inf) <= EPS)


@dataclass(frozen=True)
class Rule:
    """One tie-breaking rule: its words, the figure per assignor and whether larger is better."""

    words: str
    figure: str
    larger_is_better: bool = False


#: Tie-breaking rules after the share of steps as good as the optimum, per protocol, in order.
TIE_RULES: dict[str, tuple[Rule, ...]] = {
    "consumer": (Rule("share of steps as balanced as the optimum", "balance_share", True),
                 Rule("mean moves beyond the fewest at that balance", "excess_moves_mean"),
                 Rule("mean moved topic-partitions", "moved_mean"),
                 Rule("mean rebalance rounds", "rounds_mean"),
                 Rule("the older Kafka release that ships it", "since_key")),
    "streams": (Rule("share of steps as balanced as the optimum", "balance_share", True),
                Rule("mean state to restore above the optimum's", "restoration_gap_mean"),
                Rule("mean moved active tasks", "moved_mean"),
                Rule("a public setting before an internal one (internal.*, not Kafka's public API)", "internal_key"),
                Rule("the older Kafka release that ships it", "since_key")),
}


def _since_key(name: str) -> tuple[int, ...]:
    s = shipped(name)
    return tuple(int(x) for x in s.since.split(".")) if s else (99,)


def internal_setting(name: str) -> bool:
    """Whether the setting that deploys ``name`` is one of Kafka's internal ones (``internal.*``)."""
    s = shipped(name)
    return s is not None and s.key.startswith("internal.")


def figures(df: pd.DataFrame, protocol: str) -> pd.DataFrame:
    """One row per assignor of one class: the ranking figure (``good_share``) and the tie-breakers."""
    good = good_steps(df, protocol)
    rows = []
    for name, g in df.groupby("assignor", sort=True):
        n = len(g)
        valid = g["outcome"] == VALID
        row: dict[str, Any] = {
            "assignor": name, "steps": n,
            "good_share": float(good[g.index].mean()) if n else math.nan,
            "balance_share": float((g["balance_optimal"] == True).mean()) if n else math.nan,  # noqa: E712
            "split_steps": int((g["outcome"] == "split").sum()),
            "failed_steps": int((g["error"].notna() | (g["outcome"] == "invalid")).sum()),
            "since_key": _since_key(str(name)),
            "internal_key": int(internal_setting(str(name))),
        }
        if protocol == "streams":
            rg = _num(g.loc[valid, "restoration_gap"]).dropna()
            row.update(restoration_gap_mean=float(rg.mean()) if len(rg) else math.nan, defined_steps=len(rg),
                       moved_mean=float(_num(g["moved_actives"]).mean()))
        else:
            ex = _num(g["excess_moves"]).dropna()
            row.update(excess_moves_mean=float(ex.mean()) if len(ex) else math.nan, defined_steps=len(ex),
                       moved_mean=float(_num(g["moved"]).mean()), moved_cost_mean=float(_num(g["moved_cost"]).mean()),
                       rounds_mean=float(_num(g["rounds"]).mean()), rounds_max=float(_num(g["rounds"]).max()))
        rows.append(row)
    return pd.DataFrame(rows)


def _key(r: pd.Series, rules: tuple[Rule, ...]) -> tuple[Any, ...]:
    def v(x: Any, larger: bool) -> Any:
        if isinstance(x, tuple):
            return x
        x = math.inf if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)
        return -x if larger else x

    return (-float(r["good_share"]), *(v(r[rule.figure], rule.larger_is_better) for rule in rules), r["assignor"])


def _show(rule: Rule, r: pd.Series) -> str:
    if rule.figure == "since_key":
        s = shipped(str(r["assignor"]))
        return f"{r['assignor']} since {s.since if s else 'never'}"
    if rule.figure == "internal_key":
        s = shipped(str(r["assignor"]))
        return f"{r['assignor']} {'internal' if r['internal_key'] else 'public'} ({s.key if s else 'no setting'})"
    x = r[rule.figure]
    if rule.figure == "balance_share":
        return f"{r['assignor']} {100 * float(x):.1f}%"
    return f"{r['assignor']} {fmt_mean(x)}"


def fmt_mean(x: Any) -> str:
    """A mean for a sentence: 3 significant digits, thousands separated, ``n/a`` when undefined."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    x = float(x)
    if abs(x) < 1e-9:  # float noise around zero (-5.1e-17) is 0
        return "0"
    return number(x, 3)  # thousands separated, never an exponent (1.2e-05 reads 0.000012)


@dataclass
class Verdict:
    """The answer for one workload class.

    ``ranked``: the shipped candidates, best first (the join class leaves out any that split a unit);
    ``winner``: the first of them, ``None`` when no assignor qualifies (best share 0) or none ships;
    ``ties``: one sentence per assignor that tied with the winner on the share, with the rule that broke
    it; ``excluded``: ``(assignor, steps that split units)`` left out of the join class;
    ``proposals``: the proposals' rows, best first; ``proven_steps``: the steps it is drawn from -- those
    where the optimum is proven, when there are any (else every step, and ``proven_steps`` is 0).
    """

    key: str
    title: str
    protocol: str
    steps: int
    scenarios: int
    ranked: pd.DataFrame
    proposals: pd.DataFrame
    winner: str | None
    ties: list[str] = field(default_factory=list)
    excluded: list[tuple[str, int]] = field(default_factory=list)
    #: steps the verdict is drawn from: those where the optimum is proven (all steps when none is)
    proven_steps: int = 0


def _ties(ranked: pd.DataFrame, rules: tuple[Rule, ...]) -> list[str]:
    if len(ranked) < 2:
        return []
    best = ranked.iloc[0]
    out = []
    for _, r in ranked.iloc[1:].iterrows():
        if abs(float(r["good_share"]) - float(best["good_share"])) > 1e-12:
            break
        for rule in rules:
            a, b = _key(best, (rule,))[1], _key(r, (rule,))[1]
            if a != b:
                out.append(f"{r['assignor']} ties at {100 * float(best['good_share']):.1f}%; broken by {rule.words}: "
                           f"{_show(rule, best)}, {_show(rule, r)}")
                break
        else:
            out.append(f"{r['assignor']} ties on every figure; broken by name")
    return out


def verdicts(df: pd.DataFrame) -> list[Verdict]:
    """One :class:`Verdict` per workload class present in ``df`` (rows of both protocols, outcome set)."""
    cls = workload_class(df)
    out = []
    for key, title, protocol in CLASSES:
        rows = df[cls == key]
        ref = STREAMS_OPTIMAL if protocol == "streams" else OPTIMAL
        # drawn from the steps where the optimum is proven: elsewhere "as good as the optimum" is against the
        # best found only
        # (a row's own opt_status: a Streams row's reference is the optimum of the instance that assignor saw)
        keep = proven_steps(rows, ref)
        n_proven = len(set(rows.loc[keep, ["scenario_id", "step"]].itertuples(index=False, name=None)))
        if keep.any():
            rows = rows[keep]
        heur = rows[rows["assignor"] != ref]
        if heur.empty:
            continue
        fig = figures(heur, protocol)
        rules = TIE_RULES[protocol]
        fig = fig.assign(_k=[_key(r, rules) for _, r in fig.iterrows()]).sort_values("_k").drop(columns="_k")
        ships = fig["assignor"].map(lambda n: shipped(str(n)) is not None)
        cand, props = fig[ships].reset_index(drop=True), fig[~ships].reset_index(drop=True)
        excluded: list[tuple[str, int]] = []
        if key == "joins":
            bad = cand["split_steps"] > 0
            excluded = [(str(r["assignor"]), int(r["split_steps"])) for _, r in cand[bad].iterrows()]
            cand = cand[~bad].reset_index(drop=True)
        winner = None
        if len(cand) and float(cand.iloc[0]["good_share"]) > 0:
            winner = str(cand.iloc[0]["assignor"])
        opt = rows[rows["assignor"] == ref]
        out.append(Verdict(key, title, protocol, len(opt) or int(heur.groupby("assignor").size().max()),
                           int(rows["scenario_id"].nunique()), cand, props, winner,
                           _ties(cand, rules) if winner else [], excluded, n_proven))
    return out


__all__ = ["CLASSES", "TIE_RULES", "Verdict", "figures", "fmt_mean", "good_steps", "verdicts", "workload_class"]
