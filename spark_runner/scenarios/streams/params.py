"""Streams scenario parameters: the field checks, :class:`StreamsScenarioParams` and :func:`params_from_dict`."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from solver.resources import MEMBER_LIMIT
from solver.streams.model import (
    RACK_AWARE_STRATEGIES,
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
    size_problems,
)
from spark_runner.scenarios.consumer.params import ScenarioParams

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
