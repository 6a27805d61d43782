"""Kafka's client-side ``RoundRobinAssignor``.

All topic-partitions of every subscribed topic are laid out sorted by topic
(Java ``String`` order, a ``TreeSet``) then partition; the members, in
``MemberInfo`` order (static members first by instance id, then member id),
form a circular iterator.  Each partition goes to the next member in the
circle that subscribes to its topic; members skipped on the way keep their
place, so the circle moves on from the receiver.

The loop is computed one topic at a time: inside a topic the receivers are the
topic's subscribers, taken cyclically from the first one at or after the
iterator's position, which numpy does without a per-partition Python loop.
"""

from __future__ import annotations

import numpy as np

from heuristics._java import java_string_key
from heuristics.range import member_info_order, subscriber_positions
from heuristics.versions import ROUNDROBIN
from solver.model import Assignment, Instance
from solver.registry import register
from solver.result import Params, Result


def roundrobin_assign(instance: Instance) -> Assignment:
    """Kafka's ``RoundRobinAssignor.assign`` on ``instance`` (``owned`` is ignored).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t0": 3, "t1": 3},
    ...     "members": [{"id": "C0", "topics": ["t0", "t1"]}, {"id": "C1", "topics": ["t0", "t1"]}]})
    >>> roundrobin_assign(inst).to_lists()
    {'C0': {'t0': [0, 2], 't1': [1]}, 'C1': {'t0': [1], 't1': [0, 2]}}
    """
    return Assignment.from_owners(instance.member_ids, roundrobin_owner_arrays(instance))


def roundrobin_owner_arrays(instance: Instance) -> dict[str, np.ndarray]:
    """Topic -> owner member index per partition under Kafka's round-robin rule."""
    order = member_info_order(instance)
    n_members = len(order)
    subs = subscriber_positions(instance, order)  # circle positions of each topic's subscribers
    order_arr = np.asarray(order, dtype=np.int64)
    owners: dict[str, np.ndarray] = {}
    cursor = 0  # circle position the iterator points at
    for t in sorted(subs, key=java_string_key):
        topic = instance.topics.get(t)
        if topic is None or topic.partitions == 0:
            continue
        eligible = subs[t]
        k = eligible.size
        start = int(np.searchsorted(eligible, cursor))  # first subscriber at or after the cursor
        receivers = eligible[(start + np.arange(topic.partitions, dtype=np.int64)) % k]
        owners[t] = order_arr[receivers]
        cursor = (int(receivers[-1]) + 1) % n_members
    return owners


@register(
    "roundrobin",
    kind="heuristic",
    protocol="consumer",
    summary="Kafka RoundRobinAssignor: all partitions sorted, dealt round-robin to subscribers",
    source="org.apache.kafka.clients.consumer.RoundRobinAssignor",
    versions=ROUNDROBIN,
)
def roundrobin_assignor(instance: Instance, params: Params) -> Result:
    """Registry entry for :func:`roundrobin_assign` (``params`` are not used)."""
    return Result(assignment=roundrobin_assign(instance))
