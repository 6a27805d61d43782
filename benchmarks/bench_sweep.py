"""Sweep throughput: scenario-steps per second on local[1] and local[2], and the 1,000-scenario sweep.

Run::

    python -m benchmarks.bench_sweep                 # both parts
    python -m benchmarks.bench_sweep --part scaling  # local[1] vs local[2] only
    python -m benchmarks.bench_sweep --part big      # 1,000 scenarios x 10 steps on local[2]
    python -m benchmarks.bench_sweep --part pure     # the scaling grid in-process, no Spark (CPU time)
    python -m benchmarks.bench_sweep --part skew --stride 5  # issue 33's grid in-process, every 5th scenario
    python -m benchmarks.bench_sweep --part skew-spark       # issue 33's grid, all 350 scenarios on local[2]

*Scaling*: the same grid (every consumer assignor registered plus the optimum)
is swept on ``local[1]`` and then ``local[2]``, each in a fresh SparkSession
whose Python workers are warmed up first; the figure is scenario-steps (one
scenario at one step, every assignor and the optimum evaluated, scored and
gapped) per second of the Spark job, Spark start-up excluded (reported
separately).  Target: speed-up >= 1.7x.

*Big*: 1,000 scenarios x 10 events (11 steps with the initial assignment) of
every consumer assignor plus the optimum, groups of 4-24 members, at most 200
topic-partitions per instance; wall time of ``run_sweep`` including Spark
start-up.  Target: <= 10 minutes on 2 cores.

*Skew*: issue 33's research grid (:data:`SKEW_GRID`: 350 scenarios of at most 9 members and 48 partitions,
weighted and rack-aware, joins, Streams; 2,450 optimum steps at ``solver_time_limit: 3``).  ``skew`` evaluates a
sample in this process and prints, per parameter point, the optimum steps proven and the CPU seconds a scenario
(with the whole grid's CPU estimated from them); ``skew-spark`` sweeps all of it on ``local[2]``.  Target: the
whole grid in at most 6 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from spark_runner.sweep.batches import run_sweep
from spark_runner.sweep.grid import parse_grid
from spark_runner.sweep.session import start_spark

SCALING_GRID: dict[str, Any] = {
    "name": "bench-scaling",
    "seeds": {"start": 0, "count": 30},
    "assignors": "all",
    "solver_time_limit": 10,
    "params": {"members": [6, 12], "topics": 4, "partitions_min": 4, "partitions_max": 25,
               "subscription": ["identical", "random"], "steps": 10, "max_partitions": 200},
}

BIG_GRID: dict[str, Any] = {
    "name": "bench-1000",
    "seeds": {"start": 0, "count": 125},
    "assignors": "all",
    "solver_time_limit": 10,
    "params": {"members": [4, 12], "topics": [3, 6], "partitions_min": 2, "partitions_max": 30,
               "subscription": ["identical", "random"], "steps": 10, "max_partitions": 200,
               "min_members": 2, "max_members": 24},
}

#: The research grid of issue 33: 350 small scenarios, weighted and rack-aware, joins, Streams (2,450 optimum steps).
SKEW_GRID: dict[str, Any] = {
    "name": "skew-and-racks",
    "seeds": {"start": 100, "count": 25},
    "assignors": "all",
    "solver_time_limit": 3,
    "params": [
        {"members": [5, 9], "topics": 3, "partitions_min": 6, "partitions_max": 16,
         "subscription": ["identical", "random"], "weights": ["uniform", "hot", "lognormal"], "racks": 3, "steps": 6},
        {"members": 6, "topics": 2, "partitions_min": 6, "partitions_max": 10, "copartition": 1, "weights": "hot",
         "steps": 6, "events": ["join", "leave", "crash", "scale-out", "scale-in", "weight-drift"]},
        {"protocol": "streams", "clients": 4, "threads_min": 1, "threads_max": 3, "subtopologies": 2,
         "partitions_min": 4, "partitions_max": 10, "standby_replicas": 1, "initial": "mixed", "steps": 6},
    ],
}


def _warm(spark: Any, cores: int) -> None:
    """Start every Python worker, import the evaluation stack and warm the JVM's SQL/Arrow path.

    The first ``mapInPandas`` job of a session costs ~10 s more than later ones (class loading,
    code generation, worker start); that is start-up, not throughput.
    """
    import pandas as pd

    def load(batches: Any) -> Any:
        from spark_runner.sweep.evaluate import load_registry

        load_registry()
        for pdf in batches:
            yield pd.DataFrame({"n": [len(pdf)]})

    df = spark.createDataFrame(spark.sparkContext.parallelize([(i,) for i in range(cores * 4)], cores * 4), "i long")
    df.mapInPandas(load, "n long").collect()


def _steps(out: Path) -> int:
    import pyarrow.dataset as ds

    t = ds.dataset(str(out / "rows"), format="parquet", partitioning="hive").to_table(columns=["assignor"])
    return int(sum(1 for a in t.column("assignor").to_pylist() if str(a) == "optimal"))


def scaling(log: Any, repeat: int = 1) -> dict[str, Any]:
    grid = parse_grid(SCALING_GRID, "bench-scaling")
    res: dict[str, Any] = {"scenarios": len(grid.scenarios()), "assignors": list(grid.evaluated)}
    for cores in (1, 2):
        master = f"local[{cores}]"
        t0 = time.perf_counter()
        spark = start_spark(master, {"spark.python.worker.reuse": "true"}, app_name=f"bench-{cores}")
        _warm(spark, cores)
        startup = time.perf_counter() - t0
        jobs = []
        try:
            for _ in range(repeat):  # best of `repeat`: the machine may be shared
                tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
                try:
                    t1 = time.perf_counter()
                    # one Spark job for the whole grid, 8 tasks per core
                    run_sweep(grid, tmp, spark=spark, partitions=8 * cores, batch_size=10_000, log=lambda _: None)
                    jobs.append(time.perf_counter() - t1)
                    steps = _steps(tmp)
                finally:
                    shutil.rmtree(tmp, ignore_errors=True)
        finally:
            spark.stop()
        job = min(jobs)
        res[master] = {"startup_s": round(startup, 1), "job_s": round(job, 1), "job_s_all": [round(j, 1) for j in jobs],
                       "scenario_steps": steps,
                       "steps_per_s": round(steps / job, 2)}
        log(f"{master}: {steps} scenario-steps in {job:.1f} s = {steps / job:.2f}/s (start-up {startup:.1f} s)")
    res["speedup"] = round(res["local[2]"]["steps_per_s"] / res["local[1]"]["steps_per_s"], 2)
    log(f"speed-up local[2] / local[1]: {res['speedup']}x")
    return res


def pure(log: Any) -> dict[str, Any]:
    """The scaling grid evaluated in this process, without Spark (the floor Spark's overhead adds to)."""
    from spark_runner.sweep.evaluate import evaluate_scenario

    grid = parse_grid(SCALING_GRID, "bench-scaling")
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    steps = 0
    for _sid, seed, p in grid.scenarios():
        rows = evaluate_scenario(p, seed, list(grid.assignors), grid.solver_time_limit)
        steps += sum(1 for r in rows if r["assignor"] == "optimal")
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    log(f"in-process: {steps} scenario-steps in {wall:.1f} s wall / {cpu:.1f} s CPU = {steps / cpu:.2f}/CPU-s")
    return {"scenario_steps": steps, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
            "steps_per_cpu_s": round(steps / cpu, 2)}


def _point(p: Any) -> str:
    """A parameter point's short name: its protocol, members, subscription and weights."""
    d = p.model_dump() if hasattr(p, "model_dump") else dict(vars(p))
    keys = ("protocol", "members", "subscription", "weights", "copartition")
    return "/".join(str(d[k]) for k in keys if k in d and d[k] not in (None, ""))


def skew(log: Any, stride: int = 1) -> dict[str, Any]:
    """The issue-33 grid in this process, every ``stride``-th scenario of each point: per point the optimum steps
    whose max-load and moves stages are proven, CPU seconds (the optimum's and the whole evaluation's), and the
    whole grid's CPU estimated from the sample."""
    from spark_runner.sweep.evaluate import evaluate_scenario

    grid = parse_grid(SKEW_GRID, "skew-and-racks")
    per: dict[str, dict[str, float]] = {}
    seen: dict[str, int] = {}
    for _sid, seed, p in grid.scenarios():
        key = _point(p)
        seen[key] = seen.get(key, 0) + 1
        acc = per.setdefault(key, {"scenarios": 0, "in_grid": 0, "steps": 0, "optimal": 0, "cpu_s": 0.0,
                                   "excess_rows": 0, "excess_proven": 0})
        acc["in_grid"] += 1
        if (seen[key] - 1) % stride:
            continue
        cpu0 = time.process_time()
        rows = evaluate_scenario(p, seed, list(grid.assignors), grid.solver_time_limit)
        acc["cpu_s"] += time.process_time() - cpu0
        acc["scenarios"] += 1
        opt = [r for r in rows if r["assignor"] in ("optimal", "optimal-streams")]
        acc["steps"] += len(opt)
        acc["optimal"] += sum(1 for r in opt if r["status"] == "optimal")
        gapped = [r for r in rows if r.get("excess_moves") is not None]
        acc["excess_rows"] += len(gapped)
        acc["excess_proven"] += sum(1 for r in gapped if r.get("excess_moves_proven"))
        log(f"{key} seed {seed}: {time.process_time() - cpu0:.1f} s CPU")
    est = sum(a["cpu_s"] / a["scenarios"] * a["in_grid"] for a in per.values() if a["scenarios"])
    for key, a in per.items():
        log(f"{key}: {a['scenarios']:.0f} scenarios, optimum steps proven {a['optimal']:.0f}/{a['steps']:.0f}, "
            f"excess_moves proven {a['excess_proven']:.0f}/{a['excess_rows']:.0f}, "
            f"{a['cpu_s'] / max(1, a['scenarios']):.1f} s CPU a scenario")
    log(f"whole grid ({sum(a['in_grid'] for a in per.values()):.0f} scenarios) estimated at {est:,.0f} s CPU, "
        f"{est / 2 / 60:.1f} min on 2 cores without Spark's overhead")
    return {"points": per, "estimated_cpu_s": round(est), "stride": stride}


def skew_spark(log: Any) -> dict[str, Any]:
    """The issue-33 grid swept whole on ``local[2]``: wall time, optimum steps proven."""
    grid = parse_grid(SKEW_GRID, "skew-and-racks")
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-skew-"))
    try:
        t0 = time.perf_counter()
        run_sweep(grid, tmp, master="local[2]", log=log, progress_every=30)
        wall = time.perf_counter() - t0
        import pyarrow.dataset as ds

        t = ds.dataset(str(tmp / "rows"), format="parquet", partitioning="hive").to_table(
            columns=["assignor", "status"]).to_pandas()
        opt = t[t["assignor"].isin(["optimal", "optimal-streams"])]
        res = {"wall_s": round(wall, 1), "optimum_steps": len(opt),
               "optimum_proven": int((opt["status"] == "optimal").sum())}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"skew-and-racks on local[2]: {wall / 60:.1f} min; optimum proven on {res['optimum_proven']:,} of "
        f"{res['optimum_steps']:,} steps")
    return res


