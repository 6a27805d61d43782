"""Starting solutions: largest-first greedy, and shed-and-refill under a cap (a sticky start at any cap).

Both work on the exact engine's integer data (:class:`.local.Data`) and
return ``counts[c, m]`` (classes x members).

* :func:`lpt` -- items, heaviest first, to the eligible member whose load per
  capacity stays least (optionally kept on their previous owner when that is
  no worse than the least-loaded choice plus the item): a balanced start that
  ignores the caps and (mostly) the moved cost.
* :func:`shed_refill` -- the rebalance a careful operator would do at a cap:
  every item stays with its previous owner; an owner above the cap sheds a
  least-cost cover of its excess (:func:`..knapsack.cover`); shed items, orphans and new items go largest first
  to the eligible member with the tightest room that still fits them; an item
  that fits nowhere goes to a random eligible member that then evicts a
  least-cost cover of its excess (items it did not own evict for free) back
  into the queue.  It returns ``None`` when a step budget runs out before everything
  fits: at caps near the max-load bound that is usual.

Examples
--------
Member 0 owns items of loads 5, 4 and 3 (moving them costs 9, 1, 8); member 1
is new.  At a cap of 8, member 0 sheds the 4 (the cheapest cover of its excess):

>>> from solver.consumer.exact.primal.data import Data
>>> d = Data(weights=[5, 4, 3], counts=[1, 1, 1], eligible=[[0, 1]] * 3,
...          cost=[{0: 0}, {0: 0}, {0: 0}], ratio=[1, 1], default_cost=[9, 1, 8])
>>> shed_refill(d, 8).tolist()
[[1, 0], [0, 1], [1, 0]]
"""

from __future__ import annotations

import heapq
import time

import numpy as np

from solver.consumer.exact.knapsack import cover
from solver.consumer.exact.primal.data import Data


def lpt(d: Data, *, sticky: bool = True) -> np.ndarray:
    """Largest-item-first greedy over the eligible members (see the module docstring)."""
    n = len(d.ratio)
    nc = len(d.counts)
    counts = np.zeros((nc, n), dtype=np.int64)
    nl = np.zeros(n, dtype=np.int64)
    ratio = np.asarray(d.ratio, dtype=np.int64)
    dflt = d.default_cost if d.default_cost is not None else [0] * nc
    order = sorted(range(nc), key=lambda c: (-int(d.weights[c]), c))
    for c in order:
        members = np.asarray(d.eligible[c], dtype=np.int64)
        if members.size == 0:
            continue
        w = int(d.weights[c])
        homes = [m for m, k in d.cost[c].items() if k < dflt[c] and m in set(d.eligible[c])]
        home = min(homes, key=lambda m: (d.cost[c][m], m)) if homes else -1
        for _ in range(int(d.counts[c])):
            after = nl[members] + ratio[members] * w
            j = int(np.argmin(after))
            m = int(members[j])
            if sticky and home >= 0 and nl[home] + ratio[home] * w <= int(after[j]) + ratio[home] * w:
                m = home
            counts[c, m] += 1
            nl[m] += ratio[m] * w
    return counts


def shed_refill(d: Data, cap: int, *, seed: int = 0, max_steps: int | None = None,
                exact_cover: bool = True, deadline: float | None = None,
                spent: list[int] | None = None) -> np.ndarray | None:
    """Shed-and-refill at ``cap`` (every ``NL_m <= cap``); ``None`` when the step budget runs out.

    Parameters
    ----------
    d
        The integer model.
    cap
        Largest ``NL_m`` allowed.
    seed
        Seeds the choice of the member that takes an item fitting nowhere.
    max_steps
        Work allowed: placements, and items looked at when shedding (default: 10 per item).
    deadline
        ``time.perf_counter()`` instant after which it gives up (``None``).
    exact_cover
        Shed a least-cost cover of the excess (default), or, as the plain
        greedy does, the items cheapest per unit of load until within the room.
    spent
        If given, the steps this run took are appended to it (a deterministic count of its work).

    Returns
    -------
    numpy.ndarray or None
    """
    result, steps = _shed_refill(d, cap, seed, max_steps, exact_cover, deadline)
    if spent is not None:
        spent.append(steps)
    return result


