"""Every assignor of a protocol beside the optimum on one instance: metrics and gaps.

:func:`compare` is what ``kassign compare`` prints.  It runs each selected
heuristic and the reference optimum (``optimal`` for the consumer protocol,
``optimal-streams`` for Kafka Streams) on the same instance and scores them
with the same scorer.  The rows are what the sweep evaluates for one step
(:mod:`spark_runner.sweep.evaluate`), measured by the same rules (:mod:`solver.gaps`):
cooperative assignors run their follow-up rebalances until settled
(:data:`~solver.gaps.SETTLE`, so ``valid`` and ``moved`` describe the assignment the
group ends with), and ``rounds`` says how many rebalances that took; Streams rows
carry the Streams metrics and :func:`~solver.gaps.streams_gap_metrics`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from solver.gaps import SETTLE, gaps
from solver.model import Assignment, Instance
from solver.registry import AssignorSpec, UnknownAssignorError
from solver.result import Params, Result

#: The optimum each protocol's assignors are compared with.
REFERENCE: Mapping[str, str] = {"consumer": "optimal", "streams": "optimal-streams"}

#: ``warn(name, message)``: an assignor refused the input (the row then carries ``error``).
Warn = Callable[[str, str], None]


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`compare`.

    Attributes
    ----------
    instance
        The instance's name (``None`` when it has none).
    protocol
        ``"consumer"`` or ``"streams"``.
    reference
        The optimum's registry name.
    optimal
        The optimum's run: ``status``, ``objective``, ``bound``, ``stages``,
        ``engine``, ``gap``, ``seconds``.
    rows
        One dict per assignor, the optimum first: ``assignor``, ``status``,
        ``seconds``, ``rounds``, every scorer metric and the gap metrics, or
        ``assignor`` and ``error`` when the assignor refused the input.  Solver rows add ``stages`` and
        ``stage_proven``; every row has ``not_proven``, the names of its figures that are not proven
        (:func:`mark_not_proven`).
    """

    instance: str | None
    protocol: str
    reference: str
    optimal: dict[str, Any]
    rows: tuple[dict[str, Any], ...]

    def row(self, assignor: str) -> dict[str, Any]:
        """The row of ``assignor`` (``KeyError`` if it was not compared)."""
        for r in self.rows:
            if r["assignor"] == assignor:
                return r
        raise KeyError(assignor)

    def to_json_dict(self) -> dict[str, Any]:
        """``{"instance", "protocol", "optimal", "rows"}``: the document of ``kassign compare --json``."""
        return {"instance": self.instance, "protocol": self.protocol, "optimal": self.optimal,
                "rows": [dict(r) for r in self.rows]}


def heuristic_params(params: Params, settle: bool = True) -> Params:
    """The parameters heuristics run with: ``params`` plus, by default, the settle option.

    Only cooperative assignors read the option; others ignore it.
    """
    if not settle:
        return params
    return replace(params, options={**params.options, **SETTLE})


def select(protocol: str, names: Sequence[str] | None, kind: str | None = None) -> list[AssignorSpec]:
    """The heuristics of ``protocol`` to compare: all of them, or ``names`` in the given order.

    Raises
    ------
    solver.registry.UnknownAssignorError
        For a name that is not an assignor of ``protocol`` (the message lists them).
    """
    from spark_runner.assignors import canonical, load_all

    specs = {s.name: s for s in load_all() if s.protocol == protocol and (kind is None or s.kind == kind)}
    if names is None:
        return [s for s in specs.values() if s.kind == "heuristic"]
    names = [canonical(n) for n in names]  # Kafka's class names select the assignor they name
    unknown = [n for n in names if n not in specs]
    if unknown:
        from solver.registry import did_you_mean

        hints = "".join(did_you_mean(n, specs) for n in unknown)
        raise UnknownAssignorError(
            f"unknown {protocol} assignor(s): {', '.join(unknown)}{hints} (known: {', '.join(sorted(specs))})")
    return [specs[n] for n in dict.fromkeys(names) if specs[n].kind == "heuristic"]


