"""The scorer: every metric of docs/format.md ("Metrics") for one assignment of one instance.

Metric names are stable (they are Parquet columns and JSON keys):

``valid``, ``outcome``, ``violations``, ``unassigned``, ``not_joinable``,
``copartition_violations``, ``max_load``, ``min_load``, ``spread``,
``sum_sq_load``, ``weighted_max_load``, ``moved``, ``moved_cost``,
``cross_rack``, ``locally_balanced``.

Loads are counted in topic-partitions (``weighted_*``: in partition weights)
and divided by member capacity.  ``max_load``, ``min_load``, ``spread`` and
``weighted_max_load`` range over *active* members, those subscribing to at
least one topic; ``sum_sq_load`` sums over every member.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from solver.model import Assignment, Instance
from solver.model.semantics import GroupView

#: At most this many violation messages are listed; the rest are counted.
MAX_VIOLATIONS_LISTED = 50

#: ``outcome`` of an assignment: valid; valid partition by partition but splitting co-partitioned units
#: (a stream-stream join reads wrong data, and the optimum, which keeps units together, is no yardstick:
#: its gaps are not defined); invalid.
VALID, SPLIT, INVALID = "valid", "split", "invalid"

METRIC_NAMES = (
    "valid",
    "outcome",
    "violations",
    "unassigned",
    "not_joinable",
    "copartition_violations",
    "max_load",
    "min_load",
    "spread",
    "sum_sq_load",
    "weighted_max_load",
    "moved",
    "moved_cost",
    "reassigned_unowned",
    "reassigned_unowned_cost",
    "cross_rack",
    "locally_balanced",
)


class _Violations:
    """Violation messages (one per kind and place), the list capped at MAX_VIOLATIONS_LISTED."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.count = 0

    def add(self, msg: str) -> None:
        self.count += 1
        if len(self.items) < MAX_VIOLATIONS_LISTED:
            self.items.append(msg)

    def listing(self) -> list[str]:
        extra = self.count - len(self.items)
        return self.items + ([f"... and {extra} more"] if extra > 0 else [])


def _fmt_parts(topic: str, parts: np.ndarray, limit: int = 5) -> str:
    shown = ", ".join(f"{topic}-{p}" for p in parts[:limit].tolist())
    return shown + (f" (+{parts.size - limit} more)" if parts.size > limit else "")


