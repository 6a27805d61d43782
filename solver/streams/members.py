"""KIP-1071 group members: a process's tasks shared among its members, most evenly and stickily.

Under the Streams rebalance protocol (``group.protocol=streams``) tasks go to
group *members*, one per stream thread of a process (:class:`Client`).  The
optimum decides what each process runs (:mod:`solver.streams.optimal`); this
module then shares each process's tasks among its members:

1. **balance**: every member gets ``floor`` or ``ceil`` of the process's
   actives per member, and ``floor`` or ``ceil`` of its tasks (actives and
   standbys) per member -- both at once is always possible;
2. **stickiness**: among those, the most tasks stay on the member that runs
   them now (``current_active`` / ``current_standby``, else the previous
   target ``active`` / ``standby``), in the same role.

One small min-cost flow per process (OR-Tools) finds it.  A client given
without ``members`` has ``capacity`` members ``<client id>#<k>``
(:func:`synthetic_members`), as the Kafka-named KIP-1071 assignor reads it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from solver.streams.model import StreamsMember, StreamsSpec, task_sort_key


def synthetic_members(spec: StreamsSpec, c: int) -> tuple[StreamsMember, ...]:
    """The members of client ``c``: its ``members``, else ``capacity`` members ``<client id>#<k>``.

    A client without ``members`` gets its previous actives, then its standbys,
    dealt round-robin in task order (a documented stand-in: Kafka would know
    each thread's tasks).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "protocol": "streams",
    ...     "tasks": [{"id": "0_0"}, {"id": "0_1"}, {"id": "0_2"}],
    ...     "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001", "capacity": 2,
    ...                  "active": ["0_2", "0_0"], "standby": ["0_1"]}]})
    >>> [(m.id, m.active, m.standby) for m in synthetic_members(inst.streams, 0)]
    [('a#0', ('0_0',), ('0_1',)), ('a#1', ('0_2',), ())]
    """
    cl = spec.clients[c]
    if cl.members is not None:
        return cl.members
    active: list[list[str]] = [[] for _ in range(cl.capacity)]
    standby: list[list[str]] = [[] for _ in range(cl.capacity)]
    k = 0
    for kind, tasks in ((active, cl.active), (standby, cl.standby)):
        for t in sorted(tasks, key=task_sort_key):
            kind[k % cl.capacity].append(t)
            k += 1
    return tuple(StreamsMember(f"{cl.id}#{j}", tuple(active[j]), tuple(standby[j])) for j in range(cl.capacity))


def share(members: Sequence[StreamsMember], active: Sequence[str], standby: Sequence[str]
          ) -> dict[str, dict[str, list[str]]]:
    """One process's ``active`` and ``standby`` tasks among its ``members`` (see the module docstring).

    Examples
    --------
    Three actives, one standby, two members: each gets two tasks, ``m1`` keeps
    the active it runs now.

    >>> m = [StreamsMember("m1", ("0_2",)), StreamsMember("m2")]
    >>> share(m, ["0_0", "0_1", "0_2"], ["1_0"])
    {'m1': {'active': ['0_2'], 'standby': ['1_0']}, 'm2': {'active': ['0_0', '0_1'], 'standby': []}}
    """
    from ortools.graph.python import min_cost_flow

    n = len(members)
    out: dict[str, dict[str, list[str]]] = {m.id: {"active": [], "standby": []} for m in members}
    if n == 0 or not (active or standby):
        return out
    a, total = len(active), len(active) + len(standby)
    big = total + 1  # one balance unit outweighs every task kept
    # nodes: 0 source, 1 sink, tasks, then per member an "active" node and a member node
    tasks = [*((t, "active") for t in active), *((t, "standby") for t in standby)]
    first_member = 2 + len(tasks)
    starts: list[int] = []
    ends: list[int] = []
    caps: list[int] = []
    costs: list[int] = []

    def arc(u: int, v: int, cap: int, cost: int) -> None:
        starts.append(u)
        ends.append(v)
        caps.append(cap)
        costs.append(cost)

    owned = [(set(m.owned_active), set(m.owned_standby)) for m in members]
    task_arcs: list[tuple[int, int, int]] = []  # (arc index, task, member)
    for j, (t, role) in enumerate(tasks):
        arc(0, 2 + j, 1, 0)
        for k in range(n):
            kept = t in owned[k][0 if role == "active" else 1]
            task_arcs.append((len(starts), j, k))
            target = first_member + 2 * k if role == "active" else first_member + 2 * k + 1
            arc(2 + j, target, 1, -1 if kept else 0)
    for k in range(n):
        act, mem = first_member + 2 * k, first_member + 2 * k + 1
        for node_from, node_to, amount in ((act, mem, a), (mem, 1, total)):
            floor, extra = divmod(amount, n)
            if floor:
                arc(node_from, node_to, floor, -big)
            if extra:
                arc(node_from, node_to, 1, 0)
    flow = min_cost_flow.SimpleMinCostFlow()
    flow.add_arcs_with_capacity_and_unit_cost(starts, ends, caps, costs)
    supplies = [0] * (first_member + 2 * n)
    supplies[0], supplies[1] = total, -total
    flow.set_nodes_supplies(list(range(len(supplies))), supplies)
    if flow.solve() != flow.OPTIMAL:  # pragma: no cover - the balanced sharing always exists
        raise RuntimeError("no balanced sharing of a process's tasks among its members")
    for index, j, k in task_arcs:
        if flow.flow(index):
            t, role = tasks[j]
            out[members[k].id][role].append(t)
    return out


def member_assignment(spec: StreamsSpec, clients: Mapping[str, Mapping[str, Sequence[str]]]
                      ) -> dict[str, dict[str, list[str]]]:
    """Every member's tasks, each client's (``{client: {"active", "standby"}}``) shared by :func:`share`."""
    out: dict[str, dict[str, list[str]]] = {}
    for c, cl in enumerate(spec.clients):
        tasks = clients.get(cl.id, {})
        out.update(share(synthetic_members(spec, c), list(tasks.get("active", ())), list(tasks.get("standby", ()))))
    return out


__all__ = ["member_assignment", "share", "synthetic_members"]
