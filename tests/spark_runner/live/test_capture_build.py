"""Capture's pure parts: client properties, and observed group state -> instance documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from solver.io import parse_instance
from spark_runner.live.broker import (
    ClientConfigError,
    GroupDescription,
    GroupMember,
    TopicInfo,
    check_bootstrap,
    client_config,
    parse_properties,
    read_client_config,
)
from spark_runner.live.capture import Observed, consumer_instance, streams_instance
from spark_runner.live.wire import KassignUserData, encode_assignment, encode_subscription, encode_user_data
from tests.spark_runner.live.conftest import subscription_bytes


def _member(mid: str, topics: list[str], owned: dict[str, list[int]], **kw: object) -> GroupMember:
    meta = encode_subscription(topics, kw.get("user_data"), generation=int(kw.get("generation", -1)),  # type: ignore[call-overload]
                               rack=kw.get("rack"), version=int(kw.get("version", 3)))  # type: ignore[arg-type, call-overload]
    return GroupMember(mid, kw.get("instance_id"), f"client-{mid}", "/127.0.0.1", meta,  # type: ignore[arg-type]
                       encode_assignment(owned))


def _topic(name: str, n: int, replicas: list[tuple[int, ...]] | None = None) -> TopicInfo:
    reps = tuple(replicas or [(1,)] * n)
    return TopicInfo(name, 0, reps, tuple(r[0] for r in reps))


def test_properties_files_like_kafka_consumer_groups_sh(tmp_path: Path) -> None:
    f = tmp_path / "client.properties"
    f.write_text("# SASL over TLS\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
                 "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
                 '    username="svc" password="p=w;d";\nssl.truststore.location: /etc/ca.pem\n'
                 "ssl.endpoint.identification.algorithm=\nmax.poll.records=10\n")
    cfg, ignored = read_client_config(f)
    assert cfg == {"security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "svc",
                   "sasl_plain_password": "p=w;d", "ssl_cafile": "/etc/ca.pem", "ssl_check_hostname": False}
    assert ignored == ["max.poll.records"]


@pytest.mark.parametrize(("props", "match"), [
    ({"ssl.truststore.type": "JKS"}, "PEM files only"),
    ({"request.timeout.ms": "soon"}, "not an integer"),
    ({"sasl.jaas.config": "com.example.Module required;"}, "no username"),
])
def test_client_properties_kassign_cannot_honour_are_usage_errors(props: dict[str, str], match: str) -> None:
    with pytest.raises(ClientConfigError, match=match) as e:
        client_config(props, "c.properties")
    assert e.value.exit_code == 2 and str(e.value).startswith("c.properties: ")


def test_unreadable_command_config_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ClientConfigError, match="cannot read"):
        read_client_config(tmp_path / "missing.properties")


def test_parse_properties_colon_and_blank_values() -> None:
    assert parse_properties("a: 1\n! bang comment\nb\nc = x y \n") == {"a": "1", "b": "", "c": "x y"}


def test_consumer_instance_fields_come_from_the_right_places() -> None:
    members = (
        _member("m-b", ["t2", "t1"], {"t1": [1], "t2": [0, 2]}, generation=7, rack="r2", instance_id="static-1"),
        _member("m-a", ["t1"], {"t1": [0, 9]}, version=0),  # v0: no generation; t1-9 no longer exists
        _member("m-c", ["t1", "gone"], {}, user_data=encode_user_data(KassignUserData(4, {"t1": (2,)})),
                version=0),
    )
    obs = Observed(GroupDescription("g", "Stable", "consumer", "range", members),
                   {"t1": _topic("t1", 3, [(1, 2), (2, 3), (3, 1)]), "t2": _topic("t2", 3, [(1,), (2,), (3,)]),
                    "gone": TopicInfo("gone", 3, (), ())},
                   {1: "r1", 2: "r2", 3: None},
                   committed={("t1", 0): 5, ("t1", 1): 9, ("t2", 0): 1},
                   end={("t1", 0): 8, ("t1", 1): 9, ("t1", 2): 4, ("t2", 0): 3, ("t2", 1): 0, ("t2", 2): 6},
                   start={("t1", 2): 1, ("t2", 1): 0, ("t2", 2): 2})
    doc = consumer_instance(obs, bootstrap="h:9092", weights="lag")
    parse_instance(doc)  # a valid instance
    assert [m["id"] for m in doc["members"]] == ["m-a", "m-b", "m-c"]
    a, b, c = doc["members"]
    assert a == {"id": "m-a", "topics": ["t1"], "owned": {"t1": [0]}, "generation": -1}
    assert b == {"id": "m-b", "topics": ["t1", "t2"], "owned": {"t1": [1], "t2": [0, 2]}, "generation": 7,
                 "instance_id": "static-1", "rack": "r2"}
    assert c == {"id": "m-c", "topics": ["gone", "t1"], "generation": 4}  # kassign-optimal's own report
    assert doc["topics"]["gone"] == 0
    assert doc["topics"]["t1"] == {"partitions": 3, "racks": [["r1", "r2"], ["r2"], ["r1"]],
                                   "weights": [3.0, 0.0, 3.0]}
    assert doc["topics"]["t2"] == {"partitions": 3, "racks": [["r1"], ["r2"], []], "weights": [2.0, 0.0, 4.0]}
    assert doc["source"]["assignor"] == "range" and doc["source"]["kassign_assignor"] == "range"
    assert doc["source"]["clients"]["m-a"] == {"client_id": "client-m-a", "host": "/127.0.0.1"}
    assert doc["units"] == {"weights": "records"}  # lag: records behind the committed offset
    notes = "\n".join(doc["notes"])
    assert "t1-2, t2-1, t2-2" in notes and "[9] no longer exist" in notes and "topic gone" in notes


def test_rate_weights_say_their_unit() -> None:
    obs = Observed(GroupDescription("g", "Stable", "consumer", "roundrobin",
                                    (_member("m", ["t"], {"t": [0, 1]}),)),
                   {"t": _topic("t", 2)}, {1: None}, rates={("t", 0): 1.5, ("t", 1): 0.0},
                   rate_unit="bytes/s", sample=2.0)
    doc = consumer_instance(obs, weights="rate")
    assert doc["topics"]["t"] == {"partitions": 2, "weights": [1.5, 0.0]}
    assert doc["source"]["weights"] == "rate (bytes/s over 2.00 s)"
    assert doc["units"] == {"weights": "bytes/s"} and parse_instance(doc).meta["units"] == {"weights": "bytes/s"}
    assert "weights are bytes/s over a 2.00 s sample" in doc["notes"]


def test_streams_instance_from_kafkas_subscription_info_bytes() -> None:
    t79, t83 = subscription_bytes("sub207-streams-v7-9"), subscription_bytes("sub207-streams-v8-3")
    members = (_member("th-1", ["in"], {}, user_data=t79, version=0),
               _member("th-2", ["in"], {}, user_data=t79, version=0),
               _member("th-3", ["in"], {}, user_data=t83, version=0))
    end = {("app-s0-changelog", 3): 7, ("app-s0-changelog", 107): 40000, ("app-s2-changelog", 6): 5,
           ("app-s2-changelog", 143): 10}
    obs = Observed(GroupDescription("app", "Stable", "consumer", "stream", members), {}, {}, end=end)
    doc = streams_instance(obs, changelogs={"0": ["app-s0-changelog"], "2": ["app-s2-changelog"]})
    parse_instance(doc)
    clients = {c["id"]: c for c in doc["clients"]}
    assert set(clients) == {"host-93:443", "streams-app-7:8080"}
    c1, c2 = clients["host-93:443"], clients["streams-app-7:8080"]
    assert (c1["capacity"], c1["active"], c1["standby"]) == (2, ["0_1"], ["0_3", "2_143"])
    # end 10 < offset sum 90868: corrupted local state, which Kafka counts as a restore from scratch (lag = end)
    assert c1["lags"] == {"0_3": 7, "2_143": 10}
    assert (c2["capacity"], c2["active"], c2["standby"]) == (1, [], ["0_107", "2_6"])
    assert c2["lags"] == {"0_107": 40000 - 31086, "2_6": 5}
    assert doc["source"]["kassign_assignor"] == "high-availability"


class _FakeGroup:
    def __init__(self, code: int) -> None:
        self.error_code = code
        self.group_state, self.protocol_type, self.protocol_data, self.members = "Dead", "", "", []


class _FakeResponse:
    def __init__(self, code: int) -> None:
        self.groups = [_FakeGroup(code)]


@pytest.mark.parametrize(("code", "kind", "exit_code", "match"), [
    (30, "NotAuthorized", 77, "not authorised to describe group 'g'"),
    (69, "GroupNotFound", 66, "does not exist"),
    (16, None, None, None),  # NOT_COORDINATOR: retried by the caller until its deadline
])
def test_describe_group_error_codes_become_exit_codes(code: int, kind: str | None, exit_code: int | None,
                                                      match: str | None) -> None:
    from spark_runner.live import broker as mod

    b = object.__new__(mod.Broker)
    b.bootstrap = "h:1"
    b.admin = None
    b._run = lambda what, fn, *a: _FakeResponse(code)  # type: ignore[method-assign]
    if kind is None:
        assert b.describe_group("g").state == "CoordinatorNotReady"
        return
    with pytest.raises(getattr(mod, kind), match=match) as e:
        b.describe_group("g")
    assert e.value.exit_code == exit_code


class _StubBroker:
    """kassign's Broker as far as ``observe`` uses it before any topic: the API list and one group answer."""

    bootstrap = "b:9092"

    def __init__(self, apis: set[int], group: GroupDescription) -> None:
        self.apis, self.group = apis, group

    def check_apis(self) -> dict[int, tuple[int, int]]:
        return dict.fromkeys(self.apis, (0, 0))

    def describe_group(self, group: str) -> GroupDescription:
        return self.group

    def describe_consumer_group(self, group: str) -> None:
        return None  # no KIP-848 group of that name either


