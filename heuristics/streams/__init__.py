"""Kafka Streams' task assignors: ``high-availability`` (KIP-441), ``sticky-task`` and KIP-262's state-store-weighted.

``common`` holds what they share (client states, caught-up ranking); ``java``
Kafka Streams' own collection orders.
"""

from heuristics.streams import high_availability, kip924_sticky, server_sticky, state_store_weighted, sticky_task

__all__ = ["high_availability", "kip924_sticky", "server_sticky", "state_store_weighted", "sticky_task"]
