"""The live assignor's decision (pure): the optimum, cooperative withholding, the fallback, determinism."""

from __future__ import annotations

import logging
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.io import parse_instance
from solver.model.instance import Assignment
from solver.model.scoring import score
from solver.result import Params
from spark_runner.assignors import get
from spark_runner.live import assignor as live
from spark_runner.live.assignor import MemberReport, build_instance_doc, plan_round, warm_up, withhold

warm_up()  # the budget of the tests below is for solving, not for importing OR-Tools


def _moves(before: dict[str, dict[str, tuple[int, ...]]], after: dict[str, dict[str, list[int]]]) -> int:
    owner = {(t, p): m for m, tps in before.items() for t, ps in tps.items() for p in ps}
    return sum(1 for m, tps in after.items() for t, ps in tps.items() for p in ps
               if (t, p) in owner and owner[(t, p)] != m)


def _optimum(members: list[MemberReport], partitions: dict[str, int]) -> Any:
    inst = parse_instance(build_instance_doc(members, partitions))
    return inst, get("optimal").run(inst, Params(seed=0))


def _settle(members: list[MemberReport], partitions: dict[str, int], rebalance: str = "cooperative"
            ) -> tuple[dict[str, dict[str, list[int]]], int]:
    """Run join rounds until nothing is withheld; check no partition has two owners in any round.

    A cooperative member keeps what it claims until its new assignment arrives.
    """
    rounds = 0
    while True:
        rounds += 1
        res = plan_round(members, partitions, rebalance=rebalance)  # type: ignore[arg-type]
        held: dict[tuple[str, int], set[str]] = {}
        for m in members if rebalance == "cooperative" else ():  # eager members revoked all before joining
            for t, ps in m.owned.items():
                for p in ps:
                    held.setdefault((t, p), set()).add(m.member_id)
        for mid, tps in res.assignment.items():
            for t, ps in tps.items():
                for p in ps:
                    assert held.get((t, p), set()) <= {mid}, f"round {rounds}: {t}-{p} given to {mid} while held"
        gen = max([m.generation for m in members] + [0]) + 1
        members = [MemberReport(m.member_id, m.topics, {t: tuple(ps) for t, ps in res.assignment[m.member_id].items()},
                                gen, m.weights) for m in members]
        if res.withheld == 0:
            return res.assignment, rounds
        assert rounds < 5


def _group(n_members: int, partitions: dict[str, int], owned_by: int, seed: int) -> list[MemberReport]:
    """``owned_by`` of the members own everything round-robin (generation 3); the rest are new."""
    rng = random.Random(seed)
    tps = [(t, p) for t in sorted(partitions) for p in range(partitions[t])]
    rng.shuffle(tps)
    owned: dict[str, dict[str, list[int]]] = {f"m{i}": {} for i in range(n_members)}
    for k, (t, p) in enumerate(tps):
        if owned_by:
            owned[f"m{k % owned_by}"].setdefault(t, []).append(p)
    return [MemberReport(f"m{i}", tuple(sorted(partitions)), {t: tuple(sorted(ps)) for t, ps in owned[f"m{i}"].items()},
                         3 if i < owned_by else -1) for i in range(n_members)]


def test_a_join_settles_on_the_optimum_with_the_fewest_moves() -> None:
    parts = {"a": 7, "b": 5}
    members = _group(4, parts, owned_by=3, seed=1)
    inst, opt = _optimum(members, parts)
    settled, rounds = _settle(members, parts)
    assert rounds == 2
    metrics = score(inst, Assignment.from_lists(settled))
    assert metrics["valid"] and metrics["max_load"] == 3 and metrics["min_load"] == 3
    before = {m.member_id: dict(m.owned) for m in members}
    assert _moves(before, settled) == opt.objective[opt.extra["stages"].index("moves")] == 3


