"""Eager ``sticky`` (Kafka's StickyAssignor): hand cases with exact outputs and properties."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics.sticky.balance import BalanceIndex, is_balanced_reference
from heuristics.sticky.core import run_sticky
from heuristics.sticky.eager import sticky_assign
from heuristics.sticky.general import KafkaNullPointerError
from heuristics.sticky.input import prepare
from heuristics.sticky.movements import JavaHashSet, Ladder, Movements
from solver.io import parse_instance
from solver.model import Instance
from solver.model.scoring import score
from solver.registry import UnsupportedInstanceError, get
from solver.result import Params
from tests.conftest import seed_records


def _inst(topics: dict[str, Any], members: list[dict[str, Any]]) -> Instance:
    return parse_instance({"format": "kassign/v1", "topics": topics, "members": members})


def test_kafka12464_seed_keeps_seven_and_moves_three() -> None:
    """KAFKA-12464: C0 owns t1p0-4, C1 owns t1p5-9, C2 joins; quotas 3/4, one member at 4."""
    inst = next(r.instance for r in seed_records() if r.instance.name == "kafka12464-new-member")
    res = get("sticky").run(inst, Params())
    assert res.assignment.to_lists() == {"C0": {"t1": [0, 1, 2, 3]}, "C1": {"t1": [5, 6, 7]}, "C2": {"t1": [4, 8, 9]}}
    s = score(inst, res.assignment)
    assert s["moved"] == 3
    assert sorted((res.assignment.partitions_of(m) for m in inst.member_ids), reverse=True) == [4, 3, 3]
    assert res.extra["path"] == "constrained"


def test_kip54_example_general_path() -> None:
    """KIP-54's example: C0 on t0, C1 on t0,t1, C2 on t0,t1,t2; then C0 leaves."""
    topics = {"t0": 1, "t1": 2, "t2": 3}
    inst = _inst(
        topics,
        [
            {"id": "C0", "topics": ["t0"]},
            {"id": "C1", "topics": ["t0", "t1"]},
            {"id": "C2", "topics": ["t0", "t1", "t2"]},
        ],
    )
    first = sticky_assign(inst).to_lists()
    assert first == {"C0": {"t0": [0]}, "C1": {"t1": [0, 1]}, "C2": {"t2": [0, 1, 2]}}
    after = _inst(
        topics,
        [
            {"id": "C1", "topics": ["t0", "t1"], "owned": first["C1"], "generation": 1},
            {"id": "C2", "topics": ["t0", "t1", "t2"], "owned": first["C2"], "generation": 1},
        ],
    )
    # sticky keeps everything and gives the orphan to the member with fewer partitions
    assert sticky_assign(after).to_lists() == {"C1": {"t0": [0], "t1": [0, 1]}, "C2": {"t2": [0, 1, 2]}}


def test_constrained_round_robin_from_scratch_is_topic_major() -> None:
    inst = _inst({"a": 3, "b": 2}, [{"id": "m2", "topics": ["a", "b"]}, {"id": "m1", "topics": ["a", "b"]}])
    # unassigned partitions a0 a1 a2 b0 b1 go round robin to members sorted by id
    assert sticky_assign(inst).to_lists() == {"m2": {"a": [1], "b": [0]}, "m1": {"a": [0, 2], "b": [1]}}


def test_partition_major_order_of_owned_partitions() -> None:
    """KAFKA-16277: a member over quota keeps its owned partitions by partition number first."""
    inst = _inst(
        {"x": 4, "y": 4},
        [
            {"id": "A", "topics": ["x", "y"], "owned": {"x": [0, 1, 2, 3], "y": [0, 1, 2, 3]}, "generation": 2},
            {"id": "B", "topics": ["x", "y"]},
        ],
    )
    # A keeps x0 y0 x1 y1 (not x0..x3); B gets the rest
    assert sticky_assign(inst).to_lists() == {"A": {"x": [0, 1], "y": [0, 1]}, "B": {"x": [2, 3], "y": [2, 3]}}


def test_stale_generation_claim_loses_to_newer() -> None:
    inst = _inst(
        {"t": 4},
        [
            {"id": "old", "topics": ["t"], "owned": {"t": [0, 1, 2, 3]}, "generation": 3},
            {"id": "new", "topics": ["t"], "owned": {"t": [0, 1]}, "generation": 4},
        ],
    )
    assert sticky_assign(inst).to_lists() == {"old": {"t": [2, 3]}, "new": {"t": [0, 1]}}


