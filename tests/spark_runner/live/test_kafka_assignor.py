"""The live assignor ``kassign-optimal`` in a real group on a real broker (noida-db), through joins and leaves."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from solver.io import parse_instance
from solver.model.instance import Assignment
from solver.model.scoring import score
from solver.result import Params
from spark_runner.assignors import get
from spark_runner.live.assignor import KassignOptimalAssignor
from spark_runner.live.capture import capture
from tests.spark_runner.live.kafka_harness import Broker, Member, wait_until
from tests.spark_runner.live.test_kafka_capture import _admin, _create

pytestmark = pytest.mark.kafka
TP = tuple[str, int]


class Round:
    """One leader decision: who was in the member list, what each claimed (and at which generation), who got what."""

    def __init__(self, members: dict[str, tuple[int, frozenset[TP]]], assignment: dict[str, frozenset[TP]]) -> None:
        self.time = time.monotonic()
        self.members = members
        self.assignment = assignment

    def holders(self, tp: TP) -> set[str]:
        """Claimants of ``tp`` at the highest generation claimed for it."""
        gens = [g for g, owned in self.members.values() if tp in owned]
        return {n for n, (g, owned) in self.members.items() if tp in owned and g == max(gens)} if gens else set()


def _name(member_id: str) -> str:
    return member_id.split("-", 1)[0]  # kafka-python member ids start with the client id


class Recorder:
    """Every member's assignment changes, with the time they took effect."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[float, str, int, frozenset[TP]]] = []
        self.rounds: list[Round] = []

    def add_round(self, r: Round) -> None:
        with self.lock:
            self.rounds.append(r)

    def add(self, name: str, generation: int, held: frozenset[TP]) -> None:
        with self.lock:
            self.events.append((time.monotonic(), name, generation, held))

    def assert_rounds_never_give_a_held_partition(self) -> None:
        """In every round the leader saw, no partition went to a member while another member held it."""
        with self.lock:
            rounds = list(self.rounds)
        assert rounds
        for r in rounds:
            for b, tps in r.assignment.items():
                for tp in tps:
                    assert r.holders(tp) <= {b}, f"{tp} given to {b} while {r.holders(tp)} held it"

    def giving_round(self, member: str, tp: TP, before: float) -> Round | None:
        """The last leader round before ``before`` that gave ``tp`` to ``member``."""
        with self.lock:
            rounds = [r for r in self.rounds if r.time <= before and tp in r.assignment.get(member, ())]
        return rounds[-1] if rounds else None

    def assert_never_two_owners(self) -> int:
        """No partition held by two members at any moment (a member holds a set until its next change).

        An overlap is the broker's doing, not the assignor's, when the round that gave the partition away
        did not list the member that still held it (noida-db can answer a JoinGroup one generation late
        and leave that member out of the leader's list); those are counted and returned.
        """
        with self.lock:
            events = sorted(self.events)
        spans: list[tuple[float, float, str, frozenset[TP]]] = []
        last: dict[str, tuple[float, frozenset[TP]]] = {}
        for t, name, _gen, held in events:
            if name in last:
                t0, prev = last[name]
                spans.append((t0, t, name, prev))
            last[name] = (t, held)
        for name, (t0, held) in last.items():
            spans.append((t0, float("inf"), name, held))
        excused = 0
        for i, (a0, a1, an, aset) in enumerate(spans):
            for b0, b1, bn, bset in spans[i + 1:]:
                if an == bn or not (a0 < b1 and b0 < a1):
                    continue
                for tp in aset & bset:
                    # The later of the two gained it; the round that gave it must not have listed the other.
                    (gainer, start), other = ((bn, b0), an) if b0 >= a0 else ((an, a0), bn)
                    r = self.giving_round(gainer, tp, start + 1e-6)
                    if r is not None and other not in r.members:
                        excused += 1
                        continue
                    raise AssertionError(f"{tp} held by {an} and {bn} at once: "
                                         + "; ".join(f"{t:.3f} {n} g{g} {sorted(h)}" for t, n, g, h in events))
        return excused


