"""Offline capacity planning: how many instances, what scaling costs, what failure costs.

The question of an SRE sizing a consumer group (or a Kafka Streams
application), answered with proofs.  The model, in one place:

*Items.*  A partition is an item; a co-partition unit (partition ``i`` of every
topic of a ``copartition`` group, KIP-315) is one item that cannot be split.  Its
*load* is the sum of its partitions' ``weights`` (bytes/s, records/s ...).  With
``catch_up_seconds`` the weights are read as *lag* (records behind) and the load
is ``lag / catch_up_seconds``: the consumption rate that drains the backlog in
that time.  Partitions of a co-partition group at or above the group's smallest
partition count are not joinable (KIP-315 leaves them unassigned) and carry no
load here.  Streams: each stateful task's active and its
``num_standby_replicas`` standbys are items of one *anti-affinity group* (they
must sit on distinct instances); see :func:`streams_items`.

*Instances.*  An instance holds load up to ``capacity`` (same unit as the
loads).  A member's ``capacity`` field is a multiplier: member ``j`` holds
``capacity * members[j].capacity``.  The plan for ``n`` instances keeps ``n`` of
today's members when ``n <= m`` (the ``m`` members of the input; *which* ones is
chosen by the optimisation: the cheapest to keep) and adds ``n - m`` new
instances of multiplier ``new_capacity`` (default 1) when ``n > m``.  Every
instance is a replica of the same application: it may take any planned item
(the union of the members' subscriptions is planned; differing subscriptions
are reported in ``notes``).

*Minimum.*  The smallest ``n`` for which an assignment within capacity exists.
Feasibility is shown by an assignment; minimality by a lower bound equal to
``n`` (``proof_kind = "bound"``) or by CP-SAT proving ``n - 1`` infeasible
(``"cp-sat"``); when neither closes in the time limit the gap is reported
(``"gap"``).  With different capacities the ``n`` largest instances are the
best choice for feasibility (a packing into smaller instances also fits into
larger ones), so feasibility of ``n`` is checked on them.

*Per ``n``.*  ``max_utilisation``: the best-balanced assignment's busiest
instance (load / capacity), minimised.  ``moved_state`` then
``moved_partitions``: the fewest moves (lexicographically: ``move_costs`` first,
then partitions) from the current assignment (members' ``owned``, previous-owner
rules of design.md) to any assignment within capacity on ``n`` instances.  A
partition *moves* when it had a previous owner and ends on another instance
(also when its owner is removed).  ``kafka_*``: what Kafka's cooperative-sticky
does on the same kept instances (run until settled); it balances partition
counts, not loads, so it may not fit.  Resilience: after losing *any* ``K``
instances of the plan, does the load fit on the survivors, and the worst case
of the fewest moves needed (see :func:`resilience`).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from solver import binpacking as bp
from solver.errors import InfeasibleError
from solver.model import Instance
from solver.semantics import GroupView

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Above this many item x instance pairs CP-SAT models are skipped for greedy + bounds.
SAT_PAIR_LIMIT = 150_000
#: Loss sets enumerated for the resilience worst case.
RESILIENCE_ENUM_LIMIT = 5_000
#: CP-SAT re-packings allowed for loss sets whose orphans do not fit greedily.
RESILIENCE_SAT_LIMIT = 20
#: Relative tolerance when comparing float loads with capacity.
EPS = 1e-9


class PlanUsageError(ValueError):
    """A planning request that cannot be carried out as given (bad capacity, range ...)."""


# --------------------------------------------------------------------------- problem data


@dataclass(frozen=True, eq=False)
class PlanItems:
    """What is packed: items with loads and where their state is today.

    Attributes
    ----------
    raw
        Item sizes in *raw* units (weights, or lag when planning from lag).
    divisor
        ``load = raw / divisor`` (``catch_up_seconds``, else 1).
    labels
        Human-readable item names (``"T-3"``, ``"clicks+views-3"``, ``"0_1#standby1"``).
    parts
        Topic-partitions (or task replicas) of each item.
    prev_parts, prev_state
        Partitions of the item that have a previous owner and their summed
        ``move_costs``.
    held
        Per item, member index -> (partitions, state) the member holds today.
    move_parts, move_state
        Partitions and ``move_costs`` of the whole item (what moves when a
        planned item is moved again, e.g. after a failure).
    groups
        Anti-affinity group of each item (-1: none), or ``None``.
    member_ids
        Today's members (input order); ``held`` indexes them.
    multipliers
        Today's members' capacity multipliers.
    partitions
        Planned topic-partitions (or task replicas).
    not_joinable
        Partitions left out as not joinable.
    notes
        Facts worth telling the user (ignored subscriptions ...).
    """

    raw: FloatArray
    divisor: float
    labels: tuple[str, ...]
    parts: tuple[tuple[tuple[str, int], ...], ...]
    prev_parts: IntArray
    prev_state: FloatArray
    held: tuple[dict[int, tuple[int, float]], ...]
    move_parts: IntArray
    move_state: FloatArray
    groups: IntArray | None
    member_ids: tuple[str, ...]
    multipliers: FloatArray
    partitions: int
    not_joinable: int = 0
    notes: tuple[str, ...] = ()

    @property
    def n_items(self) -> int:
        """Number of items."""
        return int(self.raw.size)

    def cost(self, i: int, j: int) -> tuple[int, float]:
        """(partitions, state) moved when item ``i`` goes to member index ``j`` (new instances: ``j >= m``)."""
        h = self.held[i].get(j)
        if h is None:
            return int(self.prev_parts[i]), float(self.prev_state[i])
        return int(self.prev_parts[i]) - h[0], float(self.prev_state[i]) - h[1]


def consumer_items(instance: Instance, catch_up_seconds: float | None = None) -> PlanItems:
    """Build the planning items of a consumer-protocol instance (see the module docstring)."""
    view = GroupView(instance)
    prev = view.previous_owners
    planned = [t for t in instance.topics if view.subscribers[t]] if instance.members else list(instance.topics)
    notes: list[str] = []
    subs = {tuple(sorted(m.topics)) for m in instance.members}
    if len(subs) > 1:
        notes.append("members subscribe to different topics; the plan treats every instance as a replica "
                     "subscribing to all planned topics")
    planned_set = set(planned)
    raw: list[float] = []
    labels: list[str] = []
    parts: list[tuple[tuple[str, int], ...]] = []
    grouped: set[str] = set()
    not_joinable = 0
    for group in instance.copartition:
        topics = [t for t in group if t in planned_set]
        if not topics:
            continue
        grouped.update(topics)
        lim = view.limits[topics[0]]
        not_joinable += sum(instance.topics[t].partitions - lim for t in topics)
        ws = [instance.topics[t].weight_array() for t in topics]
        for p in range(lim):
            raw.append(float(sum(w[p] for w in ws)))
            labels.append(f"{'+'.join(topics)}-{p}")
            parts.append(tuple((t, p) for t in topics))
    for t in planned:
        if t in grouped:
            continue
        w = instance.topics[t].weight_array()
        for p in range(instance.topics[t].partitions):
            raw.append(float(w[p]))
            labels.append(f"{t}-{p}")
            parts.append(((t, p),))
    n = len(raw)
    prev_parts = np.zeros(n, dtype=np.int64)
    prev_state = np.zeros(n, dtype=np.float64)
    move_parts = np.zeros(n, dtype=np.int64)
    move_state = np.zeros(n, dtype=np.float64)
    held: list[dict[int, tuple[int, float]]] = []
    costs = {t: instance.topics[t].move_cost_array() for t in planned}
    for i, item in enumerate(parts):
        h: dict[int, tuple[int, float]] = {}
        for t, p in item:
            c = float(costs[t][p])
            move_parts[i] += 1
            move_state[i] += c
            o = int(prev[t][p])
            if o >= 0:
                prev_parts[i] += 1
                prev_state[i] += c
                a, b = h.get(o, (0, 0.0))
                h[o] = (a + 1, b + c)
        held.append(h)
    return PlanItems(
        raw=np.asarray(raw, dtype=np.float64),
        divisor=float(catch_up_seconds) if catch_up_seconds else 1.0,
        labels=tuple(labels),
        parts=tuple(parts),
        prev_parts=prev_parts,
        prev_state=prev_state,
        held=tuple(held),
        move_parts=move_parts,
        move_state=move_state,
        groups=None,
        member_ids=instance.member_ids,
        multipliers=np.array([m.capacity for m in instance.members], dtype=np.float64),
        partitions=sum(len(p) for p in parts),
        not_joinable=not_joinable,
        notes=tuple(notes),
    )


def streams_items(instance: Instance, active_load: float = 1.0, standby_load: float = 1.0) -> PlanItems:
    """Build the planning items of a Kafka Streams instance.

    Every task gives one *active* item of load ``active_load``; every stateful
    task also ``num_standby_replicas`` *standby* items of load ``standby_load``;
    the items of one task form an anti-affinity group (distinct instances).
    ``capacity`` is then in the same unit (e.g. tasks per instance); a client's
    ``capacity`` (stream threads) is its multiplier.

    Moves count *restorations*: a replica placed on a client that held neither
    the task's active nor a standby of it.  ``moved_partitions`` counts such
    replicas; ``moved_state`` sums their tasks' state stores (KIP-262 ``stores``;
    0 for stateless tasks), as the bytes to restore are not in the input.
    """
    spec = instance.streams
    clients = spec.clients
    cindex = {c.id: j for j, c in enumerate(clients)}
    has: dict[str, set[int]] = {}
    for c in clients:
        for t in (*c.active, *c.standby):
            has.setdefault(t, set()).add(cindex[c.id])
    k = int(spec.config.num_standby_replicas)
    raw: list[float] = []
    labels: list[str] = []
    parts: list[tuple[tuple[str, int], ...]] = []
    groups: list[int] = []
    held: list[dict[int, tuple[int, float]]] = []
    prev_parts: list[int] = []
    prev_state: list[float] = []
    for g, task in enumerate(spec.tasks):
        state = float(task.store_count)
        replicas = [("active", active_load)]
        if task.stateful:
            replicas += [(f"standby{r + 1}", standby_load) for r in range(k)]
        for r, (role, load) in enumerate(replicas):
            raw.append(float(load))
            labels.append(f"{task.id}#{role}")
            parts.append(((task.id, r),))
            groups.append(g)
            held.append({j: (1, state) for j in has.get(task.id, ())})
            prev_parts.append(1)
            prev_state.append(state)
    n = len(raw)
    return PlanItems(
        raw=np.asarray(raw, dtype=np.float64),
        divisor=1.0,
        labels=tuple(labels),
        parts=tuple(parts),
        prev_parts=np.asarray(prev_parts, dtype=np.int64),
        prev_state=np.asarray(prev_state, dtype=np.float64),
        held=tuple(held),
        move_parts=np.ones(n, dtype=np.int64),
        move_state=np.asarray(prev_state, dtype=np.float64),
        groups=np.asarray(groups, dtype=np.int64),
        member_ids=spec.client_ids,
        multipliers=np.array([float(c.capacity) for c in clients], dtype=np.float64),
        partitions=n,
        notes=(f"streams: {len(spec.tasks)} tasks, {k} standby replica(s) per stateful task, "
               f"active load {active_load:g}, standby load {standby_load:g}",),
    )


# --------------------------------------------------------------------------- fleets


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


@dataclass(frozen=True)
class PlanConfig:
    """Planning parameters (see :func:`plan`)."""

    capacity: float
    resilience: int = 0
    range: tuple[int, int] | None = None
    catch_up_seconds: float | None = None
    lag_threshold: float = 10.0
    new_capacity: float = 1.0
    time_limit: float = 10.0
    seed: int = 0
    kafka: bool = True
    sat_pair_limit: int = SAT_PAIR_LIMIT
    active_load: float = 1.0
    standby_load: float = 1.0


class Planner:
    """Shared state of one planning run: items, integer data, fleets, cached solves."""

    def __init__(self, items: PlanItems, cfg: PlanConfig) -> None:
        self.items = items
        self.cfg = cfg
        self.m = len(items.member_ids)
        self.cap_raw = cfg.capacity * items.divisor
        mult = items.multipliers if self.m else np.zeros(0)
        self.member_caps = mult * self.cap_raw
        self.new_cap = cfg.new_capacity * self.cap_raw
        # Pool order: today's members by capacity (largest first, input order on ties), then new ones.
        self.pool_order = sorted(range(self.m), key=lambda j: (-mult[j], j))
        n_max = self.m + max(items.n_items, 1)
        pool_caps = [self.member_caps[j] for j in self.pool_order] + [self.new_cap] * (n_max - self.m)
        self.pool_members = [*self.pool_order, *range(self.m, n_max)]
        self.ints = bp.integerize(items.raw, np.asarray(pool_caps, dtype=np.float64))
        self.pool_caps_up = self.ints.caps_down  # packings use these
        self.pool_caps_lo = self.ints.caps_up  # proofs use these
        self.sizes_up = self.ints.sizes_up
        self.sizes_lo = self.ints.sizes_down
        caps = np.concatenate([self.member_caps, [self.new_cap]]) if self.m else np.array([self.new_cap])
        self.identical = bool(np.allclose(caps, caps[0], rtol=0, atol=0))
        self.state_scale = _cost_scale(items.prev_state, items.move_state)
        self.t0 = time.perf_counter()

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
        """True when an items x instances CP-SAT model is small enough to build."""
        return self.items.n_items * max(n_bins, 1) <= self.cfg.sat_pair_limit


def _cost_scale(*arrays: FloatArray) -> float:
    vals = np.concatenate([np.asarray(a, dtype=np.float64) for a in arrays]) if arrays else np.zeros(0)
    f = bp.decimal_scale(vals)
    if f is not None:
        return float(f)
    top = float(vals.max()) if vals.size else 1.0
    return 1e6 / top if top > 0 else 1.0


# --------------------------------------------------------------------------- validation


def check_config(cfg: PlanConfig) -> None:
    """Raise :class:`PlanUsageError` for a request that makes no sense."""
    if not (cfg.capacity > 0 and math.isfinite(cfg.capacity)):
        raise PlanUsageError(f"--capacity must be a positive number, got {cfg.capacity:g}")
    if cfg.resilience < 0:
        raise PlanUsageError(f"--resilience must be >= 0, got {cfg.resilience}")
    if cfg.catch_up_seconds is not None and not (cfg.catch_up_seconds > 0 and math.isfinite(cfg.catch_up_seconds)):
        raise PlanUsageError(f"--catch-up-seconds must be positive, got {cfg.catch_up_seconds:g}")
    if not cfg.lag_threshold > 0:
        raise PlanUsageError(f"--lag-threshold must be positive, got {cfg.lag_threshold:g}")
    if not cfg.new_capacity > 0:
        raise PlanUsageError(f"new instance capacity multiplier must be positive, got {cfg.new_capacity:g}")
    if cfg.time_limit is not None and not cfg.time_limit > 0:
        raise PlanUsageError(f"--time-limit must be positive, got {cfg.time_limit:g}")
    if cfg.range is not None:
        a, b = cfg.range
        if a < 1 or b < a:
            raise PlanUsageError(f"--range {a}:{b} is empty or starts below 1 (use A:B with 1 <= A <= B)")


def parse_range(text: str) -> tuple[int, int]:
    """Parse ``"A:B"`` (both inclusive) or a single ``"N"``.

    Examples
    --------
    >>> parse_range("3:6"), parse_range("4")
    ((3, 6), (4, 4))
    """
    a, sep, b = text.partition(":")
    try:
        lo = int(a)
        hi = int(b) if sep else lo
    except ValueError:
        raise PlanUsageError(f"--range expects A:B with integers, got {text!r}") from None
    if lo < 1 or hi < lo:
        raise PlanUsageError(f"--range {text} is empty or starts below 1 (use A:B with 1 <= A <= B)")
    return lo, hi


def check_items(pl: Planner) -> None:
    """Raise :class:`InfeasibleError` when an item is larger than every instance can hold."""
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


# --------------------------------------------------------------------------- minimum instance count


@dataclass
class Minimum:
    """The minimum instance count and how it was shown."""

    min_instances: int | None
    lower_bound: int
    bound_name: str
    upper_bound: int
    proof_kind: str
    proof: str
    bins: IntArray | None
    feasible: dict[int, bool] = field(default_factory=dict)
    seconds: float = 0.0


def greedy_count(pl: Planner, best_fit: bool) -> tuple[int, IntArray | None]:
    """Instances first-fit (or best-fit) decreasing opens, in pool order."""
    caps = pl.prefix_caps(pl.m + max(pl.items.n_items, 1))
    fn = bp.best_fit_decreasing if best_fit else bp.first_fit_decreasing
    bins = fn(pl.sizes_up, caps, pl.items.groups)
    if bins is None:
        return 0, None
    return (int(bins.max()) + 1 if bins.size else 0), bins


def lower_bound(pl: Planner) -> tuple[int, str]:
    """Best lower bound on the instance count (valid for the real data)."""
    s = pl.sizes_lo
    g = pl.items.groups
    if pl.items.n_items == 0:
        return 0, "no load"
    if pl.identical:
        cap = int(pl.pool_caps_lo[0])
        return bp.identical_bound(s, cap, g)
    pool = pl.prefix_caps(pl.m + pl.items.n_items, proof=True)
    lb, name = bp.pool_bound(s, pool, g)
    # Items too large for the smaller instances need one of the larger ones each (at most one per instance).
    return lb, name


def feasible(pl: Planner, n: int, time_limit: float, hint: IntArray | None = None) -> tuple[str, IntArray | None]:
    """Is there a packing into the ``n`` best instances? ``(status, bins)``: ``yes``/``no``/``unknown``."""
    if n <= 0:
        return ("yes", np.zeros(0, dtype=np.int64)) if pl.items.n_items == 0 else ("no", None)
    caps = pl.prefix_caps(n)
    g = pl.items.groups
    for greedy in (bp.first_fit_decreasing, bp.best_fit_decreasing):
        b = greedy(pl.sizes_up, caps, g)
        if b is not None:
            return "yes", b
    if not pl.small(n):
        return "unknown", None
    out = bp.sat_pack(pl.sizes_up, caps, g, time_limit=time_limit, seed=pl.cfg.seed, hint=hint)
    if out.status == "optimal":
        return "yes", out.bins
    if out.status == "infeasible":
        if pl.ints.exact:
            return "no", None
        proof = bp.sat_pack(pl.sizes_lo, pl.prefix_caps(n, proof=True), g, time_limit=time_limit,
                            seed=pl.cfg.seed)
        return ("no", None) if proof.status == "infeasible" else ("unknown", None)
    return "unknown", None


def minimum(pl: Planner) -> Minimum:
    """Smallest feasible instance count with its proof (module docstring, *Minimum*)."""
    t0 = time.perf_counter()
    lb, name = lower_bound(pl)
    if pl.items.n_items == 0:
        return Minimum(0, 0, name, 0, "bound", "nothing to assign: 0 instances", np.zeros(0, dtype=np.int64),
                       {0: True}, time.perf_counter() - t0)
    ub, bins = greedy_count(pl, best_fit=False)
    ub2, bins2 = greedy_count(pl, best_fit=True)
    if bins is None or (bins2 is not None and ub2 < ub):
        ub, bins = ub2, bins2
    if bins is None:
        raise InfeasibleError("no packing found even with one instance per item (anti-affinity groups larger "
                              "than the fleet?)")
    feas: dict[int, bool] = {ub: True}
    if ub > lb:
        # Greedy did not meet the bound: try to pack into fewer instances (local search, then CP-SAT).
        improved = _shrink(pl, bins, ub, lb)
        if improved is not None:
            ub, bins = improved
            feas[ub] = True
    proven = lb
    deadline = time.perf_counter() + 3 * pl.cfg.time_limit
    n = lb
    while n < ub:
        left = max(0.5, deadline - time.perf_counter())
        st, b = feasible(pl, n, min(pl.cfg.time_limit, left))
        if st == "yes":
            assert b is not None
            ub, bins = n, b
            feas[n] = True
            break
        if st == "no":
            feas[n] = False
            proven = n + 1
            n += 1
            continue
        break  # unknown: stop, report the gap
    if ub == lb:
        kind = "bound"
        proof = f"lower bound {name} = {lb} equals the instances of a packing found"
    elif proven == ub:
        kind = "cp-sat"
        proof = (f"CP-SAT proved {ub - 1} instances infeasible (status INFEASIBLE); "
                 f"best lower bound {name} = {lb}")
    else:
        kind = "gap"
        proof = (f"not proven within the time limit: best bound {proven} "
                 f"({name} = {lb}{', then CP-SAT infeasibility proofs' if proven > lb else ''}), "
                 f"best packing {ub} instances")
    return Minimum(ub, proven, name, ub, kind, proof, bins, feas,
                   time.perf_counter() - t0)


def _shrink(pl: Planner, bins: IntArray, ub: int, lb: int) -> tuple[int, IntArray] | None:
    """Try to empty the last instance of a greedy packing by moving its items into the others' slack."""
    best: tuple[int, IntArray] | None = None
    cur_bins, cur = bins.copy(), ub
    while cur > lb:
        caps = pl.prefix_caps(cur - 1)
        # Pack into cur - 1 instances: keep the first cur-1 bins' items, re-place the rest best fit.
        keep = cur_bins < cur - 1
        loads = bp.bin_loads(pl.sizes_up[keep], cur_bins[keep], cur - 1)
        forbidden: dict[int, set[int]] = {}
        if pl.items.groups is not None:
            for i in np.flatnonzero(keep).tolist():
                g = int(pl.items.groups[i])
                if g >= 0:
                    forbidden.setdefault(g, set()).add(int(cur_bins[i]))
        rest = np.flatnonzero(~keep)
        g_rest = pl.items.groups[rest] if pl.items.groups is not None else None
        placed = bp.pack_into(pl.sizes_up[rest], caps - loads, g_rest, forbidden)
        if placed is None:
            break
        nb = cur_bins.copy()
        nb[rest] = placed
        cur_bins, cur = nb, cur - 1
        best = (cur, nb)
    return best