def test_same_generation_double_claim_is_dropped() -> None:
    """Two members claiming t-0 in one generation: neither keeps it (it is handed out afresh)."""
    inst = _inst(
        {"t": 4},
        [
            {"id": "a", "topics": ["t"], "owned": {"t": [0, 1]}, "generation": 5},
            {"id": "b", "topics": ["t"], "owned": {"t": [0, 2]}, "generation": 5},
            {"id": "c", "topics": ["t"], "generation": 5},
        ],
    )
    out = run_sticky(inst)
    got = out.assignment().to_lists()
    assert got["a"]["t"][0] == 1 and got["b"]["t"][0] == 2
    owner_of_0 = next(m for m, tp in got.items() if 0 in tp.get("t", []))
    assert owner_of_0 == "c"
    assert bool(out.transferring[0])  # cooperative would withhold it


def test_rack_aware_constrained_keeps_only_rack_matching_owned() -> None:
    """KIP-881: an owned partition without a replica on the member's rack is given up."""
    inst = _inst(
        {"t": {"partitions": 4, "racks": [["r1"], ["r2"], ["r1"], ["r2"]]}},
        [
            {"id": "a", "topics": ["t"], "rack": "r1", "owned": {"t": [0, 1]}, "generation": 1},
            {"id": "b", "topics": ["t"], "rack": "r2", "owned": {"t": [2, 3]}, "generation": 1},
        ],
    )
    out = run_sticky(inst)
    assert out.assignment().to_lists() == {"a": {"t": [0, 2]}, "b": {"t": [1, 3]}}
    assert score(inst, out.assignment())["cross_rack"] == 0
    # both moves hand a partition given up by its owner to another member
    assert out.transferring.tolist() == [False, True, True, False]


def test_rack_aware_general_path_prefers_rack_then_balance() -> None:
    inst = _inst(
        {"t": {"partitions": 2, "racks": [["r1"], ["r1"]]}, "u": {"partitions": 2, "racks": [["r2"], ["r2"]]}},
        [
            {"id": "a", "topics": ["t", "u"], "rack": "r1"},
            {"id": "b", "topics": ["t", "u"], "rack": "r2"},
            {"id": "c", "topics": ["u"], "rack": "r1"},
        ],
    )
    got = sticky_assign(inst)
    s = score(inst, got)
    assert s["valid"] and s["locally_balanced"]
    # rack pass: a takes t0 t1, b takes u0 and u1 (c's rack holds no replica of u);
    # the balancing loop then moves u0 to c: balance wins over rack locality
    assert got.to_lists() == {"a": {"t": [0, 1]}, "b": {"u": [1]}, "c": {"u": [0]}}
    assert s["cross_rack"] == 1


def test_no_members_and_unsubscribed_topics() -> None:
    empty = _inst({"t": 3}, [])
    assert sticky_assign(empty).to_lists() == {}
    idle = _inst({"t": 3, "unused": 2}, [{"id": "a", "topics": ["t"]}])
    assert sticky_assign(idle).to_lists() == {"a": {"t": [0, 1, 2]}}


def test_java_hashset_first_follows_buckets_then_insertion() -> None:
    s = JavaHashSet()
    s.add(1, 17)  # bucket 1 of 16
    s.add(2, 1)  # bucket 1 as well, inserted later
    s.add(3, 2)
    assert s.first() == 1
    s.remove(1)
    s.add(1, 17)  # re-added: now behind element 2 in bucket 1
    assert s.first() == 2


def test_ladder_orders_by_load_then_id_rank() -> None:
    load = [2, 1, 1]
    ladder = Ladder(load, [0, 2, 1])
    for m in range(3):
        ladder.add(m)
    assert list(ladder.members()) == [2, 1, 0]
    ladder.remove(2)
    load[2] = 5
    ladder.add(2)
    assert ladder.first() == 1 and ladder.last() == 2


def test_movements_move_back_earlier_partition() -> None:
    mv = Movements([0, 0, 0], lambda g: g)
    mv.move(0, 7, 8)  # partition 0 went 7 -> 8
    # moving partition 1 from 8 back to 7 moves partition 0 back instead (stickiness)
    assert mv.actual_partition(1, 8, 7) == 0
    mv.move(0, 8, 7)
    assert mv.moves == {} and mv.by_topic == {}


# --------------------------------------------------------------------------- properties

