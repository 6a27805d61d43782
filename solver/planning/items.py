"""Capacity planning items: what is packed, with loads and where their state is today.

Consumer groups (:func:`consumer_items`: partitions and co-partition units) and
Kafka Streams (:func:`streams_items`: active and standby task replicas in
anti-affinity groups).  See :mod:`solver.planning.plan` for the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from solver.model import Instance
from solver.model.semantics import GroupView
from solver.planning.binpacking import FloatArray, IntArray


@dataclass(frozen=True, eq=False)
class PlanItems:
    """What is packed: items with loads and where their state is today.

    Attributes
    ----------
    raw
        Item sizes in *raw* units (weights, or lag when planning from lag).
    divisor
        ``load = raw / divisor`` (``catch_up_seconds``, else 1).
    labels
        Human-readable item names (``"T-3"``, ``"clicks+views-3"``, ``"0_1#standby1"``).
    parts
        Topic-partitions (or task replicas) of each item.
    prev_parts, prev_state
        Partitions of the item that have a previous owner and their summed
        ``move_costs``.
    held
        Per item, member index -> (partitions, state) the member holds today.
    move_parts, move_state
        Partitions and ``move_costs`` of the whole item (what moves when a
        planned item is moved again, e.g. after a failure).
    groups
        Anti-affinity group of each item (-1: none), or ``None``.
    member_ids
        Today's members (input order); ``held`` indexes them.
    multipliers
        Today's members' capacity multipliers.
    partitions
        Planned topic-partitions (Streams: tasks; the items are their replicas).
    not_joinable
        Partitions left out as not joinable.
    notes
        Facts worth telling the user (ignored subscriptions ...).
    """

    raw: FloatArray
    divisor: float
    labels: tuple[str, ...]
    parts: tuple[tuple[tuple[str, int], ...], ...]
    prev_parts: IntArray
    prev_state: FloatArray
    held: tuple[dict[int, tuple[int, float]], ...]
    move_parts: IntArray
    move_state: FloatArray
    groups: IntArray | None
    member_ids: tuple[str, ...]
    multipliers: FloatArray
    partitions: int
    not_joinable: int = 0
    notes: tuple[str, ...] = ()

    @property
    def n_items(self) -> int:
        """Number of items."""
        return int(self.raw.size)

    def cost(self, i: int, j: int) -> tuple[int, float]:
        """(partitions, state) moved when item ``i`` goes to member index ``j`` (new instances: ``j >= m``)."""
        h = self.held[i].get(j)
        if h is None:
            return int(self.prev_parts[i]), float(self.prev_state[i])
        return int(self.prev_parts[i]) - h[0], float(self.prev_state[i]) - h[1]


def consumer_items(instance: Instance, catch_up_seconds: float | None = None) -> PlanItems:
    """Build the planning items of a consumer-protocol instance (see :mod:`solver.planning.plan`).

    Parameters
    ----------
    instance
        Consumer-protocol instance.
    catch_up_seconds
        When given, weights are lag and ``load = lag / catch_up_seconds``.

    Returns
    -------
    PlanItems
        Partitions and co-partition units with their loads and today's owners.
    """
    view = GroupView(instance)
    prev = view.previous_owners
    planned = [t for t in instance.topics if view.subscribers[t]] if instance.members else list(instance.topics)
    notes: list[str] = []
    subs = {tuple(sorted(m.topics)) for m in instance.members}
    if len(subs) > 1:
        notes.append("members subscribe to different topics; the plan treats every instance as a replica "
                     "subscribing to all planned topics")
    planned_set = set(planned)
    raw: list[float] = []
    labels: list[str] = []
    parts: list[tuple[tuple[str, int], ...]] = []
    grouped: set[str] = set()
    not_joinable = 0
    for group in instance.copartition:
        topics = [t for t in group if t in planned_set]
        if not topics:
            continue
        grouped.update(topics)
        lim = view.limits[topics[0]]
        not_joinable += sum(instance.topics[t].partitions - lim for t in topics)
        ws = [instance.topics[t].weight_array() for t in topics]
        for p in range(lim):
            raw.append(float(sum(w[p] for w in ws)))
            labels.append(f"{'+'.join(topics)}-{p}")
            parts.append(tuple((t, p) for t in topics))
    for t in planned:
        if t in grouped:
            continue
        w = instance.topics[t].weight_array()
        for p in range(instance.topics[t].partitions):
            raw.append(float(w[p]))
            labels.append(f"{t}-{p}")
            parts.append(((t, p),))
    n = len(raw)
    prev_parts = np.zeros(n, dtype=np.int64)
    prev_state = np.zeros(n, dtype=np.float64)
    move_parts = np.zeros(n, dtype=np.int64)
    move_state = np.zeros(n, dtype=np.float64)
    held: list[dict[int, tuple[int, float]]] = []
    costs = {t: instance.topics[t].move_cost_array() for t in planned}
    for i, item in enumerate(parts):
        h: dict[int, tuple[int, float]] = {}
        for t, p in item:
            c = float(costs[t][p])
            move_parts[i] += 1
            move_state[i] += c
            o = int(prev[t][p])
            if o >= 0:
                prev_parts[i] += 1
                prev_state[i] += c
                a, b = h.get(o, (0, 0.0))
                h[o] = (a + 1, b + c)
        held.append(h)
    return PlanItems(
        raw=np.asarray(raw, dtype=np.float64),
        divisor=float(catch_up_seconds) if catch_up_seconds else 1.0,
        labels=tuple(labels),
        parts=tuple(parts),
        prev_parts=prev_parts,
        prev_state=prev_state,
        held=tuple(held),
        move_parts=move_parts,
        move_state=move_state,
        groups=None,
        member_ids=instance.member_ids,
        multipliers=np.array([m.capacity for m in instance.members], dtype=np.float64),
        partitions=sum(len(p) for p in parts),
        not_joinable=not_joinable,
        notes=tuple(notes),
    )


def streams_items(instance: Instance, active_load: float = 1.0, standby_load: float = 1.0) -> PlanItems:
    """Build the planning items of a Kafka Streams instance.

    Every task gives one *active* item of load ``active_load``; every stateful
    task also ``num_standby_replicas`` *standby* items of load ``standby_load``;
    the items of one task form an anti-affinity group (distinct instances).
    ``capacity`` is then in the same unit (e.g. tasks per instance); a client's
    ``capacity`` (stream threads) is its multiplier.

    Moves count *restorations*: a replica placed on a client that held neither
    the task's active nor a standby of it.  ``moved_partitions`` counts such
    replicas; ``moved_state`` sums their tasks' state stores (KIP-262 ``stores``;
    0 for stateless tasks), as the bytes to restore are not in the input.

    Parameters
    ----------
    instance
        Streams-protocol instance.
    active_load, standby_load
        Load of an active task and of a standby replica.

    Returns
    -------
    PlanItems
        Task replicas with anti-affinity groups (one group per task).
    """
    spec = instance.streams
    clients = spec.clients
    cindex = {c.id: j for j, c in enumerate(clients)}
    has: dict[str, set[int]] = {}
    for c in clients:
        for t in (*c.active, *c.standby):
            has.setdefault(t, set()).add(cindex[c.id])
    k = int(spec.config.num_standby_replicas)
    raw: list[float] = []
    labels: list[str] = []
    parts: list[tuple[tuple[str, int], ...]] = []
    groups: list[int] = []
    held: list[dict[int, tuple[int, float]]] = []
    prev_parts: list[int] = []
    prev_state: list[float] = []
    for g, task in enumerate(spec.tasks):
        state = float(task.store_count)
        replicas = [("active", active_load)]
        if task.stateful:
            replicas += [(f"standby{r + 1}", standby_load) for r in range(k)]
        for r, (role, load) in enumerate(replicas):
            raw.append(float(load))
            labels.append(f"{task.id}#{role}")
            parts.append(((task.id, r),))
            groups.append(g)
            held.append({j: (1, state) for j in has.get(task.id, ())})
            prev_parts.append(1)
            prev_state.append(state)
    n = len(raw)
    return PlanItems(
        raw=np.asarray(raw, dtype=np.float64),
        divisor=1.0,
        labels=tuple(labels),
        parts=tuple(parts),
        prev_parts=np.asarray(prev_parts, dtype=np.int64),
        prev_state=np.asarray(prev_state, dtype=np.float64),
        held=tuple(held),
        move_parts=np.ones(n, dtype=np.int64),
        move_state=np.asarray(prev_state, dtype=np.float64),
        groups=np.asarray(groups, dtype=np.int64),
        member_ids=spec.client_ids,
        multipliers=np.array([float(c.capacity) for c in clients], dtype=np.float64),
        partitions=len(spec.tasks),  # tasks (input partitions); the items are their active and standby replicas
        notes=(f"streams: {len(spec.tasks)} tasks, {k} standby replica(s) per stateful task, "
               f"active load {active_load:g}, standby load {standby_load:g}",),
    )
