"""Rack-aware high-availability (KIP-925) at scale: ``python -m benchmarks.bench_streams_rack``.

The instance is a generated Streams scenario's first step (``initial`` =
``mixed``: a running application with previous actives, standbys and stale
state), ``--clients`` clients with 1-4 threads, ``--subtopologies`` x
``--partitions`` tasks (75% stateful, 1-2 stores), ``--standbys`` standbys,
``--racks`` racks and replication 2.  ``high-availability`` runs with each
``rack.aware.assignment.strategy``; printed: seconds (best of ``--repeat``) and
the scorer's ``cross_rack_traffic``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from heuristics.streams.high_availability import high_availability
from solver.model import Instance
from solver.result import Params
from solver.streams.model import StreamsAssignment
from solver.streams.scoring import score_streams
from spark_runner.scenarios.streams import StreamsScenarioParams, generate_streams


def build(clients: int, subtopologies: int, partitions: int, standbys: int, racks: int, seed: int) -> Instance:
    """The benchmark instance (deterministic from the arguments)."""
    p = StreamsScenarioParams(clients=clients, threads_min=1, threads_max=4, subtopologies=subtopologies,
                              partitions_min=partitions, partitions_max=partitions, standby_replicas=standbys,
                              initial="mixed", steps=0, racks=racks, replication=2)
    return generate_streams(p, seed).initial


def with_strategy(inst: Instance, strategy: str) -> Instance:
    """``inst`` with another ``rack_aware_assignment_strategy``."""
    spec = inst.streams
    cfg = dataclasses.replace(spec.config, rack_aware_assignment_strategy=strategy)
    return dataclasses.replace(inst, streams=dataclasses.replace(spec, config=cfg))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--clients", type=int, default=30)
    ap.add_argument("--subtopologies", type=int, default=5)
    ap.add_argument("--partitions", type=int, default=24)
    ap.add_argument("--standbys", type=int, default=1)
    ap.add_argument("--racks", type=int, default=3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    base = build(args.clients, args.subtopologies, args.partitions, args.standbys, args.racks, args.seed)
    spec = base.streams
    print(f"{len(spec.tasks)} tasks ({sum(t.stateful for t in spec.tasks)} stateful), {len(spec.clients)} clients, "
          f"{args.standbys} standbys, {args.racks} racks")
    for strategy in ("none", "min_traffic", "balance_subtopology"):
        inst = with_strategy(base, strategy)
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.process_time()
            res = high_availability(inst, Params())
            best = min(best, time.process_time() - t0)
        assert isinstance(res.assignment, StreamsAssignment)
        m = score_streams(inst, res.assignment)
        print(f"{strategy:20s} cpu {best:6.2f} s  rack_aware={res.extra['rack_aware']!s:5s} "
              f"cross_rack_traffic={m['cross_rack_traffic']}  max_total_load={m['max_total_load']:.3g}")


if __name__ == "__main__":
    main()