def test_first_round_withholds_exactly_the_partitions_another_member_still_claims() -> None:
    parts = {"a": 7, "b": 5}
    members = _group(4, parts, owned_by=3, seed=2)
    res = plan_round(members, parts)
    assert res.status == "optimal" and res.withheld == 3
    again, dropped = withhold(res.target, members)
    assert again == res.assignment and dropped == 3
    given_out = {(t, p) for tps in res.assignment.values() for t, ps in tps.items() for p in ps}
    target = {(t, p) for tps in res.target.values() for t, ps in tps.items() for p in ps}
    assert len(target) == 12 and len(target - given_out) == 3


def test_eager_hands_out_the_target_at_once() -> None:
    parts = {"a": 7, "b": 5}
    members = _group(4, parts, owned_by=3, seed=3)
    res = plan_round(members, parts, rebalance="eager")
    assert res.withheld == 0 and res.assignment == res.target
    assert sorted(len([p for ps in tps.values() for p in ps]) for tps in res.assignment.values()) == [3, 3, 3, 3]


def test_past_the_budget_kafkas_cooperative_sticky_result_is_used_and_logged(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    parts = {"a": 7, "b": 5}
    members = _group(4, parts, owned_by=3, seed=4)
    monkeypatch.setattr(live, "_solve_within", lambda instance, budget, wall: None)
    with caplog.at_level(logging.WARNING, logger="spark_runner.live"):
        res = plan_round(members, parts, budget=0.5, wall=2.0)
    assert res.engine == "cooperative-sticky" and res.status == "fallback"
    assert "no answer from the optimal engine within 2 s" in caplog.text and "cooperative-sticky" in caplog.text
    inst = parse_instance(build_instance_doc(members, parts))
    # Kafka's first round (what it withholds is what kassign withholds: partitions another member claims)
    kafka = get("cooperative-sticky").run(inst, Params()).assignment.to_lists()
    assert res.assignment == {m: {t: list(ps) for t, ps in tps.items()} for m, tps in kafka.items()}
    settled = get("cooperative-sticky").run(inst, Params(options={"rounds": "settle"})).assignment.to_lists()
    assert res.target == {m: {t: list(ps) for t, ps in tps.items()} for m, tps in settled.items()}


def test_a_slow_solver_really_falls_back_within_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from spark_runner import assignors

    real = assignors.get

    class Slow:
        def run(self, instance: Any, params: Any) -> Any:
            time.sleep(3)
            return real("optimal").run(instance, params)

    monkeypatch.setattr(assignors, "get", lambda name: Slow() if name == "optimal" else real(name))
    t0 = time.perf_counter()
    res = plan_round(_group(3, {"a": 6}, owned_by=2, seed=5), {"a": 6}, budget=0.3, wall=0.3)
    assert res.engine == "cooperative-sticky" and time.perf_counter() - t0 < 2.5


def test_same_reports_in_any_order_give_the_same_assignment() -> None:
    parts = {"a": 9, "b": 4, "c": 3}
    members = _group(5, parts, owned_by=3, seed=6)
    weighted = [MemberReport(m.member_id, m.topics, m.owned, m.generation,
                             {t: {p: float(1 + (3 * p) % 5) for p in ps} for t, ps in m.owned.items()})
                for m in members]
    for group, engine in ((members, "flow"), (weighted, "exact")):
        first = plan_round(group, parts, budget=60)  # a generous budget: the fallback is the one timing-dependent path
        assert (first.engine, first.status) == (engine, "optimal")
        for seed in range(3):
            shuffled = list(group)
            random.Random(seed).shuffle(shuffled)
            again = plan_round(shuffled, parts, budget=60)
            assert (again.assignment, again.target, again.withheld) == (first.assignment, first.target,
                                                                        first.withheld)


def test_reported_weights_are_used_and_unreported_partitions_weigh_their_mean() -> None:
    members = [MemberReport("m0", ("a",), {"a": (0,)}, 1, {"a": {0: 10.0}}),
               MemberReport("m1", ("a",), {"a": (1,)}, 1, {"a": {1: 2.0}}),
               MemberReport("m2", ("a", "b"))]
    doc = build_instance_doc(members, {"a": 3, "b": 1})
    assert doc["topics"] == {"a": {"partitions": 3, "weights": [10.0, 2.0, 6.0]},
                             "b": {"partitions": 1, "weights": [6.0]}}
    res = plan_round(members, {"a": 3, "b": 1}, rebalance="eager")
    # The optimum of loads {10, 2, 6, 6}: the heavy partition alone, the others spread: max load 10.
    inst = parse_instance(doc)
    assert score(inst, Assignment.from_lists(res.assignment))["weighted_max_load"] == 10.0
    assert res.assignment["m0"] == {"a": [0]}


def test_claims_on_vanished_partitions_and_unsubscribed_topics_are_dropped() -> None:
    members = [MemberReport("m0", ("a",), {"a": (0, 5), "gone": (0,)}, 2), MemberReport("m1", ("a",))]
    doc = build_instance_doc(members, {"a": 2})
    assert doc["members"][0]["owned"] == {"a": [0]}


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 5), st.integers(0, 5), st.dictionaries(st.sampled_from("abc"), st.integers(0, 9), min_size=1),
       st.integers(0, 10**6), st.sampled_from(["cooperative", "eager"]))
