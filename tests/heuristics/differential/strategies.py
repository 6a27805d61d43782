"""Random consumer groups of every kind Kafka's consumer assignors read, for the differential tests.

Hypothesis draws the shape (sizes, subscription kind, which features are on, a seed); a seeded
``random.Random`` fills in the details, so a failing case shrinks to a small shape and a short seed.
Groups range from one member and one topic to about 300 members x 200 topics.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

SIZES = {  # members, topics, partitions per topic (upper bounds)
    "tiny": (4, 3, 6),
    "small": (12, 8, 12),
    "medium": (60, 40, 16),
    "large": (300, 200, 6),
    "wide": (20, 6, 400),  # few topics, many partitions: HashSet<Integer> tables past 16 buckets
}


@dataclass(frozen=True)
class Shape:
    """What a drawn group looks like; the seed fills in the rest."""

    size: str
    subscriptions: str  # identical | random | two-groups
    owned: str  # none | previous | shuffled (a previous assignment, then members come and go)
    static: bool
    racks: bool
    stale: bool  # some claims carry an older generation, some partitions are claimed twice
    seed: int


shapes = st.builds(
    Shape,
    size=st.sampled_from(["tiny", "small", "small", "medium", "medium", "large", "wide"]),
    subscriptions=st.sampled_from(["identical", "random", "two-groups"]),
    owned=st.sampled_from(["none", "previous", "shuffled"]),
    static=st.booleans(),
    racks=st.booleans(),
    stale=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)


def consumer_group(shape: Shape, *, conflicts: bool = True) -> dict[str, Any]:
    """A kassign/v1 consumer instance of ``shape``.

    ``conflicts=False`` keeps every partition claimed by at most one member (a KIP-848 coordinator's
    target assignment never has two owners); owned topics are then listed in a random insertion order.
    """
    rng = random.Random(shape.seed)
    max_m, max_t, max_p = SIZES[shape.size]
    n_members = rng.randint(1, max_m)
    n_topics = rng.randint(1, max_t)
    racks = [f"r{i}" for i in range(rng.randint(2, 4))] if shape.racks else []
    topics: dict[str, Any] = {}
    for i in range(n_topics):
        name = f"{rng.choice(['orders', 'clicks', 'events', 'logs'])}-{i}"
        n = rng.randint(1, max_p)
        spec: dict[str, Any] = {"partitions": n, "id": str(uuid.UUID(int=rng.getrandbits(128), version=4))}
        if racks:
            spec["racks"] = [sorted(rng.sample(racks, rng.randint(1, min(3, len(racks))))) for _ in range(n)]
        topics[name] = spec
    names = list(topics)
    if shape.subscriptions == "identical":
        subs = [list(names) for _ in range(n_members)]
    elif shape.subscriptions == "two-groups":
        half = names[: max(1, len(names) // 2)]
        rest = names[len(half):] or half
        subs = [list(half) if rng.random() < 0.5 else list(rest) for _ in range(n_members)]
    else:
        subs = [rng.sample(names, rng.randint(1, len(names))) for _ in range(n_members)]
    members: list[dict[str, Any]] = []
    for k in range(n_members):
        m: dict[str, Any] = {"id": f"consumer-{k}-{uuid.UUID(int=rng.getrandbits(128), version=4)}",
                             "topics": subs[k]}
        if shape.static and rng.random() < 0.5:
            m["instance_id"] = f"instance-{rng.randint(0, 10 * max_m)}-{k}"
        if racks and rng.random() < 0.9:
            m["rack"] = rng.choice(racks)
        members.append(m)
    if shape.owned != "none":
        generation = rng.randint(1, 20)
        # A previous assignment: each partition to a random subscriber (some left unowned).
        for t, spec in topics.items():
            holders = [m for m in members if t in m["topics"]]
            if shape.owned == "shuffled":
                # members changed since: some claims on topics no longer subscribed to, some new members
                holders = members
            if not holders:
                continue
            for p in range(spec["partitions"]):
                if rng.random() < 0.15:
                    continue
                owner = rng.choice(holders)
                owner.setdefault("owned", {}).setdefault(t, []).append(p)
                if conflicts and shape.stale and rng.random() < 0.05:
                    other = rng.choice(members)
                    if other is not owner:
                        other.setdefault("owned", {}).setdefault(t, []).append(p)
        for m in members:
            if "owned" in m:
                m["generation"] = generation - (1 if shape.stale and rng.random() < 0.2 else 0)
                if not conflicts:
                    # the coordinator's record order: topics and partitions in any order
                    items = [(t, rng.sample(ps, len(ps))) for t, ps in m["owned"].items()]
                    rng.shuffle(items)
                    m["owned"] = dict(items)
                else:
                    m["owned"] = {t: sorted(set(ps)) for t, ps in sorted(m["owned"].items())}
            elif rng.random() < 0.3:
                m["generation"] = generation
        if shape.owned == "shuffled":
            # new members joined after the previous assignment
            rng.shuffle(members)
    return {"format": "kassign/v1", "name": f"diff-{shape.seed}", "protocol": "consumer",
            "topics": topics, "members": members}


def next_step(instance: dict[str, Any], kafka_answer: dict[str, Any], rng: random.Random,
              *, shuffle_owned: bool) -> dict[str, Any]:
    """The group one rebalance later: each member owns what Kafka gave it (generation + 1), about a tenth
    leave, up to three join, now and then a member changes its subscription."""
    names = list(instance["topics"])
    members = []
    generation = max([m.get("generation", 0) for m in instance["members"]] + [0]) + 1
    for m in instance["members"]:
        if rng.random() < 0.1:
            continue
        items = list(kafka_answer.get(m["id"], {}).items())
        if shuffle_owned:
            items = [(t, rng.sample(ps, len(ps))) for t, ps in items]
            rng.shuffle(items)
        new = {**m, "owned": dict(items), "generation": generation}
        if rng.random() < 0.05:
            new["topics"] = rng.sample(names, rng.randint(1, len(names)))
        members.append(new)
    template = instance["members"][0]["topics"] if instance["members"] else names
    for _ in range(rng.randint(0, 3)):
        members.append({"id": f"consumer-j-{uuid.UUID(int=rng.getrandbits(128), version=4)}",
                        "topics": list(template)})
    return {**instance, "members": members}
