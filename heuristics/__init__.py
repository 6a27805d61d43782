"""Kafka's greedy assignors, one module per assignor, all behind one interface.

Every module registers its assignor(s) with :func:`solver.registry.register`
on import; importing this package imports every module in it, so the registry
holds every heuristic afterwards.
"""

from __future__ import annotations

import importlib
import pkgutil

for _mod in pkgutil.iter_modules(__path__):
    if not _mod.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod.name}")