# --------------------------------------------------------------------------- balance


@dataclass
class Balance:
    """Best-balanced assignment on ``n`` instances."""

    status: str
    max_utilisation: float | None
    bound: float | None
    bins: IntArray | None
    loads: FloatArray | None


def balance(pl: Planner, n: int) -> Balance:
    """Minimise the maximum utilisation on the ``n`` best instances (within capacity).

    CP-SAT when the model is small enough, else longest-processing-time first
    plus local search with the continuous bound.  Utilisations are computed
    from real loads; the bound is valid for the real data.
    """
    items = pl.items
    if items.n_items == 0:
        return Balance("optimal", 0.0, 0.0, np.zeros(0, dtype=np.int64), np.zeros(n))
    caps = pl.prefix_caps(n)
    caps_real = caps.astype(np.float64)
    s = pl.sizes_up
    g = items.groups
    lpt = bp.lpt(s, caps, g)
    if lpt is not None:
        lpt = bp.improve_max_load(s, caps, lpt, g)
    # Continuous bound: total over total capacity, the biggest item over the biggest instance.
    lo_caps = pl.prefix_caps(n, proof=True).astype(np.float64)
    bound = max(float(pl.sizes_lo.sum()) / float(lo_caps.sum()), float(pl.sizes_lo.max()) / float(lo_caps.max()))
    best_bins = lpt
    status = "feasible"
    if pl.small(n):
        out = bp.sat_min_max(s, caps, g, time_limit=pl.cfg.time_limit, seed=pl.cfg.seed, hint=lpt)
        if out.status == "infeasible":
            return Balance("infeasible", None, None, None, None)
        if out.bins is not None:
            best_bins = _better(s, caps_real, best_bins, out.bins)
            status = out.status
            if out.bound is not None:
                b = out.bound / float(caps[0]) if pl.identical else (out.bound - 1) / 10 ** 6
                if pl.ints.exact:
                    bound = max(bound, b)
    if best_bins is None:
        return Balance("unknown", None, bound, None, None)
    loads_raw = np.bincount(best_bins, weights=items.raw, minlength=n)
    fcaps = _real_caps(pl, n)
    util = float((loads_raw / fcaps).max())
    if util > 1 + EPS:
        return Balance("infeasible" if status == "optimal" else "unknown", None, bound, None, None)
    if status == "feasible" and util <= bound + 1e-12:
        status = "optimal"
    if status == "optimal":
        bound = util
    return Balance(status, util, min(bound, util), best_bins, loads_raw / items.divisor)


