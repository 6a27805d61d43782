"""Generated rebalance scenarios: :mod:`~spark_runner.scenarios.consumer` (consumer groups) and
:mod:`~spark_runner.scenarios.streams` (Kafka Streams applications), deterministic from (parameters, seed)."""
