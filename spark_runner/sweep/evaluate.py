"""Evaluate one scenario: every selected assignor and the optimum, carried through every step.

:func:`evaluate_scenario` is a pure function of ``(params, seed, assignors,
solver_time_limit)``: it generates the scenario, runs each assignor on the
initial group, then applies each event with *that assignor's own* previous
output as the members' claims (so each assignor lives with its own history),
and scores every result.  The optimum (``optimal``) is carried the same way.
Spark only parallelises this function over scenarios; everything is testable
without Spark.

Cooperative assignors run their follow-up rounds until the assignment is
stable (option ``rounds="settle"``); ``moved`` then counts from the claims
before the first round to the settled assignment, and ``rounds`` how many
rebalances that took (1 for assignors without follow-up rounds).

Streams scenarios (parameters with ``protocol: streams``,
:mod:`spark_runner.scenarios.streams`) go the same way with the Streams
assignors and ``optimal-streams``: each assignor's actives, standbys and
warm-ups become its clients' previous tasks and lags at the next step, and the
rows carry the :func:`solver.streams.scoring.score_streams` metrics and the
Streams gaps (:func:`solver.gaps.streams_gap_metrics`).  Every gap rule, its fallback and the
settle rule are :mod:`solver.gaps`'.  Both protocols share one row schema
(:data:`spark_runner.sweep.rows.ROW_SCHEMA`); the other protocol's columns are null.

Both protocols step through one loop (:func:`_step_through`); what differs is a
protocol's hooks (:class:`_ProtocolHooks`): how one assignor runs, how its
previous answer is carried into the next step, and which size, score and gap
columns its rows get.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from solver.api import score
from solver.gaps import EPS as EPS  # the sweep's readers take the tolerance from here
from solver.gaps import SETTLE, balance_optimal, consumer_gaps, gaps_defined, streams_gaps
from solver.model import Assignment, Instance
from solver.registry import AssignorSpec
from solver.result import Params, Result
from solver.streams.model import StreamsAssignment
from solver.streams.scoring import score_streams
from spark_runner.scenarios.consumer import Event, ScenarioParams, apply_event, generate
from spark_runner.scenarios.streams import (
    LagModel,
    StreamsEvent,
    StreamsScenarioParams,
    apply_streams_event,
    generate_streams,
    params_from_dict,
)
from spark_runner.sweep.rows import COLUMNS, SCORE_COLUMNS, STREAMS_COLUMNS

# the row schema's former home: its readers may still import it from here
from spark_runner.sweep.rows import GAP_COLUMNS as GAP_COLUMNS
from spark_runner.sweep.rows import ID_COLUMNS as ID_COLUMNS
from spark_runner.sweep.rows import PARAM_COLUMNS as PARAM_COLUMNS
from spark_runner.sweep.rows import ROW_KEY as ROW_KEY
from spark_runner.sweep.rows import ROW_SCHEMA as ROW_SCHEMA
from spark_runner.sweep.rows import RUN_COLUMNS as RUN_COLUMNS
from spark_runner.sweep.rows import arrow_schema as arrow_schema
from spark_runner.sweep.rows import check_row_parts as check_row_parts
from spark_runner.sweep.rows import unreadable_rows as unreadable_rows

OPTIMAL = "optimal"
#: The reference of the Streams gaps.
STREAMS_OPTIMAL = "optimal-streams"
#: The optimum evaluated beside the assignors of each protocol.
REFERENCE: Mapping[str, str] = MappingProxyType({"consumer": OPTIMAL, "streams": STREAMS_OPTIMAL})

# --------------------------------------------------------------------------- one run


@dataclass
class AssignorRun:
    """One assignor at one step: the instance it saw, its result and scores, or the error it raised."""

    instance: Instance
    result: Result | None
    metrics: dict[str, Any] | None
    error: str | None


def _attempt(spec: AssignorSpec, instance: Instance, params: Params, expected: type, what: str,
             scorer: Callable[[Instance, Any], dict[str, Any]]) -> AssignorRun:
    """Run ``spec`` and score its output; an exception (or an output not of type ``expected``) is the run's error."""
    try:
        result = spec.run(instance, params)
        if not isinstance(result.assignment, expected):
            raise TypeError(f"{spec.name} returned {type(result.assignment).__name__}, not {what}")
        metrics = scorer(instance, result.assignment)
    except Exception as e:  # one failing assignor must not sink the scenario: the row records it
        last = traceback.extract_tb(e.__traceback__)[-1:] if e.__traceback__ else []
        where = f" at {last[0].filename.rsplit('/', 1)[-1]}:{last[0].lineno}" if last else ""
        return AssignorRun(instance, None, None, f"{type(e).__name__}: {e}{where}")
    return AssignorRun(instance, result, metrics, None)