def _recording(recorder: Recorder, name: str, **kw: Any) -> KassignOptimalAssignor:
    class Recording(KassignOptimalAssignor):
        def assign(self, cluster: Any, members: Any) -> dict[str, Any]:
            out = super().assign(cluster, members)
            from spark_runner.live.wire import decode_user_data

            seen = {}
            for m in members:
                data = decode_user_data(bytes(m.metadata.user_data))
                assert data is not None
                seen[_name(m.member_id)] = (data.generation, frozenset((t, p) for t, ps in data.owned.items()
                                                                        for p in ps))
            given = {_name(mid): frozenset((t, p) for t, ps in a.assigned_partitions for p in ps)
                     for mid, a in out.items()}
            recorder.add_round(Round(seen, given))
            return out

        def on_assignment(self, assignment: Any, generation: int = -1) -> None:
            super().on_assignment(assignment, generation)
            recorder.add(name, generation, frozenset((t, p) for t, ps in self.owned.items() for p in ps))

    return Recording(**kw)


@pytest.fixture
def members() -> Iterator[dict[str, Member]]:
    running: dict[str, Member] = {}
    yield running
    for m in running.values():
        if m.is_alive():
            m.stop()


def _settled(broker: Broker, group: str, members: dict[str, Member], all_tps: set[TP],
             seconds: float = 120) -> dict[str, set[TP]]:
    """Wait until the group is Stable and every partition is held exactly once; return who holds what."""
    adm = _admin(broker)
    state: dict[str, set[TP]] = {}

    def ready() -> bool:
        nonlocal state
        g = adm.describe_groups([group])[group]
        if g["group_state"] != "Stable" or len(g["members"]) != len(members):
            return False
        state = {n: m.assigned() for n, m in members.items()}  # read, not call: a joining member blocks in poll
        flat = [tp for s in state.values() for tp in s]
        return len(flat) == len(set(flat)) and set(flat) == all_tps

    last: dict[str, set[TP]] = {}

    def settled() -> bool:  # the same complete state twice, a second apart: nothing is still moving
        nonlocal last
        if not ready():
            return False
        prev, last = last, state
        if prev != state:
            time.sleep(1.0)
            return False
        return True

    try:
        wait_until(settled, seconds, f"group {group} settled with {len(members)} members", step=0.2)
    finally:
        adm.close()
    return state


def _check_optimal_step(before: dict[str, set[TP]], after: dict[str, set[TP]], subs: dict[str, list[str]],
                        sizes: dict[str, int], moves: bool = True) -> dict[str, Any]:
    """``after`` is most balanced and moved the fewest partitions possible from ``before`` (the optimum's)."""
    doc = {"format": "kassign/v1", "topics": sizes,
           "members": [{"id": n, "topics": sorted(subs[n]), "generation": 1,
                        "owned": {t: sorted(p for tt, p in before.get(n, set()) if tt == t)
                                  for t in sorted({t for t, _ in before.get(n, set())})}} for n in sorted(after)]}
    inst = parse_instance(doc)
    got = score(inst, Assignment.from_lists({n: {t: [p for tt, p in s if tt == t] for t in sizes}
                                             for n, s in after.items()}))
    best = score(inst, get("optimal").run(inst, Params(seed=0)).assignment)
    assert got["valid"] and got["unassigned"] == 0
    assert (got["max_load"], got["sum_sq_load"]) == (best["max_load"], best["sum_sq_load"])
    if moves:
        assert got["moved"] == best["moved"]
    return got


class BrokerStall(Exception):
    """The group did not settle in time: noida-db held a JoinGroup until the rebalance timed out (see below)."""


