"""The integer master: the cheapest assignment made of the columns generated (price and branch), by CP-SAT.

One Boolean per column, at most one column per member, every free class
covered at least ``n_c`` times, the moved cost minimised; the incumbent's
columns are the hint.  A chosen
column may give back items it holds where they cost (a member holding less
still fits): two columns that both hold an item then pay for it once, which
the columns alone cannot express (a column is a whole set).  What a class is
still covered beyond ``n_c`` leaves where it costs most (:func:`settle`), so
the answer is an assignment of exactly the items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from solver.consumer.exact.colgen.pricing import Column
from solver.consumer.exact.colgen.problem import MovesProblem
from solver.runtime import run_cpsat, set_budget

__all__ = ["cheapest_of"]

#: Counted seconds of building and presolving a model, per non-zero (CP-SAT's deterministic time leaves them
#: out: on ws411-0 at 1% the column model took 5.0 s of wall time for 1.9 deterministic seconds, 9,525 non-zeros).
BUILD_SECONDS = 2e-5


def build_cost(columns: Sequence[Column]) -> float:
    """Counted seconds of building the integer models over ``columns`` (both take about this)."""
    return BUILD_SECONDS * sum(col.idx.size + 1 for col in columns)


def cheapest_of(prob: MovesProblem, columns: Sequence[Column], hint: Sequence[int], *, seconds: float,
                deterministic: bool, seed: int = 0, workers: int = 1, below: int | None = None,
                bound: int = 0) -> tuple[np.ndarray | None, float]:
    """The cheapest choice of one column per member (at most) covering every free class, if one costs less
    than ``below``.

    Parameters
    ----------
    prob
        The reduced problem.
    columns
        The columns generated.
    hint
        Indices of a feasible choice (the incumbent's columns).
    below
        Only choices cheaper than this are wanted (the incumbent's cost); ``None``: any.
    bound
        A valid lower bound on the free part's cost: CP-SAT stops as soon as a choice reaches it.
    seconds
        CP-SAT's limit (deterministic seconds when ``deterministic``).
    deterministic, seed, workers
        CP-SAT's search settings.

    Returns
    -------
    (counts, deterministic seconds used)
        ``[member, free class]`` counts of the choice (``None`` when CP-SAT found none in time).
    """
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    ys = [model.new_bool_var(f"y{k}") for k in range(len(columns))]
    per_member: list[list[int]] = [[] for _ in range(prob.n_members)]
    cover: list[list[tuple[int, int]]] = [[] for _ in range(prob.n_free)]
    held: dict[tuple[int, int], list[tuple[int, int]]] = {}  # (member, class) -> (column, count) where it holds it
    for k, col in enumerate(columns):
        per_member[col.member].append(k)
        for c, t in zip(col.idx.tolist(), col.cnt.tolist(), strict=True):
            cover[c].append((k, t))
            held.setdefault((col.member, c), []).append((k, t))
    for ks in per_member:
        if len(ks) > 1:
            model.add_at_most_one(ys[k] for k in ks)
    # a chosen column may give back items it holds where they cost (it still fits): the choice then moves only
    # what it keeps, so combining two columns that both hold an item is priced right
    back: dict[tuple[int, int], Any] = {}
    given: list[list[Any]] = [[] for _ in range(prob.n_free)]  # per class, what chosen columns give back
    saving = []
    for (m, c), terms in held.items():
        unit = int(prob.cost[m, c])
        if unit <= 0:
            continue
        r = model.new_int_var(0, max(t for _, t in terms), f"r{m}_{c}")
        model.add(r <= sum(t * ys[k] for k, t in terms))
        back[m, c] = r
        given[c].append(r)
        saving.append(unit * r)
    for c, terms in enumerate(cover):
        model.add(sum(t * ys[k] for k, t in terms) - sum(given[c]) >= int(prob.count[c]))
    objective = sum(int(col.cost) * ys[k] for k, col in enumerate(columns) if col.cost) - sum(saving)
    model.add(objective >= int(bound))  # valid for every choice: CP-SAT can stop at a choice that reaches it
    if below is not None:
        model.add(objective <= int(below) - 1)
    model.minimize(objective)
    chosen = set(hint)
    h = model.proto.solution_hint  # written in bulk: one add_hint call a column is slow on large masters
    h.vars.extend(y.index for y in ys)
    h.values.extend(int(k in chosen) for k in range(len(columns)))
    solver = cp_model.CpSolver()
    set_budget(solver, seconds, seed=seed, deterministic=deterministic, workers=workers)
    st = run_cpsat(solver, model)
    spent = float(solver.deterministic_time) + build_cost(columns)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, spent
    counts = np.zeros((prob.n_members, prob.n_free), dtype=np.int64)
    for k, col in enumerate(columns):
        if solver.value(ys[k]):
            counts[col.member, col.idx] += col.cnt
    for (m, c), r in back.items():
        counts[m, c] -= int(solver.value(r))
    return settle(prob, counts), spent


def settle(prob: MovesProblem, counts: np.ndarray) -> np.ndarray:
    """``counts`` with each class's surplus over ``n_c`` removed where one item of it costs most.

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> p = SimpleNamespace(count=np.array([1]), cost=np.array([[0], [3]]))
    >>> settle(p, np.array([[1], [1]])).tolist()   # member 1 would pay 3 for it: it goes from there
    [[1], [0]]
    """
    out = counts.copy()
    surplus = out.sum(axis=0) - np.asarray(prob.count, dtype=np.int64)
    for c in np.flatnonzero(surplus > 0).tolist():
        extra = int(surplus[c])
        for m in np.argsort(-np.asarray(prob.cost)[:, c], kind="stable").tolist():
            if extra <= 0:
                break
            take = min(extra, int(out[m, c]))
            out[m, c] -= take
            extra -= take
    return out


def cheapest_on_support(prob: MovesProblem, columns: Sequence[Column], values: np.ndarray, start: np.ndarray, *,
                        seconds: float, deterministic: bool, seed: int = 0, workers: int = 1,
                        below: int | None = None, bound: int = 0) -> tuple[np.ndarray | None, float]:
    """The cheapest assignment whose items go only where the master's LP solution (or ``start``) puts some:
    a compact model over that support, which may combine parts of the LP's columns (a fractional optimum's
    columns seldom make an integer one on their own).

    Returns ``([member, free class] counts or None, deterministic seconds used)``.
    """
    from ortools.sat.python import cp_model

    top = np.zeros((prob.n_members, prob.n_free), dtype=np.int64)
    for col, v in zip(columns, values.tolist(), strict=True):
        if v > 1e-7:
            np.maximum.at(top, (np.full(col.idx.size, col.member), col.idx), col.cnt)
    top = np.maximum(top, start)
    model = cp_model.CpModel()
    x: dict[tuple[int, int], Any] = {}
    for m, c in zip(*np.nonzero(top), strict=True):
        x[int(m), int(c)] = model.new_int_var(0, int(top[m, c]), f"x{m}_{c}")
    per_class: list[list[Any]] = [[] for _ in range(prob.n_free)]
    per_member: list[list[tuple[int, Any]]] = [[] for _ in range(prob.n_members)]
    for (m, c), v in x.items():
        per_class[c].append(v)
        per_member[m].append((int(prob.weight[c]), v))
    for c, vs in enumerate(per_class):
        model.add(sum(vs) == int(prob.count[c]))
    for m, terms in enumerate(per_member):
        if terms:
            model.add(sum(w * v for w, v in terms) <= int(prob.room[m]))
    objective = sum(int(prob.cost[m, c]) * v for (m, c), v in x.items() if prob.cost[m, c])
    model.add(objective >= int(bound))
    if below is not None:
        model.add(objective <= int(below) - 1)
    model.minimize(objective)
    for (m, c), v in x.items():
        model.add_hint(v, int(start[m, c]))
    solver = cp_model.CpSolver()
    set_budget(solver, seconds, seed=seed, deterministic=deterministic, workers=workers)
    st = run_cpsat(solver, model)
    spent = float(solver.deterministic_time) + BUILD_SECONDS * (len(x) + prob.n_free + prob.n_members)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, spent
    counts = np.zeros((prob.n_members, prob.n_free), dtype=np.int64)
    for (m, c), v in x.items():
        counts[m, c] = int(solver.value(v))
    return counts, spent