def _shed_refill(d: Data, cap: int, seed: int, max_steps: int | None, exact_cover: bool,
                 deadline: float | None) -> tuple[np.ndarray | None, int]:
    """:func:`shed_refill`, and the steps it took."""
    n = len(d.ratio)
    nc = len(d.counts)
    rng = np.random.default_rng(seed)
    ratio = [int(r) for r in d.ratio]
    room = [cap // r for r in ratio]  # most load each member may hold
    dflt = list(d.default_cost) if d.default_cost is not None else [0] * nc
    weights = [int(w) for w in d.weights]
    home = [-1] * nc
    home_cost = [0] * nc
    for c in range(nc):
        elig = set(d.eligible[c])
        best = min(((k, m) for m, k in d.cost[c].items() if k < dflt[c] and m in elig), default=None)
        if best is not None:
            home_cost[c], home[c] = best[0], best[1]
    load = [0] * n
    held: list[dict[int, int]] = [{} for _ in range(n)]  # member -> {class: count}
    queue: list[tuple[int, int, int]] = []  # (-weight, tie, class)
    tie = 0
    for c in range(nc):
        k = int(d.counts[c])
        if k <= 0:
            continue
        if home[c] >= 0:
            held[home[c]][c] = k
            load[home[c]] += weights[c] * k
        else:
            for _ in range(k):
                queue.append((-weights[c], tie, c))
                tie += 1

    steps = 0  # work done: placements, and items looked at when shedding

    def keep_cost(c: int, m: int) -> int:
        """Moved cost that taking one item of ``c`` off ``m`` adds (its saving there, if ``m`` is home)."""
        return dflt[c] - d.cost[c].get(m, dflt[c]) if home[c] == m else 0

    def shed(m: int, protect: int = -1) -> None:
        """Bring ``m`` within its room by a cover of least moved cost (``protect``: one item to keep)."""
        nonlocal tie
        if load[m] <= room[m]:
            return
        nonlocal steps
        cls = [c for c in held[m] if weights[c] > 0]
        steps += len(cls) // 16
        items = [(weights[c], keep_cost(c, m), held[m][c] - (1 if c == protect else 0)) for c in cls]
        if exact_cover:
            takes = cover(items, load[m] - room[m])
        else:
            takes = [0] * len(cls)
            excess = load[m] - room[m]
            for j in sorted(range(len(cls)), key=lambda j: (items[j][1] / items[j][0], -items[j][0])):
                t = min(items[j][2], -(-excess // items[j][0]))
                takes[j] = t
                excess -= t * items[j][0]
                if excess <= 0:
                    break
        for c, t in zip(cls, takes, strict=True):
            if t <= 0:
                continue
            held[m][c] -= t
            if held[m][c] == 0:
                del held[m][c]
            load[m] -= weights[c] * t
            for _ in range(t):
                heapq.heappush(queue, (-weights[c], tie, c))
                tie += 1

    heapq.heapify(queue)
    for m in range(n):
        shed(m)
    budget = max_steps if max_steps is not None else 10 * int(sum(int(k) for k in d.counts)) + 1000
    while queue:
        steps += 1
        if steps > budget or (deadline is not None and steps % 64 == 0 and time.perf_counter() > deadline):
            return None, steps
        negw, _, c = heapq.heappop(queue)
        w = -negw
        members = d.eligible[c]
        if not members:
            return None, steps
        fit = [(room[m] - load[m] - w, m) for m in members if load[m] + w <= room[m]]
        if fit:
            m = min(fit)[1]
        else:  # a random member where the item alone fits, which then evicts
            alone = [m for m in members if w <= room[m]]
            if not alone:
                return None, steps
            m = alone[int(rng.integers(len(alone)))]
        held[m][c] = held[m].get(c, 0) + 1
        load[m] += w
        if not fit:
            shed(m, protect=c)
    if any(load[m] > room[m] for m in range(n)):
        return None, steps
    counts = np.zeros((nc, n), dtype=np.int64)
    for m in range(n):
        for c, k in held[m].items():
            counts[c, m] += k
    return counts, steps
