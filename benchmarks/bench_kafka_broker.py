"""Apache Kafka 4.4.0 test broker start-up: ``python -m benchmarks.bench_kafka_broker [--runs N]``.

Starts the ``kafka`` tests' broker (``tests/kafka_broker.py``: format a fresh KRaft log directory with
Kafka's StorageTool, then one JVM running broker and controller on 127.0.0.1) ``--runs`` times, one after the
other, and prints per run the seconds from the format command to the first served request (ApiVersions
and DescribeCluster answered), the format alone, and the broker's peak resident memory.  Needs Java 17 and the
``java/broker`` classpath (``cd java && mvn -B -q package -DskipTests``, built here if missing).
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import tempfile
from pathlib import Path


def main() -> None:
    from tests.kafka_broker import KAFKA_VERSION, start_apache_kafka

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3, help="broker starts, one after the other (default 3)")
    args = ap.parse_args()
    logging.getLogger("tests.kafka_broker").setLevel(logging.ERROR)
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    print(f"Apache Kafka {KAFKA_VERSION} (KRaft, broker+controller in one JVM), {platform.machine()} "
          f"{os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.1f} at start")
    starts, formats, rss = [], [], []
    for run in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="bench-kafka-") as d:
            broker = start_apache_kafka(Path(d))
            try:
                pass
            finally:
                broker.stop()
        starts.append(broker.start_s)
        formats.append(broker.format_s)
        peak = broker.peak_rss / 1024 if broker.peak_rss is not None else float("nan")
        rss.append(peak)
        print(f"run {run}: {broker.start_s:,.1f} s to the first served request (format {broker.format_s:,.1f} s), "
              f"peak RSS {peak:,.0f} MiB")
    print(f"median of {args.runs}: {statistics.median(starts):,.1f} s to the first served request "
          f"(format {statistics.median(formats):,.1f} s), peak RSS {statistics.median(rss):,.0f} MiB (measured)")


if __name__ == "__main__":
    main()
