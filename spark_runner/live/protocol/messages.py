"""kafka-python message classes for the schemas beside this module."""

from __future__ import annotations

from kafka.protocol.api_message import ApiMessage

from spark_runner.live import protocol


class ConsumerGroupDescribeRequest(ApiMessage, load_json=protocol):  # type: ignore[call-arg]
    """ConsumerGroupDescribe (API key 69) request."""


class ConsumerGroupDescribeResponse(ApiMessage, load_json=protocol):  # type: ignore[call-arg]
    """ConsumerGroupDescribe (API key 69) response."""
