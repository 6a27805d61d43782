"""Offline capacity planning: how many instances a workload needs, what scaling and failures cost.

:func:`solver.planning.plan.plan` is the entry point (its module docstring
describes the model); the modules beside it do one step each: ``config``
(parameters), ``items`` (what is packed), ``binpacking`` (packing algorithms;
``binpacking_sat`` its CP-SAT models),
``planner`` (fleets), ``minimum`` (the minimum with its proof), ``balance``,
``moves`` / ``moves_greedy`` (per instance count), ``resilience`` (N-K),
``kafka`` (what Kafka's assignor would do), ``baselines`` (rules of thumb) and
``rows`` (one table row).
"""

from solver.planning.config import PlanConfig, PlanUsageError, parse_range
from solver.planning.plan import plan

__all__ = ["PlanConfig", "PlanUsageError", "parse_range", "plan"]
