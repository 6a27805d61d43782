"""Kafka Streams ``HighAvailabilityTaskAssignor`` (KIP-441), as Kafka ships it (Oct 2024).

Default standby placement; rack-aware task assignment (KIP-925) when the
instance turns it on (:mod:`heuristics.streams.rack_aware`: strategy not
``none``, racks for every client and partition).  The steps, in Kafka's order:

1. **Stateful actives, balanced first**: stateful tasks (task order) are dealt
   round robin over the clients in process-id order, then moved between
   clients until no move lowers the skew of tasks per thread
   (``balanceTasksOverThreads``; both loads count actives and standbys).
2. **Standbys** (``num_standby_replicas > 0``, ``DefaultStandbyTaskAssignor``):
   for each stateful task, each replica goes to the client with the fewest
   assigned tasks per thread that does not hold the task yet (ties: lower
   process id; Kafka's live-key ``PriorityQueue`` reproduced exactly), then the
   same thread balancing over standbys.  With ``rack_aware_assignment_tags``
   (KIP-708) Kafka's ``ClientTagAwareStandbyTaskAssignor`` places them instead,
   spread over client tag values, and the balancing moves a standby only to a
   client with the source's tags (:mod:`heuristics.streams.client_tags`).
3. **Caught-up ranking**: a client is *caught up* on a task when it ran it as
   an active (lag = ``LATEST_OFFSET``) or its lag is at most
   ``acceptable_recovery_lag``; clients are also ranked by lag, then process id.
4. **Active movements** (``TaskMovement.assignActiveTaskMovements``): an active
   placed on a client that is not caught up while a client with a smaller lag
   exists is moved back, in order of (fewest caught-up clients, task): to a
   caught-up client holding a standby (swap, no warm-up needed), else to the
   least loaded caught-up client, else to the most caught-up client; the
   intended client keeps a *warm-up* replica while ``max_warmup_replicas``
   last.
5. **Standby movements**: likewise for standbys on clients that are not caught
   up; the old holder keeps the replica as a warm-up while warm-ups last.
6. **Stateless actives**: each to the client with the fewest active tasks per thread.
7. **Probing rebalance** is requested when any movement of step 4 or 5 was needed.

With rack awareness on, three steps are each followed by Kafka's min-cost-flow
optimisation: the balanced stateful actives of step 1 (``optimizeActiveTasks``
with the configured costs, defaults 10 and 1), the balanced standbys of step 2
(``optimizeStandbyTasks``: swaps between clients on different racks) and the
stateless actives of step 6 (costs 1 and 0).
"""

from __future__ import annotations

from collections.abc import Callable

from heuristics.streams.client_state import ClientState, StreamsContext
from heuristics.streams.client_tags import client_tag_standbys
from heuristics.streams.java import ConstrainedPrioritySet, JavaPriorityQueue
from heuristics.streams.rack_aware import STATELESS_NON_OVERLAP_COST, STATELESS_TRAFFIC_COST, RackAwareTasks
from heuristics.versions import HIGH_AVAILABILITY
from solver.model import Instance
from solver.registry import register
from solver.result import Params, Result
from solver.streams.model import LATEST_OFFSET

#: Kafka treats ``acceptable.recovery.lag = Long.MAX_VALUE`` as "every client is caught up".
UNBOUNDED_LAG = 2**63 - 1


def _assigned_load(states: list[ClientState]) -> Callable[[int], float]:
    def load(c: int) -> float:
        st = states[c]
        return (len(st.active) + len(st.standby)) / st.capacity

    return load


def balance_tasks_over_threads(states: list[ClientState], kind: str,
                               allowed: Callable[[int, int], bool] | None = None) -> None:
    """Kafka's ``balanceTasksOverThreads`` for ``kind`` in ``{"active", "standby"}``.

    Every ordered pair (source, destination) in client order is visited until
    a whole pass moves nothing; the source's tasks are tried in task order.
    ``allowed(source, destination)``: the standby assignor's ``isAllowedTaskMovement`` (client tags).
    """
    keep = True
    while keep:
        keep = False
        for s, src in enumerate(states):
            for d, dst in enumerate(states):
                if s == d:
                    continue
                pending = iter(sorted(getattr(src, kind)))
                while _should_move(src, dst):
                    task = next(pending, None)
                    if task is None:
                        break
                    if not dst.has(task) and (allowed is None or allowed(s, d)):
                        getattr(src, kind).discard(task)
                        getattr(dst, kind).add(task)
                        keep = True


def _should_move(src: ClientState, dst: ClientState) -> bool:
    skew = src.assigned_load() - dst.assigned_load()
    if skew <= 0:
        return False
    proposed = (src.assigned_count() - 1.0) / src.capacity - (dst.assigned_count() + 1.0) / dst.capacity
    return 0 <= proposed < skew


