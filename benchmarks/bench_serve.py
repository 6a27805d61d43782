"""``kassign serve`` latency and throughput: ``python -m benchmarks.bench_serve``.

Starts the real service (``kassign serve --port 0``) on 127.0.0.1 and times
``POST /v1/assign`` from a client (HTTP on a fresh connection each, JSON both ways:
what a plug-in pays) for a member joining a group whose other members own every
partition round-robin: 100, 1,000 and 10,000 partitions, unit weights (min-cost
flow) and lag weights (0..10,000 records a partition, the exact engine), the default
deadline (5,000 ms).  Beside it, in the same run, Kafka's ``uniform`` on the same
instance: in this process (the assignor alone) and through the service
(``"assignor": "uniform"``: the service's own cost).  Then the throughput: clients
sending the same request back to back for ``--seconds`` seconds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from solver.io import parse_instance
from solver.model.scoring import score
from solver.result import Params
from spark_runner.assignors import get

KASSIGN = str(Path(sys.executable).with_name("kassign"))
SIZES = ((100, 4, 10), (1_000, 10, 50), (10_000, 20, 100))  # partitions, topics, members


def group(partitions: int, topics: int, members: int, lag: bool, seed: int = 0) -> dict[str, Any]:
    """``members - 1`` members own every partition round-robin (generation 5); one member joins."""
    rng = random.Random(seed)
    per = partitions // topics
    names = [f"topic-{i:02d}" for i in range(topics)]
    owned: list[dict[str, list[int]]] = [{} for _ in range(members - 1)]
    k = 0
    for t in names:
        for p in range(per):
            owned[k % (members - 1)].setdefault(t, []).append(p)
            k += 1
    spec: dict[str, Any] = {t: ({"partitions": per, "weights": [rng.randint(0, 10_000) for _ in range(per)]}
                                if lag else per) for t in names}
    mems = [{"id": f"member-{i:03d}", "topics": names, "owned": owned[i], "generation": 5} for i in range(members - 1)]
    mems.append({"id": f"member-{members - 1:03d}", "topics": names})
    doc: dict[str, Any] = {"format": "kassign/v1", "name": f"bench-{partitions}", "topics": spec, "members": mems}
    if lag:
        doc["units"] = {"weights": "records"}
    return doc


class Service:
    """The service subprocess."""

    def __init__(self, workers: int, spares: int = 1) -> None:
        self.workers, self.spares = workers, spares
        self.proc = subprocess.Popen([KASSIGN, "serve", "--port", "0", "--workers", str(workers),
                                      "--spare-workers", str(spares)],
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        else:
            raise SystemExit(f"kassign serve did not start (exit {self.proc.wait()})")

    def post(self, body: bytes) -> tuple[int, dict[str, Any]]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("POST", "/v1/assign", body=body, headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read())
        finally:
            conn.close()

    def settle(self, timeout: float = 300.0) -> None:
        """Wait until every worker and spare is warm and idle (a worker killed at a deadline is being replaced)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
            conn.close()
            n = dict(re.findall(r'^kassign_workers\{state="(\w+)"\} (\d+)$', text, re.M))
            if n and n["idle"] == n["serving"] == str(self.workers) and n["spare"] == str(self.spares):
                return
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(60)


