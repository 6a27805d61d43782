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

from dataclasses import dataclass, field

import numpy as np

from solver.errors import InfeasibleError
from solver.model import Assignment, Instance
from solver.semantics import GroupView

#: Move costs and weights are made integral by a power of ten up to this exponent.
MAX_DECIMALS = 6


def decimal_scale(values: np.ndarray, max_decimals: int = MAX_DECIMALS) -> int:
    """Smallest power of ten ``10**d`` (``d <= max_decimals``) making ``values`` integral.

    Returns ``10**max_decimals`` when no smaller power works (values are then
    rounded to ``max_decimals`` decimals).

    Examples
    --------
    >>> decimal_scale(np.array([1.0, 2.5, 0.25]))
    100
    >>> decimal_scale(np.array([3.0]))
    1
    """
    if values.size == 0:
        return 1
    for d in range(max_decimals + 1):
        s = values * (10**d)
        if np.all(np.abs(s - np.round(s)) <= 1e-9 * np.maximum(1.0, np.abs(s))):
            return 10**d
    return 10**max_decimals


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
    item_kind, item_ref, item_part, item_class
        Flat per-item arrays: kind ``0`` = single partition of topic
        ``topics[item_ref]``, ``1`` = unit of co-partition group ``item_ref``;
        ``item_part`` the partition; ``item_class`` the class.
    topics
        Topic names (index = ``item_ref`` for singles).
    not_joinable
        Topic-partitions of co-partition topics beyond the group limit (counted
        only for information; they are single items here).
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
    item_kind: np.ndarray
    item_ref: np.ndarray
    item_part: np.ndarray
    item_class: np.ndarray
    topics: list[str]
    groups: list[tuple[str, ...]]
    not_joinable: int = 0
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


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(unique values, inverse) of a 1-D array."""
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, inv.reshape(-1).astype(np.int64)


def build_classes(
    instance: Instance, view: GroupView | None = None, unit_owner: str = "first-topic",
    not_joinable: bool = True,
) -> ItemClasses:
    """Aggregate the items of ``instance`` into classes.

    Parameters
    ----------
    instance
        Consumer-protocol instance.
    view
        Pre-computed group view.
    unit_owner
        Previous ownership of co-partition units.  ``"first-topic"``: a unit's
        previous owner is the previous owner of its partition in the group's
        first topic, and a unit that changes owner moves all its
        topic-partitions (the rule of the reference optima: a join task
        moves as a whole).  ``"per-partition"``: every topic-partition keeps
        its own previous owner (the scorer's ``moved``).
    not_joinable
        Include not-joinable partitions as single items (default) or leave
        them out.

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
    >>> from solver.formats import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4},
    ...     "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1]}},
    ...                 {"id": "b", "topics": ["T"]}]})
    >>> ic = build_classes(inst)
    >>> ic.count.tolist(), ic.owners
    ([2, 2], [(), ((0, 1.0),)])
    """
    if unit_owner not in ("first-topic", "per-partition"):
        raise ValueError(f"unit_owner must be 'first-topic' or 'per-partition', not {unit_owner!r}")
    view = view or GroupView(instance)
    members = instance.members
    prev = view.previous_owners
    subs = view.subscribers
    elig_ids = _Interner()
    rack_ids = _Interner()
    sig_ids = _Interner()
    topic_names = list(instance.topics)
    tindex = {t: i for i, t in enumerate(topic_names)}
    groups = [tuple(g) for g in instance.copartition]

    # Per class, accumulated from the per-topic / per-group pieces.
    key_ids = _Interner()
    cls_count: list[int] = []
    cls_info: list[tuple[int, float, int, tuple[tuple[int, float], ...], float, int]] = []
    item_chunks: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # kind, ref, parts, class

    def add_classes(kind: int, ref: int, parts: np.ndarray, keys: list[tuple], inv: np.ndarray,
                    infos: list[tuple]) -> None:
        local = np.empty(len(keys), dtype=np.int64)
        for j, (k, info) in enumerate(zip(keys, infos, strict=True)):
            c = key_ids(k)
            if c == len(cls_count):
                cls_count.append(0)
                cls_info.append(info)
            local[j] = c
        cls_of = local[inv]
        counts = np.bincount(inv, minlength=len(keys))
        for j in range(len(keys)):
            cls_count[int(local[j])] += int(counts[j])
        item_chunks.append((kind, ref, parts, cls_of))

    in_group = view.group_of
    # ---- single partitions (topics outside groups, and not-joinable ones)
    for t, topic in instance.topics.items():
        if not subs[t]:
            continue
        start = view.limits[t] if t in in_group else 0
        n = topic.partitions
        if start >= n or (start > 0 and not not_joinable):
            continue
        parts = np.arange(start, n, dtype=np.int64)
        e = elig_ids(tuple(subs[t]))
        own = prev[t][start:]
        w = topic.weights[start:] if topic.weights is not None else None
        mc = topic.move_costs[start:] if topic.move_costs is not None else None
        rk: np.ndarray | None = None
        if topic.racks is not None:
            rk = np.array([rack_ids(frozenset(r)) for r in topic.racks[start:]], dtype=np.int64)
        keycols = [own + 1]
        uw = umc = None
        if w is not None:
            uw, iw = _factorize(w)
            keycols.append(iw)
        if mc is not None:
            umc, imc = _factorize(mc)
            keycols.append(imc)
        if rk is not None:
            keycols.append(rk)
        if len(keycols) == 1:
            uniq_rows, inv = _factorize(keycols[0])
            rows = uniq_rows.reshape(-1, 1)
        else:
            mat = np.stack(keycols, axis=1)
            rows, inv = np.unique(mat, axis=0, return_inverse=True)
            inv = inv.reshape(-1)
        keys: list[tuple] = []
        infos: list[tuple] = []
        for row in rows.tolist():
            o = row[0] - 1
            j = 1
            wv = 1.0
            if uw is not None:
                wv = float(uw[row[j]])
                j += 1
            mv = 1.0
            if umc is not None:
                mv = float(umc[row[j]])
                j += 1
            rsig: tuple[frozenset[str] | None, ...] = (None,)
            if rk is not None:
                rsig = (rack_ids.keys[row[j]],)  # type: ignore[assignment]
            sig_id = sig_ids(rsig)
            owners: tuple[tuple[int, float], ...] = ((o, mv),) if o >= 0 else ()
            keys.append((0, e, wv, owners, sig_id))
            infos.append((e, wv, 1, owners, mv if o >= 0 else 0.0, sig_id))
        add_classes(0, tindex[t], parts, keys, inv, infos)

    # ---- co-partition units
    for g, group in enumerate(groups):
        if not any(subs[t] for t in group):
            continue
        lim = view.limits[group[0]]
        if lim == 0:
            continue
        elig = view.unit_eligible(g)
        if not elig:
            raise InfeasibleError(
                f"co-partition group {list(group)}: no member subscribes to all of its topics, "
                "so its partitions cannot be assigned co-partitioned"
            )
        e = elig_ids(tuple(elig))
        cols = []
        per_topic = []
        for t in group:
            topic = instance.topics[t]
            own = prev[t][:lim]
            w = topic.weights[:lim] if topic.weights is not None else np.ones(lim)
            mc = topic.move_costs[:lim] if topic.move_costs is not None else np.ones(lim)
            if topic.racks is not None:
                rk = np.array([rack_ids(frozenset(r)) for r in topic.racks[:lim]], dtype=np.int64)
            else:
                rk = np.full(lim, -1, dtype=np.int64)
            per_topic.append((own, w, mc, rk))
            cols += [own, rk]
        wsum = np.sum([p[1] for p in per_topic], axis=0)
        uw, iw = _factorize(wsum)
        mc_all = np.concatenate([p[2] for p in per_topic])
        umc, imc_flat = _factorize(mc_all)
        imc = imc_flat.reshape(len(group), lim)
        mat = np.stack([*cols, iw, *imc], axis=1)
        rows, inv = np.unique(mat, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        keys = []
        infos = []
        k = len(group)
        for row in rows.tolist():
            owned: dict[int, float] = {}
            rsig_l: list[frozenset[str] | None] = []
            total = 0.0
            for j in range(k):
                o, r = row[2 * j], row[2 * j + 1]
                mv = float(umc[row[2 * k + 1 + j]])
                if o >= 0:
                    owned[o] = owned.get(o, 0.0) + mv
                    total += mv
                rsig_l.append(rack_ids.keys[r] if r >= 0 else None)  # type: ignore[arg-type]
            owners = tuple(sorted(owned.items()))  # type: ignore[assignment]
            if unit_owner == "first-topic":
                # the unit belongs to the owner of its first topic's partition and moves as a whole
                o0 = row[0]
                total = sum(float(umc[row[2 * k + 1 + j]]) for j in range(k)) if o0 >= 0 else 0.0
                owners = ((o0, total),) if o0 >= 0 else ()
            wv = float(uw[row[2 * k]])
            sig_id = sig_ids(tuple(rsig_l))
            keys.append((1, e, wv, owners, sig_id, k, total))
            infos.append((e, wv, k, owners, total, sig_id))
        add_classes(1, g, np.arange(lim, dtype=np.int64), keys, inv, infos)

    racksigs: list[tuple[frozenset[str] | None, ...]] = list(sig_ids.keys)  # type: ignore[arg-type]
    eligsets = [np.asarray(k, dtype=np.int64) for k in elig_ids.keys]  # type: ignore[arg-type]
    nc = len(cls_count)
    if item_chunks:
        item_kind = np.concatenate([np.full(c[2].size, c[0], dtype=np.int8) for c in item_chunks])
        item_ref = np.concatenate([np.full(c[2].size, c[1], dtype=np.int32) for c in item_chunks])
        item_part = np.concatenate([c[2] for c in item_chunks])
        item_class = np.concatenate([c[3] for c in item_chunks])
    else:
        item_kind = np.zeros(0, dtype=np.int8)
        item_ref = np.zeros(0, dtype=np.int32)
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
        item_kind=item_kind,
        item_ref=item_ref,
        item_part=item_part,
        item_class=item_class,
        topics=topic_names,
        groups=groups,
        not_joinable=view.not_joinable_count,
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
    order = np.argsort(ic.item_class, kind="stable")
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
    singles = ic.item_kind == 0
    if singles.any():
        refs = ic.item_ref[singles]
        parts = ic.item_part[singles]
        d = dest[singles]
        for r in np.unique(refs).tolist():
            m = refs == r
            owners[ic.topics[r]][parts[m]] = d[m]
    units = ~singles
    if units.any():
        refs = ic.item_ref[units]
        parts = ic.item_part[units]
        d = dest[units]
        for g in np.unique(refs).tolist():
            m = refs == g
            for t in ic.groups[g]:
                owners[t][parts[m]] = d[m]
    return Assignment.from_owners(instance.member_ids, owners)
