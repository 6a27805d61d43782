"""Kafka's eager ``StickyAssignor`` (KIP-54).

Balanced first, sticky second: with identical subscriptions the constrained
path (KAFKA-9987 / KAFKA-12464 quotas), otherwise the general path with its
reassignment loop; see :mod:`heuristics.sticky.core`.  The previous
assignment and generation come from each member's user data, which in a
``kassign/v1`` instance are its ``owned`` and ``generation``.  Under the eager
protocol every member gives up everything before the rebalance, so the
answer is used at once.
"""

from __future__ import annotations

import time

from heuristics.sticky.core import run_sticky
from heuristics.versions import STICKY
from solver.model import Assignment, Instance
from solver.registry import register
from solver.result import Params, Result


def sticky_assign(instance: Instance) -> Assignment:
    """Kafka's ``StickyAssignor.assign`` on ``instance``.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t0": 3, "t1": 3},
    ...     "members": [{"id": "C0", "topics": ["t0", "t1"]}, {"id": "C1", "topics": ["t0", "t1"]}]})
    >>> sticky_assign(inst).to_lists()
    {'C0': {'t0': [0, 2], 't1': [1]}, 'C1': {'t0': [1], 't1': [0, 2]}}
    """
    return run_sticky(instance).assignment()


@register(
    "sticky",
    summary="Kafka StickyAssignor (eager): balanced, then as sticky as possible",
    source="org.apache.kafka.clients.consumer.StickyAssignor; KIP-54, KAFKA-12464, KAFKA-16277, KIP-881",
    versions=STICKY,
)
def sticky(instance: Instance, params: Params) -> Result:
    """Registry entry for ``sticky``; ``extra.path`` says which Kafka path ran."""
    t0 = time.perf_counter()
    out = run_sticky(instance)
    assignment = out.assignment()
    return Result(
        assignment,
        seconds=time.perf_counter() - t0,
        extra={"path": "constrained" if out.constrained else "general"},
    )
