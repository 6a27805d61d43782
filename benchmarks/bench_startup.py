"""What kassign's parent process costs at start-up: ``python -m benchmarks.bench_startup [--runs N]``.

Times, alternating, (1) a Python that imports ``spark_runner.cli.watchdog`` and exits, and (2) the same that
also forks the command's child and relays its exit (``watchdog.fork()``): the difference is the fork, the
parent's wait and the exit relay.  Then times the console script's ``kassign list`` and ``kassign validate``
with and without the fork (the one-process run replaces ``watchdog.fork`` with a no-op).  Prints the minimum
and the median wall time of each, in milliseconds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENTRY = 'import sys; sys.argv[0] = "kassign"; {patch}from spark_runner.cli.entry import main; main()'
ONE_PROCESS = "import spark_runner.cli.watchdog as w; w.fork = lambda: None; "


def _time(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(args, check=True, cwd=REPO, capture_output=True)
    return time.perf_counter() - t


def _compare(label: str, variants: dict[str, list[str]], runs: int) -> None:
    got: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(runs):
        for k, args in variants.items():
            got[k].append(_time(args))
    for k, v in got.items():
        print(f"{label}: {k}: min {min(v) * 1000:,.1f} ms, median {statistics.median(v) * 1000:,.1f} ms "
              f"(n={len(v):,})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=30)
    args = ap.parse_args()
    py = sys.executable
    _compare("bare", {"import only": [py, "-c", "import spark_runner.cli.watchdog"],
                      "fork + relay": [py, "-c", "from spark_runner.cli.watchdog import fork; fork()"]}, args.runs)
    for cmd in (["list"], ["validate", "examples/orders-group.json"]):
        _compare(f"kassign {' '.join(cmd)}", {
            "one process": [py, "-c", ENTRY.format(patch=ONE_PROCESS), *cmd],
            "with parent": [py, "-c", ENTRY.format(patch=""), *cmd]}, max(1, args.runs // 3))


if __name__ == "__main__":
    main()
