"""The live assignor ``kassign-optimal`` in real groups on real brokers (noida-db and Tansu), both clients.

The property, for every broker, client (kafka-python cooperative and eager, aiokafka) and for unit and weighted
groups: after a join, a leave and a restart (of the group's leader), the settled group reaches the optimum's max
load, and it moved no more than the optimum would from what the leader was told at the step's first round.
kafka-python cooperative groups are also checked round by round (no partition handed out while another member
holds it) and on a timeline (no partition held by two members at once).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from solver.consumer.optimal import DEFAULT_BALANCE_TOLERANCE
from solver.io import parse_instance
from solver.model.instance import Assignment
from solver.model.scoring import score
from solver.result import Params
from spark_runner.assignors import get
from spark_runner.live.assignor import KassignOptimalAssignor
from spark_runner.live.broker import BrokerUnavailable
from spark_runner.live.capture import capture
from tests.spark_runner.live.kafka_harness import (
    AioMember,
    Broker,
    GroupWatch,
    Member,
    empty_assignment,
    ended,
    wait_until,
)
from tests.spark_runner.live.test_kafka_capture import _create

pytestmark = pytest.mark.kafka
TP = tuple[str, int]


class Round:
    """One leader decision: who decided, who was listed, what each claimed (and at which generation), who got what."""

    def __init__(self, leader: str, members: dict[str, tuple[int, frozenset[TP]]],
                 assignment: dict[str, frozenset[TP]]) -> None:
        self.time = time.monotonic()
        self.leader = leader
        self.members = members
        self.assignment = assignment

    def holders(self, tp: TP) -> set[str]:
        """Claimants of ``tp`` at the highest generation claimed for it."""
        gens = [g for g, owned in self.members.values() if tp in owned]
        return {n for n, (g, owned) in self.members.items() if tp in owned and g == max(gens)} if gens else set()


def _name(member_id: str) -> str:
    return member_id.split("-", 1)[0]  # both clients' member ids start with the client id


class Recorder:
    """Every leader decision, and every member's assignment changes with the time they took effect."""

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

    def full_rounds(self, since: float, names: set[str]) -> list[Round]:
        """The decisions after ``since`` that listed exactly ``names``, oldest first."""
        with self.lock:
            return [r for r in self.rounds if r.time > since and set(r.members) == names]

    def last_leader(self, among: set[str]) -> str:
        """The member (of ``among``) that decided the latest round."""
        with self.lock:
            return next(r.leader for r in reversed(self.rounds) if r.leader in among)

    def decided(self, state: dict[str, set[TP]]) -> bool:
        """``state`` is what the latest round handed out, to exactly its members.

        Tansu can leave a formed group Stable with members still holding their previous assignment after
        the leader's SyncGroup (the leader's new assignment not passed on): a group is settled only once
        its members hold what the leader last decided.
        """
        with self.lock:
            if not self.rounds:
                return False
            last = self.rounds[-1]
        return set(last.assignment) == set(state) and all(last.assignment[n] == state[n] for n in state)

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

            pairs = (list(members.items()) if isinstance(members, Mapping)
                     else [(m.member_id, m.metadata) for m in members])
            seen = {}
            for mid, md in pairs:
                data = decode_user_data(bytes(md.user_data))
                assert data is not None
                seen[_name(mid)] = (data.generation, frozenset((t, p) for t, ps in data.owned.items() for p in ps))
            given = {_name(mid): frozenset(tp for tp in _partitions(a)) for mid, a in out.items()}
            recorder.add_round(Round(name, seen, given))
            return out

        def on_assignment(self, assignment: Any, generation: int = -1) -> None:
            super().on_assignment(assignment, generation)
            recorder.add(name, generation, frozenset((t, p) for t, ps in self.owned.items() for p in ps))

    return Recording(**kw)


def _partitions(a: Any) -> list[TP]:
    return [(t, p) for t, ps in a.assigned_partitions for p in ps]


@pytest.fixture
def members() -> Iterator[dict[str, Any]]:
    running: dict[str, Any] = {}
    yield running
    for m in running.values():
        if m.is_alive():
            m.stop()


