"""``kassign plan`` run as the real console script: exit codes, JSON fields, table, plot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
ORDERS = REPO / "examples" / "plan-orders.json"


def kassign(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "kassign"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "spark_runner"]
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, env=env, timeout=600, cwd=REPO)


@pytest.fixture(scope="module")
def orders_plan() -> dict:
    r = kassign("plan", str(ORDERS), "--capacity", "5000000", "--resilience", "1", "--range", "5:8", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_json_fields(orders_plan):
    doc = orders_plan
    for key in ("min_instances", "lower_bound", "proof", "proof_kind", "rows", "baselines", "upper_bound"):
        assert key in doc
    # 27.069 MB/s over 5 MB/s instances: L1 = 6 and a packing into 6 exists
    assert doc["min_instances"] == 6 and doc["lower_bound"] == 6 and doc["proof_kind"] == "bound"
    assert [r["n"] for r in doc["rows"]] == [5, 6, 7, 8]
    row_keys = {"n", "fits", "max_utilisation", "headroom", "moved_partitions", "moved_state", "kafka_status",
                "kafka_moved_partitions", "kafka_moved_state", "kafka_max_utilisation", "kafka_fits",
                "resilience_k", "resilience_fits", "resilience_moved_partitions", "resilience_moved_state",
                "resilience_worst_lost"}
    for r in doc["rows"]:
        assert row_keys <= set(r)
    rows = {r["n"]: r for r in doc["rows"]}
    assert rows[5]["fits"] is False and rows[5]["moved_partitions"] is None
    assert rows[6]["fits"] is True and rows[6]["max_utilisation"] <= 1.0
    assert rows[6]["resilience_fits"] is False and rows[7]["resilience_fits"] is True
    # the weights are bytes/s (units), not lag: no KEDA row, whose rule counts lag
    assert doc["load_unit"] == "bytes/s" and doc["weights_are_lag"] is False
    assert {b["name"] for b in doc["baselines"]} == {"first-fit-decreasing", "best-fit-decreasing",
                                                      "one-partition-per-consumer"}


def test_keda_only_where_the_weights_are_lag(tmp_path):
    """KEDA's rule reads total lag: shown for lag weights (units records, as capture --weights lag writes),
    never for bytes/s; the text shows human numbers."""
    import json as _json

    doc = _json.loads((REPO / "examples" / "plan-orders.json").read_text())
    names = {}
    for unit in ("records", "bytes/s"):
        doc["units"] = {"weights": unit}
        p = tmp_path / f"{unit.replace('/', '-')}.json"
        p.write_text(_json.dumps(doc))
        r = kassign("plan", str(p), "--capacity", "5000000", "--no-kafka")
        assert r.returncode == 0, r.stderr
        names[unit] = r.stdout
    assert "keda" in names["records"] and "ceil(total lag 27,069,000 / lagThreshold 10)" in names["records"]
    assert "keda" not in names["bytes/s"] and "total load 27.07 MB/s, capacity 5 MB/s per instance" in names["bytes/s"]
    assert "e+" not in names["bytes/s"] + names["records"]


def test_kafka_columns(orders_plan):
    rows = orders_plan["rows"]
    if orders_plan["kafka_assignor"] is None:
        assert all(r["kafka_status"] == "unavailable" for r in rows)
        pytest.skip("cooperative-sticky is not registered: kafka_* columns are 'unavailable'")
    assert all(r["kafka_status"] == "ok" for r in rows)
    for r in rows:
        # the plan never needs more moved state than Kafka's answer when Kafka's answer fits
        if r["fits"] and r["kafka_fits"] and r["kafka_copartition_violations"] == 0:
            assert r["moved_state"] <= r["kafka_moved_state"] + 1e-6


def test_table_and_plot(tmp_path):
    png = tmp_path / "plan.png"
    r = kassign("plan", str(ORDERS), "--capacity", "8000000", "--range", "4:5", "--plot", str(png), "--no-kafka")
    assert r.returncode == 0, r.stderr
    assert "minimum instances: 4" in r.stdout
    assert "plan per instance count" in r.stdout and "rules of thumb" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    "args,code,msg",
    [
        (["--capacity", "0"], 2, "--capacity must be a positive number"),
        (["--capacity", "-5"], 2, "--capacity must be a positive number"),
        (["--capacity", "1000000", "--range", "5:3"], 2, "--range 5:3"),
        (["--capacity", "1000000", "--range", "0:3"], 2, "--range 0:3"),
        (["--capacity", "5000000", "--catch-up-seconds", "0"], 2, "--catch-up-seconds"),
        (["--capacity", "1000000"], 3, "partition payments-0 has load 2.838e+06"),
        (["--capacity", "2000000"], 3, "more than the largest instance can hold"),
    ],
)
def test_bad_input_exit_codes(args, code, msg):
    r = kassign("plan", str(ORDERS), *args, "--no-kafka")
    assert r.returncode == code, (r.returncode, r.stderr)
    assert msg in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_missing_capacity_is_usage_error():
    r = kassign("plan", str(ORDERS))
    assert r.returncode == 2


def test_invalid_instance_exits_65(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "kassign/v1", "topics": {"T": {"partitions": 2, "weights": [1]}},
                               "members": []}))
    r = kassign("plan", str(bad), "--capacity", "10")
    assert r.returncode == 65
    assert "weights" in r.stderr


def test_catch_up_seconds_and_keda(tmp_path):
    lag = tmp_path / "lag.json"
    lag.write_text(json.dumps({"format": "kassign/v1", "topics": {"T": {"partitions": 4,
                                                                       "weights": [6000, 3000, 3000, 0]}},
                               "members": [{"id": "a", "topics": ["T"]}]}))
    r = kassign("plan", str(lag), "--capacity", "100", "--catch-up-seconds", "60", "--lag-threshold", "5000",
                "--json", "--no-kafka")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["total_load"] == 200.0 and doc["min_instances"] == 2
    keda = next(b for b in doc["baselines"] if b["name"] == "keda")
    assert keda["instances"] == 3 and keda["vs_min"] == 1  # ceil(12000 / 5000)


def test_streams_plan_with_standbys(tmp_path):
    f = tmp_path / "streams.json"
    f.write_text(json.dumps({
        "format": "kassign/v1", "protocol": "streams", "name": "s",
        "tasks": [{"id": "0_0"}, {"id": "0_1"}, {"id": "0_2"}, {"id": "0_3"}, {"id": "1_0", "stateful": False}],
        "clients": [{"id": "c1", "process_id": "00000000-0000-0000-0000-000000000001", "capacity": 2,
                     "active": ["0_0", "0_1", "1_0"], "standby": ["0_2"]},
                    {"id": "c2", "process_id": "00000000-0000-0000-0000-000000000002", "capacity": 2,
                     "active": ["0_2", "0_3"], "standby": ["0_0", "0_1"]}],
        "config": {"num_standby_replicas": 1}}))
    r = kassign("plan", str(f), "--capacity", "2", "--standby-load", "0.5", "--resilience", "1", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    # 5 actives + 4 standbys x 0.5 = 7 over clients of 2 x 2 threads: 2 clients hold 8 >= 7.
    assert doc["items"] == 9 and doc["total_load"] == 7.0 and doc["min_instances"] == 2
    rows = {x["n"]: x for x in doc["rows"]}
    # only 0_3 lacks a standby on c1 today: one restoration
    assert rows[2]["moved_partitions"] == 1 and rows[2]["max_utilisation"] == 0.875
    assert rows[2]["resilience_fits"] is False  # one client of 4 threads cannot hold 7
    if doc["kafka_assignor"] is None:
        pytest.skip("high-availability is not registered: kafka_* columns are 'unavailable'")
    assert rows[2]["kafka_status"] == "ok" and rows[2]["kafka_fits"] is not None


def test_rows_never_contradict_themselves():
    # plan-orders at 9 MB/s: n = 3 does not fit, so it cannot survive losing 0 instances either (said 'yes')
    r = kassign("plan", str(ORDERS), "--capacity", "9000000", "--range", "3:5", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    for row in doc["rows"]:
        if row["fits"] is False:
            assert row["resilience_fits"] is False and row["resilience_moved_state"] is None, row["n"]
        if doc["resilience"] == 0 and row["fits"] is not None:
            assert row["resilience_fits"] == row["fits"], row["n"]
        if row["kafka_fits"]:  # Kafka's answer fits: then the optimum fits too
            assert row["fits"] is True, row["n"]
    table = kassign("plan", str(ORDERS), "--capacity", "9000000", "--range", "3:5").stdout
    line3 = next(line for line in table.splitlines() if line.startswith("3 "))
    assert line3.split()[1] == "no" and " yes " not in line3


def test_streams_rows_capacity_and_baselines():
    streams = REPO / "examples" / "streams-app.json"
    r = kassign("plan", str(streams), "--capacity", "10", "--range", "1:3", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = {x["n"]: x for x in doc["rows"]}
    # one client cannot hold a task and its standby: the optimum says no, and Kafka, which drops the
    # standbys, does not fit either (it said 'yes' at 50%)
    assert rows[1]["fits"] is False
    if doc["kafka_assignor"] is not None:
        assert rows[1]["kafka_fits"] is False and rows[1]["kafka_unplaced"] > 0
    for row in rows.values():
        if row["kafka_fits"]:
            assert row["fits"] is True
    # --capacity is per stream thread, and the header says so
    assert doc["capacity_per"] == "stream thread" and doc["instance_capacity"] == [20.0, 20.0]
    text = kassign("plan", str(streams), "--capacity", "10", "--range", "1:3").stdout
    assert "capacity 10 weight per stream thread (today's instances hold 20" in text
    assert "(10 tasks)" in text
    # the rules of thumb count tasks, not standby replicas
    base = {b["name"]: b for b in doc["baselines"]}
    assert doc["partitions"] == 10 and doc["items"] == 16
    assert base["one-partition-per-consumer"]["instances"] == 10
    # a Streams plan's items are task replicas, not lag: KEDA's rule (total lag / lagThreshold) has no input
    assert "keda" not in base


def test_plan_formats_fit_the_width(tmp_path):
    tsv = kassign("plan", str(ORDERS), "--capacity", "9000000", "--range", "3:5", "--format", "tsv", "--no-kafka")
    assert tsv.returncode == 0, tsv.stderr
    lines = tsv.stdout.splitlines()
    assert lines[0].split("\t")[:2] == ["n", "fits"] and [x.split("\t")[0] for x in lines[1:]] == ["3", "4", "5"]
    md = kassign("plan", str(ORDERS), "--capacity", "9000000", "--range", "3:5", "--format", "md", "--no-kafka")
    assert "| n | fits |" in md.stdout and "| baseline |" in md.stdout
    from spark_runner.cli.commands.plan import render

    doc = json.loads(kassign("plan", str(ORDERS), "--capacity", "9000000", "--range", "3:5", "--json").stdout)
    text = render(doc, "table", 80)
    assert all(len(line) <= 80 for line in text.splitlines()), max(text.splitlines(), key=len)
    assert "one-partition-per-consumer" in text and "…" not in text


def test_counts_and_thresholds_have_thousands_separators_and_no_exponent(tmp_path):
    """1,200 partitions: the baselines say 1,200 and +1,199, not 1200 and +1199; a KEDA lagThreshold of
    10,000,000 is not 1e+07."""
    inst = {"format": "kassign/v1", "name": "wide", "units": {"weights": "records"},
            "topics": {"t": {"partitions": 1200, "weights": [1] * 1200}},
            "members": [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}]}
    p = tmp_path / "wide.json"
    p.write_text(json.dumps(inst))
    r = kassign("plan", str(p), "--capacity", "100000", "--lag-threshold", "10000000", "--range", "1:2")
    assert r.returncode == 0, r.stderr
    base = {ln.split()[0]: ln.split() for ln in r.stdout.split("rules of thumb")[1].splitlines()[3:]}
    assert base["one-partition-per-consumer"][1:3] == ["1,200", "+1,199"]
    assert "lagThreshold 10,000,000)" in r.stdout
    assert "e+" not in r.stdout and "None" not in r.stdout


def test_no_resilience_columns_without_resilience():
    """Without --resilience there is no loss to survive: no 'N-0 fits' / 'worst loss' columns of '-'."""
    r = kassign("plan", "examples/captured-orders.json", "--capacity", "150")
    assert r.returncode == 0, r.stderr
    assert "N-0" not in r.stdout and "worst loss" not in r.stdout
    assert "plan per instance count (Kafka = cooperative-sticky)" in r.stdout


FOUR_THREADS = {"format": "kassign/v1", "name": "four-thread", "topics": {"T": 24},
                "members": [{"id": m, "topics": ["T"], "capacity": 4, "owned": {"T": list(range(6 * i, 6 * i + 6))},
                             "generation": 2} for i, m in enumerate("abcd")]}


def test_plan_answers_n_minus_k_in_one_line_with_added_instances_of_todays_size(tmp_path: Path) -> None:
    """`kassign plan four-thread.json --capacity 1 --resilience 2 --range 4:10`: today's instances hold 4, so
    do added ones (said so); 6 are needed and 8 survive losing 2, in one line."""
    f = tmp_path / "four-thread.json"
    f.write_text(json.dumps(FOUR_THREADS))
    r = kassign("plan", str(f), "--capacity", "1", "--resilience", "2", "--range", "4:10")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "added instances: 4 weight each, from today's instances' size (--new-capacity M to change)" in lines
    assert ("N-2: 8 instances survive losing 2 (the fewest of this table whose every loss of 2 still fits)"
            in lines)
    assert any(x.startswith("-: nothing to give: ") for x in lines)
    r = kassign("plan", str(f), "--capacity", "1", "--resilience", "2", "--range", "4:10", "--json")
    doc = json.loads(r.stdout)
    assert doc["survives"] == {"k": 2, "instances": 8, "undecided": []}
    assert (doc["new_capacity"], doc["new_capacity_source"]) == (4.0, "today's instances")
    r = kassign("plan", str(f), "--capacity", "1", "--resilience", "2", "--range", "12:14", "--new-capacity", "1",
                "--no-kafka")
    assert r.returncode == 0, r.stderr
    assert "added instances: 1 weight each, from --new-capacity" in r.stdout
    title = next(x for x in r.stdout.splitlines() if x.startswith("plan per instance count"))
    assert title == "plan per instance count (N-2 resilience; Kafka's assignor not compared)"
    assert "kafka" not in r.stdout.split(title)[1].splitlines()[1]


def test_plan_marks_unproven_moves_and_streams_plans_have_no_keda_line(tmp_path: Path) -> None:
    """A row whose fewest moves are not proven reads `(not proven)` with a legend; a Streams plan (task
    replicas, no lag) gets no KEDA rule of thumb."""
    from spark_runner.cli.commands.plan import render

    f = tmp_path / "four-thread.json"
    f.write_text(json.dumps(FOUR_THREADS))
    doc = json.loads(kassign("plan", str(f), "--capacity", "1", "--range", "6:7", "--json").stdout)
    doc["rows"][0]["moves_status"] = "feasible"
    text = render(doc)
    row = next(x for x in text.splitlines() if x.split()[:2] == ["6", "yes"])
    assert "8 (not proven)" in row
    assert any(x.startswith("(not proven): the fewest moves were not proven within the time limit")
               for x in text.splitlines())
    r = kassign("plan", "examples/streams-app.json", "--capacity", "2", "--range", "4:5", "--json")
    assert r.returncode == 0, r.stderr
    assert "keda" not in [b["name"] for b in json.loads(r.stdout)["baselines"]]
