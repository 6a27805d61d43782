"""Lower bound on the moved cost of any assignment whose max load is at most a cap.

In the exact engine's integers (:mod:`solver.consumer.exact.data`): class ``c``
weighs ``W_c``; moving one of its items to member ``m`` costs
``owned_c - own_c(m)``.  At a cap ``Z`` on every ``NL_m``, member ``m`` holds
at most ``room_m`` of load (``floor(Z / r_m)`` rounded down to a multiple of
the gcd of the weights it may hold).  Three arguments, each valid for every
assignment within the cap:

* **forced moves**: an item whose previous owner left, no longer subscribes,
  or shares the item with another owner pays at least its cheapest move;
* **owner side**: a previous owner whose kept load exceeds its room sheds at
  least the excess; the least cost of doing so is an exact 0/1 minimum-cost
  cover of the excess by its items (:func:`min_cover`), summed over owners;
* **receiver side**: with total slack ``S = sum_m room_m - total load``, every
  member ends with at least ``room_m - S``; what its own items and the free
  items (no eligible owner) cannot fill must come from other owners' items,
  at the least cost of covering that load.

The bound is the forced cost plus the larger of the two sides (both count
the same moves, so they do not add up).
"""

from __future__ import annotations

from collections.abc import Sequence

from solver.consumer.exact.bounds.max_load import member_gcds
from solver.consumer.exact.knapsack import min_cover
from solver.consumer.items import ItemClasses


def rooms(ic: ItemClasses, W: Sequence[int], ratio: Sequence[int], zcap: int) -> list[int]:
    """Per member, the most load it can hold at max load ``zcap`` (a multiple of its weights' gcd)."""
    out = []
    for m, g in enumerate(member_gcds(ic, W)):
        raw = zcap // int(ratio[m])
        out.append(raw // g * g if g > 0 else raw)
    return out


def moves_bound(ic: ItemClasses, W: Sequence[int], ratio: Sequence[int], owned: Sequence[int],
                own: Sequence[dict[int, int]], zcap: int) -> int:
    """Lower bound on the scaled moved cost of any assignment with every ``NL_m <= zcap``.

    Parameters
    ----------
    ic
        Item classes.
    W
        Scaled weight of one item per class.
    ratio
        Capacity ratio per member.
    owned
        Per class, the scaled move cost of one item's previously owned state.
    own
        Per class, ``{member: scaled cost of the state that member owns}``.
    zcap
        The cap on every ``NL_m``.

    Returns
    -------
    int
        Forced cost plus the larger of the owner-side and receiver-side bounds.
    """
    elig = [set(e.tolist()) for e in ic.eligsets]
    forced = 0
    kept: dict[int, list[tuple[int, int, int]]] = {}
    kept_load = [0] * ic.n_members
    free_load = 0
    pool: list[tuple[int, int, int]] = []
    total = 0
    for c in range(ic.n_classes):
        cnt = int(ic.count[c])
        if cnt <= 0:
            continue
        members = elig[int(ic.cls_elig[c])]
        total += int(W[c]) * cnt
        best_keep = max((k for m, k in own[c].items() if m in members), default=0)
        forced += cnt * (int(owned[c]) - best_keep)
        if len(own[c]) == 1 and best_keep == int(owned[c]) and best_keep > 0:
            (o,) = own[c]
            kept.setdefault(o, []).append((int(W[c]), best_keep, cnt))
            kept_load[o] += int(W[c]) * cnt
            pool.append((int(W[c]), best_keep, cnt))
        else:
            free_load += int(W[c]) * cnt  # costs the same (its forced part) wherever it goes
    room = rooms(ic, W, ratio, zcap)
    owner_side = sum(min_cover(items, kept_load[o] - room[o]) for o, items in kept.items())
    active = [m for m, g in enumerate(member_gcds(ic, W)) if g > 0]
    slack = sum(room[m] for m in active) - total
    receiver_side = 0
    if slack >= 0:
        need = sum(max(0, room[m] - slack - min(kept_load[m], room[m])) for m in active)
        receiver_side = min_cover(pool, need - free_load)
    return forced + max(owner_side, receiver_side)
