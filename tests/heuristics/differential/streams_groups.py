"""Random Kafka Streams groups of every kind Kafka's task assignors read, for the differential tests.

From a :class:`~tests.heuristics.differential.strategies.Shape` (its size, whether there are racks, a
seed): sub-topologies of stateful and stateless tasks, clients (processes) with stream threads and
process ids, a previous assignment with standbys, lags caught up or not (and unknown), Kafka's configs;
racks and the rack-aware strategies for ``high-availability``; client tags and
``rack_aware_assignment_tags`` (KIP-708, :func:`draw_client_tags`) for every assignor, from a generator of
their own so the rest of a group is the same with or without them; one member per stream thread, current
tasks and reported offsets for the KIP-1071 ``streams-server-sticky``.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from tests.heuristics.differential.strategies import Shape

STREAMS_SIZES = {"tiny": (3, 2, 4), "small": (6, 3, 8), "medium": (12, 3, 16), "large": (30, 4, 24),
                 "wide": (8, 2, 40)}  # clients, sub-topologies, partitions (upper bounds)


def streams_group(shape: Shape, assignor: str) -> dict[str, Any]:
    """A kassign/v1 Streams instance of ``shape`` for ``assignor``."""
    rng = random.Random(shape.seed)
    max_c, max_s, max_p = STREAMS_SIZES[shape.size]
    racks = [f"r{i}" for i in range(rng.randint(2, 4))]
    rack_aware = assignor == "high-availability" and shape.racks
    tasks: list[dict[str, Any]] = []
    for s in range(rng.randint(1, max_s)):
        stateful = rng.random() < 0.7
        for p in range(rng.randint(1, max_p)):
            t: dict[str, Any] = {"id": f"{s}_{p}", "stateful": stateful}
            if rack_aware:
                t["source_racks"] = [sorted(rng.sample(racks, rng.randint(1, 2))) for _ in range(rng.randint(1, 2))]
                if stateful:
                    t["changelog_racks"] = [sorted(rng.sample(racks, rng.randint(1, 2)))]
            tasks.append(t)
    if rng.random() < 0.3:
        rng.shuffle(tasks)
    standbys = rng.choice([0, 0, 1, 1, 2])
    config: dict[str, Any] = {"num_standby_replicas": standbys,
                              "acceptable_recovery_lag": rng.choice([0, 100, 10_000]),
                              "max_warmup_replicas": rng.randint(1, 3)}
    if rack_aware:
        config["rack_aware_assignment_strategy"] = rng.choice(["min_traffic", "balance_subtopology"])
    n_clients = rng.randint(1, max_c)
    clients: list[dict[str, Any]] = []
    for k in range(n_clients):
        c: dict[str, Any] = {"id": f"client-{k}", "process_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                             "capacity": rng.randint(1, 4)}
        if rack_aware and rng.random() < 0.9:
            c["rack"] = rng.choice(racks)
        clients.append(c)
    fresh = shape.owned == "none"
    if not fresh:
        # a previous assignment (some clients are new: nothing), standbys on other clients, lags
        old = [c for c in clients if rng.random() < 0.8] or clients[:1]
        for t in tasks:
            if rng.random() < 0.9:
                owner = rng.choice(old)
                owner.setdefault("active", []).append(t["id"])
                if t["stateful"]:
                    others = [c for c in old if c is not owner]
                    for c in rng.sample(others, min(standbys, len(others))):
                        c.setdefault("standby", []).append(t["id"])
        for c in clients:
            for t in tasks:
                if t["stateful"] and t["id"] not in c.get("active", []) and rng.random() < 0.3:
                    c.setdefault("lags", {})[t["id"]] = rng.choice(
                        [0, rng.randint(0, 200), rng.randint(0, 20_000), rng.randint(0, 10**9)])
    if assignor == "streams-server-sticky":
        for c in clients:
            threads = c["capacity"]
            members = [{"id": f"{c['id']}-{uuid.UUID(int=rng.getrandbits(128), version=4)}"} for _ in range(threads)]
            for kind in ("active", "standby"):
                for tid in c.get(kind, []):
                    rng.choice(members).setdefault(kind, []).append(tid)
            for m in members:
                if rng.random() < 0.3:
                    m["current_active"] = list(m.get("active", []))
                    m["current_standby"] = list(m.get("standby", []))
                if c.get("lags") and rng.random() < 0.5:
                    m["task_offsets"] = {t: rng.randint(0, 10**6) for t in c["lags"]}
            c["members"] = members
            c.pop("lags", None)
    draw_client_tags(random.Random(shape.seed * 7919 + 708), clients, config)
    if shape.static and len(clients) > 1:
        rng.shuffle(clients)
    return {"format": "kassign/v1", "name": f"streams-diff-{shape.seed}", "protocol": "streams",
            "tasks": tasks, "clients": clients, "config": config}


TAG_KEYS = ("zone", "cluster", "host")


def draw_client_tags(rng: random.Random, clients: list[dict[str, Any]], config: dict[str, Any]) -> None:
    """Client tags on about half the groups: 1-3 keys of 1-3 values each, some clients missing a key;
    ``rack_aware_assignment_tags`` usually a non-empty subset of the keys (so some clients carry tags that
    are not configured), sometimes empty (tags present, the least-loaded standby placement), now and then
    naming a key no client has.  Groups with tags get standbys more often (the tags only place standbys)."""
    if rng.random() < 0.5:
        return
    keys = rng.sample(TAG_KEYS, rng.randint(1, 3))
    values = {k: [f"{k}-{chr(97 + i)}" for i in range(rng.randint(1, 3))] for k in keys}
    missing = rng.choice([0.0, 0.1, 0.3])
    for c in clients:
        tags = {k: rng.choice(values[k]) for k in keys if rng.random() >= missing}
        if tags:
            c["client_tags"] = tags
    roll = rng.random()
    if roll < 0.8:
        config["rack_aware_assignment_tags"] = rng.sample(keys, rng.randint(1, len(keys)))
        if roll < 0.08:
            config["rack_aware_assignment_tags"].append("rack")  # no client has it
    if config.get("num_standby_replicas", 0) == 0 and rng.random() < 0.7:
        config["num_standby_replicas"] = rng.choice([1, 1, 2, 3])
