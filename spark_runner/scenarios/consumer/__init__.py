"""Rebalance scenarios: an initial group and a sequence of events, generated from (parameters, seed).

A :class:`Scenario` is an initial :class:`~solver.model.Instance` (no owned
partitions) plus a tuple of fully concrete :class:`Event` objects.  Every random
choice is made once, by :func:`generate`, from ``numpy.random.Generator(PCG64(seed))``;
events carry their data (new member ids, new topics with their weights, ...)
so that :func:`apply_event` is a pure function without randomness:

    next_instance = apply_event(instance, event, assignment)

``assignment`` is the output of one assignor on ``instance``; it becomes the
``owned`` claims of the surviving members at the next generation.  Each
assignor therefore carries its own state through the same sequence of group
changes.

Event semantics (what the next rebalance sees)
----------------------------------------------
``join``
    one new member (fresh member id, no claims) joins, appended to the member list.
``leave``
    one member leaves the group; it and its claims are gone.
``crash``
    one member's process dies and comes back under the same identity without
    its state: it stays in the group (same id, same position) but its claims
    disappear (generation -1), as after a crash of a static member.
``rolling-restart``
    a block of consecutive steps, one per member in list order: the member
    shuts down and restarts under a new member id (same client prefix,
    ``instance_id``, rack and subscription, no claims), appended at the end
    of the member list as a rejoining consumer is.
``subscription-change``
    one member changes its subscription (``two-groups``: the next member of
    the old version moves to the new version's subscription, and back once
    all have moved).
``topic-added``
    a new topic; subscribers follow the subscription pattern.
``partition-expansion``
    a topic (and every topic co-partitioned with it) gains partitions.
``scale-out`` / ``scale-in``
    ``scale_k`` members join, or leave, in one rebalance.
``weight-drift``
    every partition weight is multiplied by a lognormal factor (only with
    weighted scenarios).

Claims of surviving members carry the generation of the step that produced
them (step ``n``'s claims were assigned at step ``n - 1`` and carry generation
``n``); members that just joined, restarted or crashed claim nothing
(generation -1).  Claims on topics a member no longer subscribes to, or on
partitions that no longer exist, are dropped.

The code, by concern: :mod:`~spark_runner.scenarios.consumer.params` (parameters, checks, scenario ids),
:mod:`~spark_runner.scenarios.consumer.events` (events and :func:`apply_event`),
:mod:`~spark_runner.scenarios.consumer.generation` (the initial group and the drawn events); the checks and
draws both generators share are in :mod:`spark_runner.scenarios.checks` and :mod:`spark_runner.scenarios.draws`.
"""

from spark_runner.scenarios.checks import (
    JAVA_INT_MAX,
    JAVA_LONG_MAX,
    MAX_SCENARIO_MEMBERS,
    MAX_SCENARIO_PAIRS,
    MAX_SCENARIO_PARTITIONS,
    MAX_SCENARIO_STEPS,
    CheckedParams,
    check_seed,
    size_problems,
)
from spark_runner.scenarios.consumer.events import Event, NewMember, apply_event, strip_claims
from spark_runner.scenarios.consumer.generation import Scenario, generate
from spark_runner.scenarios.consumer.params import (
    EVENT_KINDS,
    FIELD_CHECKS,
    SUBSCRIPTIONS,
    WEIGHTS,
    ScenarioParams,
    scenario_id,
)
from spark_runner.scenarios.draws import draw_events, draw_leavers, membership_applicable, random_rack, replica_racks

__all__ = [
    "EVENT_KINDS",
    "FIELD_CHECKS",
    "JAVA_INT_MAX",
    "JAVA_LONG_MAX",
    "MAX_SCENARIO_MEMBERS",
    "MAX_SCENARIO_PAIRS",
    "MAX_SCENARIO_PARTITIONS",
    "MAX_SCENARIO_STEPS",
    "SUBSCRIPTIONS",
    "WEIGHTS",
    "CheckedParams",
    "Event",
    "NewMember",
    "Scenario",
    "ScenarioParams",
    "apply_event",
    "check_seed",
    "draw_events",
    "draw_leavers",
    "generate",
    "membership_applicable",
    "random_rack",
    "replica_racks",
    "scenario_id",
    "size_problems",
    "strip_claims",
]
