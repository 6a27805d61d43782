"""Cost of the gap metrics in a sweep: ``gap_metrics`` seconds per row on ``examples/sweep-small.yaml``.

Run::

    python -m benchmarks.bench_gaps

Evaluates every scenario of the sweep-small grid in-process (no Spark), exactly as a sweep row is
computed (every consumer assignor and the optimum, scored and gapped), and reports the total time
and the part spent in :func:`solver.consumer.gaps.gap_metrics` (``excess_moves``: the fewest moved
cost among assignments at least as balanced -- max load *and* sum of squares capped).
"""

from __future__ import annotations

import platform
import sys
import time
from pathlib import Path
from typing import Any

import solver.consumer.gaps as consumer_gaps
import spark_runner.sweep.evaluate as ev
from spark_runner.sweep.grid import read_grid

GRID = Path(__file__).resolve().parents[1] / "examples" / "sweep-small.yaml"


def main() -> None:
    """Print rows, total seconds and gap_metrics seconds (calls, per call, largest)."""
    grid = read_grid(GRID)
    spent: list[float] = []
    orig = consumer_gaps.gap_metrics  # solver.gaps looks it up at each call

    def timed(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return orig(*a, **k)
        finally:
            spent.append(time.perf_counter() - t)

    consumer_gaps.gap_metrics = timed  # type: ignore[assignment]
    t0 = time.perf_counter()
    rows = 0
    for _sid, seed, params in grid.scenarios():
        rows += len(ev.evaluate_scenario(params, seed, grid.evaluated, grid.solver_time_limit))
    total = time.perf_counter() - t0
    print(f"{platform.processor() or platform.machine()}, Python {sys.version.split()[0]}")
    print(f"{GRID.name}: {rows} rows in {total:.1f} s; gap_metrics {len(spent)} calls, {sum(spent):.2f} s "
          f"({1000 * sum(spent) / max(1, len(spent)):.2f} ms per call, largest {1000 * max(spent, default=0):.0f} ms)")


if __name__ == "__main__":
    main()
