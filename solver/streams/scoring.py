"""Metrics of a Kafka Streams assignment (``protocol: streams``).

Stable names (JSON keys / Parquet columns):

``valid``, ``outcome``, ``violations``, ``unassigned_tasks``, ``duplicate_actives``,
``standby_shortfall``, ``not_caught_up_actives``, ``max_active_load``,
``min_active_load``, ``active_spread``, ``max_total_load``, ``min_total_load``,
``total_spread``, ``restoration_cost``, ``moved_actives``, ``standbys``,
``warmups``, ``probing_rebalance``, ``cross_rack_traffic``, ``max_member_tasks``,
``member_spread``, ``moved_member_actives``.

Loads are tasks per stream thread (divided by the client's ``capacity``);
*total* loads count actives, standbys and warm-ups (each replica runs on the
client).  ``restoration_cost`` uses the optimum's definition
(:func:`solver.streams.model.restore_costs`): the lag of every placed stateful
replica (active, standby or warm-up) on its client, 0 for the previous active,
the full restore for a client without state.

``cross_rack_traffic`` is KIP-925's traffic cost of the placement (Kafka's
``RackAwareTaskAssignor.getCost`` without its non-overlap term): every active
replica costs ``traffic_cost`` for each of its task's *source* partitions with
no replica on the client's rack, every standby and warm-up ``traffic_cost`` for
each *changelog* partition with no replica there; ``traffic_cost`` is
``config.rack_aware_assignment_traffic_cost``, or 10 when unset (what
``high-availability`` reads).  It is ``None`` when a placed replica lacks the
data (a client without a rack, a task without ``source_racks`` or, for a
standby, ``changelog_racks``).
"""

from __future__ import annotations

from typing import Any

from solver.model import Instance
from solver.streams.model import StreamsAssignment, StreamsSpec, is_caught_up, restore_costs

STREAMS_METRIC_NAMES = (
    "valid",
    "outcome",
    "violations",
    "unassigned_tasks",
    "duplicate_actives",
    "standby_shortfall",
    "not_caught_up_actives",
    "max_active_load",
    "min_active_load",
    "active_spread",
    "max_total_load",
    "min_total_load",
    "total_spread",
    "restoration_cost",
    "moved_actives",
    "standbys",
    "warmups",
    "probing_rebalance",
    "cross_rack_traffic",
    "max_member_tasks",
    "member_spread",
    "moved_member_actives",
)

MAX_LISTED = 50


