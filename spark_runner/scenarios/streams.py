"""Kafka Streams rebalance scenarios: clients, tasks, lags and events, generated from (parameters, seed).

The Streams counterpart of :mod:`spark_runner.scenarios.consumer`.  A
:class:`StreamsScenario` is an initial ``protocol: streams``
:class:`~solver.model.Instance`, a tuple of concrete :class:`StreamsEvent`
objects and a :class:`LagModel` (changelog sizes and rates).  Every random
choice is made once by :func:`generate_streams` from
``numpy.random.Generator(PCG64(seed))``; :func:`apply_streams_event` is pure::

    next_instance = apply_streams_event(instance, event, assignment, scenario.lag_model)

Carry-over (what a client reports at step ``n + 1`` after the assignor's step ``n`` output)
----------------------------------------------------------------------------------------------
* a task the assignor gave the client as an **active** is a previous active
  (caught up, Kafka's ``LATEST_OFFSET``);
* a task given as a **standby or warm-up** is a previous standby whose lag
  shrinks by ``restore_rate`` (from its lag at step ``n``; from the task's
  full changelog size when the client had no state), never below 0;
* a task the client has state for but was not given keeps the state and
  falls behind by ``lag_growth`` (a former active starts from 0), capped at
  the changelog size;
* no state stays no state.  Stateless tasks never have lags.

Events (what the next rebalance sees)
-------------------------------------
``join`` / ``scale-out``
    one / ``scale_k`` new clients (fresh process id, threads drawn, no state),
    appended to the client list.
``leave`` / ``scale-in``
    one / ``scale_k`` clients leave with their state.
``crash``
    a client's process dies with its state directory: it comes back under
    the same name but a new process id (Kafka keeps the process id in the
    state directory since KAFKA-10716, so losing the state loses the id) and
    no state.
``rolling-restart``
    a block of consecutive steps, one per client in list order: the client
    restarts with the same process id and its state on disk, rejoining at the
    end of the list.  Nothing runs on it at the rebalance, so (as Kafka's
    task offset sums report it) its former actives become standbys with lag
    ``lag_growth`` and its standbys fall behind by ``lag_growth``.
``lag-drift``
    time passes without a membership change (a probing rebalance): the usual
    restoration progress, and every stale lag (state without a replica) is
    multiplied by a per-task lognormal factor (sigma ``drift``).
``partition-expansion``
    a sub-topology's source topic gains partitions: new tasks with no state
    anywhere (stateful ones get a changelog size).

KIP-1071 scenarios (``kip1071: true``: the Streams rebalance protocol)
----------------------------------------------------------------------
Every client lists its group **members**, one per stream thread, with member
ids as a Streams client makes them (22 base64url characters).  A member's
previous target is what the assignor gave *that member* (assignors that answer
per member: ``streams-server-sticky``, and the optimum, which shares each
process's tasks among its members); an assignor that answers per client has its
client's tasks dealt to the members round-robin in task order.  Every member
reports the offset sums of its process's state (changelog size minus lag) for
the tasks it does not run as an active, as Kafka 4.4 reads them; members have
reconciled their targets (no ``current_*``).  Process-level events keep their
meaning; a crashed or restarted process's members rejoin under new ids and
without targets (a restarted one still reports its state).  Three more events:

``member-join``
    a process gains a member (a thread), without targets;
``member-leave``
    a member of a process with two or more leaves; the tasks it ran stay on disk;
``member-restart``
    a member rejoins under a new id without targets; its process keeps the state.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.random import PCG64, Generator

from solver.model import Instance
from solver.resources import MEMBER_LIMIT
from solver.streams.model import (
    LATEST_OFFSET,
    NO_STATE,
    RACK_AWARE_STRATEGIES,
    Client,
    StreamsAssignment,
    StreamsConfig,
    StreamsMember,
    StreamsSpec,
    Subtopology,
    Task,
)
from spark_runner.scenarios.checks import (
    JAVA_LONG_MAX,
    MAX_SCENARIO_STEPS,
    CheckedParams,
    _choice,
    _events_check,
    _float_range,
    _int_at_least,
    _optional,
    check_seed,
    size_problems,
)
from spark_runner.scenarios.consumer import ScenarioParams, scenario_id
from spark_runner.scenarios.draws import (
    draw_events,
    draw_leavers,
    membership_applicable,
    random_rack,
    replica_racks,
)

PROTOCOL = "streams"
STREAMS_EVENT_KINDS = (
    "join",
    "leave",
    "crash",
    "rolling-restart",
    "scale-out",
    "scale-in",
    "lag-drift",
    "partition-expansion",
)
#: Events of KIP-1071 scenarios (``kip1071: true``) only: a process's members change.
MEMBER_EVENT_KINDS = ("member-join", "member-leave", "member-restart")
#: Initial state: ``fresh`` (no previous assignment, no state) or a running
#: application whose standbys and stale copies have lags of that profile.
INITIAL_STATES = ("fresh", "caught-up", "near", "far", "mixed")


#: Field name -> check of one value (None when fine), for the grid validator.
STREAMS_FIELD_CHECKS: Mapping[str, Callable[[Any], str | None]] = MappingProxyType({
    "protocol": _choice((PROTOCOL,)),
    "clients": _int_at_least(1),
    "threads_min": _int_at_least(1),
    "threads_max": _int_at_least(1),
    "subtopologies": _int_at_least(1),
    "partitions_min": _int_at_least(1),
    "partitions_max": _int_at_least(1),
    "stateful_share": _float_range(0.0, 1.0),
    "stores_max": _int_at_least(1),
    "standby_replicas": _int_at_least(0),
    # a lag is at most a task's state size, which is at least acceptable_recovery_lag + 1: both Java longs
    "acceptable_recovery_lag": _int_at_least(0, JAVA_LONG_MAX - 1),
    "max_warmup_replicas": _int_at_least(1),
    "initial": _choice(INITIAL_STATES),
    "stale_share": _float_range(0.0, 1.0),
    # state sizes are drawn up to ~150 x state_size (lognormal): 1e15 keeps them Java longs
    "state_size": _int_at_least(1, 10**15),
    "restore_rate": _int_at_least(0, JAVA_LONG_MAX),
    "lag_growth": _int_at_least(0, JAVA_LONG_MAX),
    "drift": _float_range(0.0, 5.0),
    "steps": _int_at_least(0, MAX_SCENARIO_STEPS),
    "events": _events_check(STREAMS_EVENT_KINDS + MEMBER_EVENT_KINDS, "Streams event kind"),
    "scale_k": _int_at_least(1),
    "max_clients": _optional(_int_at_least(1)),
    "min_clients": _optional(_int_at_least(1)),
    "max_tasks": _optional(_int_at_least(1)),
    "racks": _int_at_least(0),
    "replication": _int_at_least(1),
    "rack_strategy": _choice(RACK_AWARE_STRATEGIES),
    "rack_traffic_cost": _optional(_int_at_least(0)),
    "rack_non_overlap_cost": _optional(_int_at_least(0)),
    "kip1071": lambda v: None if isinstance(v, bool) else "expected true or false",
})

#: Rack parameters (added later): left out of scenario ids at these values, so earlier ids stay valid.
_RACK_DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "racks": 0, "replication": 3, "rack_strategy": "min_traffic", "rack_traffic_cost": None,
    "rack_non_overlap_cost": None, "kip1071": False,
})


@dataclass(frozen=True)
class StreamsScenarioParams(CheckedParams):
    """Generator parameters of one Streams scenario family (``protocol: streams`` in a grid).

    Attributes
    ----------
    protocol
        Always ``"streams"`` (the switch that selects this generator).
    clients
        Initial number of Kafka Streams clients (processes).
    threads_min, threads_max
        Stream threads (``capacity``) per client, uniform in the range.
    subtopologies
        Sub-topologies; each has one source topic whose partition count is
        uniform in ``[partitions_min, partitions_max]`` (one task per partition).
    stateful_share
        Probability that a sub-topology is stateful (at least one is, when > 0).
    stores_max
        A stateful sub-topology has between 1 and ``stores_max`` state stores (KIP-262).
    standby_replicas, acceptable_recovery_lag, max_warmup_replicas
        The application's ``num.standby.replicas``, ``acceptable.recovery.lag``
        and ``max.warmup.replicas``.
    initial
        ``fresh``: no previous assignment and no state.  Otherwise a running
        application: each task's previous active on a random client,
        ``standby_replicas`` standbys on other random clients and stale copies
        on each remaining client with probability ``stale_share``; standby and
        stale lags drawn from the profile ``caught-up`` (``[0, L]``), ``near``
        (``(L, min(4L, size)]``), ``far`` (half to all of the changelog) or ``mixed``
        (each of the three or no state, uniformly), ``L`` =
        ``acceptable_recovery_lag``.
    stale_share
        See ``initial``.
    state_size
        Median changelog size of a stateful task in offsets (lognormal, sigma
        0.5, at least ``acceptable_recovery_lag + 1``): what a full restore costs.
    restore_rate
        Offsets a standby or warm-up restores between two rebalances.
    lag_growth
        Offsets by which state without a replica falls behind per rebalance.
    drift
        Sigma of the per-task lognormal factor of ``lag-drift``.
    steps, events, scale_k
        As for the consumer generator (event kinds of :data:`STREAMS_EVENT_KINDS`).
    max_clients, min_clients
        Caps on the number of clients (``None``: ``2 * clients + scale_k`` and
        ``max(1, clients // 2)``).
    max_tasks
        Cap on the number of tasks for ``partition-expansion`` (``None``: no cap;
        the initial tasks must fit).
    racks
        Racks ``r0`` .. ``r{racks-1}`` (0: no rack data, as before).  Each client
        gets a uniform random rack; each task's source partition and each
        changelog partition (one per state store) its replicas on
        ``min(replication, racks)`` distinct random racks (KIP-925 rack data).
    replication
        Replicas per partition (for ``racks``).
    rack_strategy, rack_traffic_cost, rack_non_overlap_cost
        With ``racks > 0``: the application's ``rack.aware.assignment.strategy``,
        ``traffic_cost`` and ``non_overlap_cost`` (``None``: Kafka's default).
    kip1071
        The Streams rebalance protocol (KIP-1071): every client lists its group
        members, one per thread, and ``events`` may include
        :data:`MEMBER_EVENT_KINDS` (see the module docstring).
    """

    protocol: str = PROTOCOL
    clients: int = 4
    threads_min: int = 1
    threads_max: int = 2
    subtopologies: int = 2
    partitions_min: int = 4
    partitions_max: int = 8
    stateful_share: float = 0.75
    stores_max: int = 2
    standby_replicas: int = 1
    acceptable_recovery_lag: int = 10000
    max_warmup_replicas: int = 2
    initial: str = "fresh"
    stale_share: float = 0.25
    state_size: int = 100000
    restore_rate: int = 50000
    lag_growth: int = 2000
    drift: float = 0.5
    steps: int = 10
    events: tuple[str, ...] = STREAMS_EVENT_KINDS
    scale_k: int = 2
    max_clients: int | None = None
    min_clients: int | None = None
    max_tasks: int | None = None
    racks: int = 0
    replication: int = 3
    rack_strategy: str = "min_traffic"
    rack_traffic_cost: int | None = None
    rack_non_overlap_cost: int | None = None
    kip1071: bool = False

    _CHECKS = STREAMS_FIELD_CHECKS
    _WHAT = "Streams parameter"

    def _cross_problems(self) -> list[tuple[str, str]]:
        out = []
        if self.threads_min > self.threads_max:
            out.append(("threads_max", f"must be >= threads_min ({self.threads_min})"))
        if self.partitions_min > self.partitions_max:
            out.append(("partitions_max", f"must be >= partitions_min ({self.partitions_min})"))
        if self.max_clients is not None and self.max_clients < self.clients:
            out.append(("max_clients", f"must be >= clients ({self.clients})"))
        if self.min_clients is not None and self.min_clients > self.clients:
            out.append(("min_clients", f"must be <= clients ({self.clients})"))
        if self.max_tasks is not None and self.subtopologies * self.partitions_max > self.max_tasks:
            out.append(("max_tasks", f"must be >= subtopologies * partitions_max "
                                     f"({self.subtopologies * self.partitions_max})"))
        tasks = self.subtopologies * self.partitions_max
        replicas = 1 + min(self.standby_replicas, self.client_cap)
        out += size_problems(("subtopologies x partitions_max", tasks, "tasks"),
                             ("clients", self.client_cap, "max_clients, or 2 x clients + scale_k"),
                             tasks * self.client_cap * replicas,
                             f"{tasks:,} tasks x {self.client_cap:,} clients x {replicas} replica(s)")
        threads = self.client_cap * self.threads_max
        if threads > MEMBER_LIMIT:  # streams-server-sticky runs a group member per stream thread
            out.append(("threads_max", f"{self.client_cap:,} clients x {self.threads_max:,} threads is "
                                       f"{threads:,} stream threads (group members), more than {MEMBER_LIMIT:,}"))
        member_events = [e for e in self.events if e in MEMBER_EVENT_KINDS]
        if member_events and not self.kip1071:
            out.append(("events", f"{', '.join(member_events)} need kip1071: true (processes with members)"))
        return out

    def canonical_json(self) -> str:
        """Stable JSON for scenario ids; rack parameters at their defaults are left out.

        Examples
        --------
        >>> ["racks" in StreamsScenarioParams(racks=n).canonical_json() for n in (0, 2)]
        [False, True]
        """
        d = {k: v for k, v in self.to_dict().items() if not (k in _RACK_DEFAULTS and _RACK_DEFAULTS[k] == v)}
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    @property
    def client_cap(self) -> int:
        """The effective cap on the number of clients."""
        return self.max_clients if self.max_clients is not None else 2 * self.clients + self.scale_k

    @property
    def client_floor(self) -> int:
        """The effective floor on the number of clients."""
        return self.min_clients if self.min_clients is not None else max(1, self.clients // 2)


AnyParams = ScenarioParams | StreamsScenarioParams


def params_from_dict(data: Mapping[str, Any]) -> AnyParams:
    """Consumer or Streams parameters, by the ``protocol`` key (absent or ``consumer``: consumer).

    Examples
    --------
    >>> type(params_from_dict({"protocol": "streams", "clients": 3})).__name__
    'StreamsScenarioParams'
    >>> type(params_from_dict({"members": 3})).__name__
    'ScenarioParams'
    """
    proto = data.get("protocol", "consumer")
    if proto == PROTOCOL:
        return StreamsScenarioParams.from_dict(data)
    if proto != "consumer":
        raise ValueError(f"protocol must be 'consumer' or 'streams', got {proto!r}")
    return ScenarioParams.from_dict({k: v for k, v in data.items() if k != "protocol"})


def protocol_of(params: AnyParams) -> str:
    """``"streams"`` or ``"consumer"``."""
    return PROTOCOL if isinstance(params, StreamsScenarioParams) else "consumer"


# --------------------------------------------------------------------------- lag model and events


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


# --------------------------------------------------------------------------- scenario


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

