"""``lag-based``: the rule of ``LagBasedPartitionAssignor`` (``grantneale/kafka-lag-based-assignor``).

The lag-aware assignor that users who balance consumer groups by lag deploy
(Java, protocol name ``lag``).  It is not part of Apache Kafka; this module
implements the rule of its ``assign`` method, which works **one topic at a
time** and forgets everything between topics:

1. The topic's partitions are sorted by lag, largest first; equal lags by
   partition number ascending.
2. Each partition in that order goes to the topic's subscriber with the
   fewest partitions *of this topic* assigned so far, ties to the smallest
   total lag *of this topic* assigned so far, ties to the smallest member id
   (Java ``String.compareTo``).

No stickiness (``owned`` is ignored), member capacities and co-partitioning
are ignored, and a member's load on other topics plays no part.

**Lags come from the instance's weights**: partition ``p`` of topic ``T``
has lag ``topics.T.weights[p]`` (a topic without weights: every lag equal,
which is the Java rule on lags all 0).  ``kassign capture --weights lag``
writes exactly these lags: the end offset minus the group's committed offset,
or, for a partition without a commit, every retained record -- the Java
assignor's ``auto.offset.reset=earliest`` case (:func:`partition_lag`).  The
Java assignor counts lags in whole records (``long``): weights the instance writes
as integers (``0..2^63-1``) are compared exactly as such (:attr:`solver.model.Topic.lags`: 2^53 and
2^53 + 1 differ) and a consumer's total lag wraps past 2^63 - 1 as a Java ``long`` sum does; a
fractional weight is compared as the real number it is.

Because the subscribers all reach ``k`` partitions before any gets ``k + 1``,
a topic is dealt in rounds of one partition per subscriber; inside a round the
subscribers take the round's partitions (largest lag first) in order of
(lag so far, member id).  :func:`lag_based_owners` computes it that way, one
sort per round.
"""

from __future__ import annotations

import numpy as np

from heuristics._java import java_string_key
from solver.model import Assignment, Instance
from solver.model.semantics import subscribers
from solver.registry import register
from solver.result import Params, Result


def partition_lag(committed: int | None, begin: int, end: int, auto_offset_reset: str = "earliest") -> int:
    """A partition's lag as the Java assignor computes it (``computePartitionLag``).

    Parameters
    ----------
    committed
        The group's committed offset, ``None`` when it has none.
    begin, end
        The partition's earliest and end offsets (ListOffsets).
    auto_offset_reset
        Without a commit: ``latest`` counts nothing, anything else counts every
        retained record (``end - begin``).

    Returns
    -------
    int
        ``max(end - next, 0)`` with ``next`` the committed offset, else ``end``
        (``latest``) or ``begin``.

    Examples
    --------
    >>> partition_lag(5555, 1111, 9999), partition_lag(None, 1111, 9999, "latest")
    (4444, 0)
    """
    if committed is not None:
        nxt = committed
    elif auto_offset_reset.lower() == "latest":
        nxt = end
    else:
        nxt = begin
    return max(end - nxt, 0)


def assign_topic(lags: np.ndarray, sub_ranks: np.ndarray) -> np.ndarray:
    """One topic under the Java rule: for each partition, the position (into ``sub_ranks``) of its member.

    Parameters
    ----------
    lags
        Lag of each partition of the topic.
    sub_ranks
        Distinct member-id ranks (Java string order) of the topic's subscribers.

    Returns
    -------
    numpy.ndarray
        ``int64`` positions into ``sub_ranks``, one per partition.

    Examples
    --------
    The source's README example: lags 100,000, 50,000 and 60,000 over two consumers.

    >>> assign_topic(np.array([100_000.0, 50_000.0, 60_000.0]), np.array([0, 1])).tolist()
    [0, 1, 1]
    """
    n, k = int(lags.size), int(sub_ranks.size)
    out = np.full(n, -1, dtype=np.int64)
    if n == 0 or k == 0:
        return out
    exact = np.issubdtype(lags.dtype, np.integer)
    # largest lag first, equal lags by partition ascending (a stable sort of the negated lags; exact for int64
    # lags, which are >= 0)
    order = np.argsort(-lags, kind="stable")
    # integer lags are Java longs: compared exactly, and a consumer's total wraps past 2^63 - 1 as Java's does
    totals = np.zeros(k, dtype=np.int64 if exact else np.float64)
    for start in range(0, n, k):
        parts = order[start:start + k]
        takers = np.lexsort((sub_ranks, totals))[:parts.size]  # by (lag so far, member id)
        out[parts] = takers
        with np.errstate(over="ignore"):
            totals[takers] += lags[parts]
    return out


def lag_based_owners(instance: Instance) -> dict[str, np.ndarray]:
    """Topic -> owner member index per partition under the lag-based rule (``-1``: no subscriber).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1",
    ...     "topics": {"t0": {"partitions": 3, "weights": [100000, 50000, 60000]}},
    ...     "members": [{"id": "C1", "topics": ["t0"]}, {"id": "C0", "topics": ["t0"]}]})
    >>> {t: o.tolist() for t, o in lag_based_owners(inst).items()}  # C0 is member 1
    {'t0': [1, 0, 0]}
    """
    members = instance.members
    by_id = sorted(range(len(members)), key=lambda i: java_string_key(members[i].id))
    rank = np.empty(len(members), dtype=np.int64)
    rank[by_id] = np.arange(len(members), dtype=np.int64)
    subs = subscribers(instance)
    owners: dict[str, np.ndarray] = {}
    for t, topic in instance.topics.items():
        cand = np.asarray(subs.get(t, ()), dtype=np.int64)
        if cand.size == 0:
            owners[t] = np.full(topic.partitions, -1, dtype=np.int64)
            continue
        # exact integer lags when the instance wrote them as integers (2^53 and 2^53 + 1 differ, as Java longs)
        lags = topic.lags if topic.lags is not None else np.asarray(topic.weight_array(), dtype=np.float64)
        pos = assign_topic(lags, rank[cand])
        owners[t] = cand[pos]
    return owners


@register(
    "lag-based",
    summary="LagBasedPartitionAssignor: per topic, largest lag first to the subscriber with fewest, then least lag",
    source="grantneale/kafka-lag-based-assignor LagBasedPartitionAssignor (lags: the instance's weights)",
)
def lag_based(instance: Instance, params: Params) -> Result:
    """Assign with the lag-based rule (lags are the instance's weights; ``params`` are not used).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1",
    ...     "topics": {"t0": {"partitions": 3, "weights": [100000, 50000, 60000]}},
    ...     "members": [{"id": "C0", "topics": ["t0"]}, {"id": "C1", "topics": ["t0"]}]})
    >>> lag_based(inst, Params()).assignment.to_lists()
    {'C0': {'t0': [0]}, 'C1': {'t0': [1, 2]}}
    """
    return Result(assignment=Assignment.from_owners(instance.member_ids, lag_based_owners(instance)))
