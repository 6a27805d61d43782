"""Streams scenario generation: :class:`StreamsScenario`, the initial application, the drawn events.

:func:`generate_streams` draws them all from ``(params, seed)``.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import numpy as np
from numpy.random import PCG64, Generator

from solver.model import Instance
from solver.streams.model import (
    Client,
    StreamsConfig,
    StreamsMember,
    StreamsSpec,
    Subtopology,
)
from spark_runner.scenarios.checks import (
    check_seed,
)
from spark_runner.scenarios.consumer.params import scenario_id
from spark_runner.scenarios.draws import (
    draw_events,
    draw_leavers,
    membership_applicable,
    random_rack,
    replica_racks,
)
from spark_runner.scenarios.streams.events import (
    LagModel,
    NewClient,
    StreamsEvent,
    TaskRacks,
    _member_view,
    _tasks_of,
    apply_streams_event,
    strip_state,
)
from spark_runner.scenarios.streams.params import (
    MEMBER_EVENT_KINDS,
    StreamsScenarioParams,
)


@dataclass(frozen=True)
class StreamsScenario:
    """An initial Streams application state, the events that follow it and its lag model.

    Attributes
    ----------
    id
        :func:`~spark_runner.scenarios.consumer.scenario_id` of ``(params, seed)``.
    params, seed
        What generated it.
    initial
        The application before the first assignment.
    events
        One event per later step.
    lag_model
        Changelog sizes and rates, for :func:`apply_streams_event`.
    """

    id: str
    params: StreamsScenarioParams
    seed: int
    initial: Instance
    events: tuple[StreamsEvent, ...]
    lag_model: LagModel

    def states(self) -> list[Instance]:
        """The application at every step with nothing assigned in between (step 0 is ``initial``)."""
        out = [self.initial]
        for ev in self.events:
            out.append(apply_streams_event(out[-1], ev, None, self.lag_model))
        return out


class _Builder:
    """Mutable generator state; every random draw goes through ``self.rng``."""

    def __init__(self, params: StreamsScenarioParams, seed: int) -> None:
        self.p = params
        self.rng = Generator(PCG64(seed))
        self.client_counter = 0
        self.sizes: dict[str, int] = {}
        self.rack_names = tuple(f"r{i}" for i in range(params.racks))
        self.task_racks: dict[str, TaskRacks] = {}

    def process_id(self) -> str:
        return str(uuid.UUID(bytes=self.rng.bytes(16), version=4))

    def member_id(self) -> str:
        """A member id as a KIP-1071 Streams client makes it (``Uuid.randomUuid().toString()``)."""
        import base64

        return base64.urlsafe_b64encode(self.rng.bytes(16)).decode("ascii").rstrip("=")

    def new_client(self) -> NewClient:
        cid = f"c{self.client_counter}"
        self.client_counter += 1
        cap = int(self.rng.integers(self.p.threads_min, self.p.threads_max + 1))
        pid = self.process_id()
        rack = random_rack(self.rng, self.rack_names)
        members = tuple(self.member_id() for _ in range(cap)) if self.p.kip1071 else ()
        return NewClient(cid, pid, cap, rack, members)

    def _partition_racks(self, n: int) -> tuple[tuple[str, ...], ...]:
        return replica_racks(self.rng, self.rack_names, self.p.replication, n)

    def add_racks(self, sub: Subtopology) -> list[tuple[str, TaskRacks]]:
        """Rack data of the sub-topology's tasks that have none yet (none without racks)."""
        new: list[tuple[str, TaskRacks]] = []
        if not self.rack_names:
            return new
        for tid in sub.task_ids():
            if tid not in self.task_racks:
                source = self._partition_racks(len(sub.source_topics))
                changelog = self._partition_racks(max(sub.stores or 0, 1)) if sub.stateful else None
                self.task_racks[tid] = (source, changelog)
                new.append((tid, self.task_racks[tid]))
        return new

    def size(self) -> int:
        p = self.p
        s = round(float(self.rng.lognormal(np.log(p.state_size), 0.5)))
        return max(s, p.acceptable_recovery_lag + 1)

    def add_sizes(self, sub: Subtopology) -> None:
        if sub.stateful:
            for tid in sub.task_ids():
                if tid not in self.sizes:
                    self.sizes[tid] = self.size()

    def lag(self, tid: str) -> int | None:
        """A lag from the initial profile (None: no state)."""
        p = self.p
        acc = p.acceptable_recovery_lag
        kind = p.initial
        if kind == "mixed":
            kind = ("caught-up", "near", "far", "none")[int(self.rng.integers(4))]
        if kind == "caught-up":
            return int(self.rng.integers(0, acc + 1))
        if kind == "near":
            # never behind by more than the whole changelog (a size is at least acc + 1)
            return int(self.rng.integers(acc + 1, min(4 * acc, self.sizes[tid]) + 1 if acc else 2))
        if kind == "far":
            size = self.sizes[tid]
            return int(self.rng.integers(max(acc + 1, size // 2), size + 1))
        return None


def _initial(b: _Builder) -> Instance:
    p = b.p
    subs = []
    flags = b.rng.random(p.subtopologies) < p.stateful_share
    if p.stateful_share > 0 and not flags.any():
        flags[int(b.rng.integers(p.subtopologies))] = True
    for i in range(p.subtopologies):
        n = int(b.rng.integers(p.partitions_min, p.partitions_max + 1))
        stateful = bool(flags[i])
        stores = int(b.rng.integers(1, p.stores_max + 1)) if stateful else 0
        sub = Subtopology(i, ((f"source-{i}", n),), stateful, stores)
        subs.append(sub)
        b.add_sizes(sub)
        b.add_racks(sub)
    new = [b.new_client() for _ in range(p.clients)]
    tasks = _tasks_of(subs, b.task_racks)
    active: list[list[str]] = [[] for _ in new]
    standby: list[list[str]] = [[] for _ in new]
    lags: list[dict[str, int]] = [{} for _ in new]
    if p.initial != "fresh":
        m = len(new)
        for t in tasks:
            owner = int(b.rng.integers(m))
            active[owner].append(t.id)
            if not t.stateful:
                continue
            others = [c for c in range(m) if c != owner]
            k = min(p.standby_replicas, len(others))
            picks = set(b.rng.choice(others, size=k, replace=False).tolist()) if k else set()
            for c in others:
                if c in picks:
                    lag = b.lag(t.id)
                    if lag is not None:
                        standby[c].append(t.id)
                        lags[c][t.id] = lag
                elif b.rng.random() < p.stale_share:
                    lag = b.lag(t.id)
                    if lag is not None:
                        lags[c][t.id] = lag
    clients = tuple(Client(n.id, n.process_id, n.capacity, n.rack, tuple(a), tuple(s), lg,
                           tuple(StreamsMember(m) for m in n.members) if n.members else None)
                    for n, a, s, lg in zip(new, active, standby, lags, strict=True))
    if p.kip1071:  # the running application's members hold its tasks, dealt round-robin, and report its state
        model = LagModel(b.sizes, 0, 0)
        clients = tuple(_member_view(c, model, None) for c in clients)
    config = StreamsConfig(p.standby_replicas, p.acceptable_recovery_lag, p.max_warmup_replicas)
    if p.racks > 0:
        config = StreamsConfig(p.standby_replicas, p.acceptable_recovery_lag, p.max_warmup_replicas,
                               rack_aware_assignment_strategy=p.rack_strategy,
                               rack_aware_assignment_traffic_cost=p.rack_traffic_cost,
                               rack_aware_assignment_non_overlap_cost=p.rack_non_overlap_cost)
    return Instance("", "streams", {}, (), (), StreamsSpec(tuple(tasks), clients, config, tuple(subs)))


def _applicable(b: _Builder, inst: Instance, kind: str) -> bool:
    p = b.p
    if kind in MEMBER_EVENT_KINDS:
        clients = inst.streams.clients
        if kind == "member-leave":
            return any(len(c.members or ()) >= 2 for c in clients)
        return bool(clients)
    fits = membership_applicable(kind, len(inst.streams.clients), p.client_cap, p.client_floor, p.scale_k)
    if fits is not None:
        return fits
    if kind == "lag-drift":
        return True
    # partition-expansion
    return p.max_tasks is None or p.max_tasks - len(inst.streams.tasks) >= 1


def _draw(b: _Builder, inst: Instance, kind: str) -> StreamsEvent:
    rng = b.rng
    clients = inst.streams.clients
    if kind in ("join", "scale-out"):
        add = tuple(b.new_client() for _ in range(1 if kind == "join" else b.p.scale_k))
        what = f"join {add[0].id}" if kind == "join" else f"scale out by {len(add)}"
        return StreamsEvent(kind, add=add, detail=what)
    if kind in ("leave", "scale-in"):
        gone = draw_leavers(rng, [c.id for c in clients], kind, b.p.scale_k)
        return StreamsEvent(kind, remove=gone, detail=f"{kind} {', '.join(gone)}")
    if kind == "crash":
        c = clients[int(rng.integers(len(clients)))]
        pid = b.process_id()
        fresh = ((c.id, tuple(b.member_id() for _ in c.members)),) if c.members is not None else ()
        return StreamsEvent(kind, crash=((c.id, pid),), new_members=fresh,
                            detail=f"crash {c.id} (state lost, new process id)")
    if kind == "member-join":
        c = clients[int(rng.integers(len(clients)))]
        mid = b.member_id()
        return StreamsEvent(kind, member_add=((c.id, mid),), detail=f"member {mid} joins {c.id}")
    if kind == "member-leave":
        many = [c for c in clients if len(c.members or ()) >= 2]
        c = many[int(rng.integers(len(many)))]
        members = c.members or ()
        m = members[int(rng.integers(len(members)))]
        return StreamsEvent(kind, member_remove=(m.id,), detail=f"member {m.id} of {c.id} leaves")
    if kind == "member-restart":
        c = clients[int(rng.integers(len(clients)))]
        members = c.members or ()
        m = members[int(rng.integers(len(members)))]
        new_id = b.member_id()
        return StreamsEvent(kind, member_restart=((m.id, new_id),),
                            detail=f"member {m.id} of {c.id} rejoins as {new_id}")
    if kind == "lag-drift":
        stateful = [t.id for t in inst.streams.tasks if t.stateful]
        f = rng.lognormal(0.0, b.p.drift, size=len(stateful))
        factors = tuple((tid, round(float(x), 4)) for tid, x in zip(stateful, f.tolist(), strict=True))
        return StreamsEvent(kind, factors=factors, detail=f"time passes (probing rebalance), drift sigma {b.p.drift}")
    if kind == "partition-expansion":
        subs = inst.streams.subtopologies or ()
        s = subs[int(rng.integers(len(subs)))]
        old = max(n for _, n in s.source_topics)
        grow = old
        if b.p.max_tasks is not None:
            grow = max(1, min(old, b.p.max_tasks - len(inst.streams.tasks)))
        new_n = old + int(rng.integers(1, grow + 1))
        sub = Subtopology(s.id, tuple((name, new_n) for name, _ in s.source_topics), s.stateful, s.stores)
        b.add_sizes(sub)
        racks = tuple((tid, src, chg) for tid, (src, chg) in b.add_racks(sub))
        return StreamsEvent(kind, subtopologies=(sub,), task_racks=racks,
                            detail=f"sub-topology {s.id}: {old} -> {new_n} tasks")
    raise ValueError(f"unknown Streams event kind {kind!r}")


def _restart(b: _Builder, inst: Instance, cid: str, done: int, total: int) -> StreamsEvent:
    """One step of a rolling restart; in a KIP-1071 scenario the client's members rejoin under new ids."""
    client = next(c for c in inst.streams.clients if c.id == cid)
    fresh = ((cid, tuple(b.member_id() for _ in client.members)),) if client.members is not None else ()
    return StreamsEvent("rolling-restart", restart=(cid,), new_members=fresh,
                        detail=f"restart {done}/{total}: {cid} (state kept)")


def generate_streams(params: StreamsScenarioParams, seed: int) -> StreamsScenario:
    """Generate the Streams scenario of ``(params, seed)``; the same inputs give the same scenario.

    Examples
    --------
    >>> s = generate_streams(StreamsScenarioParams(clients=3, steps=4), seed=7)
    >>> len(s.initial.streams.clients), len(s.events)
    (3, 4)
    >>> generate_streams(StreamsScenarioParams(clients=3, steps=4), seed=7) == s
    True
    """
    seed = check_seed(seed)
    b = _Builder(params, seed)
    first = _initial(b)
    sid = scenario_id(params, seed)
    initial = Instance(f"scenario-{sid}", "streams", {}, (), (), first.streams)
    # membership and tasks only: the stripped state has no lags, so the sizes are never read
    no_lags = LagModel({}, 0, 0)
    events = draw_events(
        b.rng, params.steps, params.events, strip_state(initial),
        applicable=lambda st, k: _applicable(b, st, k), draw=lambda st, k: _draw(b, st, k),
        restart=lambda st, cid, done, total: _restart(b, st, cid, done, total),
        advance=lambda st, ev: apply_streams_event(st, ev, None, no_lags),
        ids=lambda st: [c.id for c in st.streams.clients])
    model = LagModel(b.sizes, params.restore_rate, params.lag_growth)
    return StreamsScenario(sid, params, seed, initial, tuple(events), model)