def pct(xs: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``xs``."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * len(s) + 0.5) - 1))]


def ms(x: float) -> str:
    return f"{x * 1000:,.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=20, help="requests per group (p99 of 20 is their maximum)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seconds", type=float, default=20.0, help="duration of each throughput run")
    ap.add_argument("--clients", type=int, default=8, help="concurrent clients of the throughput runs")
    ap.add_argument("--long-deadline-ms", type=int, default=60_000, help="deadline of the longer lag runs")
    ap.add_argument("--long-repeat", type=int, default=3, help="requests of each longer lag run")
    args = ap.parse_args()
    svc = Service(args.workers)
    try:
        print(f"kassign serve, {args.workers} worker(s), {os.cpu_count()} cores; {args.repeat} requests each, "
              "one at a time; milliseconds from the client")
        print()
        print("| partitions | members | weights | optimum p50 | p99 | status (proven/all) | fallbacks "
              "| max load: optimum / uniform | uniform in-process p50 | p99 | uniform via service p50 | p99 |")
        print("|---:|---:|---|---:|---:|---|---:|---|---:|---:|---:|---:|")
        for partitions, topics, members in SIZES:
            for lag in (False, True):
                doc = group(partitions, topics, members, lag)
                inst = parse_instance(doc)
                body = json.dumps({"instance": doc}).encode()
                ubody = json.dumps({"instance": doc, "assignor": "uniform"}).encode()
                svc.settle()
                get("uniform").run(inst, Params())  # warm: imports and caches of both sides out of the figures
                svc.post(body)
                times, utimes, svc_u = [], [], []
                proven = falls = 0
                last: dict[str, Any] = {}
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    code, last = svc.post(body)
                    times.append(time.perf_counter() - t0)
                    assert code == 200, last
                    proven += last["stats"]["status"] == "optimal" and not last["service"]["fallback"]
                    falls += bool(last["service"]["fallback"])
                    t0 = time.perf_counter()
                    res = get("uniform").run(inst, Params())
                    utimes.append(time.perf_counter() - t0)
                    t0 = time.perf_counter()
                    code, _ = svc.post(ubody)
                    svc_u.append(time.perf_counter() - t0)
                    assert code == 200
                from solver.io import parse_assignment

                opt_load = score(inst, parse_assignment(last))["weighted_max_load"]
                uni_load = score(inst, res.assignment)["weighted_max_load"]
                print(f"| {partitions:,} | {members} | {'lag' if lag else 'unit'} | {ms(pct(times, .5))} | "
                      f"{ms(pct(times, .99))} | {last['stats']['status']} ({proven}/{args.repeat}) | {falls} | "
                      f"{opt_load:,.6g} / {uni_load:,.6g} | {ms(pct(utimes, .5))} | {ms(pct(utimes, .99))} | "
                      f"{ms(pct(svc_u, .5))} | {ms(pct(svc_u, .99))} |", flush=True)
        print()
        print(f"Lag weights with a longer deadline ({args.long_deadline_ms:,} ms), {args.long_repeat} requests each")
        print()
        print("| partitions | members | p50 | p99 | status | fallbacks | max load: answer / uniform |")
        print("|---:|---:|---:|---:|---|---:|---|")
        for partitions, topics, members in SIZES[:2]:
            doc = group(partitions, topics, members, True)
            inst = parse_instance(doc)
            body = json.dumps({"instance": doc, "deadline_ms": args.long_deadline_ms}).encode()
            svc.settle()
            times, statuses, falls = [], [], 0
            for _ in range(args.long_repeat):
                t0 = time.perf_counter()
                code, last = svc.post(body)
                times.append(time.perf_counter() - t0)
                assert code == 200, last
                statuses.append(last["stats"]["status"])
                falls += bool(last["service"]["fallback"])
            from solver.io import parse_assignment

            load = score(inst, parse_assignment(last))["weighted_max_load"]
            uni = score(inst, get("uniform").run(inst, Params()).assignment)["weighted_max_load"]
            print(f"| {partitions:,} | {members} | {ms(pct(times, .5))} | {ms(pct(times, .99))} | "
                  f"{', '.join(sorted(set(statuses)))} | {falls} | {load:,.6g} / {uni:,.6g} |", flush=True)
        print()
        print(f"Throughput: {args.clients} clients back to back for {args.seconds:g} s each")
        print()
        print("| partitions | weights | assignments/s | answers 200 | fallbacks | p50 ms | p99 ms |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        for partitions, topics, members in SIZES[:2]:
            for lag in (False, True):
                body = json.dumps({"instance": group(partitions, topics, members, lag)}).encode()
                done: list[float] = []
                codes: list[int] = []
                svc.settle()
                end = time.monotonic() + args.seconds

                tfalls: list[int] = []

                def client(body: bytes = body, end: float = end, done: list[float] = done,
                           codes: list[int] = codes, tfalls: list[int] = tfalls) -> None:
                    while time.monotonic() < end:
                        t0 = time.perf_counter()
                        code, doc = svc.post(body)
                        done.append(time.perf_counter() - t0)
                        codes.append(code)
                        if code == 200 and doc["service"]["fallback"]:
                            tfalls.append(1)

                start = time.monotonic()
                threads = [threading.Thread(target=client) for _ in range(args.clients)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                wall = time.monotonic() - start
                ok = codes.count(200)
                print(f"| {partitions:,} | {'lag' if lag else 'unit'} | {ok / wall:,.1f} | {ok:,} of {len(codes):,} | "
                      f"{len(tfalls):,} | {ms(statistics.median(done))} | {ms(pct(done, .99))} |", flush=True)
    finally:
        svc.stop()


if __name__ == "__main__":
    main()
