"""The live assignor's decision time: ``python -m benchmarks.bench_live``.

Times :func:`spark_runner.live.assignor.plan_round` (what the group leader runs inside
its time budget, default 1 s) for a member joining a group whose members own
everything round-robin, with unit weights (min-cost flow) and with lag weights
(the exact engine).  The engines are warmed up first, as the assignor's constructor does.  For weighted
groups it also prints the handed-out target's max load and moved cost beside Kafka's cooperative-sticky
(settled) on the same reports: the live assignor keeps the better of the two.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from spark_runner.live.assignor import MemberReport, plan_round, warm_up


def group(members: int, topics: int, partitions: int, weighted: bool, seed: int = 0) -> list[MemberReport]:
    """``members - 1`` members owning every partition round-robin (generation 5), and one new member."""
    rng = random.Random(seed)
    names = [f"topic-{i:02d}" for i in range(topics)]
    owned: list[dict[str, list[int]]] = [{} for _ in range(members - 1)]
    k = 0
    for t in names:
        for p in range(partitions):
            owned[k % (members - 1)].setdefault(t, []).append(p)
            k += 1
    out = []
    for i in range(members - 1):
        weights = ({t: {p: float(rng.randint(0, 10_000)) for p in ps} for t, ps in owned[i].items()}
                   if weighted else {})
        out.append(MemberReport(f"member-{i:03d}", tuple(names), {t: tuple(ps) for t, ps in owned[i].items()}, 5,
                                weights))
    out.append(MemberReport(f"member-{members - 1:03d}", tuple(names)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--budget", type=float, default=1.0,
                    help="deterministic seconds of the engine (the live default is 1)")
    args = ap.parse_args()
    warm_up()
    print("| members | topics x partitions | weights | engine | status | max load (kafka) | moved cost (kafka) "
          "| median s | max s |")
    print("|---:|---:|---|---|---|---:|---:|---:|---:|")
    for members, topics, partitions in ((10, 4, 32), (50, 10, 100), (200, 20, 500)):
        for weighted in (False, True):
            if weighted and members > 50:
                continue  # CP-SAT on 200 x 10,000 weighted partitions is past any live budget
            reports = group(members, topics, partitions, weighted)
            parts = {f"topic-{i:02d}": partitions for i in range(topics)}
            times = []
            res = None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                res = plan_round(reports, parts, budget=args.budget)
                times.append(time.perf_counter() - t0)
            assert res is not None
            loads = (f"{res.max_load:,.0f} ({res.kafka_max_load:,.0f}) | {res.moved_cost:,.0f} "
                     f"({res.kafka_moved_cost:,.0f})" if res.max_load is not None and res.kafka_max_load is not None
                     else "- | -")
            print(f"| {members} | {topics} x {partitions} | {'lag' if weighted else 'unit'} | {res.engine} | "
                  f"{res.status} | {loads} | {statistics.median(times):.3f} | {max(times):.3f} |")


if __name__ == "__main__":
    main()
    # A fallback leaves the abandoned CP-SAT search running until its time limit; let it finish before the
    # interpreter exits (a native thread alive at exit aborts the process).
    time.sleep(1.0)