#: Options of every solver run in a sweep: a sweep is seeded, so its solvers count their limits in
#: deterministic work (CP-SAT deterministic time, MIP node limits), not wall-clock seconds, and a busy
#: machine gives the same rows as an idle one.
SOLVER_OPTIONS: Mapping[str, Any] = MappingProxyType({"deterministic": True})


def solver_params(time_limit: float | None) -> Params:
    """The parameters every optimum of a sweep runs with (seed 0, :data:`SOLVER_OPTIONS`)."""
    return Params(time_limit=time_limit, seed=0, options=dict(SOLVER_OPTIONS))


def _run_consumer_assignor(spec: AssignorSpec, instance: Instance, time_limit: float | None,
                           kafka_version: str | None = None) -> AssignorRun:
    # solvers get the time limit; heuristics the settle option (ignored by non-cooperative ones) and the release
    params = (solver_params(time_limit) if spec.kind == "solver"
              else Params(seed=0, options=SETTLE, kafka_version=kafka_version))
    return _attempt(spec, instance, params, Assignment, "a consumer Assignment", score)


def split_label(label: str, default: str | None) -> tuple[str, str | None]:
    """``"uniform@4.0.0"`` -> ``("uniform", "4.0.0")``; a plain name follows ``default``.

    Examples
    --------
    >>> split_label("uniform@4.0.0", "4.4.0"), split_label("range", None)
    (('uniform', '4.0.0'), ('range', None))
    """
    base, sep, release = label.partition("@")
    return (base, release) if sep else (label, default)


def _step_columns(step: int, event: Event | StreamsEvent | None, assignor: str) -> dict[str, Any]:
    """The columns that say which step and assignor a row is about (``initial`` at step 0)."""
    return {"step": step, "event": "initial" if event is None else event.kind,
            "event_detail": "initial assignment" if event is None else event.detail, "assignor": assignor}


def _finite(x: Any) -> float | None:
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _gaps(run: AssignorRun, opt: AssignorRun, time_limit: float | None) -> dict[str, Any]:
    """:func:`solver.gaps.consumer_gaps` against the optimum of the same step, as row columns.

    Gaps are defined for a ``valid`` outcome only (:func:`solver.gaps.defined_gaps`): otherwise they are ``None``
    and ``balance_optimal`` is false.  ``excess_moves`` is also ``None`` when no assignment that respects the
    optimum's hard constraints is as balanced as this one (then "fewest moves at this balance" is undefined).
    """
    out: dict[str, Any] = {"max_load_gap": None, "sum_sq_gap": None, "excess_moves": None,
                           "excess_moves_proven": None, "balance_optimal": None}
    if run.result is None or opt.result is None or run.metrics is None:
        return out
    scores = dict(run.metrics)
    if not gaps_defined(scores):
        out["balance_optimal"] = False
        return out
    try:
        g = consumer_gaps(run.instance, run.result.assignment, opt.result, scores=scores,
                          time_limit=time_limit if time_limit is not None else 10.0, deterministic=True)
    except Exception as e:  # recorded in the row's error column, like a failing assignor
        out["error"] = f"gap_metrics: {type(e).__name__}: {e}"
        return out
    mx, sq, ex = _finite(g.get("max_load_gap")), _finite(g.get("sum_sq_gap")), _finite(g.get("excess_moves"))
    out.update(max_load_gap=mx, sum_sq_gap=sq, excess_moves=ex,
               excess_moves_proven=None if ex is None else bool(g.get("excess_moves_proven")),
               balance_optimal=balance_optimal(mx, sq))
    return out


