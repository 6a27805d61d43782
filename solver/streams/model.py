"""Immutable data of the Kafka Streams protocol: tasks, clients, config, assignments.

A Kafka Streams application is cut into *tasks* ``"<subtopology>_<partition>"``
(Kafka's ``TaskId``).  *Clients* are Kafka Streams instances (one process id
each) that run ``capacity`` stream threads.  The assignor places every task
as an *active* on one client and, for stateful tasks, up to
``num_standby_replicas`` *standby* replicas on other clients; KIP-441 adds
*warm-up* replicas that restore state on a client before the active moves
there.

Task order is Kafka's ``TaskId.compareTo``: subtopology, then partition.
Client order is Kafka's ``UUID.compareTo`` of the process id: the two 64-bit
halves compared as *signed* longs (see :func:`uuid_sort_key`).  The id
helpers live in :mod:`solver.streams.ids` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

# Task ids and process UUIDs, re-exported so ``solver.streams.model.parse_task_id`` etc. keep working.
from solver.streams.ids import TASK_PART_MAX as TASK_PART_MAX
from solver.streams.ids import parse_task_id, task_sort_key, uuid_sort_key
from solver.streams.ids import uuid_halves as uuid_halves
from solver.streams.ids import uuid_java_hash as uuid_java_hash

#: Lag value meaning "this client has no local state for the task": a full restore.
NO_STATE: int = 2**63  # beyond any Java long lag
#: Kafka's ``Task.LATEST_OFFSET`` sentinel: the client ran the task as an active.
LATEST_OFFSET: int = -2
#: Values of ``rack.aware.assignment.strategy`` (Kafka's ``StreamsConfig``).
RACK_AWARE_STRATEGIES: tuple[str, ...] = ("none", "min_traffic", "balance_subtopology")
#: What ``HighAvailabilityTaskAssignor`` reads for an unset ``rack.aware.assignment.traffic_cost``.
DEFAULT_RACK_TRAFFIC_COST: int = 10
#: What it reads for an unset ``rack.aware.assignment.non_overlap_cost``.
DEFAULT_RACK_NON_OVERLAP_COST: int = 1
#: Kafka's ``SubscriptionInfo.UNKNOWN_OFFSET_SUM``: the client has state for the task, its lag is unknown
#: (a ``null`` in ``lags``).  Kafka's lag ordering puts it first, its caught-up test (``0 <= lag``) fails.
UNKNOWN_LAG: int = -3


@dataclass(frozen=True)
class Task:
    """One Kafka Streams task.

    Attributes
    ----------
    id
        ``"<subtopology>_<partition>"``.
    stateful
        True when the task has state stores (changelogs to restore).
    stores
        Number of state stores as given (KIP-262), or ``None`` when not given;
        see :attr:`store_count`.
    source_racks
        One entry per source-topic partition the task reads: the racks of that
        partition's replicas (sorted), or ``None`` when not given (KIP-925).
    changelog_racks
        The same for the task's changelog partitions (stateful tasks only), or ``None``.
    """

    id: str
    stateful: bool = True
    stores: int | None = None
    source_racks: tuple[tuple[str, ...], ...] | None = None
    changelog_racks: tuple[tuple[str, ...], ...] | None = None

    @property
    def key(self) -> tuple[int, int]:
        """``(subtopology, partition)``: Kafka's task order."""
        return parse_task_id(self.id)

    def cross_rack_partitions(self, rack: str | None, standby: bool = False) -> int | None:
        """Partitions this task would read across racks on a client in ``rack``.

        An active reads its source partitions, a standby (or warm-up) its
        changelog partitions; a partition is *cross-rack* when none of its
        replicas is on ``rack`` (KIP-925's cost).  ``None`` when unknown: the
        client has no rack or the task no rack data for those partitions.

        Examples
        --------
        >>> t = Task("0_0", source_racks=(("r1",), ("r1", "r2")), changelog_racks=(("r2",),))
        >>> t.cross_rack_partitions("r2"), t.cross_rack_partitions("r2", standby=True), t.cross_rack_partitions(None)
        (1, 0, None)
        """
        parts = self.changelog_racks if standby else self.source_racks
        if rack is None or parts is None:
            return None
        return sum(1 for racks in parts if rack not in racks)

    @property
    def store_count(self) -> int:
        """State stores of the task: ``stores`` if given, else 1 for stateful and 0 for stateless tasks."""
        if self.stores is not None:
            return self.stores
        return 1 if self.stateful else 0


