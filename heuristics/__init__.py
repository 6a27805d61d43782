"""Kafka's greedy assignors, one module per assignor, all behind one interface.

Every assignor module registers its assignor(s) with
:func:`solver.registry.register` on import; importing this package imports every
one of them, so afterwards the registry (``solver.registry.get(name)``) holds
every heuristic.  Families live in sub-packages: :mod:`heuristics.sticky`
(``sticky``, ``cooperative-sticky``), :mod:`heuristics.kip848` (``uniform``,
``server-range``), :mod:`heuristics.streams` (Kafka Streams' task assignors);
``range``, ``roundrobin``, ``fair`` (KIP-49) and ``stream-join-sticky``
(KIP-315) are modules of their own.

Examples
--------
>>> import heuristics
>>> from solver import registry
>>> registry.get("cooperative-sticky").protocol
'consumer'
"""

from __future__ import annotations

import importlib

#: Modules and sub-packages whose import registers assignors.
ASSIGNOR_MODULES = ("range", "roundrobin", "fair", "stream_join_sticky", "sticky", "kip848", "streams")

for _name in ASSIGNOR_MODULES:
    importlib.import_module(f"{__name__}.{_name}")