def assign_standbys_least_loaded(ctx: StreamsContext, states: list[ClientState], tasks: list[int],
                                 replicas: int) -> None:
    """``DefaultStandbyTaskAssignor``: each replica to the least loaded client without the task."""
    pset = ConstrainedPrioritySet(lambda c, t: not states[c].has(t), _assigned_load(states), ctx.java_hash)
    pset.offer_all(range(ctx.n_clients))
    for task in tasks:
        for _ in range(replicas):
            c = pset.poll(task)
            if c is None:
                break  # Kafka logs "not enough capacity" and moves on
            states[c].assign_standby(task)
            pset.offer(c)


class _Movements:
    """The movement phase (Kafka's ``TaskMovement``)."""

    def __init__(self, ctx: StreamsContext, states: list[ClientState], max_warmups: int,
                 acceptable_lag: int) -> None:
        self.ctx = ctx
        self.states = states
        self.remaining_warmups = max_warmups
        lag = ctx.lag
        n = ctx.n_clients
        self.caught_up: dict[int, set[int]] = {}
        self.by_lag: dict[int, list[int]] = {}
        for t in ctx.stateful():
            self.caught_up[t] = {
                c for c in range(n)
                if lag[c][t] == LATEST_OFFSET or acceptable_lag == UNBOUNDED_LAG or 0 <= lag[c][t] <= acceptable_lag
            }
            row = [lag[c][t] for c in range(n)]
            self.by_lag[t] = sorted(range(n), key=lambda c: (row[c], c))
        self.warmups: list[set[int]] = [set() for _ in range(n)]  # Kafka's map: actives turned warm-up
        self.reported_warmups: list[set[int]] = [set() for _ in range(n)]

    def _not_caught_up_and_better_exists(self, task: int, client: int) -> bool:
        if client in self.caught_up[task]:
            return False
        lag = self.ctx.lag
        return lag[self.by_lag[task][0]][task] < lag[client][task]

    def _queue(self) -> JavaPriorityQueue[tuple[int, int]]:
        # TaskMovement order: fewest caught-up clients, then task (equal for one task's movements)
        caught = self.caught_up
        return JavaPriorityQueue(lambda mv: (len(caught[mv[0]]), mv[0]))

    def _caught_up_set(self) -> ConstrainedPrioritySet:
        states = self.states
        return ConstrainedPrioritySet(lambda c, t: c in self.caught_up[t], _assigned_load(states), self.ctx.java_hash)

    def _take_warmup(self) -> bool:
        # AtomicInteger.getAndDecrement() > 0
        ok = self.remaining_warmups > 0
        self.remaining_warmups -= 1
        return ok

    def _most_caught_up(self, task: int, dest: int, eligible: Callable[[int], bool] | None = None) -> int | None:
        for c in self.by_lag[task]:
            if c == dest:
                break
            if eligible is None or eligible(c):
                return c
        return None

    def _swap(self, task: int, src: int, dst: int) -> None:
        s, d = self.states[src], self.states[dst]
        s.standby.discard(task)
        s.assign_active(task)
        d.active.discard(task)
        d.assign_standby(task)

    def _move_active(self, task: int, src: int, dst: int) -> None:
        self.states[src].assign_active(task)
        d = self.states[dst]
        d.active.discard(task)
        if self._take_warmup():
            d.assign_standby(task)
            self.warmups[dst].add(task)
            self.reported_warmups[dst].add(task)

    def actives(self) -> int:
        """``assignActiveTaskMovements``: returns the number of movements needed."""
        states = self.states
        pset = self._caught_up_set()
        moves = self._queue()
        for c, st in enumerate(states):
            for t in sorted(st.active):
                if self._not_caught_up_and_better_exists(t, c):
                    moves.offer((t, c))
            pset.offer(c)
        needed = len(moves)
        while len(moves):
            task, dest = moves.poll()  # type: ignore[misc]
            def holds_standby(c: int, task: int = task) -> bool:
                return task in states[c].standby

            src = pset.poll(task, holds_standby)
            if src is not None:
                self._swap(task, src, dest)
                pset.offer_all([src, dest])
                continue
            src = pset.poll(task)
            if src is not None:
                self._move_active(task, src, dest)
                pset.offer_all([src, dest])
                continue
            src = self._most_caught_up(task, dest)
            if src is None:
                raise AssertionError("no more caught-up client for a scheduled movement")
            if task in states[src].standby:
                self._swap(task, src, dest)
            else:
                self._move_active(task, src, dest)
            pset.offer_all([src, dest])
        return needed

    def standbys(self) -> int:
        """``assignStandbyTaskMovements``: returns the number of movements made."""
        states = self.states
        pset = self._caught_up_set()
        moves = self._queue()
        for dest, st in enumerate(states):
            for t in sorted(st.standby):
                if t in self.warmups[dest]:
                    continue  # a warm-up for an active: not moved again
                if self._not_caught_up_and_better_exists(t, dest):
                    moves.offer((t, dest))
            pset.offer(dest)
        needed = 0
        while len(moves):
            task, dest = moves.poll()  # type: ignore[misc]
            def eligible(c: int, task: int = task) -> bool:
                return not states[c].has(task)

            src = pset.poll(task, eligible)
            if src is None:
                src = self._most_caught_up(task, dest, eligible)
            if src is None:
                continue  # nowhere to move it
            states[src].assign_standby(task)
            if self._take_warmup():
                self.reported_warmups[dest].add(task)  # the old holder keeps warming up
            else:
                states[dest].standby.discard(task)
            pset.offer_all([src, dest])
            needed += 1
        return needed


