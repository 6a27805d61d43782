"""``kassign plan``: offline capacity planning (minimum instances with proof, scaling and failure costs).

See :mod:`solver.planning.plan` for the model and ``docs/planning.md`` for a worked example.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

#: Kafka's own assignor the plan is compared with, per protocol.
from spark_runner.cli.tables import FORMAT_HELP, choose_format, emit, terminal_width

KAFKA_BASELINE = {"consumer": "cooperative-sticky", "streams": "high-availability"}


def _fmt(v: Any, pct: bool = False) -> str:
    from spark_runner.units import number

    if pct and isinstance(v, int | float) and not isinstance(v, bool):
        return f"{100 * v:.1f}%"
    return number(v)


def _kafka_spec(protocol: str, err: Console) -> Any:
    from solver.registry import UnknownAssignorError
    from spark_runner.assignors import get

    name = KAFKA_BASELINE[protocol]
    try:
        return get(name)
    except UnknownAssignorError:
        err.print(f"note: assignor {name!r} is not registered; the kafka_* columns say 'unavailable'",
                  markup=False)
        return None


#: How a figure whose optimality was not proven reads in the plan's table (and in --json: ``moves_status``).
NOT_PROVEN = "(not proven)"


def legend(doc: dict[str, Any], rows: list[dict[str, str]]) -> list[str]:
    """Lines under the tables that say what ``-`` and ``(not proven)`` mean, and why an N-K is undecided."""
    out = []
    cells = [v for r in rows for v in r.values()]
    if any(v == "-" or v.startswith("- ") for v in cells):
        text = "-: nothing to give: no utilisation or moves where that many instances do not hold the load (fits no)"
        if doc["resilience"]:
            text += (", no N-K moved state where losing K does not fit (N-K fits no), no worst loss where no loss "
                     "was tried; an N-K fits of -: not decided within the time limit")
        out.append(text)
    if any(NOT_PROVEN in v for v in cells):
        out.append(f"{NOT_PROVEN}: the fewest moves were not proven within the time limit; the figure is what the "
                   "plan found (--json: moves_status feasible, moved_state_bound the proven lower bound)")
    if any(v.startswith(">= ") for v in cells):
        out.append(">= X: a lower bound: the state the lost instances held must move at least; the fewest moves "
                   "after the loss were not computed (--json: resilience_forced_moved_state)")
    k = doc["resilience"]
    for r in doc["rows"]:
        if k and r.get("resilience_fits") is None and r.get("fits") and r.get("resilience_note"):
            out.append(f"N-{k} at {r['n']}: {r['resilience_note']}")
    return out


def render(doc: dict[str, Any], fmt: str = "table", width: int | None = None) -> str:
    """The plan as text: summary lines, one row per instance count, baselines (``fmt``: table, tsv or md).

    ``tsv`` is the per-instance-count table alone (one header line, one line per count).
    """
    from spark_runner.cli.tables import Column
    from spark_runner.cli.tables import render as table
    from spark_runner.units import Scale, number

    streams = doc.get("protocol") == "streams"
    load = Scale.for_values([doc["capacity"], doc["total_load"]], doc["load_unit"])
    per = doc.get("capacity_per", "instance")
    cap = f"capacity {load.with_unit(doc['capacity'])} per {per}"
    today = doc.get("instance_capacity")
    if per != "instance" and today:
        lo, hi = today
        held = load.with_unit(lo) if lo == hi else f"{load.show(lo)}-{load.with_unit(hi)}"
        cap += (f" (today's instances hold {held}; an added one "
                f"{load.with_unit(doc.get('new_instance_capacity', doc['capacity']))})")
    lines = [f"{doc['name'] or 'instance'}: {doc['items']:,} items ({doc['partitions']:,} "
             f"{'tasks' if streams else 'partitions'}), total load {load.with_unit(doc['total_load'])}, {cap}, "
             f"today {doc['current_instances']:,} instances"]
    if doc["proof_kind"] == "gap":
        lines.append(f"minimum instances: between {doc['lower_bound']:,} and {doc['upper_bound']:,} (not proven)")
    else:
        lines.append(f"minimum instances: {doc['min_instances']:,} (lower bound {doc['lower_bound']:,}, "
                     f"proof: {doc['proof_kind']})")
    lines.append(f"proof: {doc['proof']}")
    k = doc["resilience"]
    if doc.get("new_capacity_source") and any(r["n"] > doc["current_instances"] for r in doc["rows"]):
        src = ("today's instances' size (--new-capacity M to change)"
               if doc["new_capacity_source"] == "today's instances" else "--new-capacity")
        what = (f"{number(doc.get('new_capacity'))} stream threads, {load.with_unit(doc['new_instance_capacity'])}"
                if streams else load.with_unit(doc["new_instance_capacity"]))
        lines.append(f"added instances: {what} each, from {src}")
    surv = doc.get("survives")
    if surv:
        if surv["instances"] is not None:
            lines.append(f"N-{surv['k']}: {surv['instances']:,} instances survive losing {surv['k']} "
                         f"(the fewest of this table whose every loss of {surv['k']} still fits)")
        else:
            hi = doc["range"][1]
            lines.append(f"N-{surv['k']}: no count computed (up to {hi:,}) survives losing {surv['k']} "
                         f"(give --range A:B with a larger B, or raise --time-limit)")
        if surv.get("undecided"):
            lines.append(f"N-{surv['k']} not decided within the time limit at {', '.join(map(str, surv['undecided']))} "
                         "(raise --time-limit): fewer instances may survive")
    kafka = doc.get("kafka_assignor")
    moved = "moved replicas" if streams else "moved parts"
    rs = doc["rows"]
    state = Scale.for_values([r.get(c) for r in rs for c in ("moved_state", "kafka_moved_state",
                                                               "resilience_moved_state")],
                             doc.get("state_unit") or "move_costs")
    su = f" ({state.unit})" if state.unit and state.unit != "move_costs" else ""
    cols = [Column("n"), Column("fits", align="left"), Column("max util"), Column("headroom"), Column(moved),
            Column("moved state" + su)]
    if kafka:  # --no-kafka (or Kafka's assignor not registered): no Kafka columns
        cols += [Column("kafka moved"), Column("kafka state" + su), Column("kafka util"),
                 Column("kafka fits", align="left")]
    split = kafka and any((r.get("kafka_copartition_violations") or 0) > 0 for r in doc["rows"])
    if split:
        cols.append(Column("kafka split units"))
    if k:  # without --resilience there is no loss to survive: no N-K columns
        cols += [Column(f"N-{k} fits", align="left"), Column(f"N-{k} moved state" + su),
                 Column("worst loss", align="left", wrap=True)]
    rows = []
    for r in doc["rows"]:
        kstat = r["kafka_status"]
        kfits = _fmt(r["kafka_fits"])
        if r.get("kafka_unplaced"):
            kfits += f" ({r['kafka_unplaced']} {'replicas' if streams else 'partitions'} unassigned)"
        kcols = ([_fmt(r["kafka_moved_partitions"]), state.show(r["kafka_moved_state"]),
                  _fmt(r["kafka_max_utilisation"], pct=True), kfits] if kstat == "ok" else [kstat, "-", "-", "-"])
        if split:
            kcols.append(_fmt(r["kafka_copartition_violations"]))
        res_state = state.show(r["resilience_moved_state"])
        if r["resilience_moved_state"] is None and r["resilience_forced_moved_state"] is not None \
                and r["resilience_fits"]:
            res_state = ">= " + state.show(r["resilience_forced_moved_state"])
        mparts, mstate = _fmt(r["moved_partitions"]), state.show(r["moved_state"])
        if r.get("moves_status") != "optimal" and r["moved_state"] is not None:
            # the fewest moves were not proven: what the plan found, said so in the cell
            mparts, mstate = f"{mparts} {NOT_PROVEN}", f"{mstate} {NOT_PROVEN}"
        vals = [_fmt(r["n"]), _fmt(r["fits"]), _fmt(r["max_utilisation"], pct=True), _fmt(r["headroom"], pct=True),
                mparts, mstate, *(kcols if kafka else [])]
        if k:
            vals += [_fmt(r["resilience_fits"]), res_state, ", ".join(r["resilience_worst_lost"]) or "-"]
        rows.append({c.key: v for c, v in zip(cols, vals, strict=True)})
    versus = f"Kafka = {kafka}" if kafka else "Kafka's assignor not compared"
    per_n = table(rows, cols, fmt, width=width, cell=lambda _k, v: str(v),
                  title=f"plan per instance count ({f'N-{k} resilience; ' if k else ''}{versus})")
    if fmt == "tsv":
        return per_n
    bcols = [Column("baseline", align="left"), Column("instances"), Column("vs minimum"),
             Column("fits", align="left"), Column("rule", align="left", wrap=True)]
    brows = [{"baseline": x["name"], "instances": _fmt(x["instances"]),
              "vs minimum": "-" if x["vs_min"] is None else f"{x['vs_min']:+,d}", "fits": _fmt(x["fits"]),
              "rule": x["rule"]} for x in doc["baselines"]]
    base = table(brows, bcols, fmt, width=width, cell=lambda _k, v: str(v), title="rules of thumb against the minimum")
    notes = [f"note: {n}" for n in doc["notes"]] + legend(doc, rows)
    if fmt == "md":
        return "\n\n".join(["  \n".join(lines), per_n.rstrip("\n"), base.rstrip("\n"), *notes]) + "\n"
    import textwrap

    head = [w for line in lines for w in (textwrap.wrap(line, width) if width else [line])]
    tail = [w for line in notes for w in (textwrap.wrap(line, width, break_on_hyphens=False) if width else [line])]
    return "\n".join([*head, "", per_n.rstrip("\n"), "", base.rstrip("\n"), *tail]) + "\n"


def plot(doc: dict[str, Any], path: str | Path) -> None:
    """PNG: utilisation of the busiest instance (plan, Kafka, after losing K) and moved state, per instance count.

    Units on both axes; today's instance count and the proven minimum marked; with ``--resilience K`` the
    N-K line shows whether the plan survives losing K instances.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from solver.model.files import figure_bytes, write_atomic

    rows = doc["rows"]
    ns = [r["n"] for r in rows]
    streams = doc.get("protocol") == "streams"
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    ax.plot(ns, [_pct(r["max_utilisation"]) for r in rows], "o-", label="busiest instance, optimal plan")
    if any(r["kafka_max_utilisation"] is not None for r in rows):
        ax.plot(ns, [_pct(r["kafka_max_utilisation"]) for r in rows], "s--",
                label=f"busiest instance, {doc.get('kafka_assignor') or 'Kafka'}")
    k = doc["resilience"]
    # N-K: n instances survive losing K exactly when n - K instances hold the load (the plan's row at n - K)
    by_n = {r["n"]: r for r in rows}
    kk = k if k > 0 else 1
    nk = [(n, _pct(by_n[n - kk]["max_utilisation"])) for n in ns if n - kk in by_n]
    if nk:
        ax.plot([a for a, _ in nk], [b for _, b in nk], "^:", color="tab:brown",
                label=f"after losing {kk} instance{'s' if kk > 1 else ''} and rebalancing (N-{kk}): busiest")
        lost = [a for a in ns if a - kk in by_n and by_n[a - kk]["fits"] is False]
        if lost:
            ax.scatter(lost, [100.0] * len(lost), marker="x", s=60, color="tab:brown", zorder=4,
                       label=f"N-{kk} does not fit")
    ax.axhline(100.0, color="grey", lw=0.8, ls=":")
    ax.text(ns[0], 101, "capacity", fontsize=8, color="grey", va="bottom")
    if doc["min_instances"]:
        ax.axvline(doc["min_instances"], color="green", lw=0.9, ls=":",
                   label=f"proven minimum ({doc['min_instances']})")
    ax.axvline(doc["current_instances"], color="black", lw=0.9, ls="--",
               label=f"today ({doc['current_instances']} instances)")
    ax.set_xlabel("instances (consumers)" if not streams else "instances (Streams clients)")
    ax.set_ylabel(f"utilisation of the busiest instance (% of its capacity, {doc['load_unit']})")
    ax.set_xticks(ns)
    ax2 = ax.twinx()
    ax2.bar([n - 0.15 for n in ns], [r["moved_state"] or 0 for r in rows], width=0.3, alpha=0.3,
            color="tab:red", label="moved state, optimal plan (fewest)")
    if any(r["kafka_moved_state"] is not None for r in rows):
        ax2.bar([n + 0.15 for n in ns], [r["kafka_moved_state"] or 0 for r in rows], width=0.3, alpha=0.3,
                color="tab:purple", label="moved state, Kafka")
    ax2.set_ylabel("moved state (sum of move_costs)" if not streams else "moved state (state stores to restore)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper right")
    per = doc.get("capacity_per", "instance")
    ax.set_title(f"{doc['name'] or 'plan'}: capacity {doc['capacity']:.4g} {doc['load_unit']} per {per}")
    fig.tight_layout()
    data = figure_bytes(fig, path, dpi=120)
    plt.close(fig)
    write_atomic(path, data)


