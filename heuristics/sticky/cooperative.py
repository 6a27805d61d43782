"""Kafka's ``CooperativeStickyAssignor`` (KIP-429 on top of the sticky algorithm).

The sticky assignment of :mod:`heuristics.sticky.core`, then Kafka's
``adjustAssignment``: a partition that changes owner is removed from its new
owner's assignment this round (its old owner revokes it first).  On the
constrained path Kafka's own ``partitionsTransferringOwnership`` decides which
(newly handed out partitions that some member had to give up, or that two
members claimed in one generation); on the general path a partition is
withheld when its new owner did not claim it and some claimant loses it.

``kassign assign`` returns this first round, as Kafka does; the option
``rounds=settle`` (or ``settle=true``) runs the follow-up rebalances and
returns the settled assignment with the number of rounds.
"""

from __future__ import annotations

import time

from heuristics._cooperative import settle, wants_settle
from heuristics.sticky.core import run_sticky
from heuristics.versions import COOPERATIVE_STICKY
from solver.model import Assignment, Instance
from solver.registry import register
from solver.result import Params, Result


def cooperative_round(instance: Instance) -> tuple[Assignment, int]:
    """One cooperative rebalance: the assignment without withheld partitions, and their number.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"t1": 10}, "members": [
    ...     {"id": "C0", "topics": ["t1"], "owned": {"t1": [0, 1, 2, 3, 4]}, "generation": 1},
    ...     {"id": "C1", "topics": ["t1"], "owned": {"t1": [5, 6, 7, 8, 9]}, "generation": 1},
    ...     {"id": "C2", "topics": ["t1"]}]})
    >>> a, withheld = cooperative_round(inst)
    >>> a.to_lists(), withheld
    ({'C0': {'t1': [0, 1, 2, 3]}, 'C1': {'t1': [5, 6, 7]}, 'C2': {}}, 3)
    """
    out = run_sticky(instance)
    return out.assignment(withhold=True), int(out.transferring.sum())


@register(
    "cooperative-sticky",
    summary="Kafka CooperativeStickyAssignor: sticky, moving partitions withheld one round",
    source="org.apache.kafka.clients.consumer.CooperativeStickyAssignor; KIP-429, KAFKA-12464, KAFKA-16277, KIP-881",
    versions=COOPERATIVE_STICKY,
)
def cooperative_sticky(instance: Instance, params: Params) -> Result:
    """Registry entry for ``cooperative-sticky``.

    ``extra`` holds ``withheld`` (first round) or, when settling, ``rounds``.
    """
    t0 = time.perf_counter()
    if wants_settle(params.options):
        assignment, rounds = settle(instance, cooperative_round)
        return Result(assignment, seconds=time.perf_counter() - t0, extra={"rounds": rounds})
    out = run_sticky(instance)
    assignment = out.assignment(withhold=True)
    return Result(
        assignment,
        seconds=time.perf_counter() - t0,
        extra={
            "withheld": int(out.transferring.sum()),
            "path": "constrained" if out.constrained else "general",
        },
    )
