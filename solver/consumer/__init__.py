"""The consumer-protocol optimum and everything measured against it.

:mod:`~solver.consumer.items` aggregates partitions (and co-partition units)
into classes; :mod:`~solver.consumer.flow` solves unit-item instances exactly by
min-cost flow; :mod:`~solver.consumer.cpsat` solves the rest by lexicographic
CP-SAT stages; :mod:`~solver.consumer.optimal` chooses between them (the
``optimal`` solver of the registry).  :mod:`~solver.consumer.gaps` and
:mod:`~solver.consumer.frontier` measure assignments against the optimum;
:mod:`~solver.consumer.flow_nx` is an independent networkx reference used by the tests.
"""
