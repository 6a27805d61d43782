"""The Streams optimum: lexicographic optimality against brute force for every engine and stage order,
certificates on the sweep's Streams scenarios, determinism, hostile values."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.io import parse_instance, read_instance, read_instances
from solver.result import Params, Status
from solver.streams.optimal import STAGES, StreamsProblem, evaluate, solve_streams
from solver.streams.scoring import score_streams

DATA = Path(__file__).parent / "data"


def brute_force(p: StreamsProblem, stages: tuple[str, ...] = STAGES) -> tuple[int, ...]:
    """Lexicographic minimum of the stage values (in ``stages`` order) over every feasible assignment."""
    best = None
    per_task = []
    for t in range(p.n_tasks):
        opts = []
        for a in p.allowed_active[t]:
            others = [c for c in range(p.n_clients) if c != a]
            k = p.standbys if p.stateful[t] else 0
            opts.extend((a, list(sb)) for sb in itertools.combinations(others, k))
        per_task.append(opts)
    for combo in itertools.product(*per_task):
        vals = evaluate(p, [c[0] for c in combo], [c[1] for c in combo])
        key = tuple(vals[s] for s in stages)
        if best is None or key < best:
            best = key
    assert best is not None
    return best


@st.composite
def small(draw):
    n_tasks = draw(st.integers(1, 4))
    tasks = [{"id": f"0_{p}", "stateful": draw(st.booleans())} for p in range(n_tasks)]
    n_clients = draw(st.integers(1, 3))
    clients = []
    for c in range(n_clients):
        clients.append({"id": f"c{c}", "process_id": f"00000000-0000-0000-0000-00000000000{c + 1}",
                        "capacity": draw(st.integers(1, 3)), "active": [], "lags": {}})
    for t in tasks:
        owner = draw(st.integers(-1, n_clients - 1))
        if owner >= 0:
            clients[owner]["active"].append(t["id"])
        if t["stateful"]:
            for c in range(n_clients):
                if c != owner and draw(st.booleans()):
                    clients[c]["lags"][t["id"]] = draw(st.sampled_from([0, 5, 50, 500]))
    cfg = {"num_standby_replicas": draw(st.integers(0, 2)), "acceptable_recovery_lag": 10,
           "active_on_caught_up": draw(st.booleans())}
    return parse_instance({"format": "kassign/v1", "protocol": "streams", "tasks": tasks, "clients": clients,
                           "config": cfg})


def _natural_to_int(p: StreamsProblem, stages: tuple[str, ...], values: tuple[float, ...]) -> tuple[int, ...]:
    return tuple(round(v * p.scale) if s in ("active_balance", "total_balance") else int(v)
                 for s, v in zip(stages, values, strict=True))


@settings(max_examples=60, deadline=None)
@given(small(), st.sampled_from([{}, {"engine": "scip"}, {"engine": "cp-sat"}, {"flows": "0"},
                                 {"flows": "0", "engine": "scip"}, {"flows": "0", "engine": "cp-sat"}]))
def test_optimum_equals_brute_force(inst, options):
    res = solve_streams(inst, Params(time_limit=20, options=options))
    p = StreamsProblem.of(inst)
    best = brute_force(p)
    assert res.status is Status.OPTIMAL
    assert res.extra["gap"] == 0 and all(res.extra["proven"])
    assert _natural_to_int(p, STAGES, res.objective) == best
    assert res.bound == res.objective
    m = score_streams(inst, res.assignment)
    assert m["valid"], m["violations"]
    assert m["warmups"] == 0 and not m["probing_rebalance"]


@settings(max_examples=40, deadline=None)
@given(small(), st.permutations(STAGES), st.sampled_from(["highs", "scip", "cp-sat"]))
def test_every_stage_order_equals_brute_force(inst, order, engine):
    stages = tuple(order)
    res = solve_streams(inst, Params(time_limit=20, objective=stages, options={"engine": engine}))
    p = StreamsProblem.of(inst)
    assert res.status is Status.OPTIMAL and res.extra["stages"] == list(stages)
    assert _natural_to_int(p, stages, res.objective) == brute_force(p, stages)
    assert score_streams(inst, res.assignment)["valid"]


def test_balance_per_thread_and_caught_up_rule():
    inst = parse_instance({
        "format": "kassign/v1", "protocol": "streams",
        "tasks": [{"id": f"0_{p}"} for p in range(6)] + [{"id": "1_0", "stateful": False}],
        "clients": [
            {"id": "big", "process_id": "00000000-0000-0000-0000-000000000001", "capacity": 2,
             "active": ["0_0", "0_1", "0_2"]},
            {"id": "small", "process_id": "00000000-0000-0000-0000-000000000002", "capacity": 1,
             "active": ["0_3", "0_4", "0_5"]},
        ],
        "config": {"num_standby_replicas": 0}})
    res = solve_streams(inst, Params())
    a = res.assignment
    # every stateful task has exactly one caught-up client (its owner): no choice; the stateless
    # task goes where it loads a thread least
    assert a.get("big").active == ("0_0", "0_1", "0_2", "1_0")
    assert a.get("small").active == ("0_3", "0_4", "0_5")
    assert res.objective[:2] == (3.0, 3.0)
    assert res.status is Status.OPTIMAL and res.extra["engine"] == "flow"


def test_without_the_caught_up_rule_balance_comes_first_and_restoration_counts():
    """``config.active_on_caught_up: false`` (a KIP-1071 target): a joining client without state gets its share."""
    doc = {"format": "kassign/v1", "protocol": "streams", "tasks": [{"id": f"0_{p}"} for p in range(6)],
           "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001",
                        "active": ["0_0", "0_1", "0_2"]},
                       {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002",
                        "active": ["0_3", "0_4", "0_5"]},
                       {"id": "new", "process_id": "00000000-0000-0000-0000-000000000003"}],
           "config": {"num_standby_replicas": 0}}
    kept = solve_streams(parse_instance(doc), Params())
    assert kept.objective == (3.0, 3.0, 0, 0) and kept.assignment.get("new").active == ()
    doc["config"]["active_on_caught_up"] = False
    inst = parse_instance(doc)
    res = solve_streams(inst, Params())
    # 2 actives each; the two that move restore in full (acceptable_recovery_lag + 1 each), one from each client
    assert res.objective == (2.0, 2.0, 20002, 2) and res.status is Status.OPTIMAL
    assert len(res.assignment.get("new").active) == 2
    assert {len(set(res.assignment.get(c).active) & set(doc["clients"][i]["active"]))
            for i, c in enumerate("ab")} == {2}
    assert score_streams(inst, res.assignment)["not_caught_up_actives"] == 2  # the scorer still says so


def test_full_restore_option_and_stage_order():
    inst = parse_instance({
        "format": "kassign/v1", "protocol": "streams", "tasks": [{"id": "0_0"}, {"id": "0_1"}],
        "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001", "active": ["0_0", "0_1"]},
                    {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002"}],
        "config": {"num_standby_replicas": 1, "acceptable_recovery_lag": 100}})
    res = solve_streams(inst, Params(options={"full_restore_lag": 7}))
    # both standbys restore from scratch on b: 2 x 7
    assert res.objective[2] == 14
    res2 = solve_streams(inst, Params(objective=("movement", "restoration")))
    # nothing moves; the standbys restore in full: 2 x (acceptable_recovery_lag + 1)
    assert res2.extra["stages"] == ["movement", "restoration"] and res2.objective == (0, 202)
    with pytest.raises(ValueError):
        solve_streams(inst, Params(objective=("nope",)))


def test_more_standbys_than_clients_allow():
    inst = parse_instance({
        "format": "kassign/v1", "protocol": "streams", "tasks": [{"id": "0_0"}],
        "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001"},
                    {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002"}],
        "config": {"num_standby_replicas": 3}})
    res = solve_streams(inst, Params())
    ca, cb = res.assignment.get("a"), res.assignment.get("b")
    assert len(ca.active) + len(cb.active) == 1 and len(ca.standby) + len(cb.standby) == 1


def test_unproven_stage_is_reported_with_its_bound():
    # 32 clients x 53 tasks x 2 standbys (from the sweep-paper grid): CP-SAT alone (-O flows=0 engine=cp-sat)
    # proves nothing in 2 s, and the result says so (status, per-stage bounds, gap) instead of claiming optimality
    inst = read_instance(Path(__file__).parent / "data" / "streams-movement-hard.json")
    res = solve_streams(inst, Params(time_limit=2, options={"engine": "cp-sat", "flows": "0"}))
    assert score_streams(inst, res.assignment)["valid"]
    assert res.extra["stages"] == list(STAGES)
    assert all(b <= v for b, v in zip(res.bound, res.objective, strict=True))
    assert res.status is Status.FEASIBLE and not all(res.extra["proven"])
    assert (res.status is Status.OPTIMAL) == (res.bound == res.objective) == all(res.extra["proven"])
    assert res.extra["gap"] > 0
    assert res.extra["engine"] == "cp-sat"


def test_flows_prove_the_movement_stage_with_the_kept_bound():
    # the same group: the replica relaxation with the active limits on kept actives bounds movement by 11,
    # the flows' answer moves 11 (the MIP's proven optimum, below): proven without any MIP
    inst = read_instance(Path(__file__).parent / "data" / "streams-movement-hard.json")
    res = solve_streams(inst, Params(time_limit=10, options={"engine": "cp-sat"}))
    assert res.status is Status.OPTIMAL and res.objective[2:] == (815439, 11) and res.bound == res.objective
    assert res.extra["engine"] == "flow"


def test_sweep_scenario_rows_all_proven():
    # every row of a 16-client 'mixed' Streams scenario of the sweep generator (seed 1, 2 standbys, 5 steps:
    # benchmarks/bench_streams_sweep.py made the file); flows + CP-SAT left 9 of its 24 rows 'feasible' at 10 s,
    # the movement (and twice the restoration) stage unproven; with the MIP every stage is proven
    records = read_instances(DATA / "streams-mixed16.jsonl.gz")
    assert len(records) == 24
    engines = set()
    for rec in records:
        res = solve_streams(rec.instance, Params(time_limit=10))
        assert res.status is Status.OPTIMAL, (rec.instance.name, res.objective, res.bound)
        assert res.bound == res.objective and all(res.extra["proven"])
        m = score_streams(rec.instance, res.assignment)
        assert m["valid"], m["violations"]
        assert (m["restoration_cost"], m["moved_actives"]) == tuple(res.objective[2:])
        engines.add(res.extra["engine"])
    assert engines == {"flow", "flow+highs"}  # the flows alone do not prove them all: the MIP does the rest


def test_movement_stage_proven_where_flows_and_cp_sat_were_not():
    # 32 clients x 53 tasks x 2 standbys: CP-SAT reached 11 moved actives against a bound of 10 after 30 s;
    # the MIP proves 11 optimal (both MIP backends agree)
    inst = read_instance(DATA / "streams-movement-hard.json")
    for engine in ("highs", "scip"):
        res = solve_streams(inst, Params(time_limit=20, options={"engine": engine}))
        assert res.status is Status.OPTIMAL and res.objective[2:] == (815439, 11) and res.bound == res.objective
        assert score_streams(inst, res.assignment)["moved_actives"] == 11


@pytest.mark.parametrize("options", [{"engine": "highs", "flows": "0", "deterministic": "1"},
                                     {"engine": "cp-sat", "flows": "0", "deterministic": "1"}])
def test_same_seed_same_assignment_when_the_limit_ends_the_search(options):
    # a limit far too short to prove anything: the work limits (MIP nodes, CP-SAT deterministic time) end
    # the stages, so three runs give one assignment
    inst = read_instance(DATA / "streams-movement-hard.json")
    runs = [solve_streams(inst, Params(time_limit=0.2, seed=5, options=options)) for _ in range(3)]
    docs = [r.assignment.to_json_dict() for r in runs]
    assert docs[0] == docs[1] == docs[2]
    assert all(score_streams(inst, r.assignment)["valid"] for r in runs)
    assert len({(r.objective, r.bound) for r in runs}) == 1


BURN = "import time\nt = time.time()\nwhile time.time() - t < 120:\n    pass\n"


def _assign(path: Path, out: Path) -> dict:
    subprocess.run([str(Path(sys.executable).parent / "kassign"), "assign", "-a", "optimal-streams",
                    "--time-limit", "1", "-O", "engine=cp-sat", "-O", "flows=0", str(path), "-o", str(out)],
                   check=True, capture_output=True)
    doc = json.loads(out.read_text())
    for key in ("seconds", "stage_seconds", "stage_done_s"):
        doc["stats"].pop(key, None)
    return doc


def test_the_same_output_on_an_idle_and_a_busy_machine(tmp_path: Path) -> None:
    # default options (no --seed): CP-SAT's stages end at their deterministic budgets, not at a share of the
    # wall clock left, so three busy loops on the machine change nothing in the output
    quiet = _assign(DATA / "streams-movement-hard.json", tmp_path / "a.json")
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(3)]
    try:
        busy = _assign(DATA / "streams-movement-hard.json", tmp_path / "b.json")
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert quiet["stats"]["status"] == "feasible"  # the limit ends the search: the case that can differ
    assert busy == quiet


def _two_clients(tasks, config=None, lags=None, active=()):
    return parse_instance({
        "format": "kassign/v1", "protocol": "streams", "tasks": tasks,
        "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001", "active": list(active),
                     "lags": lags or {}},
                    {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002"}],
        "config": config or {}})


def test_no_tasks_is_an_empty_optimal_assignment():
    res = solve_streams(_two_clients([], {"num_standby_replicas": 1}), Params())
    assert res.status is Status.OPTIMAL
    assert res.assignment.to_json_dict()["assignment"] == {c: {"active": [], "standby": [], "warmup": []}
                                                            for c in ("a", "b")}
    inst = parse_instance({"format": "kassign/v1", "protocol": "streams",
                           "subtopologies": [{"id": 0, "source_topics": {"A": 0}}],
                           "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001"}]})
    assert solve_streams(inst, Params()).status is Status.OPTIMAL


@pytest.mark.parametrize("big", [2**63 - 1, 2**62])
def test_huge_lags_and_recovery_lag_give_a_valid_honest_answer(big):
    # sums of such lags overflow 64 bits: the solvers work on rounded costs, the reported restoration is exact
    inst = _two_clients([{"id": "0_0"}, {"id": "0_1"}, {"id": "0_2", "stateful": False}],
                        {"num_standby_replicas": 1, "acceptable_recovery_lag": big}, {"0_1": big}, ["0_0"])
    res = solve_streams(inst, Params(time_limit=5))
    m = score_streams(inst, res.assignment)
    assert m["valid"], m["violations"]
    assert res.objective[2] == m["restoration_cost"] > 2**63  # Python integers, no wrap-around
    assert all(b <= v for b, v in zip(res.bound, res.objective, strict=True))
    assert (res.status is Status.OPTIMAL) == all(res.extra["proven"]) == (res.bound == res.objective)
    assert res.extra["exact"] is False
    p = StreamsProblem.of(inst)
    assert p.cost_div > 1 and int(np.abs(p.cost_matrix).max()) < 2**50


def test_bad_options_are_refused():
    inst = _two_clients([{"id": "0_0"}])
    for opts in ({"engine": "gurobi"}, {"workers": "abc"}, {"workers": "0"}, {"flows": "maybe"}):
        with pytest.raises(ValueError):
            solve_streams(inst, Params(options=opts))


RACKS = ("r0", "r1", "r2")


@st.composite
def small_with_racks(draw):
    """Small instances with KIP-925 rack data and rack awareness on."""
    base = draw(small())
    doc = {"format": "kassign/v1", "protocol": "streams", "tasks": [], "clients": [],
           "config": {"num_standby_replicas": base.streams.config.num_standby_replicas,
                      "acceptable_recovery_lag": 10, "rack_aware_assignment_strategy": "min_traffic",
                      "rack_aware_assignment_traffic_cost": draw(st.integers(1, 10))}}
    rack_lists = st.lists(st.sampled_from(RACKS), min_size=1, max_size=2, unique=True)
    for t in base.streams.tasks:
        task = {"id": t.id, "stateful": t.stateful,
                "source_racks": draw(st.lists(rack_lists, min_size=1, max_size=2))}
        if t.stateful:
            task["changelog_racks"] = draw(st.lists(rack_lists, min_size=1, max_size=2))
        doc["tasks"].append(task)
    for c in base.streams.clients:
        doc["clients"].append({"id": c.id, "process_id": c.process_id, "capacity": c.capacity,
                               "rack": draw(st.sampled_from(RACKS)), "active": list(c.active),
                               "lags": dict(c.lags)})
    return parse_instance(doc)


@settings(max_examples=40, deadline=None)
@given(small_with_racks(), st.sampled_from([{}, {"engine": "cp-sat"}]))
def test_cross_rack_traffic_stage_equals_brute_force(inst, options):
    # rack awareness on: the traffic stage comes right after the balance stages (KIP-925's cost: traffic_cost
    # per source partition without a replica on the client's rack for an active, changelog partitions for a
    # standby)
    res = solve_streams(inst, Params(time_limit=20, options=options))
    p = StreamsProblem.of(inst)
    stages = tuple(res.extra["stages"])
    assert stages == ("active_balance", "total_balance", "cross_rack_traffic", "restoration", "movement")
    best = brute_force(p, stages)
    assert res.status is Status.OPTIMAL and res.bound == res.objective
    unit = inst.streams.config.traffic_cost
    got = tuple(round(v * p.scale) if s.endswith("balance") else (int(v) // unit if s == "cross_rack_traffic"
                                                                    else int(v))
                for s, v in zip(stages, res.objective, strict=True))
    assert got == best
    m = score_streams(inst, res.assignment)
    assert m["valid"] and res.objective[2] == m["cross_rack_traffic"]  # the stage is the scorer's metric


def test_rack_awareness_off_keeps_the_four_stages():
    inst = parse_instance({
        "format": "kassign/v1", "protocol": "streams",
        "tasks": [{"id": "0_0", "source_racks": [["r1"]]}],
        "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001", "rack": "r1"},
                    {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002"}],  # no rack: off
        "config": {"rack_aware_assignment_strategy": "min_traffic"}})
    assert solve_streams(inst, Params()).extra["stages"] == list(STAGES)


def test_rounded_thread_weights_are_never_claimed_optimal():
    # the lcm of these thread counts is beyond 2^40: per-thread weights are rounded up, so the balance
    # stages are a surrogate and the result says so
    caps = [17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59]
    inst = parse_instance({
        "format": "kassign/v1", "protocol": "streams",
        "tasks": [{"id": f"0_{i}", "stateful": False} for i in range(40)],
        "clients": [{"id": f"c{i}", "process_id": f"00000000-0000-0000-0000-{i + 1:012d}", "capacity": c}
                    for i, c in enumerate(caps)]})
    res = solve_streams(inst, Params(time_limit=10))
    assert res.status is Status.FEASIBLE and res.extra["exact"] is False
    assert res.extra["proven"][:2] == [False, False]
    assert score_streams(inst, res.assignment)["valid"]
    exact = solve_streams(inst, Params(time_limit=10, objective=("movement",)))  # no balance stage: exact
    assert exact.status is Status.OPTIMAL


def test_unknown_lag_is_a_full_restore_and_not_caught_up():
    # b has state for 0_0 of unknown lag (null): not caught up (a is the previous active), and a standby
    # there costs the full restore, as on c without state; the scorer agrees
    inst = parse_instance({
        "format": "kassign/v1", "protocol": "streams", "tasks": [{"id": "0_0"}],
        "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001", "active": ["0_0"]},
                    {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002", "lags": {"0_0": None}},
                    {"id": "c", "process_id": "00000000-0000-0000-0000-000000000003"}],
        "config": {"num_standby_replicas": 1, "acceptable_recovery_lag": 100}})
    p = StreamsProblem.of(inst)
    assert p.allowed_active[0] == [0] and p.cost[0] == [0, 101, 101]
    res = solve_streams(inst, Params())
    assert res.status is Status.OPTIMAL and res.objective[2] == 101
    assert score_streams(inst, res.assignment)["restoration_cost"] == 101