@st.composite
def instances(draw: st.DrawFn) -> Instance:
    n_topics = draw(st.integers(1, 4))
    sizes = {f"t{i}": draw(st.integers(1, 8)) for i in range(n_topics)}
    racked = draw(st.booleans())
    rack_names = ["r0", "r1", "r2"]
    topics: dict[str, Any] = dict(sizes)
    if racked:
        topics = {
            t: {"partitions": n, "racks": [draw(st.lists(st.sampled_from(rack_names), unique=True)) for _ in range(n)]}
            for t, n in sizes.items()
        }
    n_members = draw(st.integers(1, 6))
    identical = draw(st.booleans())
    names = list(topics)
    members = []
    claimed: set[tuple[str, int]] = set()
    for i in range(n_members):
        subs = names if identical else draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
        owned: dict[str, list[int]] = {}
        for t in subs:
            parts = draw(st.lists(st.integers(0, sizes[t] - 1), unique=True, max_size=sizes[t]))
            parts = [p for p in parts if (t, p) not in claimed or draw(st.booleans())]
            claimed.update((t, p) for p in parts)
            if parts:
                owned[t] = parts
        spec: dict[str, Any] = {"id": f"m{draw(st.integers(0, 99))}-{i}", "topics": subs}
        if racked and draw(st.booleans()):
            spec["rack"] = draw(st.sampled_from(rack_names))
        if owned:
            spec["owned"] = owned
            spec["generation"] = draw(st.integers(1, 3))
        members.append(spec)
    return _inst(topics, members)


@settings(max_examples=150, deadline=None)
@given(instances())
def test_sticky_output_is_valid_and_locally_balanced(inst: Instance) -> None:
    s = score(inst, sticky_assign(inst))
    assert s["valid"], s["violations"]
    assert s["unassigned"] == 0
    assert s["locally_balanced"]


def test_more_racks_than_an_int64_mask_holds() -> None:
    """70 racks: the bit masks fall back to Python ints and the answer stays rack-local."""
    racks = [[f"r{p}"] for p in range(70)]
    members = [{"id": f"m{i:02d}", "topics": ["t"], "rack": f"r{69 - i}"} for i in range(70)]
    inst = _inst({"t": {"partitions": 70, "racks": racks}}, members)
    out = run_sticky(inst)
    assert out.assignment().to_lists() == {f"m{i:02d}": {"t": [69 - i]} for i in range(70)}
    assert score(inst, out.assignment())["cross_rack"] == 0


@settings(max_examples=150, deadline=None)
@given(instances(), st.randoms(use_true_random=False))
def test_incremental_balance_index_matches_kafkas_isbalanced(inst: Instance, rnd: Any) -> None:
    """The O(members x subscriptions) balance test agrees with Kafka's partition-by-partition one."""
    si = prepare(inst)
    if si.n_partitions == 0:
        return
    subscribers = [[m for m in range(si.n_members) if t in si.subs[m]] for t in range(len(si.topics))]
    owner = np.array([rnd.choice(subscribers[t]) for t in si.topic_of.tolist()], dtype=np.int64)
    sizes = np.diff(si.offsets)
    max_size = [int(sum(sizes[t] for t in s)) for s in si.subs]
    active = [rnd.random() < 0.9 for _ in range(si.n_members)]
    index = BalanceIndex(si, owner)

    def fast() -> bool:
        loads = np.bincount(owner, minlength=si.n_members)
        act = np.asarray(active)
        if not act.any() or loads[act].min() >= loads[act].max() - 1:
            return True
        return not index.unbalanced_pair_exists(loads, act, act & (loads < np.asarray(max_size)))

    for _ in range(6):
        loads = np.bincount(owner, minlength=si.n_members).tolist()
        assert fast() == is_balanced_reference(si, owner, loads, active, max_size)
        g = rnd.randrange(si.n_partitions)
        new = rnd.choice(subscribers[int(si.topic_of[g])])
        index.move(g, int(owner[g]), new)
        owner[g] = new