def score(instance: Instance, assignment: Assignment, view: GroupView | None = None) -> dict[str, Any]:
    """Score a consumer ``assignment`` against ``instance`` (:func:`solver.score` takes either protocol).

    Parameters
    ----------
    instance
        The group state (previous owners come from its members' ``owned``).
    assignment
        The assignment to score.  It may be invalid: unknown members, unknown
        topics, partitions out of range, duplicates and non-subscribers are
        reported in ``violations`` and make ``valid`` false.
    view
        Pre-computed :class:`~solver.model.semantics.GroupView` of ``instance``.

    Returns
    -------
    dict
        Every metric of :data:`METRIC_NAMES`.

    Notes
    -----
    ``valid``: every partition of a topic with at least one subscriber is
    assigned to exactly one member that subscribes to its topic.  Partitions
    of a co-partition group at or above the group's smallest partition count
    are *not joinable*: leaving them unassigned is counted in ``not_joinable``
    and is not a violation.  Co-partition violations (a unit spread over more
    than one member) are counted in ``copartition_violations`` and do not
    affect ``valid``.

    ``outcome`` sorts the assignment into one of three kinds that every
    report treats alike (:func:`outcome`): ``valid``; ``split`` (valid, but
    splits co-partitioned units); ``invalid``.  Gaps to the optimum are
    defined for ``valid`` ones only.

    ``moved`` counts partitions that had a previous owner and are now held by
    another member (a partition revoked and left unassigned is not moved: it
    is ``unassigned``); ``moved_cost`` sums their ``move_costs``.  ``reassigned_unowned`` counts the
    assigned partitions with no previous owner among the members -- reassigned from departed members (or
    new, or claimed by two members at one generation) -- and ``reassigned_unowned_cost`` their
    ``move_costs``: with ``moved`` the whole of the state that changes host.

    ``cross_rack`` counts assigned topic-partitions whose member has a rack
    and whose topic lists replica racks, none of them the member's rack.

    ``locally_balanced`` is Kafka's ``AbstractStickyAssignor.isBalanced``:
    true when the partition counts of all members differ by at most one, or
    when no assigned partition could move to another member that subscribes
    to its topic and holds at least two partitions fewer than its owner.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 3},
    ...     "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2]}},
    ...                 {"id": "b", "topics": ["T"]}]})
    >>> s = score(inst, Assignment.from_lists({"a": {"T": [0, 1]}, "b": {"T": [2]}}))
    >>> s["valid"], s["max_load"], s["moved"], s["locally_balanced"]
    (True, 2.0, 1, True)
    """
    if instance.protocol != "consumer":
        # the protocol dispatch lives in solver.api.score: solver.model knows no Streams scoring
        raise TypeError(f"solver.model.scoring.score scores consumer instances, not {instance.protocol!r}: "
                        "use solver.score")
    if not isinstance(assignment, Assignment):
        raise TypeError("a consumer instance is scored with an Assignment")
    view = view or GroupView(instance)
    topics = instance.topics
    members = instance.members
    n_members = len(members)
    index = view.index
    subs = [set(m.topics) for m in members]
    caps = np.array([m.capacity for m in members], dtype=np.float64)
    viol = _Violations()

    holders = {t: np.zeros(tp.partitions, dtype=np.int64) for t, tp in topics.items()}
    owner = {t: np.full(tp.partitions, -1, dtype=np.int64) for t, tp in topics.items()}
    held_by_prev = {t: np.zeros(tp.partitions, dtype=bool) for t, tp in topics.items()}
    counts = np.zeros(n_members, dtype=np.int64)
    weights = np.zeros(n_members, dtype=np.float64)
    cross_rack = 0
    rack_masks: dict[tuple[str, str], np.ndarray] = {}
    prev = view.previous_owners

    for mid, per_topic in assignment.members.items():
        i = index.get(mid)
        if i is None:
            n = sum(int(a.size) for a in per_topic.values())
            if n:
                viol.add(f"member {mid!r} is not in the instance but holds {n} partitions")
            continue
        for t, parts in per_topic.items():
            if t not in topics:
                viol.add(f"{mid} holds partitions of unknown topic {t!r}")
                continue
            n_parts = topics[t].partitions
            bad = (parts < 0) | (parts >= n_parts)
            if bad.any():
                viol.add(f"{mid} holds non-existent partitions {_fmt_parts(t, parts[bad])}")
                parts = parts[~bad]
            uniq = np.unique(parts)
            if uniq.size != parts.size:
                viol.add(f"{mid} lists a partition of {t} twice")
                parts = uniq
            if not parts.size:
                continue
            if t not in subs[i]:
                viol.add(f"{_fmt_parts(t, parts)} assigned to {mid}, which does not subscribe to {t}")
            holders[t][parts] += 1
            owner[t][parts] = i
            held_by_prev[t][parts[prev[t][parts] == i]] = True
            counts[i] += parts.size
            tw = topics[t].weights
            weights[i] += float(tw[parts].sum()) if tw is not None else float(parts.size)
            racks = topics[t].racks
            rack = members[i].rack
            if racks is not None and rack is not None:
                key = (t, rack)
                if key not in rack_masks:
                    rack_masks[key] = np.array([rack in r for r in racks], dtype=bool)
                cross_rack += int((~rack_masks[key][parts]).sum())

    unassigned = 0
    not_joinable = 0
    moved = 0
    moved_cost = 0.0
    unowned = 0
    unowned_cost = 0.0
    for t, tp in topics.items():
        h = holders[t]
        dup = np.flatnonzero(h > 1)
        if dup.size:
            viol.add(f"{_fmt_parts(t, dup)} assigned to more than one member")
        free = h == 0
        must = view.must_assign(t)
        missing = np.flatnonzero(free & must)
        if missing.size:
            unassigned += int(missing.size)
            viol.add(f"{_fmt_parts(t, missing)} unassigned")
        if view.subscribers[t] and t in view.group_of:
            not_joinable += int(free[view.limits[t]:].sum())
        mv = (prev[t] >= 0) & (h > 0) & ~held_by_prev[t]
        k = int(mv.sum())
        if k:
            moved += k
            moved_cost += float(tp.move_costs[mv].sum()) if tp.move_costs is not None else float(k)
        # assigned without a previous owner in the group: a departed member's (or a new) partition changes host
        un = (prev[t] < 0) & (h > 0)
        ku = int(un.sum())
        if ku:
            unowned += ku
            unowned_cost += float(tp.move_costs[un].sum()) if tp.move_costs is not None else float(ku)

    co_viol = 0
    for group in instance.copartition:
        lim = view.limits[group[0]]
        if lim == 0:
            continue
        own = np.stack([owner[t][:lim] for t in group])
        big = np.iinfo(np.int64).max
        lo = np.where(own >= 0, own, big).min(axis=0)
        hi = own.max(axis=0)
        co_viol += int(((hi >= 0) & (lo != hi)).sum())

    active = np.array([any(t in topics for t in s) for s in subs], dtype=bool)
    loads = counts / caps if n_members else counts.astype(np.float64)
    wloads = weights / caps if n_members else weights
    if active.any():
        max_load = float(loads[active].max())
        min_load = float(loads[active].min())
        wmax = float(wloads[active].max())
    else:
        max_load = min_load = wmax = 0.0

    return {
        "valid": viol.count == 0,
        "outcome": outcome(viol.count == 0, co_viol),
        "violations": viol.listing(),
        "unassigned": unassigned,
        "not_joinable": not_joinable,
        "copartition_violations": co_viol,
        "max_load": max_load,
        "min_load": min_load,
        "spread": max_load - min_load,
        "sum_sq_load": float((loads**2).sum()),
        "weighted_max_load": wmax,
        "moved": moved,
        "moved_cost": moved_cost,
        "reassigned_unowned": unowned,
        "reassigned_unowned_cost": unowned_cost,
        "cross_rack": cross_rack,
        "locally_balanced": _locally_balanced(instance, counts, owner, subs),
    }


