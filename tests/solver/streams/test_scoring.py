"""Streams scorer: every metric on hand-made assignments, violations named."""

from __future__ import annotations

from solver.io import parse_instance
from solver.streams.model import StreamsAssignment
from solver.streams.scoring import STREAMS_METRIC_NAMES, score_streams

A = "00000000-0000-0000-0000-00000000000a"
B = "00000000-0000-0000-0000-00000000000b"
INST = parse_instance({
    "format": "kassign/v1", "protocol": "streams",
    "tasks": [{"id": "0_0"}, {"id": "0_1"}, {"id": "1_0", "stateful": False}],
    "clients": [{"id": "a", "process_id": A, "capacity": 2, "active": ["0_0"], "lags": {"0_1": 40}},
                {"id": "b", "process_id": B, "active": ["0_1"], "lags": {"0_0": 700}}],
    "config": {"num_standby_replicas": 1, "acceptable_recovery_lag": 100}})


def test_valid_assignment_metrics():
    a = StreamsAssignment.from_lists({"a": {"active": ["0_0", "1_0"], "standby": ["0_1"]},
                                      "b": {"active": ["0_1"], "warmup": ["0_0"]}}, probing_rebalance=True)
    s = score_streams(INST, a)
    assert list(s) == list(STREAMS_METRIC_NAMES)
    # 0_0 has a warm-up but no standby: Kafka allows that (it logs it); counted, not invalid
    assert s["valid"] is True and s["outcome"] == "valid" and s["violations"] == []
    assert s["standby_shortfall"] == 1
    assert s["max_active_load"] == 1.0 and s["min_active_load"] == 1.0 and s["active_spread"] == 0.0
    assert s["max_total_load"] == 2.0 and s["min_total_load"] == 1.5
    # restoration: 0_1 standby on a (lag 40) + warm-up of 0_0 on b (lag 700); previous actives cost 0
    assert s["restoration_cost"] == 740
    assert s["moved_actives"] == 0 and s["warmups"] == 1 and s["standbys"] == 1 and s["probing_rebalance"]


def test_violations():
    a = StreamsAssignment.from_lists({"a": {"active": ["0_1"], "standby": ["1_0"]},
                                      "b": {"active": ["0_1", "0_0"], "standby": ["0_0"]}})
    s = score_streams(INST, a)
    assert not s["valid"]
    assert s["unassigned_tasks"] == 1 and s["duplicate_actives"] == 1
    assert "b: holds task 0_0 twice" in s["violations"]
    assert "task 1_0: stateless task with a standby or warm-up" in s["violations"]
    # an active on a client that is not caught up is Kafka's choice to make (restoration measures it)
    assert s["not_caught_up_actives"] == 1 and not any("caught up" in v for v in s["violations"])
    assert s["outcome"] == "invalid"
    assert s["moved_actives"] == 1  # 0_0 left a (0_1 stays on b, which is among its actives)


def test_cross_rack_traffic_is_kafkas_cost_without_non_overlap():
    doc = {"format": "kassign/v1", "protocol": "streams",
           "tasks": [{"id": "0_0", "source_racks": [["r1"], ["r2"]], "changelog_racks": [["r2"]]},
                     {"id": "0_1", "source_racks": [["r1", "r2"]], "changelog_racks": [["r2"]]},
                     {"id": "1_0", "stateful": False, "source_racks": [["r3"]]}],
           "clients": [{"id": "a", "process_id": A, "rack": "r1"}, {"id": "b", "process_id": B, "rack": "r2"}],
           "config": {"num_standby_replicas": 1, "rack_aware_assignment_traffic_cost": 3}}
    a = StreamsAssignment.from_lists({"a": {"active": ["0_0", "1_0"], "standby": ["0_1"]},
                                      "b": {"active": ["0_1"], "warmup": ["0_0"]}})
    # actives: 0_0 on r1 reads one partition from r2 only (1), 1_0 reads r3 (1), 0_1 is local (0);
    # standby 0_1 on r1 restores a changelog on r2 only (1); the warm-up of 0_0 on r2 is local (0)
    assert score_streams(parse_instance(doc), a)["cross_rack_traffic"] == 3 * 3
    doc["config"] = {"num_standby_replicas": 1}  # unset traffic cost: Kafka's assignor reads 10
    assert score_streams(parse_instance(doc), a)["cross_rack_traffic"] == 3 * 10
    del doc["clients"][1]["rack"]
    assert score_streams(parse_instance(doc), a)["cross_rack_traffic"] is None  # b's replicas: unknown
    assert score_streams(INST, a)["cross_rack_traffic"] is None  # no rack data at all
