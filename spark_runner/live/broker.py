"""Read-only access to a Kafka cluster for ``kassign capture`` (kafka-python's admin client).

Everything here only *reads*: ApiVersions, Metadata, FindCoordinator,
DescribeGroups, ConsumerGroupDescribe (KIP-848 groups), OffsetFetch, ListOffsets and DescribeLogDirs.  Nothing joins a
group or commits an offset.  Failures become :class:`CaptureError` subclasses
whose exit codes are documented in docs/cli.md:

====  =====================================================================
66    unknown group, or a group without members
69    broker unreachable, or the broker / group cannot be captured (missing API,
      not a consumer group)
75    timed out (the group kept rebalancing, a request did not answer)
77    not authorised (group, topic or cluster ACLs)
====  =====================================================================
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solver.errors import KassignError

#: API keys a capture needs (name for the error message).
DESCRIBE_GROUPS = 15
#: KIP-848's own group protocol is ConsumerGroupHeartbeat (68): a broker that answers it runs KIP-848 groups.
#: (ConsumerGroupDescribe, 69, alone says nothing: Tansu 0.6 lists it without running KIP-848 groups.)
CONSUMER_GROUP_HEARTBEAT = 68
#: KIP-848 groups are described by ConsumerGroupDescribe.
CONSUMER_GROUP_DESCRIBE = 69
#: KIP-1071 Streams groups (StreamsGroupHeartbeat): a broker that answers it runs them.
STREAMS_GROUP_HEARTBEAT = 88
REQUIRED_APIS = {3: "Metadata", 9: "OffsetFetch", 2: "ListOffsets", DESCRIBE_GROUPS: "DescribeGroups"}

# Kafka error codes that need a specific message.
_GROUP_AUTHORIZATION_FAILED = 30
_TOPIC_AUTHORIZATION_FAILED = 29
_CLUSTER_AUTHORIZATION_FAILED = 31
_GROUP_ID_NOT_FOUND = 69
_RETRIABLE_GROUP = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


class CaptureError(KassignError):
    """A capture that cannot be carried out (one line, with its exit code)."""

    exit_code = 69


class BrokerUnavailable(CaptureError):
    """The broker cannot be reached, or lacks what a capture needs (exit 69)."""

    exit_code = 69


class GroupNotFound(CaptureError):
    """Unknown group, or a group without members (exit 66)."""

    exit_code = 66


class NoClassicGroup(GroupNotFound):
    """DescribeGroups knows no classic group of that name (it may be a KIP-848 group: exit 66 if not)."""


class CaptureTimeout(CaptureError):
    """No answer in time, or the group kept rebalancing (exit 75)."""

    exit_code = 75


class NotAuthorized(CaptureError):
    """The credentials may not describe the group or its topics (exit 77)."""

    exit_code = 77


class ClientConfigError(KassignError):
    """A ``--command-config`` file kassign cannot use (a usage error, exit 2)."""

    exit_code = 2


# --------------------------------------------------------------------------- client properties

_PASSTHROUGH = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "client.id": "client_id",
    "ssl.key.password": "ssl_password",
    "ssl.keystore.password": "ssl_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.truststore.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.keystore.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.crl.location": "ssl_crlfile",
}
_INT = {"request.timeout.ms": "request_timeout_ms", "retry.backoff.ms": "retry_backoff_ms"}
# Properties with no meaning for a read-only capture: accepted silently.
_IGNORED = {"bootstrap.servers", "group.id", "default.api.timeout.ms", "ssl.truststore.password",
            "ssl.protocol", "ssl.enabled.protocols", "enable.auto.commit", "auto.offset.reset"}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


_SERVER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\s:\[\],]+)(?::(\d{1,5}))?")


def check_bootstrap(text: str) -> str:
    """``HOST[:PORT][,HOST[:PORT]...]`` (an IPv6 host in brackets, ports 1..65535) with the spaces around its
    commas dropped; anything else is an :class:`~solver.errors.OptionError` (exit 2), not the Kafka client's
    ``ValueError: invalid literal for int()``.

    Examples
    --------
    >>> check_bootstrap("b1:9092, [::1]:9093,b3")
    'b1:9092,[::1]:9093,b3'
    """
    from solver.errors import OptionError

    items = [t.strip() for t in text.split(",")]
    for item in items:
        hit = _SERVER.fullmatch(item)
        if hit is None or (hit.group(2) is not None and not 1 <= int(hit.group(2)) <= 65535):
            shown = item if len(item) <= 60 else item[:60] + "..."
            raise OptionError(f"--bootstrap-server expects HOST:PORT[,HOST:PORT...] (ports 1-65535), got {shown!r}")
    return ",".join(items)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (``key=value`` / ``key: value``, ``#``/``!`` comments, ``\\`` continuations).

    Examples
    --------
    >>> parse_properties("# c\\nsecurity.protocol=SASL_SSL\\nsasl.jaas.config=a \\\\\\n  b;\\n")
    {'security.protocol': 'SASL_SSL', 'sasl.jaas.config': 'a b;'}
    """
    out: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for line in logical:
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", line)
        if m:
            out[m.group(1)] = m.group(2).strip()
        else:
            out[line.strip()] = ""
    return out


