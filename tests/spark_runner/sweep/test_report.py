"""The sweep report (no Spark): the answer on top, readable metric names, plots, and a real browser check."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_runner.sweep.evaluate import OPTIMAL, arrow_schema
from spark_runner.sweep.grid import parse_grid
from spark_runner.sweep.report import build_report, load_rows, recommend

PARAMS = {"members": 4, "topics": 2, "partitions_min": 2, "partitions_max": 5, "steps": 3, "copartition": 0,
          "events": ["join", "leave"]}


def _row(sid: str, seed: int, step: int, assignor: str, **over: Any) -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name in arrow_schema().names}
    row.update(scenario_id=sid, seed=seed, step=step, event="initial" if step == 0 else "join", protocol="consumer",
               members=4, topics=2, partitions=12 + 4 * seed, status="optimal" if assignor == OPTIMAL else "heuristic",
               seconds=0.01, rounds=1, valid=True, copartition_violations=0, moved=1, moved_cost=1.0,
               max_load_gap=0.0, sum_sq_gap=0.0, excess_moves=0.0, excess_moves_proven=True, balance_optimal=True,
               opt_status="optimal", params_json=json.dumps(PARAMS), param_weights="uniform", assignor=assignor)
    row.update(over)
    return row


def _write(out: Path, rows: list[dict[str, Any]]) -> None:
    schema = arrow_schema()
    file_schema = pa.schema([f for f in schema if f.name != "assignor"])
    for name in sorted({r["assignor"] for r in rows}):
        part = out / "rows" / f"assignor={name}"
        part.mkdir(parents=True)
        mine = [{k: v for k, v in r.items() if k != "assignor"} for r in rows if r["assignor"] == name]
        pq.write_table(pa.Table.from_pylist(mine, schema=file_schema), part / "part-0.parquet")
    (out / "manifest.json").write_text(json.dumps({"grid": "tiny", "solver_time_limit": 5}))


def _sweep(tmp_path: Path) -> Path:
    grid = parse_grid({"name": "tiny", "seeds": [0, 1], "assignors": ["range"], "params": PARAMS}, "g.yaml")
    rows = []
    for sid, seed, _params in grid.scenarios():
        for step in range(4):
            rows.append(_row(sid, seed, step, OPTIMAL, moved=1))
            # uniform: always as good as the optimum
            rows.append(_row(sid, seed, step, "uniform", moved=1))
            # fair: as balanced, but moves 3 more than needed at every step
            rows.append(_row(sid, seed, step, "fair", moved=4, moved_cost=4.0, excess_moves=3.0))
            # cooperative-sticky: splits a co-partitioned unit at step 2 and looks better than the optimum there
            split = step == 2
            rows.append(_row(sid, seed, step, "cooperative-sticky", copartition_violations=1 if split else 0,
                             max_load_gap=0.0, sum_sq_gap=-2.0 if split else 0.0, excess_moves=None if split else 0.0))
    # the worst step of "uniform": the largest max_load_gap, at scenario 1 step 3
    sid1 = grid.scenarios()[1][0]
    rows = [r if not (r["assignor"] == "uniform" and r["scenario_id"] == sid1 and r["step"] == 3)
            else {**r, "max_load_gap": 2.0, "sum_sq_gap": 8.0, "balance_optimal": False} for r in rows]
    out = tmp_path / "sweep"
    _write(out, rows)
    return out


def _text(html_doc: str) -> str:
    return re.sub(r"<[^>]+>", " ", re.sub(r"<style>.*?</style>", "", html_doc, flags=re.S))


def test_the_report_answers_which_assignor_and_what_it_costs(tmp_path: Path) -> None:
    out = _sweep(tmp_path)
    index = build_report(out)
    md = (out / "report" / "summary.md").read_text()
    head = md.split("## Overview")[0]
    assert "## Which assignor should I run, and what does it cost me?" in head
    # uniform: 7 of 8 steps as good as the optimum; fair wastes moves, cooperative-sticky splits a unit
    assert "**Run `uniform`.**" in head
    assert "in 87.5% of its 8 steps" in head
    # how to deploy it: the setting, the release, what else it needs
    assert "Set `group.remote.assignor=uniform` (Kafka 4.0.0 or later, with group.protocol=consumer" in head
    assert "1 moved topic-partitions per step (`moved`, mean; the optimum: 1)" in head
    assert "1 rebalance round per step" in head and "1 rebalance rounds" not in md
    rec = recommend(load_rows(out))
    assert rec is not None and rec["worst"]["step"] == 3 and rec["worst"]["max_load_gap"] == 2.0
    # the reproduce command's grid is that one scenario
    grid_file = out / "report" / "worst-consumer-uniform.yaml"
    assert f"`kassign sweep {grid_file} --out " in head
    import yaml

    g = parse_grid(yaml.safe_load(grid_file.read_text()), str(grid_file))
    assert [s[0] for s in g.scenarios()] == [rec["worst"]["scenario_id"]] and g.evaluated[0] == "uniform"
    page = index.read_text()
    assert "Which assignor should I run" in page.split("<h2>Overview")[0]
    assert "*" not in _text(page), "literal Markdown asterisks in the HTML"
    assert page.count("<table>") == page.count("<div class=scroll><table>") > 0
    # metric names a person reads, with the raw name and the unit beside
    assert ("## Moves beyond the fewest at that balance (excess_moves, topic-partitions (move_costs when set)): "
            "unweighted groups (every partition counts 1)") in md
    assert "| moved partitions, mean (`moved_mean`, topic-partitions per step) |" in md
    # a total is labelled as one; times in milliseconds
    assert "| moved partitions, total (`moved_total`, topic-partitions over all steps) |" in md
    assert "(`ms_mean`, milliseconds)" in md and "seconds_mean" not in md
    assert "<code>excess_moves</code>" in page
    # proposals apart: fair (KIP-49) is no candidate, it is shown as what it would gain
    assert "What a proposal would gain" in head and "| fair | KIP-49 (never merged) |" in head


def test_plots_and_notes(tmp_path: Path) -> None:
    out = _sweep(tmp_path)
    build_report(out)
    folder = out / "report"
    for f in ("gaps.png", "moves.png", "optimum.png"):
        assert (folder / f).stat().st_size > 0, f
    assert not (folder / "solve_time.png").exists()
    md = (folder / "summary.md").read_text()
    # split steps have an outcome of their own, no gaps, and a note that says so
    assert "2 step(s) split co-partitioned units (outcome `split`)" in md
    assert "negative balance gap" not in md
    for png in ("gaps.png", "moves.png", "optimum.png"):
        assert f"({png})" in md


def test_step_counts_note() -> None:
    import pandas as pd

    from spark_runner.sweep.report.plots import _counts_note

    counts = pd.Series({0: 20, 1: 20, 2: 20, 3: 16, 4: 16})
    assert _counts_note(counts) == "mean over the scenarios that reach the step: 20 at steps 0-2, 16 at steps 3-4"


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(CHROMIUM is None, reason="needs headless Chromium (apt-get install -y chromium)")
def test_the_report_in_a_real_browser(tmp_path: Path) -> None:
    """Headless Chromium at 800 px: the page does not overflow (wide tables scroll in their box), every plot loads;
    at 1280 px no table scrolls."""
    out = _sweep(tmp_path)
    index = build_report(out)
    probe = index.with_name("probe.html")
    probe.write_text(index.read_text().replace("</body>", """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  const boxes = [...document.querySelectorAll('div.scroll')];
  document.body.setAttribute('data-probe', JSON.stringify({
    page: document.documentElement.scrollWidth, view: window.innerWidth,
    images: imgs.length, broken: imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src),
    tables: document.querySelectorAll('table').length, boxed: boxes.length,
    clipped: boxes.filter(b => getComputedStyle(b).overflowX !== 'auto').length,
    scrolled: boxes.filter(b => b.scrollWidth > b.clientWidth + 1).length}));
});
</script></body>"""))
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=800,1200",
            "--virtual-time-budget=5000", "--allow-file-access-from-files"]
    dom = subprocess.run([*args, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r"data-probe=\"([^\"]+)\"", dom.stdout)
    assert m, dom.stderr[-2000:]
    probe_doc = json.loads(m.group(1).replace("&quot;", '"'))
    assert probe_doc["page"] <= probe_doc["view"], probe_doc  # nothing cut or pushed off the page
    assert probe_doc["images"] == 3 and probe_doc["broken"] == [], probe_doc
    assert probe_doc["tables"] == probe_doc["boxed"] > 0 and probe_doc["clipped"] == 0
    # at 1280 px every table fits: no box needs its sideways scroll (the "how to deploy it" column is on screen)
    wide = [a.replace("--window-size=800,1200", "--window-size=1280,900") for a in args]
    dom = subprocess.run([*wide, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r"data-probe=\"([^\"]+)\"", dom.stdout)
    assert m, dom.stderr[-2000:]
    probe_doc = json.loads(m.group(1).replace("&quot;", '"'))
    assert probe_doc["view"] == 1280 and probe_doc["scrolled"] == 0, probe_doc
    shot = tmp_path / "shot.png"
    subprocess.run([*args, f"--screenshot={shot}", index.as_uri()], capture_output=True, timeout=120)
    assert shot.stat().st_size > 10_000


def test_gap_plots_leave_invalid_and_unproven_steps_out_and_count_them(tmp_path: Path) -> None:
    import pandas as pd

    from spark_runner.sweep.report_gaps import box_data

    # a Streams assignor whose invalid step looks better than the optimum (negative gap), and a step whose
    # optimum is not proven
    def r(step: int, name: str, valid: bool, gap: float | None, status: str = "heuristic") -> dict[str, Any]:
        return {"scenario_id": "s", "step": step, "assignor": name, "status": status, "valid": valid,
                "copartition_violations": None, "active_balance_gap": gap}

    df = pd.DataFrame([r(0, "optimal-streams", True, 0.0, "optimal"), r(1, "optimal-streams", True, 0.0, "optimal"),
                       r(2, "optimal-streams", True, 0.0, "feasible"),
                       r(0, "high-availability", True, 1.0), r(1, "high-availability", False, -3.0),
                       r(2, "high-availability", True, -1.0),
                       r(0, "sticky-task", True, 0.0), r(1, "sticky-task", True, 0.0), r(2, "sticky-task", True, 2.0)])
    data, names = box_data(df, ["high-availability", "sticky-task"], "active_balance_gap", "optimal-streams")
    assert [d.tolist() for d in data] == [[1.0], [0.0, 0.0]]
    assert names == ["high-availability\n(1 invalid or split, 1 not proven, not shown)",
                     "sticky-task\n(1 not proven, not shown)"]
    # a Streams row's reference is the optimum of its own instance: its opt_status decides
    df.loc[(df["assignor"] == "sticky-task") & (df["step"] == 1), "opt_status"] = "feasible"
    data, names = box_data(df, ["sticky-task"], "active_balance_gap", "optimal-streams")
    assert [d.tolist() for d in data] == [[0.0]] and names == ["sticky-task\n(2 not proven, not shown)"]
    # consumer: a step that splits a co-partitioned unit is left out too
    out = _sweep(tmp_path)
    build_report(out)
    rows = load_rows(out)
    data, names = box_data(rows, ["cooperative-sticky"], "sum_sq_gap", OPTIMAL)
    assert min(data[0]) == 0.0 and names == ["cooperative-sticky\n(2 invalid or split, not shown)"]


def test_a_missing_sweep_directory_is_a_missing_file(tmp_path: Path) -> None:
    from solver.errors import MissingFileError

    with pytest.raises(MissingFileError) as e:
        build_report(tmp_path / "nope")
    assert e.value.exit_code == 66 and "no such directory" in str(e.value)


@pytest.mark.parametrize(("text", "problem"), [
    ("[" * 100_000, "malformed JSON"), ("{not json", "malformed JSON"), ("[]", "not a sweep manifest (not an object)"),
    ('{"grid": 5}', "grid: not a sweep manifest (grid is not text)"),
    ('{"kafka_version": ["4.4"]}', "kafka_version: not a sweep manifest (kafka_version is not text)"),
])
def test_a_damaged_manifest_is_exit_65_naming_it(tmp_path: Path, text: str, problem: str) -> None:
    """Was: json.loads on the manifest (a RecursionError or a JSONDecodeError: exit 1; a grid name that is a number
    failed in html.escape)."""
    from solver.errors import InstanceError
    from spark_runner.sweep.store import check_release

    out = _sweep(tmp_path)
    (out / "manifest.json").write_text(text)
    with pytest.raises(InstanceError) as e:
        build_report(out)
    assert e.value.exit_code == 65 and str(e.value).startswith(f"{out / 'manifest.json'}: {problem}"), str(e.value)
    grid = parse_grid({"name": "tiny", "seeds": [0, 1], "assignors": ["range"], "params": PARAMS}, "g.yaml")
    with pytest.raises(InstanceError):  # nor does a sweep resume rows whose release it cannot read
        check_release(out, grid)


def _join_sweep(tmp_path: Path, uniform_good: bool = True) -> Path:
    """Two classes: a no-join point where uniform, sticky and cooperative-sticky tie, and a join point where
    uniform splits units at every step (and looks better than the optimum there) while range does not."""
    rows = []
    plain = {**PARAMS}
    joins = {**PARAMS, "copartition": 1}
    for sid, params, co in (("a1", plain, 0), ("a2", plain, 0), ("j1", joins, 1), ("j2", joins, 1)):
        for step in range(4):
            def row(name: str, sid: str = sid, step: int = step, params: dict[str, Any] = params, co: int = co,
                    **over: Any) -> dict[str, Any]:
                return _row(sid, 0, step, name, params_json=json.dumps(params), param_copartition=co, **over)

            rows.append(row(OPTIMAL))
            rows.append(row("range", moved=3, moved_cost=3.0, excess_moves=2.0 if step >= 2 or not co else 0.0))
            rows.append(row("stream-join-sticky"))
            if co:
                rows.append(row("uniform", copartition_violations=2, max_load_gap=-1.0, sum_sq_gap=-4.0,
                                excess_moves=None, balance_optimal=True))
            else:
                for name in ("uniform", "sticky", "cooperative-sticky"):
                    bad = not uniform_good
                    rows.append(row(name, rounds=2 if name == "cooperative-sticky" else 1,
                                    excess_moves=1.0 if bad else 0.0))
    out = tmp_path / "joins"
    _write(out, rows)
    return out


def test_a_verdict_per_workload_class_and_joins_never_get_an_assignor_that_splits(tmp_path: Path) -> None:
    out = _join_sweep(tmp_path)
    build_report(out)
    md = (out / "report" / "summary.md").read_text()
    head = md.split("## Overview")[0]
    no_joins, joins = head.split("### Consumer groups with co-partitioned joins")
    assert "### Consumer groups without co-partitioned joins: 8 steps in 2 scenarios" in no_joins
    # the verdict says which steps it is drawn from: those where the optimum is proven
    assert "Drawn from the 8 steps where the optimum is proven." in no_joins
    # a three-way tie at 100%: shown with the rule that broke each one
    assert "**Run `sticky`.**" in no_joins
    assert ("- uniform ties at 100.0%; broken by the older Kafka release that ships it: sticky since 0.11.0, "
            "uniform since 4.0.0") in no_joins
    assert ("- cooperative-sticky ties at 100.0%; broken by mean rebalance rounds: sticky 1, cooperative-sticky 2"
            in no_joins)
    # the ranking figure is a column of the table
    assert "| sticky | 0.11.0+ | 100.0% | 100.0% |" in no_joins
    # joins: uniform split every step; it is never named, and its negative gaps count for nothing
    assert "**Run `range`.**" in joins and "Run `uniform`" not in joins
    assert "**Never under a join**: `uniform` (8 of its steps) split co-partitioned units" in joins
    assert "It is as good as the optimum" in joins and "in 50.0% of its 8 steps" in joins
    assert "| stream-join-sticky | KIP-315 (never merged) | 100.0% | +50.0 points |" in joins
    rows = load_rows(out)
    u = rows[(rows["assignor"] == "uniform") & (rows["param_copartition"] == 1)]
    assert set(u["outcome"]) == {"split"} and u["max_load_gap"].isna().all() and not u["balance_optimal"].any()
    overview = md.split("## Overview")[1].split("##")[0]
    assert "| uniform | 16 | 4 | 0 | 0 | 8 | 50.0% |" in overview  # balanced in 8 of 16 steps, not 16


def test_no_assignor_qualifies_when_the_best_share_is_zero(tmp_path: Path) -> None:
    out = _join_sweep(tmp_path, uniform_good=False)
    build_report(out)
    head = (out / "report" / "summary.md").read_text().split("## Overview")[0]
    no_joins = head.split("### Consumer groups with co-partitioned joins")[0]
    assert "**No assignor on this grid qualifies**" in no_joins and "Run `" not in no_joins
    assert "`kassign assign GROUP.json --assignor optimal`" in no_joins
    assert not list((out / "report").glob("worst-consumer-*.yaml"))


def test_a_streams_sweep_gets_a_verdict(tmp_path: Path) -> None:
    params = {"protocol": "streams", "clients": 3, "steps": 1}
    rows = []
    for step in range(2):
        for name, gap in (("optimal-streams", 0.0), ("high-availability", 0.0), ("sticky-task", 1.0),
                          ("state-store-weighted", 0.0)):
            rows.append(_row("s1", 0, step, name, protocol="streams", params_json=json.dumps(params),
                             copartition_violations=None, max_load_gap=None, sum_sq_gap=None, excess_moves=None,
                             active_balance_gap=gap, total_balance_gap=0.0, restoration_gap=0.0,
                             moved_actives=1, balance_optimal=gap == 0.0))
    out = tmp_path / "streams"
    _write(out, rows)
    build_report(out)
    head = (out / "report" / "summary.md").read_text().split("## Streams summary")[0]
    assert "### Kafka Streams applications: 2 steps in 1 scenario" in head
    assert "**Run `high-availability`.** Leave `task.assignor.class unset` (Kafka 2.6.0 or later" in head
    assert "| state-store-weighted | KIP-262 (rejected) | 100.0% | +0.0 points |" in head


def test_a_streams_tie_goes_to_a_public_setting_before_an_internal_one(tmp_path: Path) -> None:
    """sticky-task is selected with internal.task.assignor.class (not Kafka's public API): on a tie it loses to
    kip924-sticky (task.assignor.class), whatever their releases, and the report says which rule broke it."""
    params = {"protocol": "streams", "clients": 3, "steps": 1}
    rows = []
    for step in range(2):
        for name in ("optimal-streams", "sticky-task", "kip924-sticky"):
            rows.append(_row("s1", 0, step, name, protocol="streams", params_json=json.dumps(params),
                             copartition_violations=None, max_load_gap=None, sum_sq_gap=None, excess_moves=None,
                             active_balance_gap=0.0, total_balance_gap=0.0, restoration_gap=0.0,
                             moved_actives=1, balance_optimal=True))
    out = tmp_path / "streams-tie"
    _write(out, rows)
    build_report(out)
    head = (out / "report" / "summary.md").read_text().split("## Streams summary")[0]
    assert "**Run `kip924-sticky`.** Set `task.assignor.class=" in head
    assert ("- sticky-task ties at 100.0%; broken by a public setting before an internal one (internal.*, not "
            "Kafka's public API): kip924-sticky public (task.assignor.class), sticky-task internal "
            "(internal.task.assignor.class)") in head


@pytest.mark.slow
def test_on_the_demo_grid_the_join_verdict_names_no_assignor_that_splits_units() -> None:
    """The demo grid's join point (examples/sweep-small.yaml), evaluated without Spark: the join verdict
    names an assignor that ships with Kafka and kept every unit together in every step."""
    import pandas as pd
    import yaml

    from spark_runner.sweep.evaluate import evaluate_scenario
    from spark_runner.sweep.grid import read_grid
    from spark_runner.sweep.report.load import _normalize
    from spark_runner.sweep.verdict import verdicts

    repo = Path(__file__).resolve().parents[3]
    grid = read_grid(repo / "examples" / "sweep-small.yaml")
    doc = yaml.safe_load((repo / "examples" / "sweep-small.yaml").read_text())
    rows = []
    for _sid, seed, params in grid.scenarios():
        if params.copartition:
            rows += evaluate_scenario(params, seed, list(grid.evaluated), doc["solver_time_limit"])
    df = _normalize(pd.DataFrame(rows))
    (joins,) = [v for v in verdicts(df) if v.key == "joins"]
    split = df[df["outcome"] == "split"].groupby("assignor").size()
    assert len(split) >= 3  # the sticky family and uniform split units on this grid
    assert joins.winner is not None and joins.winner not in split.index
    assert {n for n, _ in joins.excluded} == {n for n in split.index if n not in ("fair",)}


def test_float_noise_prints_as_zero_and_negative_gaps_are_explained_per_stage() -> None:
    """The report prints 0 for -5.114e-17; a negative sum_sq_gap at a proven optimum is explained as a later
    stage (sum of squares after max load and moves), not as an optimum that is not proven."""
    import pandas as pd

    from spark_runner.sweep.report.format import _fmt
    from spark_runner.sweep.report.render import _negative_gap_notes

    assert (_fmt(-5.114e-17), _fmt(7.105e-15), _fmt(0.25)) == ("0", "0", "0.25")
    df = pd.DataFrame([
        {"scenario_id": "s", "step": 0, "assignor": "optimal", "status": "optimal", "outcome": "valid",
         "max_load_gap": 0.0, "sum_sq_gap": 0.0},
        {"scenario_id": "s", "step": 0, "assignor": "range", "status": "heuristic", "outcome": "valid",
         "max_load_gap": 0.0, "sum_sq_gap": -2.0},
        {"scenario_id": "s", "step": 1, "assignor": "optimal", "status": "feasible", "outcome": "valid",
         "max_load_gap": 0.0, "sum_sq_gap": 0.0},
        {"scenario_id": "s", "step": 1, "assignor": "range", "status": "heuristic", "outcome": "valid",
         "max_load_gap": -1.0, "sum_sq_gap": -3.0}])
    notes = _negative_gap_notes(df)
    assert notes[0].startswith("1 step(s) have a negative max_load_gap: the assignment is more balanced than an "
                               "optimum that is not proven there")
    assert notes[1].startswith("1 step(s) have a negative sum_sq_gap (1 of them at a proven optimum): sum of "
                               "squares is a later stage of the optimum than max load and moves")


def test_gap_means_are_per_weight_kind_in_its_unit_and_drawn_from_proven_steps(tmp_path: Path) -> None:
    """No mean adds loads of different units: each gap table is one weight kind, says its unit and what it is drawn
    from (steps whose optimum is proven); a step against an unproven optimum is counted apart, never averaged."""
    import pandas as pd

    rows = []
    # (weights, range's max_load_gap at the proven steps); an unproven step of each kind whose gap is 1,000
    for kind, gap in (("uniform", 1.0), ("lognormal", 0.25), ("hot", 40.0)):
        for step in range(3):
            sid = f"s-{kind}"
            proven = step < 2
            rows.append(_row(sid, 0, step, OPTIMAL, param_weights=kind, status="optimal" if proven else "feasible",
                             opt_status="optimal" if proven else "feasible"))
            rows.append(_row(sid, 0, step, "range", param_weights=kind, max_load_gap=gap if proven else 1000.0,
                             sum_sq_gap=3 * gap if proven else -7.0000001e-15, balance_optimal=False,
                             opt_status="optimal" if proven else "feasible"))
    out = tmp_path / "sweep"
    _write(out, rows)
    build_report(out)
    md = (out / "report" / "summary.md").read_text()

    def table(title_start: str) -> list[str]:
        section = md.split(f"## {title_start}", 1)[1].split("\n## ", 1)[0]
        return [line for line in section.splitlines() if line.startswith("| range ")]

    busiest = "Busiest member above the optimum's (max_load_gap, "
    # | assignor | proven_steps | mean | p50 | p95 | max | unproven |
    assert table(busiest + "topic-partitions per capacity unit): unweighted") == ["| range | 2 | 1 | 1 | 1 | 1 | 1 |"]
    assert table(busiest + "weight per capacity unit): lognormal") == ["| range | 2 | 0.25 | 0.25 | 0.25 | 0.25 | 1 |"]
    assert table(busiest + "weight per capacity unit): hot partitions") == ["| range | 2 | 40 | 40 | 40 | 40 | 1 |"]
    assert "(sum_sq_gap, (weight per capacity unit)²): lognormal" in md
    assert ("Drawn from the 2 step(s) where the optimum is proven; 1 step(s) measured against an optimum that is "
            "not proven are left out (per assignor in *unproven*).") in md
    assert "1,000" not in md and "e-" not in md and "e+" not in md
    gaps = pd.read_csv(out / "report" / "gaps.csv")
    ml = gaps[gaps["gap"] == "max_load_gap"].set_index("weights")
    assert ml.loc["hot", "mean"] == 40.0 and ml.loc["uniform", "unit"] == "topic-partitions per capacity unit"
    assert set(ml["unproven"]) == {1} and set(ml["proven_steps"]) == {2}
    assert "max_load_gap_mean" not in pd.read_csv(out / "report" / "summary.csv").columns


#: The page width the report must fit without sideways scrolling: a 1280 px window less the body's margins
#: (2em each side) and the answer box's border and padding.
FIT_PX = 1280 - 2 * 32 - 2 * 20
#: A conservative width of one character of the report's fonts (16 px system-ui, 13 px monospace) and a cell's
#: padding and border.
CHAR_PX, CELL_PX = 8.0, 14.0


def min_content_px(table_html: str) -> float:
    """The narrowest a table can be laid out: per column, the longest run of characters that cannot wrap in any
    of its cells (a cell of class ``l`` does not wrap at all; elsewhere lines break at spaces, ``<br>`` and
    ``<wbr>``; a ``td.t`` cell is at least 12em), summed over the columns."""
    import html as html_mod

    widths: dict[int, float] = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table_html, flags=re.S):
        for i, (_tag, attrs, body) in enumerate(re.findall(r"<(td|th)([^>]*)>(.*?)</\1>", row, flags=re.S)):
            text = re.sub(r"<br>|<wbr>", "\n", body)
            text = html_mod.unescape(re.sub(r"<[^>]+>", "", text))
            runs = [text.replace("\n", " ")] if "class=l" in attrs else re.split(r"\s+", text)
            px = max(len(r) for r in runs) * CHAR_PX + CELL_PX
            if "class=t" in attrs:
                px = max(px, 12 * 16 + CELL_PX)
            widths[i] = max(widths.get(i, 0.0), px)
    return sum(widths.values())


def test_every_table_of_the_report_fits_a_1280_px_window(tmp_path: Path) -> None:
    """The verdict table's "how to deploy it" column (a config key=value of 90 characters) and every other column
    fit a 1280 px window: no table needs its sideways scroll there. A model of the browser's narrowest layout, so
    the test runs without a browser; test_the_report_in_a_real_browser checks the same in Chromium."""
    out = _sweep(tmp_path)
    page = build_report(out).read_text()
    css = re.search(r"<style>(.*?)</style>", page, flags=re.S)
    assert css is not None
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", css.group(1)))
    assert "max-width:1200px" in rules["body"]
    assert "nowrap" not in rules.get("td.t", "") and "overflow-wrap:anywhere" in rules["td.t"]
    tables = re.findall(r"<table>.*?</table>", page, flags=re.S)
    assert any("partition.<wbr>assignment.<wbr>strategy=<wbr>" in t for t in tables)  # the setting wraps
    widths = {re.sub(r"<[^>]+>", " ", t)[:60]: min_content_px(t) for t in tables}
    assert all(w <= FIT_PX for w in widths.values()), {k: w for k, w in widths.items() if w > FIT_PX}
