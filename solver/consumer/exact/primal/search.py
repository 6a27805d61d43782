"""The primal side of each stage, composed from the starts, the local search and the windows.

* :func:`lower_max_load` -- several starts (the sticky local search towards
  the bound, the sticky and the plain largest-first greedy), each levelled
  (:func:`.local.level`: the sum of squared loads falls, which drains the
  most loaded members); the lowest max load wins, then the lower moved cost.
  Stops as soon as a start reaches the bound; every solution found is kept
  (a later stage may start from any that fits its cap).
* :func:`fewer_moves_at` -- at a cap: the best of the given solutions,
  shed-and-refill both ways over several seeds and the sticky local search aimed at the cap
  (starts built for that cap), then, while the moved-cost bound is not met,
  the focused model, window re-solves (:func:`.lns.fewer_moves`) and items
  sent home by short chains.

Work is bounded by a wall-clock deadline, or, with ``deterministic``, by
step and window counts derived from the time limit (the same result on
every run).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from solver.consumer.exact.primal.data import Data
from solver.consumer.exact.primal.lns import Budget, fewer_moves, focused
from solver.consumer.exact.primal.local import give_back, improve, level
from solver.consumer.exact.primal.repartition import repartition
from solver.consumer.exact.primal.start import lpt, shed_refill

#: Local-search work units per second of budget in deterministic mode (about a second's work on 2 cores:
#: a unit is a step or 2,000 candidate steps evaluated, :data:`.local.WORK_CELLS`).
STEPS_PER_SECOND = 20_000
#: Subset-sum table words (:mod:`.repartition`) per local-search work unit (about the same time).
WORDS_PER_STEP = 1_500
#: Extra share of the max-load work for the pairwise re-split, when no start reaches the bound (a quarter
#: left ws411-13, 1,241 partitions over 46 members, 9 units above its perfect packing).
RESPLIT_SHARE = 1.0
#: Windows per second of budget in deterministic mode.
WINDOWS_PER_SECOND = 4
#: In counted mode (:class:`Work`), the wall clock stops a search at this multiple of its seconds.
COUNTED_SAFETY = 2.5
#: Share of a moves search's budget for the shed-and-refill starts, and how many seeds they run at most.
SHED_SHARE = 0.2
MAX_SEEDS = 8
#: Shed-and-refill steps per second of budget in deterministic mode (about a second's work on this machine).
SHED_STEPS_PER_SECOND = 50_000


@dataclass(frozen=True)
class Work:
    """A share of the solve: ``seconds`` of wall clock, or the same amount of deterministic work.

    ``counted``: on the clock, but the work is counted in steps as in deterministic mode, with the clock
    (:data:`COUNTED_SAFETY` times ``seconds``) only as a safety net.  On a machine that is not overloaded
    the steps run out first, so two runs reach the same result: the max-load stage of a run with a balance
    tolerance then finds the max load of the run without one, and its window sits EPS above that.

    ``ledger``: in deterministic mode each budget handed out (``steps()``, ``budget()``) is added to it, so
    the caller knows the work a search was given -- at least what it used, the same on every run -- and can
    pass what is left of its share on (the parts of a ``Work`` share its ledger).
    """

    seconds: float
    deterministic: bool = False
    workers: int = 1
    counted: bool = False
    ledger: list[float] | None = field(default=None, compare=False, repr=False)

    def _charge(self) -> None:
        if self.deterministic and self.ledger is not None:
            self.ledger.append(self.seconds)

    def deadline(self) -> float | None:
        if self.deterministic:
            return None
        return time.perf_counter() + self.seconds * (COUNTED_SAFETY if self.counted else 1.0)

    def steps(self) -> int | None:
        self._charge()
        return max(100, int(self.seconds * STEPS_PER_SECOND)) if self.deterministic or self.counted else None

    def part(self, share: float) -> Work:
        return Work(self.seconds * share, self.deterministic, self.workers, self.counted, self.ledger)

    def budget(self) -> Budget:
        self._charge()
        if self.deterministic:
            return Budget(time.perf_counter() + self.seconds, True,
                          max(1, int(self.seconds * WINDOWS_PER_SECOND)), 1)
        return Budget(time.perf_counter() + self.seconds, False, 0, self.workers)


def nl_max(d: Data, x: np.ndarray) -> int:
    """Largest ``NL_m`` of ``x``."""
    return int(((np.asarray(d.weights, dtype=np.int64) @ x) * np.asarray(d.ratio, dtype=np.int64)).max(initial=0))


#: The last few models' cost tables (a model is kept alive beside its table, so its id stays its own).
_COSTS: dict[int, tuple[Data, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]] = {}


def _cost_table(d: Data) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Default cost per class, and the (class, member, saving) entries where a member costs less."""
    hit = _COSTS.get(id(d))
    if hit is not None and hit[0] is d:
        return hit[1]
    dflt = np.asarray(d.default_cost if d.default_cost is not None else [0] * len(d.counts), dtype=np.int64)
    entries = [(c, m, int(dflt[c]) - k) for c, costs in enumerate(d.cost) for m, k in costs.items()]
    table = (dflt, np.asarray([e[0] for e in entries], dtype=np.int64),
             np.asarray([e[1] for e in entries], dtype=np.int64), np.asarray([e[2] for e in entries], dtype=np.int64))
    if len(_COSTS) >= 4:
        _COSTS.clear()
    _COSTS[id(d)] = (d, table)
    return table