def stage_proven(res: Result) -> list[bool] | None:
    """Per stage of a solver result (``extra["stages"]``), whether it is proven: every stage when the status is
    ``optimal``; else where the solver's own flag says so (``stage_proven``, Streams ``proven``) or the bound
    reaches the value (within 1e-9 relative).  ``compare``'s title, its table's marks, its stderr line and
    ``--json`` (``optimal.stage_proven``, ``not_proven``) all read this."""
    stages = res.extra.get("stages")
    if not stages:
        return None
    if res.status.value == "optimal":
        return [True] * len(stages)
    flags = res.extra.get("stage_proven", res.extra.get("proven"))
    if not isinstance(flags, list | tuple) or len(flags) != len(stages):
        flags = [False] * len(stages)
    if len(res.objective) != len(stages) or len(res.bound) != len(stages):
        return [bool(f) for f in flags]
    # a stage whose bound reaches its value is proven whatever the flag (the bound is a proof)
    return [bool(f) or float(b) >= float(v) or abs(float(v) - float(b)) <= 1e-9 * max(1.0, abs(float(v)))
            for f, v, b in zip(flags, res.objective, res.bound, strict=True)]


#: Per stage of the optimum: the figures of a solver row that are that stage's value (``own``), and the gaps
#: of every row measured against the strict optimum's value at that stage (``gaps``).  A stage that is not
#: proven makes those figures ``not_proven`` (:func:`mark_not_proven`).
STAGE_FIGURES: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "max_load": (("max_load", "weighted_max_load"), ("max_load_gap",)),
    "moves": (("moved", "moved_cost"), ()),
    "sum_sq": (("sum_sq_load",), ("sum_sq_gap",)),
    "racks": (("cross_rack",), ()),
    "active_balance": (("max_active_load",), ("active_balance_gap",)),
    "total_balance": (("max_total_load",), ("total_balance_gap",)),
    "cross_rack_traffic": (("cross_rack_traffic",), ()),
    "restoration": (("restoration_cost",), ("restoration_gap",)),
    "movement": (("moved_actives",), ()),
}


#: Figures that are a stage's value only on an unweighted group (``max_load`` and ``sum_sq_load`` count
#: topic-partitions; a weighted group's stages are its weighted loads).
_COUNT_FIGURES = ("max_load", "sum_sq_load")


def mark_not_proven(rows: Sequence[dict[str, Any]], reference: str, weighted: bool = False) -> None:
    """Give every row ``not_proven``: the names of its figures that are not proven.

    A solver row's (``stages``, ``stage_proven``) own figures at each open stage (the best found, not a proven
    optimum); on every row, the gaps against the strict optimum's open stages (they are measured against its
    best found); ``excess_moves`` where ``excess_moves_proven`` is false (a lower estimate).  On a ``weighted``
    group the stages are weighted loads, so the partition counts ``max_load`` and ``sum_sq_load`` are never
    a stage's value.  ``compare``'s table marks the same figures.
    """
    strict = rows[0] if rows and rows[0].get("assignor") == reference else {}
    open_strict = [st for st, ok in zip(strict.get("stages") or [], strict.get("stage_proven") or [], strict=False)
                   if not ok]
    gap_keys = [k for st in open_strict for k in STAGE_FIGURES.get(st, ((), ()))[1]]
    for r in rows:
        if r.get("error"):
            continue
        keys: list[str] = []
        for st, ok in zip(r.get("stages") or [], r.get("stage_proven") or [], strict=False):
            if not ok:
                keys += [k for k in STAGE_FIGURES.get(st, ((), ()))[0] if r.get(k) is not None
                         and not (weighted and k in _COUNT_FIGURES)]
        keys += [k for k in gap_keys if r.get(k) is not None]
        yardstick = str(r.get("assignor", "")).startswith(reference) and r.get("excess_moves") == 0
        if r.get("excess_moves") is not None and r.get("excess_moves_proven") is False and not yardstick:
            keys.append("excess_moves")
        r["not_proven"] = list(dict.fromkeys(keys))


def _optimal_doc(opt: Result) -> dict[str, Any]:
    return {"status": opt.status.value, "objective": list(opt.objective), "bound": list(opt.bound),
            "stages": opt.extra.get("stages"), "stage_proven": stage_proven(opt), "engine": opt.extra.get("engine"),
            "gap": opt.extra.get("gap"), "seconds": round(opt.seconds, 4),
            **{k: opt.extra[k] for k in ("notes", "restricted") if k in opt.extra}}


def _solver_stages(res: Result) -> dict[str, Any]:
    """A solver row's stages and which are proven (``stages``, ``stage_proven``)."""
    return {"stages": res.extra.get("stages"), "stage_proven": stage_proven(res)}


