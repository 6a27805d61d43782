"""The complete registry: every heuristic and every solver, by name."""

from __future__ import annotations

import importlib

from solver import registry
from solver.registry import AssignorSpec

#: Modules that register assignors or solvers when imported.
REGISTRANTS = ("heuristics", "solver.consumer.optimal", "solver.streams.optimal")


def load_all() -> list[AssignorSpec]:
    """Import every registrant module and return every registered spec."""
    for name in REGISTRANTS:
        importlib.import_module(name)
    return registry.all_specs()


#: Name prefix of every solver; the heuristics never use it (checked by the tests).
SOLVER_PREFIX = "optimal"


def canonical(name: str) -> str:
    """kassign's name for ``name``: itself, or the assignor a Kafka class name selects
    (``org.apache.kafka.clients.consumer.CooperativeStickyAssignor`` -> ``cooperative-sticky``;
    :func:`heuristics.shipped.from_class_name`).

    >>> canonical("org.apache.kafka.clients.consumer.RangeAssignor"), canonical("fair")
    ('range', 'fair')
    """
    if "." not in name and not name.endswith("Assignor"):
        return name  # not a class name: no need to import the heuristics (kassign assign -a optimal stays lean)
    from heuristics.shipped import from_class_name

    return from_class_name(name) or name


def get(name: str) -> AssignorSpec:
    """Look up ``name`` in the complete registry.

    Imports only as many registrant modules as it takes to find the name
    (solvers first for ``optimal*`` names, heuristics first otherwise): a
    one-off ``kassign assign`` then pays for the modules it uses, not for all
    of them.  An unknown name imports everything, so its error lists every
    known name.
    """
    name = canonical(name)
    solvers_first = name.startswith(SOLVER_PREFIX)
    order = sorted(REGISTRANTS, key=lambda m: m.startswith("solver.") != solvers_first)
    for module in order:
        try:
            return registry.get(name)
        except registry.UnknownAssignorError:
            importlib.import_module(module)
    return registry.get(name)
