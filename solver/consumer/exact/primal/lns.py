"""Large-neighbourhood search: windows of members re-solved exactly with CP-SAT.

A *window* is a set of members; the items they hold are taken off and put
back, among the window's members, by a CP-SAT model that keeps every
``NL_m`` within the cap and minimises the moved cost of those items (every
other item stays where it is).  The current solution is a complete hint and
an upper bound, so a window never makes the solution worse; a window that
finds a cheaper arrangement is taken.  Windows are drawn around the previous
owners whose items sit elsewhere (their holders and the members with the
most room join them), so that items can come home.

:func:`focused` is one large window of another kind: every item stays with
its previous owner except the orphans and the items of owners above the cap,
which go wherever there is room -- a model far smaller than the whole, and
the one that packs orphans into the exact rooms left at a tight cap.

Determinism: with ``deterministic`` every window gets a fixed CP-SAT
deterministic time and one worker, the number of windows is fixed and a
window's size follows CP-SAT's status (finished or out of time), so the same
seed gives the same result whatever the machine's load.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.consumer.exact.primal.data import Data
from solver.runtime import run_cpsat, set_budget

#: Members in a window at first (grown after a window that finished its search without a gain, shrunk after
#: one that ran out of time).
WINDOW = 10
#: Smallest and largest window.
WINDOW_RANGE = (4, 24)
#: Largest focused model (class-member variables); a larger one is left to the windows.
FOCUS_MAX_VARS = 40_000
#: CP-SAT seconds (deterministic time with ``deterministic``) per window.
WINDOW_SECONDS = 0.25


@dataclass(frozen=True)
class Budget:
    """How long a search may run: a wall-clock deadline, or a fixed amount of deterministic work."""

    deadline: float
    deterministic: bool = False
    windows: int = 0  # deterministic mode: number of windows
    workers: int = 1

    def over(self, done: int) -> bool:
        if self.deterministic:
            return done >= self.windows
        return time.perf_counter() >= self.deadline

    def seconds(self, want: float) -> float:
        if self.deterministic:
            return want
        return max(0.0, min(want, self.deadline - time.perf_counter()))


class _Model:
    """Per-class facts the windows need: homes, costs, eligibility, rooms at the cap."""

    def __init__(self, d: Data, cap: int) -> None:
        self.d = d
        self.nc = len(d.counts)
        self.n = len(d.ratio)
        self.W = np.asarray(d.weights, dtype=np.int64)
        self.r = np.asarray(d.ratio, dtype=np.int64)
        self.room = cap // self.r
        self.dflt = np.asarray(d.default_cost if d.default_cost is not None else [0] * self.nc, dtype=np.int64)
        self.elig = [frozenset(e) for e in d.eligible]
        home = np.full(self.nc, -1, dtype=np.int64)
        save = np.zeros(self.nc, dtype=np.int64)
        for c in range(self.nc):
            best = min(((k, m) for m, k in d.cost[c].items() if k < self.dflt[c] and m in self.elig[c]), default=None)
            if best is not None:
                home[c] = best[1]
                save[c] = self.dflt[c] - best[0]
        self.home = home
        self.save = save  # moved cost avoided by an item of c at home
        cheap = [(c, m, int(self.dflt[c]) - k) for c in range(self.nc) for m, k in d.cost[c].items()
                 if k < self.dflt[c]]
        self.cheap_c = np.asarray([t[0] for t in cheap], dtype=np.int64)
        self.cheap_m = np.asarray([t[1] for t in cheap], dtype=np.int64)
        self.cheap_d = np.asarray([t[2] for t in cheap], dtype=np.int64)

    def cost(self, c: int, m: int) -> int:
        return int(self.d.cost[c].get(m, int(self.dflt[c])))

    def moved(self, x: np.ndarray) -> int:
        """Moved cost of ``x``: every item at its class's default cost, less what it saves where it is."""
        total = int((x.sum(axis=1) * self.dflt).sum())
        return total - int((x[self.cheap_c, self.cheap_m] * self.cheap_d).sum())


@dataclass(frozen=True)
class _Outcome:
    """A window's re-solve: the new counts (``None``: nothing better found) and whether CP-SAT finished its
    search within its time (proved its answer optimal, or that nothing cheaper exists)."""

    counts: np.ndarray | None
    finished: bool


