"""Random draws shared by the scenario generators: racks, membership events, the event loop."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from numpy.random import Generator

S = TypeVar("S")  # a generator's state (an instance)
E = TypeVar("E")  # a generator's event


def replica_racks(rng: Generator, racks: Sequence[str], replication: int, n: int) -> tuple[tuple[str, ...], ...]:
    """Replica racks of ``n`` partitions: ``min(replication, len(racks))`` distinct random racks each, sorted."""
    k = min(replication, len(racks))
    picks = [rng.choice(len(racks), size=k, replace=False) for _ in range(n)]
    return tuple(tuple(racks[i] for i in sorted(pick.tolist())) for pick in picks)


def random_rack(rng: Generator, racks: Sequence[str]) -> str | None:
    """A uniformly drawn rack of a joining member or client (``None``, and no draw, without racks)."""
    return racks[int(rng.integers(len(racks)))] if racks else None


def membership_applicable(kind: str, n: int, cap: int, floor: int, scale_k: int) -> bool | None:
    """Whether a membership event fits a group of ``n`` within ``[floor, cap]`` (``None``: not such an event).

    The rule of both generators (members here, clients for Streams).
    """
    if kind == "join":
        return n + 1 <= cap
    if kind == "scale-out":
        return n + scale_k <= cap
    if kind == "leave":
        return n - 1 >= floor
    if kind == "scale-in":
        return n - scale_k >= floor
    if kind in ("crash", "rolling-restart"):
        return n >= 1
    return None


def draw_leavers(rng: Generator, ids: Sequence[str], kind: str, scale_k: int) -> tuple[str, ...]:
    """Who leaves at a ``leave`` (one) or ``scale-in`` (``scale_k``) event, in list order."""
    k = 1 if kind == "leave" else scale_k
    idx = sorted(rng.choice(len(ids), size=k, replace=False).tolist())
    return tuple(ids[i] for i in idx)


def draw_events(rng: Generator, steps: int, kinds: Sequence[str], state: S, *,
                applicable: Callable[[S, str], bool], draw: Callable[[S, str], E],
                restart: Callable[[S, str, int, int], E], advance: Callable[[S, E], S],
                ids: Callable[[S], list[str]]) -> list[E]:
    """The events of a scenario from its first ``state``: ``steps`` of them, fewer when none applies.

    Each step draws uniformly one of ``kinds`` that is ``applicable``, and ``draw`` makes it
    concrete; ``rolling-restart`` instead opens a block of consecutive steps, one
    ``restart(state, id, done, total)`` per member (client) of ``ids(state)`` in list order.
    ``advance`` gives the state the next step sees.  Shared by both generators.
    """
    events: list[E] = []
    pending: list[str] = []
    while len(events) < steps:
        if pending:
            who = pending.pop(0)
            total = len(ids(state))
            ev = restart(state, who, total - len(pending), total)
        else:
            options = [k for k in kinds if applicable(state, k)]
            if not options:
                break
            kind = options[int(rng.integers(len(options)))]
            if kind == "rolling-restart":
                pending = ids(state)
                continue
            ev = draw(state, kind)
        events.append(ev)
        state = advance(state, ev)
    return events