def outcome(valid: Any, copartition_violations: Any = 0) -> str:
    """The assignment's kind: ``valid``, ``split`` (splits co-partitioned units) or ``invalid``.

    Missing values (``None``, NaN: an older row without the column) count as 0 violations.

    Examples
    --------
    >>> outcome(True, 0), outcome(True, 3), outcome(False, 3)
    ('valid', 'split', 'invalid')
    """
    if valid is None or not bool(valid):
        return INVALID
    try:
        split = float(copartition_violations or 0) > 0  # NaN > 0 is False
    except (TypeError, ValueError):
        split = False
    return SPLIT if split else VALID


def _locally_balanced(
    instance: Instance, counts: np.ndarray, owner: Mapping[str, np.ndarray], subs: list[set[str]]
) -> bool:
    """Kafka's ``isBalanced`` on partition counts (see :func:`score`)."""
    if counts.size == 0 or counts.max() - counts.min() <= 1:
        return True
    # Per topic, the two largest owner counts with distinct owners: a member m
    # compares itself with the fullest *other* owner of a partition it could take.
    top: dict[str, tuple[int, int, int]] = {}
    for t, own in owner.items():
        held = own[own >= 0]
        if held.size == 0:
            continue
        uniq = np.unique(held)
        c = counts[uniq]
        order = np.argsort(-c, kind="stable")
        first = int(uniq[order[0]])
        c1 = int(c[order[0]])
        c2 = int(c[order[1]]) if uniq.size > 1 else -1
        top[t] = (first, c1, c2)
    for i, s in enumerate(subs):
        mine = int(counts[i])
        for t in s:
            if t not in top:
                continue
            first, c1, c2 = top[t]
            other = c2 if first == i else c1
            if mine + 1 < other:
                return False
    return True