def big(log: Any) -> dict[str, Any]:
    grid = parse_grid(BIG_GRID, "bench-1000")
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-big-"))
    try:
        t0 = time.perf_counter()
        summary = run_sweep(grid, tmp, master="local[2]", log=log, progress_every=30)
        wall = time.perf_counter() - t0
        import pyarrow.dataset as ds

        t = ds.dataset(str(tmp / "rows"), format="parquet", partitioning="hive").to_table(
            columns=["partitions", "error", "assignor", "opt_status"]).to_pandas()
        steps = _steps(tmp)
        res = {"scenarios": summary.scenarios, "scenario_steps": steps, "rows": summary.rows_total,
               "assignors": list(grid.evaluated), "wall_s": round(wall, 1),
               "steps_per_s": round(steps / wall, 2), "max_partitions_seen": int(t["partitions"].max()),
               "errors": int(t["error"].notna().sum()),
               "optimum_unproven": int(((t["assignor"] == "optimal") & (t["opt_status"] != "optimal")).sum())}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"1,000-scenario sweep: {res['scenario_steps']} scenario-steps, {res['rows']} rows in {wall:.0f} s "
        f"({wall / 60:.1f} min); largest instance {res['max_partitions_seen']} partitions")
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--part", choices=("all", "pure", "scaling", "big", "skew", "skew-spark"), default="all",
                    help="skew: the issue-33 grid in process (a sample, see --stride); skew-spark: all of it on "
                         "local[2]; neither is part of 'all'")
    ap.add_argument("--stride", type=int, default=1, help="skew: every Nth scenario of each parameter point")
    ap.add_argument("--repeat", type=int, default=1, help="scaling: best of this many runs per master")
    args = ap.parse_args(argv)

    def log(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    out: dict[str, Any] = {"machine": f"{platform.machine()}, {os.cpu_count()} cores",
                           "loadavg_before": [round(x, 2) for x in os.getloadavg()],
                           "date": time.strftime("%Y-%m-%d %H:%M")}
    if args.part in ("all", "pure"):
        out["pure"] = pure(log)
    if args.part in ("all", "scaling"):
        out["scaling"] = scaling(log, args.repeat)
    if args.part in ("all", "big"):
        out["big"] = big(log)
    if args.part == "skew":
        out["skew"] = skew(log, args.stride)
    if args.part == "skew-spark":
        out["skew_spark"] = skew_spark(log)
    out["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
