"""kassign on a live cluster: capture a group's state, and a live optimal assignor for Python clients.

* :mod:`spark_runner.live.capture` - ``kassign capture``: a group's members,
  subscriptions, assignments, partition counts, racks and lags as a
  ``kassign/v1`` instance (read-only; :mod:`spark_runner.live.broker` talks
  to the cluster).
* :mod:`spark_runner.live.assignor` - :class:`KassignOptimalAssignor`, a
  kafka-python 3 and aiokafka partition assignor (protocol ``kassign-optimal``)
  that hands out kassign's optimum.
* :mod:`spark_runner.live.wire` - the consumer protocol's subscription and
  assignment bytes, and kassign's user data.

``spark_runner.live.KassignOptimalAssignor`` is imported on first use, so that
``kassign capture`` does not load the assignor's dependencies.
"""

from __future__ import annotations

from typing import Any

__all__ = ["KassignOptimalAssignor"]


def __getattr__(name: str) -> Any:
    if name == "KassignOptimalAssignor":
        from spark_runner.live.assignor import KassignOptimalAssignor

        return KassignOptimalAssignor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