def score_streams(instance: Instance, assignment: StreamsAssignment) -> dict[str, Any]:
    """Score a Streams assignment against its instance.

    Parameters
    ----------
    instance
        A ``protocol: streams`` instance.
    assignment
        The assignment (clients absent from it hold nothing).

    Returns
    -------
    dict
        Every metric of :data:`STREAMS_METRIC_NAMES`.

    Notes
    -----
    ``valid`` holds what Kafka Streams itself enforces
    (``TaskAssignmentUtils.validateTaskAssignment``, and a client's task map
    that holds each task once): every task has exactly one active, every
    task and client is known, no client holds a task twice (active, standby,
    warm-up), and no stateless task has a standby or warm-up.
    ``violations`` lists the broken rules (at most 50 lines); ``outcome`` is
    ``valid`` or ``invalid``.

    What Kafka allows but costs something is counted, not called invalid:
    ``standby_shortfall`` (standbys missing below ``min(num_standby_replicas,
    clients - 1)`` per stateful task; warm-ups not counted) and
    ``not_caught_up_actives`` (stateful actives on a client that is not caught
    up while another is; their restoration shows in ``restoration_cost``).  ``moved_actives`` counts tasks that
    had a previous active and now run on another client.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "protocol": "streams",
    ...     "tasks": [{"id": "0_0"}, {"id": "0_1"}],
    ...     "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001", "active": ["0_0"]},
    ...                 {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002"}]})
    >>> s = score_streams(inst, StreamsAssignment.from_lists({"a": {"active": ["0_0"]}, "b": {"active": ["0_1"]}}))
    >>> s["valid"], s["max_active_load"], s["restoration_cost"], s["moved_actives"], s["cross_rack_traffic"]
    (True, 1.0, 10001, 0, None)
    """
    spec: StreamsSpec = instance.streams
    clients = spec.clients
    idx = {c.id: i for i, c in enumerate(clients)}
    viol: list[str] = []
    n_viol = 0

    def bad(msg: str) -> None:
        nonlocal n_viol
        n_viol += 1
        if len(viol) < MAX_LISTED:
            viol.append(msg)

    for cid in assignment.clients:
        if cid not in idx:
            bad(f"{cid}: not a client of the instance")
    holders_active: dict[str, list[int]] = {t: [] for t in spec.task_ids}
    holders_standby: dict[str, list[int]] = {t: [] for t in spec.task_ids}
    holders_warm: dict[str, list[int]] = {t: [] for t in spec.task_ids}
    n_active = [0] * len(clients)
    n_total = [0] * len(clients)
    for c, cl in enumerate(clients):
        ca = assignment.get(cl.id)
        seen: set[str] = set()
        for kind, store in (("active", holders_active), ("standby", holders_standby), ("warmup", holders_warm)):
            for t in getattr(ca, kind):
                if t not in store:
                    bad(f"{cl.id}: unknown task {t}")
                    continue
                if t in seen:
                    bad(f"{cl.id}: holds task {t} twice")
                seen.add(t)
                store[t].append(c)
                n_total[c] += 1
                if kind == "active":
                    n_active[c] += 1

    required = min(spec.config.num_standby_replicas, max(len(clients) - 1, 0))
    cross: int | None = 0
    unassigned = dup = shortfall = not_caught = restore = moved = 0
    for task in spec.tasks:
        act = holders_active[task.id]
        if not act:
            unassigned += 1
            bad(f"task {task.id}: no active")
        elif len(act) > 1:
            dup += 1
            bad(f"task {task.id}: {len(act)} actives")
        if not task.stateful:
            if holders_standby[task.id] or holders_warm[task.id]:
                bad(f"task {task.id}: stateless task with a standby or warm-up")
        else:
            if len(holders_standby[task.id]) < required:
                shortfall += required - len(holders_standby[task.id])
            caught = [c for c, cl in enumerate(clients) if is_caught_up(spec, cl, task)]
            for c in act:
                if caught and c not in caught:
                    not_caught += 1
            costs = restore_costs(spec, task)
            restore += sum(costs[c] for c in act + holders_standby[task.id] + holders_warm[task.id])
            for c in holders_standby[task.id] + holders_warm[task.id]:
                cross = _add(cross, task.cross_rack_partitions(clients[c].rack, standby=True))
        for c in act:
            cross = _add(cross, task.cross_rack_partitions(clients[c].rack))
        prev = [c for c, cl in enumerate(clients) if task.id in cl.active]
        if prev and act and not any(c in prev for c in act):
            moved += 1

    def loads(counts: list[int]) -> list[float]:
        return [n / cl.capacity for n, cl in zip(counts, clients, strict=True)]

    la, lt = loads(n_active), loads(n_total)
    member_metrics = _member_metrics(spec, assignment, bad)
    extra = n_viol - len(viol)
    return {
        "valid": n_viol == 0,
        "outcome": "valid" if n_viol == 0 else "invalid",
        "violations": viol + ([f"... and {extra} more"] if extra > 0 else []),
        "unassigned_tasks": unassigned,
        "duplicate_actives": dup,
        "standby_shortfall": shortfall,
        "not_caught_up_actives": not_caught,
        "max_active_load": max(la, default=0.0),
        "min_active_load": min(la, default=0.0),
        "active_spread": (max(la) - min(la)) if la else 0.0,
        "max_total_load": max(lt, default=0.0),
        "min_total_load": min(lt, default=0.0),
        "total_spread": (max(lt) - min(lt)) if lt else 0.0,
        "restoration_cost": restore,
        "moved_actives": moved,
        "standbys": sum(len(v) for v in holders_standby.values()),
        "warmups": sum(len(v) for v in holders_warm.values()),
        "probing_rebalance": bool(assignment.probing_rebalance),
        "cross_rack_traffic": None if cross is None else cross * spec.config.traffic_cost,
        **member_metrics,
    }


def _member_metrics(spec: StreamsSpec, assignment: StreamsAssignment, bad: Any) -> dict[str, Any]:
    """``max_member_tasks``, ``member_spread``, ``moved_member_actives`` (``None`` without members)."""
    none = {"max_member_tasks": None, "member_spread": None, "moved_member_actives": None}
    if assignment.members is None or not spec.has_members:
        return none
    from solver.streams.members import synthetic_members

    given = dict(assignment.members)
    known: set[str] = set()
    counts: list[int] = []
    spread = 0
    ran_on: dict[str, str] = {}
    now_on: dict[str, str] = {}
    for c, cl in enumerate(spec.clients):
        if cl.members is None:
            continue  # a client listed without members: written out per client only (its members are kassign's)
        mine = synthetic_members(spec, c)
        ca = assignment.get(cl.id)
        process_tasks = set(ca.active) | set(ca.standby) | set(ca.warmup)
        here = []
        for m in mine:
            known.add(m.id)
            for t in m.owned_active:
                ran_on[t] = m.id
            ma = given.get(m.id)
            held = [] if ma is None else [*ma.active, *ma.standby, *ma.warmup]
            for t in held:
                if t not in process_tasks:
                    bad(f"member {m.id}: holds task {t}, which its process {cl.id} is not given")
            for t in ([] if ma is None else ma.active):
                now_on[t] = m.id
            here.append(len(held))
        counts.extend(here)
        if here:
            spread = max(spread, max(here) - min(here))
    for mid in given:
        if mid not in known:
            bad(f"member {mid}: not a member of the instance")
    moved = sum(1 for t, m in ran_on.items() if t in now_on and now_on[t] != m)
    return {"max_member_tasks": max(counts, default=0), "member_spread": spread, "moved_member_actives": moved}


def _add(total: int | None, part: int | None) -> int | None:
    return None if total is None or part is None else total + part
