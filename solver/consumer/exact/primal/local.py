"""Local search for large weighted models: near the max-load bound, moving little.

When the class-count model is too large for CP-SAT within the limit (the
engine then restricts every class to a neighbourhood of members), the
solution CP-SAT starts from decides most of the result.  This module builds
that start on the same integer data as the engine (scaled loads ``W_c``,
capacity ratios, move costs per class and member):

1. every item with an eligible previous owner stays on it (moves nothing);
   the others (orphans of members that left, items that cost nothing to move)
   go largest first to the member whose load per capacity stays least;
2. *balance*: while a member's ``NL_m`` exceeds the target (the max-load
   lower bound), move one of its items to a member with room, or swap one of
   its items with a lighter one there; among the moves and swaps that bring it
   within the target, the one that adds the least moved cost wins.  Moves and
   swaps may first add at most 0, then 1, 2, 4, ... moved cost each (cheap
   items do the fine balancing); what excess is left is then spread: the
   most loaded member gives to whichever member keeps the larger of the two
   loads least, even above the target, until no step lowers the max.  If
   that ends above the target, the same again with pair steps too (members
   holding few items try one or two items against none, one or two, where
   single steps rarely fit the room exactly), kept only if its max is lower;
3. *return*: at the max load reached, an item away from its owner goes back
   (alone, or swapped with a lighter item of the owner) whenever that lowers
   the moved cost and keeps both loads within the max.

Everything is exact integer arithmetic, deterministic, and bounded by a
``time.perf_counter()`` deadline; the result is only a start -- the engine's
stages and bounds decide what is proven.

Examples
--------
Two members; member 1 owns the item of load 5 (moving it costs 7), three
orphans of loads 4, 3 and 2 are free to go anywhere:

>>> import numpy as np
>>> from solver.consumer.exact.primal.data import Data
>>> from solver.consumer.exact.primal.local import improve
>>> d = Data(weights=[5, 4, 3, 2], counts=[1, 1, 1, 1], eligible=[[0, 1]] * 4,
...          cost=[{1: 0}, {}, {}, {}], ratio=[1, 1], default_cost=[7, 0, 0, 0])
>>> counts = improve(d, target=7)
>>> [int(x) for x in (counts * np.array([5, 4, 3, 2])[:, None]).sum(axis=0)]
[7, 7]
>>> int(counts[0, 1])  # the owned item stayed
1
"""

from __future__ import annotations

import bisect
import math
import time
from collections.abc import Sequence

import numpy as np

from solver.consumer.exact.primal.data import Data
from solver.consumer.exact.primal.steps import item_pairs, most_room, pick

#: Above this many items the search is skipped (its start alone would be too slow).
MAX_ITEMS = 300_000
#: Members (with the most room) examined per overloaded member.
CANDIDATES = 16
#: Items of a window examined per (item, member) pair.
WINDOW = 8
#: Members holding at most this many items also try moves and swaps of item pairs.
PAIR_ITEMS = 24
#: Candidate steps evaluated per unit of a step budget (``max_steps`` counts steps and this much work).
WORK_CELLS = 2_000


def improve(data: Data, target: int, *, deadline: float | None = None,
            max_steps: int | None = None) -> np.ndarray:
    """A start for the engine: loads near ``target``, little moved cost.

    Parameters
    ----------
    data
        The integer model.
    target
        The max load (``NL`` units) to reach, usually its lower bound.
    deadline
        ``time.perf_counter()`` instant to stop at (default: no limit).
    max_steps
        Cap on the moves and swaps of steps 2 and 3 (default: ten per item);
        with ``deadline=None`` the result depends on the data only.

    Returns
    -------
    numpy.ndarray
        ``counts[c, m]`` (classes x members), every item placed on an eligible member.
    """
    s = _Search(data, deadline, max_steps)
    s.place_start(target)
    s.balance(target)
    if s.max_nl() > target and not s.late():
        # stuck above the bound: again from the start with pair steps too, kept only if it gets lower
        # (a pair-balanced start that is not better only changes where CP-SAT starts from)
        p = _Search(data, deadline, s.steps_left)
        p.place_start(target)
        p.balance(target, pairs=True)
        if p.max_nl() < s.max_nl():
            s = p
    s.give_back(max(target, s.max_nl()))
    return s.counts()


