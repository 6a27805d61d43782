"""Streams events and lags: :class:`LagModel`, :class:`StreamsEvent` and the pure :func:`apply_streams_event`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from solver.model import Instance
from solver.streams.model import (
    LATEST_OFFSET,
    NO_STATE,
    Client,
    StreamsAssignment,
    StreamsMember,
    StreamsSpec,
    Subtopology,
    Task,
)


@dataclass(frozen=True)
class LagModel:
    """How lags evolve between rebalances (fixed for a scenario).

    Attributes
    ----------
    sizes
        Changelog size (offsets) of every stateful task the scenario ever has.
    restore_rate, lag_growth
        See :class:`StreamsScenarioParams`.
    """

    sizes: Mapping[str, int]
    restore_rate: int
    lag_growth: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", MappingProxyType(dict(self.sizes)))


@dataclass(frozen=True)
class NewClient:
    """A client joining (no state); ``members``: its member ids in a KIP-1071 scenario."""

    id: str
    process_id: str
    capacity: int
    rack: str | None = None
    members: tuple[str, ...] = ()

    def client(self) -> Client:
        """The client as it joins: no previous tasks, its members (if any) without targets."""
        members = tuple(StreamsMember(m) for m in self.members) if self.members else None
        return Client(self.id, self.process_id, self.capacity, self.rack, members=members)


#: Rack data of one task: ``(source_racks, changelog_racks)``.
TaskRacks = tuple[tuple[tuple[str, ...], ...] | None, tuple[tuple[str, ...], ...] | None]


@dataclass(frozen=True)
class StreamsEvent:
    """One concrete change; :func:`apply_streams_event` turns it into the next instance.

    Attributes
    ----------
    kind
        One of :data:`STREAMS_EVENT_KINDS`.
    remove
        Clients that leave.
    add
        Clients that join, appended in this order.
    crash
        ``(client id, new process id)``: the client loses its state and its id.
    restart
        Clients that restart with their state (moved to the end of the list).
    subtopologies
        Sub-topologies replaced (``partition-expansion``), in full.
    factors
        ``(task id, factor)`` multiplying stale lags (``lag-drift``).
    task_racks
        ``(task id, source racks, changelog racks)`` of the tasks a
        ``partition-expansion`` adds, when the scenario has racks.
    new_members
        KIP-1071: ``(client id, member ids)`` of a crashed or restarted client's
        members, which rejoin under these ids without targets.
    member_add
        ``(client id, member id)``: a member joins that client (``member-join``).
    member_remove
        Member ids that leave (``member-leave``).
    member_restart
        ``(old member id, new member id)`` (``member-restart``).
    detail
        Human-readable description.
    """

    kind: str
    remove: tuple[str, ...] = ()
    add: tuple[NewClient, ...] = ()
    crash: tuple[tuple[str, str], ...] = ()
    restart: tuple[str, ...] = ()
    subtopologies: tuple[Subtopology, ...] = ()
    factors: tuple[tuple[str, float], ...] = ()
    task_racks: tuple[tuple[str, tuple[tuple[str, ...], ...] | None, tuple[tuple[str, ...], ...] | None], ...] = ()
    new_members: tuple[tuple[str, tuple[str, ...]], ...] = ()
    member_add: tuple[tuple[str, str], ...] = ()
    member_remove: tuple[str, ...] = ()
    member_restart: tuple[tuple[str, str], ...] = ()
    detail: str = ""


def _lag_now(client: Client, task: Task) -> int | None:
    """The client's lag at this step: 0 for a previous active, None for no state."""
    lag = client.lag_for(task)
    if lag == LATEST_OFFSET:
        return 0
    return None if lag == NO_STATE else lag


def _tasks_of(subs: Sequence[Subtopology], racks: Mapping[str, TaskRacks] | None = None) -> list[Task]:
    racks = racks or {}
    tasks = [Task(tid, s.stateful, s.stores, *racks.get(tid, (None, None))) for s in subs for tid in s.task_ids()]
    return sorted(tasks, key=lambda t: t.key)