def _real_caps(pl: Planner, n: int) -> FloatArray:
    mult_sorted = [pl.member_caps[j] for j in pl.pool_order]
    caps = [*mult_sorted[:n]] + [pl.new_cap] * max(0, n - pl.m)
    return np.asarray(caps, dtype=np.float64)


def _better(s: IntArray, caps: FloatArray, a: IntArray | None, b: IntArray) -> IntArray:
    if a is None:
        return b
    ua = (np.bincount(a, weights=s.astype(np.float64), minlength=caps.size) / caps).max()
    ub = (np.bincount(b, weights=s.astype(np.float64), minlength=caps.size) / caps).max()
    return a if ua <= ub else b


# --------------------------------------------------------------------------- fewest moves


@dataclass
class Moves:
    """Fewest moves from today's assignment to ``n`` instances within capacity."""

    status: str
    moved_partitions: int | None
    moved_state: float | None
    bound_partitions: int
    bound_state: float
    kept: tuple[int, ...]
    owner: IntArray | None  # item -> member index (>= m: new instance)
    max_utilisation: float | None


def move_costs_matrix(pl: Planner, fleet: Fleet) -> tuple[IntArray, IntArray]:
    """Integer (state, partitions) cost of every item on every fleet instance."""
    items = pl.items
    k = len(fleet.members)
    st = np.empty((items.n_items, k), dtype=np.int64)
    pa = np.empty((items.n_items, k), dtype=np.int64)
    sc = pl.state_scale
    base_s = np.round(items.prev_state * sc).astype(np.int64)
    st[:] = base_s[:, None]
    pa[:] = items.prev_parts[:, None]
    col = {j: c for c, j in enumerate(fleet.members)}
    for i, h in enumerate(items.held):
        for j, (p, s) in h.items():
            c = col.get(j)
            if c is not None:
                st[i, c] = base_s[i] - round(s * sc)
                pa[i, c] = int(items.prev_parts[i]) - p
    return st, pa


