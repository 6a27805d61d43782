"""Kafka Streams ``SubscriptionInfo`` bytes: encode, decode, and turn a group's subscriptions into an instance.

Every Kafka Streams consumer (one per stream thread) sends its client's
``SubscriptionInfo`` as the consumer-protocol ``userData``; the group leader
decodes them to build the assignment input.  All integers are big-endian.

Layouts (``layout=``)

``"kafka"`` - what Apache Kafka ships (``SubscriptionInfoData.json``, versions 1-11)::

    version                 int32                      v1+
    latestSupportedVersion  int32                      v3+
    processId               16 bytes (msb, lsb)        v1+
    prevTasks               int32 n, n x TaskId        v1-v6  (previous actives)
    standbyTasks            int32 n, n x TaskId        v1-v6
    userEndPoint            int32 n, n bytes (UTF-8)   v2+    ("host:port")
    taskOffsetSums          int32 n, n x TaskOffsetSum v7+    (KIP-441)
    uniqueField             int8                       v8+
    errorCode               int32                      v9+
    clientTags              int32 n, n x (bytes key, bytes value)   v11+

    TaskId         = int32 topicGroupId, int32 partition
    TaskOffsetSum  = v7-v9:  int32 topicGroupId, int32 n, n x (int32 partition, int64 offsetSum)
                     v10+:   int32 topicGroupId, int32 partition, int64 offsetSum,
                             int16 n + n bytes namedTopology (n = -1: null)

  Versions 4, 5 and 6 share version 3's layout (their changes were in
  ``AssignmentInfo``).  KIP-441 shipped as version 7: instead of task lists,
  each client reports an *offset sum* per task it has state for;
  ``Task.LATEST_OFFSET`` (-2) marks a task it runs as an active, -3
  (``UNKNOWN_OFFSET_SUM``) an unknown sum.

``"kip441-draft"`` - the version 5 the KIP-441 page proposes (seed 001), never shipped::

    VersionId int32, LatestSupportVersionId int32, ClientUUID 16 bytes,
    StoreLags int32 n, n x (StoreId, int32 lag), EndPoint int32 n + n bytes

  The KIP leaves ``StoreId`` open; kassign encodes it as the task
  (int32 topicGroupId, int32 partition) and the store name (int16 n + n bytes),
  so that store lags add up to task lags.  The seed's version 4 is the
  ``"kafka"`` layout's version 4.

``"kip262"`` - KIP-262 (seed 003, rejected): versions 1-6 with
``TaskId = int32 topicGroupId, int32 partition, int32 numberOfStateStores``.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from solver.streams.model import parse_task_id, task_sort_key
from solver.wire import ByteReader, SubscriptionDecodeError

__all__ = ["SubscriptionDecodeError", "SubscriptionInfo", "decode", "encode", "streams_fields",
           "subscriptions_to_instance", "task_lag"]

Layout = Literal["kafka", "kip441-draft", "kip262"]
LAYOUTS: tuple[str, ...] = ("kafka", "kip441-draft", "kip262")
#: Highest version of the ``"kafka"`` layout understood here.
MAX_KAFKA_VERSION = 11
#: ``Task.LATEST_OFFSET``: the client runs the task as an active.
LATEST_OFFSET_SUM = -2
#: ``SubscriptionInfo.UNKNOWN_OFFSET_SUM``.
UNKNOWN_OFFSET_SUM = -3


@dataclass(frozen=True)
class SubscriptionInfo:
    """One decoded ``SubscriptionInfo``.

    Attributes
    ----------
    version, latest_supported_version
        Protocol versions (``latest_supported_version`` is -1 before v3).
    process_id
        The client's process UUID (all threads of one client share it).
    prev_tasks, standby_tasks
        v1-v6: previous active and standby task ids.
    user_end_point
        ``application.server`` (``host:port``) or ``""``.
    task_offset_sums
        v7+: ``(task id, offset sum)`` pairs.
    unique_field, error_code
        v8+ / v9+ fields.
    client_tags
        v11+: ``(key, value)`` pairs (KIP-708 rack-aware standbys).
    store_lags
        ``"kip441-draft"``: ``(task id, store name, lag)`` triples.
    task_stores
        ``"kip262"``: number of state stores per task id.
    named_topologies
        v10+: task id -> named topology, for tasks that carry one.
    """

    version: int
    process_id: str
    latest_supported_version: int = -1
    prev_tasks: tuple[str, ...] = ()
    standby_tasks: tuple[str, ...] = ()
    user_end_point: str = ""
    task_offset_sums: tuple[tuple[str, int], ...] = ()
    unique_field: int = 0
    error_code: int = 0
    client_tags: tuple[tuple[str, str], ...] = ()
    store_lags: tuple[tuple[str, str, int], ...] = ()
    task_stores: Mapping[str, int] = field(default_factory=dict)
    named_topologies: Mapping[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- writing


class _Writer:
    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def i8(self, v: int) -> None:
        self.parts.append(struct.pack(">b", v))

    def i16(self, v: int) -> None:
        self.parts.append(struct.pack(">h", v))

    def i32(self, v: int) -> None:
        self.parts.append(struct.pack(">i", v))

    def i64(self, v: int) -> None:
        self.parts.append(struct.pack(">q", v))

    def uuid(self, s: str) -> None:
        self.parts.append(uuid.UUID(s).bytes)

    def bytes32(self, b: bytes) -> None:
        self.i32(len(b))
        self.parts.append(b)

    def str16(self, s: str | None) -> None:
        if s is None:
            self.i16(-1)
            return
        b = s.encode("utf-8")
        self.i16(len(b))
        self.parts.append(b)

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


def _sorted_ids(ids: Iterable[str]) -> list[str]:
    return sorted(ids, key=task_sort_key)


def encode(info: SubscriptionInfo, layout: Layout = "kafka") -> bytes:
    """Serialise ``info`` in ``layout`` at ``info.version``.

    Examples
    --------
    >>> info = SubscriptionInfo(4, "00000000-0000-0000-0000-000000000001", 4, ("0_1",), (), "h:1")
    >>> b = encode(info)
    >>> len(b), b[:8].hex(), decode(b) == info
    (47, '0000000400000004', True)
    """
    v = info.version
    w = _Writer()
    if layout == "kip441-draft":
        if v != 5:
            raise ValueError("the KIP-441 draft layout is version 5 only")
        w.i32(v)
        w.i32(info.latest_supported_version)
        w.uuid(info.process_id)
        w.i32(len(info.store_lags))
        for task, store, lag in info.store_lags:
            s, p = parse_task_id(task)
            w.i32(s)
            w.i32(p)
            w.str16(store)
            w.i32(lag)
        w.bytes32(info.user_end_point.encode("utf-8"))
        return w.getvalue()
    if layout == "kip262" and not 1 <= v <= 6:
        raise ValueError("the KIP-262 TaskId layout applies to versions 1-6")
    if layout == "kafka" and not 1 <= v <= MAX_KAFKA_VERSION:
        raise ValueError(f"version {v} not in 1..{MAX_KAFKA_VERSION}")
    w.i32(v)
    if v >= 3:
        w.i32(info.latest_supported_version)
    w.uuid(info.process_id)
    if v <= 6:
        for tasks in (info.prev_tasks, info.standby_tasks):
            w.i32(len(tasks))
            for t in tasks:
                s, p = parse_task_id(t)
                w.i32(s)
                w.i32(p)
                if layout == "kip262":
                    w.i32(info.task_stores.get(t, 0))
    if v >= 2:
        w.bytes32(info.user_end_point.encode("utf-8"))
    if v >= 7:
        sums = dict(info.task_offset_sums)
        if v <= 9:
            groups: dict[int, list[tuple[int, int]]] = {}
            for t in _sorted_ids(sums):
                s, p = parse_task_id(t)
                groups.setdefault(s, []).append((p, sums[t]))
            w.i32(len(groups))
            for s, parts in groups.items():
                w.i32(s)
                w.i32(len(parts))
                for p, off in parts:
                    w.i32(p)
                    w.i64(off)
        else:
            w.i32(len(sums))
            for t in _sorted_ids(sums):
                s, p = parse_task_id(t)
                w.i32(s)
                w.i32(p)
                w.i64(sums[t])
                w.str16(info.named_topologies.get(t))
    if v >= 8:
        w.i8(info.unique_field)
    if v >= 9:
        w.i32(info.error_code)
    if v >= 11:
        w.i32(len(info.client_tags))
        for k, val in info.client_tags:
            w.bytes32(k.encode("utf-8"))
            w.bytes32(val.encode("utf-8"))
    return w.getvalue()


# --------------------------------------------------------------------------- reading


def decode(data: bytes, layout: Layout = "kafka") -> SubscriptionInfo:
    """Parse ``data`` (one subscription's ``userData``) in ``layout``.

    Raises
    ------
    SubscriptionDecodeError
        Truncated data, trailing bytes, an unsupported version, a string that
        is not UTF-8, versions Kafka's ``SubscriptionInfo`` rejects; the
        message starts with the byte offset.
    """
    return _decode(data, layout)[0]


#: A task as on the wire: (named topology or None, sub-topology, partition).
WireTask = tuple[str | None, int, int]


def _decode(data: bytes, layout: Layout) -> tuple[SubscriptionInfo, list[tuple[WireTask, int]]]:
    """:func:`decode`, plus the wire's tasks: v1-v6 ``prevTasks`` then ``standbyTasks`` with offset
    sums -2 / -3, v7+ ``taskOffsetSums`` in wire order with their named topologies."""
    r = ByteReader(data)
    v = r.i32("version")
    if layout == "kip441-draft":
        if v != 5:
            raise SubscriptionDecodeError(f"byte 0: the KIP-441 draft layout is version 5, got {v}")
        latest = r.i32("latestSupportedVersion")
        pid = r.uuid("processId")
        lags = []
        for _ in range(r.count("storeLags", 14)):
            t = r.task("StoreId")
            store = r.str16("StoreId store name") or ""
            lags.append((t, store, r.i32("lag")))
        ep = r.text32("endPoint")
        _done(r)
        return SubscriptionInfo(v, pid, latest, user_end_point=ep, store_lags=tuple(lags)), []
    top = 6 if layout == "kip262" else MAX_KAFKA_VERSION
    if not 1 <= v <= top:
        raise SubscriptionDecodeError(f"byte 0: version {v} not supported by the {layout!r} layout (1..{top})")
    latest = r.i32("latestSupportedVersion") if v >= 3 else -1
    if v >= 3 and layout == "kafka" and latest < v:
        # SubscriptionInfo.validateVersions: only v1-2 may leave it unknown, and never below the version
        raise SubscriptionDecodeError(
            f"byte 4: latestSupportedVersion {latest} is below version {v} (Kafka's decoder rejects it)")
    pid = r.uuid("processId")
    prev: list[str] = []
    standby: list[str] = []
    stores: dict[str, int] = {}
    wire: list[tuple[WireTask, int]] = []
    if v <= 6:
        for target, name, off_sum in ((prev, "prevTasks", LATEST_OFFSET_SUM),
                                      (standby, "standbyTasks", UNKNOWN_OFFSET_SUM)):
            for _ in range(r.count(name, 12 if layout == "kip262" else 8)):
                s, p = r.i32(name), r.i32(name)
                t = f"{s}_{p}"
                if layout == "kip262":
                    stores[t] = r.i32("numberOfStateStores")
                target.append(t)
                wire.append(((None, s, p), off_sum))
    ep = r.text32("userEndPoint") if v >= 2 else ""
    sums: list[tuple[str, int]] = []
    named: dict[str, str] = {}
    if v >= 7:
        for _ in range(r.count("taskOffsetSums", 8 if v <= 9 else 18)):
            s = r.i32("topicGroupId")
            if v <= 9:
                for _ in range(r.count("partitionToOffsetSum", 12)):
                    p = r.i32("partition")
                    off = r.i64("offsetSum")
                    sums.append((f"{s}_{p}", off))
                    wire.append(((None, s, p), off))
            else:
                p = r.i32("partition")
                off = r.i64("offsetSum")
                nt = r.str16("namedTopology") or None  # TaskId reads an empty name as none
                sums.append((f"{s}_{p}", off))
                wire.append(((nt, s, p), off))
                if nt is not None:
                    named[f"{s}_{p}"] = nt
    unique = r.i8("uniqueField") if v >= 8 else 0
    err = r.i32("errorCode") if v >= 9 else 0
    tags: list[tuple[str, str]] = []
    if v >= 11:
        seen: set[str] = set()
        for _ in range(r.count("clientTags", 8)):
            at = r.pos
            k = r.text32("clientTag key")
            if k in seen:  # Kafka's clientTags() collects into a map and fails on a repeated key
                raise SubscriptionDecodeError(f"byte {at}: client tag key {k!r} repeated")
            seen.add(k)
            tags.append((k, r.text32("clientTag value")))
    _done(r)
    info = SubscriptionInfo(v, pid, latest, tuple(prev), tuple(standby), ep, tuple(sums), unique, err,
                            tuple(tags), (), stores, named)
    return info, wire


def task_id_string(task: WireTask) -> str:
    """Kafka's ``TaskId.toString()``: ``"<subtopology>_<partition>"``, ``"<name>__..."`` for a named topology.

    Examples
    --------
    >>> task_id_string((None, 0, 3)), task_id_string(("app", 1, 2))
    ('0_3', 'app__1_2')
    """
    name, s, p = task
    return f"{s}_{p}" if name is None else f"{name}__{s}_{p}"


def _task_order(task: WireTask) -> tuple[bool, bytes, int, int]:
    # TaskId.compareTo: named topology (String order = UTF-16 code units), sub-topology, partition;
    # Kafka refuses to compare a named with an unnamed task: unnamed ones go first here
    name, s, p = task
    return (name is not None, (name or "").encode("utf-16-be"), s, p)


def streams_fields(data: bytes) -> dict[str, Any]:
    """What Kafka's ``SubscriptionInfo.decode`` reads back from ``data`` (the ``kafka`` layout).

    Field names and meaning follow ``scenarios/README.md`` (``subscription-info.jsonl.gz``):
    ``version``, ``latest_supported_version``, ``process_id``, ``prev_tasks``,
    ``standby_tasks``, ``task_offset_sums``, ``user_endpoint``, ``unique_field``,
    ``error_code``, ``client_tags``.  v1-v6: the task lists in wire order and
    Kafka's derived offset sums (-2 previous active, -3 standby), sorted;
    v7+: offset sums in wire order and the derived task sets, sorted.

    Raises
    ------
    SubscriptionDecodeError
        As :func:`decode`.

    Examples
    --------
    >>> info = SubscriptionInfo(4, "00000000-0000-0000-0000-000000000001", 4, ("0_1",), ("0_0",), "h:1")
    >>> streams_fields(encode(info))["task_offset_sums"]
    {'0_0': -3, '0_1': -2}
    """
    info, wire = _decode(data, "kafka")
    keys: dict[str, WireTask] = {}
    sums: dict[str, int] = {}
    for task, off in wire:  # a HashMap: a task listed twice keeps its last offset sum
        t = task_id_string(task)
        keys.setdefault(t, task)
        sums[t] = off
    if info.version <= 6:
        sums = {t: sums[t] for t in sorted(sums, key=lambda t: _task_order(keys[t]))}
        prev, standby = list(info.prev_tasks), list(info.standby_tasks)
    else:
        ordered = sorted(sums, key=lambda t: _task_order(keys[t]))
        prev = [t for t in ordered if sums[t] == LATEST_OFFSET_SUM]
        standby = [t for t in ordered if sums[t] != LATEST_OFFSET_SUM]
    return {
        "version": info.version,
        "latest_supported_version": info.latest_supported_version,
        "process_id": info.process_id,
        "prev_tasks": prev,
        "standby_tasks": standby,
        "task_offset_sums": sums,
        "user_endpoint": info.user_end_point or None,
        "unique_field": info.unique_field,
        "error_code": info.error_code,
        "client_tags": dict(info.client_tags),
    }


def _done(r: ByteReader) -> None:
    if r.pos != len(r.data):
        raise SubscriptionDecodeError(f"byte {r.pos}: {len(r.data) - r.pos} trailing bytes")


# --------------------------------------------------------------------------- to an instance


#: The largest lag a Java long holds.
MAX_LAG = 2**63 - 1


def task_lag(task: str, offset_sum: int, end_offsets: Mapping[str, int] | None) -> int | None:
    """The lag Kafka's ``ClientState.computeTaskLags`` derives, or ``None`` when it is unknown.

    ``end - offsetSum``; an offset sum beyond the end offset means corrupted
    state, which Kafka counts as a restore from scratch (lag = ``end``).
    Unknown: no end offset for the task, or the offset sum is
    ``UNKNOWN_OFFSET_SUM``.

    Raises
    ------
    ValueError
        A lag beyond a Java long (only with a negative offset sum).

    Examples
    --------
    >>> task_lag("0_1", 700, {"0_1": 1000}), task_lag("0_1", 1200, {"0_1": 1000}), task_lag("0_1", 700, None)
    (300, 1000, None)
    """
    if offset_sum == UNKNOWN_OFFSET_SUM or end_offsets is None or task not in end_offsets:
        return None
    end = end_offsets[task]
    lag = end - offset_sum if end >= offset_sum else end
    if lag > MAX_LAG:
        raise ValueError(f"task {task}: offset sum {offset_sum} and end offset {end} give a lag beyond a Java long")
    return lag


def subscriptions_to_instance(
    infos: Sequence[SubscriptionInfo],
    *,
    tasks: Sequence[Mapping[str, Any]] | None = None,
    end_offsets: Mapping[str, int] | None = None,
    config: Mapping[str, Any] | None = None,
    name: str = "",
) -> dict[str, Any]:
    """Build a ``kassign/v1`` Streams instance document from a group's subscriptions.

    Subscriptions with the same process id are the threads of one client:
    its ``capacity`` is their number (Kafka counts consumers per process the
    same way) and its previous tasks are their union; its ``client_tags`` are
    those of its first subscription (version 11+), as Kafka's leader keeps them.

    Parameters
    ----------
    infos
        Decoded subscriptions, one per consumer (stream thread).
    tasks
        The application's tasks (``[{"id", "stateful", "stores"}]``); by
        default every task any client mentions, as stateful (stores from
        KIP-262 data when present).
    end_offsets
        Task id -> end offset sum of its changelogs; turns v7+ offset sums into
        lags (:func:`task_lag`).  A task with state but no lag (no end offset
        for it, an unknown offset sum, or any v1-v6 standby) gets a ``null``
        lag: state on disk, lag unknown.
    config
        The ``config`` object of the instance.
    name
        Instance name.

    Returns
    -------
    dict
        A Streams instance document (``parse_instance`` validates it).
    """
    clients: dict[str, dict[str, Any]] = {}
    stores: dict[str, int] = {}
    seen_tasks: list[str] = []
    for info in infos:
        if info.named_topologies:
            raise ValueError("named topologies are not supported (task ids would not be '<subtopology>_<partition>')")
        c = clients.setdefault(info.process_id, {"process_id": info.process_id, "capacity": 0, "active": [],
                                                 "standby": [], "lags": {}, "_ep": info.user_end_point,
                                                 "_tags": dict(info.client_tags)})
        c["capacity"] += 1
        stores.update(info.task_stores)
        active = list(info.prev_tasks)
        standby = list(info.standby_tasks)
        lags: dict[str, int | None] = {t: None for t in standby}  # v1-6: Kafka's UNKNOWN_OFFSET_SUM
        for t, off in info.task_offset_sums:
            if off == LATEST_OFFSET_SUM:
                active.append(t)
            else:
                standby.append(t)
                lags[t] = task_lag(t, off, end_offsets)
        by_task: dict[str, int] = {}
        for t, _store, lag in info.store_lags:
            by_task[t] = by_task.get(t, 0) + lag
            standby.append(t)
        lags.update(by_task)
        for t in active:
            if t not in c["active"]:
                c["active"].append(t)
        for t in standby:
            if t not in c["standby"] and t not in active:
                c["standby"].append(t)
        c["lags"].update(lags)
        seen_tasks.extend(active + standby)
    out_clients = []
    used: set[str] = set()
    for pid, c in clients.items():
        cid = c.pop("_ep") or f"client-{pid[:8]}"
        tags = c.pop("_tags")
        if tags:  # Kafka's ClientMetadata keeps the tags of the process's first subscription (v11+)
            c["client_tags"] = tags
        base, k = cid, 1
        while cid in used:
            k += 1
            cid = f"{base}#{k}"
        used.add(cid)
        c["standby"] = [t for t in c["standby"] if t not in c["active"]]
        c["lags"] = {t: lag for t, lag in c["lags"].items() if t not in c["active"]}
        c["active"] = _sorted_ids(c["active"])
        c["standby"] = _sorted_ids(c["standby"])
        out_clients.append({"id": cid, **c})
    if tasks is None:
        task_list: list[dict[str, Any]] = []
        for t in _sorted_ids(set(seen_tasks)):
            obj: dict[str, Any] = {"id": t, "stateful": True}
            if t in stores:
                obj["stores"] = stores[t]
            task_list.append(obj)
    else:
        task_list = [dict(t) for t in tasks]
    return {"format": "kassign/v1", "name": name, "protocol": "streams", "tasks": task_list,
            "clients": out_clients, "config": dict(config or {})}