def _carry(client: Client, tasks: Sequence[Task], held: Any, model: LagModel,
           factors: Mapping[str, float], restarted: bool) -> Client:
    """The client's next state from its state now and what the assignor gave it (``held``)."""
    active: list[str] = []
    standby: list[str] = []
    lags: dict[str, int] = {}
    given_active = set(held.active) if held is not None else set()
    given_replica = (set(held.standby) | set(held.warmup)) if held is not None else set()
    for t in tasks:
        if t.id in given_active:
            if not restarted:
                active.append(t.id)
            elif t.stateful:  # nothing runs on a restarting client: its checkpoint is a bit behind
                standby.append(t.id)
                lags[t.id] = min(model.lag_growth, model.sizes[t.id])
            continue
        if not t.stateful:
            continue
        now = _lag_now(client, t)
        if t.id in given_replica:
            size = model.sizes[t.id]
            lag = max(0, (size if now is None else now) - model.restore_rate)
            if restarted:
                lag = min(size, lag + model.lag_growth)
            standby.append(t.id)
            lags[t.id] = lag
        elif now is not None:
            grown = now + model.lag_growth
            if t.id in factors:
                grown = round(grown * factors[t.id])
            lags[t.id] = min(model.sizes[t.id], grown)
    return Client(client.id, client.process_id, client.capacity, client.rack, tuple(active), tuple(standby), lags)


def _member_view(client: Client, model: LagModel, targets: Mapping[str, Any] | None,
                 fresh: Mapping[str, str] | None = None, state: bool = True) -> Client:
    """``client`` (its next client-level state) with its members' targets and reported offsets.

    ``targets``: member id -> what the assignor gave that member (``None``: deal the client's tasks
    round-robin); ``fresh``: old member id -> new id of members that rejoin without targets;
    ``state``: whether the members report the process's state (its lags) as offsets.
    """
    from solver.streams.model import task_sort_key

    old = client.members or ()
    ids = [(fresh or {}).get(m.id, m.id) for m in old]
    rejoined = {(fresh or {})[m.id] for m in old if m.id in (fresh or {})}
    active: dict[str, list[str]] = {m: [] for m in ids}
    standby: dict[str, list[str]] = {m: [] for m in ids}
    if targets is not None:
        for m in ids:
            got = targets.get(m)
            if got is not None and m not in rejoined:
                active[m] = [t for t in got.active if t in client.active]
                standby[m] = [t for t in (*got.standby, *got.warmup) if t in client.standby]
    else:
        dealt = [m for m in ids if m not in rejoined] or []
        k = 0
        for kind, tasks in ((active, client.active), (standby, client.standby)):
            for t in sorted(tasks, key=task_sort_key):
                if dealt:
                    kind[dealt[k % len(dealt)]].append(t)
                    k += 1
    held = {t for m in ids for t in (*active[m], *standby[m])}
    members = []
    for m in ids:
        offsets: dict[str, int] = {}
        if state:
            for t, lag in client.lags.items():
                if lag is not None and t in model.sizes:
                    offsets[t] = max(0, model.sizes[t] - lag)
            for t in client.active:
                if t in model.sizes and t not in active[m]:
                    offsets[t] = model.sizes[t]
        members.append(StreamsMember(m, tuple(active[m]), tuple(standby[m]), task_offsets=offsets))
    # the process-level view is what its members hold now
    act = tuple(t for t in client.active if t in held)
    sb = tuple(t for t in client.standby if t in held)
    lags = dict(client.lags)
    for t in client.active:  # a task no member runs stays on disk, caught up
        if t not in held and t in model.sizes:
            lags[t] = 0
    for t in client.standby:
        if t not in held and t not in lags:
            lags[t] = 0
    return Client(client.id, client.process_id, len(members) or client.capacity, client.rack, act, sb, lags,
                  tuple(members) if members else None)


