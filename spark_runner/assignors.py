"""The complete registry: every heuristic and every solver, by name."""

from __future__ import annotations

import importlib

from solver import registry
from solver.registry import AssignorSpec

#: Modules that register assignors or solvers when imported.
REGISTRANTS = ("heuristics", "solver.optimal", "solver.streams_optimal")


def load_all() -> list[AssignorSpec]:
    """Import every registrant module and return every registered spec."""
    for name in REGISTRANTS:
        importlib.import_module(name)
    return registry.all_specs()


def get(name: str) -> AssignorSpec:
    """Look up ``name`` in the complete registry."""
    load_all()
    return registry.get(name)
