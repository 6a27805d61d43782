"""Kafka protocol messages kafka-python does not carry, as kafka-python message schemas (JSON, written here).

``ConsumerGroupDescribe`` (API key 69, KIP-848): a consumer-protocol group's members, their subscriptions and
their current and target assignments.  The field layout is the one Apache Kafka's brokers speak (versions 0-1,
flexible from 0).
"""