def test_settled_assignment_is_the_optimum_and_never_doubles_an_owner(
        n: int, owned_by: int, parts: dict[str, int], seed: int, rebalance: str) -> None:
    members = _group(n, parts, owned_by=min(owned_by, n), seed=seed)
    inst, opt = _optimum(members, parts)
    settled, rounds = _settle(members, parts, rebalance)
    assert rounds <= (1 if rebalance == "eager" else 2)
    got = score(inst, Assignment.from_lists(settled))
    best = score(inst, opt.assignment)
    assert got["valid"] and got["unassigned"] == 0
    assert (got["max_load"], got["sum_sq_load"]) == (best["max_load"], best["sum_sq_load"])
    before = {m.member_id: dict(m.owned) for m in members}
    assert _moves(before, settled) == best["moved"]


def test_a_stale_claim_does_not_hold_a_partition_back() -> None:
    # m1 lost its membership at generation 2 (kafka-python revoked its partitions without telling the
    # assignor) and still reports a-0; m0 holds a-0 since generation 5.  Counting the stale claim would take
    # a-0 from m0 in every round (m0 revokes, rejoins, and m1 still claims it): a livelock.
    members = [MemberReport("m0", ("a",), {"a": (0,)}, 5), MemberReport("m1", ("a",), {"a": (0,)}, 2),
               MemberReport("m2", ("a",), {"a": (1,)}, 5)]
    res = plan_round(members, {"a": 3})
    assert res.target["m0"] == {"a": [0]} and res.target["m2"] == {"a": [1]} and res.target["m1"] == {"a": [2]}
    assert res.assignment == res.target and res.withheld == 0


def _flat(p: dict[str, dict[str, list[int]]]) -> set[tuple[str, str, int]]:
    return {(m, t, x) for m, tps in p.items() for t, ps in tps.items() for x in ps}


