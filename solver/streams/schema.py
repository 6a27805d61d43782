"""The pydantic schema of a Streams instance document (``protocol: streams``).

Split out of :mod:`solver.streams.format` (validation, reading and writing),
which re-exports every name here.  The specs check types and ranges only (Java
ints and longs, the configs Kafka accepts); what the fields mean together is
checked by :func:`solver.streams.format.parse_streams_instance`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr

from solver.model.schema import INT32_MAX, KafkaVersionField, UnitsSpec

#: A Java int (ids, partition counts, thread counts, configs): Kafka cannot represent more.
NonNegInt = Annotated[int, Field(strict=True, ge=0, le=INT32_MAX)]
#: A Java long (lags, offsets): Kafka cannot represent more.
NonNegLong = Annotated[int, Field(strict=True, ge=0, le=2**63 - 1)]
PosInt = Annotated[int, Field(strict=True, ge=1, le=INT32_MAX)]
#: A Java int (Kafka's ``Type.INT`` configs, no further validation).
JavaInt = Annotated[int, Field(strict=True, ge=-(2**31), le=2**31 - 1)]
RackName = Annotated[str, Field(strict=True, min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TaskSpec(_Strict):
    """An explicit task."""

    id: StrictStr
    stateful: StrictBool = True
    stores: NonNegInt | None = None
    source_racks: list[list[RackName]] | None = None
    changelog_racks: list[list[RackName]] | None = None


class SubtopologySpec(_Strict):
    """A subtopology: source topics with partition counts, statefulness, state stores."""

    id: NonNegInt
    source_topics: dict[str, NonNegInt]
    stateful: StrictBool = True
    stores: NonNegInt | None = None


#: A Java long, signed (a reported task offset sum).
JavaLong = Annotated[int, Field(strict=True, ge=-(2**63), le=2**63 - 1)]


class MemberSpec(_Strict):
    """A KIP-1071 group member of a process (one stream thread)."""

    id: Annotated[str, Field(strict=True, min_length=1)]
    active: list[StrictStr] = Field(default_factory=list)
    standby: list[StrictStr] = Field(default_factory=list)
    current_active: list[StrictStr] | None = None
    current_standby: list[StrictStr] | None = None
    task_offsets: dict[str, JavaLong] = Field(default_factory=dict)


class ClientSpec(_Strict):
    """A Kafka Streams client (one process)."""

    id: Annotated[str, Field(strict=True, min_length=1)]
    process_id: StrictStr
    capacity: PosInt = 1
    rack: StrictStr | None = None
    active: list[StrictStr] = Field(default_factory=list)
    standby: list[StrictStr] = Field(default_factory=list)
    lags: dict[str, NonNegLong | None] = Field(default_factory=dict)
    members: list[MemberSpec] | None = None
    client_tags: dict[str, StrictStr] = Field(default_factory=dict)


class ConfigSpec(_Strict):
    """Assignment configs (defaults are Kafka's)."""

    num_standby_replicas: NonNegInt = 0
    acceptable_recovery_lag: NonNegLong = 10000
    max_warmup_replicas: PosInt = 2
    balance_factor: PosInt = 1
    probing_rebalance_interval_ms: Annotated[int, Field(strict=True, ge=60000, le=2**63 - 1)] = 600000
    rack_aware_assignment_strategy: Literal["none", "min_traffic", "balance_subtopology"] = "none"
    rack_aware_assignment_traffic_cost: JavaInt | None = None
    rack_aware_assignment_non_overlap_cost: JavaInt | None = None
    active_on_caught_up: StrictBool = True
    rack_aware_assignment_tags: list[StrictStr] = Field(default_factory=list)


class StreamsInstanceSpec(_Strict):
    """The Streams protocol document."""

    format: Literal["kassign/v1"]
    name: StrictStr = ""
    protocol: Literal["streams"]
    tasks: list[TaskSpec] | None = None
    subtopologies: list[SubtopologySpec] | None = None
    clients: list[ClientSpec] = Field(default_factory=list)
    config: ConfigSpec = Field(default_factory=ConfigSpec)
    kafka_version: KafkaVersionField | None = None
    standby_task_order: list[StrictStr] | None = None
    source: Any = None
    notes: Any = None
    expected: Any = None
    facts: Any = None
    description: Any = None
    units: UnitsSpec | None = None
