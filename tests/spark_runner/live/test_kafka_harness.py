"""The kafka test harness's own rules, where a wrong one would hide a failure (no broker needed)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.spark_runner.live.kafka_harness import empty_assignment


def _in_module(module: str, source: str, name: str) -> Any:
    """A function compiled as if it were defined in ``module`` (its frames then name that module)."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment

    scope: dict[str, Any] = {"__name__": module, "ConsumerProtocolAssignment": ConsumerProtocolAssignment}
    exec(compile(source, f"<{module}>", "exec"), scope)
    return scope[name]


def _raised(fn: Any, *args: Any) -> BaseException:
    with pytest.raises(Exception) as e:
        fn(*args)
    return e.value


def test_the_library_failing_to_decode_an_empty_assignment_is_recognised() -> None:
    # kafka-python's own decode of the zero bytes, called from its join completion
    join = _in_module("kafka.coordinator.consumer",
                      "def _on_join_complete_async(b):\n    return ConsumerProtocolAssignment.decode(b)\n",
                      "_on_join_complete_async")
    assert empty_assignment(_raised(join, b""))


def test_the_failure_is_recognised_as_the_cause_of_the_error_the_member_saw() -> None:
    # aiokafka's coordinator raises its own KafkaError from the decode failure, and the poll raises that one
    routine = _in_module("aiokafka.consumer.group_coordinator",
                         "def _on_join_complete(b):\n    return ConsumerProtocolAssignment.decode(b)\n"
                         "def _coordination_routine(b):\n"
                         "    try:\n        _on_join_complete(b)\n"
                         "    except Exception as exc:\n        raise RuntimeError('coordination') from exc\n",
                         "_coordination_routine")
    err = _raised(routine, b"")
    assert isinstance(err, RuntimeError) and empty_assignment(err)


@pytest.mark.parametrize(("module", "source", "name"), [
    # the same decode error raised in kassign's code (e.g. the assignor reading its user data) is a real failure
    ("spark_runner.live.assignor",
     "def _on_join_complete(b):\n    return ConsumerProtocolAssignment.decode(b)\n", "_on_join_complete"),
    # another error in the library's join completion
    ("kafka.coordinator.consumer", "def _on_join_complete_async(b):\n    raise ValueError(b)\n",
     "_on_join_complete_async"),
    # a decode failure outside join completion
    ("kafka.coordinator.consumer", "def _on_heartbeat(b):\n    return ConsumerProtocolAssignment.decode(b)\n",
     "_on_heartbeat"),
])
def test_other_failures_are_not_taken_for_the_broker(module: str, source: str, name: str) -> None:
    assert not empty_assignment(_raised(_in_module(module, source, name), b""))
