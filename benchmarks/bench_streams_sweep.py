"""Streams optimum on a sweep's Streams scenarios, per backend:
``python -m benchmarks.bench_streams_sweep [--clients 16 --seed 1 --standbys 2 --steps 5 --engines auto,cp-sat]``.

The scenario is the one the sweep generator makes for these parameters
(:func:`spark_runner.scenarios.streams.generate_streams`; the rest as in
``examples/sweep-paper.yaml``'s Streams block: 1-4 threads, 4 sub-topologies
of 8-32 partitions, up to 3 stores, ``initial: mixed``).  Each of its rows is
an instance one assignor saw: its own previous actives, standbys and lags
(high-availability, sticky-task, state-store-weighted and optimal-streams,
carried through the scenario's events as a sweep does).  Every instance is
solved by ``optimal-streams`` with each engine (``-O engine=...``; flows
first) and ``--time-limit``; the table gives how many rows are proven
optimal, the median and largest solve time, and the summed stage values
(lower is better; equal when every engine proves every row).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from solver.model import Instance
from solver.result import Params, Status
from solver.streams.optimal import solve_streams
from solver.streams.scoring import score_streams
from spark_runner.scenarios.streams import StreamsScenarioParams, apply_streams_event, generate_streams
from spark_runner.sweep.evaluate import load_registry

ASSIGNORS = ("high-availability", "sticky-task", "state-store-weighted", "optimal-streams")


def scenario_params(clients: int, standbys: int, steps: int, initial: str = "mixed",
                    racks: int = 0) -> StreamsScenarioParams:
    """The sweep-paper Streams block with these values (``racks > 0``: KIP-925 rack data, ``min_traffic``)."""
    return StreamsScenarioParams(clients=clients, threads_min=1, threads_max=4, subtopologies=4, partitions_min=8,
                                 partitions_max=32, stores_max=3, standby_replicas=standbys, initial=initial,
                                 steps=steps, racks=racks)


def scenario_instances(params: StreamsScenarioParams, seed: int, time_limit: float = 10.0
                       ) -> list[tuple[str, Instance]]:
    """``(row label, instance)`` for every (step, assignor) row of the scenario, as a sweep builds them."""
    specs = {s.name: s for s in load_registry()}
    sc = generate_streams(params, seed)
    out: list[tuple[str, Instance]] = []
    prev: dict[str, tuple[Instance, Any]] = {}
    for step, ev in enumerate([None, *sc.events]):
        cur: dict[str, tuple[Instance, Any]] = {}
        for name in ASSIGNORS:
            inst = sc.initial if ev is None else apply_streams_event(prev[name][0], ev, prev[name][1], sc.lag_model)
            spec = specs[name]
            res = spec.run(inst, Params(time_limit=time_limit, seed=0) if spec.kind == "solver" else Params(seed=0))
            cur[name] = (inst, res.assignment)
            out.append((f"step {step} {'initial' if ev is None else ev.kind} / {name}", inst))
        prev = cur
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--standbys", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--initial", default="mixed")
    ap.add_argument("--racks", type=int, default=0, help="racks (0: no rack data; else rack awareness on)")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--engines", default="highs,scip,cp-sat")
    ap.add_argument("--verbose", action="store_true", help="one line per row and engine")
    args = ap.parse_args()
    t0 = time.perf_counter()
    params = scenario_params(args.clients, args.standbys, args.steps, args.initial, args.racks)
    rows = scenario_instances(params, args.seed)
    print(f"{len(rows)} rows ({args.clients} clients, {args.standbys} standbys, initial {args.initial}, "
          f"racks {args.racks}, seed {args.seed}) built in {time.perf_counter() - t0:.1f} s")
    print("| engine | proven | median s | max s | sum of moved actives | sum of restoration | sum of traffic |")
    print("|---|---|---|---|---|---|---|")
    for engine in args.engines.split(","):
        secs: list[float] = []
        proven = moved = restore = traffic = 0
        for label, inst in rows:
            t1 = time.perf_counter()
            res = solve_streams(inst, Params(time_limit=args.time_limit, seed=0, options={"engine": engine}))
            dt = time.perf_counter() - t1
            secs.append(dt)
            m = score_streams(inst, res.assignment)
            assert m["valid"], (label, m["violations"])
            proven += res.status is Status.OPTIMAL
            moved += m["moved_actives"]
            restore += m["restoration_cost"]
            traffic += m.get("cross_rack_traffic") or 0
            if args.verbose:
                print(f"  {engine:7s} {label:55s} {res.status.value:8s} {dt:6.2f} s  value {res.objective}  "
                      f"bound {res.bound}")
        print(f"| {engine} | {proven}/{len(rows)} | {statistics.median(secs):.2f} | {max(secs):.2f} | {moved} | "
              f"{restore:,} | {traffic:,} |")


if __name__ == "__main__":
    main()