def moved_cost(d: Data, x: np.ndarray) -> int:
    """Moved cost of ``x``."""
    dflt, cc, mm, saving = _cost_table(d)
    return int((x.sum(axis=1) * dflt).sum()) - int((x[cc, mm] * saving).sum())


def lower_max_load(d: Data, lb: int, work: Work) -> list[np.ndarray]:
    """Solutions of low max load (see the module docstring), the best first (max load, then moved cost).

    The starts, in order, each with a share of ``work``: the sticky local search towards ``lb`` (few
    moves), that result levelled, the sticky greedy levelled and the plain greedy levelled; the search
    stops at the first solution that reaches ``lb``.  When none does, the best is re-split pair by pair
    (:mod:`.repartition`: exact subset sums, for tight packings) with :data:`RESPLIT_SHARE` more of the
    work, and its items sent home within the max load it reaches with as much again (the two are counted
    apart: on gen-11 of the generated groups the sending home takes most of the max-load stage's time).
    """
    counted = work.deterministic or work.counted  # each start gets a fixed share of the counted work
    t_end = time.perf_counter() + work.seconds * (COUNTED_SAFETY if work.counted else 1.0)
    pool: list[np.ndarray] = []

    def share(k: int, of: int) -> Work:
        if counted:
            return work.part(1.0 / of)
        return Work(max(0.01, (t_end - time.perf_counter()) / (of - k)), False, work.workers)

    def levelled(x: np.ndarray, w: Work) -> np.ndarray:
        return level(d, x, nl_max(d, x), 2**62, deadline=w.deadline(), max_steps=w.steps())

    steps = [lambda w: improve(d, lb, deadline=w.deadline(), max_steps=w.steps()),
             lambda w: levelled(pool[0], w),
             lambda w: levelled(lpt(d, sticky=True), w),
             lambda w: levelled(lpt(d, sticky=False), w)]
    for k, step in enumerate(steps):
        if pool and not work.deterministic and time.perf_counter() >= t_end:
            break
        pool.append(step(share(k, len(steps))))
        if nl_max(d, pool[-1]) <= lb:
            break
    if min(nl_max(d, x) for x in pool) > lb:
        # no start reached the bound: the best one re-split pair by pair (exact subset sums), then items sent
        # home within its max load -- an extra share of the work each, so the starts above keep theirs
        w = work.part(RESPLIT_SHARE) if counted else Work(max(0.02, work.seconds * RESPLIT_SHARE), False)
        best = min(pool, key=lambda x: (nl_max(d, x), moved_cost(d, x)))
        steps_left = w.steps()
        got = repartition(d, best, lb, max_work=2**62 if steps_left is None else steps_left * WORDS_PER_STEP,
                          deadline=w.deadline())
        if nl_max(d, got) < nl_max(d, best):
            pool.append(give_back(d, got, nl_max(d, got), deadline=w.deadline(), max_steps=w.steps()))
    pool.sort(key=lambda x: (nl_max(d, x), moved_cost(d, x)))
    return pool


