"""The order an instance lists its tasks in is not an input: Kafka's answers for two small groups.

A real Kafka Streams leader fills its task maps and sets (``allTasks``, the stateful tasks, KIP-924's
``ApplicationState.allTasks()``) from its partition grouper, sub-topology by sub-topology, never in the
order a file lists them; kassign's instance format treats ``tasks`` as a set, and both kassign and the
harness that runs Kafka's released classes fill Kafka's structures in ``TaskId`` order.  The expected
answers below are what Kafka 4.4.0's released jars gave (through ``java/harness``) for these groups; the
harness once filled Kafka's sets in listing order and got other standbys for exactly these two groups
(``docs/algorithms.md``, "Rules the released jars taught").
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import heuristics.streams.kip924_sticky
import heuristics.streams.sticky_task  # noqa: F401  (registers sticky-task and kip924-sticky)
from solver.io import parse_instance
from solver.registry import get
from solver.result import Params

# Three fresh 4-thread clients, six stateful tasks of two sub-topologies, one standby replica
# (random differential case streams-diff-1303905418).
STICKY_TASK_GROUP: dict[str, Any] = {
    "format": "kassign/v1", "protocol": "streams",
    "tasks": [{"id": t, "stateful": True} for t in ("1_0", "1_2", "0_1", "1_3", "0_0", "1_1")],
    "clients": [{"id": "client-0", "process_id": "faab2dbd-9fa8-45d2-81e4-554612317997", "capacity": 4},
                {"id": "client-2", "process_id": "28ef5df8-9d77-4713-a140-a4252b1f433c", "capacity": 4},
                {"id": "client-1", "process_id": "aa21d30d-0b1f-43af-9e72-4208dd1c8e93", "capacity": 4}],
    "config": {"num_standby_replicas": 1, "acceptable_recovery_lag": 0, "max_warmup_replicas": 3},
}
STICKY_TASK_KAFKA = {  # LegacyStickyTaskAssignor, Kafka 3.8.1 to 4.4.0
    "client-0": {"active": ["0_1", "1_2"], "standby": ["0_0", "1_3"]},
    "client-1": {"active": ["1_0", "1_3"], "standby": ["0_1", "1_1"]},
    "client-2": {"active": ["0_0", "1_1"], "standby": ["1_0", "1_2"]},
}

# Five clients, four stateful tasks; previous standbys are read from the lags (state on disk)
# (random differential case streams-diff-1910554750).
KIP924_GROUP: dict[str, Any] = {
    "format": "kassign/v1", "protocol": "streams",
    "tasks": [{"id": t, "stateful": True} for t in ("0_2", "0_0", "0_3", "0_1")],
    "clients": [
        {"id": "client-0", "process_id": "627a5e6d-d582-4865-9ab9-74df2ebbe39d", "capacity": 3, "lags": {"0_1": 17}},
        {"id": "client-1", "process_id": "dcebd5b2-adfd-48c5-acb5-0f19f776d956", "capacity": 2,
         "standby": ["0_2", "0_0"], "lags": {"0_3": 59}},
        {"id": "client-2", "process_id": "ef58069d-369c-4478-9bbb-4fcf58899c1d", "capacity": 4,
         "active": ["0_0", "0_1"], "lags": {"0_2": 0}},
        {"id": "client-3", "process_id": "354a1903-81e8-4cd8-bac6-9952da02d93f", "capacity": 3,
         "lags": {"0_1": 17356}},
        {"id": "client-4", "process_id": "6c551e94-0091-4401-a58a-1165836d34fd", "capacity": 2,
         "active": ["0_2"], "standby": ["0_1"]}],
    "config": {"num_standby_replicas": 1, "acceptable_recovery_lag": 10000, "max_warmup_replicas": 1},
}
KIP924_KAFKA = {  # KIP-924 StickyTaskAssignor walking the standbys in TaskId order, Kafka 3.8.1 and 4.4.0
    "client-0": {"active": [], "standby": ["0_1"]},
    "client-1": {"active": ["0_3"], "standby": ["0_0"]},
    "client-2": {"active": ["0_0", "0_1"], "standby": ["0_2"]},
    "client-3": {"active": [], "standby": ["0_3"]},
    "client-4": {"active": ["0_2"], "standby": []},
}
# The same group walked in the listing order (standby_task_order 0_2, 0_0, 0_3, 0_1): client-0 and
# client-3 share a HashSet bucket, and the standbys of 0_1 and 0_3 change places (Kafka 4.4.0's answer).
KIP924_LISTED_WALK_KAFKA = {**KIP924_KAFKA, "client-0": {"active": [], "standby": ["0_3"]},
                            "client-3": {"active": [], "standby": ["0_1"]}}


def answer(assignor: str, group: dict[str, Any], version: str = "4.4.0") -> dict[str, dict[str, list[str]]]:
    """The assignor's answer as ``{client: {"active", "standby"}}``."""
    result = get(assignor).run(parse_instance(json.loads(json.dumps(group))), Params(kafka_version=version))
    return {c: {"active": list(a.active), "standby": list(a.standby + a.warmup)}
            for c, a in result.assignment.clients.items()}


def reordered(group: dict[str, Any], order: list[int]) -> dict[str, Any]:
    """``group`` with its tasks listed in another order."""
    return {**group, "tasks": [group["tasks"][i] for i in order]}


@pytest.mark.parametrize("version", ["3.8.1", "4.3.1", "4.4.0"])
def test_sticky_task_gives_kafkas_answer_whatever_the_listing_order(version: str) -> None:
    assert answer("sticky-task", STICKY_TASK_GROUP, version) == STICKY_TASK_KAFKA
    for order in ([4, 2, 0, 5, 1, 3], [3, 1, 5, 0, 2, 4]):
        assert answer("sticky-task", reordered(STICKY_TASK_GROUP, order), version) == STICKY_TASK_KAFKA


@pytest.mark.parametrize("version", ["3.8.1", "4.4.0"])
def test_kip924_walks_standbys_in_task_id_order_without_a_given_order(version: str) -> None:
    assert answer("kip924-sticky", KIP924_GROUP, version) == KIP924_KAFKA
    assert answer("kip924-sticky", reordered(KIP924_GROUP, [1, 3, 0, 2]), version) == KIP924_KAFKA
    walked = {**KIP924_GROUP, "standby_task_order": ["0_0", "0_1", "0_2", "0_3"]}
    assert answer("kip924-sticky", walked, version) == KIP924_KAFKA


def test_kip924_walks_a_given_standby_order() -> None:
    walked = {**KIP924_GROUP, "standby_task_order": ["0_2", "0_0", "0_3", "0_1"]}
    assert answer("kip924-sticky", walked) == KIP924_LISTED_WALK_KAFKA