@pytest.mark.parametrize(("apis", "hint"), [({15, 68, 69}, True), ({15, 69}, False), ({15}, False)])
def test_the_kip848_hint_keys_on_consumer_group_heartbeat(apis: set[int], hint: bool) -> None:
    """API 68 (ConsumerGroupHeartbeat) is KIP-848's protocol; 69 alone (Tansu 0.6) runs no KIP-848 group."""
    from spark_runner.live.broker import GroupNotFound
    from spark_runner.live.capture import observe

    with pytest.raises(GroupNotFound) as e:
        observe(_StubBroker(apis, GroupDescription("g", "Dead", "", "", ())), "g", timeout=1)  # type: ignore[arg-type]
    assert ("KIP-848" in str(e.value)) is hint


def test_members_without_metadata_stop_the_capture_saying_what_still_works() -> None:
    from spark_runner.live.broker import BrokerUnavailable
    from spark_runner.live.capture import observe

    members = tuple(GroupMember(f"m{i}", None, "", "", b"", b"") for i in range(2))
    with pytest.raises(BrokerUnavailable) as e:
        observe(_StubBroker({15}, GroupDescription("g", "Stable", "consumer", "", members)), "g")  # type: ignore[arg-type]
    assert e.value.exit_code == 69
    assert str(e.value).startswith("the broker at b:9092 returned no member metadata for group 'g' (DescribeGroups: "
                                   "2 of 2 member(s) without subscription bytes, no protocol name)")
    assert "what still works on this broker: the live assignor" in str(e.value)