def _keep_values(pl: Planner, fleet: Fleet, caps: IntArray, stage: str) -> FloatArray:
    """Upper bound per today's member on the (state or partitions) it can keep: fractional knapsack."""
    items = pl.items
    vals = np.zeros(pl.m, dtype=np.float64)
    per: dict[int, list[tuple[float, float]]] = {}
    for i, h in enumerate(items.held):
        for j, (p, s) in h.items():
            per.setdefault(j, []).append((float(s if stage == "state" else p), float(pl.sizes_lo[i])))
    for j, lst in per.items():
        cap = float(caps[j])
        lst.sort(key=lambda vw: -(vw[0] / vw[1]) if vw[1] > 0 else -math.inf)
        tot = 0.0
        for v, w in lst:
            if w <= cap:
                tot += v
                cap -= w
            else:
                tot += v * cap / w if w > 0 else v
                break
        vals[j] = tot
    return vals


def moves_bound(pl: Planner, fleet: Fleet) -> tuple[float, int]:
    """Lower bounds on moved state and moved partitions (knapsack relaxation per kept member).

    Each kept member keeps at most a capacity-bounded (fractional) knapsack of
    what it holds today; only the ``n`` best of those can be kept.
    """
    items = pl.items
    caps = pl.int_caps(pl.member_caps, proof=True) if pl.m else np.zeros(0, dtype=np.int64)
    out = []
    for stage in ("state", "parts"):
        vals = _keep_values(pl, fleet, caps, stage)
        keep = np.sort(vals)[::-1][: min(fleet.choose, pl.m)].sum() if pl.m else 0.0
        total = float(items.prev_state.sum()) if stage == "state" else float(items.prev_parts.sum())
        out.append(max(0.0, total - keep))
    st_b = out[0]
    pa_b = math.ceil(out[1] - 1e-9)
    return st_b, pa_b


def greedy_moves(pl: Planner, fleet: Fleet) -> tuple[tuple[int, ...], IntArray] | None:
    """Keep what fits where it is, re-place the rest best fit (the warm start and large-instance answer)."""
    caps_all = pl.int_caps(fleet.caps)
    col = {j: c for c, j in enumerate(fleet.members)}
    if fleet.choose < len(fleet.members):
        vals = _keep_values(pl, fleet, pl.int_caps(pl.member_caps), "state")
        vals2 = _keep_values(pl, fleet, pl.int_caps(pl.member_caps), "parts")
        order = sorted(range(pl.m), key=lambda j: (-vals[j], -vals2[j], -pl.member_caps[j], j))
        # Prefer large instances too so that the load still fits; try a few choices.
        choices = [sorted(order[: fleet.choose]), sorted(pl.pool_order[: fleet.choose])]
    else:
        choices = [list(fleet.members)]
    found: list[tuple[tuple[int, ...], IntArray]] = []
    for kept in choices:
        res = _greedy_on(pl, kept, caps_all, col)
        if res is not None:
            found.append((tuple(kept), res))
            break
    for kept in choices:
        res = _sticky_decreasing(pl, kept, caps_all, col)
        if res is not None:
            found.append((tuple(kept), res))
            break
    # Also: pack from scratch (greedy, then the balanced packing) and give each packed instance to the
    # member that keeps the most of it (an assignment problem) -- robust when the fleet is tight.
    for packing in _fresh_packings(pl, fleet.choose):
        r = _relabel(pl, fleet, packing, caps_all)
        if r is not None:
            found.append(r)
    if not found:
        return None
    return min(found, key=lambda kr: _cost_of(pl, fleet, kr[1]))


def _cost_of(pl: Planner, fleet: Fleet, cols: IntArray) -> tuple[float, int]:
    owner = np.asarray(fleet.members, dtype=np.int64)[cols]
    tot_s, tot_p = 0.0, 0
    for i in range(pl.items.n_items):
        p, s = pl.items.cost(i, int(owner[i]))
        tot_s += s
        tot_p += p
    return round(tot_s, 9), tot_p


def _fresh_packings(pl: Planner, n: int) -> list[IntArray]:
    """Packings of every item into ``n`` identical-or-best instances (bins 0..n-1), ignoring today's owners."""
    caps = pl.prefix_caps(n)
    out = []
    for fn in (bp.first_fit_decreasing, bp.best_fit_decreasing):
        b = fn(pl.sizes_up, caps, pl.items.groups)
        if b is not None:
            out.append(b)
    return out


def _relabel(pl: Planner, fleet: Fleet, packing: IntArray, caps_all: IntArray
             ) -> tuple[tuple[int, ...], IntArray] | None:
    """Give packed bin ``b`` to fleet instance ``c`` maximising the (state, partitions) that stay put."""
    from ortools.graph.python import linear_sum_assignment

    items = pl.items
    k = len(fleet.members)
    nb = int(packing.max()) + 1 if packing.size else 0
    if nb > k:
        return None
    col = {j: c for c, j in enumerate(fleet.members)}
    sc = pl.state_scale
    vs = np.zeros((k, k), dtype=np.float64)
    vp = np.zeros((k, k), dtype=np.int64)
    for i, h in enumerate(items.held):
        b = int(packing[i])
        for j, (p, sv) in h.items():
            c = col.get(j)
            if c is not None:
                vs[b, c] += sv
                vp[b, c] += p
    loads = np.bincount(packing, weights=pl.sizes_up.astype(np.float64), minlength=k)
    big = int(vp.sum()) + 1
    cost = -(np.round(vs * sc).astype(np.int64) * big + vp)
    lsa = linear_sum_assignment.SimpleLinearSumAssignment()
    for b in range(k):
        for c in range(k):
            if b >= nb or loads[b] <= caps_all[c]:  # dummy bins (b >= nb) fit anywhere
                lsa.add_arc_with_cost(b, c, int(cost[b, c]) if b < nb else 0)
    if lsa.solve() != lsa.OPTIMAL:
        return None
    mate = np.array([lsa.right_mate(b) for b in range(k)], dtype=np.int64)
    cols = mate[packing]
    kept = tuple(sorted(fleet.members[int(c)] for c in mate[:nb]))
    if len(kept) < fleet.choose:  # pad with unused members (they stay, empty)
        rest = [j for j in fleet.members if j not in set(kept)]
        kept = tuple(sorted(kept + tuple(rest[: fleet.choose - len(kept)])))
    return kept, cols


