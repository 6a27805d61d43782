"""The one interface every assignor and solver shares: ``Params`` in, ``Result`` out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from solver.model import Assignment


class Status(StrEnum):
    """Outcome of one assignor or solver run.

    Heuristics report ``HEURISTIC``; exact solvers one of the other four.
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIMEOUT = "timeout"
    HEURISTIC = "heuristic"


@dataclass(frozen=True)
class Params:
    """Run parameters shared by all assignors and solvers.

    Attributes
    ----------
    time_limit
        Seconds a solver may use (``None``: no limit).
    seed
        Random seed; the same seed gives the same result.
    objective
        Stage order or weights for exact solvers (``None``: the default
        lexicographic order of docs/algorithms.md).
    options
        Assignor-specific options (e.g. ``{"rounds": "settle"}``).
    balance_tolerance
        Exact consumer solvers: ``EPS >= 0`` trades balance for movement --
        the fewest moves among assignments whose max load is at most
        ``(1 + EPS)`` times the optimal max load (``None``: no trade).
    kafka_version
        The Kafka release whose rules the Kafka-named assignors follow
        (``"4.3.1"``, ``"4.4"``; :mod:`solver.kafka_version`); ``None``: the
        instance's ``kafka_version``, else the newest release modelled.
        Solvers ignore it.

    Raises
    ------
    solver.errors.OptionError
        A value outside its range (:mod:`solver.options`: ``time_limit`` in
        (0, 1e7] seconds, ``seed`` in 0..2^31-1, ``balance_tolerance`` in
        [0, 1000]); checked here, once, before any work.
    """

    time_limit: float | None = None
    seed: int = 0
    objective: tuple[str, ...] | None = None
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    balance_tolerance: float | None = None
    kafka_version: str | None = None

    def __post_init__(self) -> None:
        from solver.options import BALANCE_TOLERANCE, SEED, TIME_LIMIT, check_optional

        object.__setattr__(self, "time_limit", check_optional(TIME_LIMIT, self.time_limit))
        object.__setattr__(self, "seed", SEED.check(self.seed))
        object.__setattr__(self, "balance_tolerance", check_optional(BALANCE_TOLERANCE, self.balance_tolerance))


@dataclass(frozen=True)
class Result:
    """What one run returns.

    Attributes
    ----------
    assignment
        The assignment (consumer protocol) or a protocol-specific object
        with a ``to_json_dict`` method (streams).
    status
        See :class:`Status`.
    objective
        Objective value per stage (exact solvers), empty for heuristics.
    bound
        Proven bound per stage (exact solvers), empty for heuristics.
    seconds
        Wall time of the assignment itself, without file I/O.
    extra
        Further facts for ``stats`` (e.g. ``engine``, ``rounds``, ``epoch``).
    """

    assignment: Assignment | Any
    status: Status = Status.HEURISTIC
    objective: tuple[float, ...] = ()
    bound: tuple[float, ...] = ()
    seconds: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def stats(self) -> dict[str, Any]:
        """The ``stats`` object written next to the assignment."""
        out: dict[str, Any] = {"status": self.status.value}
        if self.objective:
            out["objective"] = list(self.objective)
        if self.bound:
            out["bound"] = list(self.bound)
        out["seconds"] = round(self.seconds, 6)
        out.update(self.extra)
        return out
