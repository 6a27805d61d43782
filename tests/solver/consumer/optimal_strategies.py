"""Hypothesis strategies: small random consumer instances for the optimal-solver tests."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from solver.io import parse_instance
from solver.model import Instance

RACKS = ("r1", "r2", "r3")


@st.composite
def instance_docs(
    draw: Any,
    *,
    max_topics: int = 3,
    max_partitions: int = 5,
    max_members: int = 4,
    weights: bool = False,
    capacities: bool = False,
    racks: bool = False,
    copartition: str = "none",  # "none", "equal" (one group, equal sizes), "any"
    move_costs: bool = False,
) -> dict[str, Any]:
    """A random ``kassign/v1`` consumer document (always valid)."""
    nt = draw(st.integers(1, max_topics))
    names = [f"t{i}" for i in range(nt)]
    if copartition == "equal":
        n_eq = draw(st.integers(1, max_partitions))
        counts = [n_eq] * nt
    else:
        counts = [draw(st.integers(1, max_partitions)) for _ in names]
    topics: dict[str, Any] = {}
    for name, n in zip(names, counts, strict=True):
        spec: dict[str, Any] = {"partitions": n}
        if weights:
            spec["weights"] = [draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0, 7.0])) for _ in range(n)]
        if move_costs:
            spec["move_costs"] = [draw(st.sampled_from([0.0, 1.0, 3.0, 10.0])) for _ in range(n)]
        if racks:
            spec["racks"] = [sorted(draw(st.sets(st.sampled_from(RACKS), min_size=1, max_size=2)))
                             for _ in range(n)]
        topics[name] = spec
    nm = draw(st.integers(1, max_members))
    members = []
    for i in range(nm):
        subs = sorted(draw(st.sets(st.sampled_from(names), min_size=1)))
        if copartition == "equal":
            subs = list(names) if draw(st.booleans()) or i == 0 else subs
        owned = {}
        for t in subs:
            n = topics[t]["partitions"]
            parts = sorted(draw(st.sets(st.integers(0, n - 1), max_size=n)))
            if parts:
                owned[t] = parts
        m: dict[str, Any] = {"id": f"m{i}", "topics": subs, "owned": owned,
                             "generation": draw(st.integers(1, 3))}
        if capacities:
            m["capacity"] = draw(st.sampled_from([1.0, 2.0, 0.5, 1.5]))
        if racks:
            m["rack"] = draw(st.sampled_from(RACKS))
        members.append(m)
    doc: dict[str, Any] = {"format": "kassign/v1", "name": "gen", "topics": topics, "members": members}
    if copartition == "equal" and nt >= 2:
        doc["copartition"] = [names]
        # every subscriber of a group topic subscribes to all of them (flow domain: units only)
        for m in members:
            if set(m["topics"]) & set(names):
                m["topics"] = list(names)
    elif copartition == "any" and nt >= 2:
        doc["copartition"] = [names[:2]]
        members[0]["topics"] = sorted(set(members[0]["topics"]) | set(names[:2]))
    return doc


def instances(**kw: Any) -> st.SearchStrategy[Instance]:
    """Parsed random instances (see :func:`instance_docs`)."""
    return instance_docs(**kw).map(parse_instance)


def engine_data(inst: Instance) -> tuple[Any, Any, Any]:
    """``(classes, scaled, local data)`` of ``inst``: what the exact engine's primal parts take."""
    from solver.consumer.exact.data import local_data, scale
    from solver.consumer.items import build_classes

    ic = build_classes(inst)
    sc = scale(ic, [m.capacity for m in inst.members])
    return ic, sc, local_data(ic, sc)
