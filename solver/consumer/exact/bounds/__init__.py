"""Lower bounds of the exact engine, each valid for every assignment (so also for restricted models).

:mod:`.max_load` (Hall sets, integrality, grain), :mod:`.moves` (forced moves,
exact 0/1 covers per previous owner, the receiver side) and :mod:`.sum_sq`
(the even split).
"""

from solver.consumer.exact.bounds.max_load import max_load_bound
from solver.consumer.exact.bounds.moves import moves_bound
from solver.consumer.exact.bounds.sum_sq import sum_sq_bound

__all__ = ["max_load_bound", "moves_bound", "sum_sq_bound"]