def level(data: Data, counts: np.ndarray, cap: int, moves_cap: int, *, deadline: float | None = None,
          max_steps: int | None = None) -> np.ndarray:
    """Lower the sum of squared loads of ``counts`` within a max load and a moved-cost budget.

    The most loaded member gives (a move, or a swap with a lighter item) to
    the least loaded members while that lowers the sum of ``NL_m**2``, keeps
    every ``NL_m <= cap`` and the total moved cost ``<= moves_cap``.

    Examples
    --------
    >>> import numpy as np
    >>> d = Data(weights=[4, 3, 2, 1], counts=[1, 1, 1, 1], eligible=[[0, 1]] * 4, cost=[{}] * 4, ratio=[1, 1])
    >>> start = np.array([[1, 0], [1, 0], [1, 0], [0, 1]])  # loads 9 and 1
    >>> out = level(d, start, cap=9, moves_cap=0)
    >>> [int(x) for x in (out * np.array([4, 3, 2, 1])[:, None]).sum(axis=0)]
    [5, 5]
    """
    s = _Search(data, deadline, max_steps)
    s.place_counts(counts)
    s.level(cap, moves_cap)
    return s.counts()


class _Search:
    """Items, their places and the members' sorted contents."""

    def __init__(self, d: Data, deadline: float | None, max_steps: int | None) -> None:
        self.d = d
        self.deadline = deadline if deadline is not None else math.inf
        self.steps_left = max_steps if max_steps is not None else 10 * int(sum(d.counts)) + 100
        self.journal: list[tuple[int, int]] | None = None  # (item, where it was) while a chain is tried
        self.n = len(d.ratio)
        self.cls = np.repeat(np.arange(len(d.counts)), np.asarray(d.counts, dtype=np.int64)).tolist()
        self.w = [int(d.weights[c]) for c in self.cls]
        self.at = [-1] * len(self.cls)
        self.load = [0] * self.n
        self.r = [int(x) for x in d.ratio]
        self.r_a = np.asarray(self.r, dtype=np.int64)
        self.held: list[list[tuple[int, int]]] = [[] for _ in range(self.n)]  # sorted (w, item)
        # eligibility per class (classes of one eligible set share its list: one set and one row each), as
        # sets and as a (classes x members) table for vectorised checks
        sets: dict[int, frozenset[int]] = {}
        rows: dict[int, np.ndarray] = {}
        self.elig = []
        self.elig_mat = np.zeros((len(d.counts), self.n), dtype=bool)
        for c, e in enumerate(d.eligible):
            key = id(e)
            if key not in sets:
                sets[key] = frozenset(e)
                row = np.zeros(self.n, dtype=bool)
                row[list(e)] = True
                rows[key] = row
            self.elig.append(sets[key])
            self.elig_mat[c] = rows[key]
        self.cls_a = np.asarray(self.cls, dtype=np.int64)
        dflt = [d.default_cost[c] if d.default_cost is not None else 0 for c in range(len(d.counts))]
        # per item: its class's costs that differ from the default, and the default
        self.cd = [d.cost[c] for c in self.cls]
        self.dflt = [dflt[c] for c in self.cls]
        # the member where an item costs least (its previous owner when it has one); -1: anywhere is the same
        self.home: list[int] = []
        for c in range(len(d.counts)):
            own = [(k, m) for m, k in d.cost[c].items() if k < dflt[c] and m in self.elig[c]]
            self.home.append(min(own)[1] if own else -1)
        self.cache: dict[int, np.ndarray] = {}
        self.wa = np.asarray(self.w, dtype=np.int64)
        self.dflt_a = np.asarray(self.dflt, dtype=np.int64)
        home_i = [self.home[c] for c in self.cls]
        self.home_a = np.asarray(home_i, dtype=np.int64)
        self.home_cost = np.asarray([self.cd[i].get(h, self.dflt[i]) if h >= 0 else self.dflt[i]
                                     for i, h in enumerate(home_i)], dtype=np.int64)
        # items whose cost differs from the default on more than their home (co-partition units)
        multi_c = [sum(1 for k in d.cost[c].values() if k != dflt[c]) > 1 for c in range(len(d.counts))]
        self.multi = np.asarray([multi_c[c] for c in self.cls], dtype=bool)
        self.any_multi = bool(self.multi.any())
        self.all_eligible = all(len(e) == self.n for e in self.elig)

    # ---- bookkeeping
    def _put(self, i: int, m: int) -> None:
        if self.journal is not None:
            self.journal.append((i, self.at[i]))
        self.at[i] = m
        self.cache.pop(m, None)
        self.load[m] += self.w[i]
        bisect.insort(self.held[m], (self.w[i], i))

    def _take(self, i: int) -> None:
        m = self.at[i]
        if self.journal is not None:
            self.journal.append((i, m))
        lst = self.held[m]
        del lst[bisect.bisect_left(lst, (self.w[i], i))]
        self.cache.pop(m, None)
        self.load[m] -= self.w[i]
        self.at[i] = -1

    def nl(self, m: int) -> int:
        return self.r[m] * self.load[m]

    def max_nl(self) -> int:
        return max((self.nl(m) for m in range(self.n)), default=0)

    def cost(self, i: int, m: int) -> int:
        return self.cd[i].get(m, self.dflt[i])

    def late(self) -> bool:
        self.steps_left -= 1
        return self.steps_left < 0 or time.perf_counter() > self.deadline

    def charge(self, cells: int) -> None:
        """Count the work of evaluating ``cells`` candidate steps (a step budget then bounds the time too)."""
        self.steps_left -= cells // WORK_CELLS

    def counts(self) -> np.ndarray:
        out = np.zeros((len(self.d.counts), self.n), dtype=np.int64)
        np.add.at(out, (np.asarray(self.cls, dtype=np.int64), np.asarray(self.at, dtype=np.int64)), 1)
        return out

    # ---- step 1
    def place_start(self, target: int) -> None:
        free = []
        for i, c in enumerate(self.cls):
            if self.home[c] >= 0:
                self._put(i, self.home[c])
            else:
                free.append(i)
        free.sort(key=lambda i: (-self.w[i], i))
        for i in free:
            members = self.d.eligible[self.cls[i]]
            # best fit under the target (the tightest room that still takes it), else the least loaded
            fits = [m for m in members if self.r[m] * (self.load[m] + self.w[i]) <= target]
            if fits:
                m = min(fits, key=lambda m: (target - self.r[m] * (self.load[m] + self.w[i]), m))
            else:
                m = min(members, key=lambda m: (self.r[m] * (self.load[m] + self.w[i]), m))
            self._put(i, m)

    def place_counts(self, counts: np.ndarray) -> None:
        """Place the items as ``counts[c, m]`` says (items of a class in order)."""
        first = np.concatenate([[0], np.cumsum(np.asarray(self.d.counts, dtype=np.int64))]).tolist()
        for c, m in zip(*np.nonzero(np.asarray(counts)), strict=True):
            for _ in range(int(counts[c, m])):
                self._put(first[c], int(m))
                first[c] += 1

    # ---- step 2
    def room(self, m: int, cap: int) -> int:
        """Load ``m`` can still take without ``NL_m`` exceeding ``cap``."""
        return (cap - self.nl(m)) // self.r[m]

    def _rooms(self, cap: int) -> np.ndarray:
        """:meth:`room` of every member (one array pass: a step's candidates are picked among all members)."""
        load = np.fromiter(self.load, dtype=np.int64, count=self.n)
        return (cap - self.r_a * load) // self.r_a

    def balance(self, target: int, *, pairs: bool = False) -> None:
        # cheap moves first: a move or swap may add at most ``limit`` moved cost, raised when stuck
        top = max((max([self.dflt[i], *self.cd[i].values()]) for i in range(len(self.cls))), default=0)
        limits = sorted({0, 1, 2, 4, 8, 16, 32, 64, 128, 256} | {2 * top + 1})
        limits = [x for x in limits if x <= 2 * top + 1]
        for limit in limits:
            stuck: set[int] = set()
            while not self.late():
                over = [m for m in range(self.n) if self.nl(m) > target and m not in stuck]
                if not over:
                    break
                a = max(over, key=lambda m: (self.nl(m), -m))
                if self._fix(a, target, limit) is None and (not pairs or self._fix_pairs(a, target, limit) is None):
                    stuck.add(a)
            if not any(self.nl(m) > target for m in range(self.n)) or self.late():
                return
        # the excess left sits on few members while the room is spread thin: lower the max step by step,
        # letting the receiver go above the target (but below the giver)
        while not self.late():
            a = max(range(self.n), key=lambda m: (self.nl(m), -m))
            if self.nl(a) <= target or not self._spread(a, target):
                return

    def _fix(self, a: int, target: int, limit: int, only: Sequence[int] | None = None) -> int | None:
        """One move or swap out of ``a`` adding at most ``limit`` moved cost that lowers its excess over ``target``.

        Of the steps that bring ``a`` within ``target`` the cheapest wins; if there is none, the one that
        lowers the excess most (then the cheapest).  Returns the moved cost it added, ``None`` if there
        is no step.  ``only``: the members to try (with the few that have the most room); default: the
        members with the most room and the owners of ``a``'s items.
        """
        need = -(-(self.nl(a) - target) // self.r[a])
        room = self._rooms(target)
        top = most_room(room, a, 4 if only is not None else CANDIDATES)
        if not top:
            return None
        if only is not None:
            cands = [b for b in only if b != a and room[b] > 0]
            cands += [b for b in top if b not in cands]
        else:
            cands = top
            homes = {self.home[self.cls[i]] for _, i in self.held[a]} - {a, -1}
            cands += sorted(b for b in homes if b not in cands and room[b] > 0)
        got = self._options(a, cands, room[cands].tolist(), limit)
        if got is None:
            return None
        ia, J, B, D, dc, ok = got
        r, col = pick(D, dc, ok, need)
        i, j, b = int(ia[r]), int(J[col]), int(B[col])
        self._apply(a, i, j, b)
        return int(dc[r, col])

    def _options(self, a: int, cands: Sequence[int], room_b: Sequence[int], limit: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
        """Every move (``J = -1``) and swap from ``a`` to ``cands``: the load ``D`` it shifts (at most the
        member's room), the moved cost ``dc`` it adds (at most ``limit``) and ``ok`` where both hold."""
        ia = self._items(a)
        if ia.size == 0 or not cands:
            return None
        # columns: every item on a candidate member, plus one "no item" column per member (a move)
        held = [self._items(b) for b in cands]
        cb = np.asarray(cands, dtype=np.int64)
        cr = np.asarray(room_b, dtype=np.int64)
        sizes = [ib.size for ib in held]
        J = np.concatenate([np.full(len(cands), -1, dtype=np.int64), *held])
        B = np.concatenate([cb, np.repeat(cb, sizes)])
        rb = np.concatenate([cr, np.repeat(cr, sizes)])
        has_j = J >= 0
        Jc = np.where(has_j, J, 0)
        wj = np.where(has_j, self.wa[Jc], 0)
        self.charge(ia.size * J.size)
        D = self.wa[ia][:, None] - wj[None, :]  # load leaving a (and reaching b)
        ok = (D >= 1) & (rb[None, :] >= D)
        dc = (self._cost_at(ia[:, None], B[None, :]) - self._cost_at(ia, a)[:, None]
              + np.where(has_j, self._cost_at(Jc, a) - self._cost_at(Jc, B), 0)[None, :])
        ok &= dc <= limit
        if not self.all_eligible:
            ok &= self._eligible(ia[:, None], B[None, :]) & np.where(has_j, self._eligible(Jc, a), True)[None, :]
        if not ok.any():
            return None
        return ia, J, B, D, dc, ok

    def _apply(self, a: int, i: int, j: int, b: int) -> None:
        """Move ``i`` from ``a`` to ``b`` (and ``j`` from ``b`` to ``a`` unless ``j < 0``)."""
        self._take(i)
        if j >= 0:
            self._take(j)
            self._put(j, a)
        self._put(i, b)

    def _fix_pairs(self, a: int, target: int, limit: int) -> int | None:
        """Like :meth:`_fix` with one or two items leaving ``a`` and none, one or two coming back.

        For members holding few items (at most :data:`PAIR_ITEMS`), where single moves and swaps
        rarely fit the room exactly.
        """
        ia = self._items(a)
        if ia.size == 0 or ia.size > PAIR_ITEMS:
            return None
        need = -(-(self.nl(a) - target) // self.r[a])
        cands = [b for b in most_room(self._rooms(target), a, CANDIDATES) if self._items(b).size <= PAIR_ITEMS]
        if not cands:
            return None
        ga = item_pairs(ia, with_empty=False)
        best: tuple[tuple[int, int, int], tuple[list[int], list[int], int]] | None = None
        for b in cands:
            ib = self._items(b)
            gb = item_pairs(ib, with_empty=True)
            self.charge(ga.shape[0] * gb.shape[0])
            wa = self.wa[ga].sum(axis=1, where=ga >= 0)
            wb = self.wa[np.maximum(gb, 0)].sum(axis=1, where=gb >= 0)
            D = wa[:, None] - wb[None, :]
            rb = self.room(b, target)
            ok = (D >= 1) & (rb >= D)
            if not self.all_eligible:
                ok &= self._group_eligible(ga, b)[:, None] & self._group_eligible(gb, a)[None, :]
            if not ok.any():
                continue
            ca = (np.where(ga >= 0, self._cost_at(np.maximum(ga, 0), b) - self._cost_at(np.maximum(ga, 0), a), 0)
                  .sum(axis=1))
            cb = (np.where(gb >= 0, self._cost_at(np.maximum(gb, 0), a) - self._cost_at(np.maximum(gb, 0), b), 0)
                  .sum(axis=1))
            dc = ca[:, None] + cb[None, :]
            ok &= dc <= limit
            if not ok.any():
                continue
            r, col = pick(D, dc, ok, need)
            key = (0 if D[r, col] >= need else 1, int(dc[r, col]) if D[r, col] >= need else -int(D[r, col]),
                   int(dc[r, col]))
            if best is None or key < best[0]:
                best = (key, ([int(i) for i in ga[r] if i >= 0], [int(j) for j in gb[col] if j >= 0], b))
        if best is None:
            return None
        out, back, b = best[1]
        for i in out:
            self._take(i)
        for j in back:
            self._take(j)
            self._put(j, a)
        for i in out:
            self._put(i, b)
        return best[0][2]

    def _items(self, m: int) -> np.ndarray:
        """The items on ``m`` (cached until ``m`` changes)."""
        arr = self.cache.get(m)
        if arr is None:
            arr = np.fromiter((i for _, i in self.held[m]), dtype=np.int64, count=len(self.held[m]))
            self.cache[m] = arr
        return arr

    def _cost_at(self, items: np.ndarray, members: np.ndarray | int) -> np.ndarray:
        """Moved cost of ``items`` on ``members`` (broadcast)."""
        out = np.where(self.home_a[items] == members, self.home_cost[items], self.dflt_a[items])
        if self.any_multi:
            it, mb = np.broadcast_arrays(items, members)
            for idx in zip(*np.nonzero(self.multi[it]), strict=True):
                i, m = int(it[idx]), int(mb[idx])
                out[idx] = self.cd[i].get(m, self.dflt[i])
        return out

    def _eligible(self, items: np.ndarray, members: np.ndarray | int) -> np.ndarray:
        return np.asarray(self.elig_mat[self.cls_a[items], members])

    def _group_eligible(self, groups: np.ndarray, m: int) -> np.ndarray:
        """Rows of :func:`.steps.item_pairs` whose every item (``-1``: none) may go to ``m``."""
        ok = self.elig_mat[self.cls_a[np.maximum(groups, 0)], m]
        return np.asarray(np.where(groups >= 0, ok, True).all(axis=1))

    def _spread(self, a: int, target: int) -> bool:
        """The move or swap out of ``a`` whose larger resulting load is least (then cheapest)."""
        top = self.nl(a)
        rooms = sorted(((top - 1 - self.nl(b)) // self.r[b], b) for b in range(self.n) if b != a)
        cands = [b for rm, b in reversed(rooms[-CANDIDATES:]) if rm > 0]
        best: tuple[tuple[int, int], tuple[int, int, int]] | None = None
        for b in cands:
            rb = (top - 1 - self.nl(b)) // self.r[b]
            held_b = self.held[b]
            self.charge(len(self.held[a]) * (WINDOW + 1) * 20)  # pure-Python loop: costlier per cell
            for wi, i in self.held[a]:
                if b not in self.elig[self.cls[i]]:
                    continue
                dci = self.cost(i, b) - self.cost(i, a)
                opts = [(wi, -1)] if wi <= rb else []
                lo = bisect.bisect_left(held_b, (wi - rb, -1))
                hi = bisect.bisect_left(held_b, (wi, -1))
                opts += [(wi - wj, j) for wj, j in held_b[lo:min(hi, lo + WINDOW)]
                         if a in self.elig[self.cls[j]]]
                for dw, j in opts:
                    peak = max(self.r[a] * (self.load[a] - dw), self.r[b] * (self.load[b] + dw))
                    if peak >= top:
                        continue
                    dc = dci + (self.cost(j, a) - self.cost(j, b) if j >= 0 else 0)
                    key = (dc, max(peak, target))
                    if best is None or key < best[0]:
                        best = (key, (i, j, b))
        if best is None or best[0][1] >= top:
            return False
        i, j, b = best[1]
        self._take(i)
        if j >= 0:
            self._take(j)
            self._put(j, a)
        self._put(i, b)
        return True

    # ---- step 3
    def give_back(self, cap: int, depth: int = 3) -> None:
        """Send items home while the moved cost falls: alone, or as a short chain of fixes."""
        improved = True
        while improved and not self.late():
            improved = False
            order = sorted((-(self.cost(i, self.at[i]) - self.cost(i, self.home[self.cls[i]])), i)
                           for i in range(len(self.cls))
                           if self.home[self.cls[i]] >= 0 and self.at[i] != self.home[self.cls[i]])
            for neg_gain, i in order:
                if self.late():
                    return
                if neg_gain < 0 and self.at[i] != self.home[self.cls[i]] and self._home_chain(i, cap, depth):
                    improved = True

    def _home_chain(self, i: int, cap: int, depth: int) -> bool:
        """Move ``i`` home, then fix whoever is over ``cap`` (at most ``depth`` steps); undo unless cheaper."""
        b, o = self.at[i], self.home[self.cls[i]]
        delta = self.cost(i, o) - self.cost(i, b)
        self.journal = []
        self._take(i)
        self._put(i, o)
        ok = True
        for _ in range(depth):
            if self.nl(o) <= cap and all(self.nl(m) <= cap for m in self.touched()):
                break
            a = max(self.touched() | {o}, key=lambda m: (self.nl(m), -m))
            spent = self._fix(a, cap, -delta - 1, only=[b])
            if spent is None:
                ok = False
                break
            delta += spent
        ok = ok and delta < 0 and all(self.nl(m) <= cap for m in self.touched() | {o})
        journal, self.journal = self.journal, None
        if not ok:
            for item, where in reversed(journal):
                if self.at[item] >= 0:
                    self._take(item)
                if where >= 0:
                    self._put(item, where)
        return ok

    def touched(self) -> set[int]:
        """Members an open chain changed."""
        out = set()
        for item, _ in self.journal or ():
            if self.at[item] >= 0:
                out.add(self.at[item])
        return out

    # ---- sum of squares
    def level(self, cap: int, moves_cap: int) -> None:
        """Lower the sum of squared loads with moves and swaps that keep every load within ``cap`` and the
        moved cost within ``moves_cap``: the most loaded members give to the least loaded ones."""
        spent = sum(self.cost(i, self.at[i]) for i in range(len(self.cls)))
        stuck: set[int] = set()
        while not self.late():
            order = sorted((m for m in range(self.n) if m not in stuck), key=lambda m: (-self.nl(m), m))
            if not order:
                return
            a = order[0]
            # only members that may take one of a's items can lower its load
            reach = set().union(*(self.elig[self.cls[int(i)]] for i in self._items(a).tolist()))
            below = sorted((b for b in reach if b != a and self.nl(b) < self.nl(a) - 1), key=lambda b: (self.nl(b), b))
            cands = below[:CANDIDATES]
            got = self._options(a, cands, [self.room(b, cap) for b in cands], moves_cap - spent)
            if got is None:
                stuck.add(a)
                continue
            ia, J, B, D, dc, ok = got
            ra = self.r[a]
            rb = np.asarray(self.r, dtype=np.float64)[B][None, :]
            nla, nlb = float(self.nl(a)), np.asarray([self.nl(int(b)) for b in B], dtype=np.float64)[None, :]
            gain = (D * ra) * (D * ra - 2 * nla) + (D * rb) * (D * rb + 2 * nlb)  # change of the two squares
            gain = np.where(ok, gain, np.inf)
            flat = int(np.argmin(gain))
            r, col = divmod(flat, D.shape[1])
            i, j, b = int(ia[r]), int(J[col]), int(B[col])
            d = int(D[r, col])
            na, nb = self.nl(a), self.nl(b)
            if not np.isfinite(gain[r, col]) or (na - ra * d) ** 2 + (nb + self.r[b] * d) ** 2 >= na * na + nb * nb:
                stuck.add(a)
                continue
            self._apply(a, i, j, b)
            spent += int(dc[r, col])
            stuck.discard(b)


def give_back(data: Data, counts: np.ndarray, cap: int, *, deadline: float | None = None,
              max_steps: int | None = None) -> np.ndarray:
    """``counts`` with items sent home (alone or by short chains of fixes) while that lowers the moved cost
    and keeps every ``NL_m <= cap``.

    Examples
    --------
    >>> import numpy as np
    >>> d = Data(weights=[2, 2], counts=[1, 1], eligible=[[0, 1]] * 2, cost=[{0: 0}, {}], ratio=[1, 1],
    ...          default_cost=[4, 0])
    >>> give_back(d, np.array([[0, 1], [1, 0]]), cap=2).tolist()  # the owned item goes home, the free one leaves
    [[1, 0], [0, 1]]
    """
    s = _Search(data, deadline, max_steps)
    s.place_counts(counts)
    s.give_back(cap)
    return s.counts()
