"""Invariants shared by the tests of Kafka Streams task assignors."""

from __future__ import annotations

from solver.model import Instance
from solver.streams.model import StreamsAssignment


def assert_actives_and_standbys(instance: Instance, a: StreamsAssignment) -> None:
    """Every task is active exactly once; a stateful task has the required standbys, none on its active's client."""
    spec = instance.streams
    assert sorted(t for ca in a.clients.values() for t in ca.active) == sorted(spec.task_ids)
    need = min(spec.config.num_standby_replicas, len(spec.clients) - 1)
    for t in spec.tasks:
        holders = [c for c, ca in a.clients.items() if t.id in ca.standby]
        assert len(holders) == (need if t.stateful else 0)
        assert all(t.id not in a.get(c).active for c in holders)
