"""The service's Prometheus counters, in the text exposition format (version 0.0.4)."""

from __future__ import annotations

import threading
from collections import Counter

#: Upper bounds (seconds) of the ``kassign_request_seconds`` histogram buckets.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 600.0)


class Metrics:
    """Counters shared by every request thread (one lock).

    Examples
    --------
    >>> m = Metrics()
    >>> m.finish(200, 0.2, assigned=True, proven=True, fallback=False)
    >>> 'kassign_requests_total{code="200"} 1' in m.render()
    True
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.codes: Counter[int] = Counter()
        self.buckets = [0] * len(BUCKETS)
        self.count = 0
        self.total = 0.0
        self.assignments = 0
        self.fallbacks = 0
        self.proven = 0
        self.inflight = 0
        self.refused = 0

    def start(self) -> None:
        """A request was admitted (``kassign_inflight`` counts it until :meth:`finish`)."""
        with self._lock:
            self.inflight += 1

    def finish(self, code: int, seconds: float, *, assigned: bool = False, proven: bool = False,
               fallback: bool = False, admitted: bool = True) -> None:
        """Count one answered request."""
        with self._lock:
            if admitted:
                self.inflight -= 1
            self.codes[code] += 1
            self.count += 1
            self.total += seconds
            for i, b in enumerate(BUCKETS):
                if seconds <= b:
                    self.buckets[i] += 1
            self.assignments += assigned
            self.proven += proven
            self.fallbacks += fallback

    def render(self, workers: tuple[int, int, int] | None = None) -> str:
        """The exposition text; ``workers``: the pool's (serving, idle, spare) processes."""
        with self._lock:
            lines = ["# HELP kassign_requests_total Requests answered, by HTTP status.",
                     "# TYPE kassign_requests_total counter"]
            lines += [f'kassign_requests_total{{code="{c}"}} {n}' for c, n in sorted(self.codes.items())]
            lines += ["# HELP kassign_request_seconds Seconds from a request's first byte to its answer.",
                      "# TYPE kassign_request_seconds histogram"]
            lines += [f'kassign_request_seconds_bucket{{le="{b:g}"}} {n}'
                      for b, n in zip(BUCKETS, self.buckets, strict=True)]
            lines += [f'kassign_request_seconds_bucket{{le="+Inf"}} {self.count}',
                      f"kassign_request_seconds_sum {self.total:.6f}",
                      f"kassign_request_seconds_count {self.count}",
                      "# HELP kassign_assignments_total Assignments answered (status 200).",
                      "# TYPE kassign_assignments_total counter",
                      f"kassign_assignments_total {self.assignments}",
                      "# HELP kassign_fallbacks_total Assignments answered with Kafka's own assignor's.",
                      "# TYPE kassign_fallbacks_total counter",
                      f"kassign_fallbacks_total {self.fallbacks}",
                      "# HELP kassign_proven_total Assignments answered with a proven optimum (status optimal).",
                      "# TYPE kassign_proven_total counter",
                      f"kassign_proven_total {self.proven}",
                      "# HELP kassign_inflight Requests admitted and not yet answered.",
                      "# TYPE kassign_inflight gauge",
                      f"kassign_inflight {self.inflight}"]
            if workers is not None:
                lines += ["# HELP kassign_workers Worker processes: serving (busy or idle), idle, spare (warm, "
                          "standing in for one that is killed).",
                          "# TYPE kassign_workers gauge"]
                lines += [f'kassign_workers{{state="{k}"}} {n}' for k, n in zip(("serving", "idle", "spare"), workers,
                                                                               strict=True)]
            return "\n".join(lines) + "\n"