def _sticky_decreasing(pl: Planner, kept: Sequence[int], caps_all: IntArray, col: dict[int, int]) -> IntArray | None:
    """Largest item first: stay with today's owner when it is kept and has room, else best fit elsewhere."""
    items = pl.items
    s = pl.sizes_up
    kept_cols = np.asarray([col[j] for j in kept], dtype=np.int64)
    res = np.full(caps_all.size, -1, dtype=np.int64)
    res[kept_cols] = caps_all[kept_cols]
    owner = np.full(items.n_items, -1, dtype=np.int64)
    g = items.groups
    used: dict[int, set[int]] = {}
    for i in np.argsort(-s, kind="stable").tolist():
        gi = -1 if g is None else int(g[i])
        bad = used.get(gi, set()) if gi >= 0 else set()
        home = [col[j] for j, _ in sorted(items.held[i].items(), key=lambda kv: (-kv[1][1], -kv[1][0]))
                if j in col]
        c = next((h for h in home if res[h] >= s[i] and h not in bad), -1)
        if c < 0:
            ok = res >= s[i]
            if bad:
                ok[list(bad)] = False
            if not ok.any():
                return None
            cand = np.flatnonzero(ok)
            c = int(cand[np.argmin(res[cand])])
        owner[i] = c
        res[c] -= int(s[i])
        if gi >= 0:
            used.setdefault(gi, set()).add(c)
    return owner


def _greedy_on(pl: Planner, kept: Sequence[int], caps_all: IntArray, col: dict[int, int]) -> IntArray | None:
    items = pl.items
    s = pl.sizes_up
    kept_cols = [col[j] for j in kept]
    residual = {c: int(caps_all[c]) for c in kept_cols}
    owner = np.full(items.n_items, -1, dtype=np.int64)
    g = items.groups
    used: dict[int, set[int]] = {}
    # Items by how much state staying saves per unit of load.
    cand = []
    for i, h in enumerate(items.held):
        best = max(((sv, p, j) for j, (p, sv) in h.items() if j in col and col[j] in residual), default=None)
        if best is not None:
            cand.append((-(best[0] + 1e-9 * best[1]) / max(int(s[i]), 1), i, col[best[2]]))
    cand.sort()
    for _, i, c in cand:
        gi = -1 if g is None else int(g[i])
        if residual[c] >= s[i] and not (gi >= 0 and c in used.get(gi, ())):
            owner[i] = c
            residual[c] -= int(s[i])
            if gi >= 0:
                used.setdefault(gi, set()).add(c)
    rest = np.flatnonzero(owner < 0)
    if rest.size:
        res_arr = np.array([residual[c] for c in kept_cols], dtype=np.int64)
        forb = {gg: {kept_cols.index(c) for c in cs} for gg, cs in used.items()}
        placed = bp.pack_into(s[rest], res_arr, g[rest] if g is not None else None, forb)
        if placed is None:
            return None
        owner[rest] = np.asarray(kept_cols, dtype=np.int64)[placed]
    return owner


def fewest_moves(pl: Planner, n: int) -> Moves:
    """Fewest (state, then partitions) moves to an assignment within capacity on ``n`` instances."""
    items = pl.items
    fleet = pl.fleet(n)
    b_state, b_parts = moves_bound(pl, fleet)
    if items.n_items == 0:
        return Moves("optimal", 0, 0.0, 0, 0.0, tuple(fleet.members[:n]), np.zeros(0, dtype=np.int64), 0.0)
    g = greedy_moves(pl, fleet)
    st_cost, pa_cost = move_costs_matrix(pl, fleet)
    best: tuple[tuple[int, ...], IntArray] | None = None
    status = "unknown"
    if g is not None:
        best = g
        status = "feasible"
    if pl.small(len(fleet.members)):
        out = _sat_moves(pl, fleet, st_cost, pa_cost, g)
        if out is not None:
            status, best = out[0], (out[1], out[2]) if out[2] is not None else best
    if best is None:
        return Moves(status if status == "infeasible" else "unknown", None, None, b_parts, b_state, (), None, None)
    kept, cols = best
    owner = np.asarray(fleet.members, dtype=np.int64)[cols]
    rows = np.arange(items.n_items)
    mp = int(pa_cost[rows, cols].sum())
    ms = float(sum(items.cost(i, int(owner[i]))[1] for i in range(items.n_items)))
    if status == "feasible" and round(ms * pl.state_scale) <= math.ceil(b_state * pl.state_scale - 1e-6) \
            and mp <= b_parts:
        status = "optimal"
    if status == "optimal":
        b_state, b_parts = ms, mp
    caps = fleet.caps
    loads = np.bincount(cols, weights=items.raw, minlength=len(fleet.members))
    used = np.asarray([fleet.members.index(j) for j in kept], dtype=np.int64)
    util = float((loads[used] / caps[used]).max()) if used.size else 0.0
    return Moves(status, mp, ms, min(b_parts, mp), min(b_state, ms), tuple(kept), owner, util)


def _sat_moves(pl: Planner, fleet: Fleet, st_cost: IntArray, pa_cost: IntArray,
               hint: tuple[tuple[int, ...], IntArray] | None) -> tuple[str, tuple[int, ...], IntArray | None] | None:
    """CP-SAT: choose kept members and places; minimise moved state, then moved partitions."""
    from ortools.sat.python import cp_model

    items = pl.items
    s = pl.sizes_up
    caps = pl.int_caps(fleet.caps)
    k = len(fleet.members)
    ni = items.n_items
    model = cp_model.CpModel()
    x = [[model.new_bool_var(f"x{i}_{c}") for c in range(k)] for i in range(ni)]
    for i in range(ni):
        model.add_exactly_one(x[i])
    shrinking = fleet.choose < k
    y = [model.new_bool_var(f"y{c}") for c in range(k)] if shrinking else None
    loads = []
    for c in range(k):
        load = sum(x[i][c] * int(s[i]) for i in range(ni))
        loads.append(load)
        if y is not None:
            model.add(load <= int(caps[c]) * y[c])
        else:
            model.add(load <= int(caps[c]))
    if y is not None:
        model.add(sum(y) == fleet.choose)
    if items.groups is not None:
        by: dict[int, list[int]] = {}
        for i, gg in enumerate(items.groups.tolist()):
            if gg >= 0:
                by.setdefault(gg, []).append(i)
        for lst in by.values():
            if len(lst) > 1:
                for c in range(k):
                    model.add_at_most_one(x[i][c] for i in lst)
    # New instances are interchangeable: order them by load (symmetry breaking).
    new_cols = [c for c, j in enumerate(fleet.members) if j >= pl.m]
    for a, b in itertools.pairwise(new_cols):
        model.add(loads[a] >= loads[b])
    if hint is not None:
        kept_h, cols_h = hint
        hc = cols_h.copy()
        if new_cols:
            # Relabel new instances of the hint by decreasing load to respect the symmetry breaking.
            nl = {c: float(s[hc == c].sum()) for c in new_cols}
            order = sorted(new_cols, key=lambda c: -nl[c])
            remap = dict(zip(order, new_cols, strict=True))
            hc = np.array([remap.get(int(c), int(c)) for c in hc], dtype=np.int64)
        for i in range(ni):
            for c in range(k):
                model.add_hint(x[i][c], int(hc[i]) == c)
        if y is not None:
            kept_cols = {fleet.members.index(j) for j in kept_h}
            for c in range(k):
                model.add_hint(y[c], c in kept_cols)
    state_expr = sum(int(st_cost[i, c]) * x[i][c] for i in range(ni) for c in range(k) if st_cost[i, c])
    parts_expr = sum(int(pa_cost[i, c]) * x[i][c] for i in range(ni) for c in range(k) if pa_cost[i, c])
    solver = cp_model.CpSolver()
    bp.sat_parameters(solver, pl.cfg.time_limit, pl.cfg.seed)
    model.minimize(state_expr)
    code = solver.solve(model)
    st = bp.status_name(code)
    if st == "infeasible":
        return "infeasible", (), None
    if st not in ("optimal", "feasible"):
        return None
    stage1 = st
    best_state = round(solver.objective_value)
    sol = _read(solver, x)
    # Stage 2: fewest partitions among the best moved state found.
    model.add(state_expr <= best_state)
    model.clear_hints()
    for i in range(ni):
        for c in range(k):
            model.add_hint(x[i][c], int(sol[i]) == c)
    if y is not None:
        used = set(sol.tolist())
        # Hint y consistently with the stage-1 solution (kept = instances used, padded).
        yv = [c in used for c in range(k)]
        extra = fleet.choose - sum(yv)
        for c in range(k):
            if not yv[c] and extra > 0:
                yv[c] = True
                extra -= 1
            model.add_hint(y[c], yv[c])
    model.minimize(parts_expr)
    code2 = solver.solve(model)
    st2 = bp.status_name(code2)
    if st2 in ("optimal", "feasible"):
        sol = _read(solver, x)
    status = "optimal" if stage1 == "optimal" and st2 == "optimal" else "feasible"
    if y is not None:
        kept = tuple(fleet.members[c] for c in range(k) if solver.boolean_value(y[c])) if st2 in (
            "optimal", "feasible") else tuple(sorted({fleet.members[int(c)] for c in sol}))
    else:
        kept = tuple(fleet.members)
    return status, kept, sol


