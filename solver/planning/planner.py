"""The shared state of one planning run: fleets of instances, integer sizes and capacities.

See :mod:`solver.planning.plan` for the model.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from solver.errors import InfeasibleError
from solver.planning.binpacking import FloatArray, IntArray
from solver.planning.config import PlanConfig
from solver.planning.items import PlanItems
from solver.scaling import INT_LIMIT, decimal_power, integerize


@dataclass(frozen=True)
class Fleet:
    """Instances available for a plan of ``n``: today's members then new ones.

    Attributes
    ----------
    members
        Member indices (``>= m`` for new instances ``new-1``, ``new-2`` ...).
    caps
        Raw capacity of each.
    choose
        How many of them the plan uses (``< len(members)`` when shrinking: the
        optimisation picks which).
    """

    members: tuple[int, ...]
    caps: FloatArray
    choose: int


#: Least time a CP-SAT model gets, also after the deadline (it then returns its hint or nothing).
MIN_MODEL_SECONDS = 0.05
#: Item x instance pairs of a CP-SAT model built (in Python) per second of its budget: about half the rate
#: measured on a busy 2-core machine (1,366 items x 84 instances, 114,744 pairs, took 9 s at load 9), so that
#: building leaves time to search.
SAT_PAIRS_PER_SECOND = 25_000


class Planner:
    """Shared state of one planning run: items, integer data, fleets, cached solves."""

    def __init__(self, items: PlanItems, cfg: PlanConfig) -> None:
        self.items = items
        self.cfg = cfg
        self.m = len(items.member_ids)
        self.cap_raw = cfg.capacity * items.divisor
        mult = items.multipliers if self.m else np.zeros(0)
        self.member_caps = mult * self.cap_raw
        #: an added instance's capacity multiplier (``plan`` sets today's size when ``--new-capacity`` is not given)
        self.new_mult = float(cfg.new_capacity) if cfg.new_capacity is not None else 1.0
        self.new_cap = self.new_mult * self.cap_raw
        # Pool order: today's members by capacity (largest first, input order on ties), then new ones.
        self.pool_order = sorted(range(self.m), key=lambda j: (-mult[j], j))
        n_max = self.m + max(items.n_items, 1)
        pool_caps = [self.member_caps[j] for j in self.pool_order] + [self.new_cap] * (n_max - self.m)
        self.pool_members = [*self.pool_order, *range(self.m, n_max)]
        self.ints = integerize(items.raw, np.asarray(pool_caps, dtype=np.float64))
        self.pool_caps_up = self.ints.caps_down  # packings use these
        self.pool_caps_lo = self.ints.caps_up  # proofs use these
        self.sizes_up = self.ints.sizes_up
        self.sizes_lo = self.ints.sizes_down
        caps = np.concatenate([self.member_caps, [self.new_cap]]) if self.m else np.array([self.new_cap])
        self.identical = bool(np.allclose(caps, caps[0], rtol=0, atol=0))
        self.state_scale = _cost_scale(items.prev_state, items.move_state)
        self.t0 = time.perf_counter()
        #: The whole plan's deadline (``PlanConfig.time_limit`` from the start of :func:`solver.planning.plan`).
        self.deadline = None if cfg.time_limit is None else self.t0 + cfg.time_limit
        #: The deadline of the work in progress (a row, a stage of a row) when it has a share of its own.
        self.step_deadline: float | None = None

    def budget(self) -> float | None:
        """Seconds the next CP-SAT model may use: what is left of the plan's time limit, or of the current
        step's share of it (at least 0.05 s)."""
        if self.deadline is None:
            return None
        end = self.deadline if self.step_deadline is None else min(self.deadline, self.step_deadline)
        return max(MIN_MODEL_SECONDS, end - time.perf_counter())

    @contextlib.contextmanager
    def share(self, fraction: float) -> Iterator[None]:
        """Within the block, models get at most ``fraction`` of what is left (of the current step's share,
        else of the plan): a row (or a stage of one) must leave time to the ones after it."""
        if self.deadline is None:
            yield
            return
        outer = self.step_deadline
        now = time.perf_counter()
        end = self.deadline if outer is None else min(self.deadline, outer)
        self.step_deadline = now + max(0.0, end - now) * fraction
        try:
            yield
        finally:
            self.step_deadline = outer

    def expired(self) -> bool:
        """True once the plan's time limit has passed."""
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def step_expired(self) -> bool:
        """True once the current step's share of the time (:meth:`share`), or the plan's time limit, has passed."""
        if self.deadline is None:
            return False
        end = self.deadline if self.step_deadline is None else min(self.deadline, self.step_deadline)
        return time.perf_counter() >= end

    # -- fleets

    def prefix_caps(self, n: int, proof: bool = False) -> IntArray:
        """Integer capacities of the ``n`` best instances (feasibility of ``n`` is decided on them)."""
        caps = self.pool_caps_lo if proof else self.pool_caps_up
        if n <= caps.size:
            return caps[:n]
        extra = np.full(n - caps.size, caps[-1] if caps.size else 0, dtype=np.int64)
        return np.concatenate([caps, extra])

    def fleet(self, n: int) -> Fleet:
        """Candidates for ``n`` instances: all of today's members, plus new ones when ``n > m``."""
        if n <= self.m:
            return Fleet(tuple(range(self.m)), self.member_caps.copy(), n)
        members = (*range(self.m), *range(self.m, n))
        caps = np.concatenate([self.member_caps, np.full(n - self.m, self.new_cap)])
        return Fleet(members, caps, n)

    def member_name(self, j: int) -> str:
        """Member id, or ``new-k`` for the k-th new instance."""
        return self.items.member_ids[j] if j < self.m else f"new-{j - self.m + 1}"

    def int_caps(self, caps: FloatArray, proof: bool = False) -> IntArray:
        """Raw capacities scaled like the sizes (rounded down for packings, up for proofs)."""
        f = self.ints.factor
        if self.ints.exact:
            return np.round(caps * f).astype(np.int64)
        return (np.ceil(caps * f) if proof else np.floor(caps * f)).astype(np.int64)

    def small(self, n_bins: int) -> bool:
        """True when an items x instances CP-SAT model is small enough to build, and to build within the time
        it may use (:data:`SAT_PAIRS_PER_SECOND`): a model that takes longer to build than its budget would
        spend the time of the rows after it; the greedy answer (with its bound) stands instead."""
        pairs = self.items.n_items * max(n_bins, 1)
        if pairs > self.cfg.sat_pair_limit:
            return False
        budget = self.budget()
        return budget is None or pairs <= budget * SAT_PAIRS_PER_SECOND