def test_end_offsets_below_the_committed_ones_are_named_wrong() -> None:
    obs = Observed(GroupDescription("g", "Stable", "consumer", "range", (_member("m", ["t"], {"t": [0, 1]}),)),
                   {"t": _topic("t", 2)}, {1: None}, committed={("t", 0): 5, ("t", 1): 2},
                   end={("t", 0): 1, ("t", 1): 9})
    doc = consumer_instance(obs, weights="lag")
    assert doc["topics"]["t"]["weights"] == [0.0, 7.0]
    assert any("t-0 (committed 5, end 1)" in n and "wrong" in n for n in doc["notes"])
    assert not any("t-1 (" in n for n in doc["notes"])


@pytest.mark.parametrize("text", ["", ":", "a:b:c:d", "h:0", "h:65536", "h:99999", ",", "h:1,,h:2", "[::1", "h :1"])
def test_a_bootstrap_server_that_is_not_host_port_is_a_usage_error(text: str) -> None:
    """Was exit 1 (the Kafka client's ``int('')``) for ``:`` and ``a:b:c:d``; 69 after the whole timeout for the
    others."""
    from solver.errors import OptionError

    with pytest.raises(OptionError, match=r"^--bootstrap-server expects HOST:PORT\[,HOST:PORT\.\.\.\] \(ports "
                                          r"1-65535\), got "):
        check_bootstrap(text)


