"""Kafka's KIP-848 server-side ``RangeAssignor`` (group coordinator, October 2024).

At Kafka commit 1eb7644349cb the group coordinator's range assignor is not
sticky: it sorts the members (static members first by ``member.instance.id``,
then dynamic ones by member id, Java ``String`` order) and gives each
subscriber of a topic a contiguous range, the first ``partitions % subscribers``
one partition more.  Homogeneous and heterogeneous groups take two code paths
in Kafka that produce this same rule.  It ignores racks, topic ids and the
members' current assignments, so on consumer-protocol input it matches the
client ``range`` without racks.
"""

from __future__ import annotations

import numpy as np

from heuristics.range import member_info_order, range_owners, subscribers_by_topic
from heuristics.versions import SERVER_RANGE
from solver.model import Assignment, Instance
from solver.registry import register
from solver.result import Params, Result


def server_range_assign(instance: Instance) -> Assignment:
    """The group coordinator's ``RangeAssignor.assign`` on ``instance``.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t": 5},
    ...     "members": [{"id": "a", "topics": ["t"], "owned": {"t": [3, 4]}},
    ...                 {"id": "b", "topics": ["t"], "instance_id": "z"}]})
    >>> server_range_assign(inst).to_lists()
    {'a': {'t': [3, 4]}, 'b': {'t': [0, 1, 2]}}
    """
    return Assignment.from_owners(instance.member_ids, server_range_owner_arrays(instance))


def server_range_owner_arrays(instance: Instance) -> dict[str, np.ndarray]:
    """Topic -> owner member index per partition: sorted members, contiguous ranges."""
    subs = subscribers_by_topic(instance, member_info_order(instance))
    return {t: range_owners(instance.topics[t].partitions, members) for t, members in subs.items()}


@register(
    "server-range",
    kind="heuristic",
    protocol="consumer",
    summary="Kafka KIP-848 server-side range assignor (group coordinator, non-sticky contiguous ranges)",
    source="org.apache.kafka.coordinator.group.assignor.RangeAssignor (KIP-848)",
    versions=SERVER_RANGE,
)
def server_range_assignor(instance: Instance, params: Params) -> Result:
    """Registry entry for :func:`server_range_assign` (``params`` are not used)."""
    return Result(assignment=server_range_assign(instance))
