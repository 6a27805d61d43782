"""Kafka Streams' own min-cost flow (``Graph<Integer>`` of KIP-925), step for step.

Kafka's rack-aware task assignor solves its flows with this class: a maximum
flow by breadth-first augmenting paths (``calculateMaxFlow``) and a min-cost
flow by *cycle cancelling* (``solveMinCostFlow``): build the residual graph,
add a dummy node ``null`` with a 0-cost edge to every node, run Bellman-Ford
from it for ``nodeCount`` rounds, and if a distance still drops in the last
round walk the parent pointers back to a cycle, push the most flow it takes
around it, and start again.  Min-cost flows have many optima; which one
Kafka returns follows from exactly which cycle it finds first, so this module
reproduces the order of every loop:

* nodes in ascending order (Kafka's ``TreeMap`` with ``null`` first), each
  node's edges by ascending destination;
* Bellman-Ford relaxes in that order *in place* (a distance lowered early in a
  round is read later in the same round), only on strictly shorter paths, and
  returns the first node relaxed in the last round;
* the cycle is found by walking parents until a node repeats; flows on
  residual edges change exactly as in ``cancelNegativeCycle``.

Costs are Java ``int`` (a backward edge's cost is ``cost * -1`` in 32 bits),
distances Java ``long``.

**Speed.**  A round of Bellman-Ford is vectorised over *layers*: maximal runs
of consecutive nodes with no edge between them.  Inside such a run no
relaxation changes the distance of a node of the run, so the run's edges can be
relaxed at once: each target takes the smallest candidate, ties going to the
first edge in Kafka's order, which is what the sequential loop leaves; in the
last round the first relaxing edge in Kafka's order is the one returned.
Rounds stop early when one relaxes nothing (none would later either: Kafka's
answer is then "no cycle" as well), and a round only tries the edges of nodes
whose distance fell since their edges were last tried: distances only fall, so
no other edge can relax (Kafka tries them and finds nothing).  Graphs under
:data:`VECTOR_MIN_EDGES` residual edges run the same rules as a plain loop.  :meth:`Graph.solve_min_cost_flow_reference`
is the plain loop, kept to check the fast one.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

_INT_MASK = (1 << 32) - 1
#: From this many residual edges on, Bellman-Ford rounds run vectorised (same result, faster).
VECTOR_MIN_EDGES = 1000


def java_int(x: int) -> int:
    """``x`` wrapped to a Java ``int`` (two's complement, 32 bits)."""
    x &= _INT_MASK
    return x - (1 << 32) if x >= 1 << 31 else x


@dataclass
class Edge:
    """One edge of Kafka's ``Graph.Edge`` (flows are mutable)."""

    destination: int
    capacity: int
    cost: int
    residual_flow: int
    flow: int
    forward: bool = True
    counter: Edge | None = None


class Graph:
    """Kafka's ``Graph<Integer>``: a flow network with integer node ids.

    Parameters are added with :meth:`add_edge`; :meth:`calculate_max_flow`
    and :meth:`solve_min_cost_flow` set each edge's ``flow`` as Kafka does.

    Examples
    --------
    Task nodes 0 and 1, client nodes 2 and 3 (one task each), sink 4: each
    task sits where it costs 5 and would cost 0 on the other client, so the
    one negative cycle swaps them.

    >>> g = Graph()
    >>> g.add_edge(-1, 0, 1, 0, 1); g.add_edge(-1, 1, 1, 0, 1)
    >>> g.add_edge(0, 2, 1, 5, 1); g.add_edge(0, 3, 1, 0, 0)
    >>> g.add_edge(1, 2, 1, 0, 0); g.add_edge(1, 3, 1, 5, 1)
    >>> g.add_edge(2, 4, 1, 0, 1); g.add_edge(3, 4, 1, 0, 1)
    >>> g.set_source_sink(-1, 4)
    >>> g.total_cost(), g.solve_min_cost_flow(), g.total_cost()
    (10, None, 0)
    >>> [(e.destination, e.flow) for e in g.edges(0)]
    [(2, 0), (3, 1)]
    """

    def __init__(self) -> None:
        self.adj: dict[int, dict[int, Edge]] = {}
        self.nodes: set[int] = set()
        self.source = -1
        self.sink = -1

    def add_edge(self, u: int, v: int, capacity: int, cost: int, flow: int) -> None:
        """``addEdge(u, v, capacity, cost, flow)`` (an edge ``v -> u`` may not exist)."""
        if capacity < 0:
            raise ValueError("Edge capacity cannot be negative")
        if flow > capacity:
            raise ValueError(f"Edge flow {flow} cannot exceed capacity {capacity}")
        if u in self.adj.get(v, {}):
            raise ValueError(f"There is already an edge from {v} to {u}")
        self.adj.setdefault(u, {})[v] = Edge(v, capacity, java_int(cost), capacity - flow, flow)
        self.nodes.add(u)
        self.nodes.add(v)

    def set_source_sink(self, source: int, sink: int) -> None:
        """``setSourceNode`` / ``setSinkNode``."""
        self.source = source
        self.sink = sink

    def edges(self, u: int) -> list[Edge]:
        """Edges out of ``u`` by ascending destination (``edges(node).values()``)."""
        out = self.adj.get(u, {})
        return [out[v] for v in sorted(out)]

    def total_cost(self) -> int:
        """``totalCost``: sum of cost x flow."""
        return sum(e.cost * e.flow for es in self.adj.values() for e in es.values())

    # ------------------------------------------------------------------ residual graph

    def _residual(self) -> dict[int, dict[int, Edge]]:
        res: dict[int, dict[int, Edge]] = {}
        for u in sorted(self.adj):
            for v in sorted(self.adj[u]):
                e = self.adj[u][v]
                fwd = Edge(v, e.capacity, e.cost, e.capacity - e.flow, e.flow)
                bwd = Edge(u, e.capacity, java_int(-e.cost), e.flow, 0, forward=False)
                fwd.counter, bwd.counter = bwd, fwd
                res.setdefault(u, {})[v] = fwd
                res.setdefault(v, {})[u] = bwd
        return res

    def _copy_back(self, res: dict[int, dict[int, Edge]]) -> None:
        for u, es in self.adj.items():
            for v, e in es.items():
                r = res[u][v]
                e.flow, e.residual_flow = r.flow, r.residual_flow

    @staticmethod
    def _push(edge: Edge, amount: int) -> None:
        # The flow update of fordFulkson / cancelNegativeCycle, including its guard.
        counter = edge.counter
        assert counter is not None
        edge.residual_flow -= amount
        if edge.forward:
            edge.flow += amount
        counter.residual_flow += amount
        if counter.forward and counter.flow >= amount:
            counter.flow -= amount

    # ------------------------------------------------------------------ max flow

    def calculate_max_flow(self) -> int:
        """``calculateMaxFlow``: Ford-Fulkerson with breadth-first paths (Kafka's visit order)."""
        res = self._residual()
        while True:
            parents = self._bfs(res)
            if parents is None:
                break
            possible = 2**31 - 1
            node = self.sink
            while node != self.source:
                p = parents[node]
                possible = min(possible, res[p][node].residual_flow)
                node = p
            node = self.sink
            while node != self.source:
                p = parents[node]
                self._push(res[p][node], possible)
                node = p
        self._copy_back(res)
        return sum(e.flow for e in self.adj.get(self.source, {}).values())

    def _bfs(self, res: dict[int, dict[int, Edge]]) -> dict[int, int] | None:
        parents: dict[int, int] = {}
        visited = {self.source}
        queue = deque([self.source])
        while queue:
            node = queue.popleft()
            out = res[node]
            for nxt in sorted(out):
                if nxt in visited or out[nxt].residual_flow <= 0:
                    continue
                if nxt == self.sink:
                    parents[nxt] = node
                    return parents
                queue.append(nxt)
                parents[nxt] = node
                visited.add(nxt)
        return None

    # ------------------------------------------------------------------ min-cost flow

    def solve_min_cost_flow(self) -> None:
        """``solveMinCostFlow``: cancel negative cycles in Kafka's order (vectorised rounds)."""
        res = self._residual()
        _CycleCanceller(res).run()
        self._copy_back(res)

    def solve_min_cost_flow_reference(self) -> None:
        """The same, with Bellman-Ford as Kafka's plain loop (slow; for tests)."""
        res = self._residual()
        while True:
            found = _detect_reference(res)
            if found is None:
                break
            node, parent_nodes, parent_edges = found
            _cancel(node, parent_nodes, parent_edges)
        self._copy_back(res)


def _cancel(possible: int, parent_nodes: dict[int, int | None], parent_edges: dict[int, Edge]) -> None:
    """``cancelNegativeCycles`` body: find the cycle behind ``possible`` and push flow around it."""
    visited: set[int] = set()
    node = possible
    while node not in visited:
        visited.add(node)
        nxt = parent_nodes[node]
        assert nxt is not None, "the parent walk left the cycle"
        node = nxt
    in_cycle = node
    cycle: list[Edge] = [parent_edges[in_cycle]]
    cur = parent_nodes[in_cycle]
    while cur != in_cycle:
        assert cur is not None
        cycle.append(parent_edges[cur])
        cur = parent_nodes[cur]
    amount = min(e.residual_flow for e in cycle)
    for e in cycle:
        Graph._push(e, amount)


def _detect_reference(res: dict[int, dict[int, Edge]]) -> tuple[int, dict[int, int | None], dict[int, Edge]] | None:
    # Kafka's detectNegativeCycles from the dummy node, literally.
    order = sorted(res)
    count = len(order) + 1  # the dummy node counts
    dist: dict[int, int] = {}
    parent_nodes: dict[int, int | None] = {}
    parent_edges: dict[int, Edge] = {}
    for i in range(count):
        if i == 0:
            for v in order:  # the dummy node's edges: cost 0 to every node
                dist[v] = 0
                parent_nodes[v] = None
        for u in order:
            du = dist[u]
            out = res[u]
            for v in sorted(out):
                e = out[v]
                if e.residual_flow == 0:
                    continue
                if dist[v] > du + e.cost:
                    dist[v] = du + e.cost
                    parent_nodes[v] = u
                    parent_edges[v] = e
                    if i == count - 1:
                        return v, parent_nodes, parent_edges
    return None


class _CycleCanceller:
    """Cycle cancelling on a residual graph with Bellman-Ford rounds vectorised per layer."""

    def __init__(self, res: dict[int, dict[int, Edge]]) -> None:
        order = sorted(res)
        self.order = order
        pos = {v: i for i, v in enumerate(order)}
        edges: list[Edge] = []
        src: list[int] = []
        dst: list[int] = []
        for u in order:
            out = res[u]
            for v in sorted(out):
                edges.append(out[v])
                src.append(pos[u])
                dst.append(pos[v])
        self.edges = edges
        self.index = {id(e): k for k, e in enumerate(edges)}
        self.src = np.array(src, dtype=np.int64)
        self.dst = np.array(dst, dtype=np.int64)
        self.cost = np.array([e.cost for e in edges], dtype=np.int64)
        self.res = np.array([e.residual_flow for e in edges], dtype=np.int64)
        self.layers = self._layers(len(order), src, dst)

    @staticmethod
    def _layers(n: int, src: list[int], dst: list[int]) -> list[tuple[int, int, int, int]]:
        """``(first node, end node, first edge, end edge)`` of maximal runs of consecutive nodes with
        no edge inside the run (the residual graph is symmetric: checking a node's neighbours suffices)."""
        nbrs: list[set[int]] = [set() for _ in range(n)]
        for a, b in zip(src, dst, strict=True):
            nbrs[a].add(b)
        first_edge = [0] * (n + 1)
        for a in src:
            first_edge[a + 1] += 1
        for i in range(n):
            first_edge[i + 1] += first_edge[i]
        ranges: list[tuple[int, int, int, int]] = []
        start = 0
        for v in range(1, n + 1):
            if v == n or any(start <= w <= v for w in nbrs[v]):
                ranges.append((start, v, first_edge[start], first_edge[v]))
                start = v
        return [r for r in ranges if r[3] > r[2]]

    def run(self) -> None:
        while True:
            found = self._detect()
            if found is None:
                return
            node, parent_nodes, parent_edges = found
            order = self.order
            pn: dict[int, int | None] = {order[v]: (None if p < 0 else order[p]) for v, p in parent_nodes.items()}
            pe = {order[v]: self.edges[k] for v, k in parent_edges.items()}
            cycle_start = order[node]
            _cancel(cycle_start, pn, pe)
            # refresh the residual capacities that changed
            for e in pe.values():
                for x in (e, e.counter):
                    assert x is not None
                    self.res[self.index[id(x)]] = x.residual_flow

    def _detect(self) -> tuple[int, dict[int, int], dict[int, int]] | None:
        if len(self.edges) < VECTOR_MIN_EDGES:
            return self._detect_plain()
        return self._detect_vector()

    def _detect_plain(self) -> tuple[int, dict[int, int], dict[int, int]] | None:
        # Kafka's loop over flat lists (small graphs: numpy's per-call cost would dominate).  Only the
        # edges of nodes whose distance fell since they were last scanned are tried: distances only
        # fall, so no other edge can relax (Kafka tries them and finds nothing).
        n = len(self.order)
        count = n + 1
        dist = [0] * n
        parent = [-1] * n
        pedge = [-1] * n
        src, dst = self.src.tolist(), self.dst.tolist()
        cost, res = self.cost.tolist(), self.res.tolist()
        out: list[list[int]] = [[] for _ in range(n)]
        for k in range(len(src)):
            if res[k] != 0:
                out[src[k]].append(k)
        dirty = [True] * n
        for i in range(count):
            last = i == count - 1
            changed = False
            for u in range(n):
                if not dirty[u]:
                    continue
                dirty[u] = False
                du = dist[u]
                for k in out[u]:
                    d = du + cost[k]
                    v = dst[k]
                    if d < dist[v]:
                        dist[v] = d
                        parent[v] = u
                        pedge[v] = k
                        if last:
                            return v, dict(enumerate(parent)), dict(enumerate(pedge))
                        dirty[v] = True
                        changed = True
            if not changed:
                return None
        return None

    def _detect_vector(self) -> tuple[int, dict[int, int], dict[int, int]] | None:
        n = len(self.order)
        count = n + 1
        dist = np.zeros(n, dtype=np.int64)
        parent = np.full(n, -1, dtype=np.int64)
        pedge = np.full(n, -1, dtype=np.int64)
        dirty = np.ones(n, dtype=bool)  # distance fell since the node's edges were last tried
        # Residual capacities do not change during one search: keep each layer's usable edges only,
        # grouped by source node (ptr: CSR offsets per node of the layer).
        layers = []
        for nlo, nhi, lo, hi in self.layers:
            k = lo + np.flatnonzero(self.res[lo:hi] > 0)
            if len(k):
                s = self.src[k]
                ptr = np.searchsorted(s, np.arange(nlo, nhi + 1))
                layers.append((nlo, nhi, ptr, k, s, self.dst[k], self.cost[k]))
        for i in range(count):
            last = i == count - 1
            changed = False
            for nlo, nhi, ptr, k_all, s_all, t_all, c_all in layers:
                nodes = np.flatnonzero(dirty[nlo:nhi])
                if not len(nodes):
                    continue
                dirty[nlo:nhi] = False
                if len(nodes) == nhi - nlo:
                    sel: np.ndarray | slice = slice(None)
                else:
                    starts, ends = ptr[nodes], ptr[nodes + 1]
                    lens = ends - starts
                    total = int(lens.sum())
                    if not total:
                        continue
                    # concatenated ranges [start, end) of the dirty nodes, in node order
                    shift = np.repeat(starts - np.cumsum(lens) + lens, lens)
                    sel = shift + np.arange(total)
                s, t, k = s_all[sel], t_all[sel], k_all[sel]
                cand = dist[s] + c_all[sel]
                better = cand < dist[t]
                if not better.any():
                    continue
                changed = True
                idx = np.flatnonzero(better)
                if last:
                    e = int(k[idx[0]])
                    v = int(self.dst[e])
                    parent[v] = self.src[e]
                    pedge[v] = e
                    return v, self._as_dict(parent), self._as_dict(pedge)
                tt = t[idx]
                srt = np.lexsort((cand[idx], tt))  # stable: equal (target, value) keep Kafka's edge order
                tt_s = tt[srt]
                keep = np.ones(len(srt), dtype=bool)
                keep[1:] = tt_s[1:] != tt_s[:-1]
                win = idx[srt[keep]]
                targets = t[win]
                dist[targets] = cand[win]
                parent[targets] = s[win]
                pedge[targets] = k[win]
                dirty[targets] = True
            if not changed:
                return None
        return None

    @staticmethod
    def _as_dict(arr: np.ndarray) -> dict[int, int]:
        return {v: int(x) for v, x in enumerate(arr.tolist())}
