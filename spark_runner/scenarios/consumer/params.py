"""Consumer scenario parameters: the field checks, :class:`ScenarioParams` and :func:`scenario_id`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

from spark_runner.scenarios.checks import (
    MAX_SCENARIO_STEPS,
    CheckedParams,
    _choice,
    _events_check,
    _float_range,
    _int_at_least,
    _optional,
    size_problems,
)

SUBSCRIPTIONS = ("identical", "random", "two-groups", "skewed")
WEIGHTS = ("uniform", "zipf", "lognormal", "hot")
EVENT_KINDS = (
    "join",
    "leave",
    "crash",
    "rolling-restart",
    "subscription-change",
    "topic-added",
    "partition-expansion",
    "scale-out",
    "scale-in",
    "weight-drift",
)


#: Field name -> check of one value (None when fine).  The grid validator uses
#: these to name the exact YAML path of a bad value.
FIELD_CHECKS: Mapping[str, Callable[[Any], str | None]] = MappingProxyType({
    "members": _int_at_least(1),
    "topics": _int_at_least(1),
    "partitions_min": _int_at_least(1),
    "partitions_max": _int_at_least(1),
    "subscription": _choice(SUBSCRIPTIONS),
    "density": _float_range(0.0, 1.0, lo_open=True),
    "weights": _choice(WEIGHTS),
    "zipf_a": _float_range(1.0, 100.0, lo_open=True),
    "lognormal_sigma": _float_range(0.0, 5.0),
    "hot_partitions": _int_at_least(0),
    "hot_factor": _float_range(1.0),
    "racks": _int_at_least(0),
    "replication": _int_at_least(1),
    "copartition": _int_at_least(0),
    "static": _float_range(0.0, 1.0),
    "steps": _int_at_least(0, MAX_SCENARIO_STEPS),
    "events": _events_check(EVENT_KINDS),
    "scale_k": _int_at_least(1),
    "drift": _float_range(0.0, 5.0),
    "max_members": _optional(_int_at_least(1)),
    "min_members": _optional(_int_at_least(1)),
    "max_partitions": _optional(_int_at_least(1)),
})


@dataclass(frozen=True)
class ScenarioParams(CheckedParams):
    """Generator parameters of one scenario family (a point of a sweep grid).

    Attributes
    ----------
    members
        Initial group size.
    topics
        Initial number of topics.
    partitions_min, partitions_max
        Partition count of each topic, drawn uniformly in this range
        (co-partitioned topics share one count).
    subscription
        ``identical`` (every member subscribes to every topic), ``random``
        (each topic with probability ``density``, at least one),
        ``two-groups`` (a rolling update: the old version subscribes to every
        topic but the last, the new version to all; a random share starts on
        the new version and new members join with it), ``skewed`` (nested
        prefixes of the topic list; most members subscribe to few topics, a
        few to all).
    density
        Subscription probability for ``random`` and for topics added later.
    weights
        Partition loads: ``uniform`` (no weights, every partition counts 1),
        ``zipf`` (Zipf-distributed integers with exponent ``zipf_a``),
        ``lognormal`` (median 1, ``lognormal_sigma``), ``hot`` (weight 1
        except ``hot_partitions`` partitions of weight ``hot_factor``).
    racks
        Number of racks (0: no rack information).  Members get a random rack,
        every partition ``min(replication, racks)`` distinct replica racks.
    copartition
        Number of co-partition groups; group ``g`` pairs topics ``2g`` and
        ``2g + 1``, which are always subscribed together.
    static
        Share of members with a ``group.instance.id`` (static membership).
    steps
        Number of events after the initial assignment (fewer when at some step
        no listed event can apply).
    events
        Event kinds to draw from, uniformly among those that apply.
    scale_k
        Members added or removed by ``scale-out`` / ``scale-in``.
    drift
        Sigma of the lognormal factor of ``weight-drift``.
    max_members
        Cap on the group size for joins (``None``: ``2 * members + scale_k``).
    min_members
        Floor on the group size for leaves (``None``: ``max(1, members // 2)``).
    max_partitions
        Cap on the total topic-partitions: ``topic-added`` and
        ``partition-expansion`` stay below it (``None``: no cap).  The initial
        topics must fit: ``topics * partitions_max <= max_partitions``.
    """

    members: int = 6
    topics: int = 3
    partitions_min: int = 4
    partitions_max: int = 12
    subscription: str = "identical"
    density: float = 0.6
    weights: str = "uniform"
    zipf_a: float = 2.0
    lognormal_sigma: float = 1.0
    hot_partitions: int = 2
    hot_factor: float = 10.0
    racks: int = 0
    replication: int = 3
    copartition: int = 0
    static: float = 0.0
    steps: int = 10
    events: tuple[str, ...] = EVENT_KINDS
    scale_k: int = 2
    drift: float = 0.3
    max_members: int | None = None
    min_members: int | None = None
    max_partitions: int | None = None

    _CHECKS = FIELD_CHECKS

    def _cross_problems(self) -> list[tuple[str, str]]:
        out = []
        if self.partitions_min > self.partitions_max:
            out.append(("partitions_max", f"must be >= partitions_min ({self.partitions_min})"))
        spare = 1 if self.subscription == "two-groups" else 0
        if 2 * self.copartition + spare > self.topics:
            need = 2 * self.copartition + spare
            out.append(("copartition", f"{self.copartition} group(s) need at least {need} topics"
                                       f"{' with two-groups' if spare else ''}, there are {self.topics}"))
        if self.subscription == "two-groups" and self.topics < 2:
            out.append(("subscription", "two-groups needs at least 2 topics"))
        if self.max_members is not None and self.max_members < self.members:
            out.append(("max_members", f"must be >= members ({self.members})"))
        if self.max_partitions is not None and self.topics * self.partitions_max > self.max_partitions:
            out.append(("max_partitions", f"must be >= topics * partitions_max "
                                          f"({self.topics * self.partitions_max})"))
        if self.min_members is not None and self.min_members > self.members:
            out.append(("min_members", f"must be <= members ({self.members})"))
        if self.events == ("weight-drift",) and self.weights == "uniform":
            out.append(("events", "weight-drift alone needs weighted partitions (weights is uniform)"))
        parts = self.topics * self.partitions_max
        out += size_problems(("topics x partitions_max", parts, "partitions"),
                             ("members", self.member_cap, "max_members, or 2 x members + scale_k"),
                             parts * self.member_cap, f"{parts:,} partitions x {self.member_cap:,} members")
        return out

    @property
    def member_cap(self) -> int:
        """The effective cap on the group size."""
        return self.max_members if self.max_members is not None else 2 * self.members + self.scale_k

    @property
    def member_floor(self) -> int:
        """The effective floor on the group size."""
        return self.min_members if self.min_members is not None else max(1, self.members // 2)


class _CanonicalParams(Protocol):
    def canonical_json(self) -> str: ...


def scenario_id(params: _CanonicalParams, seed: int) -> str:
    """Stable id of the scenario generated from ``(params, seed)`` (consumer or Streams parameters).

    Examples
    --------
    >>> scenario_id(ScenarioParams(), 1) == scenario_id(ScenarioParams(), 1)
    True
    >>> scenario_id(ScenarioParams(), 1) == scenario_id(ScenarioParams(), 2)
    False
    """
    text = f"{params.canonical_json()}|{int(seed)}"
    return hashlib.sha1(text.encode()).hexdigest()[:16]