def _shed_refill_starts(d: Data, cap: int, work: Work, *, seed: int, taken: list[int]) -> list[np.ndarray]:
    """Shed-and-refill at ``cap`` over several seeds, both ways (ratio shedding as the plain greedy does, then
    exact covers).

    The seed only decides where an item that fits nowhere goes, yet that choice sends the moved cost of the
    result from tens to thousands on the same group (held-out-like 2,105 x 131 leave: 19 to 1,258 over four
    seeds), so one seed is a lottery.  Seed 0 runs both ways in any case, each with a fair share of ``work``
    (a run can need six placements an item where evictions cascade); more seeds run while ``work`` lasts, up
    to :data:`MAX_SEEDS`.  In deterministic mode the work is the steps the runs took
    (:data:`SHED_STEPS_PER_SECOND` a second of ``work``).  Returns the solutions found.
    """
    budget = int(work.seconds * SHED_STEPS_PER_SECOND)  # deterministic mode: steps to spend
    t0 = time.perf_counter()
    out: list[np.ndarray] = []
    for s in range(MAX_SEEDS):
        for exact_cover in (False, True):
            deadline: float | None = None
            if work.deterministic:
                if s > 0 and sum(taken) >= budget:
                    return out
            elif s == 0:
                deadline = time.perf_counter() + work.seconds / 2
            elif time.perf_counter() - t0 >= work.seconds:
                return out
            else:
                deadline = t0 + work.seconds
            x = shed_refill(d, cap, seed=seed + s, exact_cover=exact_cover, deadline=deadline, spent=taken)
            if x is not None:
                out.append(x)
    return out


def shed_refill_starts(d: Data, cap: int, work: Work, *, seed: int = 0) -> list[np.ndarray]:
    """Shed-and-refill at ``cap`` over several seeds, both ways (:func:`_shed_refill_starts`); the steps the
    runs took are charged to ``work``'s ledger."""
    taken: list[int] = []
    out = _shed_refill_starts(d, cap, work, seed=seed, taken=taken)
    if work.deterministic and work.ledger is not None:
        work.ledger.append(sum(taken) / SHED_STEPS_PER_SECOND)
    return out


def fewer_moves_at(d: Data, cap: int, work: Work, starts: Sequence[np.ndarray], *, seed: int = 0,
                   floor: int = 0, patience: int | None = None,
                   refine: Callable[[np.ndarray, list[np.ndarray]], tuple[np.ndarray, int]] | None = None,
                   ) -> np.ndarray | None:
    """A solution with every ``NL_m <= cap`` and little moved cost (see the module docstring).

    ``starts``: solutions already known (those within the cap are candidates);
    ``floor``: a lower bound on the moved cost (the search stops when it is reached); ``patience``:
    windows without a gain after which the window search stops (0: the starts only, no focused model
    and no windows -- CP-SAT takes over); ``refine(best, others)``: after the starts, a better solution (or
    ``best``) and a lower bound on the moved cost (the column generation of :mod:`..colgen`, which takes the
    other solutions found within the cap as first columns); the bound becomes the floor of what follows.
    Returns ``None`` only when no start fits the cap and none is found.
    """
    t0 = time.perf_counter()
    best: np.ndarray | None = None
    best_cost = 0

    fitting: list[np.ndarray] = []  # every solution within the cap seen (the column generation's first columns)

    def offer(x: np.ndarray | None) -> None:
        """Keep ``x`` if it fits the cap and moves less than the best so far."""
        nonlocal best, best_cost
        if x is None or nl_max(d, x) > cap:
            return
        fitting.append(x)
        cost = moved_cost(d, x)
        if best is None or cost < best_cost:
            best, best_cost = x, cost

    for x in starts:
        offer(x)
    # sticky starts built for this cap: shed-and-refill both ways over several seeds, and the local search
    # aimed at the cap
    for x in shed_refill_starts(d, cap, work.part(SHED_SHARE), seed=seed):
        offer(x)
    offer(improve(d, cap, deadline=work.part(0.1).deadline(), max_steps=work.part(0.1).steps()))
    if refine is not None and best is not None and best_cost > floor:
        got, bound = refine(best, fitting)
        offer(got)
        floor = max(floor, bound)
        if best_cost <= floor:  # proven: nothing left to search
            return best
    if patience == 0:  # starts only: what is left goes to CP-SAT
        if best is not None and best_cost > floor:
            offer(give_back(d, best, cap, deadline=work.part(0.1).deadline(), max_steps=work.part(0.1).steps()))
        return best
    if best is None or best_cost > floor:
        offer(focused(d, cap, work.part(0.3).budget(), best, seed=seed))
    if best is not None and best_cost > floor:
        used = 0.0 if work.deterministic else time.perf_counter() - t0
        left = Work(max(0.0, work.seconds - used) if not work.deterministic else work.seconds * 0.6,
                    work.deterministic, work.workers, ledger=work.ledger)
        offer(fewer_moves(d, best, cap, left.part(0.9).budget(), seed=seed, patience=patience))
        offer(give_back(d, best, cap, deadline=left.part(0.1).deadline(), max_steps=left.part(0.1).steps()))
    return best
