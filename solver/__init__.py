"""kassign's solver: the problem model, the exact solvers, scoring, frontiers and capacity planning.

The public API is a handful of functions (:mod:`solver.api`) and the types
they take and return; everything else lives in sub-packages:
:mod:`solver.model` (instances, formats, scoring), :mod:`solver.consumer` (the
consumer optimum, gaps, frontier), :mod:`solver.streams` (Kafka Streams),
:mod:`solver.planning` (capacity planning), :mod:`solver.registry` (every
assignor and solver by name).  Importing :mod:`solver` loads no solver engine:
OR-Tools is imported when a function first needs it.

Examples
--------
>>> import solver
>>> from solver.io import parse_instance
>>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4},
...                        "members": [{"id": "a", "topics": ["T"]}, {"id": "b", "topics": ["T"]}]})
>>> res = solver.solve(inst)
>>> res.status is solver.Status.OPTIMAL, solver.score(inst, res.assignment)["max_load"]
(True, 2.0)
"""

from solver.api import frontier, plan, read_instance, score, solve
from solver.model import Assignment, Instance
from solver.result import Params, Result, Status

__all__ = ["Assignment", "Instance", "Params", "Result", "Status", "frontier", "plan", "read_instance", "score",
           "solve"]