def _run_row(name: str, res: Result) -> dict[str, Any]:
    row = {"assignor": name, "status": res.status.value, "seconds": round(res.seconds, 4),
           "rounds": int(res.extra.get("rounds", 1))}
    if "kafka_version" in res.extra:  # a Kafka-named assignor: the release whose rules it followed
        row["kafka_version"] = res.extra["kafka_version"]
    return row


def available(specs: Sequence[AssignorSpec], instance: Instance, params: Params, warn: Warn | None = None
              ) -> list[AssignorSpec]:
    """The assignors of ``specs`` that the Kafka release in force has (``warn`` names the others once)."""
    from solver.kafka_version import KafkaVersionError

    out = []
    for spec in specs:
        try:
            spec.rule(params, instance)
        except KafkaVersionError as e:
            if warn is not None:
                warn(spec.name, f"left out: {e}")
            continue
        out.append(spec)
    return out


def compare(instance: Instance, assignors: Sequence[str] | None = None, params: Params | None = None, *,
            settle: bool = True, warn: Warn | None = None,
            progress: Callable[[str], None] | None = None) -> Comparison:
    """Run the optimum and every selected heuristic of the instance's protocol; score them side by side.

    Parameters
    ----------
    instance
        One instance, either protocol.
    assignors
        Registry names (default: every registered heuristic of the protocol);
        solver names among them are skipped (the optimum is always run).
    params
        The optimum's ``time_limit``, ``seed`` and ``options``; heuristics get
        the seed and options (see :func:`heuristic_params`).  A
        ``balance_tolerance`` (consumer protocol) adds the row
        ``optimal~EPS``: the optimum under that tolerance.  Weighted groups
        (items that differ in load) get that row by default with
        ``EPS = 0.01`` (:data:`solver.consumer.optimal.DEFAULT_BALANCE_TOLERANCE`);
        ``balance_tolerance=0`` leaves it out.
    settle
        Run cooperative assignors' follow-up rounds until nothing is withheld
        (default); ``False`` shows their first round only.
    warn
        Called for each assignor that raises on the input.
    progress
        Called with what is computed next (``"solving optimal"``, ``"running
        range (2/11)"``, ``"gaps of range (2/11)"``), for a progress line.

    Returns
    -------
    Comparison

    Notes
    -----
    ``excess_moves`` (the moves a row wastes against any assignment at least
    as balanced) gets ``min(10, time_limit)`` seconds of CP-SAT per row, and
    starts from the least moved cost among the row's own, the optimum's and
    the tolerance row's that are at least as balanced; unproven, it is a
    lower estimate (``excess_moves_proven`` false).

    Raises
    ------
    solver.registry.UnknownAssignorError
        For an unknown assignor name.
    solver.errors.InfeasibleError
        When the optimum finds no assignment.

    Examples
    --------
    >>> from solver.io import parse_instance
    >>> inst = parse_instance({"format": "kassign/v1", "topics": {"T": 4}, "members": [
    ...     {"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3]}, "generation": 1},
    ...     {"id": "b", "topics": ["T"]}]})
    >>> c = compare(inst, ["range", "cooperative-sticky"])
    >>> [(r["assignor"], r["valid"], r["rounds"], r["moved"], r["max_load_gap"]) for r in c.rows]
    [('optimal', True, 1, 2, 0.0), ('range', True, 1, 2, 0.0), ('cooperative-sticky', True, 2, 2, 0.0)]
    """
    if instance.protocol not in REFERENCE:
        raise ValueError(f"no optimum for the {instance.protocol!r} protocol")
    from solver.api import score
    from spark_runner.assignors import get

    p = params or Params()
    chosen = select(instance.protocol, assignors)
    if assignors is None:  # every assignor: those the Kafka release has (a named one is run, and says why not)
        chosen = available(chosen, instance, p, warn)
    ref = REFERENCE[instance.protocol]
    tolerance = p.balance_tolerance if instance.protocol == "consumer" else None
    if tolerance is None and instance.protocol == "consumer":
        from solver.consumer.optimal import DEFAULT_BALANCE_TOLERANCE, items_differ

        # weighted groups: the answer to deploy is the fewest moves within 1% of the best balance found
        # (the strict optimum can move far more for the last fraction of a percent); the strict row stays
        tolerance = DEFAULT_BALANCE_TOLERANCE if items_differ(instance) else None
    if tolerance == 0:
        tolerance = None  # an explicit 0 asks for the strict optimum only
    say = progress or (lambda _: None)
    say(f"solving {ref}")
    opt = get(ref).run(instance, replace(p, balance_tolerance=None))
    tol = None
    if tolerance is not None:
        say(f"solving {ref}~{tolerance:g}")
        tol = get(ref).run(instance, replace(p, balance_tolerance=tolerance))
    hp = heuristic_params(p, settle)
    # each row's wasted moves: CP-SAT for at most the optimum's limit, 10 s by default; the tolerance
    # answer, when at least as balanced as a row, already bounds that row's fewest moves
    gap_limit = min(10.0, p.time_limit) if p.time_limit is not None else 10.0
    known = (tol.assignment,) if tol is not None and isinstance(tol.assignment, Assignment) else ()
    gs = _GapSettings(gap_limit, bool(p.options.get("deterministic", True)), known)
    rows = _assignor_rows(instance, ref, opt, chosen, hp, warn, gs, say)
    if tol is not None:
        # the tolerance result as its own row, right after the optimum: the fewest moves with max load
        # at most (1 + EPS) x the optimum's, measured against the optimum
        s = score(instance, tol.assignment)
        row = {**_run_row(f"{ref}~{tolerance:g}", tol), "engine": tol.extra.get("engine"), **_solver_stages(tol),
               **s}
        row.update(gaps(instance, tol.assignment, opt, scores=s, time_limit=gs.time_limit,
                        deterministic=gs.deterministic))
        rows.insert(1, row)
    mark_not_proven(rows, ref, instance.protocol == "consumer" and instance.has_weights)
    return Comparison(instance.name, instance.protocol, ref, _optimal_doc(opt), tuple(rows))


