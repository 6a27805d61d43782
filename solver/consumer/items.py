"""Items and item classes shared by the exact engines (flow and CP-SAT).

An *item* is what one member receives as a whole: a single topic-partition,
or a co-partition unit (partition ``i`` of every topic of a co-partition
group, KIP-315).  Items are aggregated into *classes*: items with the same
eligible members, the same load, the same previous owners with the same move
costs and the same replica racks.  Two items of one class cost exactly the same
wherever they go, so an optimal solution only needs to know *how many* items
of each class go to each member; which ones is decided afterwards
(deterministically, in topic and partition order) by :func:`expand`.

Not-joinable partitions (at or above a co-partition group's smallest
partition count) are ordinary single items eligible to their topic's
subscribers: assigning them is never worse than leaving them idle, and the
reference optima (``scenarios/optimal``) count them in the loads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from solver.errors import InfeasibleError
from solver.model import Assignment, Instance
from solver.model.semantics import GroupView
from solver.scaling import decimal_scale, rational


def exact_sum(columns: list[np.ndarray]) -> np.ndarray:
    """Element-wise sum of float columns, each value read as the rational it stands for (:func:`rational`):
    the float nearest the exact sum, so a co-partition unit of weights ``1.37`` and ``2.11`` weighs ``3.48``,
    not ``3.4800000000000004`` (which no small integer scale can represent exactly).

    >>> exact_sum([np.array([1.37, 0.1]), np.array([2.11, 0.2])]).tolist()
    [3.48, 0.3]
    """
    if not columns:
        return np.zeros(0)
    stacked = np.stack(columns)
    if np.all(stacked == np.round(stacked)):
        return stacked.sum(axis=0)  # integers (below 2**53): the float sum is exact
    d = decimal_scale(stacked.ravel())
    scaled = np.round(stacked * d)
    if np.all(np.abs(scaled) < 2**53) and np.all(scaled / d == stacked):
        return scaled.sum(axis=0) / d  # decimals: an exact integer sum, one correctly rounded division
    return np.array([float(sum((rational(float(v)) for v in stacked[:, i]), Fraction(0)))
                     for i in range(stacked.shape[1])], dtype=np.float64)


@dataclass
class ItemClasses:
    """Items of one instance, aggregated into classes.

    Attributes
    ----------
    n_members
        Number of members (indices refer to ``instance.members``).
    eligsets
        Distinct eligible member sets (sorted index arrays).
    cls_elig
        Class -> index into ``eligsets``.
    count
        Class -> number of items.
    weight
        Class -> load of one item (sum of its topic-partitions' weights).
    size
        Class -> number of topic-partitions in one item.
    owners
        Class -> tuple of ``(member, owned move cost)``: the item's
        topic-partitions previously owned by ``member`` and their total move cost.
    owned_cost
        Class -> total move cost of the item's previously owned topic-partitions
        (what moving the whole item to a non-owner costs).
    racksig
        Class -> index into ``racksigs``.
    racksigs
        Distinct rack signatures: per topic-partition of the item, the frozenset
        of replica racks, or ``None`` when its topic lists none.
    chunks
        ``(kind, ref, start, stop)``: items ``start:stop`` are single
        partitions of topic ``topics[ref]`` (kind ``0``) or units of
        co-partition group ``ref`` (kind ``1``).
    item_part, item_class
        Flat per-item arrays: the partition (unit) number and the class.
    topics
        Topic names (index = ``item_ref`` for singles).
    not_joinable
        Topic-partitions of co-partition topics beyond the group limit (counted
        only for information; they are single items here).
    cls_topic
        With ``per_topic`` classes: class -> topic index (single partitions)
        or ``-1 - g`` (units of co-partition group ``g``); else ``None``.
    """

    n_members: int
    eligsets: list[np.ndarray]
    cls_elig: np.ndarray
    count: np.ndarray
    weight: np.ndarray
    size: np.ndarray
    owners: list[tuple[tuple[int, float], ...]]
    owned_cost: np.ndarray
    racksig: np.ndarray
    racksigs: list[tuple[frozenset[str] | None, ...]]
    chunks: list[tuple[int, int, int, int]]
    item_part: np.ndarray
    item_class: np.ndarray
    topics: list[str]
    groups: list[tuple[str, ...]]
    not_joinable: int = 0
    cls_topic: np.ndarray | None = None
    _rack_cache: dict[tuple[int, str | None], int] = field(default_factory=dict)

    @property
    def n_classes(self) -> int:
        """Number of classes."""
        return int(self.count.size)

    @property
    def total_items(self) -> int:
        """Number of items."""
        return int(self.count.sum())

    def rack_cost(self, cls: int, rack: str | None) -> int:
        """Topic-partitions of one item of class ``cls`` with no replica on ``rack``."""
        sig = int(self.racksig[cls])
        key = (sig, rack)
        hit = self._rack_cache.get(key)
        if hit is None:
            hit = 0
            if rack is not None:
                hit = sum(1 for s in self.racksigs[sig] if s is not None and rack not in s)
            self._rack_cache[key] = hit
        return hit

    def eligible_count(self) -> np.ndarray:
        """Member -> number of items it is eligible for."""
        out = np.zeros(self.n_members, dtype=np.int64)
        per_set = np.bincount(self.cls_elig, weights=self.count, minlength=len(self.eligsets))
        for e, members in enumerate(self.eligsets):
            out[members] += int(per_set[e])
        return out


class _Interner:
    """Dense ids for hashable keys, in first-seen order."""

    def __init__(self) -> None:
        self.ids: dict[object, int] = {}
        self.keys: list[object] = []

    def __call__(self, key: object) -> int:
        i = self.ids.get(key)
        if i is None:
            i = len(self.keys)
            self.ids[key] = i
            self.keys.append(key)
        return i


def fast_subscribers(instance: Instance) -> dict[str, tuple[int, ...]]:
    """Topic -> indices of its subscribers (ascending), grouping members by subscription.

    Same result as :func:`solver.model.semantics.subscribers`; members with the same
    subscription are handled once, which matters for thousands of members x
    hundreds of topics.
    """
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, m in enumerate(instance.members):
        groups.setdefault(m.topics, []).append(i)
    per: dict[str, list[np.ndarray]] = {t: [] for t in instance.topics}
    for topics, idx in groups.items():
        arr = np.asarray(idx, dtype=np.int64)
        for t in set(topics):
            if t in per:
                per[t].append(arr)
    out: dict[str, tuple[int, ...]] = {}
    cache: dict[tuple[int, ...], tuple[int, ...]] = {}
    for t, arrs in per.items():
        key = tuple(id(a) for a in arrs)
        hit = cache.get(key)
        if hit is None:
            hit = tuple(np.sort(np.concatenate(arrs)).tolist()) if arrs else ()
            cache[key] = hit
        out[t] = hit
    return out


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique values, inverse) of a 1-D array."""
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, inv.reshape(-1).astype(np.int64)


def build_classes(
    instance: Instance, view: GroupView | None = None, not_joinable: bool = True, per_topic: bool = False,
) -> ItemClasses:
    """Aggregate the items of ``instance`` into classes.

    Parameters
    ----------
    instance
        Consumer-protocol instance.
    view
        Pre-computed group view.
    not_joinable
        Include not-joinable partitions as single items (default) or leave
        them out.
    per_topic
        Never merge items of different topics (or co-partition groups) into
        one class: needed by per-topic objectives (``topic_balance``).

    Returns
    -------
    ItemClasses

    Raises
    ------
    InfeasibleError
        When a co-partition group has subscribers but no member subscribes
        to all of its topics (no valid co-partitioned assignment exists).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4},
    ...     "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1]}},
    ...                 {"id": "b", "topics": ["T"]}]})
    >>> ic = build_classes(inst)
    >>> ic.count.tolist(), ic.owners
    ([2, 2], [(), ((0, 1.0),)])
    """
    view = view or GroupView(instance)
    members = instance.members
    prev = view.previous_owners
    subs = fast_subscribers(instance)
    elig_ids = _Interner()
    rack_ids = _Interner()
    sig_ids = _Interner()
    topic_names = list(instance.topics)
    tindex = {t: i for i, t in enumerate(topic_names)}
    groups = [tuple(g) for g in instance.copartition]

    # Per class, accumulated from the per-topic / per-group pieces.
    key_ids = _Interner()
    cls_count: list[int] = []
    cls_fam: list[int] = []
    cls_info: list[tuple[int, float, int, tuple[tuple[int, float], ...], float, int]] = []
    item_chunks: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # kind, ref, parts, class

    def add_classes(kind: int, ref: int, parts: np.ndarray, keys: list[tuple], inv: np.ndarray,
                    infos: list[tuple]) -> None:
        local = np.empty(len(keys), dtype=np.int64)
        for j, (k, info) in enumerate(zip(keys, infos, strict=True)):
            c = key_ids(k)
            if c == len(cls_count):
                cls_count.append(0)
                cls_fam.append(-1 - ref)
                cls_info.append(info)
            local[j] = c
        cls_of = local[inv]
        counts = np.bincount(inv, minlength=len(keys))
        for j in range(len(keys)):
            cls_count[int(local[j])] += int(counts[j])
        item_chunks.append((kind, ref, parts, cls_of))

    in_group = view.group_of
    # ---- single partitions (topics outside groups, and not-joinable ones), keyed in bulk:
    # one integer key per partition from (eligible set, owner, weight, move cost, racks)
    s_topic: list[int] = []
    s_parts: list[np.ndarray] = []
    c_e: list[np.ndarray] = []
    c_o: list[np.ndarray] = []
    c_w: list[np.ndarray] = []
    c_mc: list[np.ndarray] = []
    c_rk: list[np.ndarray] = []
    c_t: list[np.ndarray] = []
    for t, topic in instance.topics.items():
        if not subs[t]:
            continue
        start = view.limits[t] if t in in_group else 0
        n = topic.partitions
        if start >= n or (start > 0 and not not_joinable):
            continue
        k = n - start
        s_topic.append(tindex[t])
        s_parts.append(np.arange(start, n, dtype=np.int64))
        c_e.append(np.full(k, elig_ids(tuple(subs[t])), dtype=np.int64))
        c_o.append(prev[t][start:] + 1)
        c_w.append(topic.weights[start:] if topic.weights is not None else np.ones(k))
        c_mc.append(topic.move_costs[start:] if topic.move_costs is not None else np.ones(k))
        if topic.racks is not None:
            c_rk.append(np.array([rack_ids(frozenset(r)) for r in topic.racks[start:]], dtype=np.int64) + 1)
        else:
            c_rk.append(np.zeros(k, dtype=np.int64))
        c_t.append(np.full(k, tindex[t] if per_topic else 0, dtype=np.int64))
    if s_topic:
        cols: list[np.ndarray] = []
        decoders: list[np.ndarray | None] = []
        for chunk_list, is_float in ((c_e, False), (c_o, False), (c_w, True), (c_mc, True), (c_rk, False),
                                     (c_t, False)):
            col = np.concatenate(chunk_list)
            if col.size and col.min() == col.max():
                uniq_c, inv_c = col[:1], np.zeros(col.size, dtype=np.int64)
            elif is_float:
                uniq_c, inv_c = _factorize(col)
            else:
                uniq_c, inv_c = np.arange(int(col.max()) + 1), col.astype(np.int64)
            cols.append(inv_c)
            decoders.append(uniq_c)
        radix = [int(d.size) if d is not None else 1 for d in decoders]
        if math.prod(radix) < 2**62:
            key = np.zeros(cols[0].size, dtype=np.int64)
            for col, r in zip(cols, radix, strict=True):
                key = key * r + col
            if math.prod(radix) <= 4 * key.size + 1024:
                present = np.zeros(math.prod(radix), dtype=bool)
                present[key] = True
                ukeys = np.flatnonzero(present)
                dense = np.cumsum(present) - 1
                inv = dense[key]
            else:
                ukeys, inv = _factorize(key)
            rows = np.empty((ukeys.size, len(cols)), dtype=np.int64)
            rest = ukeys.copy()
            for j in range(len(cols) - 1, -1, -1):
                rows[:, j] = rest % radix[j]
                rest //= radix[j]
        else:
            rows, inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
            inv = inv.reshape(-1)
        local = np.empty(rows.shape[0], dtype=np.int64)
        for j, row in enumerate(rows.tolist()):
            e = int(decoders[0][row[0]])  # type: ignore[index]
            o = int(decoders[1][row[1]]) - 1  # type: ignore[index]
            wv = float(decoders[2][row[2]])  # type: ignore[index]
            mv = float(decoders[3][row[3]])  # type: ignore[index]
            r = int(decoders[4][row[4]]) - 1  # type: ignore[index]
            ti = int(decoders[5][row[5]])  # type: ignore[index]
            rsig: tuple[frozenset[str] | None, ...] = (rack_ids.keys[r] if r >= 0 else None,)  # type: ignore[assignment]
            sig_id = sig_ids(rsig)
            owners: tuple[tuple[int, float], ...] = ((o, mv),) if o >= 0 else ()
            c = key_ids((0, e, wv, owners, sig_id, ti))
            if c == len(cls_count):
                cls_count.append(0)
                cls_fam.append(ti)
                cls_info.append((e, wv, 1, owners, mv if o >= 0 else 0.0, sig_id))
            local[j] = c
        cls_all = local[inv]
        per = np.bincount(inv, minlength=rows.shape[0])
        for j in range(rows.shape[0]):
            cls_count[int(local[j])] += int(per[j])
        pos = 0
        for ti, parts in zip(s_topic, s_parts, strict=True):
            item_chunks.append((0, ti, parts, cls_all[pos:pos + parts.size]))
            pos += parts.size

    # ---- co-partition units
    for g, group in enumerate(groups):
        if not any(subs[t] for t in group):
            continue
        lim = view.limits[group[0]]
        if lim == 0:
            continue
        common = set.intersection(*(set(subs[t]) for t in group))
        elig = tuple(sorted(common))
        if not elig:
            raise InfeasibleError(
                f"co-partition group {list(group)}: no member subscribes to all of its topics, "
                "so its partitions cannot be assigned co-partitioned"
            )
        e = elig_ids(tuple(elig))
        cols = []
        topic_cols = []
        for t in group:
            topic = instance.topics[t]
            own = prev[t][:lim]
            w = topic.weights[:lim] if topic.weights is not None else np.ones(lim)
            mc = topic.move_costs[:lim] if topic.move_costs is not None else np.ones(lim)
            if topic.racks is not None:
                rk = np.array([rack_ids(frozenset(r)) for r in topic.racks[:lim]], dtype=np.int64)
            else:
                rk = np.full(lim, -1, dtype=np.int64)
            topic_cols.append((own, w, mc, rk))
            cols += [own, rk]
        wsum = exact_sum([np.asarray(p[1], dtype=np.float64) for p in topic_cols])
        uw, iw = _factorize(wsum)
        mc_all = np.concatenate([p[2] for p in topic_cols])
        umc, imc_flat = _factorize(mc_all)
        imc = imc_flat.reshape(len(group), lim)
        mat = np.stack([*cols, iw, *imc], axis=1)
        rows, inv = np.unique(mat, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        keys = []
        infos = []
        k = len(group)
        for row in rows.tolist():
            owned_fr: dict[int, Fraction] = {}
            rsig_l: list[frozenset[str] | None] = []
            total_fr = Fraction(0)
            for j in range(k):
                o, r = row[2 * j], row[2 * j + 1]
                cost = rational(float(umc[row[2 * k + 1 + j]]))
                if o >= 0:
                    owned_fr[o] = owned_fr.get(o, Fraction(0)) + cost
                    total_fr += cost
                rsig_l.append(rack_ids.keys[r] if r >= 0 else None)  # type: ignore[arg-type]
            # sums of decimal move costs as exact rationals, then the nearest float (0.1 + 0.2 is 0.3)
            owned = {o: float(v) for o, v in owned_fr.items()}
            total = float(total_fr)
            owners = tuple(sorted(owned.items()))  # type: ignore[assignment]
            wv = float(uw[row[2 * k]])
            sig_id = sig_ids(tuple(rsig_l))
            keys.append((1, e, wv, owners, sig_id, k, total, g if per_topic else 0))
            infos.append((e, wv, k, owners, total, sig_id))
        add_classes(1, g, np.arange(lim, dtype=np.int64), keys, inv, infos)

    racksigs: list[tuple[frozenset[str] | None, ...]] = list(sig_ids.keys)  # type: ignore[arg-type]
    eligsets = [np.asarray(k, dtype=np.int64) for k in elig_ids.keys]  # type: ignore[arg-type]
    nc = len(cls_count)
    chunks: list[tuple[int, int, int, int]] = []
    pos = 0
    for kind, ref, parts, _ in item_chunks:
        chunks.append((kind, ref, pos, pos + parts.size))
        pos += parts.size
    if item_chunks:
        item_part = np.concatenate([c[2] for c in item_chunks])
        item_class = np.concatenate([c[3] for c in item_chunks])
    else:
        item_part = np.zeros(0, dtype=np.int64)
        item_class = np.zeros(0, dtype=np.int64)
    return ItemClasses(
        n_members=len(members),
        eligsets=eligsets,
        cls_elig=np.array([i[0] for i in cls_info], dtype=np.int64),
        count=np.array(cls_count, dtype=np.int64),
        weight=np.array([i[1] for i in cls_info], dtype=np.float64),
        size=np.array([i[2] for i in cls_info], dtype=np.int64),
        owners=[i[3] for i in cls_info],
        owned_cost=np.array([i[4] for i in cls_info], dtype=np.float64),
        racksig=np.array([i[5] for i in cls_info], dtype=np.int64) if nc else np.zeros(0, dtype=np.int64),
        racksigs=racksigs,
        chunks=chunks,
        item_part=item_part,
        item_class=item_class,
        topics=topic_names,
        groups=groups,
        not_joinable=view.not_joinable_count,
        cls_topic=np.array(cls_fam, dtype=np.int64) if per_topic else None,
    )


def expand(ic: ItemClasses, instance: Instance, flows: list[tuple[int, int, int]]) -> Assignment:
    """Turn per-class counts into a concrete assignment.

    Parameters
    ----------
    ic
        The classes.
    instance
        The instance they came from.
    flows
        ``(class, member, count)`` triples; for every class the counts add up
        to the class size.  Within a class, items (in topic then partition
        order) are handed out in the order of the triples.

    Returns
    -------
    Assignment
    """
    order = np.arange(ic.item_class.size) if ic.n_classes == 1 else np.argsort(ic.item_class, kind="stable")
    if flows:
        arr = np.array(flows, dtype=np.int64)
        arr = arr[arr[:, 2] > 0]
        arr = arr[np.argsort(arr[:, 0], kind="stable")]
        dest_sorted = np.repeat(arr[:, 1], arr[:, 2])
    else:
        dest_sorted = np.zeros(0, dtype=np.int64)
    if dest_sorted.size != order.size:
        raise AssertionError(f"flow decomposition covers {dest_sorted.size} of {order.size} items")
    dest = np.empty_like(dest_sorted)
    dest[order] = dest_sorted
    owners = {t: np.full(tp.partitions, -1, dtype=np.int64) for t, tp in instance.topics.items()}
    for kind, ref, a, b in ic.chunks:
        parts = ic.item_part[a:b]
        for t in ((ic.topics[ref],) if kind == 0 else ic.groups[ref]):
            owners[t][parts] = dest[a:b]
    return Assignment.from_owners(instance.member_ids, owners)


def class_counts(ic: ItemClasses, instance: Instance, assignment: Assignment) -> np.ndarray | None:
    """The inverse of :func:`expand`: ``[class, member]`` counts of ``assignment``, or ``None`` when an item
    has no single member in it (a topic-partition unassigned or on two members, a co-partition unit split).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 3},
    ...     "members": [{"id": "a", "topics": ["T"]}, {"id": "b", "topics": ["T"]}]})
    >>> ic = build_classes(inst)
    >>> class_counts(ic, inst, Assignment.from_lists({"a": {"T": [0, 2]}, "b": {"T": [1]}})).tolist()
    [[2, 1]]
    >>> class_counts(ic, inst, Assignment.from_lists({"a": {"T": [0]}, "b": {"T": [1]}})) is None
    True
    """
    index = {mid: i for i, mid in enumerate(instance.member_ids)}
    owners = {t: np.full(tp.partitions, -1, dtype=np.int64) for t, tp in instance.topics.items()}
    for mid, topics in assignment.members.items():
        m = index.get(mid)
        if m is None:
            return None
        for t, parts in topics.items():
            own = owners.get(t)
            if own is None:
                continue
            parts = np.asarray(parts, dtype=np.int64)
            parts = parts[(parts >= 0) & (parts < own.size)]
            if (own[parts] >= 0).any() or np.unique(parts).size != parts.size:
                return None  # on two members
            own[parts] = m
    dest = np.full(ic.item_class.size, -1, dtype=np.int64)
    for kind, ref, a, b in ic.chunks:
        parts = ic.item_part[a:b]
        names = (ic.topics[ref],) if kind == 0 else ic.groups[ref]
        first = owners[names[0]][parts]
        if any((owners[t][parts] != first).any() for t in names[1:]):
            return None  # a unit split
        dest[a:b] = first
    if (dest < 0).any():
        return None
    out = np.zeros((ic.n_classes, ic.n_members), dtype=np.int64)
    np.add.at(out, (ic.item_class, dest), 1)
    return out
