"""The exact engine for items of different loads (weights, capacities, co-partition units of several sizes).

:mod:`.scaling` makes loads, capacities and move costs exact integers,
:mod:`.bounds` gives LP and knapsack lower bounds, :mod:`.engine` runs the
lexicographic stages over class counts with CP-SAT, and :mod:`.mip` offers
HiGHS / SCIP (bundled with OR-Tools) for the linear stages.
"""

from solver.consumer.exact.engine import STAGES, solve_exact

__all__ = ["STAGES", "solve_exact"]
