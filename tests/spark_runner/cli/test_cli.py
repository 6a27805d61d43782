"""The real console script, run as a subprocess: output streams and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import shared_path

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"


def kassign(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    # The console script installed beside the running interpreter (the venv's), not another one on PATH.
    exe = Path(sys.executable).parent / "kassign"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "spark_runner"]
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([*cmd, *args], capture_output=True, text=True, input=stdin, env=env, timeout=300,
                          cwd=REPO)


def test_version():
    r = kassign("--version")
    assert r.returncode == 0 and r.stdout.startswith("kassign ")


def test_validate_accepts_every_seed_instance():
    seeds = sorted(str(p) for p in shared_path("scenarios", "seeds").glob("*.json"))
    r = kassign("validate", *seeds)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(": valid (") == len(seeds) == 4


def test_validate_rejects_bad_instance_with_65_and_json_path():
    r = kassign("validate", str(EXAMPLES / "bad-instance.json"))
    assert r.returncode == 65
    assert "examples/bad-instance.json: members[0].owned.T9: topic not in topics" in r.stderr
    assert "Traceback" not in r.stderr
    assert r.stdout == ""


def test_validate_malformed_json(tmp_path: Path):
    f = tmp_path / "x.json"
    f.write_text('{"format": "kassign/v1",\n "topics": }')
    r = kassign("validate", str(f))
    assert r.returncode == 65
    assert f"{f}: malformed JSON at line 2, column 12" in r.stderr


def test_a_missing_file_is_exit_66_naming_the_file(tmp_path: Path):
    r = kassign("validate", "no-such-file.json")
    assert r.returncode == 66 and r.stderr.strip() == "no-such-file.json: no such file"  # not "1 invalid instance(s)"
    r = kassign("validate", "no-such-file.jsonl", str(EXAMPLES / "orders-group.json"))
    assert r.returncode == 66 and "no-such-file.jsonl: no such file" in r.stderr and ": valid (" in r.stdout
    for args in (("assign", "gone.json", "-a", "range"), ("score", str(EXAMPLES / "orders-group.json"), "gone.json"),
                 ("compare", "gone.json"), ("plan", "gone.json", "--capacity", "1"),
                 ("decode-subscription", "gone.b64")):
        r = kassign(*args)
        assert r.returncode == 66 and "gone." in r.stderr and "no such file" in r.stderr, (args, r.stderr)


def test_usage_error_exit_2():
    assert kassign("assign").returncode == 2
    r = kassign("assign", str(EXAMPLES / "orders-group.json"), "--assignor", "no-such-assignor")
    assert r.returncode == 2 and "unknown assignor 'no-such-assignor'" in r.stderr


def test_score_json_reproduces_seed_facts(tmp_path: Path):
    seed = shared_path("scenarios", "seeds", "kip315-join-member-leaves.json")
    doc = json.loads(seed.read_text())
    a = tmp_path / "range.json"
    a.write_text(json.dumps({"assignment": doc["expected"]["range"]}))
    r = kassign("score", str(seed), str(a), "--json")
    assert r.returncode == 0, r.stderr
    metrics = json.loads(r.stdout)
    assert metrics["valid"] is True and metrics["moved"] == 4 == doc["facts"]["range_moved_partitions"]


def test_score_table(tmp_path: Path):
    a = tmp_path / "a.json"
    a.write_text(json.dumps({"assignment": {"C1": {"orders": [0, 1, 2, 3, 4, 5]}}}))
    r = kassign("score", str(EXAMPLES / "orders-group.json"), str(a))
    assert r.returncode == 0
    rows = {ln.split()[0]: ln.split()[1:] for ln in r.stdout.splitlines()[3:] if ln.strip()}
    assert rows["valid"] == ["no"] and rows["outcome"] == ["invalid"] and rows["unassigned"][1] == "topic-partitions"
    assert rows["max_load_gap"] == ["-"]  # no gap for an invalid assignment


def test_list_shows_registered_assignors():
    r = kassign("list", "--json")
    assert r.returncode == 0
    names = {row["name"] for row in json.loads(r.stdout)}
    assert "range" in names


def test_assign_single_and_batch_in_input_order(tmp_path: Path):
    r = kassign("assign", str(EXAMPLES / "join-d-leaves.json"), "--assignor", "range")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["assignment"] == {
        "A": {"clicks": [0, 1, 2, 3], "impressions": [0, 1, 2, 3]},
        "B": {"clicks": [4, 5, 6], "impressions": [4, 5, 6]},
        "C": {"clicks": [7, 8, 9], "impressions": [7, 8, 9]},
    }
    assert doc["assignor"] == "range" and doc["stats"]["status"] == "heuristic"
    batch = tmp_path / "b.jsonl"
    lines = [json.loads((EXAMPLES / n).read_text()) for n in ("orders-group.json", "join-d-leaves.json")]
    batch.write_text("".join(json.dumps({"id": f"r{i}", "instance": d}) + "\n" for i, d in enumerate(lines)))
    out = tmp_path / "out.jsonl"
    r = kassign("assign", str(batch), "--assignor", "range", "-o", str(out))
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(g["id"], g["name"]) for g in got] == [("r0", "orders-group"), ("r1", "join-d-leaves")]
    assert list(got[0]["assignment"]) == ["C1", "C2", "C3", "C4"]


def test_assign_bad_batch_writes_nothing(tmp_path: Path):
    batch = tmp_path / "b.jsonl"
    good = json.loads((EXAMPLES / "orders-group.json").read_text())
    bad = json.loads((EXAMPLES / "bad-instance.json").read_text())
    batch.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    out = tmp_path / "out.jsonl"
    r = kassign("assign", str(batch), "--assignor", "range", "-o", str(out))
    assert r.returncode == 65
    assert f"{batch}: line 2: members[1].id: duplicate member id 'C1' (also members[0])" in r.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [batch]


@pytest.mark.parametrize("flag", ["--time-limit=0", "--option=novalue"])
def test_bad_flags_are_usage_errors(flag: str):
    r = kassign("assign", str(EXAMPLES / "orders-group.json"), "--assignor", "range", flag)
    assert r.returncode == 2


_P = "00000000-0000-0000-0000-00000000000{}".format


@pytest.mark.parametrize("doc", [
    {"tasks": [], "clients": [{"id": "a", "process_id": _P(1)}]},
    {"subtopologies": [{"id": 0, "source_topics": {"A": 0}}], "clients": [{"id": "a", "process_id": _P(1)}]},
    {"tasks": [{"id": "0_0"}, {"id": "0_1"}],
     "clients": [{"id": "a", "process_id": _P(1), "active": ["0_0"], "lags": {"0_1": 2**63 - 1}},
                 {"id": "b", "process_id": _P(2), "lags": {"0_0": 2**63 - 1}}],
     "config": {"num_standby_replicas": 1}},
    {"tasks": [{"id": "0_0"}, {"id": "0_1"}],
     "clients": [{"id": "a", "process_id": _P(1), "active": ["0_0"]}, {"id": "b", "process_id": _P(2)}],
     "config": {"num_standby_replicas": 1, "acceptable_recovery_lag": 2**63 - 1}},
], ids=["no-tasks", "zero-partitions", "lags-2^63-1", "recovery-lag-2^63-1"])
def test_optimal_streams_answers_degenerate_and_huge_values(tmp_path: Path, doc):
    f = tmp_path / "streams.json"
    f.write_text(json.dumps({"format": "kassign/v1", "protocol": "streams", **doc}))
    r = kassign("assign", str(f), "-a", "optimal-streams", "--time-limit", "5")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["stats"]["status"] in ("optimal", "feasible")
    a = tmp_path / "assignment.json"
    a.write_text(r.stdout)
    s = kassign("score", str(f), str(a), "--json")
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout)["valid"] is True


@pytest.mark.parametrize("opt", ["workers=abc", "workers=0", "engine=gurobi", "flows=maybe", "no_such_key=1"])
def test_optimal_streams_bad_options_are_usage_errors(opt: str):
    r = kassign("assign", str(EXAMPLES / "streams-app.json"), "-a", "optimal-streams", "-O", opt)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and r.stdout == ""


def test_unproven_optimum_prints_its_gaps_on_stderr():
    # CP-SAT alone cannot close the movement stage of this instance in 1 s; the MIP (default) proves it
    hard = str(REPO / "tests" / "solver" / "streams" / "data" / "streams-movement-hard.json")
    r = kassign("assign", hard, "-a", "optimal-streams", "-O", "engine=cp-sat", "--time-limit", "1")
    assert r.returncode == 0
    status = json.loads(r.stdout)["stats"]["status"]
    lines = [ln for ln in r.stderr.splitlines() if "not proven optimal" in ln]
    assert len(lines) == (status == "feasible")
    if lines:
        assert lines[0].startswith("optimal-streams: not proven optimal: active_balance 1 (proven)")
        assert "movement" in lines[0] and "gap" in lines[0]
    r = kassign("assign", hard, "-a", "optimal-streams", "--time-limit", "10")
    assert r.returncode == 0 and json.loads(r.stdout)["stats"]["status"] == "optimal"
    assert "not proven" not in r.stderr


def test_score_reports_the_gaps_to_the_optimum_by_default(tmp_path: Path):
    inst = EXAMPLES / "orders-group.json"
    a = tmp_path / "range.json"
    assert kassign("assign", str(inst), "-a", "range", "-o", str(a)).returncode == 0
    r = kassign("score", str(inst), str(a), "--json")
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout)
    from solver.consumer.gaps import gap_metrics
    from solver.consumer.optimal import solve
    from solver.io import read_assignment, read_instance
    from solver.result import Params

    i = read_instance(inst)
    want = gap_metrics(i, read_assignment(a), solve(i, Params()))
    assert {k: m[k] for k in want} == want and m["optimal_status"] == "optimal"
    assert m["max_load_gap"] == 3.0 and m["excess_moves"] == 62  # range moves dear partitions
    table = kassign("score", str(inst), str(a)).stdout
    assert "excess_moves" in table and "max_load_gap" in table
    quick = json.loads(kassign("score", str(inst), str(a), "--json", "--no-gaps").stdout)
    assert "max_load_gap" not in quick and quick["moved"] == m["moved"]


def test_score_gaps_of_a_streams_assignment(tmp_path: Path):
    inst = EXAMPLES / "streams-app.json"
    a = tmp_path / "ha.json"
    assert kassign("assign", str(inst), "-a", "high-availability", "-o", str(a)).returncode == 0
    m = json.loads(kassign("score", str(inst), str(a), "--json").stdout)
    assert m["active_balance_gap"] >= 0 and {"total_balance_gap", "restoration_gap"} <= set(m)
    opt = tmp_path / "opt.json"
    assert kassign("assign", str(inst), "-a", "optimal-streams", "-o", str(opt)).returncode == 0
    o = json.loads(kassign("score", str(inst), str(opt), "--json").stdout)
    assert (o["active_balance_gap"], o["total_balance_gap"], o["restoration_gap"]) == (0, 0, 0)


def test_output_files_follow_the_umask(tmp_path: Path):
    out = tmp_path / "a.json"
    exe = Path(sys.executable).parent / "kassign"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "spark_runner"]
    for mask, mode in ((0o022, 0o644), (0o002, 0o664), (0o077, 0o600)):
        r = subprocess.run(["sh", "-c", f"umask {mask:03o} && exec \"$@\"", "sh", *cmd, "assign",
                            str(EXAMPLES / "orders-group.json"), "-a", "range", "-o", str(out)],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert out.stat().st_mode & 0o777 == mode, oct(out.stat().st_mode)
        out.unlink()


def test_a_mistyped_assignor_gets_did_you_mean():
    r = kassign("assign", str(EXAMPLES / "orders-group.json"), "-a", "coperative-sticky")
    assert r.returncode == 2 and "did you mean 'cooperative-sticky'?" in r.stderr
    r = kassign("compare", str(EXAMPLES / "orders-group.json"), "--assignors", "stiky")
    assert r.returncode == 2 and "did you mean 'sticky'?" in r.stderr


def test_a_json_error_in_a_jsonl_line_has_its_column(tmp_path: Path):
    f = tmp_path / "t.jsonl"
    good = json.dumps(json.loads((EXAMPLES / "orders-group.json").read_text()))
    f.write_text(good + "\n" + '{"format": "kassign/v1", "topics":' + "\n")  # line 2 truncated after 34 chars
    r = kassign("validate", str(f))
    assert r.returncode == 65
    assert f"{f}:line 2: malformed JSON at column 35: Expecting value" in r.stderr  # was "column 1"


def test_a_mixed_protocol_batch_names_the_line(tmp_path: Path):
    f = tmp_path / "mixed.jsonl"
    docs = [json.loads((EXAMPLES / n).read_text()) for n in ("orders-group.json", "streams-app.json")]
    f.write_text("".join(json.dumps(d) + "\n" for d in docs))
    r = kassign("assign", str(f), "-a", "range")
    assert r.returncode == 3
    assert f"{f}:line 2: assignor 'range' is for the consumer protocol, the instance uses 'streams'" in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("name,assignor", [("orders-group.json", "range"), ("orders-group.yaml", "sticky"),
                                           ("streams-app.json", "high-availability")])
def test_assign_output_ends_with_one_newline(name: str, assignor: str, tmp_path: Path):
    r = kassign("assign", str(EXAMPLES / name), "-a", assignor)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith("}\n") and not r.stdout.endswith("\n\n")
    out = tmp_path / "o.json"
    assert kassign("assign", str(EXAMPLES / name), "-a", assignor, "-o", str(out)).returncode == 0
    text = out.read_text()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert json.loads(text)["assignment"] == json.loads(r.stdout)["assignment"]


def test_help_summaries_are_whole_on_80_columns() -> None:
    """``kassign --help`` lists every command with its whole summary (Click cuts a long one with '...')."""
    env = {**os.environ, "COLUMNS": "80"}
    r = subprocess.run([str(Path(sys.executable).parent / "kassign"), "--help"], capture_output=True, text=True,
                       env=env, timeout=60)
    commands = r.stdout.split("Commands:")[1].strip().splitlines()
    assert len(commands) >= 10
    assert not [c for c in commands if c.rstrip().endswith("...")], commands


def test_time_limit_shows_its_default_and_the_docs_agree() -> None:
    from solver.consumer.optimal import DEFAULT_TIME_LIMIT
    from solver.streams.optimal import DEFAULT_TIME_LIMIT as STREAMS_LIMIT
    from spark_runner.cli.common import OPTIMAL_SECONDS

    assert OPTIMAL_SECONDS == {"optimal": DEFAULT_TIME_LIMIT, "optimal-streams": STREAMS_LIMIT}
    for cmd in ("assign", "compare", "score"):
        text = " ".join(kassign(cmd, "--help").stdout.split())
        assert f"default: {DEFAULT_TIME_LIMIT:g} for the consumer optimum, {STREAMS_LIMIT:g} for optimal-streams" \
            in text, cmd
    row = next(line for line in (REPO / "docs" / "cli.md").read_text().splitlines()
               if line.startswith("| `--time-limit S` |"))
    assert f"| {DEFAULT_TIME_LIMIT:g} (`optimal`), {STREAMS_LIMIT:g} (`optimal-streams`) |" in row


def test_score_caches_the_optimum_and_the_gaps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second `score` of the same files solves nothing; --no-cache solves again; another assignment of the same
    instance reuses the cached optimum; --optimum FILE measures against a given optimum."""
    from typer.testing import CliRunner

    from spark_runner.cli import app as cli
    from spark_runner.cli import cache as gap_cache  # where score solves the optimum it caches

    monkeypatch.setenv("KASSIGN_CACHE_DIR", str(tmp_path / "cache"))
    a = tmp_path / "range.json"
    b = tmp_path / "sticky.json"
    inst = str(EXAMPLES / "clickstream-group.json")
    assert kassign("assign", inst, "-a", "range", "-o", str(a)).returncode == 0
    assert kassign("assign", inst, "-a", "sticky", "-o", str(b)).returncode == 0
    solves: list[str] = []
    real = gap_cache.get_assignor

    def counting(name: str):  # type: ignore[no-untyped-def]
        spec = real(name)
        solves.append(name)
        return spec

    monkeypatch.setattr(gap_cache, "get_assignor", counting)
    runner = CliRunner()

    def score(*args: str) -> dict:  # type: ignore[type-arg]
        r = runner.invoke(cli.app, ["score", inst, *args, "--json"])
        assert r.exit_code == 0, r.output
        return json.loads(r.stdout)

    first = score(str(a))
    assert solves == ["optimal"] and first["max_load_gap"] == 14_500_000
    assert score(str(a)) == first and solves == ["optimal"]  # gaps from the cache
    assert score(str(b))["max_load_gap"] == 14_500_000 and solves == ["optimal"]  # the optimum from the cache
    assert score(str(a), "--no-cache") == first and solves == ["optimal", "optimal"]
    opt = tmp_path / "opt.json"
    assert kassign("assign", inst, "-a", "optimal", "-o", str(opt)).returncode == 0
    assert score(str(a), "--optimum", str(opt), "--no-cache") == first and len(solves) == 2
    bad = runner.invoke(cli.app, ["score", inst, str(a), "--optimum", str(EXAMPLES / "orders-group.json")])
    assert bad.exit_code != 0


