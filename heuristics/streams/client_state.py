"""Shared state of the Kafka Streams task assignors: clients in Kafka order, tasks by index.

Tasks are numbered in Kafka's ``TaskId`` order and clients in ``ProcessId``
(``UUID.compareTo``) order, so comparing indices is comparing Kafka's keys.
:class:`ClientState` mirrors the parts of Kafka's ``ClientState`` the
assignors read: active and standby sets (Kafka keeps them in ``TreeSet``s, so
iteration is sorted) and the thread count.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from solver.model import Instance
from solver.registry import UnsupportedInstanceError
from solver.streams.model import Client, StreamsAssignment, StreamsSpec, Task, uuid_java_hash, uuid_sort_key


@dataclass
class ClientState:
    """Mutable per-client assignment state (Kafka's ``ClientState``)."""

    capacity: int
    active: set[int] = field(default_factory=set)
    standby: set[int] = field(default_factory=set)

    def has(self, task: int) -> bool:
        """``hasAssignedTask``: active or standby."""
        return task in self.active or task in self.standby

    def assigned_count(self) -> int:
        """``assignedTaskCount``."""
        return len(self.active) + len(self.standby)

    def assigned_load(self) -> float:
        """``assignedTaskLoad``: assigned tasks per thread."""
        return (len(self.active) + len(self.standby)) / self.capacity

    def active_load(self) -> float:
        """``activeTaskLoad``: active tasks per thread."""
        return len(self.active) / self.capacity

    def assign_active(self, task: int) -> None:
        """``assignActive`` (the task must not be assigned here yet)."""
        if self.has(task):
            raise AssertionError(f"task {task} already assigned to this client")
        self.active.add(task)

    def assign_standby(self, task: int) -> None:
        """``assignStandby`` (the task must not be assigned here yet)."""
        if self.has(task):
            raise AssertionError(f"task {task} already assigned to this client")
        self.standby.add(task)


@dataclass
class StreamsContext:
    """An instance's Streams data arranged for the assignors.

    Attributes
    ----------
    spec
        The Streams part of the instance.
    clients
        Clients in Kafka's process-id order (index = rank).
    tasks
        Tasks in Kafka's task order (index = rank).
    task_index
        Task id -> index.
    lag
        ``lag[c][t]``: Kafka's ``lagFor`` of client ``c`` on stateful task ``t``.
    java_hash
        ``ProcessId.hashCode()`` per client.
    """

    spec: StreamsSpec
    clients: list[Client]
    tasks: list[Task]
    task_index: dict[str, int]
    lag: list[list[int]]
    java_hash: list[int]

    @classmethod
    def of(cls, instance: Instance) -> StreamsContext:
        """Arrange ``instance`` (Streams protocol) for the assignors."""
        spec = instance.streams
        if instance.protocol != "streams" or not isinstance(spec, StreamsSpec):
            raise UnsupportedInstanceError("a Streams task assignor needs a protocol 'streams' instance")
        clients = sorted(spec.clients, key=lambda c: uuid_sort_key(c.process_id))
        tasks = list(spec.tasks)
        index = {t.id: i for i, t in enumerate(tasks)}
        lag = [[c.lag_for(t) if t.stateful else 0 for t in tasks] for c in clients]
        return cls(spec, clients, tasks, index, lag, [uuid_java_hash(c.process_id) for c in clients])

    @property
    def n_clients(self) -> int:
        """Number of clients."""
        return len(self.clients)

    def stateful(self) -> list[int]:
        """Indices of stateful tasks, in task order."""
        return [i for i, t in enumerate(self.tasks) if t.stateful]

    def stateless(self) -> list[int]:
        """Indices of stateless tasks, in task order."""
        return [i for i, t in enumerate(self.tasks) if not t.stateful]

    def fresh_states(self) -> list[ClientState]:
        """Empty client states (capacity = stream threads)."""
        return [ClientState(c.capacity) for c in self.clients]

    def prev_active(self, c: int) -> list[int]:
        """Previous active tasks of client ``c`` (task order)."""
        return sorted(self.task_index[t] for t in self.clients[c].active)

    def prev_standby(self, c: int) -> list[int]:
        """Previous standby tasks of client ``c`` (task order)."""
        return sorted(self.task_index[t] for t in self.clients[c].standby)

    def to_assignment(
        self,
        states: list[ClientState],
        warmups: list[set[int]] | None = None,
        probing_rebalance: bool = False,
    ) -> StreamsAssignment:
        """Build the output: standbys that are warm-ups are listed under ``warmup``."""
        data: dict[str, dict[str, Iterable[str]]] = {}
        for c, st in enumerate(states):
            warm = (warmups[c] & st.standby) if warmups is not None else set()
            data[self.clients[c].id] = {
                "active": [self.tasks[t].id for t in st.active],
                "standby": [self.tasks[t].id for t in st.standby - warm],
                "warmup": [self.tasks[t].id for t in warm],
            }
        return StreamsAssignment.from_lists(data, probing_rebalance)


def best_client(task: int, within: list[int], previous_active: int | None,
                standby_holder: Callable[[int, list[int]], int | None],
                least_loaded: Callable[[int, list[int]], int | None],
                should_balance: Callable[[int], bool]) -> int:
    """The choice Kafka's sticky task assignors share (``findClient`` in ``LegacyStickyTaskAssignor``,
    ``findBestClientForTask`` in KIP-924's ``StickyTaskAssignor``); each brings its own load rules.

    The only client of ``within``; else the previous active (when in ``within``) or the least loaded previous
    standby holder, unless it should shed load, then the least loaded standby holder unless it should too, then
    the least loaded client.
    """
    if len(within) == 1:
        return within[0]
    previous = previous_active if previous_active is not None and previous_active in within else (
        standby_holder(task, within))
    if previous is not None and not should_balance(previous):
        return previous
    if previous is not None:
        standby = standby_holder(task, within)
        if standby is not None and not should_balance(standby):
            return standby
    found = least_loaded(task, within)
    assert found is not None  # `within` is not empty
    return found
