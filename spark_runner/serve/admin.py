"""Weights from the cluster: each partition's lag (log end offset - committed offset) through the Admin API.

The same admin client and lag rule as ``kassign capture --weights lag``
(:class:`spark_runner.live.broker.Broker`, :func:`heuristics.lag_based.partition_lag`:
a partition without a committed offset lags from its log start, as
``auto.offset.reset=earliest`` would read it).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from spark_runner.serve.request import RequestError, Weights, apply_weights

#: Seconds the admin client may take to connect and for one request, at most (a request's deadline may cut
#: it shorter).
ADMIN_TIMEOUT = 10.0


class AdminLag:
    """One admin connection to the cluster, shared by the requests (one lookup at a time)."""

    def __init__(self, bootstrap: str, config: Mapping[str, Any] | None = None) -> None:
        from spark_runner.live.broker import check_bootstrap

        self.bootstrap = check_bootstrap(bootstrap)  # ClientConfigError (exit 2) for a malformed address
        self.config = dict(config or {})
        self._lock = threading.Lock()
        self._broker: Any = None

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            if self._broker is not None:
                self._broker.close()
                self._broker = None

    def _lookup(self, group: str, parts: list[tuple[str, int]]) -> dict[tuple[str, int], float]:
        from heuristics.lag_based import partition_lag
        from spark_runner.live.broker import Broker, CaptureError

        try:
            if self._broker is None:
                self._broker = Broker(self.bootstrap, self.config, timeout=ADMIN_TIMEOUT)
            committed = self._broker.committed(group)
            end = self._broker.offsets(parts, latest=True)
            start = self._broker.offsets(parts, latest=False)
        except CaptureError:
            if self._broker is not None:
                self._broker.close()
            self._broker = None  # a fresh connection next time
            raise
        return {(t, p): float(partition_lag(committed.get((t, p)), start.get((t, p), 0), end.get((t, p), 0)))
                for t, p in parts}

    def lag(self, group: str, parts: list[tuple[str, int]], seconds: float) -> dict[tuple[str, int], float]:
        """Each partition's lag for ``group``, within ``seconds`` (else 503 naming ``weights.source``)."""
        box: list[Any] = []
        if not self._lock.acquire(timeout=max(0.0, seconds)):
            raise RequestError(503, "the Admin API is busy with another request's lookup", "weights.source")

        def work() -> None:
            try:
                box.append(self._lookup(group, parts))
            except Exception as e:  # CaptureError (unreachable, not authorised...) or a client error
                box.append(e)
            finally:
                self._lock.release()

        worker = threading.Thread(target=work, name="kassign-admin", daemon=True)
        worker.start()
        worker.join(seconds)
        if not box:
            raise RequestError(503, f"the Admin API at {self.bootstrap} did not answer within {seconds:.3g} s",
                               "weights.source")
        if isinstance(box[0], Exception):
            raise RequestError(503, f"lag from the Admin API: {box[0]}", "weights.source")
        out: dict[tuple[str, int], float] = box[0]
        return out

    def apply(self, instance: dict[str, Any], group: str, seconds: float) -> dict[str, Any]:
        """``instance`` weighted by ``group``'s lag on each of its partitions (unit ``records``)."""
        parts = [(t, p) for t, spec in (instance.get("topics") or {}).items()
                 for p in range(_count(spec))]
        lags = self.lag(group, parts, seconds)
        per: dict[str, dict[int, float]] = {}
        for (t, p), w in lags.items():
            per.setdefault(t, {})[p] = w
        return apply_weights(instance, Weights("records", per))


def _count(spec: Any) -> int:
    n = spec if isinstance(spec, int) else spec.get("partitions") if isinstance(spec, dict) else None
    if isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= 1_000_000:
        return n
    return 0  # the worker names what is wrong with it
