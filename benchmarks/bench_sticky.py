"""Benchmark ``sticky`` and ``cooperative-sticky`` on Kafka's large assignor test inputs.

Kafka's ``AbstractStickyAssignorTest`` large cases: 500 topics x 2000
partitions (1M topic-partitions) and 2000 consumers:

- ``equal``: every consumer subscribes to every topic, nothing owned;
- ``non-equal``: the same, but the last consumer subscribes to one topic only;
- ``leave-10pct``: every consumer owns ~500 partitions handed out round robin
  (generation 1), then every tenth consumer leaves (200 of 2000);
- ``leave-10pct-general``: the same, with the last consumer now subscribed to
  one topic only, so the general path and its reassignment loop run (no Java
  figure in the issue);
- ``equal-racks`` / ``non-equal-racks``: Kafka's rack-aware variants (50
  topics, 100k partitions), consumers and replicas on 3 racks.

Run ``python -m benchmarks.bench_sticky`` (``--scale 0.1`` for a quick run,
``--repeat N`` for the best of N).  Times are the assignor call through the
registry (Kafka's ``assign()`` plus building the output), without instance
construction; instance construction is reported separately.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import time
from collections.abc import Callable

import numpy as np

from solver.model import Instance, Member, OwnedMap, Topic
from solver.registry import get
from solver.result import Params


def _topics(n_topics: int, n_parts: int) -> dict[str, Topic]:
    return {f"topic{i}": Topic(f"topic{i}", n_parts) for i in range(n_topics)}


def equal(n_topics: int, n_parts: int, n_members: int) -> Instance:
    """Every consumer subscribes to every topic, nothing owned."""
    topics = _topics(n_topics, n_parts)
    names = tuple(topics)
    members = tuple(Member(f"consumer{i}", names) for i in range(n_members))
    return Instance("equal", "consumer", topics, members)


def non_equal(n_topics: int, n_parts: int, n_members: int) -> Instance:
    """As :func:`equal`, but the last consumer subscribes to the first topic only."""
    topics = _topics(n_topics, n_parts)
    names = tuple(topics)
    members = [Member(f"consumer{i}", names) for i in range(n_members - 1)]
    members.append(Member(f"consumer{n_members - 1}", names[:1]))
    return Instance("non-equal", "consumer", topics, tuple(members))


def leave_10pct(n_topics: int, n_parts: int, n_members: int) -> Instance:
    """Round-robin owned partitions at generation 1, then every tenth consumer leaves."""
    topics = _topics(n_topics, n_parts)
    names = tuple(topics)
    total = n_topics * n_parts
    # global partition g (topic g // n_parts, partition g % n_parts) was owned by consumer g % n_members
    order = np.argsort(np.arange(total) % n_members, kind="stable")
    per_member = np.split(order, np.arange(1, n_members) * (total // n_members) if total % n_members == 0
                          else np.cumsum(np.bincount(np.arange(total) % n_members, minlength=n_members))[:-1])
    members = []
    for i, mine in enumerate(per_member):
        if i % 10 == 9:
            continue  # left the group
        t_idx = mine // n_parts
        cuts = np.flatnonzero(np.diff(t_idx)) + 1
        bounds = np.concatenate(([0], cuts, [mine.size])).astype(np.int64)
        flat = (mine % n_parts).astype(np.int64)
        flat.setflags(write=False)
        bounds.setflags(write=False)
        owned_topics = tuple(names[t] for t in t_idx[bounds[:-1]].tolist())
        members.append(Member(f"consumer{i}", names, OwnedMap(owned_topics, flat, bounds), generation=1))
    return Instance("leave-10pct", "consumer", topics, tuple(members))


def leave_10pct_general(n_topics: int, n_parts: int, n_members: int) -> Instance:
    """As :func:`leave_10pct`, but the last consumer now subscribes to the first topic only (general path)."""
    inst = leave_10pct(n_topics, n_parts, n_members)
    members = list(inst.members)
    members[-1] = dataclasses.replace(members[-1], topics=members[-1].topics[:1])
    return dataclasses.replace(inst, name="leave-10pct-general", members=tuple(members))


def _racked(inst: Instance, n_racks: int = 3) -> Instance:
    """Give consumer ``i`` rack ``i % 3`` and partition ``p`` replicas on racks ``p % 3`` and ``(p + 1) % 3``."""
    topics = {}
    for name, t in inst.topics.items():
        racks = tuple((f"r{p % n_racks}", f"r{(p + 1) % n_racks}") for p in range(t.partitions))
        topics[name] = dataclasses.replace(t, racks=racks)
    members = tuple(dataclasses.replace(m, rack=f"r{i % n_racks}") for i, m in enumerate(inst.members))
    return dataclasses.replace(inst, name=inst.name + "-racks", topics=topics, members=members)


def equal_racks(n_topics: int, n_parts: int, n_members: int) -> Instance:
    """Kafka's rack-aware large test: a tenth of the topics, consumers and replicas on 3 racks."""
    return _racked(equal(max(1, n_topics // 10), n_parts, n_members))


def non_equal_racks(n_topics: int, n_parts: int, n_members: int) -> Instance:
    """As :func:`equal_racks` with the last consumer on one topic (general path)."""
    return _racked(non_equal(max(1, n_topics // 10), n_parts, n_members))


CASES: dict[str, tuple[Callable[[int, int, int], Instance], float | None]] = {
    # name -> (builder, Kafka Java cooperative-sticky assign() seconds from the issue, if known)
    "equal": (equal, 0.35),
    "non-equal": (non_equal, 9.0),
    "leave-10pct": (leave_10pct, 5.4),
    "leave-10pct-general": (leave_10pct_general, None),
    "equal-racks": (equal_racks, None),
    "non-equal-racks": (non_equal_racks, None),
}


def main() -> None:
    """Time every case for both assignors and print a Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="scale topics and consumers (1.0 = Kafka's sizes)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per case; the best is reported")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    ap.add_argument("--assignors", default="cooperative-sticky,sticky")
    args = ap.parse_args()
    import heuristics  # noqa: F401  (registers the assignors)

    n_topics = max(1, round(500 * args.scale))
    n_members = max(2, round(2000 * args.scale))
    n_parts = 2000
    print("| case | assignor | partitions | members | build s | assign s | Kafka Java s | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        builder, java = CASES[case]
        t0 = time.perf_counter()
        inst = builder(n_topics, n_parts, n_members)
        build = time.perf_counter() - t0
        for name in args.assignors.split(","):
            spec = get(name)
            best = float("inf")
            for _ in range(args.repeat):
                gc.collect()
                t0 = time.perf_counter()
                spec.run(inst, Params())
                best = min(best, time.perf_counter() - t0)
            known = java is not None and args.scale == 1.0
            ratio = f"{best / java:.2f}x" if known and java else "n/a"
            print(
                f"| {case} | {name} | {inst.total_partitions} | {len(inst.members)} | {build:.2f} | {best:.2f} |"
                f" {java if known else 'n/a'} | {ratio} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
