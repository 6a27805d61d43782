"""The arrays of one Streams instance that the optimum and its flow certificates work on."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.model import Instance
from solver.registry import UnsupportedInstanceError
from solver.streams.model import StreamsSpec, task_placements

#: Largest scale for exact per-thread loads; beyond it loads are rounded up and the balance stages are
#: not claimed proven (documented in docs/streams.md).  Scaled loads (at most scale x tasks) stay exact
#: in the MIP's doubles for up to 8,192 tasks.
MAX_SCALE = 1 << 40
#: The stages of the optimum in their default order.
STAGES = ("active_balance", "total_balance", "restoration", "movement")
#: The cross-rack traffic stage (KIP-925), when rack awareness is on.
RACK_STAGE = "cross_rack_traffic"
#: Flows add costs times ``tasks + 1`` in int64; the MIP adds them in doubles (exact below 2**53).
SAFE_FLOW_SUM = 1 << 62
SAFE_MIP_SUM = 1 << 50


@dataclass
class StreamsProblem:
    """Arrays of one Streams instance for the optimum (clients in input order, tasks in task order)."""

    spec: StreamsSpec
    n_tasks: int
    n_clients: int
    stateful: list[bool]
    allowed_active: list[list[int]]
    cost: list[list[int]]
    prev_active: list[list[int]]
    standbys: int
    weight: list[int]
    scale: int
    cost_matrix: np.ndarray
    prev_matrix: np.ndarray
    cost_div: int = 1
    rack_active: list[list[int]] | None = None
    rack_standby: list[list[int]] | None = None

    rack_unit: int = 0

    @property
    def exact_scale(self) -> bool:
        """Whether every client's weight times its threads is the scale (loads per thread exact)."""
        return all(w * c.capacity == self.scale for w, c in zip(self.weight, self.spec.clients, strict=True))

    def stage_names(self) -> tuple[str, ...]:
        """Every stage this instance knows (``cross_rack_traffic`` only when rack awareness is on)."""
        return self.default_stages()

    def default_stages(self) -> tuple[str, ...]:
        """The default stage order: :data:`STAGES`, with ``cross_rack_traffic`` right after the balance
        stages when rack awareness is on (:func:`rack_partitions`)."""
        if self.rack_active is None:
            return STAGES
        return (*STAGES[:2], RACK_STAGE, *STAGES[2:])

    @classmethod
    def of(cls, instance: Instance, full_restore_lag: int | None = None) -> StreamsProblem:
        """Derive caught-up sets, restoration costs and per-thread weights."""
        spec = instance.streams
        if instance.protocol != "streams" or not isinstance(spec, StreamsSpec):
            raise UnsupportedInstanceError("optimal-streams needs a protocol 'streams' instance")
        tasks, clients, cfg = spec.tasks, spec.clients, spec.config
        n, m = len(tasks), len(clients)
        stateful = [t.stateful for t in tasks]
        allowed: list[list[int]] = []
        cost: list[list[int]] = []
        prev: list[list[int]] = []
        owners_of: dict[str, list[int]] = {}
        for c, cl in enumerate(clients):
            for tid in dict.fromkeys(cl.active):
                owners_of.setdefault(tid, []).append(c)
        placements = task_placements(spec, full_restore_lag)
        for t, (costs, up) in zip(tasks, placements, strict=True):
            owners = owners_of.get(t.id, [])
            prev.append(owners)
            if not t.stateful:
                allowed.append(list(range(m)))
                cost.append([0] * m)
                continue
            caught = [c for c in range(m) if up[c]] if cfg.active_on_caught_up else []
            allowed.append(caught or list(range(m)))
            cost.append(costs)
        caps = [cl.capacity for cl in clients]
        scale = 1
        for cap in caps:
            scale = scale * cap // math.gcd(scale, cap)
            if scale > MAX_SCALE:
                scale = MAX_SCALE
                break
        weight = [-(-scale // cap) for cap in caps]
        standbys = min(cfg.num_standby_replicas, max(m - 1, 0))
        cost_div = _cost_divisor(cost, stateful, standbys, n)
        # the solvers' integer costs: exact unless huge lags (up to 2**63) would overflow their sums, then
        # floored to multiples of cost_div (lower bounds stay valid; evaluate() stays exact)
        rows = cost if cost_div == 1 else [[v // cost_div for v in row] for row in cost]
        cost_matrix = np.asarray(rows, dtype=np.int64).reshape(n, m)
        prev_matrix = np.zeros((n, m), dtype=np.int64)
        for ti, owners in enumerate(prev):
            prev_matrix[ti, owners] = 1
        racks = rack_partitions(spec, standbys)
        return cls(spec, n, m, stateful, allowed, cost, prev, standbys, weight, scale, cost_matrix, prev_matrix,
                   cost_div, racks[0] if racks else None, racks[1] if racks else None, cfg.traffic_cost)


def rack_partitions(spec: StreamsSpec, standbys: int) -> tuple[list[list[int]], list[list[int]]] | None:
    """Cross-rack partitions per (task, client): as an active (source partitions), as a standby (changelog).

    KIP-925's traffic cost of a placement is ``traffic_cost`` times these
    (:meth:`~solver.streams.model.Task.cross_rack_partitions`).  ``None`` when
    rack awareness is off, as Kafka decides it: strategy ``none``, a client
    without a rack, a task without ``source_racks``, or (with standbys) a
    stateful task without ``changelog_racks``.
    """
    tasks, clients = spec.tasks, spec.clients
    if spec.config.rack_aware_assignment_strategy == "none" or any(c.rack is None for c in clients):
        return None
    if any(t.source_racks is None for t in tasks):
        return None
    if standbys > 0 and any(t.stateful and t.changelog_racks is None for t in tasks):
        return None
    act = [[t.cross_rack_partitions(c.rack) or 0 for c in clients] for t in tasks]
    sby = [[(t.cross_rack_partitions(c.rack, standby=True) or 0) if t.stateful else 0 for c in clients]
           for t in tasks]
    return act, sby


def _cost_divisor(cost: list[list[int]], stateful: list[bool], standbys: int, n: int) -> int:
    """The smallest power of two ``D`` such that every sum the flows and the MIP form of ``cost // D`` fits."""
    top = max((max(row, default=0) for row in cost), default=0)
    replicas = sum(1 + standbys if s else 1 for s in stateful)
    div = 1
    while replicas * (top // div) * (n + 1) >= SAFE_FLOW_SUM or replicas * (top // div) >= SAFE_MIP_SUM:
        div *= 2
    return div