def _score_columns(metrics: Mapping[str, Any] | None) -> dict[str, Any]:
    if metrics is None:
        return {name: None for name, _ in SCORE_COLUMNS}
    out: dict[str, Any] = {}
    for name, typ in SCORE_COLUMNS:
        if name == "violations":
            out[name] = sum(1 for v in metrics["violations"] if not str(v).startswith("... and ")) + _more(
                metrics["violations"])
        elif name == "violation_first":
            out[name] = str(metrics["violations"][0]) if metrics["violations"] else None
        elif typ == "double":
            out[name] = _finite(metrics[name])
        elif typ == "boolean":
            out[name] = bool(metrics[name])
        elif typ == "string":
            out[name] = str(metrics[name])
        else:
            out[name] = int(metrics[name])
    return out


def _more(listing: Sequence[Any]) -> int:
    """The count hidden in the scorer's trailing ``"... and N more"`` line."""
    if listing and str(listing[-1]).startswith("... and "):
        try:
            return int(str(listing[-1]).split()[2])
        except (IndexError, ValueError):
            return 0
    return 0


def _param_values(params: ScenarioParams | StreamsScenarioParams) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(params):
        v = getattr(params, f.name)
        out[f"param_{f.name}"] = ",".join(v) if f.name == "events" else v
    out["params_json"] = params.canonical_json()
    return out


# --------------------------------------------------------------------------- the pure function


Lookup = Callable[[str], AssignorSpec]


def load_registry() -> list[AssignorSpec]:
    """Every registered spec, the optimum included.

    ``spark_runner.assignors.load_all`` imports the heuristics; the optimum
    registers itself in ``solver.consumer.optimal``, imported here in case the
    registry's list of registrant modules does not name it.
    """
    from spark_runner.assignors import load_all

    with contextlib.suppress(ImportError):
        importlib.import_module("solver.consumer.optimal")
    return load_all()


def _default_lookup(name: str) -> AssignorSpec:
    from solver import registry

    load_registry()
    return registry.get(name)


def evaluate_scenario(
    params: ScenarioParams | Mapping[str, Any],
    seed: int,
    assignors: Sequence[str],
    solver_time_limit: float | None = None,
    *,
    lookup: Lookup | None = None,
    kafka_version: str | None = None,
) -> list[dict[str, Any]]:
    """Carry every assignor and the optimum through one scenario and score each step.

    Parameters
    ----------
    params
        Generator parameters (a :class:`ScenarioParams`, a
        :class:`~spark_runner.scenarios.streams.StreamsScenarioParams`, or the
        dict form of either: ``protocol: streams`` selects Streams).
    seed
        Scenario seed.
    assignors
        Registry names of the assignors to evaluate; the optimum
        (``"optimal"``, for Streams ``"optimal-streams"``) is always
        evaluated too, as the reference of the gaps.
    solver_time_limit
        Seconds the optimum may use per step (``None``: no limit).
    lookup
        Name -> :class:`~solver.registry.AssignorSpec`; the complete registry
        by default (tests pass their own).
    kafka_version
        The Kafka release the Kafka-named assignors follow (``None``: the
        newest modelled); an assignor given as ``name@X.Y.Z`` follows that
        release, and its rows carry that label.

    Returns
    -------
    list of dict
        One row per (step, assignor), steps ascending, assignors in the given
        order then the optimum; keys are :data:`COLUMNS`.

    Notes
    -----
    At step 0 every assignor sees the initial group without claims; at step
    ``n > 0`` it sees the group after event ``n`` with its own step ``n - 1``
    output as the claims (see :func:`spark_runner.scenarios.consumer.apply_event`).
    A run that raises is recorded in ``error`` with empty metrics; that
    assignor's members then enter the next step without claims.
    """
    p = params if isinstance(params, (ScenarioParams, StreamsScenarioParams)) else params_from_dict(params)
    find = lookup or _default_lookup
    if isinstance(p, StreamsScenarioParams):
        streams = generate_streams(p, seed)
        return _step_through(_streams_hooks(streams.lag_model), streams.id, seed, p, streams.initial, streams.events,
                             assignors, solver_time_limit, find, kafka_version)
    scenario = generate(p, seed)
    return _step_through(_CONSUMER, scenario.id, seed, p, scenario.initial, scenario.events, assignors,
                         solver_time_limit, find, kafka_version)


