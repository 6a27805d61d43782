"""KIP-848's server-side assignors: ``uniform`` and ``server-range`` (shared helpers in ``common``)."""

from heuristics.kip848 import server_range, uniform

__all__ = ["server_range", "uniform"]
