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
halves compared as *signed* longs (see :func:`uuid_sort_key`).
"""

from __future__ import annotations

import uuid as _uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

#: Lag value meaning "this client has no local state for the task": a full restore.
NO_STATE: int = 2**63  # beyond any Java long lag
#: Kafka's ``Task.LATEST_OFFSET`` sentinel: the client ran the task as an active.
LATEST_OFFSET: int = -2


#: Largest subtopology and partition number of a task id (a Java ``int`` in Kafka's ``TaskId``).
TASK_PART_MAX = 2**31 - 1


def parse_task_id(task_id: str) -> tuple[int, int]:
    """Split ``"<subtopology>_<partition>"`` into two ints.

    Examples
    --------
    >>> parse_task_id("3_12")
    (3, 12)
    """
    left, sep, right = task_id.partition("_")
    if not sep or not left.isdigit() or not right.isdigit() or not left.isascii() or not right.isascii():
        raise ValueError(f"task id {task_id!r} is not '<subtopology>_<partition>'")
    # Kafka's TaskId holds both parts in a Java int; the length test keeps int() away from huge literals.
    sub = int(left) if len(left) <= 12 else TASK_PART_MAX + 1
    part = int(right) if len(right) <= 12 else TASK_PART_MAX + 1
    if sub > TASK_PART_MAX or part > TASK_PART_MAX:
        what = "subtopology" if sub > TASK_PART_MAX else "partition"
        raise ValueError(f"task id {task_id[:40]!r}: {what} above {TASK_PART_MAX} (Kafka's TaskId holds a 32-bit int)")
    return sub, part


def task_sort_key(task_id: str) -> tuple[int, int]:
    """Sort key giving Kafka's ``TaskId`` order (subtopology, then partition)."""
    return parse_task_id(task_id)


