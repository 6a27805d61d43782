"""The arrays of one Streams instance that the optimum and its flow certificates work on."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from solver.model import Instance
from solver.registry import UnsupportedInstanceError
from solver.streams.model import StreamsSpec, is_caught_up, restore_costs

#: Largest scale for exact per-thread loads; beyond it loads are rounded up (documented in docs/streams.md).
MAX_SCALE = 1 << 20


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
        for t in tasks:
            owners = [c for c, cl in enumerate(clients) if t.id in cl.active]
            prev.append(owners)
            if not t.stateful:
                allowed.append(list(range(m)))
                cost.append([0] * m)
                continue
            caught = [c for c, cl in enumerate(clients) if is_caught_up(spec, cl, t)]
            allowed.append(caught or list(range(m)))
            cost.append(restore_costs(spec, t, full_restore_lag))
        caps = [cl.capacity for cl in clients]
        scale = 1
        for cap in caps:
            scale = scale * cap // math.gcd(scale, cap)
            if scale > MAX_SCALE:
                scale = MAX_SCALE
                break
        weight = [-(-scale // cap) for cap in caps]
        standbys = min(cfg.num_standby_replicas, max(m - 1, 0))
        cost_matrix = np.asarray(cost, dtype=np.int64).reshape(n, m)
        prev_matrix = np.zeros((n, m), dtype=np.int64)
        for ti, owners in enumerate(prev):
            prev_matrix[ti, owners] = 1
        return cls(spec, n, m, stateful, allowed, cost, prev, standbys, weight, scale, cost_matrix, prev_matrix)