def _resolve(mod: _Model, counts: np.ndarray, win: list[int], base: np.ndarray, seconds: float, seed: int,
             workers: int, deterministic: bool, below: int | None) -> _Outcome:
    """Place the items ``counts`` (classes x members, hint) on ``win`` at the least moved cost, each member
    within its room less ``base``; with ``below``, only an arrangement cheaper than that is of use.

    The outcome's counts are zero outside ``win``, ``None`` when nothing (better) was found.
    """
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    loads: dict[int, list[tuple[int, Any]]] = {m: [] for m in win}
    terms: list[tuple[int, Any]] = []
    ys: dict[tuple[int, int], Any] = {}
    cls = np.flatnonzero(counts[:, win].sum(axis=1)).tolist()
    for c in cls:
        k = int(counts[c, win].sum())
        row = []
        for m in win:
            if m not in mod.elig[c] or mod.W[c] > mod.room[m] - base[m]:
                continue
            v = model.new_int_var(0, k, "") if k > 1 else model.new_bool_var("")
            ys[c, m] = v
            row.append(v)
            if mod.W[c]:
                loads[m].append((int(mod.W[c]), v))
            cost = mod.cost(c, m)
            if cost:
                terms.append((cost, v))
            model.add_hint(v, int(counts[c, m]))
        if not row:
            return _Outcome(None, True)
        model.add(sum(row) == k)
    for m in win:
        if loads[m]:
            model.add(sum(w * v for w, v in loads[m]) <= int(mod.room[m] - base[m]))
    objective = sum(k * v for k, v in terms) if terms else 0
    if below is not None:
        model.add(objective <= below - 1)
    model.minimize(objective)
    solver = cp_model.CpSolver()
    set_budget(solver, seconds, seed=seed, deterministic=deterministic, workers=workers)
    st = run_cpsat(solver, model)
    finished = st in (cp_model.OPTIMAL, cp_model.INFEASIBLE)
    if st not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return _Outcome(None, finished)
    out = np.zeros_like(counts)
    for (c, m), v in ys.items():
        out[c, m] = solver.value(v)
    return _Outcome(out, finished)


def _solve(mod: _Model, x: np.ndarray, win: list[int], seconds: float, seed: int, workers: int,
           deterministic: bool) -> _Outcome:
    """Re-solve window ``win`` of ``x``: its items among its members (the outcome's counts are the whole
    solution, ``None`` when nothing cheaper was found)."""
    current = sum(mod.cost(c, m) * int(x[c, m]) for m in win for c in np.flatnonzero(x[:, m]).tolist())
    if current == 0:
        return _Outcome(None, True)
    got = _resolve(mod, x, win, np.zeros(mod.n, dtype=np.int64), seconds, seed, workers, deterministic, current)
    if got.counts is None:
        return got
    out = x.copy()
    out[:, win] = got.counts[:, win]
    return _Outcome(out, got.finished)