# --------------------------------------------------------------------------- one loop, a hook per protocol

#: The event type of a protocol's scenarios.
_Ev = TypeVar("_Ev", bound=Event | StreamsEvent)


@dataclass(frozen=True)
class _Step:
    """What a protocol's row hook sees at one step."""

    runs: Mapping[str, AssignorRun]  #: every assignor's run at this step, by label
    specs: Mapping[str, AssignorSpec]  #: every assignor's spec, by label
    time_limit: float | None  #: the optimum's seconds per step


@dataclass(frozen=True)
class _ProtocolHooks(Generic[_Ev]):
    """What differs between the protocols in :func:`_step_through`."""

    protocol: str  #: the rows' ``protocol`` column
    reference: str  #: the optimum evaluated beside the assignors
    #: one assignor on one instance (spec, instance, time limit, Kafka release)
    run: Callable[[AssignorSpec, Instance, float | None, str | None], AssignorRun]
    #: the instance of the next step: the assignor's previous run (its answer as the claims) after the event
    carry: Callable[[AssignorRun, _Ev, int], Instance]
    #: a row's sizes, run, score and gap columns for one assignor (label, the step)
    columns: Callable[[str, _Step], dict[str, Any]]


def _step_through(hooks: _ProtocolHooks[_Ev], scenario_id: str, seed: int,
                  params: ScenarioParams | StreamsScenarioParams, initial: Instance, events: Sequence[_Ev],
                  assignors: Sequence[str], time_limit: float | None, find: Lookup,
                  kafka_version: str | None) -> list[dict[str, Any]]:
    """The rows of :func:`evaluate_scenario`: each step runs every assignor on its own instance (the initial one,
    then its previous run carried through the step's event), then makes each assignor's row."""
    names = list(dict.fromkeys([*assignors, hooks.reference]))
    specs = {n: find(split_label(n, None)[0]) for n in names}
    releases = {n: split_label(n, kafka_version)[1] for n in names}
    base = {"scenario_id": scenario_id, "seed": int(seed), "protocol": hooks.protocol, **_param_values(params)}
    rows: list[dict[str, Any]] = []
    previous: dict[str, AssignorRun] = {}
    for step, event in enumerate([None, *events]):
        runs: dict[str, AssignorRun] = {}
        for n in names:
            instance = initial if event is None else hooks.carry(previous[n], event, step)
            runs[n] = hooks.run(specs[n], instance, time_limit, releases[n])
        at = _Step(runs, specs, time_limit)
        for n in names:
            row = {**base, **_step_columns(step, event, n), **hooks.columns(n, at)}
            rows.append({c: row.get(c) for c in COLUMNS})
        previous = runs
    return rows


def _carry_consumer(previous: AssignorRun, event: Event, step: int) -> Instance:
    assignment = previous.result.assignment if previous.result is not None else None
    return apply_event(previous.instance, event, assignment, step)


def _consumer_columns(name: str, at: _Step) -> dict[str, Any]:
    run, opt = at.runs[name], at.runs[OPTIMAL]
    inst, res = run.instance, run.result
    gaps = _gaps(run, opt, at.time_limit)
    gap_error = gaps.pop("error", None)
    return {
        "members": len(inst.members),
        "topics": len(inst.topics),
        "partitions": inst.total_partitions,
        "status": res.status.value if res is not None else "error",
        "seconds": float(res.seconds) if res is not None else None,
        "rounds": int(res.extra.get("rounds", 1)) if res is not None else None,
        "error": run.error or gap_error,
        "kafka_version": res.extra.get("kafka_version") if res is not None else None,
        **_score_columns(run.metrics),
        **gaps,
        "opt_status": opt.result.status.value if opt.result is not None else "error",
    }


