"""Kafka's sticky family: the eager ``sticky`` and ``cooperative-sticky`` assignors.

Both run :mod:`~heuristics.sticky.core` (Kafka's ``AbstractStickyAssignor``):
``input`` (the members' claims as Kafka reads them), ``claims``, the
``constrained`` path (identical subscriptions, KAFKA-12464) and the ``general``
path with its ``balance`` and ``movements`` bookkeeping, and ``racks``.
"""

from heuristics.sticky import cooperative, eager

__all__ = ["cooperative", "eager"]