def _pick(mod: _Model, x: np.ndarray, rng: np.random.Generator, size: int) -> list[int] | None:
    """A window around a previous owner whose items sit elsewhere (drawn by the moved cost it causes)."""
    owned = np.flatnonzero(mod.home >= 0)
    away = (x[owned].sum(axis=1) - x[owned, mod.home[owned]]) * mod.save[owned]
    per_home = np.bincount(mod.home[owned], weights=away, minlength=mod.n)
    # orphans and other items with no home: their holders are windows too (they may pack better)
    total = per_home.sum()
    if total <= 0:
        return None
    o = int(rng.choice(mod.n, p=per_home / total))
    win = [o]
    mine = np.flatnonzero(mod.home == o)
    holders = np.flatnonzero(x[mine].sum(axis=0))
    holders = holders[holders != o]
    rng.shuffle(holders)
    win += holders[: max(1, size // 3)].tolist()
    reach: set[int] = set()
    for m in win:
        for c in np.flatnonzero(x[:, m]).tolist():
            reach |= mod.elig[c]
    reach -= set(win)
    if reach:
        cand = np.fromiter(sorted(reach), dtype=np.int64)
        free = mod.room[cand] - (mod.W @ x[:, cand])
        noise = rng.random(cand.size) * max(1, int(np.abs(free).max())) * 0.3
        order = cand[np.argsort(-(free + noise), kind="stable")]
        win += order[: size - len(win)].tolist()
    return win


def fewer_moves(d: Data, x: np.ndarray, cap: int, budget: Budget, *, seed: int = 0,
                patience: int | None = None) -> np.ndarray:
    """Lower the moved cost of ``x`` (every ``NL_m <= cap``) by window re-solves; never worse than ``x``.

    Stops when the budget is spent, the moved cost is 0, or (with ``patience``) after that many windows in
    a row without a gain.

    Examples
    --------
    Member 1 holds member 0's item (cost 5) while member 0 has room for it:

    >>> import numpy as np, time
    >>> d = Data(weights=[3, 3], counts=[1, 1], eligible=[[0, 1]] * 2, cost=[{0: 0}, {1: 0}],
    ...          ratio=[1, 1], default_cost=[5, 5])
    >>> x = np.array([[0, 1], [0, 1]])
    >>> fewer_moves(d, x, 6, Budget(time.perf_counter() + 5, deterministic=True, windows=2)).tolist()
    [[1, 0], [0, 1]]
    """
    mod = _Model(d, cap)
    rng = np.random.default_rng(seed)
    size = WINDOW
    done = 0
    idle = 0
    best = mod.moved(x)
    while not budget.over(done) and best > 0 and (patience is None or idle < patience):
        win = _pick(mod, x, rng, min(size, mod.n))
        if win is None:
            break
        secs = budget.seconds(WINDOW_SECONDS)
        if secs <= 0.005:
            break
        got = _solve(mod, x, win, secs, seed + done, budget.workers, budget.deterministic)
        done += 1
        idle += 1
        if got.counts is not None:
            val = mod.moved(got.counts)
            if val < best:
                x, best, idle = got.counts, val, 0
                continue
        # no gain: a window whose search finished looks for more room, one that ran out of time for less (by
        # CP-SAT's status, which deterministic time makes reproducible)
        size = min(WINDOW_RANGE[1], size + 1) if got.finished else max(WINDOW_RANGE[0], size - 1)
    return x


def focused(d: Data, cap: int, budget: Budget, hint: np.ndarray | None = None, *, seed: int = 0) -> np.ndarray | None:
    """Every item at its previous owner, except orphans and the items of owners over ``cap``: those are
    placed by one CP-SAT model wherever there is room, at the least moved cost.  ``None`` when that model
    finds nothing within the budget (or has no solution: the fixed items leave too little room).
    """
    mod = _Model(d, cap)
    owned_load = np.zeros(mod.n, dtype=np.int64)
    at = np.flatnonzero(mod.home >= 0)
    np.add.at(owned_load, mod.home[at], mod.W[at] * np.asarray(d.counts, dtype=np.int64)[at])
    over = owned_load > mod.room
    free = (mod.home < 0) | over[np.maximum(mod.home, 0)]
    base = np.where(over, 0, owned_load)
    start = np.zeros((mod.nc, mod.n), dtype=np.int64)
    fixed = np.flatnonzero(~free)
    start[fixed, mod.home[fixed]] = np.asarray(d.counts, dtype=np.int64)[fixed]
    win = [m for m in range(mod.n) if mod.room[m] - base[m] > 0]
    winset = set(win)
    size = sum(len(mod.elig[c] & winset) for c in np.flatnonzero(free).tolist())
    if size > FOCUS_MAX_VARS:  # too large to build and solve within a share of the budget: windows instead
        return None
    # the free items, on any member with room (the hint where it stays inside that space, else spread)
    loose = np.zeros_like(start)
    free_cls = np.flatnonzero(free)
    counts = np.asarray(d.counts, dtype=np.int64)
    for c in free_cls.tolist():
        members = [m for m in win if m in mod.elig[c]]
        if not members:
            return None
        if hint is not None and hint[c, members].sum() == counts[c]:
            loose[c, members] = hint[c, members]
        else:
            loose[c, members[0]] = counts[c]
    secs = budget.seconds(max(WINDOW_SECONDS, budget.windows * WINDOW_SECONDS / 4 if budget.deterministic else 1e9))
    got = _resolve(mod, loose, win, base, secs, seed, budget.workers, budget.deterministic, None)
    if got.counts is None:
        return None
    return start + got.counts
