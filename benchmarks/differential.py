"""The long differential campaign: kassign's Kafka-named assignors against Kafka's released classes.

``python -m benchmarks.differential [--cases 10000] [--assignors a,b] [--releases 4.3.1,4.4.0] [--seed 31]``

For each assignor, ``--cases`` random groups (the kinds of ``tests/heuristics/differential/strategies.py``,
drawn from ``--seed``) go to Kafka's own classes at every release of the matrix that has the assignor
(one JVM per release, batches of 500) and to kassign at the same release (computed once per Kafka rule of
the assignor, as releases that share a rule run the same code; the CI sample runs kassign at every
release).  Prints one line per (assignor, release): cases, exact matches, Kafka's cases per second; the
first mismatches in full; and a summary line.  Exit 1 when any case differs.  Needs the Java build (`make test` or
`cd java && mvn -B -q package -DskipTests`).  Figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import Any

from solver import Params
from solver.registry import get
from tests.heuristics.differential.check import (
    Mismatch,
    consumer_answer,
    kafka_consumer_answer,
    kafka_streams_view,
    releases_of,
    streams_answer,
)
from tests.heuristics.differential.reference import Matrix, with_topic_ids
from tests.heuristics.differential.sample import shapes_sample
from tests.heuristics.differential.strategies import consumer_group
from tests.heuristics.differential.streams_groups import streams_group

BATCH = 500
#: assignor -> the case maker (a group from a shape)
FAMILIES: dict[str, Callable[[Any], dict[str, Any]]] = {
    "range": lambda s: consumer_group(s),
    "roundrobin": lambda s: consumer_group(s),
    "sticky": lambda s: consumer_group(s),
    "cooperative-sticky": lambda s: consumer_group(s),
    "uniform": lambda s: consumer_group(s, conflicts=False),
    "server-range": lambda s: consumer_group(s, conflicts=False),
    "high-availability": lambda s: streams_group(s, "high-availability"),
    "sticky-task": lambda s: streams_group(s, "sticky-task"),
    "kip924-sticky": lambda s: streams_group(s, "kip924-sticky"),
    "streams-server-sticky": lambda s: streams_group(s, "streams-server-sticky"),
}


def run(assignor: str, cases: int, seed: int, matrix: Matrix, releases: list[str]) -> tuple[int, int]:
    """Checks one assignor; returns (cases checked, mismatches) summed over releases."""
    make = FAMILIES[assignor]
    spec = get(assignor)
    total = bad = 0
    stats = {r: [0, 0, 0.0] for r in releases}  # cases, exact, Kafka seconds
    shown = 0
    done = 0
    for start in range(0, cases, BATCH):
        shapes = shapes_sample(min(BATCH, cases - start), seed=seed * 1_000_003 + start)
        insts = [make(s) for s in shapes]
        streams = spec.protocol == "streams"
        docs = [{"assignor": assignor, "instance": i if streams else with_topic_ids(i)} for i in insts]
        ours_by_rule: dict[tuple[str | None, int], dict[str, Any]] = {}
        for r in releases:
            t0 = time.perf_counter()
            answers = matrix[r].ask_many(docs)
            stats[r][2] += time.perf_counter() - t0
            rule = spec.rule(Params(kafka_version=r))
            for k, (inst, kafka) in enumerate(zip(insts, answers, strict=True)):
                theirs = (kafka_streams_view(kafka, assignor) if streams
                          else kafka_consumer_answer(kafka))
                # kassign's answer once per rule (releases that share a rule run the same code path); the
                # CI sample runs kassign at every release
                if (rule, k) not in ours_by_rule:
                    ours_by_rule[(rule, k)] = (streams_answer if streams else consumer_answer)(assignor, inst, r)
                ours = ours_by_rule[(rule, k)]
                stats[r][0] += 1
                if ours == theirs:
                    stats[r][1] += 1
                elif shown < 3:
                    shown += 1
                    print(f"MISMATCH {inst['name']}: {Mismatch(assignor, r, ours, theirs)}", file=sys.stderr)
        done += len(insts)
        print(f"  {assignor}: {done:,}/{cases:,} cases at {len(releases)} releases", file=sys.stderr, flush=True)
    for r in releases:
        n, ok, secs = stats[r]
        total += n
        bad += n - ok
        rate = n / secs if secs else 0.0
        print(f"{assignor:20} Kafka {r:6}  {ok:,}/{n:,} exact  Kafka's classes {rate:,.0f} cases/s")
    return total, bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=10_000, help="cases per assignor (default 10,000)")
    ap.add_argument("--assignors", default=",".join(FAMILIES), help="comma-separated (default: all)")
    ap.add_argument("--releases", default="", help="comma-separated releases of the matrix (default: all built)")
    ap.add_argument("--seed", type=int, default=31)
    args = ap.parse_args(argv)
    names = [a for a in args.assignors.split(",") if a]
    unknown = [a for a in names if a not in FAMILIES]
    if unknown:
        ap.error(f"unknown assignor(s) {', '.join(unknown)}; known: {', '.join(FAMILIES)}")
    matrix = Matrix([r for r in args.releases.split(",") if r] or None)
    total = bad = 0
    t0 = time.perf_counter()
    try:
        for a in names:
            n, b = run(a, args.cases, args.seed, matrix, releases_of(a, matrix))
            total += n
            bad += b
    finally:
        matrix.close()
    print(f"differential campaign: {total - bad:,}/{total:,} exact over {len(names)} assignors, seed {args.seed}, "
          f"{time.perf_counter() - t0:,.0f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
