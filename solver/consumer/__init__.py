"""The consumer-protocol optimum and everything measured against it.

:mod:`~solver.consumer.items` aggregates partitions (and co-partition units)
into classes; :mod:`~solver.consumer.flow` solves unit-item instances exactly by
min-cost flow; :mod:`~solver.consumer.exact` solves the rest by lexicographic
stages over class counts; :mod:`~solver.consumer.weighted_cpsat` is the CP-SAT model of
weighted-sum objectives and of the gaps' single stages; :mod:`~solver.consumer.optimal` chooses between them (the
``optimal`` solver of the registry).  :mod:`~solver.consumer.gaps` and
:mod:`~solver.consumer.frontier` measure assignments against the optimum.
"""