def assign_stateless(ctx: StreamsContext, states: list[ClientState], tasks: list[int]) -> None:
    """Stateless actives, each to the client with the fewest active tasks per thread."""
    pset = ConstrainedPrioritySet(lambda c, t: True, lambda c: states[c].active_load(), ctx.java_hash)
    pset.offer_all(range(ctx.n_clients))
    for t in tasks:
        c = pset.poll(t)
        assert c is not None
        states[c].assign_active(t)
        pset.offer(c)


def high_availability_assign(ctx: StreamsContext) -> tuple[list[ClientState], list[set[int]], bool, bool]:
    """Run the assignor; returns client states, warm-ups per client, the probing decision and whether
    rack awareness was on."""
    cfg = ctx.spec.config
    states = ctx.fresh_states()
    n = ctx.n_clients
    if n == 0:
        return states, [], False, False
    rack = RackAwareTasks(ctx)
    stateful = ctx.stateful()
    for k, t in enumerate(stateful):
        states[k % n].assign_active(t)
    balance_tasks_over_threads(states, "active")
    if rack.enabled:
        rack.optimize_active(stateful, states, rack.traffic_cost, rack.non_overlap_cost)
    if cfg.num_standby_replicas > 0:
        tagged = client_tag_standbys([c.client_tags for c in ctx.clients], cfg.rack_aware_assignment_tags,
                                     ctx.java_hash, [t.key for t in ctx.tasks])
        if tagged is None:
            assign_standbys_least_loaded(ctx, states, stateful, cfg.num_standby_replicas)
            balance_tasks_over_threads(states, "standby")
            if rack.enabled:
                rack.optimize_standby(states, rack.traffic_cost, rack.non_overlap_cost)
        else:
            tagged.assign(states, stateful, cfg.num_standby_replicas)
            balance_tasks_over_threads(states, "standby", tagged.may_move)
            if rack.enabled:
                rack.optimize_standby(states, rack.traffic_cost, rack.non_overlap_cost,
                                      lambda s, d, t: tagged.may_move_task(s, d, t, states))
    mv = _Movements(ctx, states, cfg.max_warmup_replicas, cfg.acceptable_recovery_lag)
    needed = mv.actives() + mv.standbys()
    stateless = ctx.stateless()
    assign_stateless(ctx, states, stateless)
    if rack.enabled:
        rack.optimize_active(stateless, states, STATELESS_TRAFFIC_COST, STATELESS_NON_OVERLAP_COST)
    return states, mv.reported_warmups, needed > 0, rack.enabled


@register(
    "high-availability",
    kind="heuristic",
    protocol="streams",
    summary="Kafka Streams HighAvailabilityTaskAssignor: balanced actives, caught-up clients, warm-ups, probing",
    source="KIP-441 / KIP-925; Kafka HighAvailabilityTaskAssignor + TaskMovement + RackAwareTaskAssignor",
    versions=HIGH_AVAILABILITY,
)
def high_availability(instance: Instance, params: Params) -> Result:
    """Kafka Streams' ``HighAvailabilityTaskAssignor`` (see the module docstring).

    ``Result.assignment`` is a :class:`~solver.streams.model.StreamsAssignment`
    (warm-ups listed apart from standbys); ``Result.extra`` carries
    ``probing_rebalance``, the number of ``warmups`` and ``rack_aware`` (whether Kafka would
    turn rack awareness on: ``canEnableRackAwareAssignor``).
    """
    ctx = StreamsContext.of(instance)
    states, warmups, probing, rack_aware = high_availability_assign(ctx)
    asg = ctx.to_assignment(states, warmups or None, probing)
    n_warm = sum(len(ca.warmup) for ca in asg.clients.values())
    return Result(asg, extra={"probing_rebalance": probing, "warmups": n_warm, "rack_aware": rack_aware})
