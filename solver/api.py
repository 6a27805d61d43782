"""The public Python API of :mod:`solver`: read, solve, score, a frontier, a capacity plan.

Every function here dispatches on the instance's protocol (``consumer`` or
``streams``), so a caller never chooses between :mod:`solver.consumer` and
:mod:`solver.streams`.  The engines are imported inside the functions:
``import solver`` stays cheap (no OR-Tools, no pandas) until a function needs
them.

Examples
--------
>>> import solver
>>> from pathlib import Path
>>> examples = Path(solver.__file__).parents[1] / "examples"
>>> inst = solver.read_instance(examples / "orders-group.json")
>>> res = solver.solve(inst)
>>> res.status
<Status.OPTIMAL: 'optimal'>
>>> metrics = solver.score(inst, res.assignment)
>>> metrics["valid"], metrics["max_load"]
(True, 5.0)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from solver.model import Assignment, Instance
from solver.result import Params, Result

if TYPE_CHECKING:
    from solver.registry import AssignorSpec
    from solver.streams.model import StreamsAssignment

#: Engines of :func:`solve`: ``auto`` picks per instance; ``flow`` / ``cpsat`` force one (consumer only).
Engine = Literal["auto", "flow", "cpsat"]

#: The Kafka assignor a capacity plan compares with, per protocol.
PLAN_BASELINE: Mapping[str, str] = {"consumer": "cooperative-sticky", "streams": "high-availability"}


def read_instance(path: str | Path) -> Instance:
    """Read one instance (either protocol) from a ``.json`` or ``.yaml`` file.

    Parameters
    ----------
    path
        The file; ``format: kassign/v1`` documents, ``protocol: streams`` for
        Kafka Streams (docs/format.md, docs/streams.md).

    Returns
    -------
    Instance
        The validated, immutable instance.

    Raises
    ------
    solver.errors.InstanceError
        Every problem of the file, each with its JSON path.

    Examples
    --------
    >>> from pathlib import Path
    >>> inst = read_instance(Path(__file__).parents[1] / "examples" / "streams-app.json")
    >>> inst.protocol, len(inst.streams.tasks)
    ('streams', 10)
    """
    from solver.io import read_instance as _read

    return _read(path)


def solve(instance: Instance, params: Params | None = None, *, solver: Engine = "auto") -> Result:
    """The provably optimal assignment of ``instance``.

    Parameters
    ----------
    instance
        A consumer instance (solved by :func:`solver.consumer.optimal.solve`, the
        ``optimal`` solver) or a Streams instance (:func:`solver.streams.optimal.solve_streams`,
        ``optimal-streams``).
    params
        ``time_limit``, ``seed``, ``objective`` (stage order), ``options``; defaults
        when ``None``.
    solver
        ``"auto"``: the engine each protocol chooses; ``"flow"`` / ``"cpsat"``
        force a consumer engine.

    Returns
    -------
    Result
        ``assignment`` (an :class:`Assignment`, or a
        :class:`~solver.streams.model.StreamsAssignment`), ``status``
        (``optimal`` only with proof, else ``feasible``), per-stage
        ``objective`` and ``bound``.

    Raises
    ------
    ValueError
        For an unknown ``solver`` or a forced engine on a Streams instance.
    solver.errors.InfeasibleError
        No assignment exists, or none was found within the time limit.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4}, "members": [
    ...     {"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}, "generation": 1},
    ...     {"id": "b", "topics": ["T"]}]})
    >>> res = solve(inst)
    >>> res.status.value, res.assignment.to_lists()
    ('optimal', {'a': {'T': [0, 1]}, 'b': {'T': [2, 3]}})
    """
    if solver not in ("auto", "flow", "cpsat"):
        raise ValueError(f"unknown solver {solver!r}: expected 'auto', 'flow' or 'cpsat'")
    p = params or Params()
    if instance.protocol == "streams":
        if solver != "auto":
            raise ValueError(f"solver={solver!r} is a consumer engine; Streams instances take 'auto'")
        from solver.streams.optimal import solve_streams

        return solve_streams(instance, p)
    from solver.consumer.optimal import solve as solve_consumer

    return solve_consumer(instance, p, engine=solver)


def score(instance: Instance, assignment: Assignment | StreamsAssignment) -> dict[str, Any]:
    """Every metric of ``assignment`` on ``instance``, for either protocol.

    Parameters
    ----------
    instance
        The group (consumer) or application (Streams) state.
    assignment
        An :class:`Assignment` for a consumer instance, a
        :class:`~solver.streams.model.StreamsAssignment` for a Streams one.  It
        may be invalid: ``valid`` and ``violations`` say why.

    Returns
    -------
    dict
        Consumer: :data:`solver.model.scoring.METRIC_NAMES`; Streams:
        :data:`solver.streams.scoring.STREAMS_METRIC_NAMES`.

    Raises
    ------
    TypeError
        When the assignment is of the other protocol.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 3},
    ...     "members": [{"id": "a", "topics": ["T"]}, {"id": "b", "topics": ["T"]}]})
    >>> s = score(inst, Assignment.from_lists({"a": {"T": [0, 1]}, "b": {"T": [2]}}))
    >>> s["valid"], s["max_load"], s["spread"]
    (True, 2.0, 1.0)
    """
    if instance.protocol == "streams":
        from solver.streams.model import StreamsAssignment
        from solver.streams.scoring import score_streams

        if not isinstance(assignment, StreamsAssignment):
            raise TypeError("a streams instance is scored with a StreamsAssignment")
        return score_streams(instance, assignment)
    from solver.model.scoring import score as score_consumer

    if not isinstance(assignment, Assignment):
        raise TypeError("a consumer instance is scored with an Assignment")
    return score_consumer(instance, assignment)


def frontier(instance: Instance, params: Params | None = None, *, max_points: int = 60,
             progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The balance-movement Pareto frontier of ``instance``.

    For each movement budget from 0 to the optimum's moves, the best balance
    reachable within it (consumer: :func:`solver.consumer.frontier.compute_frontier`,
    moved topic-partitions against max load and sum of squared loads; Streams:
    :func:`solver.streams.frontier.compute_streams_frontier`, moved actives against
    active and total tasks per thread).

    Parameters
    ----------
    instance
        Either protocol.
    params
        ``time_limit`` per CP-SAT point, ``seed``.
    max_points
        At most this many budgets (evenly spaced, both ends kept); at least 2.
    progress
        Called with what is being computed (``"budget 3 of 60"``; consumer instances), for a progress line.

    Returns
    -------
    dict
        JSON-ready: ``engine``, ``optimum_moves``, ``points`` (one per budget,
        each with ``proven``).

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4}, "members": [
    ...     {"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}, "generation": 1},
    ...     {"id": "b", "topics": ["T"]}]})
    >>> [(p["budget"], p["max_load"]) for p in frontier(inst)["points"]]
    [(0.0, 4.0), (1.0, 3.0), (2.0, 2.0)]
    """
    if max_points < 2:
        raise ValueError("max_points must be at least 2")
    p = params or Params()
    if instance.protocol == "streams":
        from solver.streams.frontier import compute_streams_frontier

        return compute_streams_frontier(instance, p, max_points=max_points)
    from solver.consumer.frontier import compute_frontier

    return compute_frontier(instance, p, max_points=max_points, progress=progress)


