"""``KassignOptimalAssignor``: kassign's optimum as a live partition assignor for Python clients.

Members report what they own, its generation and (optionally) per-partition
weights in their subscription's user data (:mod:`spark_runner.live.wire`); the
group leader builds a ``kassign/v1`` instance from those reports and the
cluster's partition counts, and hands out kassign's optimum: most balanced
loads, then the fewest moves (weighted when members report weights).

* **Budget** (default 1 s): the engine's stage budgets are CP-SAT
  *deterministic* seconds (option ``deterministic``), so the same reports give
  the same assignment whatever the leader's load.  A weighted group whose
  optimum is not proven within it gets the engine's best found assignment
  (status ``feasible``): it is a valid assignment.  That answer is compared
  with Kafka's ``cooperative-sticky`` (settled) on (max load, moved cost), and
  the better one, lexicographically, is handed out: the live assignor is never
  worse than cooperative-sticky on the bottleneck, nor on moves at an equal
  bottleneck.  Past ``wall`` seconds of wall clock (default ten budgets plus 5 s) the
  leader stops waiting and hands out cooperative-sticky's assignment, with a
  warning on the ``spark_runner.live`` logger.
* **Cooperative** (default; KIP-429, kafka-python 3): a partition whose owner
  changes is left out of this round's assignment while another member still
  claims it; that member revokes it and rejoins, and the next round hands it
  to its new owner.  No partition is ever owned by two members.  **Eager**:
  the target is handed out at once (every member revoked everything before
  joining).  Clients that rebalance eagerly only (aiokafka, kafka-python 2,
  recognised by the ``{member_id: metadata}`` mapping they pass to ``assign``)
  are always planned eagerly: a withheld partition would stay unowned, since
  such a client never rejoins to collect it.
* **Deterministic**: the instance is built in sorted order and solved with a
  fixed seed and deterministic budgets (only the ``wall`` cut-off depends on
  the clock).

The planning is a pure function, :func:`plan_round`; the class adapts it to
kafka-python (3.x ``assign(cluster, members)`` with a list of members) and
aiokafka (``{member_id: metadata}``; aiokafka calls ``on_assignment(assignment)``
without a generation, so aiokafka members report generation -1).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from spark_runner.live.wire import KassignUserData, WireDecodeError, decode_user_data, encode_user_data

log = logging.getLogger("spark_runner.live")

#: The group protocol name members announce.
PROTOCOL_NAME = "kassign-optimal"
DEFAULT_BUDGET = 1.0
#: Wall-clock seconds the leader waits before it hands out cooperative-sticky: ``WALL_FACTOR * budget + WALL_SLACK``
#: (deterministic seconds exclude model building, and a loaded leader runs them slower than real ones).
WALL_FACTOR = 10.0
WALL_SLACK = 5.0
#: Largest partition number and generation the consumer protocol carries (int32).
INT32_MAX = 2**31 - 1
Rebalance = Literal["cooperative", "eager"]
Plan = dict[str, dict[str, list[int]]]


@dataclass(frozen=True)
class MemberReport:
    """What one member told the leader."""

    member_id: str
    topics: tuple[str, ...]
    owned: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    generation: int = -1
    weights: Mapping[str, Mapping[int, float]] = field(default_factory=dict)
    instance_id: str | None = None
    rack: str | None = None


@dataclass(frozen=True)
class PlanResult:
    """The leader's decision: this round's assignment, the target, and how it was found.

    Attributes
    ----------
    assignment
        This round's assignment (the target less what is withheld).
    target
        Where the step ends once every withheld partition is handed out.
    engine
        ``flow`` / ``exact`` (the optimum's engine), ``cooperative-sticky``, or ``follow-up``.
    status
        ``optimal`` (proven), ``best-found`` (the engine's unproven best, no worse than
        cooperative-sticky), ``cooperative-sticky`` (Kafka's was better than the best found), or
        ``fallback`` (no answer from the engine within ``wall``, or it failed).
    withheld
        Partitions left out of this round (cooperative).
    seconds
        Wall time of the decision.
    max_load, moved_cost
        The target's bottleneck (``weighted_max_load``) and moved cost, when they were compared
        with cooperative-sticky's (``kafka_max_load``, ``kafka_moved_cost``); ``None`` otherwise.
    """

    assignment: Plan
    target: Plan
    engine: str
    status: str
    withheld: int
    seconds: float
    max_load: float | None = None
    moved_cost: float | None = None
    kafka_max_load: float | None = None
    kafka_moved_cost: float | None = None


def build_instance_doc(members: Sequence[MemberReport], partitions: Mapping[str, int]) -> dict[str, Any]:
    """The ``kassign/v1`` consumer instance of a join round (members and topics in sorted order).

    A partition no member reported a weight for weighs the mean of the
    reported weights (a new partition's lag is unknown); with no reports at
    all every partition weighs 1 (the flow engine's unit case).
    """
    subscribed = sorted({t for m in members for t in m.topics})
    # a weight that is not a finite number >= 0 (a lag computed from a missing offset) is not reported, nor one
    # so large that the group's weights could sum past the instance format's limit (MAX_TOTAL, 1e100): each is
    # at most MAX_TOTAL / (partitions + 1), so no sum (the mean filling in unreported partitions too) passes it
    from solver.model.schema import MAX_TOTAL

    total_parts = sum(max(0, int(partitions.get(t, 0))) for t in subscribed)
    cap = MAX_TOTAL / (total_parts + 1)
    usable = [(m, t, int(p), float(w)) for m in sorted(members, key=lambda m: m.member_id)
              for t, per in m.weights.items() for p, w in per.items() if math.isfinite(w) and 0 <= w <= cap]
    dropped = sum(1 for m in members for per in m.weights.values() for w in per.values()
                  if math.isfinite(w) and w > cap)
    if dropped:
        log.warning("kassign-optimal: %d reported weight(s) above %.3g left out (the group's weights must sum to at "
                    "most %.3g)", dropped, cap, MAX_TOTAL)
    reported = [w for *_, w in usable]
    mean = math.fsum(reported) / len(reported) if reported else 1.0
    weights: dict[tuple[str, int], float] = {}
    for _m, t, p, w in usable:
        weights.setdefault((t, p), w)
    topics: dict[str, Any] = {}
    for t in subscribed:
        n = int(partitions.get(t, 0))
        if reported:
            topics[t] = {"partitions": n, "weights": [weights.get((t, p), mean) for p in range(n)]}
        else:
            topics[t] = n
    out_members = []
    for m in sorted(members, key=lambda m: m.member_id):
        owned = {t: sorted({p for p in ps if 0 <= p < int(partitions.get(t, 0))})
                 for t, ps in sorted(m.owned.items()) if t in m.topics}
        entry: dict[str, Any] = {"id": m.member_id, "topics": sorted(set(m.topics)),
                                 "owned": {t: ps for t, ps in owned.items() if ps}, "generation": m.generation}
        if m.instance_id:
            entry["instance_id"] = m.instance_id
        if m.rack:
            entry["rack"] = m.rack
        out_members.append(entry)
    return {"format": "kassign/v1", "name": PROTOCOL_NAME, "topics": topics, "members": out_members}


def _solve_within(instance: Any, budget: float, wall: float) -> Any:
    """The optimal engine's result within ``budget`` deterministic seconds, ``None`` past ``wall`` wall seconds.

    An exception the engine raised is returned, not raised (the caller falls back).
    """
    from solver.consumer.optimal import DEFAULT_BALANCE_TOLERANCE
    from solver.result import Params
    from spark_runner.assignors import get

    box: list[Any] = []

    def work() -> None:
        try:
            # weighted: the bottleneck, then the fewest moves (the live promise) within the default balance
            # tolerance of the best max load found; evenness among the other members is not worth a slower
            # proof in a join round
            objective = ("max_load", "moves") if instance.has_weights else None
            eps = DEFAULT_BALANCE_TOLERANCE if instance.has_weights else None
            box.append(get("optimal").run(instance, Params(time_limit=budget, seed=0, objective=objective,
                                                           balance_tolerance=eps, options={"deterministic": True})))
        except Exception as e:  # reported by the caller, which falls back
            box.append(e)

    worker = threading.Thread(target=work, name="kassign-optimal", daemon=True)
    worker.start()
    worker.join(wall)
    if not box:
        return None
    return box[0]


def default_wall(budget: float) -> float:
    """Wall-clock seconds the leader waits for a ``budget`` of deterministic seconds.

    Examples
    --------
    >>> default_wall(1.0)
    15.0
    """
    return WALL_FACTOR * budget + WALL_SLACK


def _kafka_target(instance: Any) -> Any:
    """Kafka's cooperative-sticky on ``instance``, settled (the assignment its follow-up rounds end in)."""
    from solver.result import Params
    from spark_runner.assignors import get

    return get("cooperative-sticky").run(instance, Params(options={"rounds": "settle"})).assignment


def _cost(instance: Any, assignment: Any) -> tuple[float, float]:
    """(max load, moved cost) of ``assignment``: what the live assignor compares, in that order."""
    from solver.model.scoring import score

    m = score(instance, assignment)
    return float(m["weighted_max_load"]), float(m["moved_cost"])


def withhold(target: Plan, members: Sequence[MemberReport]) -> tuple[Plan, int]:
    """Cooperative round: drop each partition that some *other* member still holds.

    A partition's holders are its claimants at the highest generation claimed
    for it (Kafka's rule for the previous owner): an older claim is stale, from
    a member that lost its membership and with it the partition.
    """
    best: dict[tuple[str, int], int] = {}
    for m in members:
        for topic, owned in m.owned.items():
            for part in owned:
                best[(topic, part)] = max(best.get((topic, part), m.generation), m.generation)
    claims: dict[tuple[str, int], set[str]] = {}
    for m in members:
        for topic, owned in m.owned.items():
            for part in owned:
                if m.generation == best[(topic, part)]:
                    claims.setdefault((topic, part), set()).add(m.member_id)
    out: Plan = {}
    dropped = 0
    for mid, topics in target.items():
        per: dict[str, list[int]] = {}
        for t, ps in topics.items():
            keep = [p for p in ps if not (claims.get((t, p), set()) - {mid})]
            dropped += len(ps) - len(keep)
            if keep:
                per[t] = keep
        out[mid] = per
    return out, dropped


def plan_round(members: Sequence[MemberReport], partitions: Mapping[str, int], *,
               rebalance: Rebalance = "cooperative",
               budget: float = DEFAULT_BUDGET, wall: float | None = None) -> PlanResult:
    """Decide one join round.

    Parameters
    ----------
    members
        Every member's report.
    partitions
        Topic -> partition count (from the leader's metadata).
    rebalance
        ``cooperative`` withholds partitions another member still claims; ``eager`` hands out the target.
    budget
        Deterministic seconds the optimal engine may use (its stage budgets).
    wall
        Wall-clock seconds the leader waits for the engine before it hands out Kafka's
        cooperative-sticky assignment (default :func:`default_wall`).

    Returns
    -------
    PlanResult
        ``assignment`` has every member (also with ``{}``), topics and partitions sorted.

    Notes
    -----
    A proven optimum is handed out as it is.  An unproven best found (weighted groups past the budget)
    is compared with cooperative-sticky's settled assignment on (max load, moved cost), lexicographically,
    and the better one is handed out (ties: kassign's).
    """
    from solver.errors import KassignError
    from solver.io import parse_instance

    t0 = time.perf_counter()
    try:
        inst = parse_instance(build_instance_doc(members, partitions), PROTOCOL_NAME)
    except KassignError as e:  # reports the instance format refuses: the group still rebalances, unweighted
        log.warning("kassign-optimal: the members' reports are not a valid group (%s); their weights are left out",
                    e)
        inst = parse_instance(build_instance_doc([replace(m, weights={}) for m in members], partitions),
                              PROTOCOL_NAME)
    limit = wall if wall is not None else default_wall(budget)
    res = _solve_within(inst, budget, limit)
    ids = sorted(m.member_id for m in members)
    costs: dict[str, float | None] = {}
    if isinstance(res, Exception) or res is None or res.status.value not in ("optimal", "feasible"):
        why = (f"no answer from the optimal engine within {limit:g} s"
               if res is None else f"the optimal solver failed ({type(res).__name__}: {res})"
               if isinstance(res, Exception) else f"the optimal solver returned {res.status.value}")
        log.warning("kassign-optimal: %s; using Kafka's cooperative-sticky assignment this round", why)
        target = _lists(_kafka_target(inst).to_lists(), ids)
        engine, status = "cooperative-sticky", "fallback"
    elif res.status.value == "optimal":
        target = _lists(res.assignment.to_lists(), ids)
        engine, status = str(res.extra.get("engine", "optimal")), "optimal"
    else:  # the engine's best found: valid; kept unless cooperative-sticky is better
        kafka = _kafka_target(inst)
        ours, theirs = _cost(inst, res.assignment), _cost(inst, kafka)
        costs = {"max_load": ours[0], "moved_cost": ours[1], "kafka_max_load": theirs[0],
                 "kafka_moved_cost": theirs[1]}
        if theirs < ours:
            log.info("kassign-optimal: the optimum is not proven within the budget and Kafka's cooperative-sticky "
                     "is better than the best found (max load, moved cost: %s against %s); using cooperative-sticky",
                     theirs, ours)
            target = _lists(kafka.to_lists(), ids)
            engine, status = "cooperative-sticky", "cooperative-sticky"
        else:
            target = _lists(res.assignment.to_lists(), ids)
            engine, status = str(res.extra.get("engine", "optimal")), "best-found"
    if rebalance == "cooperative":
        assignment, dropped = withhold(target, members)
    else:
        assignment, dropped = target, 0
    return PlanResult(assignment, target, engine, status, dropped, time.perf_counter() - t0, **costs)


def warm_up() -> None:
    """Load the solver engines once (both the flow and CP-SAT), so the first rebalance is not charged for imports.

    The first optimum in a fresh process spends most of a second importing
    OR-Tools; a leader paying that inside its budget would fall back for no reason.
    """
    unit = [MemberReport("a", ("t",)), MemberReport("b", ("t",))]
    weighted = [MemberReport("a", ("t",), weights={"t": {0: 2.0}}), MemberReport("b", ("t",))]
    for members in (unit, weighted):
        plan_round(members, {"t": 2}, rebalance="eager", budget=60.0)
    _kafka_target(_warm_instance())


def _warm_instance() -> Any:
    from solver.io import parse_instance

    return parse_instance(build_instance_doc([MemberReport("a", ("t",))], {"t": 1}), PROTOCOL_NAME)


def _lists(data: Mapping[str, Mapping[str, Sequence[int]]], ids: Sequence[str]) -> Plan:
    return {m: {t: sorted(int(p) for p in ps) for t, ps in sorted(data.get(m, {}).items()) if len(ps)} for m in ids}


# --------------------------------------------------------------------------- the kafka-python adapter


def _partition_count(cluster: Any, topic: str) -> int:
    parts = cluster.partitions_for_topic(topic)
    return len(parts) if parts else 0


def _report(member_id: str, metadata: Any, instance_id: str | None) -> MemberReport:
    topics = tuple(getattr(metadata, "topics", None) or getattr(metadata, "subscription", None) or ())
    raw = getattr(metadata, "user_data", None)
    try:
        data = decode_user_data(bytes(raw) if raw else None)
    except WireDecodeError as e:
        log.warning("kassign-optimal: member %s sent unreadable user data (%s); treated as owning nothing",
                    member_id, e)
        data = None
    if data is None:
        data = KassignUserData()
    rack = getattr(metadata, "rack_id", None)
    return MemberReport(member_id, topics, data.owned, data.generation, data.weights, instance_id, rack)


class KassignOptimalAssignor(AbstractPartitionAssignor):  # type: ignore[misc]
    """kassign's optimum as a partition assignor for kafka-python and aiokafka (protocol ``kassign-optimal``).

    Parameters
    ----------
    rebalance
        ``"cooperative"`` (default; KIP-429 incremental) or ``"eager"``.  aiokafka (and
        kafka-python 2) rebalance eagerly only: with them the leader always plans eagerly.
    budget
        Deterministic seconds the leader's optimal engine may use (default 1); see :func:`plan_round`.
    weights
        Optional callable returning ``{(topic, partition): weight}`` (e.g. the
        lag of the partitions this member owns), reported with each join.  It
        runs on the client's network thread: it must not block on the consumer
        (read cached values).  An entry that is not a (topic, partition in
        0..2**31-1) key with a finite weight >= 0 is left out, and a callable that
        raises reports no weights; both are logged, the member joins as usual.
    warm
        Load the solver engines now (default), not in the first rebalance's budget.
    wall
        Wall-clock seconds the leader waits for the engine before handing out
        cooperative-sticky (default ten budgets plus 5 s, :func:`default_wall`).

    Examples
    --------
    ``KafkaConsumer(..., partition_assignment_strategy=[KassignOptimalAssignor()])``, or
    ``AIOKafkaConsumer(..., partition_assignment_strategy=(KassignOptimalAssignor(),))``
    (an instance, so that its owned partitions and generation survive between rebalances).
    """

    name = PROTOCOL_NAME
    version = 0

    def __init__(self, rebalance: Rebalance = "cooperative", budget: float = DEFAULT_BUDGET,
                 weights: Callable[[], Mapping[tuple[str, int], float]] | None = None, warm: bool = True,
                 wall: float | None = None) -> None:
        if rebalance not in ("cooperative", "eager"):
            raise ValueError("rebalance must be 'cooperative' or 'eager'")
        if not budget > 0:
            raise ValueError("budget must be positive")
        if wall is not None and not wall > 0:
            raise ValueError("wall must be positive")
        self.rebalance: Rebalance = rebalance
        self.budget = float(budget)
        self.wall = wall
        self.weights = weights
        self.owned: dict[str, tuple[int, ...]] = {}
        self.generation = -1
        self.last_plan: PlanResult | None = None
        # the target of a cooperative step still being handed out: (group shape, target)
        self._pending: tuple[Any, Plan] | None = None
        self._eager_client_noted = False
        if warm:
            warm_up()

    def supported_protocols(self) -> list[RebalanceProtocol]:
        """The one rebalance protocol this instance runs (kafka-python 3; aiokafka does not ask)."""
        return [RebalanceProtocol.COOPERATIVE if self.rebalance == "cooperative" else RebalanceProtocol.EAGER]

    def reported_weights(self) -> dict[str, dict[int, float]]:
        """What the ``weights`` callable says, as ``{topic: {partition: weight}}``, cleaned (see the class)."""
        if self.weights is None:
            return {}
        try:
            raw = dict(self.weights())
        except Exception as e:  # a weight function must never stop the member from joining
            log.warning("kassign-optimal: the weights function failed (%s: %s); this join reports no weights",
                        type(e).__name__, e)
            return {}
        out: dict[str, dict[int, float]] = {}
        dropped = []
        for key, w in raw.items():
            try:
                t, p = key
                part, weight = int(p), float(w)
                if not (isinstance(t, str) and 0 <= part <= INT32_MAX and math.isfinite(weight) and weight >= 0
                        and part == p):
                    raise ValueError
            except (TypeError, ValueError, OverflowError):
                dropped.append(key)
                continue
            out.setdefault(t, {})[part] = weight
        if dropped:
            log.warning("kassign-optimal: %d weight(s) left out: keys must be (topic, partition 0..%d) and "
                        "weights finite numbers >= 0; e.g. %r -> %r", len(dropped), INT32_MAX, dropped[0],
                        raw[dropped[0]])
        return out

    def user_data(self) -> bytes:
        """This member's report: owned partitions, their generation, and weights when configured."""
        return encode_user_data(KassignUserData(self.generation, dict(self.owned), self.reported_weights()))

    def metadata(self, topics: Any) -> Any:
        """The subscription sent with JoinGroup (owned partitions and generation also in the standard fields)."""
        owned = [ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=list(ps))
                 for t, ps in sorted(self.owned.items())]
        return ConsumerProtocolSubscription(version=2, topics=sorted(topics), user_data=self.user_data(),
                                            owned_partitions=owned, generation_id=self.generation)

    def assign(self, cluster: Any, members: Any) -> dict[str, Any]:
        """Leader: this round's assignment of every member."""
        rebalance = self.rebalance
        if isinstance(members, Mapping):  # aiokafka / kafka-python 2: {member_id: metadata}, eager clients
            items = [(mid, md, None) for mid, md in members.items()]
            if rebalance == "cooperative":
                rebalance = "eager"
                if not self._eager_client_noted:
                    log.warning("kassign-optimal: this client rebalances eagerly only (aiokafka or kafka-python 2); "
                                "planning eagerly (a withheld partition would never be handed out)")
                    self._eager_client_noted = True
        else:
            items = [(m.member_id, m.metadata, getattr(m, "group_instance_id", None)) for m in members]
        reports = [_report(mid, md, iid) for mid, md, iid in items]
        partitions = {t: _partition_count(cluster, t) for t in sorted({t for r in reports for t in r.topics})}
        key = (tuple(sorted((r.member_id, tuple(sorted(r.topics))) for r in reports)),
               tuple(sorted(partitions.items())))
        target = self._follow_up(key, reports) if rebalance == "cooperative" else None
        if target is not None:
            # a follow-up round of the same step: hand out what the step's target withheld, do not re-solve
            # (a new optimum from the half-way state could move more than the step's optimum did)
            t0 = time.perf_counter()
            assignment, dropped = withhold(target, reports)
            result = PlanResult(assignment, target, "follow-up", "optimal", dropped, time.perf_counter() - t0)
        else:
            result = plan_round(reports, partitions, rebalance=rebalance, budget=self.budget, wall=self.wall)
        self._pending = (key, result.target) if rebalance == "cooperative" and result.withheld else None
        self.last_plan = result
        log.info("kassign-optimal: %d members, %s (%s), %d partition(s) withheld this round, %.3f s",
                 len(reports), result.engine, result.status, result.withheld, result.seconds)
        return {mid: ConsumerProtocolAssignment(0, sorted(result.assignment[mid].items()), b"")
                for mid in sorted(result.assignment)}

    def _follow_up(self, key: Any, reports: Sequence[MemberReport]) -> Plan | None:
        """The pending step's target when this round only continues it: same members, subscriptions and
        partition counts, and every member owns nothing outside its target (it revoked what it had to)."""
        if self._pending is None or self._pending[0] != key:
            return None
        target = self._pending[1]
        for r in reports:
            mine = target.get(r.member_id, {})
            if any(p not in mine.get(t, ()) for t, ps in r.owned.items() for p in ps):
                return None
        return target

    def on_assignment(self, assignment: Any, generation: int = -1) -> None:
        """Remember what this member now owns and its generation (reported at the next join).

        kafka-python 3 passes the generation; aiokafka calls ``on_assignment(assignment)`` alone, so its
        members report generation -1 (every claim then counts as current).
        """
        owned: dict[str, list[int]] = {}
        for tp in assignment.partitions():
            owned.setdefault(tp.topic, []).append(int(tp.partition))
        self.owned = {t: tuple(sorted(ps)) for t, ps in sorted(owned.items())}
        gen = int(generation)
        self.generation = gen if -1 <= gen <= INT32_MAX else -1