def _read(solver: Any, x: list[list[Any]]) -> IntArray:
    out = np.full(len(x), -1, dtype=np.int64)
    for i, row in enumerate(x):
        for c, v in enumerate(row):
            if solver.boolean_value(v):
                out[i] = c
                break
    return out


# --------------------------------------------------------------------------- resilience


@dataclass
class Resilience:
    """N-K resilience of a plan."""

    k: int
    fits: bool | None
    moved_partitions: int | None
    moved_state: float | None
    forced_moved_state: float | None
    worst_lost: tuple[str, ...]
    exact: bool
    note: str = ""


def resilience(pl: Planner, mv: Moves, k: int, min_n: int | None) -> Resilience:
    """After losing any ``k`` instances of the plan ``mv``: fit, and the worst-case fewest moves.

    *Fit.*  With identical instances, whether ``n - k`` instances hold the load
    does not depend on which are lost: it fits iff ``n - k >= min_instances``.
    With different capacities the worst loss is the ``k`` largest instances
    (the survivors of any other loss are at least as large, one by one), so
    feasibility is checked on the plan's ``n - k`` smallest.

    *Moves.*  Every item on a lost instance must move (``forced``).  For a loss
    set whose orphans fit into the survivors' free capacity, exactly those move;
    otherwise survivors must shed items too and CP-SAT finds the fewest.  The
    worst case is taken over *all* loss sets when there are at most
    :data:`RESILIENCE_ENUM_LIMIT` of them (``exact``), else the forced moves of
    the ``k`` instances holding the most state (a lower bound; ``exact`` false).
    Moving an item moves all of its partitions (they sit together in a plan).
    """
    items = pl.items
    kept = list(mv.kept)
    n = len(kept)
    if k == 0:
        return Resilience(0, True, 0, 0.0, 0.0, (), True)
    if mv.owner is None:
        return Resilience(k, None, None, None, None, (), False, "no plan for this n")
    if k >= n:
        return Resilience(k, items.n_items == 0, None, None, None, tuple(pl.member_name(j) for j in kept), True,
                          f"losing {k} of {n} instances leaves none")
    caps_by = {j: (pl.member_caps[j] if j < pl.m else pl.new_cap) for j in kept}
    # Fit: identical -> compare with the minimum; else test the smallest survivors.
    if pl.identical and min_n is not None:
        fits: bool | None = n - k >= min_n
    else:
        surv_caps = np.sort(np.asarray([caps_by[j] for j in kept]))[: n - k]
        st, _ = _fit_caps(pl, surv_caps)
        fits = {"yes": True, "no": False}.get(st)
    owner = mv.owner
    per_state = {j: float(items.move_state[owner == j].sum()) for j in kept}
    per_parts = {j: int(items.move_parts[owner == j].sum()) for j in kept}
    if fits is False:
        worst = sorted(kept, key=lambda j: (-per_state[j], j))[:k]
        return Resilience(k, False, None, None, float(sum(per_state[j] for j in worst)),
                          tuple(pl.member_name(j) for j in worst), True, "the load does not fit after this loss")
    total_sets = math.comb(n, k)
    worst_forced = sorted(kept, key=lambda j: (-per_state[j], -per_parts[j], j))[:k]
    forced_bound = float(sum(per_state[j] for j in worst_forced))
    if total_sets > RESILIENCE_ENUM_LIMIT:
        sets: list[tuple[int, ...]] = [tuple(worst_forced)]
        exact = False
    else:
        sets = list(itertools.combinations(kept, k))
        exact = True
    best: tuple[float, int, tuple[int, ...]] | None = None
    sat_calls = 0
    for lost in sets:
        r = _after_loss(pl, owner, kept, set(lost), caps_by, allow_sat=sat_calls < RESILIENCE_SAT_LIMIT)
        if r is None:
            exact = False
            continue
        if r[2]:
            sat_calls += 1
        state, parts = r[0], r[1]
        if state is None:
            return Resilience(k, False, None, None, forced_bound, tuple(pl.member_name(j) for j in lost), exact,
                              "the load does not fit after losing these instances")
        key = (state, parts, lost)
        if best is None or (key[0], key[1]) > (best[0], best[1]):
            best = key
    if best is None or not exact:
        # Not every loss set was settled: only the forced moves are a proven lower bound on the worst case.
        lower = max(forced_bound, best[0]) if best is not None else forced_bound
        return Resilience(k, fits, None, None, lower, tuple(pl.member_name(j) for j in worst_forced), False,
                          "worst case not settled for every loss set: at least the forced moves")
    return Resilience(k, fits, best[1], best[0], forced_bound, tuple(pl.member_name(j) for j in best[2]), True)


def _fit_caps(pl: Planner, caps_real: FloatArray) -> tuple[str, IntArray | None]:
    caps = pl.int_caps(np.asarray(caps_real))
    g = pl.items.groups
    for greedy in (bp.first_fit_decreasing, bp.best_fit_decreasing):
        b = greedy(pl.sizes_up, caps, g)
        if b is not None:
            return "yes", b
    if not pl.small(caps.size):
        return "unknown", None
    out = bp.sat_pack(pl.sizes_lo if not pl.ints.exact else pl.sizes_up,
                      pl.int_caps(np.asarray(caps_real), proof=True), g, time_limit=pl.cfg.time_limit,
                      seed=pl.cfg.seed)
    return {"optimal": "yes", "infeasible": "no"}.get(out.status, "unknown"), out.bins