def test_a_follow_up_round_hands_out_the_steps_target_without_solving_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The leader keeps a cooperative step's target: a new optimum from the half-way state could move more."""
    monkeypatch.setattr(live, "_report", lambda mid, md, iid: md)  # the members below are their own reports
    parts = {"a": 7, "b": 5}

    class Cluster:
        def partitions_for_topic(self, t: str) -> set[int]:
            return set(range(parts[t]))

    class Entry:  # kafka-python's (member_id, metadata) entry
        def __init__(self, r: MemberReport) -> None:
            self.member_id, self.metadata = r.member_id, r

    before = [MemberReport("m1", ("a", "b"), {"a": (0, 4, 5, 6)}, 1),
              MemberReport("m2", ("a", "b"), {"a": (1,), "b": (1, 2, 3)}, 1),
              MemberReport("m3", ("a", "b"), {"a": (2, 3), "b": (0, 4)}, 1),
              MemberReport("m4", ("a",))]
    asg = live.KassignOptimalAssignor(warm=False)
    asg.assign(Cluster(), [Entry(r) for r in before])
    first = asg.last_plan
    assert first is not None and first.status == "optimal" and first.withheld == 3
    assert _moves({r.member_id: dict(r.owned) for r in before}, first.target) == 3
    after = [MemberReport(r.member_id, r.topics, {t: tuple(ps) for t, ps in first.assignment[r.member_id].items()}, 2)
             for r in before]
    asg.assign(Cluster(), [Entry(r) for r in after])
    second = asg.last_plan
    assert second is not None and second.engine == "follow-up" and second.withheld == 0
    assert _flat(second.assignment) == _flat(second.target) == _flat(first.target)
    asg.assign(Cluster(), [Entry(r) for r in after[:3]])  # a member left: a new step, solved again
    assert asg.last_plan is not None and asg.last_plan.engine != "follow-up"


# --------------------------------------------------------------------------- weighted past the budget


def _lag_group(members: int, topics: int, partitions: int, seed: int = 0) -> tuple[list[MemberReport], dict[str, int]]:
    """``members - 1`` members owning every partition round-robin with random lags (generation 5), one new."""
    from benchmarks.bench_live import group

    return group(members, topics, partitions, True, seed), {f"topic-{i:02d}": partitions for i in range(topics)}


def test_weighted_past_the_budget_hands_out_the_best_found_never_worse_than_cooperative_sticky() -> None:
    """Not proven within the budget: the engine's best found (a valid assignment), compared with Kafka's."""
    members, parts = _lag_group(10, 4, 32)
    res = plan_round(members, parts, rebalance="eager", budget=0.2, wall=120)
    assert res.status in ("best-found", "cooperative-sticky") and res.withheld == 0
    inst = parse_instance(build_instance_doc(members, parts))
    got = score(inst, Assignment.from_lists(res.target))
    kafka = score(inst, get("cooperative-sticky").run(inst, Params(options={"rounds": "settle"})).assignment)
    assert got["valid"] and got["unassigned"] == 0
    assert (got["weighted_max_load"], got["moved_cost"]) <= (kafka["weighted_max_load"], kafka["moved_cost"])
    assert (res.kafka_max_load, res.kafka_moved_cost) == (kafka["weighted_max_load"], kafka["moved_cost"])
    # deterministic budget: the same reports give the same assignment
    again = plan_round(list(reversed(members)), parts, rebalance="eager", budget=0.2, wall=120)
    assert (again.target, again.status) == (res.target, res.status)


def _feasible(assignment: dict[str, dict[str, list[int]]]) -> Any:
    from solver.result import Result, Status

    return Result(Assignment.from_lists(assignment), Status.FEASIBLE, extra={"engine": "exact"})


def test_a_best_found_worse_than_cooperative_sticky_gives_way_to_it(monkeypatch: pytest.MonkeyPatch) -> None:
    members = [MemberReport("m0", ("a",), {"a": (0, 1)}, 3, {"a": {0: 5.0, 1: 1.0}}),
               MemberReport("m1", ("a",), {"a": (2,)}, 3, {"a": {2: 4.0}})]
    parts = {"a": 3}
    # worse: everything on m1 (max load 10, 2 moved) against Kafka's sticky answer (nothing moves, max load 6)
    monkeypatch.setattr(live, "_solve_within", lambda i, b, w: _feasible({"m0": {}, "m1": {"a": [0, 1, 2]}}))
    res = plan_round(members, parts)
    assert (res.engine, res.status) == ("cooperative-sticky", "cooperative-sticky")
    assert res.target == {"m0": {"a": [0, 1]}, "m1": {"a": [2]}} and res.withheld == 0
    assert (res.max_load, res.moved_cost, res.kafka_max_load, res.kafka_moved_cost) == (10.0, 2.0, 6.0, 0.0)
    # better (max load 5 for 1 move): kept, and cooperatively withheld while m0 still holds a-1
    monkeypatch.setattr(live, "_solve_within", lambda i, b, w: _feasible({"m0": {"a": [0]}, "m1": {"a": [1, 2]}}))
    res = plan_round(members, parts)
    assert (res.engine, res.status, res.withheld) == ("exact", "best-found", 1)
    assert res.assignment == {"m0": {"a": [0]}, "m1": {"a": [2]}}