def _settled(broker: Broker, group: str, members: dict[str, Any], all_tps: set[TP],
             seconds: float = 120, recorder: Recorder | None = None) -> dict[str, set[TP]]:
    """Wait until the group is Stable and every partition is held exactly once; return who holds what."""
    watch = GroupWatch(broker.bootstrap)
    state: dict[str, set[TP]] = {}

    def ready() -> bool:
        nonlocal state
        for name, error in ended(members.values()):
            if error is not None and empty_assignment(error):
                raise BrokerStall(f"{name}: the broker sent it an assignment of zero bytes "
                                  f"({type(error).__name__}: {error})")
            raise RuntimeError(f"member {name} ended: {error!r}") from error
        g_state, n = watch.state(group)
        if g_state != "Stable" or n != len(members):
            return False
        state = {n: m.assigned() for n, m in members.items()}  # read, not call: a joining member blocks in poll
        flat = [tp for s in state.values() for tp in s]
        return (len(flat) == len(set(flat)) and set(flat) == all_tps
                and (recorder is None or recorder.decided(state)))

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
        watch.close()
    return state


def _instance(told: Round, subs: dict[str, list[str]], sizes: dict[str, int],
              lags: dict[TP, float] | None) -> Any:
    """The group as the leader saw it at ``told`` (claims and generations), with the true lags."""
    topics: dict[str, Any] = {t: ({"partitions": n, "weights": [lags[(t, p)] for p in range(n)]} if lags else n)
                              for t, n in sizes.items()}
    return parse_instance({"format": "kassign/v1", "topics": topics, "members": [
        {"id": n, "topics": sorted(subs[n]), "generation": gen,
         "owned": {t: sorted(p for tt, p in owned if tt == t and t in subs[n]) for t in sorted({t for t, _ in owned})}}
        for n, (gen, owned) in sorted(told.members.items())]})


def _check_step(told: Round, after: dict[str, set[TP]], subs: dict[str, list[str]], sizes: dict[str, int],
                lags: dict[TP, float] | None) -> dict[str, Any]:
    """``after`` reaches the optimum's max load (unit: its load vector) and moved no more than the optimum."""
    inst = _instance(told, subs, sizes, lags)
    got = score(inst, Assignment.from_lists({n: {t: [p for tt, p in s if tt == t] for t in sizes}
                                             for n, s in after.items()}))
    best = score(inst, get("optimal").run(inst, Params(seed=0, time_limit=60)).assignment)
    assert got["valid"] and got["unassigned"] == 0
    if lags is None:
        assert got["weighted_max_load"] == best["weighted_max_load"], (got, best)
        assert got["sum_sq_load"] == best["sum_sq_load"]
    else:
        # weighted: the live assignor deploys the fewest moves within the default tolerance of the best max load
        eps = DEFAULT_BALANCE_TOLERANCE
        assert got["weighted_max_load"] <= best["weighted_max_load"] * (1 + eps) + 1e-9, (got, best)
        best = score(inst, get("optimal").run(inst, Params(seed=0, time_limit=60, balance_tolerance=eps)).assignment)
    assert got["moved_cost"] <= best["moved_cost"] + 1e-9, (got["moved_cost"], best["moved_cost"])
    return got


#: Attempts of a scenario on fresh groups before a broker that stalls every one fails the test.
ATTEMPTS = 5


class BrokerStall(Exception):
    """The group did not settle in time: noida-db held a JoinGroup until the rebalance timed out or sent a member
    an assignment of zero bytes, or Tansu did not pass the leader's SyncGroup assignment on (docs/capture.md)."""


# (client, rebalance): kafka-python runs both protocols; aiokafka rebalances eagerly only (the assignor plans
# eagerly for it whatever it is configured with: here its default, cooperative)
CLIENTS = [("kafka-python", "cooperative"), ("kafka-python", "eager"), ("aiokafka", "cooperative")]