@dataclass(frozen=True)
class Subtopology:
    """A subtopology (Kafka's topic group) from which tasks are derived.

    Attributes
    ----------
    id
        Subtopology number (the ``<subtopology>`` of task ids).
    source_topics
        Source topic -> partition count.  Kafka's ``PartitionGrouper`` makes one
        task per partition number up to the largest count.
    stateful
        True when the subtopology has state stores.
    stores
        Number of state stores, or ``None`` (default by ``stateful``).
    """

    id: int
    source_topics: tuple[tuple[str, int], ...]
    stateful: bool = True
    stores: int | None = None

    def task_ids(self) -> list[str]:
        """Task ids of this subtopology, partition ascending."""
        n = max((p for _, p in self.source_topics), default=0)
        return [f"{self.id}_{p}" for p in range(n)]


@dataclass(frozen=True, eq=False)
class StreamsMember:
    """One member of a KIP-1071 Streams group: a stream thread of a Kafka Streams process.

    Under the Streams rebalance protocol (``group.protocol=streams``) the group
    coordinator assigns tasks to members; the members of one process share its
    process id (the :class:`Client`).

    Attributes
    ----------
    id
        The member id (unique in the group).
    active, standby
        The member's previous **target** assignment (what the coordinator holds
        for it), task ids.
    current_active, current_standby
        The tasks the member currently owns (has reconciled so far), or
        ``None``: the same as ``active`` / ``standby``.  Kafka 4.4's coordinator
        hands these to its assignor instead of the target (KAFKA-20790).
    task_offsets
        Task id -> the changelog offset sum the member last reported for a task
        whose state is on its process's disk (Kafka 4.4 reads it, KAFKA-20719).
    """

    id: str
    active: tuple[str, ...] = ()
    standby: tuple[str, ...] = ()
    current_active: tuple[str, ...] | None = None
    current_standby: tuple[str, ...] | None = None
    task_offsets: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "task_offsets", MappingProxyType(dict(self.task_offsets)))

    @property
    def owned_active(self) -> tuple[str, ...]:
        """The actives the member currently owns (``current_active``, else ``active``)."""
        return self.active if self.current_active is None else self.current_active

    @property
    def owned_standby(self) -> tuple[str, ...]:
        """The standbys the member currently owns (``current_standby``, else ``standby``)."""
        return self.standby if self.current_standby is None else self.current_standby

    def _key(self) -> tuple[Any, ...]:
        return (self.id, self.active, self.standby, self.current_active, self.current_standby,
                dict(self.task_offsets))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamsMember):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Client:
    """One Kafka Streams client (instance / process).

    Attributes
    ----------
    id
        Client name, unique.
    process_id
        The client's process UUID (Kafka orders clients by it).
    capacity
        Number of stream threads (``>= 1``).
    rack
        The client's rack, or ``None``.
    active
        Previously active tasks (caught up by definition).
    standby
        Previously standby tasks.
    lags
        Task id -> offsets behind, for stateful tasks the client has state for;
        ``None``: it has state, but its lag is unknown.
    members
        The process's group members under the Streams rebalance protocol
        (KIP-1071), one per stream thread, or ``None`` when not given
        (``capacity`` is then the thread count and ``active`` / ``standby`` the
        process's previous tasks).  When given, ``capacity`` is their number and
        ``active`` / ``standby`` the union of their targets.
    client_tags
        The client's ``client.tag.*`` configs (KIP-708): tag key -> value.  Kafka Streams spreads
        standbys over clients with other values of the keys ``config.rack_aware_assignment_tags``
        names (``high-availability``).
    """

    id: str
    process_id: str
    capacity: int = 1
    rack: str | None = None
    active: tuple[str, ...] = ()
    standby: tuple[str, ...] = ()
    lags: Mapping[str, int | None] = field(default_factory=lambda: MappingProxyType({}))
    members: tuple[StreamsMember, ...] | None = None
    client_tags: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # set views of active / standby: lag_for runs once per (task, client), tuples made it quadratic
    _active_set: frozenset[str] = field(init=False, repr=False, compare=False)
    _standby_set: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "lags", MappingProxyType(dict(self.lags)))
        object.__setattr__(self, "client_tags", MappingProxyType(dict(self.client_tags)))
        object.__setattr__(self, "_active_set", frozenset(self.active))
        object.__setattr__(self, "_standby_set", frozenset(self.standby))

    def lag_for(self, task: Task) -> int:
        """Kafka's ``ClientState.lagFor``.

        ``LATEST_OFFSET`` for a previous active, else the reported lag; a
        ``null`` lag is :data:`UNKNOWN_LAG` (Kafka's ``UNKNOWN_OFFSET_SUM``); a
        previous standby without a ``lags`` entry is taken as caught up (0); no
        state at all is :data:`NO_STATE` (ranks behind every known lag).
        """
        if task.id in self._active_set:
            return LATEST_OFFSET
        if task.id in self.lags:
            lag = self.lags[task.id]
            return UNKNOWN_LAG if lag is None else lag
        return 0 if task.id in self._standby_set else NO_STATE

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Client):
            return NotImplemented
        return (self.id, self.process_id, self.capacity, self.rack, self.active, self.standby,
                dict(self.lags), self.members, dict(self.client_tags)) == (
                    other.id, other.process_id, other.capacity, other.rack, other.active, other.standby,
                    dict(other.lags), other.members, dict(other.client_tags))

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class StreamsConfig:
    """Assignment configs of Kafka Streams (``AssignorConfiguration.AssignmentConfigs``).

    Attributes
    ----------
    num_standby_replicas
        Standby replicas per stateful task (``num.standby.replicas``, default 0).
    acceptable_recovery_lag
        A client whose lag is at most this is *caught up* (default 10000).
    max_warmup_replicas
        Warm-up replicas allowed at once (default 2).
    balance_factor
        KIP-441's balance factor (default 1); Kafka 3.x's assignor no longer
        reads it, the optimum does not either: recorded for completeness.
    probing_rebalance_interval_ms
        How soon a probing rebalance follows (default 600000 ms); informational.
    rack_aware_assignment_strategy
        ``rack.aware.assignment.strategy`` (KIP-925): ``"none"`` (default),
        ``"min_traffic"`` or ``"balance_subtopology"``.
    rack_aware_assignment_traffic_cost
        ``rack.aware.assignment.traffic_cost``, or ``None`` (Kafka's default:
        ``HighAvailabilityTaskAssignor`` then reads 10).
    rack_aware_assignment_non_overlap_cost
        ``rack.aware.assignment.non_overlap_cost``, or ``None`` (read as 1).
    active_on_caught_up
        The optimum's rule that a stateful active goes to a caught-up client
        whenever the task has one (default ``True``: KIP-441, where the assignor
        itself moves state through warm-ups and probing rebalances).  ``False``
        for a KIP-1071 group assigned by a broker-side KIP-1357 assignor: its
        assignment is the *target*, the coordinator stages the moves (Kafka
        4.4's ``AssignmentRefiner``), and the assignor can hand out neither
        warm-ups nor probing rebalances, so the rule would keep a joining
        instance without actives; restoration still costs (stage 3).
    rack_aware_assignment_tags
        ``rack.aware.assignment.tags`` (KIP-708): the client tag keys over whose values
        ``high-availability`` spreads each task's standbys (Kafka's ``ClientTagAwareStandbyTaskAssignor``);
        empty (default): the least-loaded standby placement.
    """

    num_standby_replicas: int = 0
    acceptable_recovery_lag: int = 10000
    max_warmup_replicas: int = 2
    balance_factor: int = 1
    probing_rebalance_interval_ms: int = 600000
    rack_aware_assignment_strategy: str = "none"
    rack_aware_assignment_traffic_cost: int | None = None
    rack_aware_assignment_non_overlap_cost: int | None = None
    active_on_caught_up: bool = True
    rack_aware_assignment_tags: tuple[str, ...] = ()

    @property
    def traffic_cost(self) -> int:
        """The traffic cost ``high-availability`` uses: the configured one, else 10."""
        cost = self.rack_aware_assignment_traffic_cost
        return DEFAULT_RACK_TRAFFIC_COST if cost is None else cost

    @property
    def non_overlap_cost(self) -> int:
        """The non-overlap cost ``high-availability`` uses: the configured one, else 1."""
        cost = self.rack_aware_assignment_non_overlap_cost
        return DEFAULT_RACK_NON_OVERLAP_COST if cost is None else cost