def test_member_over_its_maximum_is_still_checked_for_balance() -> None:
    """Kafka's ``isBalanced`` skips a member only at exactly its maximum (``==``), not above it.

    consumer-5 subscribes to clicks-7 (4 partitions) but, as the previous owner (generation 16 < 17) of
    partitions of topics it left, gets 4 of those back; at 7 partitions against consumer-0's 9 Kafka finds
    the assignment unbalanced and moves clicks-7 p0 to it.  Found by the differential campaign; the answer
    is Kafka's at every release 3.7.2..4.4.0.
    """
    c0 = "consumer-0-d9f55a91-9266-4ace-84d4-00ad248c8756"
    c1 = "consumer-1-6c9da424-e0be-4199-8735-ce4012afa3c8"
    c2 = "consumer-2-2591469b-fed8-4180-948f-503170852cd5"
    c3 = "consumer-3-11b031a9-0957-434b-a30a-cb1022100a97"
    c4 = "consumer-4-4683ff23-b273-47e5-b9be-81a3932e5cea"
    c5 = "consumer-5-81211ff5-ce7d-4e30-ba9d-6c873a817fcb"
    c6 = "consumer-6-d7a87491-e255-4889-9156-ec9fe0340f07"
    inst = _inst(
        {"logs-0": 7, "events-1": 11, "logs-2": 9, "events-3": 6, "events-4": 2, "orders-5": 9, "clicks-6": 8,
         "clicks-7": 4},
        [
            {"id": c4, "topics": ["events-4", "clicks-7", "logs-0"], "generation": 16,
             "owned": {"events-1": [4, 7, 8], "events-4": [0], "logs-2": [2, 7], "orders-5": [6]}},
            {"id": c1, "topics": ["logs-2"], "generation": 17,
             "owned": {"clicks-7": [1], "events-1": [4], "events-3": [1], "logs-2": [1], "orders-5": [0, 5, 8]}},
            {"id": c2, "topics": ["events-4", "logs-2", "logs-0", "events-3", "orders-5", "clicks-7"],
             "generation": 16,
             "owned": {"clicks-7": [2], "events-1": [0], "logs-0": [2, 4], "logs-2": [0, 8], "orders-5": [1, 3, 4]}},
            {"id": c3, "topics": ["orders-5", "events-1"], "generation": 17,
             "owned": {"clicks-6": [0, 2, 7], "events-1": [2], "events-3": [0, 4], "logs-0": [0, 6]}},
            {"id": c0, "generation": 17,
             "topics": ["orders-5", "events-3", "events-4", "clicks-7", "logs-2", "events-1", "logs-0", "clicks-6"],
             "owned": {"clicks-6": [4], "clicks-7": [0], "logs-0": [3, 4], "orders-5": [6, 7]}},
            {"id": c6, "topics": ["clicks-7", "events-3", "logs-2", "orders-5", "clicks-6"], "generation": 17,
             "owned": {"clicks-6": [1, 6], "events-1": [5], "events-3": [3, 5], "logs-0": [1]}},
            {"id": c5, "topics": ["clicks-7"], "generation": 16,
             "owned": {"clicks-6": [5], "events-1": [1, 3, 9], "events-4": [1], "logs-2": [4, 6]}},
        ],
    )
    res = get("sticky").run(inst, Params())
    assert res.extra["path"] == "general"
    assert res.assignment.to_lists() == {
        c4: {"events-1": [4, 8], "events-4": [0], "logs-0": [0, 1, 2, 5, 6]},
        c1: {"logs-2": [1, 2, 3, 4, 5, 6, 7]},
        c2: {"clicks-7": [2], "events-3": [2], "logs-2": [0, 8], "orders-5": [0, 1, 3, 4]},
        c3: {"events-1": [0, 2, 5, 6, 7, 10], "orders-5": [2, 5]},
        c0: {"clicks-6": [3, 4], "events-3": [0], "logs-0": [3, 4], "orders-5": [6, 7, 8]},
        c6: {"clicks-6": [0, 1, 2, 6, 7], "events-3": [1, 3, 4, 5]},
        c5: {"clicks-6": [5], "clicks-7": [0, 1, 3], "events-1": [1, 3, 9], "events-4": [1]},
    }


#: Kafka's sticky assignors throw NullPointerException on this group (found by the differential campaign, seed 77):
#: a member that subscribes to nothing still claims clicks-2 p1, and with racks its claim survives into the
#: reassignment loop, where Kafka looks up that member's (absent) list of partitions it could take.
KAFKA_NPE_GROUP: dict[str, Any] = {
    "format": "kassign/v1", "protocol": "consumer",
    "topics": {
        "orders-1": {"partitions": 2},
        "clicks-2": {"partitions": 10,
                     "racks": [["r0", "r1", "r2"], ["r2", "r3"], ["r0"], ["r0", "r1"], ["r0", "r2", "r3"],
                               ["r1"], ["r0", "r2", "r3"], ["r0", "r1", "r3"], ["r0", "r2", "r3"], ["r0", "r3"]]},
    },
    "members": [
        {"id": "consumer-0-e381a5b2-ecd6-448e-b504-e0ac885687b1", "topics": [], "owned": {"clicks-2": [1]}},
        {"id": "consumer-1-b475e163-e76a-467a-a101-b13886a764f5", "topics": ["orders-1", "clicks-2"],
         "rack": "r0"},
        {"id": "consumer-2-0738e56a-8fb5-40ef-9f6f-0fc40089c39b", "topics": ["orders-1", "clicks-2"],
         "generation": 16},
    ],
}


def test_a_group_kafka_fails_on_is_refused_as_kafka_fails() -> None:
    """kassign reproduces Kafka's NullPointerException as a refusal (exit 3), never an answer Kafka does not give;
    tests/heuristics/differential checks that Kafka's classes fail on it at every release."""
    inst = parse_instance(KAFKA_NPE_GROUP)
    for assignor in ("sticky", "cooperative-sticky"):
        for release in ("3.7", "4.4"):
            with pytest.raises(KafkaNullPointerError, match="NullPointerException") as e:
                get(assignor).run(inst, Params(kafka_version=release))
            assert isinstance(e.value, UnsupportedInstanceError)
