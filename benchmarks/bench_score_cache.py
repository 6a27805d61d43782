"""``kassign score`` twice on the same files: ``python -m benchmarks.bench_score_cache [--group ID]``.

Takes one weighted group of ``../shared/scenarios/optimal/weighted-scale.jsonl.gz`` (default
``ws411-3``: 1,366 partitions, 84 members), writes it and cooperative-sticky's settled assignment to
a temporary folder, then times the console script ``kassign score INSTANCE ASSIGNMENT --time-limit 10``
twice with an empty cache folder (``KASSIGN_CACHE_DIR``): the first call solves the optimum and the
gaps, the second reads them from the cache.  Prints both wall times and their ratio.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KASSIGN_SHARED", REPO.parent / "shared"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--group", default="ws411-3")
    ap.add_argument("--time-limit", default="10")
    args = ap.parse_args()
    src = SHARED / "scenarios" / "optimal" / "weighted-scale.jsonl.gz"
    if not src.exists():
        sys.exit(f"needs {src}")
    with gzip.open(src, "rt") as f:
        docs = [json.loads(line) for line in f]
    doc = next(d for d in docs if d.get("id") == args.group)
    kassign = str(Path(sys.executable).parent / "kassign")
    with tempfile.TemporaryDirectory() as d:
        inst, asg = Path(d) / "group.json", Path(d) / "coop.json"
        inst.write_text(json.dumps(doc.get("instance", doc)))
        subprocess.run([kassign, "assign", str(inst), "-a", "cooperative-sticky", "--settle", "-o", str(asg)],
                       check=True, capture_output=True)
        env = {**os.environ, "KASSIGN_CACHE_DIR": str(Path(d) / "cache")}
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            subprocess.run([kassign, "score", str(inst), str(asg), "--time-limit", args.time_limit, "--json"],
                           check=True, capture_output=True, env=env)
            times.append(time.perf_counter() - t0)
    print(f"{args.group}: first score {times[0]:.2f} s, second {times[1]:.2f} s "
          f"({times[1] / times[0]:.1%} of the first)")


if __name__ == "__main__":
    main()
