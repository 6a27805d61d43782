"""Capacity planning at scale: ``python -m benchmarks.bench_planning [--target 99.5] [--no-kafka]``.

10,000 partitions (20 topics x 500) with lognormal loads (bytes/s, sigma 1),
move costs = 60 s of traffic, 80 consumers owning round-robin shares today.
The capacity is ``total load / target`` so that the answer is about 100
instances.  Reports: the minimum with its proof (or the gap between best bound
and best packing) and its time, then the planning rows around it (best balance
and its bound, fewest moves and their bound, N-1 resilience, Kafka's
cooperative-sticky when registered) with their times.
"""

from __future__ import annotations

import argparse
import math
import time
from typing import Any

import numpy as np

from solver.io import parse_instance
from solver.model import Instance
from solver.planning.plan import PlanConfig, Planner, consumer_items, minimum, plan


def build(topics: int = 20, partitions: int = 500, members: int = 80, seed: int = 42) -> Instance:
    """The benchmark instance (deterministic from ``seed``)."""
    rng = np.random.default_rng(seed)
    w = np.round(rng.lognormal(11, 1.0, size=(topics, partitions))).astype(int)
    tps = {f"t{t:02d}": {"partitions": partitions, "weights": w[t].tolist(), "move_costs": (w[t] * 60).tolist()}
           for t in range(topics)}
    names = list(tps)
    flat = [(n, p) for n in names for p in range(partitions)]
    mem = []
    for m in range(members):
        owned: dict[str, list[int]] = {}
        for k in range(m, len(flat), members):
            n, p = flat[k]
            owned.setdefault(n, []).append(p)
        mem.append({"id": f"c{m:03d}", "topics": names, "owned": owned, "generation": 3})
    return parse_instance({"format": "kassign/v1", "name": "bench-planning", "topics": tps, "members": mem})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--target", type=float, default=99.5, help="capacity = total load / TARGET")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--no-kafka", action="store_true")
    ap.add_argument("--rows", default="", help="A:B rows to tabulate (default min-1:min+1)")
    args = ap.parse_args()

    inst = build(seed=args.seed)
    items = consumer_items(inst)
    total = float(items.raw.sum())
    cap = math.ceil(total / args.target)
    print(f"10,000 partitions, total load {total:.6g}, capacity {cap} (total / {args.target}), "
          f"largest item {items.raw.max() / cap:.1%} of capacity")
    cfg = PlanConfig(capacity=float(cap), resilience=1, time_limit=args.time_limit)
    t0 = time.perf_counter()
    mn = minimum(Planner(items, cfg))
    t_min = time.perf_counter() - t0
    print(f"minimum: {mn.min_instances} instances, lower bound {mn.lower_bound}, best packing {mn.upper_bound}, "
          f"proof {mn.proof_kind}: {mn.proof} [{t_min:.2f} s]")
    kafka: Any = None
    if not args.no_kafka:
        from solver.registry import UnknownAssignorError
        from spark_runner.assignors import get

        try:
            kafka = get("cooperative-sticky")
        except UnknownAssignorError:
            print("cooperative-sticky not registered: Kafka columns unavailable")
    if args.rows:
        a, b = (int(x) for x in args.rows.split(":"))
    else:
        a, b = max(1, mn.lower_bound - 1), mn.upper_bound + 1
    cfg = PlanConfig(capacity=float(cap), resilience=1, time_limit=args.time_limit, range=(a, b))
    t0 = time.perf_counter()
    last = [t0]

    def tick(msg: str) -> None:
        now = time.perf_counter()
        print(f"  [{now - last[0]:6.2f} s] {msg}", flush=True)
        last[0] = now

    doc = plan(inst, cfg, kafka, progress=tick)
    t_plan = time.perf_counter() - t0
    print(f"whole plan (minimum + {b - a + 1} rows): {t_plan:.1f} s")
    print("| n | fits | max util (bound) | balance | moved parts (bound) | moved state (bound) | moves | "
          "kafka moved / util / fits | N-1 fits | N-1 moved state |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in doc["rows"]:
        mu = "-" if r["max_utilisation"] is None else f"{r['max_utilisation']:.6f} ({r['max_utilisation_bound']:.6f})"
        mp = "-" if r["moved_partitions"] is None else f"{r['moved_partitions']} ({r['moved_partitions_bound']})"
        ms = "-" if r["moved_state"] is None else f"{r['moved_state']:.4g} ({r['moved_state_bound']:.4g})"
        kf = (f"{r['kafka_moved_partitions']} / {r['kafka_max_utilisation']:.3f} / {r['kafka_fits']}"
              if r["kafka_status"] == "ok" else r["kafka_status"])
        rs = r["resilience_moved_state"]
        rs_txt = f"{rs:.4g}" if rs is not None else (
            f">= {r['resilience_forced_moved_state']:.4g}" if r["resilience_fits"] else "-")
        print(f"| {r['n']} | {r['fits']} | {mu} | {r['balance_status']} | {mp} | {ms} | {r['moves_status']} | "
              f"{kf} | {r['resilience_fits']} | {rs_txt} |")
    for bl in doc["baselines"]:
        print(f"baseline {bl['name']}: {bl['instances']} instances ({bl['vs_min']:+d} vs minimum)"
              if bl["vs_min"] is not None else f"baseline {bl['name']}: {bl['instances']}")


if __name__ == "__main__":
    main()
