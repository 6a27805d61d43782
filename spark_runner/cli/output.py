"""Output documents for results: one place that turns a Result into JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr, ValidationError

from solver.errors import InstanceError, Problem
from solver.io import assignment_document, json_safe
from solver.model import FORMAT, Assignment, Instance
from solver.model.schema import pydantic_problems
from solver.result import Result, Status

#: One per-stage value of a result's ``stats`` (``null`` where the writer had a non-finite one).
_Value = Annotated[float, Field(strict=True, allow_inf_nan=False)] | None


def result_document(instance: Instance, assignor: str, result: Result) -> dict[str, Any]:
    """The ``kassign/v1`` output document of one run.

    Consumer protocol: the canonical sorted assignment with every member.
    Streams protocol: the assignment object's ``to_json_dict()`` (``assignment``
    and ``probing_rebalance``).  Both carry ``stats``.
    """
    if isinstance(result.assignment, Assignment):
        return assignment_document(instance, assignor, result.assignment, result.stats())
    body = result.assignment.to_json_dict()
    doc: dict[str, Any] = {"format": FORMAT, "assignor": assignor, **body}
    if "probing_rebalance" in result.extra and "probing_rebalance" not in doc:
        doc["probing_rebalance"] = bool(result.extra["probing_rebalance"])
    stats = {k: v for k, v in result.stats().items() if k != "probing_rebalance"}
    doc["stats"] = json_safe(stats)
    return doc


class _Stats(BaseModel):
    """The ``stats`` of a result document read back (``score --optimum FILE``, the score cache)."""

    model_config = ConfigDict(extra="allow")

    status: StrictStr = "feasible"
    objective: list[_Value] = Field(default_factory=list)
    bound: list[_Value] = Field(default_factory=list)
    seconds: Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)] = 0.0
    stages: list[StrictStr] | None = None
    engine: StrictStr | None = None


def result_from_document(instance: Instance, doc: Any, assignment: Any, source: str, *,
                         trusted: bool) -> Result:
    """The Result a result document (``kassign assign`` output) describes, ``assignment`` already parsed from it.

    ``stats`` is checked (an object; ``status`` a word, an unknown one read as ``feasible``; ``objective`` and
    ``bound`` lists of finite numbers; ``seconds`` a finite number >= 0; ``stages`` a list of names).  Only a
    ``trusted`` document (kassign's own cache) keeps its per-stage values (``stages``, ``objective``, ``bound``),
    which the gaps then read; a user's file is measured from its assignment, so a wrong ``objective`` cannot make
    a wrong gap.

    Raises
    ------
    InstanceError
        ``stats`` is not as above, with its JSON path (exit 65).
    """
    raw = doc.get("stats", {}) if isinstance(doc, dict) else {}
    if not isinstance(raw, dict):
        raise InstanceError(source, [Problem("stats", f"must be an object, got {type(raw).__name__}")])
    try:
        stats = _Stats.model_validate(raw)
    except ValidationError as e:
        raise InstanceError(source, pydantic_problems(e, ("stats",))) from None
    try:
        status = Status(stats.status)
    except ValueError:
        status = Status.FEASIBLE
    extra: dict[str, Any] = {} if stats.engine is None else {"engine": stats.engine}
    objective = [v for v in stats.objective if v is not None]
    bound = [v for v in stats.bound if v is not None]
    if not trusted or len(objective) != len(stats.objective) or len(bound) != len(stats.bound):
        return Result(assignment, status, (), (), stats.seconds, extra)  # measured from the assignment
    if stats.stages is not None:
        if len(stats.stages) != len(objective):
            raise InstanceError(source, [Problem("stats.stages", f"{len(stats.stages)} stages, "
                                                                 f"{len(objective)} objective values")])
        extra["stages"] = stats.stages
    return Result(assignment, status, tuple(objective), tuple(bound), stats.seconds, extra)


def read_assignment(path: Path, inst: Instance, raw: Any = None) -> Any:
    """The assignment document ``path`` of ``inst``, either protocol (``raw``: its decoded content, when already
    read)."""
    from solver.io import parse_assignment, read_document

    doc = read_document(path) if raw is None else raw
    if inst.protocol == "streams":
        from solver.streams.format import parse_streams_assignment

        return parse_streams_assignment(doc, inst, str(path))
    return parse_assignment(doc, str(path))
