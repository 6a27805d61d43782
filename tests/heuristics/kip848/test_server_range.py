"""KIP-848 server-side range assignor at Kafka 1eb7644349cb: sorted members, contiguous ranges, not sticky."""

from __future__ import annotations

import doctest
from typing import Any

import heuristics.kip848.server_range as sr_mod
from heuristics.kip848.server_range import server_range_assign
from solver.io import parse_instance


def inst(topics: dict[str, Any], members: list[dict[str, Any]]) -> Any:
    return parse_instance({"format": "kassign/v1", "topics": topics, "members": members})


def canon(i: Any) -> dict[str, dict[str, list[int]]]:
    return server_range_assign(i).canonical(i.member_ids)


def test_javadoc_copartitioned_example() -> None:
    # M0: [T1P0, T1P1, T2P0, T2P1], M1: [T1P2, T2P2]
    i = inst({"T1": {"partitions": 3, "id": "00000000-0000-0000-0000-000000000002"},
              "T2": {"partitions": 3, "id": "00000000-0000-0000-0000-000000000001"}},
             [{"id": "M1", "topics": ["T1", "T2"]}, {"id": "M0", "topics": ["T1", "T2"]}])
    assert canon(i) == {"M0": {"T1": [0, 1], "T2": [0, 1]}, "M1": {"T1": [2], "T2": [2]}}


def test_static_members_keep_their_place_across_new_member_ids() -> None:
    # javadoc: with instance ids I0, I1 the assignment survives new member ids
    before = inst({"T1": 3, "T2": 3}, [
        {"id": "M0", "topics": ["T1", "T2"], "instance_id": "I0"},
        {"id": "M1", "topics": ["T1", "T2"], "instance_id": "I1"}])
    after = inst({"T1": 3, "T2": 3}, [
        {"id": "M3", "topics": ["T1", "T2"], "instance_id": "I0"},
        {"id": "M2", "topics": ["T1", "T2"], "instance_id": "I1"}])
    assert canon(before)["M0"] == canon(after)["M3"] == {"T1": [0, 1], "T2": [0, 1]}
    assert canon(before)["M1"] == canon(after)["M2"] == {"T1": [2], "T2": [2]}


def test_not_sticky_at_this_commit() -> None:
    # a topic grows from 4 to 6 partitions: ranges are recomputed, owned partitions do not matter
    i = inst({"t": 6}, [
        {"id": "a", "topics": ["t"], "owned": {"t": [0, 1]}, "generation": 3},
        {"id": "b", "topics": ["t"], "owned": {"t": [2, 3]}, "generation": 3}])
    assert canon(i) == {"a": {"t": [0, 1, 2]}, "b": {"t": [3, 4, 5]}}


def test_heterogeneous_subscriptions_count_subscribers_per_topic() -> None:
    i = inst({"x": 3, "y": 2}, [
        {"id": "a", "topics": ["x"]},
        {"id": "b", "topics": ["x", "y"]},
        {"id": "c", "topics": ["y"], "instance_id": "s"}])
    assert canon(i) == {"a": {"x": [0, 1]}, "b": {"x": [2], "y": [1]}, "c": {"y": [0]}}


def test_racks_are_ignored() -> None:
    plain = inst({"t": 2}, [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}])
    racked = inst({"t": {"partitions": 2, "racks": [["r2"], ["r1"]]}},
                  [{"id": "a", "topics": ["t"], "rack": "r1"}, {"id": "b", "topics": ["t"], "rack": "r2"}])
    assert canon(plain) == canon(racked) == {"a": {"t": [0]}, "b": {"t": [1]}}


def test_doctests() -> None:
    assert doctest.testmod(sr_mod).failed == 0
