"""Streams optimum at scale: ``python -m benchmarks.bench_streams [--tasks 1000 --clients 100 --standbys 2]``.

The instance: ``tasks`` stateful tasks (10 subtopologies), ``clients`` Kafka
Streams clients with 1-4 threads.  The previous assignment is a round-robin
one over the clients with ``standbys`` standbys per task (lags 0..50,000 on
standbys, a few stale local stores elsewhere); then 10% of the clients are
replaced by new ones without state (a rolling redeploy that lost disks).  The
optimum is solved with a time limit (default 10 s, 2 workers) and
high-availability runs on the same input for comparison.
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from typing import Any

from solver.io import parse_instance
from solver.result import Params
from solver.streams.optimal import solve_streams
from solver.streams.scoring import score_streams


def build(tasks: int, clients: int, standbys: int, seed: int = 7) -> dict[str, Any]:
    """The benchmark instance (deterministic from the arguments)."""
    rng = random.Random(seed)
    subs = 10
    ids = [f"{s}_{p}" for s in range(subs) for p in range(tasks // subs)]
    cl: list[dict[str, Any]] = []
    for c in range(clients):
        cl.append({"id": f"client-{c:03d}", "process_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                   "capacity": rng.randint(1, 4), "active": [], "standby": [], "lags": {}})
    for k, t in enumerate(ids):
        owner = k % clients
        cl[owner]["active"].append(t)
        for j in range(1, standbys + 1):
            holder = cl[(owner + j * 7) % clients]
            holder["standby"].append(t)
            holder["lags"][t] = rng.randint(0, 50_000)
        for _ in range(2):  # stale stores from older assignments
            stale = cl[rng.randrange(clients)]
            if t not in stale["active"] and t not in stale["lags"]:
                stale["lags"][t] = rng.randint(10_000, 500_000)
    for c in rng.sample(range(clients), clients // 10):  # replaced by fresh clients without state
        cl[c] = {"id": f"new-{c:03d}", "process_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                 "capacity": rng.randint(1, 4), "active": [], "standby": [], "lags": {}}
    return {"format": "kassign/v1", "protocol": "streams", "name": f"bench-{tasks}x{clients}x{standbys}",
            "tasks": [{"id": t, "stateful": True} for t in ids], "clients": cl,
            "config": {"num_standby_replicas": standbys, "acceptable_recovery_lag": 10_000,
                       "max_warmup_replicas": 2}}


def _score(inst: Any, asg: Any) -> dict[str, Any]:
    return score_streams(inst, asg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--standbys", type=int, default=2)
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    t0 = time.perf_counter()
    inst = parse_instance(build(args.tasks, args.clients, args.standbys, args.seed))
    print(f"instance built in {time.perf_counter() - t0:.2f} s: {args.tasks} tasks, {args.clients} clients, "
          f"{args.standbys} standbys")
    res = solve_streams(inst, Params(time_limit=args.time_limit, options={"workers": args.workers}))
    stats = res.stats()
    print(f"optimal-streams: status={stats['status']} seconds={stats['seconds']:.2f} gap={stats['gap']:.4g}")
    for name, v, b in zip(stats["stages"], res.objective, res.bound, strict=True):
        print(f"  {name:15s} value={v:<12g} bound={b:g}")
    m = _score(inst, res.assignment)
    print("  score:", {k: m[k] for k in ("valid", "max_active_load", "max_total_load", "restoration_cost",
                                          "moved_actives")})
    try:
        from heuristics.streams.high_availability import high_availability

        t1 = time.perf_counter()
        ha = high_availability(inst, Params())
        dt = time.perf_counter() - t1
        h = _score(inst, ha.assignment)
        print(f"high-availability: {dt:.2f} s", {k: h[k] for k in ("valid", "max_active_load", "max_total_load",
                                                                   "restoration_cost", "moved_actives", "warmups",
                                                                   "probing_rebalance")})
    except ImportError:
        pass


if __name__ == "__main__":
    main()
