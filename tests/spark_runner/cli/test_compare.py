"""``kassign compare`` and ``kassign frontier`` through the real console script."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tests.spark_runner.cli.test_cli import kassign

DOC = {"format": "kassign/v1", "name": "cmp", "topics": {"T": 6, "U": 3},
       "members": [{"id": "a", "topics": ["T", "U"], "owned": {"T": [0, 1, 2, 3, 4, 5], "U": [0]}, "generation": 1},
                   {"id": "b", "topics": ["T", "U"], "owned": {"U": [1, 2]}, "generation": 1},
                   {"id": "c", "topics": ["T"]}]}


@pytest.fixture()
def instance_file(tmp_path: Path) -> Path:
    p = tmp_path / "cmp.json"
    p.write_text(json.dumps(DOC))
    return p


def test_compare_json_has_optimum_and_every_heuristic(instance_file: Path) -> None:
    r = kassign("compare", str(instance_file), "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    rows = {row["assignor"]: row for row in doc["rows"]}
    opt = rows["optimal"]
    assert doc["optimal"]["status"] == "optimal" and doc["optimal"]["engine"] == "flow"
    # 9 partitions over 3 members: 3 each; a gives 3 of T to c and one more to b
    assert opt["max_load"] == 3 and opt["moved"] == 4 and opt["valid"]
    assert opt["max_load_gap"] == 0 and opt["sum_sq_gap"] == 0 and opt["excess_moves"] == 0
    assert {"range", "roundrobin", "sticky", "cooperative-sticky"} <= set(rows)
    for name, row in rows.items():
        if "error" in row or not row["valid"]:
            continue
        assert row["max_load_gap"] >= 0 and row["sum_sq_gap"] >= 0 and row["excess_moves"] >= 0, name


def test_compare_table_and_selection(instance_file: Path) -> None:
    r = kassign("compare", str(instance_file), "--assignors", "range")
    assert r.returncode == 0, r.stderr
    assert "optimal" in r.stdout and "range" in r.stdout and "roundrobin" not in r.stdout
    assert r.stdout.splitlines()[1].split() == ["assignor", "outcome", "busiest", "+opt", "moved", "wasted",
                                                "sum_sq", "+opt", "rounds"]
    tsv = kassign("compare", str(instance_file), "--assignors", "range", "--format", "tsv").stdout
    assert tsv.splitlines()[0].split("\t")[:4] == ["assignor", "outcome", "max_load", "max_load_gap"]


def test_weighted_compare_shows_weighted_loads_first_in_the_instances_unit_and_ends_with_the_answer(
        tmp_path: Path) -> None:
    """bytes/s weights: the busiest member in MB/s first, x the optimum, never 'e+' or 'None'; last line:
    the best Kafka assignor, its cost against the optimum, how to run the optimum."""
    r = kassign("compare", "examples/clickstream-group.json", "--assignors", "range,roundrobin,fair")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].split() == ["assignor", "outcome", "busiest", "MB/s", "x", "opt", "+opt", "MB/s", "moved",
                                "wasted", "rounds"]
    rows = {ln.split()[0]: ln.split() for ln in lines[3:7]}
    assert rows["optimal"][:5] == ["optimal", "valid", "9", "1.00x", "0"]
    assert rows["range"][:5] == ["range", "valid", "23.5", "2.61x", "14.5"]
    assert "e+" not in r.stdout and "None" not in r.stdout
    # fair (KIP-49) is better, but no Kafka release ships it: the answer names roundrobin
    assert lines[-1] == ("Best Kafka assignor here: roundrobin (partition.assignment.strategy=org.apache.kafka."
                         "clients.consumer.RoundRobinAssignor, Kafka 0.9.0+): busiest member 16.5 MB/s, 1.83x the "
                         "optimum's 9 MB/s; moves 6 partitions (optimum 3); run the optimum: kassign assign "
                         "examples/clickstream-group.json --assignor optimal -o assignment.json")


def on_terminal(*args: str, columns: int = 80) -> str:
    """What ``kassign ARGS`` prints on a terminal ``columns`` wide (a pseudo-terminal, so it fits the width)."""
    import os
    import pty
    import sys

    exe = Path(sys.executable).parent / "kassign"
    pid, fd = pty.fork()
    if pid == 0:  # the child: kassign on the pty
        os.chdir(Path(__file__).resolve().parents[3])
        os.environ["COLUMNS"] = str(columns)
        os.execv(str(exe), [str(exe), *args])
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.waitpid(pid, 0)
    import re

    # what stays on the screen: a transient progress line (cursor hidden, updated, then erased) leaves nothing
    shown = re.sub(r"\x1b\[\?25l.*?\x1b\[\?25h(\x1b\[1A\x1b\[2K)?", "", b"".join(chunks).decode(), flags=re.S)
    return shown.replace("\r", "")


def test_on_80_columns_the_key_columns_come_first() -> None:
    out = on_terminal("compare", "examples/join-d-leaves.json")
    first_block = out.split("\n\n")[0].splitlines()
    assert max(len(x) for x in out.splitlines()) <= 80
    assert first_block[1].split()[:4] == ["assignor", "outcome", "split", "busiest"]
    assert any(x.split()[:3] == ["sticky", "split", "2"] for x in first_block)
    assert "split: valid partition by partition, but it splits co-partitioned units" in out


def test_on_80_columns_the_closing_line_never_cuts_a_setting() -> None:
    """The setting to deploy is longer than 80 columns: it stays one word (copied from the screen it works)."""
    out = on_terminal("compare", "examples/clickstream-group.json", "--assignors", "roundrobin")
    words = out.split()
    assert "(partition.assignment.strategy=org.apache.kafka.clients.consumer.RoundRobinAssignor," in words
    long_lines = [x for x in out.splitlines() if len(x) > 80]
    assert all(len(x.split()) == 1 for x in long_lines), long_lines  # only a word that cannot fit


def test_the_closing_line_says_what_else_deploying_takes() -> None:
    """uniform runs in the broker: the consumers need group.protocol=consumer (KIP-848) on brokers 4.0+."""
    r = kassign("compare", "examples/uniform-balanced.json", "--assignors", "uniform")
    assert r.stdout.splitlines()[-1].startswith(
        "Best Kafka assignor here: uniform (group.remote.assignor=uniform, Kafka 4.0.0+, with "
        "group.protocol=consumer (KIP-848) on brokers 4.0 or later): ")


def test_streams_compare_prefers_a_public_setting_and_explains_negative_gaps() -> None:
    """KIP-1071 example: kip924-sticky, sticky-task and streams-server-sticky tie; the answer is not the one
    behind an internal setting, and a balance gap below zero (an active on a client that is not caught up) is
    explained, not left as a puzzle beside "proven optimal"."""
    r = kassign("compare", "examples/streams-kip1071.json")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1].startswith("Best Kafka assignor here: kip924-sticky (task.assignor.class=org.apache.kafka."
                                "streams.processor.assignment.assignors.StickyTaskAssignor, Kafka 3.8.0+): ")
    # the internal setting is named only as the caveat, never as what to deploy
    assert "internal.task.assignor.class" not in lines[-1].split(" ranks higher but is an internal setting")[0]
    assert any(x.split()[:4] == ["sticky-task", "valid", "1.5", "-0.5"] for x in lines)
    assert lines[-2].startswith("a negative +opt: more balanced than the optimum, which never puts an active on "
                                "a client that is not caught up")


def test_compare_unknown_assignor_is_a_usage_error(instance_file: Path) -> None:
    r = kassign("compare", str(instance_file), "--assignors", "nope")
    assert r.returncode == 2 and "nope" in r.stderr


def test_frontier_json_and_plot(instance_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "f.json"
    png = tmp_path / "f.png"
    r = kassign("frontier", str(instance_file), "-o", str(out), "--plot", str(png))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    pts = doc["points"]
    assert [p["budget"] for p in pts] == list(range(len(pts)))
    assert doc["optimum_moves"] == pts[-1]["budget"] == 4
    # budget 0: a keeps T and U-0 (7), b keeps U-1, U-2; then every move lowers the max by one
    assert [p["max_load"] for p in pts] == [7.0, 6.0, 5.0, 4.0, 3.0]
    assert [p["sum_sq"] for p in pts] == [53.0, 41.0, 33.0, 29.0, 27.0]
    assert all(a["max_load"] >= b["max_load"] and a["sum_sq"] >= b["sum_sq"] for a, b in itertools.pairwise(pts))
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    for h in doc["heuristics"]:
        if h["valid"]:
            assert h["sum_sq"] >= h["frontier_sum_sq"] - 1e-9, h


def test_infeasible_copartition_exits_3(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"format": "kassign/v1", "topics": {"a": 2, "b": 2}, "copartition": [["a", "b"]],
                             "members": [{"id": "x", "topics": ["a"]}, {"id": "y", "topics": ["b"]}]}))
    r = kassign("assign", str(p), "--assignor", "optimal")
    assert r.returncode == 3 and "no member subscribes to all" in r.stderr


def test_assign_optimal_stats_and_objective_options(instance_file: Path) -> None:
    r = kassign("assign", str(instance_file), "--assignor", "optimal")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)["stats"]
    assert {"status", "objective", "bound", "gap", "seconds", "engine"} <= set(stats)
    assert stats["status"] == "optimal" and stats["objective"] == stats["bound"] and stats["gap"] == 0
    r = kassign("assign", str(instance_file), "--assignor", "optimal", "--objective", "moves,balance")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)["stats"]
    assert stats["stages"] == ["moves", "max_load", "sum_sq"] and stats["objective"][0] == 0
    r = kassign("assign", str(instance_file), "--assignor", "optimal", "--objective", "weighted:balance=1,moves=0.5")
    assert r.returncode == 0 and json.loads(r.stdout)["stats"]["stages"] == ["weighted"]
    r = kassign("assign", str(instance_file), "--assignor", "optimal", "--objective", "speed")
    assert r.returncode == 2 and "bad objective" in r.stderr


# --------------------------------------------------------------------------- issue 13: every assignor, either protocol


def test_compare_settles_cooperative_assignors_and_shows_rounds() -> None:
    r = kassign("compare", "examples/orders-group.json", "--json", "--assignors", "cooperative-sticky")
    assert r.returncode == 0, r.stderr
    coop = {row["assignor"]: row for row in json.loads(r.stdout)["rows"]}["cooperative-sticky"]
    assert (coop["valid"], coop["unassigned"], coop["rounds"]) == (True, 0, 2)
    r = kassign("compare", "examples/orders-group.json", "--json", "--assignors", "cooperative-sticky",
                 "--no-settle")
    first = {row["assignor"]: row for row in json.loads(r.stdout)["rows"]}["cooperative-sticky"]
    assert (first["valid"], first["unassigned"], first["rounds"]) == (False, 6, 1)
    table = kassign("compare", "examples/orders-group.json", "--assignors", "cooperative-sticky").stdout
    assert "rounds" in table


def test_compare_streams_instance_against_optimal_streams() -> None:
    r = kassign("compare", "examples/streams-app.json", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["protocol"] == "streams" and doc["optimal"]["status"] == "optimal"
    names = [row["assignor"] for row in doc["rows"]]
    assert names[0] == "optimal-streams" and {"high-availability", "sticky-task", "state-store-weighted"} <= set(
        names)
    for row in doc["rows"]:
        assert {"max_active_load", "restoration_cost", "active_balance_gap", "restoration_gap", "rounds"} <= set(row)
    table = kassign("compare", "examples/streams-app.json", "--assignors", "high-availability")
    assert table.returncode == 0 and "high-avail" in table.stdout and "optimal-st" in table.stdout
    wrong = kassign("compare", "examples/streams-app.json", "--assignors", "range")
    assert wrong.returncode == 2 and "range" in wrong.stderr


def test_frontier_streams_instance(tmp_path: Path) -> None:
    png = tmp_path / "s.png"
    r = kassign("frontier", "examples/streams-app.json", "--plot", str(png))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["protocol"] == "streams" and doc["points"][-1]["budget"] == doc["optimum_moves"]
    placed = {h["assignor"]: h for h in doc["heuristics"]}
    assert {"high-availability", "sticky-task", "state-store-weighted"} <= set(placed)
    for h in placed.values():
        assert not (h["on_frontier"] and not h["valid"]), h
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_frontier_places_cooperative_sticky_where_it_settles() -> None:
    r = kassign("frontier", "examples/orders-group.json", "--assignors", "cooperative-sticky,sticky")
    assert r.returncode == 0, r.stderr
    placed = {h["assignor"]: h for h in json.loads(r.stdout)["heuristics"]}
    coop, eager = placed["cooperative-sticky"], placed["sticky"]
    assert coop["valid"] and coop["moved"] == eager["moved"] and coop["sum_sq"] == eager["sum_sq"]
    assert coop["sum_sq"] >= coop["frontier_sum_sq"]  # a settled valid assignment is never below the frontier


def test_tsv_has_raw_wasted_moves_and_the_unproven_note_has_units() -> None:
    """TSV printed `None,False` for a split row's wasted moves (the table's (value, proven) pair); the stderr
    note of an unproven weighted optimum printed bytes and (bytes/s)² as bare 9- and 15-digit numbers."""
    tsv = kassign("compare", "examples/join-d-leaves.json", "--format", "tsv", "--assignors", "sticky").stdout
    head, *rows = tsv.splitlines()
    assert "excess_moves" in head.split("\t") and "wasted" not in head.split("\t")
    sticky = dict(zip(head.split("\t"), next(r for r in rows if r.startswith("sticky\t")).split("\t"), strict=True))
    assert sticky["outcome"] == "split" and sticky["excess_moves"] == ""  # a split row has no gaps
    assert "None" not in tsv and "False" not in tsv
    r = kassign("assign", "examples/plan-orders.json", "-a", "optimal", "--time-limit", "0.5")
    note = [x for x in r.stderr.splitlines() if "not proven optimal" in x]
    if note:  # the optimum may be proven within the limit on a fast machine
        assert "max_load " in note[0] and " MB/s" in note[0] and " MB " in note[0], note
        assert "(MB/s)²" in note[0] and ",000,000" not in note[0], note


def test_streams_compare_shows_every_stage_of_the_optimum_in_its_order() -> None:
    """`kassign compare examples/streams-rack-app.json`: a cross-rack column between the balance stages and
    restoration (the optimum's order), and the closing line gives every stage in that order; an assignor
    below the optimum on a later stage is said to get there by doing worse on an earlier one."""
    r = kassign("compare", "examples/streams-rack-app.json", "--time-limit", "2", "--seed", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].split()[:9] == ["assignor", "outcome", "actives", "+opt", "replicas", "+opt", "cross-rack",
                                    "restore", "+opt"]
    rows = {x.split()[0]: x.split() for x in lines[3:] if x.split() and x.split()[1] == "valid"}
    opt_rack = int(rows["optimal-streams"][6].replace(",", ""))
    verdict = lines[-1]
    assert verdict.startswith("Best Kafka assignor here: ")
    assert "cross-rack traffic " in verdict and f"(optimum {opt_rack})" in verdict
    order = [verdict.index(w) for w in ("busiest thread", "replicas per thread", "cross-rack traffic", "restores")]
    assert order == sorted(order)
    best = verdict.split("Best Kafka assignor here: ")[1].split(" ")[0]
    b = rows[best]
    b_rack, b_restore = int(b[6].replace(",", "")), int(b[7].replace(",", ""))
    o_restore = int(rows["optimal-streams"][7].replace(",", ""))
    if b_rack > opt_rack and b_restore < o_restore:
        assert "below the optimum on restoration only by doing worse on cross-rack traffic" in verdict


def test_streams_compare_on_kafka_3_9_recommends_a_public_setting() -> None:
    """`kassign compare examples/streams-app.json --kafka-version 3.9`: sticky-task (internal setting, actives
    on clients not caught up) is not what to deploy; it is named as the caveat, with why."""
    r = kassign("compare", "examples/streams-app.json", "--kafka-version", "3.9", "--time-limit", "2", "--seed", "1")
    assert r.returncode == 0, r.stderr
    verdict = r.stdout.splitlines()[-1]
    deploy = verdict.split("Best Kafka assignor here: ")[1].split(" (")[0]
    assert deploy != "sticky-task"
    assert ("(sticky-task ranks higher but is an internal setting (internal.task.assignor.class, not a public "
            "API, may change without notice) and puts 2 active tasks on clients that are not caught up") in verdict


def test_the_title_says_per_stage_how_sure_the_optimum_is() -> None:
    """A stage left open at the end (racks, movement) does not read as the whole answer's gap: the title
    goes stage by stage, the first stages first."""
    from spark_runner.cli.commands.compare import proof_words

    opt = {"status": "feasible", "stages": ["max_load", "moves", "sum_sq", "racks"],
           "objective": [18_400_070.0, 185e9, 4.1e15, 12], "bound": [18_400_057.12, 185e9, 4.1e15, 0]}
    assert proof_words(opt) == ("feasible, not proven: max_load gap 0.00007%, moves proven, sum_sq proven, "
                                "racks gap 100%")


def test_kafka_class_names_are_assignor_names() -> None:
    """`kassign compare ... --assignors org.apache.kafka.clients.consumer.CooperativeStickyAssignor,RangeAssignor`
    and `kassign assign -a org.apache...RangeAssignor` run the assignors those classes are."""
    r = kassign("compare", "examples/orders-group.json", "--assignors",
                "org.apache.kafka.clients.consumer.CooperativeStickyAssignor,RangeAssignor")
    assert r.returncode == 0, r.stderr
    names = [x.split()[0] for x in r.stdout.splitlines()[3:] if x.strip() and not x.startswith(" ")]
    assert {"cooperative-sticky", "range"} <= set(names)
    r = kassign("assign", "examples/orders-group.json", "-a", "org.apache.kafka.clients.consumer.RangeAssignor")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["assignor"] == "range"


def test_partitions_of_departed_members_are_reported_beside_moved(tmp_path: Path) -> None:
    """Two of four consumers replaced: their 6 partitions have no previous owner, so `moved` is 0 for the
    stickiest answer, and `reassigned_unowned` (table: `from departed`) says the other 6 change host."""
    doc = {"format": "kassign/v1", "name": "replaced", "topics": {"T": 12},
           "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2]}, "generation": 4},
                       {"id": "b", "topics": ["T"], "owned": {"T": [3, 4, 5]}, "generation": 4},
                       {"id": "c", "topics": ["T"]}, {"id": "d", "topics": ["T"]}]}
    f = tmp_path / "replaced.json"
    f.write_text(json.dumps(doc))
    r = kassign("compare", str(f), "--assignors", "sticky")
    assert r.returncode == 0, r.stderr
    import re

    lines = r.stdout.splitlines()
    head = re.split(r"\s{2,}", lines[1].strip())
    assert head[head.index("moved") + 1] == "from departed"
    for name in ("optimal", "sticky"):
        row = re.split(r"\s{2,}", next(x for x in lines if x.startswith(name + " ")).strip())
        assert (row[head.index("moved")], row[head.index("from departed")]) == ("0", "6"), row
    asg = tmp_path / "a.json"
    asg.write_text(kassign("assign", str(f), "-a", "sticky").stdout)
    s = json.loads(kassign("score", str(f), str(asg), "--json", "--no-gaps").stdout)
    assert (s["moved"], s["reassigned_unowned"], s["reassigned_unowned_cost"]) == (0, 6, 6.0)


def test_the_optimums_own_row_never_reads_wasted_at_least_zero() -> None:
    """An unproven optimum's `excess_moves_proven` is false, but it is its own yardstick: `0`, not `>=0`."""
    from solver.io import parse_instance
    from spark_runner.cli.compare_table import columns, table_rows

    inst = parse_instance({"format": "kassign/v1", "topics": {"T": 2}, "members": [{"id": "a", "topics": ["T"]}]})
    doc = {"rows": [{"assignor": "optimal", "excess_moves": 0, "excess_moves_proven": False},
                    {"assignor": "range", "excess_moves": 3, "excess_moves_proven": False}]}
    rows = table_rows(inst, doc)
    _, cell = columns(inst, rows)
    assert [cell("wasted", r["wasted"]) for r in rows] == ["0", ">=3"]


def _ledger(tmp_path: Path) -> Path:
    """A weighted group of 48 partitions on 6 members over 3 racks whose optimum a 0.02 s limit leaves open."""
    import random

    rnd = random.Random(11)
    topics = {t: {"partitions": n, "weights": [round(rnd.lognormvariate(10, 1.0), 2) for _ in range(n)],
                  "racks": [sorted(rnd.sample(["r1", "r2", "r3"], 2)) for _ in range(n)]}
              for t, n in (("ledger", 30), ("alerts", 18))}
    ids = [f"svc-{i}" for i in range(6)]
    owned: dict[str, dict[str, list[int]]] = {m: {} for m in ids}
    for t, spec in topics.items():
        for p in range(int(spec["partitions"])):  # type: ignore[call-overload]
            owned[ids[p % 4]].setdefault(t, []).append(p)
    doc = {"format": "kassign/v1", "name": "ledger", "units": {"weights": "records/s"}, "topics": topics,
           "members": [{"id": m, "topics": list(topics), "owned": owned[m], "generation": 2,
                        "rack": ["r1", "r2", "r3"][i % 3]} for i, m in enumerate(ids)]}
    path = tmp_path / "ledger.json"
    path.write_text(json.dumps(doc))
    return path


#: The table columns of each consumer stage of the optimum (weighted group with racks).
_STAGE_COLUMNS = {"max_load": ("busiest",), "moves": ("moved",), "sum_sq": (), "racks": ("cross-rack",)}


def test_every_figure_of_the_optimum_says_whether_it_is_proven(tmp_path: Path) -> None:
    """`kassign compare ledger.json --time-limit 0.02`: the title names each stage proven or not; in the table
    the optimum's figures of each open stage, and the gaps measured against it on every row, carry `*`, the
    line under the table says `*: not proven` naming the same stages, and --json's not_proven lists the same
    figures; a proven stage's figures carry no mark."""
    path = _ledger(tmp_path)
    args = ("compare", str(path), "--time-limit", "0.02", "--seed", "1", "--assignors", "range,uniform")
    r = kassign(*args)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    title = lines[0]
    open_stages = [st for st in _STAGE_COLUMNS if f"{st} gap " in title]
    proven = [st for st in _STAGE_COLUMNS if f"{st} proven" in title or "(proven optimal" in title]
    assert sorted(open_stages + proven) == sorted(_STAGE_COLUMNS), title
    head = lines[1].split()
    # "busiest records/s" and "+opt records/s" are two words each in the header
    names = ["assignor", "outcome", "busiest", "x opt", "+opt", "moved", "wasted", "cross-rack", "rounds"]
    assert " ".join(head) == "assignor outcome busiest records/s x opt +opt records/s moved wasted cross-rack rounds"
    rows = {x.split()[0]: dict(zip(names, x.split(), strict=True)) for x in lines[3:7]}
    opt = rows["optimal"]
    for st in _STAGE_COLUMNS:
        for col in _STAGE_COLUMNS[st]:
            assert opt[col].endswith("*") == (st in open_stages), (st, col, opt)
    for name in ("range", "uniform"):  # gaps against the optimum's max load: marked when it is open
        assert rows[name]["+opt"].endswith("*") == ("max_load" in open_stages) == rows[name]["x opt"].endswith("*")
        assert not rows[name]["moved"].endswith("*") and not rows[name]["busiest"].endswith("*")  # measured
    legend = [x for x in lines if x.startswith("*: not proven -- ")]
    if open_stages:
        assert len(legend) == 1 and all(st in legend[0] for st in open_stages)
        assert not any(st in legend[0].split("(stderr")[0] for st in proven)
    else:
        assert not legend and "*" not in "".join(lines[3:7])
    doc = json.loads(kassign(*args, "--json").stdout)
    o = doc["optimal"]
    assert len(o["stage_proven"]) == len(o["stages"])
    row = doc["rows"][0]
    want = [k for st, ok in zip(o["stages"], o["stage_proven"], strict=True) if not ok
            for k in {"max_load": ("weighted_max_load", "max_load_gap"), "moves": ("moved", "moved_cost"),
                      "sum_sq": ("sum_sq_gap",), "racks": ("cross_rack",)}[st]]
    assert sorted(row["not_proven"]) == sorted(want)


def test_marks_and_legend_follow_the_open_stages_of_a_streams_optimum() -> None:
    """Streams: an open cross-rack stage marks the optimum's cross-rack figure only; an open restoration stage
    its restore figure and every row's restoration gap; the legend names both stages."""
    from spark_runner.cli.compare_table import NotProven, marked_rows, proof_legend
    from spark_runner.comparison import mark_not_proven

    stages = ["active_balance", "total_balance", "cross_rack_traffic", "restoration", "movement"]
    rows = [{"assignor": "optimal-streams", "stages": stages, "stage_proven": [True, True, False, False, True],
             "max_active_load": 2, "active_balance_gap": 0, "cross_rack_traffic": 200, "restoration_cost": 26141,
             "restoration_gap": 0, "moved_actives": 2},
            {"assignor": "high-availability", "max_active_load": 2, "active_balance_gap": 0,
             "cross_rack_traffic": 130, "restoration_cost": 46143, "restoration_gap": 20002, "moved_actives": 5},
            {"assignor": "kip924-sticky", "error": "UnsupportedInstanceError: ..."}]
    mark_not_proven(rows, "optimal-streams")
    assert rows[0]["not_proven"] == ["cross_rack_traffic", "restoration_cost", "restoration_gap"]
    assert rows[1]["not_proven"] == ["restoration_gap"]
    shown = marked_rows(rows)
    assert shown[0]["cross_rack_traffic"] == NotProven(200) and shown[1]["restoration_gap"] == NotProven(20002)
    assert shown[1]["cross_rack_traffic"] == 130 and shown[0]["max_active_load"] == 2
    legend = proof_legend({"stages": stages, "stage_proven": [True, True, False, False, True]}, rows)
    assert legend is not None and legend.startswith(
        "*: not proven -- the optimum's cross_rack_traffic and restoration stages are not proven")
    assert proof_legend({"stages": stages, "stage_proven": [True] * 5}, [{"assignor": "x", "not_proven": []}]) is None


def test_score_marks_the_gaps_that_are_not_proven(tmp_path: Path) -> None:
    """`kassign score ledger.json uniform.json --time-limit 0.02`: --json's not_proven names the gaps measured
    against an open stage of the optimum (or lower estimates), and the table marks exactly those with `*` and
    says what the mark means under it, in compare's words."""
    path = _ledger(tmp_path)
    asg = tmp_path / "uniform.json"
    assert kassign("assign", str(path), "-a", "uniform", "-o", str(asg)).returncode == 0
    args = ("score", str(path), str(asg), "--time-limit", "0.02", "--no-cache")
    doc = json.loads(kassign(*args, "--json").stdout)
    assert isinstance(doc["not_proven"], list)
    if doc["optimal_status"] == "optimal":
        assert doc["not_proven"] == [] or doc["not_proven"] == ["excess_moves"]
    lines = kassign(*args).stdout.splitlines()
    table = {x.split()[0]: x.split()[1] for x in lines[3:] if len(x.split()) >= 2 and not x.startswith("*")}
    marked = sorted(k for k, v in table.items() if v.endswith("*"))
    legend = [x for x in lines if x.startswith("*: not proven -- ")]
    # both runs solve the optimum again (--no-cache); a 0.02 s limit leaves the same stages open on one machine,
    # but the table's marks must match its own legend whatever they are
    if marked:
        assert len(legend) == 1
        assert sorted(legend[0].split("not_proven: ")[1].rstrip(").").split(", ")) == marked
    else:
        assert not legend