def _pct(v: float | None) -> float:
    return float("nan") if v is None else 100.0 * v


#: The command's line in ``kassign --help`` (``plan``).
SHORT_HELP = "How many instances, what scaling moves."


def plan_cmd(
    instance: Annotated[Path, typer.Argument(help="The instance (.json/.yaml), consumer or streams protocol.")],
    capacity: Annotated[float, typer.Option(help="Load one instance holds (unit of the weights, per second "
                                                 "with --catch-up-seconds); members' `capacity` multiplies it.")],
    resilience: Annotated[int, typer.Option(help="K for N-K resilience: survive losing any K instances.")] = 0,
    range_: Annotated[str | None, typer.Option("--range", help="Instance counts A:B (inclusive) to tabulate.")]
    = None,
    catch_up_seconds: Annotated[float | None, typer.Option(
        help="Weights are lag: load = lag / this (drain the backlog in S seconds).")] = None,
    lag_threshold: Annotated[float, typer.Option(help="KEDA's lagThreshold for the KEDA baseline.")] = 10.0,
    new_capacity: Annotated[float | None, typer.Option(
        help="Capacity multiplier of instances added beyond today's (default: today's instances' size).")]
    = None,
    active_load: Annotated[float, typer.Option(help="Streams: load of an active task.")] = 1.0,
    standby_load: Annotated[float, typer.Option(help="Streams: load of a standby replica.")] = 1.0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    fmt: Annotated[str | None, typer.Option("--format", help=FORMAT_HELP + " tsv: the per-count table.")] = None,
    plot_out: Annotated[str | None, typer.Option("--plot", help="Write a PNG plot here (.png, .svg or .pdf).")]
    = None,
    time_limit: Annotated[float, typer.Option(
        help="Seconds for the whole plan: rows not started by then are left out (a note says so).")] = 10.0,
    seed: Annotated[int, typer.Option(help="Random seed of the solver.")] = 0,
    no_kafka: Annotated[bool, typer.Option("--no-kafka", help="Skip the Kafka assignor comparison.")] = False,
    kafka_version: Annotated[str | None, typer.Option(
        "--kafka-version", help="Kafka release the compared Kafka assignor follows (X.Y[.Z]; default: the "
                                "instance's kafka_version, else 4.4.0).")] = None,
) -> None:
    """Capacity planning: minimum instances (with proof), utilisation, moves and N-K resilience per count."""
    from solver.io import dumps, read_instance
    from solver.model.files import check_plot_path, drawing, transaction
    from solver.planning.plan import PlanConfig, PlanUsageError, check_config, parse_range
    from solver.planning.plan import plan as plan_fn
    from spark_runner.cli.common import UsageError, check_kafka_version, located

    err = Console(stderr=True, highlight=False)
    try:
        out_fmt = choose_format(fmt, as_json)
    except ValueError as e:
        raise UsageError(str(e)) from None
    check_plot_path(plot_out)
    try:  # every value in its range (solver.options), before the instance is read
        rng = parse_range(range_) if range_ is not None else None
        cfg = PlanConfig(capacity=capacity, resilience=resilience, range=rng, catch_up_seconds=catch_up_seconds,
                         lag_threshold=lag_threshold, new_capacity=new_capacity, time_limit=time_limit,
                         seed=seed, active_load=active_load, standby_load=standby_load,
                         kafka_version=check_kafka_version(kafka_version))
        check_config(cfg)
    except PlanUsageError as e:
        raise UsageError(str(e)) from None
    inst = read_instance(instance)
    kafka = None if no_kafka else _kafka_spec(inst.protocol, err)
    if kafka is not None:  # a release without the compared assignor: exit 2 before the plan when asked for
        from solver.kafka_version import KafkaVersionError
        from solver.result import Params

        try:
            kafka.rule(Params(kafka_version=kafka_version), inst)
        except KafkaVersionError as e:
            if kafka_version is not None:
                raise
            # the instance's release, not a flag: Kafka's column is left out, as compare leaves the assignor out
            err.print(f"note: {e}; the kafka_* columns say 'unavailable' (--kafka-version picks another "
                      f"release)", markup=False)
            kafka = None
    try:
        with located(str(instance)):
            doc = plan_fn(inst, cfg, kafka, progress=lambda m: err.print(f"plan: {m}", markup=False))
    except PlanUsageError as e:
        raise UsageError(str(e)) from None
    text = dumps(doc) + "\n" if out_fmt == "json" else render(doc, out_fmt, terminal_width())
    with transaction():  # the plot is published only once the table is ready
        if plot_out is not None:
            with drawing(plot_out):
                plot(doc, plot_out)
    if plot_out is not None:
        err.print(f"wrote plot to {plot_out}", markup=False)
    if out_fmt == "json":
        sys.stdout.write(text)
    else:
        emit(text)
