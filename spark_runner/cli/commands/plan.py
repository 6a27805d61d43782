"""``kassign plan``: offline capacity planning (minimum instances with proof, scaling and failure costs).

See :mod:`solver.planning.plan` for the model and ``docs/planning.md`` for a worked example.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

#: Kafka's own assignor the plan is compared with, per protocol.
KAFKA_BASELINE = {"consumer": "cooperative-sticky", "streams": "high-availability"}


def _fmt(v: Any, pct: bool = False) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if pct and isinstance(v, int | float):
        return f"{100 * v:.1f}%"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


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


def render(doc: dict[str, Any], out: Console) -> None:
    """Print the plan as Rich tables: summary, one row per instance count, baselines."""
    unit = doc["load_unit"]
    out.print(
        f"[bold]{doc['name'] or 'instance'}[/bold]: {doc['items']} items ({doc['partitions']} partitions), "
        f"total load {doc['total_load']:.6g} {unit}, capacity {doc['capacity']:.6g} per instance, "
        f"today {doc['current_instances']} instances"
    )
    mn = doc["min_instances"]
    if doc["proof_kind"] == "gap":
        out.print(f"minimum instances: between {doc['lower_bound']} and {doc['upper_bound']} (not proven)")
    else:
        out.print(f"[bold]minimum instances: {mn}[/bold] (lower bound {doc['lower_bound']}, "
                  f"proof: {doc['proof_kind']})")
    out.print(f"proof: {doc['proof']}", markup=False)
    k = doc["resilience"]
    kafka = doc.get("kafka_assignor") or "kafka"
    t = Table(title=f"plan per instance count (N-{k} resilience; Kafka = {kafka})")
    cols = [("n", "right"), ("fits", "center"), ("max util", "right"), ("headroom", "right"),
            ("moved parts", "right"), ("moved state", "right"), ("kafka moved", "right"),
            ("kafka state", "right"), ("kafka util", "right"), ("kafka fits", "center"),
            (f"N-{k} fits", "center"), (f"N-{k} moved state", "right"), ("worst loss", "left")]
    split = any((r.get("kafka_copartition_violations") or 0) > 0 for r in doc["rows"])
    if split:
        cols.insert(10, ("kafka split units", "right"))
    for c, j in cols:
        t.add_column(c, justify=j)  # type: ignore[arg-type]
    for r in doc["rows"]:
        kstat = r["kafka_status"]
        kcols = ([_fmt(r["kafka_moved_partitions"]), _fmt(r["kafka_moved_state"]),
                  _fmt(r["kafka_max_utilisation"], pct=True), _fmt(r["kafka_fits"])]
                 if kstat == "ok" else [kstat, "-", "-", "-"])
        if split:
            kcols.append(_fmt(r["kafka_copartition_violations"]))
        res_state = _fmt(r["resilience_moved_state"])
        if r["resilience_moved_state"] is None and r["resilience_forced_moved_state"] is not None \
                and r["resilience_fits"]:
            res_state = ">= " + _fmt(r["resilience_forced_moved_state"])
        t.add_row(str(r["n"]), _fmt(r["fits"]), _fmt(r["max_utilisation"], pct=True),
                  _fmt(r["headroom"], pct=True), _fmt(r["moved_partitions"]), _fmt(r["moved_state"]),
                  *kcols, _fmt(r["resilience_fits"]), res_state, ", ".join(r["resilience_worst_lost"]) or "-")
    out.print(t)
    b = Table(title="rules of thumb against the minimum")
    for c in ("baseline", "instances", "vs minimum", "fits", "rule"):
        b.add_column(c)
    for x in doc["baselines"]:
        vs = x["vs_min"]
        b.add_row(x["name"], str(x["instances"]), "-" if vs is None else f"{vs:+d}", _fmt(x["fits"]), x["rule"])
    out.print(b)
    for note in doc["notes"]:
        out.print(f"note: {note}", markup=False)


def plot(doc: dict[str, Any], path: Path) -> None:
    """PNG: instances vs max utilisation (plan and Kafka) and moved state."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = doc["rows"]
    ns = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    ax.plot(ns, [r["max_utilisation"] for r in rows], "o-", label="max utilisation (optimal balance)")
    if any(r["kafka_max_utilisation"] is not None for r in rows):
        ax.plot(ns, [r["kafka_max_utilisation"] for r in rows], "s--", label="max utilisation (Kafka)")
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    if doc["min_instances"]:
        ax.axvline(doc["min_instances"], color="green", lw=0.8, ls=":", label="proven minimum")
    ax.set_xlabel("instances")
    ax.set_ylabel("utilisation of the busiest instance")
    ax2 = ax.twinx()
    ax2.bar([n - 0.15 for n in ns], [r["moved_state"] or 0 for r in rows], width=0.3, alpha=0.35,
            color="tab:red", label="moved state (fewest)")
    if any(r["kafka_moved_state"] is not None for r in rows):
        ax2.bar([n + 0.15 for n in ns], [r["kafka_moved_state"] or 0 for r in rows], width=0.3, alpha=0.35,
                color="tab:purple", label="moved state (Kafka)")
    ax2.set_ylabel("moved state (move_costs)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper right")
    ax.set_title(f"{doc['name'] or 'plan'}: capacity {doc['capacity']:.4g} per instance")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def register(app: typer.Typer) -> None:
    """Add ``kassign plan`` to ``app``."""

    @app.command("plan")
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
        new_capacity: Annotated[float, typer.Option(help="Capacity multiplier of instances added beyond today's.")]
        = 1.0,
        active_load: Annotated[float, typer.Option(help="Streams: load of an active task.")] = 1.0,
        standby_load: Annotated[float, typer.Option(help="Streams: load of a standby replica.")] = 1.0,
        as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
        plot_out: Annotated[Path | None, typer.Option("--plot", help="Write a PNG plot here.")] = None,
        time_limit: Annotated[float, typer.Option(
            help="Seconds for the whole plan: rows not started by then are left out (a note says so).")] = 10.0,
        seed: Annotated[int, typer.Option(help="Random seed of the solver.")] = 0,
        no_kafka: Annotated[bool, typer.Option("--no-kafka", help="Skip the Kafka assignor comparison.")] = False,
    ) -> None:
        """Capacity planning: minimum instances (with proof), utilisation, moves and N-K resilience per count."""
        from solver.io import dumps, read_instance
        from solver.planning.plan import PlanConfig, PlanUsageError, parse_range
        from solver.planning.plan import plan as plan_fn
        from spark_runner.cli.common import UsageError, located

        err = Console(stderr=True, highlight=False)
        try:
            rng = parse_range(range_) if range_ is not None else None
            cfg = PlanConfig(capacity=capacity, resilience=resilience, range=rng, catch_up_seconds=catch_up_seconds,
                             lag_threshold=lag_threshold, new_capacity=new_capacity, time_limit=time_limit,
                             seed=seed, active_load=active_load, standby_load=standby_load)
            from solver.planning.plan import check_config

            check_config(cfg)
        except PlanUsageError as e:
            raise UsageError(str(e)) from None
        inst = read_instance(instance)
        kafka = None if no_kafka else _kafka_spec(inst.protocol, err)
        try:
            with located(str(instance)):
                doc = plan_fn(inst, cfg, kafka, progress=lambda m: err.print(f"plan: {m}", markup=False))
        except PlanUsageError as e:
            raise UsageError(str(e)) from None
        if plot_out is not None:
            plot(doc, plot_out)
            err.print(f"wrote plot to {plot_out}", markup=False)
        if as_json:
            sys.stdout.write(dumps(doc) + "\n")
        else:
            render(doc, Console(highlight=False, soft_wrap=False, width=200))
