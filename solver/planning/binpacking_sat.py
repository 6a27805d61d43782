"""CP-SAT models for bin packing: feasibility (:func:`sat_pack`) and min-max utilisation (:func:`sat_min_max`).

Split out of :mod:`solver.planning.binpacking` (bounds and greedy packings),
which re-exports every name here.  Works on integers: a CP-SAT proof is a proof
about the integer data given (see :func:`solver.scaling.integerize`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from solver.runtime import run_cpsat

IntArray = npt.NDArray[np.int64]

@dataclass(frozen=True)
class SatOutcome:
    """Result of one CP-SAT model.

    Attributes
    ----------
    status
        ``optimal`` (proven), ``feasible`` (found, not proven), ``infeasible``
        (proven) or ``unknown`` (nothing found or proven in the limit).
    bins
        Item -> bin map of the best solution, or ``None``.
    objective, bound
        Best objective and best proven bound (integers of the model), when an
        objective was set.
    seconds
        Wall time of the solve.
    """

    status: str
    bins: IntArray | None
    objective: int | None = None
    bound: int | None = None
    seconds: float = 0.0


#: CP-SAT workers.  More workers than cores still pays on small models: the portfolio of
#: search strategies proves bin-packing optima several times faster than 2 workers.
SAT_WORKERS = 8


def sat_parameters(solver: Any, time_limit: float | None, seed: int, workers: int = SAT_WORKERS) -> None:
    """Common CP-SAT parameters: time limit, seed, :data:`SAT_WORKERS` workers."""
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.random_seed = int(seed)
    solver.parameters.num_workers = int(workers)


def new_solver(time_limit: float | None, seed: int) -> Any:
    """A ``CpSolver`` with :func:`sat_parameters` applied.

    Parameters
    ----------
    time_limit
        Seconds per solve, or ``None`` for no limit.
    seed
        CP-SAT's random seed.

    Returns
    -------
    ortools.sat.python.cp_model.CpSolver
        The configured solver.
    """
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    sat_parameters(solver, time_limit, seed)
    return solver


def status_name(code: Any) -> str:
    """CP-SAT status code as ``optimal`` / ``feasible`` / ``infeasible`` / ``unknown``.

    Parameters
    ----------
    code
        What ``CpSolver.solve`` returned.

    Returns
    -------
    str
        The status name used throughout (``unknown`` for every other code).
    """
    from ortools.sat.python import cp_model

    names: dict[Any, str] = {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
    }
    return names.get(code, "unknown")


def minimise(solver: Any, model: Any, objective: Any) -> str:
    """Set ``objective`` on ``model``, solve it with ``solver``; returns :func:`status_name` of the solve.

    Parameters
    ----------
    solver
        A ``CpSolver`` (see :func:`new_solver`).
    model
        The ``CpModel``; its previous objective is replaced.
    objective
        Linear expression to minimise.

    Returns
    -------
    str
        ``optimal``, ``feasible``, ``infeasible`` or ``unknown``; on the first
        two ``solver.objective_value`` holds the best objective.
    """
    model.minimize(objective)
    return status_name(run_cpsat(solver, model))


def item_vars(model: Any, n_items: int, n_bins: int) -> list[list[Any]]:
    """``x[i][j]`` booleans (item ``i`` goes to bin ``j``), exactly one bin per item.

    Parameters
    ----------
    model
        The ``CpModel``.
    n_items, n_bins
        Matrix shape.

    Returns
    -------
    list of list
        The ``BoolVar`` matrix.
    """
    x = [[model.new_bool_var(f"x{i}_{j}") for j in range(n_bins)] for i in range(n_items)]
    for row in x:
        model.add_exactly_one(row)
    return x


def add_anti_affinity(model: Any, x: list[list[Any]], groups: IntArray | None) -> None:
    """Items of one anti-affinity group go to distinct bins: at most one of them per bin.

    Parameters
    ----------
    model
        The ``CpModel``.
    x
        ``x[i][j]``: item ``i`` goes to bin ``j`` (``None`` where it cannot).
    groups
        Anti-affinity group of each item (``-1``: none), or ``None``.
    """
    if groups is None:
        return
    by_group: dict[int, list[int]] = {}
    for i, g in enumerate(np.asarray(groups).tolist()):
        if g >= 0:
            by_group.setdefault(g, []).append(i)
    n_bins = len(x[0]) if x else 0
    for items in by_group.values():
        if len(items) > 1:
            for j in range(n_bins):
                vs = [x[i][j] for i in items if x[i][j] is not None]
                if len(vs) > 1:
                    model.add_at_most_one(vs)


def read_bins(solver: Any, x: list[list[Any]]) -> IntArray:
    """Item -> bin map of the solver's solution (``-1`` for an item without a true ``x[i][j]``).

    Parameters
    ----------
    solver
        A ``CpSolver`` after a solve that found a solution.
    x
        ``x[i][j]`` booleans (``None`` entries are skipped).

    Returns
    -------
    numpy.ndarray
        The bin of every item.
    """
    out = np.full(len(x), -1, dtype=np.int64)
    for i, row in enumerate(x):
        for j, v in enumerate(row):
            if v is not None and solver.boolean_value(v):
                out[i] = j
                break
    return out


def _assignment_vars(model: Any, sizes: IntArray, caps: IntArray, groups: IntArray | None,
                     identical: bool) -> tuple[list[list[Any]], list[Any]]:
    """x[i][j] booleans, one bin per item, capacity, anti-affinity; symmetry breaking for identical bins."""
    n_items, n_bins = int(sizes.size), int(caps.size)
    order = np.argsort(-sizes, kind="stable")
    rank = np.empty(n_items, dtype=np.int64)
    rank[order] = np.arange(n_items)
    x: list[list[Any]] = []
    for i in range(n_items):
        row: list[Any] = []
        for j in range(n_bins):
            # Identical bins: the k-th largest item never needs a bin index above k.
            if identical and j > rank[i]:
                row.append(None)
            else:
                row.append(model.new_bool_var(f"x{i}_{j}"))
        x.append(row)
        model.add_exactly_one(v for v in row if v is not None)
    loads = []
    for j in range(n_bins):
        terms = [(x[i][j], int(sizes[i])) for i in range(n_items) if x[i][j] is not None]
        # Explicit load variables plus their redundant sum help CP-SAT reason about slack.
        load = model.new_int_var(0, int(caps[j]), f"load{j}")
        if terms:
            model.add(load == sum(v * w for v, w in terms))
        else:
            model.add(load == 0)
        loads.append(load)
    model.add(sum(loads) == int(sizes.sum()))
    add_anti_affinity(model, x, groups)
    return x, loads


class _PackingModel(NamedTuple):
    """A CP-SAT model packing items ``s`` into bins ``c`` (see :func:`_packing_model`)."""

    model: Any
    x: list[list[Any]]
    loads: list[Any]
    identical: bool
    s: IntArray
    c: IntArray


def _packing_model(sizes: IntArray, caps: IntArray, groups: IntArray | None,
                   hint: IntArray | None) -> _PackingModel | None:
    """The packing model with its hint, or ``None`` when plainly infeasible.

    Plainly infeasible: an item larger than every bin, or more load than
    capacity.  The hint is skipped for identical bins, whose symmetry breaking
    may forbid it.
    """
    from ortools.sat.python import cp_model

    s = np.asarray(sizes, dtype=np.int64)
    c = np.asarray(caps, dtype=np.int64)
    if s.size and (c.size == 0 or s.max() > c.max() or int(s.sum()) > int(c.sum())):
        return None
    model = cp_model.CpModel()
    identical = bool(c.size == 0 or (c == c[0]).all())
    x, loads = _assignment_vars(model, s, c, groups, identical)
    if hint is not None and not identical:
        for i, j in enumerate(np.asarray(hint).tolist()):
            for jj, v in enumerate(x[i]):
                if v is not None:
                    model.add_hint(v, jj == j)
    return _PackingModel(model, x, loads, identical, s, c)


def sat_pack(
    sizes: IntArray,
    caps: IntArray,
    groups: IntArray | None = None,
    *,
    time_limit: float | None = 10.0,
    seed: int = 0,
    hint: IntArray | None = None,
) -> SatOutcome:
    """Decide with CP-SAT whether the items fit into bins ``caps``.

    ``infeasible`` is a proof that no packing exists (for the integer data
    given; pass the ``down``/``up`` rounding of :class:`~solver.scaling.IntData` for a proof
    about real data).

    Examples
    --------
    >>> sat_pack(np.array([6, 6, 6]), np.array([10, 10])).status
    'infeasible'
    >>> sat_pack(np.array([6, 4, 6, 4]), np.array([10, 10])).status
    'optimal'
    """
    t0 = time.perf_counter()
    pm = _packing_model(sizes, caps, groups, hint)
    if pm is None:
        return SatOutcome("infeasible", None, seconds=time.perf_counter() - t0)
    solver = new_solver(time_limit, seed)
    st = status_name(run_cpsat(solver, pm.model))
    bins = read_bins(solver, pm.x) if st in ("optimal", "feasible") else None
    if st == "feasible":
        st = "optimal"  # a feasibility model has nothing left to prove once a solution exists
    return SatOutcome(st, bins, seconds=time.perf_counter() - t0)


def sat_min_max(
    sizes: IntArray,
    caps: IntArray,
    groups: IntArray | None = None,
    *,
    time_limit: float | None = 10.0,
    seed: int = 0,
    hint: IntArray | None = None,
    resolution: int = 10**6,
) -> SatOutcome:
    """Minimise the maximum utilisation (load / capacity) with CP-SAT, within capacity.

    For identical bins the objective is the maximum load itself (exact).  For
    different capacities it is ``U`` with ``load_j * resolution <= U * cap_j``
    (utilisation in steps of ``1 / resolution``, rounded up).

    Returns ``infeasible`` when no packing within capacity exists.
    """
    t0 = time.perf_counter()
    pm = _packing_model(sizes, caps, groups, hint)
    if pm is None:
        return SatOutcome("infeasible", None, seconds=time.perf_counter() - t0)
    model, x, loads, identical, s, c = pm
    total = int(s.sum())
    big = int(s.max()) if s.size else 0
    if identical:
        lo = max(-(-total // max(c.size, 1)), big)
        obj = model.new_int_var(lo, int(c.max()), "maxload")
        for e in loads:
            model.add(e <= obj)
    else:
        lo = -(-total * resolution // int(c.sum()))
        obj = model.new_int_var(max(0, lo), resolution, "maxutil")
        for e, cj in zip(loads, c.tolist(), strict=True):
            model.add(e * resolution <= obj * int(cj))
    solver = new_solver(time_limit, seed)
    st = minimise(solver, model, obj)
    if st in ("optimal", "feasible"):
        return SatOutcome(st, read_bins(solver, x), round(solver.objective_value),
                          math.ceil(solver.best_objective_bound - 1e-9), time.perf_counter() - t0)
    return SatOutcome(st, None, seconds=time.perf_counter() - t0)
