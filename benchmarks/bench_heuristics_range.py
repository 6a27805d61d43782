"""Speed of range, roundrobin, uniform and server-range on Kafka's large assignor test inputs.

``python -m benchmarks.bench_heuristics_range [--topics 500 --partitions 2000 --members 2000]``

Scenarios (from Kafka's ``AbstractStickyAssignorTest`` large tests and issue 3):

- ``equal``: every member subscribes to every topic, nothing owned;
- ``non-equal``: the same, but the last member subscribes to the first topic only;
- ``leave-10%``: every member owned its round-robin share (one partition of
  every topic here), then every tenth member leaves; the rest keep ``owned``.

Instances are built in memory (not timed).  Two figures per assignor: ``core``
is Kafka's algorithm up to per-topic owner arrays; ``total`` is the registered
assignor (what ``kassign assign`` runs), which also builds the
member -> topic -> partitions ``Assignment`` object.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from types import MappingProxyType

import numpy as np

import heuristics  # noqa: F401  (registers every assignor)
from heuristics.kip848.server_range import server_range_owner_arrays
from heuristics.kip848.uniform import uniform_flat
from heuristics.range import range_owner_arrays
from heuristics.roundrobin import roundrobin_owner_arrays
from solver import registry
from solver.model import Assignment, Instance, Member, Topic
from solver.result import Params

ASSIGNORS = ("range", "roundrobin", "server-range", "uniform")

CORE: dict[str, Callable[[Instance], object]] = {
    "range": range_owner_arrays,
    "roundrobin": roundrobin_owner_arrays,
    "server-range": server_range_owner_arrays,
    "uniform": uniform_flat,
}


def build(topics: int, partitions: int, members: int, scenario: str) -> Instance:
    """One benchmark instance (see the module docstring for the scenarios)."""
    names = tuple(f"topic-{i:03d}" for i in range(topics))
    topic_map = {
        n: Topic(name=n, partitions=partitions, id=str(uuid.uuid5(uuid.NAMESPACE_DNS, n))) for n in names
    }
    ids = [f"consumer-{m:04d}" for m in range(members)]
    out: list[Member] = []
    if scenario == "leave-10%":
        # round robin over all topic-partitions sorted by topic then partition:
        # global index k * partitions + p belongs to member (k * partitions + p) % members
        for m in range(members):
            if m % 10 == 9:
                continue  # this member left
            owned = {}
            for k, name in enumerate(names):
                arr = np.arange((m - k * partitions) % members, partitions, members, dtype=np.int64)
                if arr.size:
                    arr.setflags(write=False)
                    owned[name] = arr
            out.append(Member(id=ids[m], topics=names, owned=MappingProxyType(owned), generation=1))
    else:
        for m in range(members):
            subs = names[:1] if scenario == "non-equal" and m == members - 1 else names
            out.append(Member(id=ids[m], topics=subs))
    return Instance(name=f"bench-{scenario}", protocol="consumer", topics=topic_map, members=tuple(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topics", type=int, default=500)
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--members", type=int, default=2000)
    ap.add_argument("--assignors", default=",".join(ASSIGNORS),
                    help="any registered consumer assignors, comma separated (e.g. fair,stream-join-sticky)")
    ap.add_argument("--scenarios", default="equal,non-equal,leave-10%")
    args = ap.parse_args()
    print(f"{args.topics} topics x {args.partitions} partitions, {args.members} members")
    # share of every figure spent building the Assignment object (solver.model) from owner arrays
    ids = [f"consumer-{m:04d}" for m in range(args.members)]
    owners = {f"topic-{i:03d}": np.arange(args.partitions) % args.members for i in range(args.topics)}
    t0 = time.perf_counter()
    Assignment.from_owners(ids, owners)
    print(f"(Assignment.from_owners alone on this size: {time.perf_counter() - t0:.2f} s)")
    for scenario in args.scenarios.split(","):
        t0 = time.perf_counter()
        inst = build(args.topics, args.partitions, args.members, scenario)
        print(f"[{scenario}] built in {time.perf_counter() - t0:.1f} s")
        for name in args.assignors.split(","):
            spec = registry.get(name)
            core_txt = "     -"
            if name in CORE:  # the algorithm alone, before building the Assignment object
                t1 = time.perf_counter()
                CORE[name](inst)
                core_txt = f"{time.perf_counter() - t1:6.2f}"
            t1 = time.perf_counter()
            res = spec.run(inst, Params())
            total = time.perf_counter() - t1
            loads = [res.assignment.partitions_of(m) for m in inst.member_ids]
            print(f"  {name:18s} core {core_txt} s   total {total:6.2f} s   "
                  f"loads {min(loads)}..{max(loads)}  sum {sum(loads)}")


if __name__ == "__main__":
    main()
