"""Kafka's greedy assignors, one module per assignor, all behind one interface.

Every assignor module registers its assignor(s) with
:func:`solver.registry.register` on import; importing this package imports every
one of them, so afterwards the registry (``solver.registry.get(name)``) holds
every heuristic.  Families live in sub-packages: :mod:`heuristics.sticky`
(``sticky``, ``cooperative-sticky``), :mod:`heuristics.kip848` (``uniform``,
``server-range``), :mod:`heuristics.streams` (Kafka Streams' task assignors);
``range``, ``roundrobin``, ``fair`` (KIP-49), ``stream-join-sticky``
(KIP-315) and ``lag-based`` (the lag-aware ``LagBasedPartitionAssignor`` of
``grantneale/kafka-lag-based-assignor``) are modules of their own.

The public API is the registry: ``solver.registry.get(name).run(instance, params)``
runs any assignor on an :class:`solver.Instance` and returns a
:class:`solver.Result`; ``solver.registry.all_specs()`` lists them (name, kind,
protocol, summary, source).  Assignor options go in ``Params.options``, e.g.
``{"rounds": "settle"}`` runs a cooperative assignor's follow-up rebalances
until nothing is withheld (``Result.extra["rounds"]``).

Examples
--------
>>> import heuristics
>>> import solver
>>> from solver import registry
>>> from solver.io import parse_instance
>>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4}, "members": [
...     {"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}, "generation": 1},
...     {"id": "b", "topics": ["T"]}]})
>>> res = registry.get("range").run(inst, solver.Params())
>>> res.status.value, res.assignment.to_lists()
('heuristic', {'a': {'T': [0, 1]}, 'b': {'T': [2, 3]}})
>>> first = registry.get("cooperative-sticky").run(inst, solver.Params())
>>> first.assignment.to_lists()  # round one: a gives up 2 and 3, nobody gets them yet
{'a': {'T': [0, 1]}, 'b': {}}
>>> settled = registry.get("cooperative-sticky").run(inst, solver.Params(options={"rounds": "settle"}))
>>> settled.assignment.to_lists(), settled.extra["rounds"]
({'a': {'T': [0, 1]}, 'b': {'T': [2, 3]}}, 2)
>>> sorted(s.name for s in registry.all_specs() if s.protocol == "streams" and s.kind == "heuristic")
['high-availability', 'kip924-sticky', 'state-store-weighted', 'sticky-task', 'streams-server-sticky']
"""

from __future__ import annotations

import importlib

#: Modules and sub-packages whose import registers assignors.
ASSIGNOR_MODULES = ("range", "roundrobin", "fair", "stream_join_sticky", "lag_based", "sticky", "kip848", "streams")

for _name in ASSIGNOR_MODULES:
    importlib.import_module(f"{__name__}.{_name}")
