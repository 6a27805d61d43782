"""Rack facts of KIP-881 as the sticky assignors use them (``AbstractStickyAssignor.RackInfo``).

Racks are numbered; a partition's replica racks are a bit mask.  Kafka uses
rack-aware assignment only when some member has a rack, some member rack holds
a replica, and not every partition has replicas on exactly the same racks.
One quirk is kept on purpose: as soon as any member has a rack, the
constrained path orders its unassigned partitions by how many members share a
rack with their replicas, even when rack-aware assignment itself is off
(Kafka computes that count from its local map, not the field it clears).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heuristics.sticky.input import StickyInput
from solver.model import Instance


@dataclass(frozen=True, eq=False)
class RackInfo:
    """Rack facts of one instance.

    Attributes
    ----------
    aware
        Whether rack-aware assignment is used.
    member_rack
        Per member, its rack number when rack-aware, else ``-1``.
    masks
        Per global partition id, bit mask of replica racks (``None`` when no
        member has a rack): ``int64``, or Python ints beyond 63 racks.
    consumers_per_partition
        Per global partition id, members on the racks of its replicas
        (``None`` when no member has a rack).
    """

    aware: bool
    member_rack: tuple[int, ...]
    masks: np.ndarray | None
    consumers_per_partition: np.ndarray | None

    def mismatch(self, member: int, g: int) -> bool:
        """``racksMismatch``: the member has a rack that holds no replica of ``g``."""
        r = self.member_rack[member]
        if r < 0:
            return False
        assert self.masks is not None
        return not (int(self.masks[g]) >> r) & 1

    def mismatch_mask(self, member: int, gs: np.ndarray) -> np.ndarray:
        """Vector form of :meth:`mismatch` over global ids ``gs``."""
        r = self.member_rack[member]
        if r < 0 or gs.size == 0:
            return np.zeros(gs.size, dtype=bool)
        assert self.masks is not None
        return ((self.masks[gs] >> r) & 1) == 0

    def holds(self, member: int, g: int) -> bool:
        """The member has a rack holding a replica of ``g`` (``nextRackConsumer`` test)."""
        r = self.member_rack[member]
        if r < 0:
            return False
        assert self.masks is not None
        return bool((int(self.masks[g]) >> r) & 1)


def rack_info(instance: Instance, si: StickyInput) -> RackInfo:
    """Compute the :class:`RackInfo` of ``instance``.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> from heuristics.sticky.input import prepare
    >>> inst = parse_instance({"format": "kassign/v1",
    ...     "topics": {"t": {"partitions": 2, "racks": [["a"], ["b"]]}},
    ...     "members": [{"id": "x", "topics": ["t"], "rack": "a"}, {"id": "y", "topics": ["t"]}]})
    >>> info = rack_info(inst, prepare(inst))
    >>> info.aware, info.mismatch(0, 1), info.consumers_per_partition.tolist()
    (True, True, [1, 0])
    """
    n_members = si.n_members
    rack_ids: dict[str, int] = {}
    member_rack_name = si.racks
    if all(r is None for r in member_rack_name):
        return RackInfo(False, (-1,) * n_members, None, None)
    for r in member_rack_name:
        if r is not None:
            rack_ids.setdefault(r, len(rack_ids))
    mask_list = [0] * si.n_partitions
    for ti, t in enumerate(si.topics):
        racks = instance.topics[t].racks
        if racks is None:
            continue  # no replica racks known: an empty set, as Kafka sees it
        off = int(si.offsets[ti])
        for p, names in enumerate(racks):
            m = 0
            for name in names:
                if name:
                    m |= 1 << rack_ids.setdefault(name, len(rack_ids))
            mask_list[off + p] = m
    # bit masks fit an int64 array for up to 63 racks; beyond, Python ints in an object array
    masks = np.array(mask_list, dtype=np.int64 if len(rack_ids) <= 63 else object)
    per_rack = [0] * len(rack_ids)
    for r in member_rack_name:
        if r is not None:
            per_rack[rack_ids[r]] += 1
    consumers = np.zeros(si.n_partitions, dtype=np.int64)
    for rid, cnt in enumerate(per_rack):
        if cnt:
            consumers += cnt * ((masks >> rid) & 1).astype(np.int64)

    member_racks = 0
    for r in member_rack_name:
        if r is not None:
            member_racks |= 1 << rack_ids[r]
    union = 0
    for m in set(mask_list):
        union |= m
    # some member rack must hold replicas, and the replicas must not sit on every rack alike
    aware = bool(member_racks & union) and any(m != union for m in mask_list)
    member_rack = tuple(rack_ids[r] if (aware and r is not None) else -1 for r in member_rack_name)
    return RackInfo(aware, member_rack, masks, consumers)