def client_config(props: Mapping[str, str], source: str = "--command-config") -> tuple[dict[str, Any], list[str]]:
    """Translate Kafka client properties into kafka-python settings.

    Returns
    -------
    (config, ignored)
        kafka-python keyword arguments, and the property names that were ignored.

    Raises
    ------
    ClientConfigError
        A property kafka-python cannot honour (a JKS/PKCS12 store, an unparsable JAAS line, a bad number).

    Examples
    --------
    >>> cfg, ignored = client_config({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
    ...     "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
    ...                         'username="alice" password="s3cret";', "linger.ms": "5"})
    >>> sorted(cfg.items()), ignored
    ([('sasl_mechanism', 'PLAIN'), ('sasl_plain_password', 's3cret'), ('sasl_plain_username', 'alice'), \
('security_protocol', 'SASL_PLAINTEXT')], ['linger.ms'])
    """
    cfg: dict[str, Any] = {}
    ignored: list[str] = []
    for key in sorted(props):
        value = props[key]
        if key in _PASSTHROUGH:
            cfg[_PASSTHROUGH[key]] = value
        elif key in _INT:
            try:
                cfg[_INT[key]] = int(value)
            except ValueError:
                raise ClientConfigError(f"{source}: {key}: not an integer: {value!r}") from None
        elif key in ("ssl.truststore.type", "ssl.keystore.type"):
            if value.upper() != "PEM":
                raise ClientConfigError(f"{source}: {key}={value}: kassign reads PEM files only "
                                        "(convert the store with keytool/openssl)")
        elif key == "ssl.endpoint.identification.algorithm":
            cfg["ssl_check_hostname"] = value.lower() == "https"
        elif key == "sasl.jaas.config":
            options = dict(_JAAS_OPTION.findall(value))
            if "username" in options:
                cfg["sasl_plain_username"] = options["username"]
                cfg["sasl_plain_password"] = options.get("password", "")
            elif "serviceName" in options:
                cfg["sasl_kerberos_service_name"] = options["serviceName"]
            else:
                raise ClientConfigError(f"{source}: sasl.jaas.config: no username=\"...\" (PLAIN/SCRAM) "
                                        "or serviceName=\"...\" (GSSAPI) option found")
        elif key in _IGNORED:
            continue
        else:
            ignored.append(key)
    return cfg, ignored


def read_client_config(path: Path) -> tuple[dict[str, Any], list[str]]:
    """Read a ``--command-config`` file (see :func:`client_config`), bounded like every input."""
    from solver.errors import InstanceError
    from solver.model.files import read_text

    try:
        text = read_text(path)
    except InstanceError as e:
        raise ClientConfigError(f"{path}: cannot read: {'; '.join(p.message for p in e.problems)}") from None
    return client_config(parse_properties(text), str(path))


# --------------------------------------------------------------------------- the broker


@dataclass(frozen=True)
class GroupMember:
    """A member as DescribeGroups reports it (metadata and assignment still encoded)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    """A classic group as DescribeGroups reports it."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: tuple[GroupMember, ...]


@dataclass(frozen=True)
class ConsumerGroupMember:
    """A KIP-848 member as ConsumerGroupDescribe reports it; assignments are ``(topic, topic id, partitions)``
    in the broker's order (its maps' iteration order)."""

    member_id: str
    instance_id: str | None
    rack: str | None
    member_epoch: int
    client_id: str
    client_host: str
    topics: tuple[str, ...]
    regex: str | None
    assignment: tuple[tuple[str, str, tuple[int, ...]], ...]
    target: tuple[tuple[str, str, tuple[int, ...]], ...]