@dataclass(frozen=True, eq=False)
class StreamsSpec:
    """The Streams part of an instance.

    Attributes
    ----------
    tasks
        Every task, sorted in Kafka's task order.
    clients
        Clients in input order.
    config
        Assignment configs.
    subtopologies
        The subtopologies the tasks were derived from, or ``None`` for explicit tasks.
    standby_task_order
        The stateful task ids in the order KIP-924's ``StickyTaskAssignor``
        walks them when it places standbys (Kafka walks a ``HashSet`` whose
        order changes from run to run), or ``None``: task order.
    """

    tasks: tuple[Task, ...]
    clients: tuple[Client, ...]
    config: StreamsConfig = field(default_factory=StreamsConfig)
    subtopologies: tuple[Subtopology, ...] | None = None
    standby_task_order: tuple[str, ...] | None = None

    @property
    def task_ids(self) -> tuple[str, ...]:
        """Task ids in Kafka's order."""
        return tuple(t.id for t in self.tasks)

    def task(self, task_id: str) -> Task:
        """The task with id ``task_id`` (``KeyError`` if absent)."""
        for t in self.tasks:
            if t.id == task_id:
                return t
        raise KeyError(task_id)

    @property
    def client_ids(self) -> tuple[str, ...]:
        """Client ids in input order."""
        return tuple(c.id for c in self.clients)

    def clients_in_kafka_order(self) -> list[Client]:
        """Clients sorted by process id as Kafka's ``TreeMap<ProcessId, ...>`` does."""
        return sorted(self.clients, key=lambda c: uuid_sort_key(c.process_id))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamsSpec):
            return NotImplemented
        return (self.tasks == other.tasks and self.clients == other.clients and self.config == other.config
                and self.subtopologies == other.subtopologies
                and self.standby_task_order == other.standby_task_order)

    @property
    def has_members(self) -> bool:
        """True when the clients list their KIP-1071 group members."""
        return any(c.members is not None for c in self.clients)

    __hash__ = None  # type: ignore[assignment]


