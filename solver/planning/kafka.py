"""What Kafka would do instead: cooperative-sticky (consumers) or high-availability (Streams) on the plan's instances.

See :mod:`solver.planning.plan` for the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from solver.model import Instance
from solver.model.semantics import GroupView
from solver.planning.binpacking import FloatArray
from solver.planning.config import EPS
from solver.planning.items import PlanItems
from solver.planning.planner import Planner


@dataclass
class KafkaRun:
    """What Kafka's assignor does on the plan's instances."""

    status: str
    moved_partitions: int | None = None
    moved_state: float | None = None
    max_utilisation: float | None = None
    fits: bool | None = None
    rounds: int | None = None
    copartition_violations: int | None = None
    #: Planned partitions (or Streams task replicas: actives and standbys) the assignor left unassigned;
    #: ``fits`` is false when any are, whatever the utilisation.
    unplaced: int | None = None


KafkaFn = Callable[[Instance, list[int], int], KafkaRun]


def kafka_consumer(instance: Instance, items: PlanItems, planner: Planner, kept: Sequence[int], n: int,
                   assignor: Any) -> KafkaRun:
    """Run Kafka's cooperative-sticky (until settled) on the kept members plus new ones.

    Every instance subscribes to all planned topics; kept members keep their
    ``owned`` and ``generation``.  Moves and loads are counted like the plan's
    (planned partitions only).

    Parameters
    ----------
    instance
        The consumer instance planned.
    items
        Its planning items (which partitions count).
    planner
        The planning run (capacities, names of new instances).
    kept
        Member indices of the plan's instances (``>= m``: new ones).
    n
        Instance count of the row.
    assignor
        Registry spec of ``cooperative-sticky``.

    Returns
    -------
    KafkaRun
        Moves, moved state, maximum utilisation, fit, rounds to settle and
        co-partition units split across instances.
    """
    from dataclasses import replace

    from solver.model import Member
    from solver.result import Params

    topics = sorted({t for item in items.parts for t, _ in item})
    members = []
    for j in kept:
        if j < planner.m:
            members.append(replace(instance.members[j], topics=tuple(topics)))
        else:
            members.append(Member(id=planner.member_name(j), topics=tuple(topics), capacity=planner.new_mult))
    inst = Instance(name=instance.name, protocol="consumer", topics=instance.topics, members=tuple(members),
                    copartition=())
    res = assignor.run(inst, Params(time_limit=planner.cfg.time_limit, seed=planner.cfg.seed,
                                    options={"rounds": "settle"},
                                    kafka_version=planner.cfg.kafka_version or instance.kafka_version))
    asg = res.assignment
    where: dict[tuple[str, int], int] = {}
    for c, j in enumerate(kept):
        for t, parts in asg.members.get(planner.member_name(j), {}).items():
            for p in parts.tolist():
                where[(t, p)] = c
    view = GroupView(instance)
    prev = view.previous_owners
    mp = 0
    ms = 0.0
    loads = np.zeros(len(kept), dtype=np.float64)
    viol = 0
    kept_idx = list(kept)
    unplaced = 0
    for item in items.parts:
        holders: set[int] = set()
        for t, p in item:
            owner_c = where.get((t, p))
            w = instance.topics[t].weight_array()[p]
            if owner_c is None:
                unplaced += 1
                continue
            c = owner_c
            holders.add(c)
            loads[c] += w
            o = int(prev[t][p])
            if o >= 0 and (kept_idx[c] != o):
                mp += 1
                ms += float(instance.topics[t].move_cost_array()[p])
        if len(holders) > 1:
            viol += 1
    util = _max_utilisation(planner, kept, loads)
    rounds = res.extra.get("rounds") if hasattr(res, "extra") else None
    return KafkaRun("ok", mp, ms, util, util <= 1 + EPS and unplaced == 0, rounds, viol, unplaced)


def kafka_streams(instance: Instance, items: PlanItems, planner: Planner, kept: Sequence[int], n: int,
                  assignor: Any) -> KafkaRun:
    """Run Kafka Streams' high-availability assignor on the kept clients plus new ones.

    Parameters
    ----------
    instance
        The Streams instance planned.
    items
        Its planning items.
    planner
        The planning run (capacities, loads of actives and standbys).
    kept
        Client indices of the plan's instances (``>= m``: new ones).
    n
        Instance count of the row.
    assignor
        Registry spec of ``high-availability``.

    Returns
    -------
    KafkaRun
        Restorations (moves), their state stores, maximum utilisation and fit.
    """
    import uuid as _uuid
    from dataclasses import replace

    from solver.result import Params
    from solver.streams.model import Client, StreamsSpec

    spec = instance.streams
    clients = []
    for j in kept:
        if j < planner.m:
            clients.append(spec.clients[j])
        else:
            pid = str(_uuid.UUID(int=(0xF << 124) + j))
            clients.append(Client(id=planner.member_name(j), process_id=pid,
                                  capacity=max(1, round(planner.new_mult))))
    new_spec = StreamsSpec(tasks=spec.tasks, clients=tuple(clients), config=spec.config,
                           subtopologies=spec.subtopologies)
    inst = replace(instance, streams=new_spec)
    res = assignor.run(inst, Params(time_limit=planner.cfg.time_limit, seed=planner.cfg.seed,
                                    kafka_version=planner.cfg.kafka_version))
    asg = res.assignment
    has: dict[str, set[str]] = {}
    for c in spec.clients:
        for t in (*c.active, *c.standby):
            has.setdefault(t, set()).add(c.id)
    stores = {t.id: float(t.store_count) for t in spec.tasks}
    loads = np.zeros(len(kept))
    mp, ms = 0, 0.0
    placed = 0
    for c, j in enumerate(kept):
        ca = asg.get(planner.member_name(j))
        for tasks, load in ((ca.active, planner.cfg.active_load), (ca.standby, planner.cfg.standby_load)):
            for t in tasks:
                placed += 1
                loads[c] += load
                if planner.member_name(j) not in has.get(t, ()):
                    mp += 1
                    ms += stores[t]
    util = _max_utilisation(planner, kept, loads)
    # the plan places every active and standby replica (one item each); with too few clients the
    # assignor drops standbys, which is not a fit however low the utilisation
    unplaced = max(0, items.n_items - placed)
    return KafkaRun("ok", mp, ms, util, util <= 1 + EPS and unplaced == 0, None, None, unplaced)


def _max_utilisation(planner: Planner, kept: Sequence[int], loads: FloatArray) -> float:
    """Busiest of the ``kept`` instances (load / capacity, raw units); 0 without instances."""
    caps = np.asarray([planner.member_caps[j] if j < planner.m else planner.new_cap for j in kept])
    return float((loads / caps).max()) if len(kept) else 0.0
