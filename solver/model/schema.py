"""Pydantic schema of the consumer protocol of ``kassign/v1`` (structure only).

Cross-field rules (unknown topics, partition ranges, lengths) are checked in
:mod:`solver.io` so that every problem is reported at once with its path.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr, ValidationError, model_validator

from solver.errors import Problem, json_path
from solver.model.instance import FORMAT

#: Kafka holds partition ids, partition counts and generations in a Java ``int``.
INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
#: Largest sum of a document's weights (or of its move costs): far below float overflow even when squared.
MAX_TOTAL = 1e100
#: Member capacities are relative throughputs in this range (loads are divided by them).
MIN_CAPACITY = 1e-6
MAX_CAPACITY = 1e6

NonNegFloat = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
Capacity = Annotated[float, Field(strict=True, ge=MIN_CAPACITY, le=MAX_CAPACITY, allow_inf_nan=False)]
PartitionNo = Annotated[int, Field(strict=True, ge=0, le=INT32_MAX)]
Int32 = Annotated[int, Field(strict=True, ge=INT32_MIN, le=INT32_MAX)]


def check_topic_id(value: str) -> str:
    """Accept a topic id as Kafka writes it: a UUID (``8-4-4-4-12`` hex) or its 22-character base64 form.

    Examples
    --------
    >>> check_topic_id("MSLsJ2pqSNqWPf3TcNi_dg")
    'MSLsJ2pqSNqWPf3TcNi_dg'
    >>> check_topic_id("x")
    Traceback (most recent call last):
    ...
    ValueError: 'x' is not a topic id (a UUID, 8-4-4-4-12 hex or Kafka's 22-character base64)
    """
    try:
        if len(value) == 22:
            if len(base64.urlsafe_b64decode(value.encode("ascii") + b"==")) == 16:
                return value
        else:
            uuid.UUID(value)  # 8-4-4-4-12 hex, also 32 hex digits, braces or urn:uuid:
            return value
    except (ValueError, binascii.Error, UnicodeEncodeError):
        pass
    raise ValueError(f"{value!r} is not a topic id (a UUID, 8-4-4-4-12 hex or Kafka's 22-character base64)")


TopicId = Annotated[StrictStr, AfterValidator(check_topic_id)]


def check_kafka_version(value: str) -> str:
    """Accept a Kafka release kassign knows (``4.3.1``, ``4.4``, ``4.4.0-SNAPSHOT``); keep it as written.

    Examples
    --------
    >>> check_kafka_version("4.3.1")
    '4.3.1'
    """
    from solver.kafka_version import KafkaVersion, KafkaVersionError

    try:
        KafkaVersion.parse(value)
    except KafkaVersionError as e:
        raise ValueError(str(e)) from None
    return value


#: The top-level ``kafka_version`` of an instance (either protocol).
KafkaVersionField = Annotated[StrictStr, AfterValidator(check_kafka_version)]

_WHY = {INT32_MAX: "Kafka holds it in a 32-bit int", INT32_MIN: "Kafka holds it in a 32-bit int",
        2**63 - 1: "Kafka holds it in a 64-bit long", MIN_CAPACITY: "the capacity range is 1e-06..1e+06",
        MAX_CAPACITY: "the capacity range is 1e-06..1e+06"}


def limit_message(error: Any) -> str:
    """Pydantic's message for one error, naming the limit's reason when it is one of kassign's limits."""
    msg = str(error["msg"])
    ctx = error.get("ctx") or {}
    for bound in ("le", "ge"):
        value = ctx.get(bound)
        why = _WHY.get(value) if isinstance(value, int | float) else None
        if why:
            return f"{msg} ({why})"
    return msg

#: Documentation keys accepted at the top level and carried along unchanged (``units`` is checked).
META_KEYS = ("source", "notes", "expected", "facts", "description", "units")

#: A unit's name: short free text (``bytes/s``, ``records``, ``records/s`` ...).
UnitName = Annotated[str, Field(strict=True, min_length=1, max_length=40)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class UnitsSpec(_Strict):
    """What the numbers of an instance measure: ``{"weights": "bytes/s", "move_costs": "bytes"}``.

    Only presentation reads it: ``bytes`` and ``bytes/s`` are shown with a decimal prefix (kB, MB, GB),
    any other unit as given.
    """

    weights: UnitName | None = None
    move_costs: UnitName | None = None


class TopicSpec(_Strict):
    """A topic: a partition count, or an object with per-partition data."""

    partitions: Annotated[int, Field(strict=True, ge=0, le=INT32_MAX)]
    id: TopicId | None = None
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
    generation: Int32 = -1
    instance_id: StrictStr | None = None
    rack: StrictStr | None = None
    capacity: Capacity = 1.0


class ConsumerInstanceSpec(_Strict):
    """The consumer protocol document."""

    format: Literal["kassign/v1"]
    name: StrictStr = ""
    protocol: Literal["consumer"] = "consumer"
    topics: dict[str, TopicSpec]
    members: list[MemberSpec] = Field(default_factory=list)
    copartition: list[list[StrictStr]] = Field(default_factory=list)
    kafka_version: KafkaVersionField | None = None
    source: Any = None
    notes: Any = None
    expected: Any = None
    facts: Any = None
    description: Any = None
    units: UnitsSpec | None = None


class AssignmentSpec(BaseModel):
    """An assignment document: ``{"assignment": {member: {topic: [p]}}}`` (extra keys kept).

    ``format``, when present, must be ``kassign/v1`` (``null`` too is refused): a document of another format
    version is not read as if it were this one.
    """

    model_config = ConfigDict(extra="allow")

    format: Literal["kassign/v1"] = "kassign/v1"  # the default is not validated: only a given value is checked
    assignment: dict[str, dict[str, list[PartitionNo]]]


def meta_of(spec: BaseModel) -> dict[str, Any]:
    """The documentation keys of a parsed document (:data:`META_KEYS`), ``units`` as a plain dict."""
    out: dict[str, Any] = {}
    for k in META_KEYS:
        v = getattr(spec, k, None)
        if v is not None:
            out[k] = v.model_dump(exclude_none=True) if isinstance(v, BaseModel) else v
    return out


#: Most problems of one document listed one by one; beyond it, one line says how many (pydantic takes about
#: 12 microseconds to describe each: two million unknown keys took minutes to list).
MAX_LISTED_PROBLEMS = 10_000


def pydantic_problems(err: ValidationError, prefix: tuple[str | int, ...] = ()) -> list[Problem]:
    """One located :class:`~solver.errors.Problem` per pydantic error, in words a user reads.

    Shared by the consumer (:mod:`solver.io`) and Streams (:mod:`solver.streams.format`) parsers.  More than
    :data:`MAX_LISTED_PROBLEMS` are one problem saying how many (counted without describing them).
    """
    count = err.error_count()
    if count > MAX_LISTED_PROBLEMS:
        return [Problem(json_path(prefix), f"{count:,} problems, too many to list (is this a kassign/v1 "
                                           f"document? see docs/format.md)")]
    out = []
    for e in err.errors(include_url=False):
        loc = prefix + tuple(e["loc"])
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown key"
        elif e["type"] == "missing":
            msg = "required key missing"
        elif e["type"] == "literal_error" and loc[-1:] == ("format",):
            msg = f"expected {FORMAT!r}"
        else:
            msg = limit_message(e)
        out.append(Problem(json_path(loc), msg))
    return out