def _cost_scale(*arrays: FloatArray) -> float:
    vals = np.concatenate([np.asarray(a, dtype=np.float64) for a in arrays]) if arrays else np.zeros(0)
    f = decimal_power(vals, int_limit=INT_LIMIT)
    if f is not None:
        return float(f)
    top = float(vals.max()) if vals.size else 1.0
    return 1e6 / top if top > 0 else 1.0


def check_items(pl: Planner) -> None:
    """Raise :class:`InfeasibleError` when an item is larger than every instance can hold.

    Parameters
    ----------
    pl
        The planning run (items, integer data, fleets).

    Raises
    ------
    solver.errors.InfeasibleError
        Naming the largest such item, its load and the largest capacity.
    """
    items = pl.items
    if items.n_items == 0:
        return
    biggest = float(pl.pool_caps_up.max()) if pl.pool_caps_up.size else 0.0
    too_big = np.flatnonzero(pl.sizes_lo > (pl.ints.caps_up.max() if pl.ints.caps_up.size else 0))
    if too_big.size:
        i = int(too_big[np.argmax(items.raw[too_big])])
        load = items.raw[i] / items.divisor
        cap = (biggest / pl.ints.factor) / items.divisor
        what = "co-partition unit" if len(items.parts[i]) > 1 else "partition"
        raise InfeasibleError(
            f"{what} {items.labels[i]} has load {load:g}, more than the largest instance can hold ({cap:g}); "
            f"no number of instances fits ({too_big.size} item(s) too large)"
        )


def real_caps(pl: Planner, n: int) -> FloatArray:
    """Raw capacities of the ``n`` best instances (pool order: today's largest first, then new ones).

    Parameters
    ----------
    pl
        The planning run.
    n
        Number of instances.

    Returns
    -------
    numpy.ndarray
        Capacity of each, in raw units (``load * divisor``).
    """
    mult_sorted = [pl.member_caps[j] for j in pl.pool_order]
    caps = [*mult_sorted[:n]] + [pl.new_cap] * max(0, n - pl.m)
    return np.asarray(caps, dtype=np.float64)
