"""Output documents for results: one place that turns a Result into JSON."""

from __future__ import annotations

from typing import Any

from solver.io import assignment_document, json_safe
from solver.model import FORMAT, Assignment, Instance
from solver.result import Result


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
