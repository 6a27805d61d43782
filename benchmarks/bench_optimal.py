"""Benchmark the optimal solver on Kafka's large assignor inputs and the issue's other sizes.

Cases (``--cases``):

- ``equal``, ``non-equal``, ``leave-10pct``: Kafka's ``AbstractStickyAssignorTest``
  large inputs (500 topics x 2000 partitions = 1M, 2000 consumers; builders
  shared with ``benchmarks.bench_sticky``); ``leave-10pct-racks`` adds racks
  (consumer ``i`` on rack ``i % 3``, replicas of partition ``p`` on racks
  ``p % 3`` and ``(p + 1) % 3``), so all three stages are optimised.  Targets: proven optimum no slower
  than Kafka's Java cooperative-sticky ``assign()`` (0.35 s, 9 s, 5.4 s).
- ``m1000x3000`` / ``m1000x3000-leave``: 1,000 members x 3,000 partitions
  (30 topics x 100), fresh and after 10% of round-robin owners leave.  Target:
  proven optimum in under 0.5 s end to end.
- ``weighted``: 10,000 partitions (one topic) with lognormal weights, 200
  members with a round-robin previous assignment, 10 s limit.  Target: within
  1% of the proven max-load bound.

Every case runs in a fresh subprocess so that its peak RSS is its own.  Figures:
``build`` (constructing the instance in memory), ``solve`` (the registry call,
Kafka's ``assign()`` equivalent), peak RSS of that process, and two whole
processes on the instance written to a temporary JSON file: ``e2e`` =
``kassign assign FILE --assignor optimal -o OUT`` and ``e2e minimal`` = a
fresh interpreter that only imports the solver, reads, solves and writes.
Run ``python -m benchmarks.bench_optimal`` (``--no-e2e`` to skip the process
runs, ``--scale 0.1`` for a quick run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from solver.model import Instance

CASES = ("equal", "non-equal", "leave-10pct", "leave-10pct-racks", "m1000x3000", "m1000x3000-leave", "weighted")
TARGET = {"equal": 0.35, "non-equal": 9.0, "leave-10pct": 5.4, "leave-10pct-racks": float("nan"),
          "m1000x3000": 0.5, "m1000x3000-leave": 0.5,
          "weighted": 10.0}


def _round_robin_leave(n_topics: int, n_parts: int, n_members: int, leave: bool) -> Instance:
    from solver.io import parse_instance

    topics = {f"t{i}": n_parts for i in range(n_topics)}
    owned: list[dict[str, list[int]]] = [{} for _ in range(n_members)]
    g = 0
    for t in topics:
        for p in range(n_parts):
            owned[g % n_members].setdefault(t, []).append(p)
            g += 1
    names = list(topics)
    members = [{"id": f"c{i:04d}", "topics": names, "owned": owned[i] if leave else {}, "generation": 1}
               for i in range(n_members) if not (leave and i % 10 == 9)]
    return parse_instance({"format": "kassign/v1", "name": "m1000x3000", "topics": topics, "members": members})


def _weighted(seed: int = 1) -> Instance:
    from solver.io import parse_instance

    rng = np.random.default_rng(seed)
    n, m = 10_000, 200
    w = np.round(rng.lognormal(0.0, 1.0, n), 3).tolist()
    members = [{"id": f"c{i:03d}", "topics": ["T"], "owned": {"T": list(range(i, n, m + 7))}, "generation": 1}
               for i in range(m)]
    return parse_instance({"format": "kassign/v1", "name": "weighted-10k", "topics": {"T": {"partitions": n,
                                                                                             "weights": w}},
                           "members": members})


def build(case: str, scale: float) -> Instance:
    """The instance of one case."""
    from benchmarks.bench_sticky import equal, leave_10pct, non_equal

    nt = max(1, round(500 * scale))
    nm = max(2, round(2000 * scale))
    if case == "equal":
        return equal(nt, 2000, nm)
    if case == "non-equal":
        return non_equal(nt, 2000, nm)
    if case == "leave-10pct":
        return leave_10pct(nt, 2000, nm)
    if case == "leave-10pct-racks":
        from benchmarks.bench_sticky import _racked

        return _racked(leave_10pct(nt, 2000, nm))
    if case == "m1000x3000":
        return _round_robin_leave(30, 100, 1000, leave=False)
    if case == "m1000x3000-leave":
        return _round_robin_leave(30, 100, 1000, leave=True)
    if case == "weighted":
        return _weighted()
    raise SystemExit(f"unknown case {case}")


def _peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM; ru_maxrss survives fork and would mislead)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


MINIMAL = """
import sys, time
t0 = time.perf_counter()
from solver.io import read_instance, dumps, write_atomic
from solver.consumer.optimal import solve
from solver.result import Params
from spark_runner.cli.output import result_document
inst = read_instance(sys.argv[1])
res = solve(inst, Params(time_limit=float(sys.argv[3])))
write_atomic(sys.argv[2], dumps(result_document(inst, "optimal", res)) + "\\n")
"""


def _timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of a command, via /usr/bin/time when present."""
    time_bin = Path("/usr/bin/time")
    if time_bin.exists():
        t0 = time.perf_counter()
        out = subprocess.run([str(time_bin), "-f", "%M", *cmd], check=True, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        return dt, int(out.stderr.strip().splitlines()[-1]) / 1024
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - t0, float("nan")


def run_case(case: str, scale: float, time_limit: float) -> dict[str, object]:
    """Build and solve one case in this process; the figures as a dict."""
    from solver.registry import get
    from solver.result import Params
    from spark_runner.assignors import load_all

    load_all()
    t0 = time.perf_counter()
    inst = build(case, scale)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = get("optimal").run(inst, Params(time_limit=time_limit))
    t_solve = time.perf_counter() - t0
    stages = res.extra.get("stages", [])
    obj = dict(zip(stages, res.objective, strict=True))
    bnd = dict(zip(stages, res.bound, strict=True))
    return {
        "case": case, "partitions": inst.total_partitions, "members": len(inst.members),
        "build_s": round(t_build, 3), "solve_s": round(t_solve, 3), "status": res.status.value,
        "engine": res.extra.get("engine"), "max_load": obj.get("max_load"), "max_load_bound": bnd.get("max_load"),
        "gap": res.extra.get("gap"), "moves": obj.get("moves"),
        "peak_rss_mib": round(_peak_rss_mib(), 1),
    }


def e2e(case: str, scale: float, time_limit: float) -> dict[str, tuple[float, float]]:
    """Whole processes on the case written to a JSON file: (seconds, peak RSS MiB).

    ``cli``: ``kassign assign FILE --assignor optimal -o OUT`` (the CLI imports
    every command module, Spark's included); ``minimal``: a fresh interpreter
    that only reads, solves and writes.
    """
    from solver.io import dumps, instance_to_dict

    inst = build(case, scale)
    with tempfile.TemporaryDirectory() as d:
        src = Path(d) / "in.json"
        src.write_text(dumps(instance_to_dict(inst)))
        out = str(Path(d) / "out.json")
        cli = _timed([sys.executable, "-m", "spark_runner", "assign", str(src), "--assignor", "optimal",
                      "-o", out, "--time-limit", str(time_limit)])
        minimal = _timed([sys.executable, "-c", MINIMAL, str(src), out, str(time_limit)])
    return {"cli": cli, "minimal": minimal}


def main() -> None:
    """Run the cases, each in a subprocess, and print a Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--scale", type=float, default=1.0, help="scale Kafka's 500 topics / 2000 consumers")
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--no-e2e", action="store_true", help="skip the whole-process runs")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_case(args.one, args.scale, args.time_limit)))
        return
    print("| case | partitions | members | engine | status | solve s | target s | peak RSS MiB | e2e s |"
          " e2e minimal s | max load | bound | gap | moves |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    for case in args.cases.split(","):
        out = subprocess.run([sys.executable, "-m", "benchmarks.bench_optimal", "--one", case, "--scale",
                              str(args.scale), "--time-limit", str(args.time_limit)],
                             check=True, capture_output=True, text=True, env=env)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        e2e_s = e2e_m = "-"
        if not args.no_e2e:
            runs = e2e(case, args.scale, args.time_limit)
            e2e_s = "{:.2f} ({:.0f} MiB)".format(*runs["cli"])
            e2e_m = "{:.2f} ({:.0f} MiB)".format(*runs["minimal"])
        print(f"| {case} | {r['partitions']} | {r['members']} | {r['engine']} | {r['status']} | {r['solve_s']} |"
              f" {TARGET[case]} | {r['peak_rss_mib']} | {e2e_s} | {e2e_m} | {r['max_load']:.6g} |"
              f" {r['max_load_bound']:.6g} | {r['gap']:.2e} | {r['moves']:.6g} |", flush=True)


if __name__ == "__main__":
    main()