def _after_loss(pl: Planner, owner: IntArray, kept: list[int], lost: set[int], caps_by: dict[int, float],
                allow_sat: bool) -> tuple[float | None, int, bool] | None:
    """Fewest (state, partitions) moves after losing ``lost``; ``(None, 0, used_sat)`` when it cannot fit."""
    items = pl.items
    surv = [j for j in kept if j not in lost]
    orphan = np.isin(owner, list(lost))
    forced_state = float(items.move_state[orphan].sum())
    forced_parts = int(items.move_parts[orphan].sum())
    s = pl.sizes_up
    surv_caps = pl.int_caps(np.asarray([caps_by[j] for j in surv]))
    col = {j: c for c, j in enumerate(surv)}
    loads = np.zeros(len(surv), dtype=np.int64)
    stay = np.flatnonzero(~orphan)
    np.add.at(loads, np.asarray([col[int(owner[i])] for i in stay], dtype=np.int64), s[stay])
    forb: dict[int, set[int]] = {}
    g = items.groups
    if g is not None:
        for i in stay.tolist():
            if g[i] >= 0:
                forb.setdefault(int(g[i]), set()).add(col[int(owner[i])])
    rest = np.flatnonzero(orphan)
    placed = bp.pack_into(s[rest], surv_caps - loads, g[rest] if g is not None else None, forb)
    if placed is not None:
        return forced_state, forced_parts, False
    if not allow_sat or not pl.small(len(surv)):
        return None
    # Survivors must shed items: CP-SAT, cost = whole item's state for every item that changes instance.
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    ni, k = items.n_items, len(surv)
    x = [[model.new_bool_var("") for _ in range(k)] for _ in range(ni)]
    for i in range(ni):
        model.add_exactly_one(x[i])
    for c in range(k):
        model.add(sum(x[i][c] * int(s[i]) for i in range(ni)) <= int(surv_caps[c]))
    if g is not None:
        by: dict[int, list[int]] = {}
        for i, gg in enumerate(g.tolist()):
            if gg >= 0:
                by.setdefault(gg, []).append(i)
        for lst in by.values():
            for c in range(k):
                model.add_at_most_one(x[i][c] for i in lst)
    sc = pl.state_scale
    stay_terms = []
    for i in stay.tolist():
        c = col[int(owner[i])]
        stay_terms.append((x[i][c], round(items.move_state[i] * sc), int(items.move_parts[i])))
    total_s = round(float(items.move_state.sum()) * sc)
    total_p = int(items.move_parts.sum())
    state_expr = total_s - sum(v * w for v, w, _ in stay_terms)
    parts_expr = total_p - sum(v * p for v, _, p in stay_terms)
    solver = cp_model.CpSolver()
    bp.sat_parameters(solver, pl.cfg.time_limit, pl.cfg.seed)
    model.minimize(state_expr)
    code = solver.solve(model)
    st = bp.status_name(code)
    if st == "infeasible":
        return None, 0, True
    if st != "optimal":
        return None
    best_state = round(solver.objective_value)
    model.add(state_expr <= best_state)
    model.minimize(parts_expr)
    code = solver.solve(model)
    if bp.status_name(code) != "optimal":
        return None
    return best_state / sc, round(solver.objective_value), True


# --------------------------------------------------------------------------- Kafka's answer


@dataclass
class KafkaRun:
    """What Kafka's assignor does on the plan's instances."""

    status: str
    moved_partitions: int | None = None
    moved_state: float | None = None
    max_utilisation: float | None = None
    fits: bool | None = None
    rounds: int | None = None
    copartition_violations: int | None = None


KafkaFn = Callable[[Instance, list[int], int], KafkaRun]


def kafka_consumer(instance: Instance, items: PlanItems, planner: Planner, kept: Sequence[int], n: int,
                   assignor: Any) -> KafkaRun:
    """Run Kafka's cooperative-sticky (until settled) on the kept members plus new ones.

    Every instance subscribes to all planned topics; kept members keep their
    ``owned`` and ``generation``.  Moves and loads are counted like the plan's
    (planned partitions only).
    """
    from dataclasses import replace

    from solver.model import Member
    from solver.result import Params

    topics = sorted({t for item in items.parts for t, _ in item})
    members = []
    for j in kept:
        if j < planner.m:
            members.append(replace(instance.members[j], topics=tuple(topics)))
        else:
            members.append(Member(id=planner.member_name(j), topics=tuple(topics), capacity=planner.cfg.new_capacity))
    inst = Instance(name=instance.name, protocol="consumer", topics=instance.topics, members=tuple(members),
                    copartition=())
    res = assignor.run(inst, Params(time_limit=planner.cfg.time_limit, seed=planner.cfg.seed,
                                    options={"rounds": "settle"}))
    asg = res.assignment
    where: dict[tuple[str, int], int] = {}
    for c, j in enumerate(kept):
        for t, parts in asg.members.get(planner.member_name(j), {}).items():
            for p in parts.tolist():
                where[(t, p)] = c
    view = GroupView(instance)
    prev = view.previous_owners
    mp = 0
    ms = 0.0
    loads = np.zeros(len(kept), dtype=np.float64)
    viol = 0
    kept_idx = list(kept)
    for item in items.parts:
        holders: set[int] = set()
        for t, p in item:
            owner_c = where.get((t, p))
            w = instance.topics[t].weight_array()[p]
            if owner_c is None:
                continue
            c = owner_c
            holders.add(c)
            loads[c] += w
            o = int(prev[t][p])
            if o >= 0 and (kept_idx[c] != o):
                mp += 1
                ms += float(instance.topics[t].move_cost_array()[p])
        if len(holders) > 1:
            viol += 1
    caps = np.asarray([planner.member_caps[j] if j < planner.m else planner.new_cap for j in kept])
    util = float((loads / caps).max()) if len(kept) else 0.0
    rounds = res.extra.get("rounds") if hasattr(res, "extra") else None
    return KafkaRun("ok", mp, ms, util, util <= 1 + EPS, rounds, viol)


def kafka_streams(instance: Instance, items: PlanItems, planner: Planner, kept: Sequence[int], n: int,
                  assignor: Any) -> KafkaRun:
    """Run Kafka Streams' high-availability assignor on the kept clients plus new ones."""
    import uuid as _uuid
    from dataclasses import replace

    from solver.result import Params
    from solver.streams_model import Client, StreamsSpec

    spec = instance.streams
    clients = []
    for j in kept:
        if j < planner.m:
            clients.append(spec.clients[j])
        else:
            pid = str(_uuid.UUID(int=(0xF << 124) + j))
            clients.append(Client(id=planner.member_name(j), process_id=pid,
                                  capacity=max(1, round(planner.cfg.new_capacity))))
    new_spec = StreamsSpec(tasks=spec.tasks, clients=tuple(clients), config=spec.config,
                           subtopologies=spec.subtopologies)
    inst = replace(instance, streams=new_spec)
    res = assignor.run(inst, Params(time_limit=planner.cfg.time_limit, seed=planner.cfg.seed))
    asg = res.assignment
    has: dict[str, set[str]] = {}
    for c in spec.clients:
        for t in (*c.active, *c.standby):
            has.setdefault(t, set()).add(c.id)
    stores = {t.id: float(t.store_count) for t in spec.tasks}
    loads = np.zeros(len(kept))
    mp, ms = 0, 0.0
    for c, j in enumerate(kept):
        ca = asg.get(planner.member_name(j))
        for t in ca.active:
            loads[c] += planner.cfg.active_load
            if planner.member_name(j) not in has.get(t, ()):
                mp += 1
                ms += stores[t]
        for t in ca.standby:
            loads[c] += planner.cfg.standby_load
            if planner.member_name(j) not in has.get(t, ()):
                mp += 1
                ms += stores[t]
    caps = np.asarray([planner.member_caps[j] if j < planner.m else planner.new_cap for j in kept])
    util = float((loads / caps).max()) if len(kept) else 0.0
    return KafkaRun("ok", mp, ms, util, util <= 1 + EPS, None, None)


# --------------------------------------------------------------------------- baselines


def baselines(pl: Planner, mn: Minimum, cfg: PlanConfig, protocol: str) -> list[dict[str, Any]]:
    """Instance counts people's rules of thumb ask for, against the proven minimum.

    - ``keda``: KEDA's Kafka scaler, ``ceil(total lag / lagThreshold)`` capped
      at the partition count (its default without ``allowIdleConsumers``).
      The weights are read as lag (meaningful with ``--catch-up-seconds``).
    - ``first-fit-decreasing``, ``best-fit-decreasing``: the classic greedy packings.
    - ``one-partition-per-consumer``: one instance per item (a co-partition unit
      counts once: its partitions must sit together).
    """
    items = pl.items
    out: list[dict[str, Any]] = []
    total_lag = float(items.raw.sum())
    keda = min(math.ceil(total_lag / cfg.lag_threshold - 1e-12), items.partitions) if total_lag > 0 else 0
    out.append({"name": "keda", "instances": int(keda),
                "rule": f"ceil(total lag {total_lag:g} / lagThreshold {cfg.lag_threshold:g}), "
                        f"capped at {items.partitions} partitions"
                        + ("" if cfg.catch_up_seconds is not None else " (weights read as lag)"),
                "weights_as_lag": cfg.catch_up_seconds is not None})
    for name, bf in (("first-fit-decreasing", False), ("best-fit-decreasing", True)):
        cnt, _ = greedy_count(pl, best_fit=bf)
        out.append({"name": name, "instances": int(cnt), "rule": "greedy packing, largest item first"})
    out.append({"name": "one-partition-per-consumer", "instances": items.n_items,
                "rule": "one instance per partition (co-partition unit)"})
    for b in out:
        b["vs_min"] = (b["instances"] - mn.min_instances) if mn.proof_kind != "gap" and \
            mn.min_instances is not None else None
        if mn.proof_kind != "gap" and mn.min_instances is not None:
            b["fits"] = bool(b["instances"] >= mn.min_instances)
        else:
            b["fits"] = True if b["instances"] >= mn.upper_bound else (
                False if b["instances"] < mn.lower_bound else None)
    return out


