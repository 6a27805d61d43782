"""A KIP-262 variant: balance Kafka Streams tasks by their number of state stores.

KIP-262 (rejected) proposed sending each task's number of state stores in the
subscription so that the leader could spread *state*, not just task counts.
Kafka never shipped an assignor for it; this one is kassign's reading, kept
close to Kafka's conventions (caught-up clients, process-id order, stickiness).

The rule
    * A task weighs its state store count (``stores``; default 1 for a
      stateful task).  A client's *store load* is the weight of every replica
      it holds (actives and standbys) divided by its threads.
    * Every client has a quota of ``W * threads / total threads + w_max``
      (``W`` the weight of all replicas, ``w_max`` the heaviest task): its fair
      share plus one task of slack.
    * Stateful actives, heaviest first (ties: task order), each to: its
      previous active client if that client is caught up (always) and stays
      within quota; else the caught-up client (all clients if none is caught
      up) with the lowest store load after adding the task, ties to lower
      restoration lag, then process id.
    * Standbys, same task order, ``num_standby_replicas`` per task, each to a
      client without the task: a previous standby holder within quota first
      (lowest load), else the client with the lowest store load after adding,
      ties to lower lag, then process id.
    * Stateless actives (no state to weigh) to the client with the fewest
      active tasks per thread, ties by process id (as Kafka does).

No warm-ups, never a probing rebalance.
"""

from __future__ import annotations

from heuristics.streams.client_state import ClientState, StreamsContext
from solver.model import Instance
from solver.registry import register
from solver.result import Params, Result
from solver.streams.model import LATEST_OFFSET


def state_store_weighted_assign(ctx: StreamsContext) -> list[ClientState]:
    """Run the rule of the module docstring; returns client states in process-id order."""
    states = ctx.fresh_states()
    n = ctx.n_clients
    if n == 0:
        return states
    cfg = ctx.spec.config
    replicas = min(cfg.num_standby_replicas, n - 1)
    weight = [t.store_count if t.stateful else 0 for t in ctx.tasks]
    stateful = ctx.stateful()
    total_w = sum(weight[t] * (1 + replicas) for t in stateful)
    total_cap = sum(st.capacity for st in states)
    w_max = max((weight[t] for t in stateful), default=0)
    quota = [total_w * st.capacity / total_cap + w_max for st in states]
    load = [0] * n
    lag = ctx.lag
    prev_owner = {t: c for c in range(n) for t in ctx.prev_active(c)}
    prev_standby: dict[int, list[int]] = {}
    for c in range(n):
        for t in ctx.prev_standby(c):
            prev_standby.setdefault(t, []).append(c)

    def caught_up(c: int, t: int) -> bool:
        return lag[c][t] == LATEST_OFFSET or 0 <= lag[c][t] <= cfg.acceptable_recovery_lag

    def best(t: int, cands: list[int]) -> int:
        return min(cands, key=lambda c: ((load[c] + weight[t]) / states[c].capacity, lag[c][t], c))

    order = sorted(stateful, key=lambda t: (-weight[t], t))
    for t in order:
        cands = [c for c in range(n) if caught_up(c, t)] or list(range(n))
        p = prev_owner.get(t)
        c = p if p is not None and p in cands and load[p] + weight[t] <= quota[p] else best(t, cands)
        states[c].assign_active(t)
        load[c] += weight[t]
    for t in order:
        for _ in range(replicas):
            free = [c for c in range(n) if not states[c].has(t)]
            holders = [c for c in prev_standby.get(t, []) if c in free and load[c] + weight[t] <= quota[c]]
            c = best(t, holders) if holders else best(t, free)
            states[c].assign_standby(t)
            load[c] += weight[t]
    for t in ctx.stateless():
        c = min(range(n), key=lambda c: (len(states[c].active) / states[c].capacity, c))
        states[c].assign_active(t)
    return states


@register(
    "state-store-weighted",
    kind="heuristic",
    protocol="streams",
    summary="KIP-262 variant: balance replicas by state-store count per thread, caught-up and sticky",
    source="KIP-262 (rejected); kassign's rule, see docs/streams.md",
)
def state_store_weighted(instance: Instance, params: Params) -> Result:
    """Balance Streams tasks by number of state stores (see the module docstring)."""
    ctx = StreamsContext.of(instance)
    states = state_store_weighted_assign(ctx)
    return Result(ctx.to_assignment(states, None, False), extra={"probing_rebalance": False})
