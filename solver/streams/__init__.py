"""Kafka Streams: the task model, its file format, scoring, the optimum and the wire codec.

:mod:`~solver.streams.model` (tasks, clients, config, assignments; task ids and
process UUIDs in :mod:`~solver.streams.ids`),
:mod:`~solver.streams.format` (``protocol: streams`` documents; their pydantic
schema is :mod:`~solver.streams.schema`),
:mod:`~solver.streams.scoring` (Streams metrics), :mod:`~solver.streams.problem`
(the arrays the optimum works on), :mod:`~solver.streams.flow` (min-cost flow
certificates) and :mod:`~solver.streams.optimal` (the ``optimal-streams``
solver), :mod:`~solver.streams.subscription_info` (Kafka's ``SubscriptionInfo``
and consumer-protocol subscription bytes).
"""
