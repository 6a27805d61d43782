"""The Kafka Streams protocol of ``kassign/v1``: schema, validation, reading and writing.

An instance gives either explicit ``tasks``::

    {"format": "kassign/v1", "protocol": "streams",
     "tasks": [{"id": "0_3", "stateful": true, "stores": 2,
                "source_racks": [["r1", "r2"]], "changelog_racks": [["r3"]]}],
     "clients": [{"id": "c1", "process_id": "<uuid>", "capacity": 2,
                  "active": ["0_3"], "standby": [], "lags": {}}],
     "config": {"num_standby_replicas": 1}}

or ``subtopologies`` from which the tasks are derived as Kafka's
``PartitionGrouper`` does (one task ``"<id>_<p>"`` per partition number ``p``
below the largest partition count of the subtopology's source topics)::

    "subtopologies": [{"id": 0, "source_topics": {"orders": 6, "payments": 4},
                       "stateful": true, "stores": 2}]

Every problem is reported at once with its JSON path, as on the consumer side.
The pydantic schema of the instance document is :mod:`solver.streams.schema`
(re-exported here).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from solver.errors import InstanceError, Problem, json_path
from solver.model import FORMAT, Instance
from solver.model.schema import meta_of, pydantic_problems
from solver.streams.client_tags import check_client_tags, check_tag_config
from solver.streams.model import (
    Client,
    StreamsAssignment,
    StreamsConfig,
    StreamsMember,
    StreamsSpec,
    Subtopology,
    Task,
    parse_task_id,
    task_sort_key,
)

# The instance schema, re-exported so ``solver.streams.format.TaskSpec`` etc. keep working.
from solver.streams.schema import (
    ClientSpec,
    ConfigSpec,
    JavaInt,
    JavaLong,
    MemberSpec,
    NonNegInt,
    NonNegLong,
    PosInt,
    RackName,
    StreamsInstanceSpec,
    SubtopologySpec,
    TaskSpec,
    _Strict,
)


def parse_streams_instance(data: dict[str, Any], source: str = "<input>",
                           prefix: tuple[str | int, ...] = ()) -> Instance:
    """Validate a Streams protocol document and build an :class:`~solver.model.Instance`.

    Parameters
    ----------
    data
        The decoded document (``protocol`` is ``"streams"``).
    source
        File name used in error messages.
    prefix
        JSON path of the instance inside the document.

    Returns
    -------
    Instance
        ``protocol == "streams"``, no topics or members, ``streams`` holds a
        :class:`~solver.streams.model.StreamsSpec`.

    Raises
    ------
    InstanceError
        With every problem found, each with its JSON path.

    Examples
    --------
    >>> inst = parse_streams_instance({"format": "kassign/v1", "protocol": "streams",
    ...     "subtopologies": [{"id": 1, "source_topics": {"a": 2, "b": 3}}],
    ...     "clients": [{"id": "c", "process_id": "00000000-0000-0000-0000-000000000001"}]})
    >>> inst.streams.task_ids
    ('1_0', '1_1', '1_2')
    """
    try:
        spec = StreamsInstanceSpec.model_validate(data)
    except ValidationError as e:
        raise InstanceError(source, pydantic_problems(e, prefix)) from None
    problems: list[Problem] = []

    def bad(loc: tuple[str | int, ...], msg: str) -> None:
        problems.append(Problem(json_path(prefix + loc), msg))

    tasks: list[Task] = []
    subtopologies: tuple[Subtopology, ...] | None = None
    if spec.tasks is not None and spec.subtopologies is not None:
        bad(("subtopologies",), "give either 'tasks' or 'subtopologies', not both")
    elif spec.tasks is None and spec.subtopologies is None:
        bad((), "give 'tasks' or 'subtopologies'")
    if spec.tasks is not None:
        if len(spec.tasks) > MAX_TASKS:
            from solver.resources import TooLargeError

            raise TooLargeError(source, [Problem(json_path((*prefix, "tasks")), _too_many_tasks(len(spec.tasks)))])
        tasks = _explicit_tasks(spec.tasks, bad)
    elif spec.subtopologies is not None:
        _check_derived_size(spec.subtopologies, source, prefix)
        subtopologies, tasks = _derived_tasks(spec.subtopologies, bad)
    by_id = {t.id: t for t in tasks}

    clients = _clients(spec.clients, by_id, bad)
    order = _standby_task_order(spec.standby_task_order, tasks, bad)
    check_tag_config(spec.config.rack_aware_assignment_tags, ("config", "rack_aware_assignment_tags"), bad)
    if problems:
        raise InstanceError(source, problems)
    c = spec.config
    config = StreamsConfig(c.num_standby_replicas, c.acceptable_recovery_lag, c.max_warmup_replicas,
                           c.balance_factor, c.probing_rebalance_interval_ms, c.rack_aware_assignment_strategy,
                           c.rack_aware_assignment_traffic_cost, c.rack_aware_assignment_non_overlap_cost,
                           c.active_on_caught_up, tuple(c.rack_aware_assignment_tags))
    streams = StreamsSpec(tuple(sorted(tasks, key=lambda t: t.key)), tuple(clients), config, subtopologies, order)
    meta = meta_of(spec)
    return Instance(spec.name, "streams", {}, (), (), streams, meta, spec.kafka_version)


def _standby_task_order(order: list[str] | None, tasks: list[Task], bad: Any) -> tuple[str, ...] | None:
    """``standby_task_order``: every stateful task once, nothing else."""
    if order is None:
        return None
    def key(tid: str) -> tuple[int, int] | str:
        """Kafka's TaskId: ``00_00`` and ``0_0`` are one task (both parts are numbers)."""
        try:
            return task_sort_key(tid)
        except ValueError:
            return tid

    stateful = {key(t.id): t for t in tasks if t.stateful}
    known = {key(t.id): t for t in tasks}
    seen: dict[tuple[int, int] | str, int] = {}
    out: list[str] = []
    for j, tid in enumerate(order):
        first = order[seen[key(tid)]] if key(tid) in seen else tid
        where = ("standby_task_order", j)
        k = key(tid)
        if k not in known:
            bad(where, f"task {tid!r} not in tasks")
        elif k not in stateful:
            bad(where, f"task {tid!r} is stateless: only stateful tasks get standbys")
        elif k in seen:
            # another spelling of one TaskId ('00_00' beside '0_0') says so
            same = "" if first == tid else f", the same TaskId as {first!r}"
            bad(where, f"task {tid!r} listed twice (also standby_task_order[{seen[k]}]{same})")
        else:
            out.append(known[k].id)  # the task's own spelling
        seen.setdefault(k, j)
    missing = [t.id for k, t in stateful.items() if k not in seen]
    if missing:
        shown = ", ".join(repr(t) for t in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        bad(("standby_task_order",), f"must list every stateful task once; missing {shown}")
    return tuple(out)


def _explicit_tasks(specs: list[TaskSpec], bad: Any) -> list[Task]:
    tasks: list[Task] = []
    seen: dict[tuple[int, int], int] = {}
    for i, t in enumerate(specs):
        try:
            key = parse_task_id(t.id)
        except ValueError as e:
            bad(("tasks", i, "id"), str(e))
            continue
        if key in seen:
            j = seen[key]
            same = "" if specs[j].id == t.id else f", the same TaskId as {specs[j].id!r}"
            bad(("tasks", i, "id"), f"duplicate task id {t.id!r} (also tasks[{j}]{same})")
            continue
        seen[key] = i
        if not t.stateful and t.stores:
            bad(("tasks", i, "stores"), "a stateless task has no state stores")
        if not t.stateful and t.changelog_racks is not None:
            bad(("tasks", i, "changelog_racks"), "a stateless task has no changelog partitions")
        source = _partition_racks(t.source_racks, ("tasks", i, "source_racks"), bad)
        changelog = _partition_racks(t.changelog_racks, ("tasks", i, "changelog_racks"), bad)
        tasks.append(Task(t.id, t.stateful, t.stores, source, changelog))
    return tasks


def _partition_racks(racks: list[list[str]] | None, where: tuple[str | int, ...],
                     bad: Any) -> tuple[tuple[str, ...], ...] | None:
    """Check one task's per-partition rack lists; returns them with each partition's racks sorted."""
    if racks is None:
        return None
    if not racks:
        bad(where, "a task reads at least one partition: give one rack list per partition")
    for j, part in enumerate(racks):
        if not part:
            bad((*where, j), "a partition's replicas are on at least one rack")
        elif len(set(part)) != len(part):
            bad((*where, j), "a rack is listed twice")
    return tuple(tuple(sorted(part)) for part in racks)


#: Most tasks of one Streams instance (a subtopology has one per partition number).  Every Streams engine runs
#: task by task in Python: 100,000 take 5-30 s per command (compare, frontier, the optimum), a million minutes.
MAX_TASKS = 100_000


def _too_many_tasks(n: int) -> str:
    return (f"{n:,} tasks, more than a Streams instance's limit of {MAX_TASKS:,} (the engines work task by task; "
            f"see docs/format.md#limits)")


def _check_derived_size(specs: list[SubtopologySpec], source: str, prefix: tuple[str | int, ...]) -> None:
    """Refuse subtopologies whose derived tasks would not fit in memory, before deriving them."""
    from solver.resources import BYTES_PER_PARSED_TASK, Need, TooLargeError, check_fits

    sizes = [max(s.source_topics.values(), default=0) for s in specs]
    if not sizes:
        return
    total = sum(sizes)
    i = max(range(len(sizes)), key=sizes.__getitem__)
    if total > MAX_TASKS:
        raise TooLargeError(source, [Problem(json_path((*prefix, "subtopologies", i, "source_topics")),
                                             _too_many_tasks(total))])
    check_fits(Need(total * BYTES_PER_PARSED_TASK, f"reading {total} tasks (one per partition number)",
                    json_path((*prefix, "subtopologies", i, "source_topics"))), source)


def _derived_tasks(specs: list[SubtopologySpec], bad: Any) -> tuple[tuple[Subtopology, ...], list[Task]]:
    subs: list[Subtopology] = []
    tasks: list[Task] = []
    seen: dict[int, int] = {}
    for i, s in enumerate(specs):
        if s.id in seen:
            bad(("subtopologies", i, "id"), f"duplicate subtopology id {s.id} (also subtopologies[{seen[s.id]}])")
            continue
        seen[s.id] = i
        if not s.source_topics:
            bad(("subtopologies", i, "source_topics"), "a subtopology needs at least one source topic")
        if not s.stateful and s.stores:
            bad(("subtopologies", i, "stores"), "a stateless subtopology has no state stores")
        sub = Subtopology(s.id, tuple(s.source_topics.items()), s.stateful, s.stores)
        subs.append(sub)
        tasks.extend(Task(tid, s.stateful, s.stores) for tid in sub.task_ids())
    return tuple(subs), tasks


def _clients(specs: list[ClientSpec], tasks: Mapping[str, Task], bad: Any) -> list[Client]:
    clients: list[Client] = []
    ids: dict[str, int] = {}
    pids: dict[str, int] = {}
    member_ids: dict[str, tuple[int, int]] = {}
    for i, c in enumerate(specs):
        members = None
        if c.members is not None:
            members = _members(c, i, tasks, member_ids, bad)
            c = _with_member_view(c, i, members, tasks, bad)
        if c.id in ids:
            bad(("clients", i, "id"), f"duplicate client id {c.id!r} (also clients[{ids[c.id]}])")
        ids.setdefault(c.id, i)
        pid = c.process_id
        try:
            pid = str(uuid.UUID(c.process_id))
        except ValueError:
            bad(("clients", i, "process_id"), f"{c.process_id!r} is not a UUID")
        else:
            if pid in pids:
                bad(("clients", i, "process_id"),
                    f"duplicate process id (also clients[{pids[pid]}]); one process is one client")
            pids.setdefault(pid, i)
        held: dict[str, str] = {}
        for kind in ("active", "standby"):
            for j, tid in enumerate(getattr(c, kind)):
                where = ("clients", i, kind, j)
                if tid not in tasks:
                    bad(where, f"task {tid!r} not in tasks")
                elif tid in held:
                    bad(where, f"task {tid!r} already listed in {held[tid]}")
                elif kind == "standby" and not tasks[tid].stateful:
                    bad(where, f"task {tid!r} is stateless and cannot have a standby")
                held.setdefault(tid, kind)
        for tid in c.lags:
            lag_at: tuple[str | int, ...] = ("clients", i, "lags", tid)
            if tid not in tasks:
                bad(lag_at, "task not in tasks")
            elif not tasks[tid].stateful:
                bad(lag_at, "a stateless task has no lag")
            elif held.get(tid) == "active":
                bad(lag_at, "task is in active (an active task is caught up: give no lag)")
        check_client_tags(c.client_tags, ("clients", i, "client_tags"), bad)
        clients.append(Client(c.id, pid, c.capacity, c.rack, tuple(c.active), tuple(c.standby),
                              {t: c.lags[t] for t in sorted(c.lags, key=_safe_key)}, members, c.client_tags))
    _synthetic_clash(specs, ids, member_ids, bad)
    return clients


def _synthetic_clash(specs: list[ClientSpec], ids: Mapping[str, int], member_ids: Mapping[str, tuple[int, int]],
                     bad: Any) -> None:
    """Refuse a member id that names a stream thread of a client listed without ``members``.

    In a group that lists members, a client without them is ``capacity`` members ``<client id>#<k>``
    (:func:`solver.streams.members.synthetic_members`); a real member of that name would be two members.
    """
    for mid, (i, j) in member_ids.items():
        client, sep, k = mid.rpartition("#")
        if not sep or not k.isascii() or not k.isdigit() or (len(k) > 1 and k[0] == "0") or client not in ids:
            continue
        other = specs[ids[client]]
        if other.members is None and int(k) < other.capacity:
            bad(("clients", i, "members", j, "id"),
                f"member id {mid!r} is the name of stream thread {k} of client {client!r}, which lists no "
                "members (such a client is read as members '<client id>#<k>'): rename the member or list "
                f"{client!r}'s members")


def _members(c: ClientSpec, i: int, tasks: Mapping[str, Task], seen: dict[str, tuple[int, int]],
             bad: Any) -> tuple[StreamsMember, ...]:
    """Check a process's KIP-1071 members (ids unique in the group, known tasks, standbys stateful)."""
    assert c.members is not None
    if not c.members:
        bad(("clients", i, "members"), "a process has at least one member (one per stream thread)")
    out = []
    process_held: dict[str, str] = {}  # target task -> member id, over the process
    for j, m in enumerate(c.members):
        here = ("clients", i, "members", j)
        if m.id in seen:
            a, b = seen[m.id]
            bad((*here, "id"), f"duplicate member id {m.id!r} (also clients[{a}].members[{b}])")
        seen.setdefault(m.id, (i, j))
        for active_key, standby_key in (("active", "standby"), ("current_active", "current_standby")):
            held: dict[str, str] = {}
            for kind in (active_key, standby_key):
                for k, tid in enumerate(getattr(m, kind) or ()):
                    at: tuple[str | int, ...] = (*here, kind, k)
                    if tid not in tasks:
                        bad(at, f"task {tid!r} not in tasks")
                    elif tid in held:
                        bad(at, f"task {tid!r} already listed in {held[tid]}")
                    elif kind == standby_key and not tasks[tid].stateful:
                        bad(at, f"task {tid!r} is stateless and cannot have a standby")
                    elif kind in ("active", "standby") and process_held.get(tid, m.id) != m.id:
                        bad(at, f"task {tid!r} is also in the target of member {process_held[tid]!r} of this "
                                "process: a process holds a task once")
                    elif kind in ("active", "standby"):
                        process_held.setdefault(tid, m.id)
                    held.setdefault(tid, kind)
        for tid in m.task_offsets:
            at = (*here, "task_offsets", tid)
            if tid not in tasks:
                bad(at, "task not in tasks")
            elif not tasks[tid].stateful:
                bad(at, "a stateless task has no state to report an offset for")
        out.append(StreamsMember(
            m.id, tuple(m.active), tuple(m.standby),
            None if m.current_active is None else tuple(m.current_active),
            None if m.current_standby is None else tuple(m.current_standby),
            {t: m.task_offsets[t] for t in sorted(m.task_offsets, key=_safe_key)}))
    return tuple(out)


def _with_member_view(c: ClientSpec, i: int, members: tuple[StreamsMember, ...], tasks: Mapping[str, Task],
                      bad: Any) -> ClientSpec:
    """The process-level fields of a client with members: ``capacity`` = members, ``active`` / ``standby``
    = the union of their targets (checked against what the client states, derived when it states nothing).

    The union keeps only what the members' own checks let through (each problem is reported there, once):
    known tasks, standbys of stateful tasks, a task once over the process.
    """
    updates: dict[str, Any] = {}
    if "capacity" in c.model_fields_set and members and c.capacity != len(members):
        bad(("clients", i, "capacity"), f"is {c.capacity}, the process has {len(members)} members "
                                        "(one per stream thread)")
    elif members:
        updates["capacity"] = len(members)
    taken: set[str] = set()
    unions: dict[str, list[str]] = {"active": [], "standby": []}
    for m in members:
        for kind in ("active", "standby"):
            for t in getattr(m, kind):
                if t in tasks and t not in taken and (kind == "active" or tasks[t].stateful):
                    taken.add(t)
                    unions[kind].append(t)
    for kind, union in unions.items():
        stated = getattr(c, kind)
        if stated and set(stated) != set(union):
            bad(("clients", i, kind), f"differs from the union of the members' {kind} tasks "
                                      f"({sorted(union, key=_safe_key)}); give both alike or only the members")
        elif not stated:
            updates[kind] = union
    return c.model_copy(update=updates)


def _safe_key(tid: str) -> tuple[int, int, str]:
    try:
        return (*task_sort_key(tid), "")
    except ValueError:
        return (1 << 62, 0, tid)


# --------------------------------------------------------------------------- writing


def streams_instance_to_dict(instance: Instance) -> dict[str, Any]:
    """Serialise a Streams instance to ``kassign/v1`` (the inverse of :func:`parse_streams_instance`).

    Tasks derived from ``subtopologies`` are written as ``subtopologies``, unless they carry rack
    data (a generated scenario with racks): then as explicit ``tasks``, which parse to the same tasks.
    """
    spec: StreamsSpec = instance.streams
    out: dict[str, Any] = {"format": FORMAT, "name": instance.name, "protocol": "streams"}
    # derived tasks with rack data are written out one by one: a sub-topology has no field for racks
    with_racks = any(t.source_racks is not None or t.changelog_racks is not None for t in spec.tasks)
    if spec.subtopologies is not None and not with_racks:
        subs = []
        for s in spec.subtopologies:
            obj: dict[str, Any] = {"id": s.id, "source_topics": dict(s.source_topics), "stateful": s.stateful}
            if s.stores is not None:
                obj["stores"] = s.stores
            subs.append(obj)
        out["subtopologies"] = subs
    else:
        tasks = []
        for t in spec.tasks:
            obj = {"id": t.id, "stateful": t.stateful}
            if t.stores is not None:
                obj["stores"] = t.stores
            if t.source_racks is not None:
                obj["source_racks"] = [list(p) for p in t.source_racks]
            if t.changelog_racks is not None:
                obj["changelog_racks"] = [list(p) for p in t.changelog_racks]
            tasks.append(obj)
        out["tasks"] = tasks
    clients = []
    for c in spec.clients:
        obj = {"id": c.id, "process_id": c.process_id, "capacity": c.capacity}
        if c.rack is not None:
            obj["rack"] = c.rack
        obj.update({"active": list(c.active), "standby": list(c.standby), "lags": dict(c.lags)})
        if c.members is not None:
            obj["members"] = [_member_dict(m) for m in c.members]
        if c.client_tags:
            obj["client_tags"] = dict(c.client_tags)
        clients.append(obj)
    out["clients"] = clients
    cfg = spec.config
    config: dict[str, Any] = {
        "num_standby_replicas": cfg.num_standby_replicas,
        "acceptable_recovery_lag": cfg.acceptable_recovery_lag,
        "max_warmup_replicas": cfg.max_warmup_replicas,
        "balance_factor": cfg.balance_factor,
    }
    if cfg.probing_rebalance_interval_ms != StreamsConfig().probing_rebalance_interval_ms:
        config["probing_rebalance_interval_ms"] = cfg.probing_rebalance_interval_ms
    if cfg.rack_aware_assignment_strategy != "none":
        config["rack_aware_assignment_strategy"] = cfg.rack_aware_assignment_strategy
    if cfg.rack_aware_assignment_traffic_cost is not None:
        config["rack_aware_assignment_traffic_cost"] = cfg.rack_aware_assignment_traffic_cost
    if cfg.rack_aware_assignment_non_overlap_cost is not None:
        config["rack_aware_assignment_non_overlap_cost"] = cfg.rack_aware_assignment_non_overlap_cost
    if not cfg.active_on_caught_up:
        config["active_on_caught_up"] = False
    if cfg.rack_aware_assignment_tags:
        config["rack_aware_assignment_tags"] = list(cfg.rack_aware_assignment_tags)
    out["config"] = config
    if spec.standby_task_order is not None:
        out["standby_task_order"] = list(spec.standby_task_order)
    if instance.kafka_version is not None:
        out["kafka_version"] = instance.kafka_version
    out.update(instance.meta)
    return out


def _member_dict(m: StreamsMember) -> dict[str, Any]:
    obj: dict[str, Any] = {"id": m.id, "active": list(m.active), "standby": list(m.standby)}
    if m.current_active is not None:
        obj["current_active"] = list(m.current_active)
    if m.current_standby is not None:
        obj["current_standby"] = list(m.current_standby)
    if m.task_offsets:
        obj["task_offsets"] = dict(m.task_offsets)
    return obj


# --------------------------------------------------------------------------- assignments


class _ClientTasksSpec(_Strict):
    active: list[StrictStr] = Field(default_factory=list)
    standby: list[StrictStr] = Field(default_factory=list)
    warmup: list[StrictStr] = Field(default_factory=list)


class _StreamsAssignmentDoc(BaseModel):
    model_config = ConfigDict(extra="allow")

    format: Literal["kassign/v1"] = "kassign/v1"  # when given, ``kassign/v1`` (``null`` is refused)
    assignment: dict[str, _ClientTasksSpec]
    members: dict[str, _ClientTasksSpec] | None = None
    probing_rebalance: StrictBool = False


def _unknown_names(table: str, what: str, entries: dict[str, _ClientTasksSpec], known: set[str],
                   known_tasks: set[str]) -> list[Problem]:
    """Problems for the ``table`` entries (clients or members) and task ids the instance does not have."""
    problems: list[Problem] = []
    for name, lists in entries.items():
        if name not in known:
            problems.append(Problem(json_path((table, name)), f"{what} not in the instance"))
        for kind in ("active", "standby", "warmup"):
            for j, tid in enumerate(getattr(lists, kind)):
                if tid not in known_tasks:
                    problems.append(Problem(json_path((table, name, kind, j)), f"task {tid!r} not in tasks"))
    return problems


def parse_streams_assignment(data: Any, instance: Instance, source: str = "<input>") -> StreamsAssignment:
    """Validate an assignment document against a Streams instance.

    Unknown clients and unknown task ids are errors (with JSON paths); an
    assignment that breaks the Streams rules (a task twice, a standby beside
    its active) is *not* an error here: the scorer reports it.
    """
    if isinstance(data, dict) and "assignment" not in data:
        data = {"assignment": data}
    try:
        doc = _StreamsAssignmentDoc.model_validate(data)
    except ValidationError as e:
        raise InstanceError(source, pydantic_problems(e, ())) from None
    spec: StreamsSpec = instance.streams
    known_tasks = set(spec.task_ids)
    problems = _unknown_names("assignment", "client", doc.assignment, set(spec.client_ids), known_tasks)
    members = None
    if doc.members is not None:
        known_members = {m.id for c in spec.clients for m in (c.members or ())}
        problems += _unknown_names("members", "member", doc.members, known_members, known_tasks)
        members = {mid: {"active": mt.active, "standby": mt.standby, "warmup": mt.warmup}
                   for mid, mt in doc.members.items()}
    if problems:
        raise InstanceError(source, problems)
    lists = {cid: {"active": ct.active, "standby": ct.standby, "warmup": ct.warmup}
             for cid, ct in doc.assignment.items()}
    for cid in spec.client_ids:
        lists.setdefault(cid, {})
    return StreamsAssignment.from_lists(lists, doc.probing_rebalance, members)


__all__ = [
    "MAX_TASKS",
    "ClientSpec",
    "ConfigSpec",
    "JavaInt",
    "JavaLong",
    "MemberSpec",
    "NonNegInt",
    "NonNegLong",
    "PosInt",
    "RackName",
    "StreamsInstanceSpec",
    "SubtopologySpec",
    "TaskSpec",
    "parse_streams_assignment",
    "parse_streams_instance",
    "streams_instance_to_dict",
]