def _sorted_tasks(tasks: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(tasks), key=task_sort_key))


def _client_assignment(d: Mapping[str, Iterable[str]]) -> ClientAssignment:
    return ClientAssignment(_sorted_tasks(d.get("active", ())), _sorted_tasks(d.get("standby", ())),
                            _sorted_tasks(d.get("warmup", ())))


def _lists(holders: Mapping[str, ClientAssignment]) -> dict[str, dict[str, list[str]]]:
    return {k: {"active": list(ca.active), "standby": list(ca.standby), "warmup": list(ca.warmup)}
            for k, ca in sorted(holders.items())}


@dataclass(frozen=True, eq=False)
class ClientAssignment:
    """Tasks given to one client: actives, standbys and warm-ups (each sorted in task order)."""

    active: tuple[str, ...] = ()
    standby: tuple[str, ...] = ()
    warmup: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClientAssignment):
            return NotImplemented
        return (self.active, self.standby, self.warmup) == (other.active, other.standby, other.warmup)

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, eq=False)
class StreamsAssignment:
    """A Streams assignment: client id -> :class:`ClientAssignment`.

    ``warmup`` replicas are listed apart from ``standby``; Kafka reports both
    as standbys, so ``standby + warmup`` is what compares with Kafka's standby set.

    Attributes
    ----------
    clients
        Client id -> its tasks.
    probing_rebalance
        Whether a follow-up probing rebalance is requested (KIP-441).
    members
        Under the Streams rebalance protocol (KIP-1071): member id -> its
        tasks; each client's tasks are then the union of its members'.
        ``None`` for a per-client assignment.
    """

    clients: Mapping[str, ClientAssignment]
    probing_rebalance: bool = False
    members: Mapping[str, ClientAssignment] | None = None

    @classmethod
    def from_lists(
        cls,
        data: Mapping[str, Mapping[str, Iterable[str]]],
        probing_rebalance: bool = False,
        members: Mapping[str, Mapping[str, Iterable[str]]] | None = None,
    ) -> StreamsAssignment:
        """Build from ``{client: {"active": [...], "standby": [...], "warmup": [...]}}`` (and members alike).

        Examples
        --------
        >>> a = StreamsAssignment.from_lists({"c1": {"active": ["1_0", "0_2"]}, "c2": {}})
        >>> a.to_json_dict()["assignment"]["c1"]
        {'active': ['0_2', '1_0'], 'standby': [], 'warmup': []}
        >>> b = StreamsAssignment.from_lists({"c1": {"active": ["0_0", "0_1"]}}, members={
        ...     "m1": {"active": ["0_1"]}, "m2": {"active": ["0_0"]}})
        >>> b.to_json_dict()["members"]["m1"]
        {'active': ['0_1'], 'standby': [], 'warmup': []}
        """
        out = {cid: _client_assignment(d) for cid, d in data.items()}
        per_member = None if members is None else MappingProxyType({m: _client_assignment(d)
                                                                    for m, d in members.items()})
        return cls(MappingProxyType(out), probing_rebalance, per_member)

    def to_json_dict(self) -> dict[str, Any]:
        """``{"assignment": {client: {active, standby, warmup}}, "probing_rebalance": bool}``, clients sorted;
        ``"members"`` (member id -> tasks, sorted) beside ``assignment`` when the assignment is per member."""
        out: dict[str, Any] = {"assignment": _lists(self.clients)}
        if self.members is not None:
            out["members"] = _lists(self.members)
        out["probing_rebalance"] = bool(self.probing_rebalance)
        return out

    def get(self, client_id: str) -> ClientAssignment:
        """The client's tasks (empty if the client is absent)."""
        return self.clients.get(client_id, ClientAssignment())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamsAssignment):
            return NotImplemented
        return (dict(self.clients) == dict(other.clients)
                and self.probing_rebalance == other.probing_rebalance
                and (None if self.members is None else dict(self.members))
                == (None if other.members is None else dict(other.members)))

    __hash__ = None  # type: ignore[assignment]