def apply_streams_event(
    instance: Instance, event: StreamsEvent, assignment: StreamsAssignment | None, model: LagModel
) -> Instance:
    """The Streams application after ``event``, with previous tasks and lags from ``assignment``.

    Parameters
    ----------
    instance
        The state the assignment was computed for.
    event
        The change to apply.
    assignment
        An assignor's output on ``instance`` (``None``: nobody held anything,
        stale state still ages).
    model
        Changelog sizes and rates of the scenario.

    Returns
    -------
    Instance
        The next ``protocol: streams`` instance (see the module docstring for
        the carry-over rules).
    """
    spec: StreamsSpec = instance.streams
    subs = {s.id: s for s in spec.subtopologies or ()}
    for s in event.subtopologies:
        subs[s.id] = s
    sub_list = tuple(sorted(subs.values(), key=lambda s: s.id))
    racks: dict[str, TaskRacks] = {t.id: (t.source_racks, t.changelog_racks) for t in spec.tasks}
    racks.update((tid, (src, chg)) for tid, src, chg in event.task_racks)
    tasks = _tasks_of(sub_list, racks)
    removed = set(event.remove)
    crashed = dict(event.crash)
    restarted = set(event.restart)
    factors = dict(event.factors)
    renamed = dict(event.new_members)
    targets = None if assignment is None else assignment.members
    kept: list[Client] = []
    moved: list[Client] = []
    for c in spec.clients:
        if c.id in removed:
            continue
        if c.id in crashed:
            members = tuple(StreamsMember(m) for m in renamed.get(c.id, ())) or None
            kept.append(Client(c.id, crashed[c.id], len(members) if members else c.capacity, c.rack,
                               members=members))
            continue
        held = assignment.clients.get(c.id) if assignment is not None else None
        nxt = _carry(c, tasks, held, model, factors, c.id in restarted)
        if c.members is not None:
            fresh = dict(zip((m.id for m in c.members), renamed[c.id], strict=True)) if c.id in renamed else {}
            fresh.update(event.member_restart)
            nxt = _member_view(Client(nxt.id, nxt.process_id, nxt.capacity, nxt.rack, nxt.active, nxt.standby,
                                      nxt.lags, c.members), model, targets if targets is not None else None, fresh)
            nxt = _member_changes(nxt, event, model)
        (moved if c.id in restarted else kept).append(nxt)
    clients = [*kept, *moved, *(n.client() for n in event.add)]
    new_spec = StreamsSpec(tuple(tasks), tuple(clients), spec.config, sub_list)
    return Instance(instance.name, "streams", {}, (), (), new_spec)


def _member_changes(client: Client, event: StreamsEvent, model: LagModel) -> Client:
    """``member-join`` / ``member-leave`` on ``client`` (whose members hold their next targets)."""
    members = list(client.members or ())
    gone = set(event.member_remove)
    joined = [m for c, m in event.member_add if c == client.id]
    if not gone.intersection(m.id for m in members) and not joined:
        return client
    stay = [m for m in members if m.id not in gone]
    offsets = members[0].task_offsets if members else {}
    stay += [StreamsMember(m, task_offsets=dict(offsets)) for m in joined]
    return _member_view(Client(client.id, client.process_id, len(stay), client.rack, client.active,
                               client.standby, client.lags, tuple(stay)), model,
                        {m.id: _Held(m.active, m.standby) for m in stay})


@dataclass(frozen=True)
class _Held:
    """A member's tasks in the shape of a :class:`~solver.streams.model.ClientAssignment`."""

    active: tuple[str, ...]
    standby: tuple[str, ...]
    warmup: tuple[str, ...] = ()


def strip_state(instance: Instance) -> Instance:
    """``instance`` without previous tasks or lags (what the group looks like to the generator)."""
    spec: StreamsSpec = instance.streams
    clients = tuple(Client(c.id, c.process_id, c.capacity, c.rack,
                           members=None if c.members is None else tuple(StreamsMember(m.id) for m in c.members))
                    for c in spec.clients)
    return Instance(instance.name, "streams", {}, (), (), StreamsSpec(spec.tasks, clients, spec.config,
                                                                      spec.subtopologies))
