"""KIP-1071's group-coordinator sticky assignor at scale: ``python -m benchmarks.bench_server_sticky``.

``[--tasks 10000 --processes 500 --members 4 --standbys 2 --repeat 5]``.  The group: ``tasks`` stateful
tasks (20 subtopologies), ``processes`` Kafka Streams processes of ``members`` members each, ``standbys``
standby replicas.  Three rebalances, each timed at Kafka 4.3.1 and 4.4:

* ``fresh``: nobody has anything (every task through the assignor's heaps: the most work);
* ``steady``: every member has its own previous answer (everything stays);
* ``process-lost``: 5% of the processes leave, 5% new ones join (their tasks move, the rest stays); at 4.4
  the new processes' members report offsets for state they restored before (a third of the tasks of the
  processes that left, as a restarted process would).

The figures are the median wall time and the median CPU time of this process over ``--repeat`` runs of the
assignor itself (the instance is built and validated once, outside the timing); on a shared machine the wall
time also counts the time other processes had the CPU.  The bar (docs/benchmarks.md): under 1 s for 10,000
tasks x 500 processes x 4 members with 2 standbys.
"""

from __future__ import annotations

import argparse
import base64
import platform
import random
import statistics
import time
import uuid
from typing import Any

from heuristics.streams.server_sticky import server_sticky_assign
from solver.io import parse_instance
from solver.kafka_version import KafkaVersion
from solver.model import Instance


def _member_id(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.getrandbits(128).to_bytes(16, "big")).decode().rstrip("=")


def build(tasks: int, processes: int, members: int, standbys: int, seed: int = 11) -> dict[str, Any]:
    """A fresh group (deterministic from the arguments)."""
    rng = random.Random(seed)
    subs = 20
    ids = [f"{s}_{p}" for s in range(subs) for p in range(tasks // subs)]
    clients = [{"id": f"process-{c:04d}", "process_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "members": [{"id": _member_id(rng)} for _ in range(members)]} for c in range(processes)]
    return {"format": "kassign/v1", "protocol": "streams", "name": f"kip1071-{tasks}x{processes}x{members}",
            "tasks": [{"id": t, "stateful": True} for t in ids], "clients": clients,
            "config": {"num_standby_replicas": standbys}}


def with_previous(doc: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with every member's previous target = its tasks in ``out`` (an assignment document)."""
    clients = []
    for c in doc["clients"]:
        ms = [{"id": m["id"], "active": out["members"][m["id"]]["active"],
               "standby": out["members"][m["id"]]["standby"]} for m in c["members"]]
        clients.append({**c, "members": ms, "active": [], "standby": []})
    return {**doc, "clients": clients}


def churn(doc: dict[str, Any], share: float, seed: int = 5) -> dict[str, Any]:
    """``share`` of the processes leave and as many new ones join (reporting state for some of their tasks)."""
    rng = random.Random(seed)
    clients = list(doc["clients"])
    gone = set(rng.sample(range(len(clients)), max(1, int(len(clients) * share))))
    left_tasks = [t for k in sorted(gone) for m in clients[k]["members"] for t in (*m["active"], *m["standby"])]
    kept = [c for k, c in enumerate(clients) if k not in gone]
    for k in range(len(gone)):
        members = []
        for _ in range(len(clients[0]["members"])):
            offsets = {t: rng.randint(1_000, 1_000_000) for t in rng.sample(left_tasks, len(left_tasks) // 3 // 4)}
            members.append({"id": _member_id(rng), "task_offsets": offsets})
        kept.append({"id": f"joined-{k:04d}", "process_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                     "members": members})
    return {**doc, "clients": kept}


def time_it(inst: Instance, version: str, repeat: int) -> tuple[float, float, Any]:
    """Median wall and CPU seconds of ``repeat`` runs, and the last answer."""
    v = KafkaVersion.parse(version)
    wall, cpu = [], []
    out = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        out = server_sticky_assign(inst, v)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--processes", type=int, default=500)
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--standbys", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"# streams-server-sticky: {args.tasks:,} tasks x {args.processes:,} processes x {args.members} members, "
          f"{args.standbys} standbys; median of {args.repeat} runs; {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}")
    fresh_doc = build(args.tasks, args.processes, args.members, args.standbys)
    fresh = parse_instance(fresh_doc)
    print(f"{'rebalance':<14}{'Kafka':>8}{'wall s':>9}{'CPU s':>8}{'actives kept':>15}{'standbys':>11}")
    first = server_sticky_assign(fresh, KafkaVersion.parse("4.4")).to_json_dict()
    steady = parse_instance(with_previous(fresh_doc, first))
    lost = parse_instance(churn(with_previous(fresh_doc, first), 0.05))
    for name, inst in (("fresh", fresh), ("steady", steady), ("process-lost", lost)):
        prev = {t: m.id for c in inst.streams.clients for m in c.members or () for t in m.active}
        for version in ("4.3.1", "4.4"):
            wall, cpu, out = time_it(inst, version, args.repeat)
            doc = out.to_json_dict()
            kept = sum(1 for m, v in doc["members"].items() for t in v["active"] if prev.get(t) == m)
            standbys = sum(len(v["standby"]) for v in doc["members"].values())
            print(f"{name:<14}{version:>8}{wall:>9.3f}{cpu:>8.3f}{kept:>15,}{standbys:>11,}")


if __name__ == "__main__":
    main()