def full_restore_lag(spec: StreamsSpec, task: Task) -> int:
    """What restoring ``task`` from scratch costs: the largest lag any client reports
    for it, but at least ``acceptable_recovery_lag + 1`` (a client without state is
    never caught up)."""
    return _full_restore([c.lag_for(task) for c in spec.clients], spec.config.acceptable_recovery_lag)


def _full_restore(lags: list[int], acceptable_recovery_lag: int) -> int:
    return max([*(lag for lag in lags if lag != NO_STATE and lag >= 0), acceptable_recovery_lag + 1])


def _restore_cost(lag: int, full: int) -> int:
    # no state, or state of unknown lag (the worst case): a full restore
    return 0 if lag == LATEST_OFFSET else (full if lag in (NO_STATE, UNKNOWN_LAG) else lag)


def _caught_up(lag: int, acceptable_recovery_lag: int) -> bool:
    return lag == LATEST_OFFSET or 0 <= lag <= acceptable_recovery_lag


def restore_costs(spec: StreamsSpec, task: Task, full: int | None = None) -> list[int]:
    """Restoration cost of placing ``task`` (active or standby) on each client, input order.

    0 on the previous active, the reported lag where the client has state (a
    previous standby without a reported lag: 0), the full restore
    (:func:`full_restore_lag`, or ``full`` if given) where it has none or its
    lag is unknown (the worst case); 0 for stateless tasks.
    """
    return task_placement(spec, task, full)[0]


def is_caught_up(spec: StreamsSpec, client: Client, task: Task) -> bool:
    """Kafka's caught-up test: ran it as an active, or lag <= ``acceptable_recovery_lag``."""
    return _caught_up(client.lag_for(task), spec.config.acceptable_recovery_lag)


def task_placements(spec: StreamsSpec, full: int | None = None) -> list[tuple[list[int], list[bool]]]:
    """:func:`task_placement` of every task (task order), from the clients' state only.

    A client without state for a task (not a previous active or standby, no
    ``lags`` entry) costs the full restore and is not caught up, so only the
    clients with state are looked at: linear in the state reported, not in
    tasks x clients (10,000 tasks x 500 clients: 0.3 s instead of 7 s).
    """
    acc = spec.config.acceptable_recovery_lag
    m = len(spec.clients)
    by_id = {t.id: t for t in spec.tasks}
    holders: dict[str, list[int]] = {}
    for c, cl in enumerate(spec.clients):
        for tid in {*cl.active, *cl.lags, *cl.standby}:
            if tid in by_id:
                holders.setdefault(tid, []).append(c)
    out: list[tuple[list[int], list[bool]]] = []
    for task in spec.tasks:
        have = sorted(holders.get(task.id, ()))
        lags = [spec.clients[c].lag_for(task) for c in have]
        caught = [False] * m
        for c, lag in zip(have, lags, strict=True):
            caught[c] = _caught_up(lag, acc)
        if not task.stateful:
            out.append(([0] * m, caught))
            continue
        f = full if full is not None else _full_restore(lags, acc)
        costs = [f] * m
        for c, lag in zip(have, lags, strict=True):
            costs[c] = _restore_cost(lag, f)
        out.append((costs, caught))
    return out


def task_placement(spec: StreamsSpec, task: Task, full: int | None = None) -> tuple[list[int], list[bool]]:
    """:func:`restore_costs` and :func:`is_caught_up` of ``task`` on every client (input order), from one
    pass over the clients' lags."""
    acc = spec.config.acceptable_recovery_lag
    lags = [c.lag_for(task) for c in spec.clients]
    caught = [_caught_up(lag, acc) for lag in lags]
    if not task.stateful:
        return [0] * len(lags), caught
    f = full if full is not None else _full_restore(lags, acc)
    return [_restore_cost(lag, f) for lag in lags], caught