def test_an_engine_failure_falls_back_with_its_reason(monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(live, "_solve_within", lambda i, b, w: RuntimeError("boom"))
    with caplog.at_level(logging.WARNING, logger="spark_runner.live"):
        res = plan_round(_group(3, {"a": 6}, owned_by=2, seed=8), {"a": 6})
    assert res.status == "fallback" and "optimal solver failed (RuntimeError: boom)" in caplog.text


# --------------------------------------------------------------------------- the client adapter


class _Cluster:
    def __init__(self, parts: dict[str, int]) -> None:
        self.parts = parts

    def partitions_for_topic(self, t: str) -> set[int]:
        return set(range(self.parts[t]))


def test_aiokafka_members_mapping_is_planned_eagerly(caplog: pytest.LogCaptureFixture) -> None:
    """aiokafka rebalances eagerly only: a withheld partition would stay unowned, so nothing is withheld."""
    from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata

    from spark_runner.live.wire import KassignUserData, encode_user_data

    parts = {"a": 7, "b": 5}
    group = _group(4, parts, owned_by=3, seed=1)
    asg = live.KassignOptimalAssignor(warm=False)  # cooperative configured
    members = {r.member_id: ConsumerProtocolMemberMetadata(
        0, list(r.topics), encode_user_data(KassignUserData(-1, r.owned))) for r in group}
    with caplog.at_level(logging.WARNING, logger="spark_runner.live"):
        out = asg.assign(_Cluster(parts), members)
    assert asg.last_plan is not None and asg.last_plan.withheld == 0
    assert "rebalances eagerly only" in caplog.text
    given = {mid: ConsumerProtocolMemberAssignment.decode(a.encode()).partitions() for mid, a in out.items()}
    assert sorted(len(v) for v in given.values()) == [3, 3, 3, 3]  # every partition handed out at once
    # aiokafka's on_assignment carries no generation: the member reports -1
    asg.on_assignment(ConsumerProtocolMemberAssignment.decode(out["m0"].encode()))
    assert asg.generation == -1 and sum(map(len, asg.owned.values())) == 3


def test_kafka_python_members_list_stays_cooperative() -> None:
    parts = {"a": 7, "b": 5}

    class Entry:
        def __init__(self, r: MemberReport) -> None:
            self.member_id = r.member_id
            self.metadata = type("Md", (), {"topics": r.topics, "user_data": _ud(r)})()

    def _ud(r: MemberReport) -> bytes:
        from spark_runner.live.wire import KassignUserData, encode_user_data

        return encode_user_data(KassignUserData(r.generation, r.owned))

    asg = live.KassignOptimalAssignor(warm=False)
    asg.assign(_Cluster(parts), [Entry(r) for r in _group(4, parts, owned_by=3, seed=1)])
    assert asg.last_plan is not None and asg.last_plan.withheld == 3


_PARTITION = st.one_of(st.integers(-5, 2**40), st.floats(), st.text(max_size=2))


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(
    st.one_of(st.tuples(st.sampled_from(["a", "b"]), _PARTITION), st.text(max_size=3), st.integers(), st.none()),
    st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 2**70), st.none(), st.text(max_size=2)),
    max_size=8))
