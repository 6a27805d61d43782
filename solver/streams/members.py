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

One small min-cost flow per process (OR-Tools) finds it; its arcs grow with tasks + members,
not tasks x members (:func:`share`).  A client given
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

    The flow is compact: a task has an arc to each member that runs it now in the same role (keeping it
    there saves one) and one to a pool of its role that feeds every member, so its size grows with tasks +
    members + tasks kept, never tasks x members (1,000 members x 5,000 tasks were 5 million arcs and 1.5 GB).
    Tasks that go through a pool are dealt to the members in task order, as many as the flow gives each.

    Examples
    --------
    Three actives, one standby, two members: each gets two tasks, ``m1`` keeps
    the active it runs now.

    >>> m = [StreamsMember("m1", ("0_2",)), StreamsMember("m2")]
    >>> out = share(m, ["0_0", "0_1", "0_2"], ["1_0"])
    >>> "0_2" in out["m1"]["active"], sorted(len(v["active"]) + len(v["standby"]) for v in out.values())
    (True, [2, 2])
    """
    from ortools.graph.python import min_cost_flow

    n = len(members)
    out: dict[str, dict[str, list[str]]] = {m.id: {"active": [], "standby": []} for m in members}
    if n == 0 or not (active or standby):
        return out
    a, total = len(active), len(active) + len(standby)
    big = total + 1  # one balance unit outweighs every task kept
    # nodes: 0 source, 1 sink, tasks, a pool per role, then per member an "active" node and a member node
    tasks = [*((t, "active") for t in active), *((t, "standby") for t in standby)]
    pool = {"active": 2 + len(tasks), "standby": 3 + len(tasks)}
    first_member = 4 + len(tasks)
    starts: list[int] = []
    ends: list[int] = []
    caps: list[int] = []
    costs: list[int] = []

    def arc(u: int, v: int, cap: int, cost: int) -> int:
        starts.append(u)
        ends.append(v)
        caps.append(cap)
        costs.append(cost)
        return len(starts) - 1

    def node(k: int, role: str) -> int:
        return first_member + 2 * k + (0 if role == "active" else 1)

    runs: dict[tuple[str, str], list[int]] = {}
    for k, m in enumerate(members):
        for t in m.owned_active:
            runs.setdefault((t, "active"), []).append(k)
        for t in m.owned_standby:
            runs.setdefault((t, "standby"), []).append(k)
    kept_arcs: list[tuple[int, int, int]] = []  # (arc index, task, member)
    pooled_arcs: list[tuple[int, int]] = []  # (arc index, task)
    for j, (t, role) in enumerate(tasks):
        arc(0, 2 + j, 1, 0)
        for k in dict.fromkeys(runs.get((t, role), ())):
            kept_arcs.append((arc(2 + j, node(k, role), 1, -1), j, k))
        pooled_arcs.append((arc(2 + j, pool[role], 1, 0), j))
    feeds: dict[str, list[tuple[int, int]]] = {"active": [], "standby": []}  # (arc index, member)
    for k in range(n):
        for role in ("active", "standby"):
            feeds[role].append((arc(pool[role], node(k, role), total, 0), k))
        act, mem = node(k, "active"), node(k, "standby")
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
    given: list[list[int]] = [[] for _ in range(n)]
    for index, j, k in kept_arcs:
        if flow.flow(index):
            given[k].append(j)
    pooled = {"active": [j for index, j in pooled_arcs if flow.flow(index) and tasks[j][1] == "active"],
              "standby": [j for index, j in pooled_arcs if flow.flow(index) and tasks[j][1] == "standby"]}
    for role in ("active", "standby"):
        left = iter(pooled[role])
        for index, k in feeds[role]:
            for _ in range(flow.flow(index)):
                given[k].append(next(left))
    for k, js in enumerate(given):
        for j in sorted(js):
            t, role = tasks[j]
            out[members[k].id][role].append(t)
    return out


def member_assignment(spec: StreamsSpec, clients: Mapping[str, Mapping[str, Sequence[str]]]
                      ) -> dict[str, dict[str, list[str]]]:
    """Every listed member's tasks, each client's (``{client: {"active", "standby"}}``) shared by :func:`share`.

    A client without ``members`` has none in the answer: its synthetic members (:func:`synthetic_members`) are
    how an assignor reads the process, and no group member has their names; its ``assignment`` says it all.
    """
    from solver import runtime

    out: dict[str, dict[str, list[str]]] = {}
    for c, cl in enumerate(spec.clients):
        runtime.check()  # a stop request (SIGINT, SIGTERM) ends the sharing between processes
        if cl.members is None:
            continue  # its synthetic members are kassign's reading of the process, not members to write out
        tasks = clients.get(cl.id, {})
        out.update(share(synthetic_members(spec, c), list(tasks.get("active", ())), list(tasks.get("standby", ()))))
    return out


__all__ = ["member_assignment", "share", "synthetic_members"]