def _score_table(example: str, assignor: str, *score_args: str) -> tuple[str, dict[str, list[str]]]:
    """``kassign score``'s table of ``assignor``'s answer on ``example``: its text, and each row's fields by name
    (in the table's order)."""
    a = REPO / f"tmp-score-{assignor}.json"
    try:
        assert kassign("assign", example, "-a", assignor, "-o", str(a)).returncode == 0
        out = kassign("score", example, str(a), *score_args).stdout
    finally:
        a.unlink(missing_ok=True)
    return out, {ln.split()[0]: ln.split()[1:] for ln in out.splitlines()[3:]}


def test_score_table_is_in_the_instances_units_and_never_says_none() -> None:
    out, rows = _score_table("examples/clickstream-group.json", "range", "--no-gaps")
    assert rows["weighted_max_load"] == ["23.5", "MB/s"]
    assert "None" not in out and "e+" not in out


def test_score_table_shows_weighted_loads_first_and_squared_loads_in_the_same_unit() -> None:
    """A weighted group's score reads its weighted loads first, before the partition counts, and the squared
    gap in (MB/s)², not 316,500,000,000,000 (bytes/s)²."""
    out, rows = _score_table("examples/clickstream-group.json", "sticky", "--no-cache")
    names = list(rows)
    assert names.index("weighted_max_load") < names.index("max_load_gap") < names.index("sum_sq_gap") \
        < names.index("max_load") < names.index("sum_sq_load")
    assert rows["max_load_gap"] == ["14.5", "MB/s"]
    assert rows["sum_sq_gap"] == ["316.5", "(MB/s)²"]
    assert "bytes/s" not in out and "None" not in out and "e+" not in out


def test_streams_score_labels_every_number_with_its_unit() -> None:
    """Every number of a Streams score has its unit (tasks, standbys, active tasks per thread, ...): only
    yes/no, names and '-' stand alone."""
    out, rows = _score_table("examples/streams-app.json", "sticky-task", "--no-cache")
    unlabeled = [k for k, v in rows.items() if len(v) == 1 and v[0].replace(",", "").replace(".", "").isdigit()
                 and k != "kafka_version"]
    assert unlabeled == [], unlabeled
    assert rows["not_caught_up_actives"] == ["2", "tasks"] and rows["min_active_load"] == ["1.5", "active", "tasks",
                                                                                         "per", "thread"]
    assert "None" not in out and "e+" not in out