_CONSUMER: _ProtocolHooks[Event] = _ProtocolHooks("consumer", OPTIMAL, _run_consumer_assignor, _carry_consumer,
                                                  _consumer_columns)


# --------------------------------------------------------------------------- Kafka Streams


def _run_streams_assignor(spec: AssignorSpec, instance: Instance, time_limit: float | None,
                          kafka_version: str | None = None) -> AssignorRun:
    params = solver_params(time_limit) if spec.kind == "solver" else Params(seed=0, kafka_version=kafka_version)
    return _attempt(spec, instance, params, StreamsAssignment, "a StreamsAssignment", score_streams)


def _streams_gaps(run: AssignorRun, ref: AssignorRun) -> dict[str, Any]:
    """:func:`solver.gaps.streams_gaps` of a run against the optimum solved on the *same* instance.

    The reference ``ref`` is the optimum of the instance the assignor saw (its
    own previous tasks and lags): caught-up sets and restoration costs depend
    on each assignor's history, so the optimum's own trajectory is no yardstick.
    """
    if run.metrics is None or ref.metrics is None:
        return {"active_balance_gap": None, "total_balance_gap": None, "restoration_gap": None,
                "member_balance_gap": None, "balance_optimal": None}
    return streams_gaps(run.metrics, ref.metrics)


def _streams_score_columns(metrics: Mapping[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if metrics is None:
        return {name: None for name in ("valid", "outcome", "violations", "violation_first")}
    viol = metrics["violations"]
    out["valid"] = bool(metrics["valid"])
    out["outcome"] = str(metrics["outcome"])
    out["violations"] = sum(1 for v in viol if not str(v).startswith("... and ")) + _more(viol)
    out["violation_first"] = str(viol[0]) if viol else None
    types = dict(STREAMS_COLUMNS)
    for name, value in metrics.items():
        if name in ("valid", "violations") or name not in types:
            continue
        typ = types[name]
        if value is None:  # e.g. cross_rack_traffic without rack data
            out[name] = None
            continue
        out[name] = _finite(value) if typ == "double" else (bool(value) if typ == "boolean" else int(value))
    return out


def _streams_hooks(lag_model: LagModel) -> _ProtocolHooks[StreamsEvent]:
    """The Streams hooks of a scenario whose lags follow ``lag_model``."""

    def carry(previous: AssignorRun, event: StreamsEvent, step: int) -> Instance:
        held = previous.result.assignment if previous.result is not None else None
        assert held is None or isinstance(held, StreamsAssignment)  # _run_streams_assignor checked it
        return apply_streams_event(previous.instance, event, held, lag_model)

    return _ProtocolHooks("streams", STREAMS_OPTIMAL, _run_streams_assignor, carry, _streams_columns)


def _streams_columns(name: str, at: _Step) -> dict[str, Any]:
    run = at.runs[name]
    # the reference: the optimum of this assignor's own instance (the optimum's row is its own)
    ref = run if name == STREAMS_OPTIMAL else _run_streams_assignor(at.specs[STREAMS_OPTIMAL], run.instance,
                                                                    at.time_limit)
    spec = run.instance.streams
    res = run.result
    return {
        "members": len(spec.clients),
        "topics": len(spec.subtopologies or ()),
        "partitions": len(spec.tasks),
        "threads": sum(c.capacity for c in spec.clients),
        "stateful_tasks": sum(1 for t in spec.tasks if t.stateful),
        "status": res.status.value if res is not None else "error",
        "seconds": float(res.seconds) if res is not None else None,
        "rounds": 1 if res is not None else None,
        "error": run.error or (f"reference optimum: {ref.error}" if ref.error else None),
        "kafka_version": res.extra.get("kafka_version") if res is not None else None,
        **_streams_score_columns(run.metrics),
        **_streams_gaps(run, ref),
        "opt_status": ref.result.status.value if ref.result is not None else "error",
    }
