"""What two cores give without Spark: the sweep's scaling grid in a process pool of 1 and of N.

Run::

    python -m benchmarks.bench_parallel [--processes 2]

The same scenarios as ``bench_sweep --part scaling`` are evaluated by the pure
function :func:`spark_runner.sweep.evaluate.evaluate_scenario` in a ``multiprocessing``
pool (fork, one scenario per chunk, after a warm-up of four scenarios).  The
ratio of the two wall times is the machine's own parallel ceiling for this
work, the yardstick for Spark's ``local[1]`` / ``local[2]`` speed-up.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from typing import Any

from benchmarks.bench_sweep import SCALING_GRID
from spark_runner.sweep.evaluate import evaluate_scenario
from spark_runner.sweep.grid import Grid, parse_grid

_GRID: Grid = parse_grid(SCALING_GRID, "bench-scaling")


def _rows(work: tuple[str, int, Any]) -> int:
    _sid, seed, params = work
    return len(evaluate_scenario(params, seed, list(_GRID.assignors), _GRID.solver_time_limit))


def timed(processes: int) -> float:
    """Wall seconds to evaluate every scenario of the grid with ``processes`` workers."""
    work = list(_GRID.scenarios())
    with mp.get_context("fork").Pool(processes) as pool:
        pool.map(_rows, work[:4])  # warm-up: imports and first solver calls in every worker
        t0 = time.perf_counter()
        pool.map(_rows, work, chunksize=1)
        return time.perf_counter() - t0


def main() -> None:
    """Print the wall time with 1 and with N processes and their ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args()
    one = timed(1)
    print(f"1 process: {one:.1f} s", flush=True)
    many = timed(args.processes)
    print(f"{args.processes} processes: {many:.1f} s", flush=True)
    print(f"speed-up: {one / many:.2f}x")


if __name__ == "__main__":
    main()