def _scenario(broker: Broker, unique: str, members: dict[str, Member], rebalance: str) -> None:
    """3 members, then a join, a leave and a join; every settled state checked against the optimum."""
    a, b = f"{unique}-a", f"{unique}-b"
    sizes = {a: 7, b: 5}
    _create(broker, sizes)
    all_tps = {(t, p) for t, n in sizes.items() for p in range(n)}
    group = f"{unique}-g"
    recorder = Recorder()
    subs: dict[str, list[str]] = {}

    def join(name: str, topics: list[str]) -> None:
        subs[name] = topics
        strategy = [_recording(recorder, name, rebalance=rebalance, budget=5.0)]
        # noida-db can lose a JoinGroup sent while other members' SyncGroup of the same generation is in flight
        # (it answers it only when the rebalance times out, and may leave that member out of the leader's
        # list).  A cooperative member that revoked rejoins at once; a short pause on revocation (where an
        # application commits and flushes) keeps the group off that path most of the time, and a short
        # rebalance timeout bounds the stall when it happens anyway.
        members[name] = Member(broker.bootstrap, group, topics, name=name, strategy=strategy,
                               max_poll_interval_ms=7000, revoke_pause=0.3)
        members[name].start()

    def leave(name: str) -> None:
        recorder.add(name, -1, frozenset())  # it holds nothing from here on (LeaveGroup follows)
        members.pop(name).stop()

    def settle() -> dict[str, set[TP]]:
        try:
            return _settled(broker, group, members, all_tps, seconds=45)
        except AssertionError as e:
            raise BrokerStall(str(e)) from None

    for i in range(3):
        join(f"m{i}", [a, b])
    state = settle()
    assert sorted(map(len, state.values())) == [4, 4, 4]
    steps = [("join", "m3", [a, b]), ("leave", "m0", []), ("join", "m4", [a])]
    clean = 0
    for what, name, topics in steps:
        before = state
        start = time.monotonic()
        join(name, topics) if what == "join" else leave(name)
        state = settle()
        # The moves are measured from what the leader was told in the step's first round; when that is not
        # the state before the step (the broker dropped a member from a round), only balance is checked.
        with recorder.lock:
            first = next(r for r in recorder.rounds if r.time > start)
        told = {n: set(owned) for n, (_g, owned) in first.members.items()}
        if set(told) == set(state) and all(told[n] == before.get(n, set()) for n in told):
            clean += 1
            metrics = _check_optimal_step(before, state, subs, sizes)
        else:
            metrics = _check_optimal_step({}, state, subs, sizes, moves=False)
        assert metrics["spread"] <= 1, (what, name, state)
    assert clean >= 2, f"only {clean} of {len(steps)} steps ran without a broker anomaly"
    if rebalance == "cooperative":  # eager members revoked everything before joining
        recorder.assert_rounds_never_give_a_held_partition()
        excused = recorder.assert_never_two_owners()
        if excused:
            print(f"{excused} overlap(s) from members the broker left out of the leader's list")
    # A capture of the group now: the protocol, every member's generation as its subscription reports it.
    doc = capture(broker.bootstrap, group, timeout=20)
    assert doc["source"]["assignor"] == "kassign-optimal" and doc["source"]["kassign_assignor"] == "optimal"
    # A member reports the generation of what it owned when it last joined: the newest member joined owning
    # nothing (-1); the others owned partitions of a generation past the first.
    gens = {doc["source"]["clients"][m["id"]]["client_id"]: m["generation"] for m in doc["members"]}
    assert gens.pop("m4") in (-1, *range(2, 100)) and all(g > 1 for g in gens.values()), gens


@pytest.mark.parametrize("rebalance", ["cooperative", "eager"])
def test_optimal_through_joins_and_leaves(kafka_broker: Broker, unique: str, members: dict[str, Member],
                                          rebalance: str) -> None:
    """Every settled state is most balanced with the fewest moves; no round hands out a held partition.

    An attempt in which noida-db stalls the group (its lost-JoinGroup bug, never an invariant violation) is
    run again on a fresh group, up to three times.
    """
    stalls = []
    for attempt in range(3):
        try:
            _scenario(kafka_broker, f"{unique}-{attempt}", members, rebalance)
            break
        except BrokerStall as e:
            stalls.append(str(e))
            for m in list(members.values()):
                m.stop()
            members.clear()
    else:
        pytest.fail(f"the broker stalled the group in every attempt: {stalls}")
    if stalls:
        print(f"{len(stalls)} attempt(s) stalled by the broker: {stalls}")