@dataclass(frozen=True)
class ConsumerGroup:
    """A KIP-848 consumer-protocol group as ConsumerGroupDescribe reports it."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: tuple[ConsumerGroupMember, ...]


@dataclass(frozen=True)
class TopicInfo:
    """A topic's partitions with the brokers holding their replicas; ``error`` is Kafka's error code."""

    name: str
    error: int
    replicas: tuple[tuple[int, ...], ...]
    leaders: tuple[int, ...]
    #: Kafka's topic id (Metadata v10+), when the broker gives one.
    topic_id: str | None = None


def _kafka_error_name(code: int) -> str:
    import kafka.errors as errors

    return str(errors.for_code(code).__name__)


class Broker:
    """A read-only admin connection to one cluster.

    Parameters
    ----------
    bootstrap
        ``HOST:PORT[,HOST:PORT...]``.
    config
        kafka-python settings from ``--command-config``.
    timeout
        Seconds any one step may take (connect, a request).
    api_version
        Skip kafka-python's version probe and assume this broker version
        (``(2, 3)`` for brokers whose ApiVersions answer kafka-python cannot read).
    """

    def __init__(self, bootstrap: str, config: Mapping[str, Any] | None = None, *, timeout: float = 30.0,
                 api_version: tuple[int, ...] | None = None) -> None:
        import kafka.errors as errors
        from kafka import KafkaAdminClient

        bootstrap = check_bootstrap(bootstrap)
        ms = max(int(timeout * 1000), 100)
        settings: dict[str, Any] = {"request_timeout_ms": ms, "bootstrap_timeout_ms": ms,
                                    "client_id": "kassign-capture", **dict(config or {})}
        if api_version is not None:
            settings["api_version"] = api_version
        self.bootstrap = bootstrap
        # kafka-python logs every failed connection attempt; the one-line error below says it all.
        logging.getLogger("kafka").setLevel(logging.CRITICAL)
        try:
            self.admin = KafkaAdminClient(bootstrap_servers=bootstrap, **settings)
        except errors.KafkaConfigurationError as e:
            raise ClientConfigError(f"--command-config: {e}") from None
        except (errors.SaslAuthenticationFailedError, errors.UnsupportedSaslMechanismError) as e:
            raise NotAuthorized(f"{bootstrap}: authentication failed ({type(e).__name__})") from None
        except (errors.KafkaError, OSError) as e:
            raise BrokerUnavailable(f"cannot reach a broker at {bootstrap} within {timeout:g} s "
                                    f"({type(e).__name__})") from None
        self._manager = self.admin._manager

    def close(self) -> None:
        """Close the connections."""
        with contextlib.suppress(Exception):  # closing must not mask the real outcome
            self.admin.close()

    def __enter__(self) -> Broker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, what: str, fn: Any, *args: Any) -> Any:
        """Run a coroutine function on the admin client's IO thread, with errors made one-line."""
        return self._call(what, lambda: self._manager.run(fn, *args))

    def _call(self, what: str, thunk: Any) -> Any:
        import kafka.errors as errors

        try:
            return thunk()
        except (errors.KafkaTimeoutError, errors.RequestTimedOutError):
            raise CaptureTimeout(f"{self.bootstrap}: {what}: no answer in time") from None
        except (errors.KafkaConnectionError, errors.NodeNotReadyError, errors.MetadataEmptyBrokerList) as e:
            # connected before: the cluster stopped answering mid-capture (exit 75, as a timeout), not unreachable
            raise CaptureTimeout(f"{self.bootstrap}: {what}: the broker stopped answering (connection lost: "
                                 f"{type(e).__name__})") from None
        except errors.AuthorizationError as e:
            raise NotAuthorized(f"{self.bootstrap}: {what}: not authorised ({type(e).__name__})") from None
        except errors.KafkaError as e:
            raise BrokerUnavailable(f"{self.bootstrap}: {what} failed: {type(e).__name__}: {e}") from None

    # ----------------------------------------------------------------- requests

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """The broker's API keys -> (min, max) version, asked with ApiVersions v0 (every broker answers it)."""
        from kafka.protocol.metadata import ApiVersionsRequest

        async def ask() -> Any:
            node = self._manager.least_loaded_node()
            return await self._manager.send(ApiVersionsRequest(version=0, max_version=0), node_id=node)

        resp = self._run("ApiVersions", ask)
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys}

    def check_apis(self) -> dict[int, tuple[int, int]]:
        """Fail with a clear message when the broker lacks an API a capture needs."""
        versions = self.api_versions()
        missing = [f"{name} (API key {key})" for key, name in sorted(REQUIRED_APIS.items()) if key not in versions]
        if missing:
            why = (" (it cannot list a group's members, their subscriptions and assignments without it)"
                   if DESCRIBE_GROUPS not in versions else "")
            raise BrokerUnavailable(f"the broker at {self.bootstrap} does not support {', '.join(missing)}, "
                                    f"which kassign capture needs{why}")
        return versions

    def _ask_coordinator(self, what: str, group: str, request: Any) -> Any:
        """``request`` sent to ``group``'s coordinator; ``None`` while no coordinator is ready for it."""
        import kafka.errors as errors

        admin = self.admin

        async def ask() -> Any:
            try:
                node = await admin._find_coordinator_id(group)
            except (errors.CoordinatorNotAvailableError, errors.CoordinatorLoadInProgressError,
                    errors.NotCoordinatorError):
                # Apache Kafka answers FindCoordinator so until its offsets topic exists and is loaded (a
                # fresh cluster's first group): the coordinator is not ready yet, as a describe error
                return None
            return await self._manager.send(request, node_id=node)

        return self._run(what, ask)

    def describe_group(self, group: str) -> GroupDescription:
        """DescribeGroups for one group (raw member metadata and assignment bytes)."""
        from kafka.protocol.admin import DescribeGroupsRequest

        resp = self._ask_coordinator(f"DescribeGroups {group!r}", group,
                                     DescribeGroupsRequest(groups=[group], max_version=5))
        if resp is None:
            return GroupDescription(group, "CoordinatorNotReady", "", "", ())
        g = resp.groups[0]
        code = int(g.error_code)
        if code in (_GROUP_AUTHORIZATION_FAILED, _CLUSTER_AUTHORIZATION_FAILED):
            raise NotAuthorized(f"not authorised to describe group {group!r} ({_kafka_error_name(code)})")
        if code == _GROUP_ID_NOT_FOUND:
            raise NoClassicGroup(f"group {group!r} does not exist: nothing to capture")
        if code in _RETRIABLE_GROUP:
            return GroupDescription(group, "CoordinatorNotReady", "", "", ())
        if code:
            raise BrokerUnavailable(f"DescribeGroups {group!r} failed: {_kafka_error_name(code)}")
        members = tuple(
            GroupMember(str(m.member_id), getattr(m, "group_instance_id", None), str(m.client_id),
                        str(m.client_host), bytes(m.member_metadata or b""), bytes(m.member_assignment or b""))
            for m in g.members)
        return GroupDescription(group, str(g.group_state), str(g.protocol_type), str(g.protocol_data), members)

    def describe_consumer_group(self, group: str) -> ConsumerGroup | None:
        """ConsumerGroupDescribe (KIP-848) for one group; ``None`` when the broker has no such group (or its
        coordinator is not ready yet)."""
        from spark_runner.live.protocol.messages import ConsumerGroupDescribeRequest

        req = ConsumerGroupDescribeRequest(group_ids=[group], include_authorized_operations=False, max_version=0)
        resp = self._ask_coordinator(f"ConsumerGroupDescribe {group!r}", group, req)
        if resp is None:
            return None
        g = resp.groups[0]
        code = int(g.error_code)
        if code in (_GROUP_AUTHORIZATION_FAILED, _CLUSTER_AUTHORIZATION_FAILED, _TOPIC_AUTHORIZATION_FAILED):
            raise NotAuthorized(f"not authorised to describe group {group!r} ({_kafka_error_name(code)})")
        if code == _GROUP_ID_NOT_FOUND or code in _RETRIABLE_GROUP:
            return None
        if code:
            raise BrokerUnavailable(f"ConsumerGroupDescribe {group!r} failed: {_kafka_error_name(code)}"
                                    f"{': ' + g.error_message if g.error_message else ''}")

        def parts(a: Any) -> tuple[tuple[str, str, tuple[int, ...]], ...]:
            return tuple((str(t.topic_name), str(t.topic_id), tuple(int(p) for p in t.partitions))
                         for t in (a.topic_partitions if a is not None else []))

        members = tuple(
            ConsumerGroupMember(str(m.member_id), m.instance_id, m.rack_id, int(m.member_epoch), str(m.client_id),
                                str(m.client_host), tuple(str(t) for t in m.subscribed_topic_names),
                                m.subscribed_topic_regex, parts(m.assignment), parts(m.target_assignment))
            for m in g.members)
        return ConsumerGroup(str(g.group_id), str(g.group_state), int(g.group_epoch), int(g.assignment_epoch),
                             str(g.assignor_name), members)

    def topics(self, names: Iterable[str]) -> tuple[dict[str, TopicInfo], dict[int, str | None]]:
        """Metadata for ``names``: per-topic replicas and leaders, and each broker's rack."""
        md = self._run("Metadata", self.admin._get_cluster_metadata, sorted(set(names)))
        racks = {int(b["node_id"]): b.get("rack") for b in md["brokers"]}
        out: dict[str, TopicInfo] = {}
        for t in md["topics"]:
            code = int(t["error_code"])
            if code == _TOPIC_AUTHORIZATION_FAILED:
                raise NotAuthorized(f"not authorised to describe topic {t['name']!r}")
            parts = sorted(t["partitions"] or [], key=lambda p: p["partition_index"])
            tid = t.get("topic_id")
            out[t["name"]] = TopicInfo(t["name"], code, tuple(tuple(p["replica_nodes"]) for p in parts),
                                       tuple(int(p["leader_id"]) for p in parts),
                                       str(tid) if tid is not None and int(getattr(tid, "int", 1)) else None)
        return out, racks

    def topic_names(self) -> list[str]:
        """Every topic's name in the cluster (Metadata for all topics)."""
        return sorted(self._call("Metadata", lambda: self.admin.list_topics()))

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets (OffsetFetch); partitions without a commit are absent."""
        res = self._call(f"OffsetFetch {group!r}", lambda: self.admin.list_group_offsets({group: None}))
        return {(tp.topic, tp.partition): int(om.offset) for tp, om in res.get(group, {}).items()
                if om.offset is not None and om.offset >= 0}

    def offsets(self, partitions: Iterable[tuple[str, int]], latest: bool = True) -> dict[tuple[str, int], int]:
        """End (``latest``) or start offsets of ``partitions`` (ListOffsets)."""
        from kafka import TopicPartition
        from kafka.protocol.consumer import OffsetSpec

        spec = OffsetSpec.LATEST if latest else OffsetSpec.EARLIEST
        tps = {TopicPartition(t, p): spec for t, p in partitions}
        if not tps:
            return {}
        res = self._call("ListOffsets", lambda: self.admin.list_partition_offsets(tps))
        return {(tp.topic, tp.partition): int(o.offset) for tp, o in res.items()}

    def log_sizes(self, partitions: Iterable[tuple[str, int]],
                  leaders: Mapping[tuple[str, int], int]) -> dict[tuple[str, int], int] | None:
        """Bytes on disk of each partition's leader replica (DescribeLogDirs); ``None`` if the broker won't say."""
        wanted = sorted(set(partitions))
        by_topic: dict[str, list[int]] = {}
        for t, p in wanted:
            by_topic.setdefault(t, []).append(p)
        try:
            res = self._call("DescribeLogDirs", lambda: self.admin.describe_log_dirs(topic_partitions=by_topic))
        except CaptureError:
            return None
        except Exception:  # an optional measurement: fall back to records/s
            return None
        sizes: dict[tuple[str, int], int] = {}
        for per_broker in res or []:
            broker = int(per_broker["broker"])
            for d in per_broker.get("log_dirs") or []:
                if d.get("error_code"):
                    continue
                for t in d.get("topics") or []:
                    for p in t.get("partitions") or []:
                        key = (t["name"], int(p["partition_index"]))
                        if leaders.get(key) == broker and not p.get("is_future_key"):
                            sizes[key] = int(p["partition_size"])
        return sizes if all(k in sizes for k in wanted) else None
