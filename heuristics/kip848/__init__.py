"""KIP-848's server-side assignors: ``uniform`` and ``server-range``.

``java_order`` holds what they share: the coordinator's Java hashing and hash-map iteration order.
"""

from heuristics.kip848 import server_range, uniform

__all__ = ["server_range", "uniform"]