def plan(instance: Instance, capacity: float, *, kafka: str | AssignorSpec | None = "auto",
         **config: Any) -> dict[str, Any]:
    """Capacity plan: the fewest instances with proof, and each instance count's costs (docs/planning.md).

    Parameters
    ----------
    instance
        Either protocol.
    capacity
        The load one instance holds (same unit as the partitions' ``weights``).
    kafka
        The Kafka assignor to compare with: ``"auto"`` (``cooperative-sticky`` /
        ``high-availability`` when registered, i.e. after ``import heuristics``),
        a registry name, an :class:`~solver.registry.AssignorSpec`, or ``None``.
    **config
        Further :class:`~solver.planning.config.PlanConfig` fields
        (``resilience``, ``range``, ``catch_up_seconds``, ``time_limit`` ...).

    Returns
    -------
    dict
        The plan document of ``kassign plan --json``.

    Raises
    ------
    solver.planning.PlanUsageError
        For a request that makes no sense (capacity <= 0, empty range ...).
    solver.errors.InfeasibleError
        When an item is larger than every instance.

    Examples
    --------
    >>> from pathlib import Path
    >>> inst = read_instance(Path(__file__).parents[1] / "examples" / "plan-orders.json")
    >>> doc = plan(inst, 5_000_000, kafka=None)
    >>> doc["min_instances"], doc["proof_kind"]
    (6, 'bound')
    """
    from solver import registry
    from solver.planning import PlanConfig
    from solver.planning import plan as plan_fn

    spec: AssignorSpec | None
    if kafka == "auto":
        try:
            spec = registry.get(PLAN_BASELINE[instance.protocol])
        except registry.UnknownAssignorError:
            spec = None
    elif isinstance(kafka, str):
        spec = registry.get(kafka)
    else:
        spec = kafka
    return plan_fn(instance, PlanConfig(capacity=capacity, **config), spec)


__all__ = ["Assignment", "Engine", "Instance", "Params", "Result", "frontier", "plan", "read_instance", "score",
           "solve"]