def _signed64(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def uuid_halves(process_id: str) -> tuple[int, int]:
    """The most and least significant 64 bits of a UUID as Java *signed* longs."""
    n = _uuid.UUID(process_id).int
    return _signed64(n >> 64), _signed64(n & ((1 << 64) - 1))


def uuid_sort_key(process_id: str) -> tuple[int, int]:
    """Sort key giving Java's ``UUID.compareTo`` order.

    Java compares ``mostSigBits`` then ``leastSigBits`` with ``Long.compare``,
    i.e. as signed numbers: a UUID starting with ``8``..``f`` sorts *before*
    one starting with ``0``..``7``.

    Examples
    --------
    >>> ids = ["00000000-0000-0000-0000-000000000001", "80000000-0000-0000-0000-000000000000"]
    >>> sorted(ids, key=uuid_sort_key)[0]
    '80000000-0000-0000-0000-000000000000'
    """
    return uuid_halves(process_id)


def uuid_java_hash(process_id: str) -> int:
    """Java's ``UUID.hashCode()`` (``hilo = msb ^ lsb; (int)(hilo >> 32) ^ (int) hilo``), signed 32-bit."""
    msb, lsb = uuid_halves(process_id)
    hilo = (msb ^ lsb) & ((1 << 64) - 1)
    h = ((hilo >> 32) ^ hilo) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


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
    """

    id: str
    stateful: bool = True
    stores: int | None = None

    @property
    def key(self) -> tuple[int, int]:
        """``(subtopology, partition)``: Kafka's task order."""
        return parse_task_id(self.id)

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
        Task id -> offsets behind, for stateful tasks the client has state for.
    """

    id: str
    process_id: str
    capacity: int = 1
    rack: str | None = None
    active: tuple[str, ...] = ()
    standby: tuple[str, ...] = ()
    lags: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "lags", MappingProxyType(dict(self.lags)))

    def lag_for(self, task: Task) -> int:
        """Kafka's ``ClientState.lagFor``.

        ``LATEST_OFFSET`` for a previous active, else the reported lag; a
        previous standby without a ``lags`` entry is taken as caught up (0); no
        state at all is :data:`NO_STATE` (ranks behind every known lag).
        """
        if task.id in self.active:
            return LATEST_OFFSET
        lag = self.lags.get(task.id)
        if lag is not None:
            return lag
        return 0 if task.id in self.standby else NO_STATE

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Client):
            return NotImplemented
        return (self.id, self.process_id, self.capacity, self.rack, self.active, self.standby,
                dict(self.lags)) == (other.id, other.process_id, other.capacity, other.rack, other.active,
                                     other.standby, dict(other.lags))

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
    """

    num_standby_replicas: int = 0
    acceptable_recovery_lag: int = 10000
    max_warmup_replicas: int = 2
    balance_factor: int = 1
    probing_rebalance_interval_ms: int = 600000


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
    """

    tasks: tuple[Task, ...]
    clients: tuple[Client, ...]
    config: StreamsConfig = field(default_factory=StreamsConfig)
    subtopologies: tuple[Subtopology, ...] | None = None

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
                and self.subtopologies == other.subtopologies)

    __hash__ = None  # type: ignore[assignment]


def _sorted_tasks(tasks: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(tasks), key=task_sort_key))


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
    """

    clients: Mapping[str, ClientAssignment]
    probing_rebalance: bool = False

    @classmethod
    def from_lists(
        cls,
        data: Mapping[str, Mapping[str, Iterable[str]]],
        probing_rebalance: bool = False,
    ) -> StreamsAssignment:
        """Build from ``{client: {"active": [...], "standby": [...], "warmup": [...]}}``.

        Examples
        --------
        >>> a = StreamsAssignment.from_lists({"c1": {"active": ["1_0", "0_2"]}, "c2": {}})
        >>> a.to_json_dict()["assignment"]["c1"]
        {'active': ['0_2', '1_0'], 'standby': [], 'warmup': []}
        """
        out = {
            cid: ClientAssignment(_sorted_tasks(d.get("active", ())), _sorted_tasks(d.get("standby", ())),
                                  _sorted_tasks(d.get("warmup", ())))
            for cid, d in data.items()
        }
        return cls(MappingProxyType(out), probing_rebalance)

    def to_json_dict(self) -> dict[str, Any]:
        """``{"assignment": {client: {active, standby, warmup}}, "probing_rebalance": bool}``, clients sorted."""
        return {
            "assignment": {
                cid: {"active": list(ca.active), "standby": list(ca.standby), "warmup": list(ca.warmup)}
                for cid, ca in sorted(self.clients.items())
            },
            "probing_rebalance": bool(self.probing_rebalance),
        }

    def get(self, client_id: str) -> ClientAssignment:
        """The client's tasks (empty if the client is absent)."""
        return self.clients.get(client_id, ClientAssignment())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamsAssignment):
            return NotImplemented
        return (dict(self.clients) == dict(other.clients)
                and self.probing_rebalance == other.probing_rebalance)

    __hash__ = None  # type: ignore[assignment]


def full_restore_lag(spec: StreamsSpec, task: Task) -> int:
    """What restoring ``task`` from scratch costs: the largest lag any client reports
    for it, but at least ``acceptable_recovery_lag + 1`` (a client without state is
    never caught up)."""
    known = [lag for c in spec.clients if (lag := c.lag_for(task)) != NO_STATE and lag >= 0]
    return max([*known, spec.config.acceptable_recovery_lag + 1])


def restore_costs(spec: StreamsSpec, task: Task, full: int | None = None) -> list[int]:
    """Restoration cost of placing ``task`` (active or standby) on each client, input order.

    0 on the previous active, the reported lag where the client has state (a
    previous standby without a reported lag: 0), the full restore
    (:func:`full_restore_lag`, or ``full`` if given) where it has none; 0 for
    stateless tasks.
    """
    if not task.stateful:
        return [0] * len(spec.clients)
    f = full if full is not None else full_restore_lag(spec, task)
    out = []
    for c in spec.clients:
        lag = c.lag_for(task)
        out.append(0 if lag == LATEST_OFFSET else (f if lag == NO_STATE else lag))
    return out


def is_caught_up(spec: StreamsSpec, client: Client, task: Task) -> bool:
    """Kafka's caught-up test: ran it as an active, or lag <= ``acceptable_recovery_lag``."""
    lag = client.lag_for(task)
    return lag == LATEST_OFFSET or 0 <= lag <= spec.config.acceptable_recovery_lag
