"""``KassignOptimalAssignor``: kassign's optimum as a live partition assignor for Python clients.

Members report what they own, its generation and (optionally) per-partition
weights in their subscription's user data (:mod:`spark_runner.live.wire`); the
group leader builds a ``kassign/v1`` instance from those reports and the
cluster's partition counts, and hands out kassign's optimum: most balanced
loads, then the fewest moves (weighted when members report weights).

* **Time budget** (default 1 s): when the optimum is not proven within it,
  the leader uses Kafka's ``cooperative-sticky`` result instead and logs a
  warning on the ``spark_runner.live`` logger.
* **Cooperative** (default; KIP-429): a partition whose owner changes is left
  out of this round's assignment while another member still claims it; that
  member revokes it and rejoins, and the next round hands it to its new owner.
  No partition is ever owned by two members.  **Eager**: the target is handed
  out at once (every member revoked everything before joining).
* **Deterministic**: the instance is built in sorted order and solved with a
  fixed seed, so the same reports give the same assignment (the fallback is
  taken on wall-clock time, so an overloaded leader may take it where an idle
  one would not).

The planning is a pure function, :func:`plan`; the class adapts it to
kafka-python (3.x ``assign(cluster, members)`` with a list of members, or a
dict ``{member_id: metadata}`` as aiokafka and kafka-python 2 pass it).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor, RebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from spark_runner.live.wire import KassignUserData, WireDecodeError, decode_user_data, encode_user_data

log = logging.getLogger("spark_runner.live")

#: The group protocol name members announce.
PROTOCOL_NAME = "kassign-optimal"
DEFAULT_BUDGET = 1.0
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
    """The leader's decision: this round's assignment, the target, and how it was found."""

    assignment: Plan
    target: Plan
    engine: str
    status: str
    withheld: int
    seconds: float


def build_instance_doc(members: Sequence[MemberReport], partitions: Mapping[str, int]) -> dict[str, Any]:
    """The ``kassign/v1`` consumer instance of a join round (members and topics in sorted order).

    A partition no member reported a weight for weighs the mean of the
    reported weights (a new partition's lag is unknown); with no reports at
    all every partition weighs 1 (the flow engine's unit case).
    """
    subscribed = sorted({t for m in members for t in m.topics})
    reported = [float(w) for m in members for per in m.weights.values() for w in per.values()]
    mean = sum(reported) / len(reported) if reported else 1.0
    weights: dict[tuple[str, int], float] = {}
    for m in sorted(members, key=lambda m: m.member_id):
        for t, per in m.weights.items():
            for p, w in per.items():
                weights.setdefault((t, int(p)), max(float(w), 0.0))
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


def _solve_within(instance: Any, budget: float) -> Any:
    """The optimum if it is proven within ``budget`` seconds, else ``None``."""
    from solver.result import Params
    from spark_runner.assignors import get

    box: list[Any] = []

    def work() -> None:
        try:
            # weighted: the bottleneck, then the fewest moves (the live promise); evenness among the other
            # members is not worth a slower proof in a join round
            objective = ("max_load", "moves") if instance.has_weights else None
            box.append(get("optimal").run(instance, Params(time_limit=budget, seed=0, objective=objective)))
        except Exception as e:  # reported by the caller, which falls back
            box.append(e)

    worker = threading.Thread(target=work, name="kassign-optimal", daemon=True)
    worker.start()
    worker.join(budget)
    if not box:
        return None
    return box[0]


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


def plan(members: Sequence[MemberReport], partitions: Mapping[str, int], *, rebalance: Rebalance = "cooperative",
         budget: float = DEFAULT_BUDGET) -> PlanResult:
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
        Seconds the optimum may take before Kafka's cooperative-sticky result is used.

    Returns
    -------
    PlanResult
        ``assignment`` has every member (also with ``{}``), topics and partitions sorted.
    """
    from solver.io import parse_instance
    from solver.result import Params
    from spark_runner.assignors import get

    t0 = time.perf_counter()
    inst = parse_instance(build_instance_doc(members, partitions), PROTOCOL_NAME)
    res = _solve_within(inst, budget)
    ids = sorted(m.member_id for m in members)
    if res is not None and not isinstance(res, Exception) and res.status.value == "optimal":
        target = _lists(res.assignment.to_lists(), ids)
        engine, status = str(res.extra.get("engine", "optimal")), "optimal"
    else:
        why = (f"the optimum was not proven within {budget:g} s" if res is None or not isinstance(res, Exception)
               else f"the optimal solver failed ({type(res).__name__}: {res})")
        log.warning("kassign-optimal: %s; using Kafka's cooperative-sticky assignment this round", why)
        options = {"rounds": "settle"} if rebalance == "eager" else {}
        fb = get("cooperative-sticky").run(inst, Params(options=options))
        target = _lists(fb.assignment.to_lists(), ids)
        engine, status = "cooperative-sticky", "fallback"
        if rebalance == "cooperative":  # Kafka's own first round already withholds
            return PlanResult(target, target, engine, status, int(fb.extra.get("withheld", 0)),
                              time.perf_counter() - t0)
    if rebalance == "cooperative":
        assignment, dropped = withhold(target, members)
    else:
        assignment, dropped = target, 0
    return PlanResult(assignment, target, engine, status, dropped, time.perf_counter() - t0)


def warm_up() -> None:
    """Load the solver engines once (both the flow and CP-SAT), so the first rebalance is not charged for imports.

    The first optimum in a fresh process spends most of a second importing
    OR-Tools; a leader paying that inside its budget would fall back for no reason.
    """
    unit = [MemberReport("a", ("t",)), MemberReport("b", ("t",))]
    weighted = [MemberReport("a", ("t",), weights={"t": {0: 2.0}}), MemberReport("b", ("t",))]
    for members in (unit, weighted):
        plan(members, {"t": 2}, rebalance="eager", budget=60.0)


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
    """kassign's optimum as a kafka-python partition assignor (protocol ``kassign-optimal``).

    Parameters
    ----------
    rebalance
        ``"cooperative"`` (default; KIP-429 incremental) or ``"eager"``.
    budget
        Seconds the leader may spend on the optimum (default 1); past it,
        Kafka's cooperative-sticky result (logged as a warning).
    weights
        Optional callable returning ``{(topic, partition): weight}`` (e.g. the
        lag of the partitions this member owns), reported with each join.
    warm
        Load the solver engines now (default), not in the first rebalance's budget.

    Examples
    --------
    ``KafkaConsumer(..., partition_assignment_strategy=[KassignOptimalAssignor()])``
    (an instance, so that its owned partitions and generation survive between rebalances).
    """

    name = PROTOCOL_NAME
    version = 0

    def __init__(self, rebalance: Rebalance = "cooperative", budget: float = DEFAULT_BUDGET,
                 weights: Callable[[], Mapping[tuple[str, int], float]] | None = None, warm: bool = True) -> None:
        if rebalance not in ("cooperative", "eager"):
            raise ValueError("rebalance must be 'cooperative' or 'eager'")
        if budget <= 0:
            raise ValueError("budget must be positive")
        self.rebalance: Rebalance = rebalance
        self.budget = float(budget)
        self.weights = weights
        self.owned: dict[str, tuple[int, ...]] = {}
        self.generation = -1
        self.last_plan: PlanResult | None = None
        # the target of a cooperative step still being handed out: (group shape, target)
        self._pending: tuple[Any, Plan] | None = None
        if warm:
            warm_up()

    def supported_protocols(self) -> list[RebalanceProtocol]:
        """The one rebalance protocol this instance runs."""
        return [RebalanceProtocol.COOPERATIVE if self.rebalance == "cooperative" else RebalanceProtocol.EAGER]

    def user_data(self) -> bytes:
        """This member's report: owned partitions, their generation, and weights when configured."""
        weights: dict[str, dict[int, float]] = {}
        if self.weights is not None:
            for (t, p), w in dict(self.weights()).items():
                weights.setdefault(str(t), {})[int(p)] = float(w)
        return encode_user_data(KassignUserData(self.generation, dict(self.owned), weights))

    def metadata(self, topics: Any) -> Any:
        """The subscription sent with JoinGroup (owned partitions and generation also in the standard fields)."""
        owned = [ConsumerProtocolSubscription.TopicPartition(topic=t, partitions=list(ps))
                 for t, ps in sorted(self.owned.items())]
        return ConsumerProtocolSubscription(version=2, topics=sorted(topics), user_data=self.user_data(),
                                            owned_partitions=owned, generation_id=self.generation)

    def assign(self, cluster: Any, members: Any) -> dict[str, Any]:
        """Leader: this round's assignment of every member."""
        if isinstance(members, Mapping):  # aiokafka / kafka-python 2: {member_id: metadata}
            items = [(mid, md, None) for mid, md in members.items()]
        else:
            items = [(m.member_id, m.metadata, getattr(m, "group_instance_id", None)) for m in members]
        reports = [_report(mid, md, iid) for mid, md, iid in items]
        partitions = {t: _partition_count(cluster, t) for t in sorted({t for r in reports for t in r.topics})}
        key = (tuple(sorted((r.member_id, tuple(sorted(r.topics))) for r in reports)),
               tuple(sorted(partitions.items())))
        target = self._follow_up(key, reports)
        if target is not None:
            # a follow-up round of the same step: hand out what the step's optimum withheld, do not re-solve
            # (a new optimum from the half-way state could move more than the step's optimum did)
            t0 = time.perf_counter()
            assignment, dropped = withhold(target, reports)
            result = PlanResult(assignment, target, "follow-up", "optimal", dropped, time.perf_counter() - t0)
        else:
            result = plan(reports, partitions, rebalance=self.rebalance, budget=self.budget)
        self._pending = ((key, result.target) if self.rebalance == "cooperative" and result.status == "optimal"
                         and result.withheld else None)
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
        """Remember what this member now owns and its generation (reported at the next join)."""
        owned: dict[str, list[int]] = {}
        for tp in assignment.partitions():
            owned.setdefault(tp.topic, []).append(int(tp.partition))
        self.owned = {t: tuple(sorted(ps)) for t, ps in sorted(owned.items())}
        self.generation = int(generation)

    def on_generation_assignment(self, generation: int) -> None:
        """aiokafka reports the generation separately."""
        self.generation = int(generation)
