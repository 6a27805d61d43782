"""Loading speed of large instances: ``python -m benchmarks.bench_formats [--partitions N]``.

Writes a Kafka-scale instance (500 topics x 2000 partitions, 2000 members each
owning its round-robin share) to a temporary file, then times reading its text
(plain and through the bounded reader), ``read_instance`` and
``previous_owners`` on it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from solver.io import read_instance
from solver.model.files import read_text
from solver.model.semantics import previous_owners


def build(topics: int, partitions: int, members: int) -> dict:
    """An instance where every member owns its round-robin share of every topic."""
    names = [f"topic-{i:03d}" for i in range(topics)]
    mem = []
    for m in range(members):
        owned = {t: list(range(m, partitions, members)) for t in names}
        mem.append({"id": f"consumer-{m:04d}", "topics": names, "owned": owned, "generation": 1})
    return {"format": "kassign/v1", "name": "bench", "topics": dict.fromkeys(names, partitions), "members": mem}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--topics", type=int, default=500)
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--members", type=int, default=2000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "big.json"
        f.write_text(json.dumps(build(args.topics, args.partitions, args.members)))
        size = f.stat().st_size / 2**20
        r0 = time.perf_counter()
        f.read_text(encoding="utf-8")
        r1 = time.perf_counter()
        read_text(f)  # the bounded, checked reader every input goes through
        r2 = time.perf_counter()
        t0 = time.perf_counter()
        inst = read_instance(f)
        t1 = time.perf_counter()
        owners = previous_owners(inst)
        t2 = time.perf_counter()
    n = sum(o.size for o in owners.values())
    print(f"{args.topics} topics x {args.partitions} partitions = {n} topic-partitions, {args.members} members, "
          f"{size:.0f} MiB JSON")
    print(f"text: Path.read_text {r1 - r0:.2f} s, bounded read_text {r2 - r1:.2f} s")
    print(f"read_instance: {t1 - t0:.2f} s   previous_owners: {t2 - t1:.2f} s")


if __name__ == "__main__":
    main()