def _scenario(broker: Broker, unique: str, members: dict[str, Any], client: str, rebalance: str,
              weighted: bool) -> dict[str, int]:
    """3 members, then a join, a leave and a restart of the leader; every settled state checked."""
    a, b = f"{unique}-a", f"{unique}-b"
    sizes = {a: 7, b: 5}
    _create(broker, sizes)
    all_tps = {(t, p) for t, n in sizes.items() for p in range(n)}
    lags = {(t, p): float(1 + (7 * p + len(t) * 3) % 5) * 1000 for t, n in sizes.items() for p in range(n)} \
        if weighted else None
    group = f"{unique}-g"
    recorder = Recorder()
    subs: dict[str, list[str]] = {}
    # noida-db: room for two lost JoinGroups given up (12 s each, the harness) and a round; Tansu answers a
    # rebalance round in about 3 s
    settle_s = 60 if broker.name == "noida-db" else 120

    def join(name: str, topics: list[str]) -> None:
        subs[name] = topics
        # every member knows every partition's lag (e.g. from the group's committed offsets)
        weights = (lambda: dict(lags)) if lags else None
        strategy = [_recording(recorder, name, rebalance=rebalance, budget=5.0, weights=weights)]
        if client == "aiokafka":
            members[name] = AioMember(broker.bootstrap, group, topics, name=name, strategy=strategy)
        else:
            # noida-db can lose a JoinGroup sent while other members' SyncGroup of the same generation is in
            # flight (it answers it only when the rebalance times out, and may leave that member out of the
            # leader's list).  A cooperative member that revoked rejoins at once; a short pause on revocation
            # (where an application commits and flushes) keeps the group off that path most of the time, and
            # a short rebalance timeout bounds the stall when it happens anyway.
            members[name] = Member(broker.bootstrap, group, topics, name=name, strategy=strategy,
                                   max_poll_interval_ms=7000, revoke_pause=0.3)
        members[name].start()

    def leave(name: str) -> None:
        recorder.add(name, -1, frozenset())  # it holds nothing from here on (LeaveGroup follows)
        members.pop(name).stop()

    def settle() -> dict[str, set[TP]]:
        try:
            return _settled(broker, group, members, all_tps, seconds=settle_s, recorder=recorder)
        except AssertionError as e:
            with recorder.lock:
                rounds = [f"{r.leader}: " + ", ".join(f"{n}<-{len(a)}" for n, a in sorted(r.assignment.items()))
                          for r in recorder.rounds[-4:]]
            held = {n: len(m.assigned()) for n, m in members.items()}
            raise BrokerStall(f"{e}; last rounds {rounds}; held {held}") from None

    for i in range(3):
        join(f"m{i}", [a, b])
    state = settle()
    if not weighted:
        assert sorted(map(len, state.values())) == [4, 4, 4]
    checked = {}
    for what in ("join", "leave", "restart"):
        start = time.monotonic()
        if what == "join":
            join("m3", [a, b])
        elif what == "leave":
            leave("m0")
        else:
            name = recorder.last_leader(set(members))
            leave(name)
            join(name, subs[name])
        state = settle()
        rounds = recorder.full_rounds(start, set(state))
        assert rounds, f"{what}: no leader round listed {sorted(state)}"
        # Checked from the first round that listed every member.  On a loaded machine the broker may run another
        # round in the same step (a member rejoining late): the state then comes from that round's reports, and
        # the property is checked from them.
        failed: list[AssertionError] = []
        for told in rounds:
            try:
                _check_step(told, state, subs, sizes, lags)
                break
            except AssertionError as e:
                failed.append(e)
        else:
            raise failed[0]
        checked[what] = 1
    if client == "kafka-python" and rebalance == "cooperative":  # eager members revoked everything before joining
        recorder.assert_rounds_never_give_a_held_partition()
        excused = recorder.assert_never_two_owners()
        if excused:
            print(f"{excused} overlap(s) from members the broker left out of the leader's list")
    _capture_check(broker, group)
    return checked


def _capture_check(broker: Broker, group: str) -> None:
    """A capture of the group now: the protocol and every member's generation as its subscription reports it."""
    if broker.name == "tansu":
        # Tansu 0.6 keeps no member metadata: DescribeGroups answers with empty subscriptions and no protocol.
        with pytest.raises(BrokerUnavailable, match="returned no member metadata") as e:
            capture(broker.bootstrap, group, timeout=20)
        assert e.value.exit_code == 69 and "what still works on this broker: the live assignor" in str(e.value)
        return
    doc = capture(broker.bootstrap, group, timeout=20)
    assert doc["source"]["assignor"] == "kassign-optimal" and doc["source"]["kassign_assignor"] == "optimal"
    assert len(doc["members"]) == 3


@pytest.mark.parametrize("weighted", [False, True], ids=["unit", "weighted"])
@pytest.mark.parametrize(("client", "rebalance"), CLIENTS, ids=["kafka-python-coop", "kafka-python-eager", "aiokafka"])
def test_settles_on_the_optimum_through_a_join_a_leave_and_a_restart(
        live_broker: Broker, unique: str, members: dict[str, Any], client: str, rebalance: str,
        weighted: bool) -> None:
    """Every settled state has the optimum's max load and no more moves than the optimum from what was told.

    An attempt in which the broker stalls the group (noida-db's lost-JoinGroup bug, or the zero-byte
    assignment that ends a consumer at once; never an invariant violation) is run again on a fresh group, up
    to :data:`ATTEMPTS` times.
    """
    if weighted and rebalance == "eager":
        pytest.skip("weighted groups: kafka-python cooperative and aiokafka (eager) cover both protocols")
    stalls = []
    for attempt in range(ATTEMPTS):
        try:
            _scenario(live_broker, f"{unique}-{attempt}", members, client, rebalance, weighted)
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