@dataclass(frozen=True)
class _GapSettings:
    """How each row's ``excess_moves`` is computed (consumer protocol)."""

    time_limit: float = 10.0
    deterministic: bool = True
    known: tuple[Assignment, ...] = ()


def _run_assignors(instance: Instance, chosen: Sequence[AssignorSpec], params: Params,
                   warn: Warn | None, say: Callable[[str], None] = lambda _: None) -> list[tuple[str, Result | str]]:
    """Each chosen assignor's name with its result, or with its error message when it refused the instance."""
    out: list[tuple[str, Result | str]] = []
    for i, spec in enumerate(chosen, 1):
        say(f"running {spec.name} ({i}/{len(chosen)})")
        try:
            out.append((spec.name, spec.run(instance, params)))
        except Exception as e:  # an assignor refusing an input is reported in its row, not fatal
            msg = f"{type(e).__name__}: {e}"
            if warn is not None:
                warn(spec.name, msg)
            out.append((spec.name, msg))
    return out


def _assignor_rows(instance: Instance, ref: str, opt: Result, chosen: Sequence[AssignorSpec], params: Params,
                   warn: Warn | None, gs: _GapSettings | None = None,
                   say: Callable[[str], None] = lambda _: None) -> list[dict[str, Any]]:
    """The optimum's row, then one per heuristic (``assignor`` and ``error`` for one that refused)."""
    from solver.api import score

    opt_scores = score(instance, opt.assignment)
    g = gs or _GapSettings()

    def measure(res: Result, s: dict[str, Any]) -> dict[str, Any]:
        return gaps(instance, res.assignment, opt, scores=s, optimum_scores=opt_scores, time_limit=g.time_limit,
                    deterministic=g.deterministic, known=g.known)

    rows = [{**_run_row(ref, opt), "engine": opt.extra.get("engine"), **_solver_stages(opt), **opt_scores,
             **measure(opt, opt_scores)}]
    outcomes = _run_assignors(instance, chosen, params, warn, say)
    for i, (name, res) in enumerate(outcomes, 1):
        if isinstance(res, str):
            rows.append({"assignor": name, "error": res})
            continue
        say(f"gaps of {name} ({i}/{len(outcomes)})")
        s = score(instance, res.assignment)
        rows.append({**_run_row(name, res), **s, **measure(res, s)})
    return rows


__all__ = ["REFERENCE", "STAGE_FIGURES", "Comparison", "available", "compare",
           "heuristic_params", "mark_not_proven", "select", "stage_proven"]