def test_any_weights_function_output_never_breaks_a_join(raw: dict[Any, Any]) -> None:
    """A weight function's odd output (huge partition numbers, NaN lags, wrong keys) is left out, never a crash.

    kafka-python encodes the join's metadata on its network thread: an exception there (a ``struct.error`` from
    a partition past int32, a ``TypeError`` from a ``None`` lag) used to end the consumer.
    """
    from spark_runner.live.wire import decode_subscription, decode_user_data

    asg = live.KassignOptimalAssignor(warm=False, weights=lambda: raw)
    asg.owned, asg.generation = {"a": (0,)}, 4
    data = decode_user_data(asg.user_data())
    assert data is not None and data.generation == 4
    for t, per in data.weights.items():
        for p, w in per.items():
            assert (t, p) in raw and float(raw[(t, p)]) == w and 0 <= p < 2**31 and w >= 0
    assert decode_subscription(asg.metadata({"a", "b"}).encode()).topics == ("a", "b")


def test_a_failing_weights_function_reports_none(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> dict[tuple[str, int], float]:
        raise RuntimeError("Cannot block on net.run() from the IO thread itself")

    asg = live.KassignOptimalAssignor(warm=False, weights=broken)
    with caplog.at_level(logging.WARNING, logger="spark_runner.live"):
        from spark_runner.live.wire import decode_user_data

        data = decode_user_data(asg.user_data())
    assert data is not None and dict(data.weights) == {}
    assert "the weights function failed (RuntimeError" in caplog.text


def test_a_nan_weight_from_another_member_does_not_break_the_leader() -> None:
    members = [MemberReport("m0", ("a",), {"a": (0,)}, 1, {"a": {0: float("nan"), 1: 4.0}}),
               MemberReport("m1", ("a",), {"a": (1,)}, 1, {"a": {1: float("inf")}})]
    doc = build_instance_doc(members, {"a": 2})
    assert doc["topics"]["a"] == {"partitions": 2, "weights": [4.0, 4.0]}  # a-0 unknown: the mean of the rest
    assert plan_round(members, {"a": 2}).status == "optimal"


@pytest.mark.parametrize("huge", [1e300, 1.7e308, 5e99])
def test_a_weight_too_large_for_the_group_is_left_out_and_the_group_rebalances(
        huge: float, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 34: one member reporting 1e300 (finite, >= 0) made the leader's assign() raise (the weights summed past
    1e100): the whole group could not rebalance."""
    members = [MemberReport("m0", ("a",), {"a": (0,)}, 1, {"a": {0: huge}}),
               MemberReport("m1", ("a",), {"a": (1,)}, 1, {"a": {1: 2.0, 2: 4.0}}),
               MemberReport("m2", ("a",))]
    doc = build_instance_doc(members, {"a": 4})
    assert doc["topics"]["a"]["weights"] == [3.0, 2.0, 4.0, 3.0]  # the huge one dropped: the mean fills in
    parse_instance(doc)  # a valid group
    with caplog.at_level(logging.WARNING, logger="spark_runner.live"):
        res = plan_round(members, {"a": 4}, rebalance="eager")
    assert "1 reported weight(s) above" in caplog.text
    assert sorted(p for a in res.assignment.values() for ps in a.values() for p in ps) == [0, 1, 2, 3]
    assert res.status == "optimal"


def test_reports_the_format_refuses_fall_back_to_an_unweighted_group(monkeypatch: pytest.MonkeyPatch,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    real = live.build_instance_doc

    def bad_weights(members: Any, partitions: Any) -> dict[str, Any]:  # weights the format refuses, however made
        doc = real(members, partitions)
        if any(m.weights for m in members):
            doc["topics"]["a"] = {"partitions": 4, "weights": [-1.0, 1.0, 1.0, 1.0]}
        return doc

    monkeypatch.setattr(live, "build_instance_doc", bad_weights)
    members = [MemberReport("m0", ("a",), {"a": (0,)}, 1, {"a": {0: 5.0}}), MemberReport("m1", ("a",))]
    with caplog.at_level(logging.WARNING, logger="spark_runner.live"):
        res = plan_round(members, {"a": 4}, rebalance="eager")
    assert "their weights are left out" in caplog.text
    assert sorted(p for a in res.assignment.values() for ps in a.values() for p in ps) == [0, 1, 2, 3]