def test_bootstrap_servers_kafka_accepts() -> None:
    assert check_bootstrap("b1:9092, [::1]:9093 ,b3,ä:1") == "b1:9092,[::1]:9093,b3,ä:1"


def test_a_kip848_group_becomes_an_instance_with_its_targets_in_the_brokers_order() -> None:
    """ConsumerGroupDescribe: ``owned`` is the target assignment, topics and partitions as the broker lists them
    (the coordinator's iteration order, which ``uniform`` walks), every topic with its id, the assignor mapped."""
    from solver.io import parse_instance
    from spark_runner.live.broker import ConsumerGroup, ConsumerGroupMember

    a_id, b_id = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
    m1 = ConsumerGroupMember("m1", None, "r1", 7, "c1", "/127.0.0.1", ("b", "a"), None,
                             assignment=(("b", b_id, (17, 1)),), target=(("b", b_id, (17, 1)), ("a", a_id, (2, 0))))
    m2 = ConsumerGroupMember("m2", "static-2", None, 7, "c2", "/127.0.0.1", ("a",), None,
                             assignment=(), target=(("a", a_id, (1,)),))
    cg = ConsumerGroup("g", "Stable", 7, 7, "uniform", (m2, m1))
    obs = Observed(GroupDescription("g", "Stable", "consumer", "uniform", ()),
                   {"a": _topic("a", 3), "b": _topic("b", 18)}, {1: None}, kip848=cg)
    doc = consumer_instance(obs)
    assert doc["members"] == [  # the broker's member order, not sorted: uniform's HashMap ties follow it
        {"id": "m2", "topics": ["a"], "owned": {"a": [1]}, "instance_id": "static-2"},
        {"id": "m1", "topics": ["a", "b"], "owned": {"b": [17, 1], "a": [2, 0]}, "rack": "r1"},
    ]
    assert list(doc["members"][1]["owned"]) == ["b", "a"]
    assert doc["topics"] == {"a": {"partitions": 3, "id": a_id}, "b": {"partitions": 18, "id": b_id}}
    assert doc["source"]["group_protocol"] == "consumer (KIP-848)" and doc["source"]["kassign_assignor"] == "uniform"
    assert doc["source"]["clients"]["m1"] == {"client_id": "c1", "host": "/127.0.0.1", "member_epoch": 7}
    inst = parse_instance(doc)
    assert inst.members[1].owned.listed("b").tolist() == [17, 1]  # the order reaches the model


def test_lags_are_written_as_exact_integers_up_to_a_java_long() -> None:
    """Was: ``float(lag)``: 2^53 + 1 records behind became 2^53 (and the file said ``9007199254740992.0``)."""
    import json

    big = 2**63 - 1
    obs = Observed(GroupDescription("g", "Stable", "consumer", "range", (_member("m", ["t"], {"t": [0, 1, 2]}),)),
                   {"t": _topic("t", 3)}, {1: None}, committed={("t", 0): 0, ("t", 1): 1, ("t", 2): 7},
                   end={("t", 0): 2**53 + 1, ("t", 1): big, ("t", 2): 7})
    doc = consumer_instance(obs, weights="lag")
    weights = doc["topics"]["t"]["weights"]
    assert weights == [2**53 + 1, big - 1, 0] and all(type(w) is int for w in weights)
    text = json.dumps(doc)
    assert "9007199254740993" in text and ".0" not in json.dumps(weights)
    inst = parse_instance(json.loads(text))
    assert inst.topics["t"].lags is not None and inst.topics["t"].lags.tolist() == [2**53 + 1, big - 1, 0]
