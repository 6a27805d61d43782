"""``kassign capture``: a live group's state as a ``kassign/v1`` instance (read-only).

:func:`capture` talks to the cluster through :class:`~spark_runner.live.broker.Broker`;
:func:`consumer_instance` and :func:`streams_instance` turn what it read into
an instance document and are pure functions (tested without a broker too).

Where each field comes from
---------------------------
* ``topics[T].partitions`` and ``racks``: Metadata (the racks of the brokers
  holding each partition's replicas; omitted when no broker has a rack).
* ``topics[T].weights``: ``--weights lag``: ListOffsets (latest) minus the
  group's committed offset (OffsetFetch); a partition without a commit counts
  every retained record (latest minus earliest).  ``--weights rate``: growth
  over ``--sample`` seconds of each partition's leader log size
  (DescribeLogDirs, bytes/s), or of its end offset (records/s) when the broker
  does not report sizes.
* KIP-848 groups (``group.protocol=consumer``): ConsumerGroupDescribe.  ``topics`` the subscribed names (a
  subscription pattern matched in full against the cluster's topics), ``rack`` the member's ``client.rack``,
  ``owned`` its **target** assignment (what the coordinator's assignor gave it last and passes to it next),
  topics and partitions in the broker's order (its maps' iteration order, which re-inserted gives the same
  iteration order); ``topics[T].id`` the topic ids.
* ``members`` (classic groups): DescribeGroups.  ``topics`` and ``rack`` from the member's
  subscription (consumer protocol v0-v3), ``owned`` from its current
  assignment, ``generation`` from the subscription (v2+; for
  ``kassign-optimal`` members from their user data), else -1;
  ``instance_id`` is the member's ``group.instance.id``.
* Streams applications (group protocol ``stream``): each member's
  SubscriptionInfo (its subscription's user data) gives the client (process
  id), its threads (capacity), previous active and standby tasks, and task
  offset sums; with ``--changelogs`` the lags are the changelogs' end offsets
  (summed per task) minus those sums.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from spark_runner.live.broker import (
    CONSUMER_GROUP_DESCRIBE,
    CONSUMER_GROUP_HEARTBEAT,
    STREAMS_GROUP_HEARTBEAT,
    Broker,
    BrokerUnavailable,
    CaptureError,
    CaptureTimeout,
    ConsumerGroup,
    GroupDescription,
    GroupNotFound,
    NoClassicGroup,
    TopicInfo,
)
from spark_runner.live.wire import WireDecodeError, decode_assignment, decode_subscription, decode_user_data

Weights = Literal["none", "lag", "rate"]
#: Kafka's protocol names -> kassign's assignor names (for ``source.kassign_assignor``).
KAFKA_ASSIGNORS = {
    "range": "range",
    "roundrobin": "roundrobin",
    "sticky": "sticky",
    "cooperative-sticky": "cooperative-sticky",
    "kassign-optimal": "optimal",
    "stream": "high-availability",
}
#: The group coordinator's KIP-848 assignor names -> kassign's.
SERVER_ASSIGNORS = {"uniform": "uniform", "range": "server-range"}
#: Group protocol name of Kafka Streams' StreamsPartitionAssignor.
STREAMS_PROTOCOL = "stream"
_REBALANCING = {"PreparingRebalance", "CompletingRebalance", "CoordinatorNotReady"}


@dataclass
class Observed:
    """What was read from the cluster, before it becomes an instance."""

    group: GroupDescription
    topics: dict[str, TopicInfo]
    racks: dict[int, str | None]
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    end: dict[tuple[str, int], int] = field(default_factory=dict)
    start: dict[tuple[str, int], int] = field(default_factory=dict)
    rates: dict[tuple[str, int], float] = field(default_factory=dict)
    rate_unit: str = ""
    sample: float = 0.0
    #: A KIP-848 group (ConsumerGroupDescribe); ``group`` then has no members of its own.
    kip848: ConsumerGroup | None = None


# --------------------------------------------------------------------------- the live part


def wait_stable(broker: Broker, group: str, deadline: float, kip848: bool = False) -> GroupDescription:
    """DescribeGroups until the group is Stable (a rebalance in flight has no assignments yet).

    ``kip848``: the broker runs KIP-848 groups, which DescribeGroups does not show (the caller asks
    ConsumerGroupDescribe next).
    """
    while True:
        desc = broker.describe_group(group)
        if desc.state == "Dead":
            raise NoClassicGroup(f"group {group!r} does not exist: nothing to capture")
        if desc.state == "Empty" and not desc.members:
            raise GroupNotFound(f"group {group!r} has no members (state Empty): nothing to capture")
        if desc.protocol_type not in ("consumer", ""):
            raise BrokerUnavailable(f"group {group!r} uses protocol type {desc.protocol_type!r}; kassign captures "
                                    "consumer groups and Kafka Streams applications")
        if desc.state not in _REBALANCING:
            return desc
        if time.monotonic() >= deadline:
            raise CaptureTimeout(f"group {group!r} is still rebalancing (state {desc.state}); try again later "
                                 "or give --timeout more seconds")
        time.sleep(0.2)


def check_member_metadata(desc: GroupDescription, bootstrap: str) -> None:
    """Fail in one line when DescribeGroups gave members without their subscription bytes.

    Kafka returns each member's JoinGroup metadata (its subscription) and current assignment; a broker
    that does not keep them (Tansu 0.6 answers with empty bytes and no protocol) leaves nothing to read.
    """
    empty = [m for m in desc.members if not m.metadata]
    if not empty:
        return
    raise BrokerUnavailable(
        f"the broker at {bootstrap} returned no member metadata for group {desc.group_id!r} (DescribeGroups: "
        f"{len(empty)} of {len(desc.members)} member(s) without subscription bytes"
        f"{', no protocol name' if not desc.protocol else ''}), so kassign capture cannot read what its members "
        "subscribe to and own; what still works on this broker: the live assignor "
        "(spark_runner.live.KassignOptimalAssignor, which reads the members' reports at each join), and "
        "kassign validate/compare/plan on an instance written by hand")


def subscribed_topics(desc: GroupDescription) -> list[str]:
    """Every topic some member subscribes to (sorted)."""
    topics: set[str] = set()
    for m in desc.members:
        topics.update(_subscription(m.member_id, m.metadata).topics)
    return sorted(topics)


def observe(broker: Broker, group: str, *, weights: Weights = "none", sample: float = 5.0,
            timeout: float = 30.0, changelogs: Mapping[str, Sequence[str]] | None = None,
            progress: Any = None) -> Observed:
    """Read everything a capture needs from the cluster (read-only)."""
    deadline = time.monotonic() + timeout
    versions = broker.check_apis()
    kip848 = CONSUMER_GROUP_HEARTBEAT in versions and CONSUMER_GROUP_DESCRIBE in versions
    cg: ConsumerGroup | None = None
    try:
        desc = wait_stable(broker, group, deadline, kip848=kip848)
    except NoClassicGroup as e:
        if not kip848:
            raise
        cg = wait_stable_kip848(broker, group, deadline)
        if cg is None:
            hint = (" (KIP-1071 Streams groups, group.protocol=streams, are not captured yet)"
                    if STREAMS_GROUP_HEARTBEAT in versions else "")
            raise GroupNotFound(f"group {group!r} does not exist, neither as a classic nor as a KIP-848 consumer "
                                f"group: nothing to capture{hint}") from e
        desc = GroupDescription(cg.group_id, cg.state, "consumer", cg.assignor, ())
    if cg is None:
        check_member_metadata(desc, broker.bootstrap)
        names = subscribed_topics(desc)
    else:
        cg = _resolve_patterns(broker, cg)
        names = sorted({t for m in cg.members for t in m.topics})
    extra = sorted({t for ts in (changelogs or {}).values() for t in ts} - set(names))
    topics, racks = broker.topics(names + extra)
    obs = Observed(desc, topics, racks, kip848=cg)
    parts = [(t, p) for t in names + extra if t in topics and not topics[t].error
             for p in range(len(topics[t].replicas))]
    if weights == "lag" or desc.protocol == STREAMS_PROTOCOL:
        obs.end = broker.offsets(parts, latest=True)
    if weights == "lag":
        obs.committed = broker.committed(group)
        if any(k not in obs.committed for k in parts if k[0] in names):
            obs.start = broker.offsets(parts, latest=False)
    elif weights == "rate":
        leaders = {(t, p): topics[t].leaders[p] for t, p in parts}
        sizes0 = broker.log_sizes(parts, leaders)
        end0 = broker.offsets(parts)
        t0 = time.monotonic()
        if progress is not None:
            progress(f"sampling end offsets for {sample:g} s")
        time.sleep(sample)
        sizes1 = broker.log_sizes(parts, leaders) if sizes0 is not None else None
        end1 = broker.offsets(parts)
        span = max(time.monotonic() - t0, 1e-9)
        if sizes0 is not None and sizes1 is not None:
            obs.rates = {k: max(sizes1[k] - sizes0[k], 0) / span for k in parts}
            obs.rate_unit = "bytes/s"
        else:
            obs.rates = {k: max(end1[k] - end0[k], 0) / span for k in parts}
            obs.rate_unit = "records/s"
        obs.sample = span
        obs.end = end1
    return obs


def wait_stable_kip848(broker: Broker, group: str, deadline: float) -> ConsumerGroup | None:
    """ConsumerGroupDescribe until the KIP-848 group is Stable (every member holds its target assignment);
    ``None`` when there is no such group."""
    while True:
        cg = broker.describe_consumer_group(group)
        if cg is None:
            return None
        state = cg.state.lower()
        if state in ("empty", "dead") or not cg.members:
            raise GroupNotFound(f"KIP-848 group {group!r} has no members (state {cg.state}): nothing to capture")
        if state == "stable":
            return cg
        if time.monotonic() >= deadline:
            raise CaptureTimeout(f"KIP-848 group {group!r} is still rebalancing (state {cg.state}); try again "
                                 "later or give --timeout more seconds")
        time.sleep(0.2)


def _resolve_patterns(broker: Broker, cg: ConsumerGroup) -> ConsumerGroup:
    """Members subscribed by pattern (``subscribe(Pattern)``) get the topics it matches in full, as the
    coordinator resolves them (Kafka matches with RE2/J; Python's ``re`` agrees on the patterns people write)."""
    import re
    from dataclasses import replace

    if not any(m.regex for m in cg.members):
        return cg
    every = broker.topic_names()
    members = []
    for m in cg.members:
        if m.regex:
            try:
                pat = re.compile(m.regex)
            except re.error as e:
                raise CaptureError(f"member {m.member_id}: its subscription pattern {m.regex!r} is not one kassign "
                                   f"can read ({e})") from None
            m = replace(m, topics=tuple(sorted(set(m.topics) | {t for t in every if pat.fullmatch(t)})))
        members.append(m)
    return replace(cg, members=tuple(members))


# --------------------------------------------------------------------------- to an instance


def _subscription(member_id: str, data: bytes) -> Any:
    try:
        return decode_subscription(data)
    except WireDecodeError as e:
        raise CaptureError(f"member {member_id}: cannot decode its subscription: {e}") from None


def _source(obs: Observed, bootstrap: str, weights: Weights) -> dict[str, Any]:
    proto = obs.group.protocol
    src: dict[str, Any] = {
        "kind": "kassign capture",
        "bootstrap": bootstrap,
        "group": obs.group.group_id,
        "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "state": obs.group.state,
        "protocol_type": obs.group.protocol_type,
        "assignor": proto,
        "kassign_assignor": KAFKA_ASSIGNORS.get(proto),
        "weights": weights if weights != "rate" else f"rate ({obs.rate_unit} over {obs.sample:.2f} s)",
    }
    return src


def _racks(info: TopicInfo, racks: Mapping[int, str | None]) -> list[list[str]] | None:
    if not any(racks.values()):
        return None
    return [sorted({racks[b] for b in reps if racks.get(b)}) for reps in info.replicas]  # type: ignore[misc]


def _classic_members(obs: Observed, notes: list[str]) -> tuple[list[dict[str, Any]], set[str]]:
    """A classic group's members (DescribeGroups: subscriptions and assignments as the members sent them)."""
    members: list[dict[str, Any]] = []
    subscribed: set[str] = set()
    for m in sorted(obs.group.members, key=lambda m: m.member_id):
        sub = _subscription(m.member_id, m.metadata)
        try:
            owned = dict(decode_assignment(m.assignment).partitions) if m.assignment else {}
        except WireDecodeError as e:
            raise CaptureError(f"member {m.member_id}: cannot decode its assignment: {e}") from None
        generation = sub.generation
        kas = None
        try:
            kas = decode_user_data(sub.user_data)
        except WireDecodeError as e:
            notes.append(f"member {m.member_id}: kassign user data unreadable ({e}); ignored")
        if generation < 0 and kas is not None:
            generation = kas.generation
        entry: dict[str, Any] = {"id": m.member_id, "topics": sorted(set(sub.topics))}
        if owned:
            entry["owned"] = {t: sorted(set(ps)) for t, ps in sorted(owned.items())}
        entry["generation"] = generation
        if m.instance_id:
            entry["instance_id"] = m.instance_id
        if sub.rack:
            entry["rack"] = sub.rack
        members.append(entry)
        subscribed.update(sub.topics)
    return members, subscribed


def _kip848_members(obs: Observed) -> tuple[list[dict[str, Any]], set[str], dict[str, str]]:
    """A KIP-848 group's members: subscriptions, racks and **target** assignments, in the broker's order.

    The members stay in the order ConsumerGroupDescribe lists them: the iteration order of the coordinator's
    member map, which its target assignment builder also walks to fill the assignor's member ``HashMap`` --
    ids sharing a bucket there iterate in that order, so sorting them would change ``uniform``'s answer.
    """
    assert obs.kip848 is not None
    members: list[dict[str, Any]] = []
    subscribed: set[str] = set()
    ids: dict[str, str] = {}
    for m in obs.kip848.members:
        entry: dict[str, Any] = {"id": m.member_id, "topics": sorted(set(m.topics))}
        owned: dict[str, list[int]] = {}
        for t, tid, ps in m.target:
            ids[t] = tid
            if ps:
                owned.setdefault(t, []).extend(ps)
        if owned:
            entry["owned"] = owned  # the broker's order: uniform walks these sets in it
        if m.instance_id:
            entry["instance_id"] = m.instance_id
        if m.rack:
            entry["rack"] = m.rack
        members.append(entry)
        subscribed.update(m.topics)
    return members, subscribed, ids


def consumer_instance(obs: Observed, *, bootstrap: str = "", weights: Weights = "none") -> dict[str, Any]:
    """The consumer-protocol instance document of an observed group.

    Parameters
    ----------
    obs
        What :func:`observe` read.
    bootstrap
        Recorded in ``source``.
    weights
        Which per-partition weights to write (``none``: none).

    Returns
    -------
    dict
        A ``kassign/v1`` consumer instance (``parse_instance`` validates it).
    """
    notes: list[str] = []
    if obs.kip848 is not None:
        members, subscribed, topic_ids = _kip848_members(obs)
    else:
        members, subscribed = _classic_members(obs, notes)
        topic_ids = {}
    topics: dict[str, Any] = {}
    uncommitted: list[str] = []
    for t in sorted(subscribed):
        info = obs.topics.get(t)
        if info is None or info.error:
            notes.append(f"topic {t}: subscribed but not in the cluster's metadata "
                         f"({'unknown' if info is None else info.error}); 0 partitions")
            topics[t] = 0
            continue
        n = len(info.replicas)
        spec: dict[str, Any] = {"partitions": n}
        if obs.kip848 is not None and (topic_ids.get(t) or info.topic_id):
            spec["id"] = topic_ids.get(t) or info.topic_id  # uniform's orders follow the real ids
        rk = _racks(info, obs.racks)
        if rk is not None:
            spec["racks"] = rk
        if weights == "lag":
            spec["weights"] = [int(_lag(obs, t, p, uncommitted)) for p in range(n)]  # whole records, exact
        elif weights == "rate":
            spec["weights"] = [round(obs.rates.get((t, p), 0.0), 6) for p in range(n)]
        topics[t] = spec if len(spec) > 1 else n
    for entry in members:  # owned partitions of topics the member left, or that shrank: Kafka ignores them
        for t, ps in list(entry.get("owned", {}).items()):
            n = _count(topics.get(t))
            keep = [p for p in ps if p < n and t in topics]
            if len(keep) != len(ps):
                notes.append(f"member {entry['id']}: owned {t} partitions {sorted(set(ps) - set(keep))} "
                             "no longer exist; dropped")
                if keep:
                    entry["owned"][t] = keep
                else:
                    del entry["owned"][t]
    if uncommitted:
        notes.append(f"no committed offset for {', '.join(uncommitted)}: their lag counts every retained "
                     "record (end offset - earliest offset)")
    if weights == "lag":
        behind = sorted(k for k in obs.committed if k[0] in topics and obs.committed[k] > obs.end.get(k, 0))
        if behind:
            shown = ", ".join(f"{t}-{p} (committed {obs.committed[(t, p)]:,}, end {obs.end.get((t, p), 0):,})"
                              for t, p in behind[:5])
            more = f" and {len(behind) - 5} more" if len(behind) > 5 else ""
            notes.append(f"the broker's end offsets (ListOffsets latest) are below the group's committed offsets "
                         f"for {shown}{more}: a committed offset is never past a partition's end, so these end "
                         "offsets are wrong (Tansu 0.6 answers so) and those lags, counted as 0, mean nothing")
    if weights == "rate":
        notes.append(f"weights are {obs.rate_unit} over a {obs.sample:.2f} s sample")
    source = _source(obs, bootstrap, weights)
    if obs.kip848 is not None:
        cg = obs.kip848
        source.update({"group_protocol": "consumer (KIP-848)", "kassign_assignor": SERVER_ASSIGNORS.get(cg.assignor),
                       "group_epoch": cg.group_epoch, "assignment_epoch": cg.assignment_epoch,
                       "owned_is": "each member's target assignment (the coordinator's assignor input)"})
        source["clients"] = {m.member_id: {"client_id": m.client_id, "host": m.client_host,
                                           "member_epoch": m.member_epoch}
                             for m in sorted(cg.members, key=lambda m: m.member_id)}
    else:
        source["clients"] = {m.member_id: {"client_id": m.client_id, "host": m.client_host}
                             for m in sorted(obs.group.members, key=lambda m: m.member_id)}
    doc: dict[str, Any] = {"format": "kassign/v1", "name": obs.group.group_id, "protocol": "consumer",
                           "topics": topics, "members": members, "source": source}
    if weights == "lag":
        doc["units"] = {"weights": "records"}  # records behind the group's committed offset
    elif weights == "rate" and obs.rate_unit:
        doc["units"] = {"weights": obs.rate_unit}
    if notes:
        doc["notes"] = notes
    return doc


def _count(spec: Any) -> int:
    if spec is None:
        return 0
    return int(spec if isinstance(spec, int) else spec["partitions"])


def _lag(obs: Observed, t: str, p: int, uncommitted: list[str]) -> int:
    """The lag rule of the lag-based assignor (``auto.offset.reset=earliest`` for a partition without a commit)."""
    from heuristics.lag_based import partition_lag

    committed = obs.committed.get((t, p))
    if committed is None:
        uncommitted.append(f"{t}-{p}")
    return partition_lag(committed, obs.start.get((t, p), 0), obs.end.get((t, p), 0))


def streams_instance(obs: Observed, *, changelogs: Mapping[str, Sequence[str]] | None = None,
                     bootstrap: str = "") -> dict[str, Any]:
    """The Streams instance document of an observed Kafka Streams application.

    Parameters
    ----------
    obs
        What :func:`observe` read (``end`` must hold the changelogs' end offsets).
    changelogs
        Subtopology id -> its changelog topics; task ``s_p``'s end offset sum is
        the sum of partition ``p``'s end offsets of subtopology ``s``'s changelogs.
    bootstrap
        Recorded in ``source``.
    """
    from solver.streams.subscription_info import SubscriptionDecodeError, decode, subscriptions_to_instance

    infos = []
    for m in sorted(obs.group.members, key=lambda m: m.member_id):
        sub = _subscription(m.member_id, m.metadata)
        try:
            infos.append(decode(sub.user_data or b"", "kafka"))
        except SubscriptionDecodeError as e:
            raise CaptureError(f"member {m.member_id}: cannot decode its Streams SubscriptionInfo: {e}") from None
    notes: list[str] = []
    end_offsets: dict[str, int] | None = None
    if changelogs:
        end_offsets = {}
        tasks = {t for i in infos for t, _ in i.task_offset_sums} | {t for i in infos for t in i.prev_tasks}
        tasks |= {t for i in infos for t in i.standby_tasks}
        for task in sorted(tasks):
            sub_id, _, part = task.partition("_")
            topics = changelogs.get(sub_id)
            if not topics:
                continue
            keys = [(t, int(part)) for t in topics]
            missing = [f"{t}-{p}" for t, p in keys if (t, p) not in obs.end]
            if missing:
                notes.append(f"task {task}: changelog partitions {', '.join(missing)} not found; no lag")
                continue
            end_offsets[task] = sum(obs.end[k] for k in keys)
    else:
        notes.append("no --changelogs given: tasks with local state are taken as caught up (no lags)")
    try:
        doc = subscriptions_to_instance(infos, end_offsets=end_offsets, name=obs.group.group_id)
    except ValueError as e:
        raise CaptureError(f"group {obs.group.group_id!r}: {e}") from None
    doc["source"] = _source(obs, bootstrap, "none")
    doc["source"]["threads"] = {m.member_id: info.process_id
                                for m, info in zip(sorted(obs.group.members, key=lambda m: m.member_id), infos,
                                                   strict=True)}
    if notes:
        doc["notes"] = notes
    return doc


def capture(bootstrap: str, group: str, *, weights: Weights = "none", sample: float = 5.0,
            config: Mapping[str, Any] | None = None, timeout: float = 30.0,
            changelogs: Mapping[str, Sequence[str]] | None = None, api_version: tuple[int, ...] | None = None,
            progress: Any = None) -> dict[str, Any]:
    """Capture ``group`` at ``bootstrap`` as an instance document (consumer or Streams).

    Raises
    ------
    CaptureError
        With the exit code of its kind (see :mod:`spark_runner.live.broker`).
    """
    with Broker(bootstrap, config, timeout=timeout, api_version=api_version) as broker:
        obs = observe(broker, group, weights=weights, sample=sample, timeout=timeout, changelogs=changelogs,
                      progress=progress)
    if obs.group.protocol == STREAMS_PROTOCOL and obs.kip848 is None:
        return streams_instance(obs, changelogs=changelogs, bootstrap=bootstrap)
    return consumer_instance(obs, bootstrap=bootstrap, weights=weights)
