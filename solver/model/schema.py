"""Pydantic schema of the consumer protocol of ``kassign/v1`` (structure only).

Cross-field rules (unknown topics, partition ranges, lengths) are checked in
:mod:`solver.io` so that every problem is reported at once with its path.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, model_validator

NonNegFloat = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
PosFloat = Annotated[float, Field(strict=True, gt=0, allow_inf_nan=False)]
PartitionNo = Annotated[int, Field(strict=True)]

#: Documentation keys accepted at the top level and carried along unchanged.
META_KEYS = ("source", "notes", "expected", "facts", "description")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TopicSpec(_Strict):
    """A topic: a partition count, or an object with per-partition data."""

    partitions: Annotated[int, Field(strict=True, ge=0)]
    id: StrictStr | None = None
    weights: list[NonNegFloat] | None = None
    move_costs: list[NonNegFloat] | None = None
    racks: list[list[StrictStr]] | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        # "T1": 3 is shorthand for {"partitions": 3}; bool is not a count.
        if isinstance(value, int) and not isinstance(value, bool):
            return {"partitions": value}
        if not isinstance(value, dict):
            raise ValueError("expected a partition count or an object with 'partitions'")
        return value


class MemberSpec(_Strict):
    """A consumer group member."""

    id: Annotated[str, Field(strict=True, min_length=1)]
    topics: list[StrictStr]
    owned: dict[str, list[PartitionNo]] = Field(default_factory=dict)
    generation: StrictInt = -1
    instance_id: StrictStr | None = None
    rack: StrictStr | None = None
    capacity: PosFloat = 1.0


class ConsumerInstanceSpec(_Strict):
    """The consumer protocol document."""

    format: Literal["kassign/v1"]
    name: StrictStr = ""
    protocol: Literal["consumer"] = "consumer"
    topics: dict[str, TopicSpec]
    members: list[MemberSpec] = Field(default_factory=list)
    copartition: list[list[StrictStr]] = Field(default_factory=list)
    source: Any = None
    notes: Any = None
    expected: Any = None
    facts: Any = None
    description: Any = None


class AssignmentSpec(BaseModel):
    """An assignment document: ``{"assignment": {member: {topic: [p]}}}`` (extra keys kept)."""

    model_config = ConfigDict(extra="allow")

    assignment: dict[str, dict[str, list[PartitionNo]]]