# --------------------------------------------------------------------------- the plan


def default_range(mn: Minimum, m: int, k: int) -> tuple[int, int]:
    """Rows shown by default: from one below the minimum (or today's size) to two above (or today's size + k)."""
    lo = max(1, min(mn.min_instances or 1, m if m else 10**9) - 1)
    hi = max((mn.min_instances or 1) + k + 2, m)
    if hi - lo > 40:
        hi = lo + 40
    return lo, hi


def plan(instance: Instance, cfg: PlanConfig, kafka_assignor: Any = None,
         progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Capacity plan of ``instance`` (see the module docstring); returns the JSON document.

    Parameters
    ----------
    instance
        Consumer or Streams instance.
    cfg
        Capacity, resilience K, range, catch-up seconds, KEDA threshold, limits.
    kafka_assignor
        A registry spec (``cooperative-sticky`` / ``high-availability``) to
        compare with, or ``None`` (the ``kafka_*`` columns say ``unavailable``).
    progress
        Called with short messages while working (for stderr).

    Raises
    ------
    PlanUsageError
        For a request that makes no sense (capacity <= 0, empty range ...).
    solver.errors.InfeasibleError
        When an item is larger than every instance (no count fits).
    """
    check_config(cfg)
    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    if instance.protocol == "streams":
        items = streams_items(instance, cfg.active_load, cfg.standby_load)
    else:
        items = consumer_items(instance, cfg.catch_up_seconds)
    pl = Planner(items, cfg)
    check_items(pl)
    say(f"{items.n_items} items, total load {items.raw.sum() / items.divisor:g}: proving the minimum")
    mn = minimum(pl)
    lo, hi = cfg.range if cfg.range is not None else default_range(mn, pl.m, cfg.resilience)
    rows = []
    kafka_fn = kafka_streams if instance.protocol == "streams" else kafka_consumer
    for n in range(lo, hi + 1):
        say(f"n = {n}")
        rows.append(_row(pl, instance, mn, n, cfg, kafka_assignor, kafka_fn))
    doc: dict[str, Any] = {
        "format": "kassign/v1",
        "kind": "plan",
        "name": instance.name,
        "protocol": instance.protocol,
        "capacity": cfg.capacity,
        "load_unit": "lag/s" if cfg.catch_up_seconds else "weight",
        "catch_up_seconds": cfg.catch_up_seconds,
        "items": items.n_items,
        "partitions": items.partitions,
        "not_joinable": items.not_joinable,
        "total_load": float(items.raw.sum() / items.divisor),
        "largest_item": float(items.raw.max() / items.divisor) if items.n_items else 0.0,
        "current_instances": pl.m,
        "identical_instances": pl.identical,
        "exact_arithmetic": pl.ints.exact,
        "min_instances": mn.min_instances,
        "lower_bound": mn.lower_bound,
        "lower_bound_name": mn.bound_name,
        "upper_bound": mn.upper_bound,
        "proof_kind": mn.proof_kind,
        "proof": mn.proof,
        "min_seconds": round(mn.seconds, 3),
        "resilience": cfg.resilience,
        "range": [lo, hi],
        "rows": rows,
        "baselines": baselines(pl, mn, cfg, instance.protocol),
        "kafka_assignor": (kafka_assignor.name if kafka_assignor is not None else None),
        "notes": list(items.notes) + ([] if pl.ints.exact else [
            "loads are not exact decimals: integer rounding is conservative (sizes up for packings, down for "
            "proofs)"]),
        "seconds": 0.0,
    }
    doc["seconds"] = round(time.perf_counter() - t0, 3)
    return doc


def _row(pl: Planner, instance: Instance, mn: Minimum, n: int, cfg: PlanConfig, kafka_assignor: Any,
         kafka_fn: Any) -> dict[str, Any]:
    items = pl.items
    if mn.proof_kind != "gap" and mn.min_instances is not None:
        fits: bool | None = n >= mn.min_instances
    else:
        fits = True if n >= mn.upper_bound else (False if n < mn.lower_bound else None)
    row: dict[str, Any] = {"n": n, "fits": fits}
    bal = balance(pl, n) if fits is not False else Balance("infeasible", None, None, None, None)
    if fits is None and bal.status in ("optimal", "feasible"):
        fits = row["fits"] = True
    row["max_utilisation"] = _r(bal.max_utilisation)
    row["max_utilisation_bound"] = _r_down(bal.bound)
    row["balance_status"] = bal.status
    row["headroom"] = _r(1 - bal.max_utilisation) if bal.max_utilisation is not None else None
    caps = _real_caps(pl, n)
    row["spare_capacity"] = _r(float(caps.sum() - items.raw.sum()) / items.divisor)
    mv = fewest_moves(pl, n) if fits is not False else Moves("infeasible", None, None, 0, 0.0, (), None, None)
    row["moved_partitions"] = mv.moved_partitions
    row["moved_state"] = _r(mv.moved_state)
    row["moved_partitions_bound"] = mv.bound_partitions if mv.moved_partitions is not None else None
    row["moved_state_bound"] = _r_down(mv.bound_state) if mv.moved_state is not None else None
    row["moves_status"] = mv.status
    row["plan_max_utilisation"] = _r(mv.max_utilisation)
    row["kept"] = [pl.member_name(j) for j in mv.kept] if mv.kept else None
    if mv.kept and n < pl.m:
        row["removed"] = [pl.member_name(j) for j in range(pl.m) if j not in set(mv.kept)]
    # Kafka's assignor on the same instances (kept by the plan, else the first n in input order).
    kept = list(mv.kept) if mv.kept else (list(range(min(n, pl.m))) + list(range(pl.m, n)))
    kr = KafkaRun("unavailable")
    if kafka_assignor is not None:
        try:
            kr = kafka_fn(instance, items, pl, kept, n, kafka_assignor)
        except Exception as e:  # a baseline failing must not hide the plan
            kr = KafkaRun(f"error: {type(e).__name__}: {e}")
    row["kafka_status"] = kr.status
    row["kafka_moved_partitions"] = kr.moved_partitions
    row["kafka_moved_state"] = _r(kr.moved_state)
    row["kafka_max_utilisation"] = _r(kr.max_utilisation)
    row["kafka_fits"] = kr.fits
    row["kafka_rounds"] = kr.rounds
    row["kafka_copartition_violations"] = kr.copartition_violations
    res = resilience(pl, mv, cfg.resilience, mn.min_instances if mn.proof_kind != "gap" else None)
    row["resilience_k"] = res.k
    row["resilience_fits"] = res.fits
    row["resilience_moved_partitions"] = res.moved_partitions
    row["resilience_moved_state"] = _r(res.moved_state)
    row["resilience_forced_moved_state"] = _r(res.forced_moved_state)
    row["resilience_worst_lost"] = list(res.worst_lost)
    row["resilience_exact"] = res.exact
    if res.note:
        row["resilience_note"] = res.note
    return row


def _r(x: float | None, nd: int = 6) -> float | None:
    return None if x is None else round(float(x), nd)


def _r_down(x: float | None, nd: int = 6) -> float | None:
    """Round a lower bound *down*, so that the printed bound stays a bound."""
    if x is None:
        return None
    f = 10.0**nd
    return math.floor(float(x) * f + 1e-9) / f
