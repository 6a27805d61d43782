"""The exact engine's two phases: the strict answer seeds the tolerance run; small groups proven; reproducible.

* A run with a balance tolerance holds the strict run's answer (the same first phase), so it never moves
  more than the strict run (issue 33: 3 of 12 generated groups moved more at 1%).
* Small weighted groups with capacities 1-4 after a leave, packed tight at the optimum: both stages proven
  within ``--time-limit 10``, moved cost equal to a plain CP-SAT reference (one Boolean per partition and
  member).
* The default is deterministic: the same input and options give the same output on an idle machine and
  while another process burns CPU.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.consumer.optimal import solve
from solver.io import parse_instance
from solver.result import Params, Status

#: Stats keys that report wall-clock seconds (the only part of an output that may differ between runs).
TIMING_KEYS = ("seconds", "stage_seconds", "stage_done_s")


def weighted_group(seed: int, *, partitions: tuple[int, int], members: tuple[int, int], max_weight: int,
                   lognormal: bool = False) -> dict[str, Any]:
    """A weighted group after a leave: capacities 1-4, a greedy previous assignment, one member gone."""
    rnd = random.Random(seed)
    n_parts = rnd.randint(*partitions)
    n_topics = rnd.randint(1, 3)
    cuts = sorted(rnd.sample(range(1, n_parts), n_topics - 1))
    sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n_parts], strict=True)]
    topics: dict[str, Any] = {}
    for i, n in enumerate(sizes):
        if lognormal:
            weights = [min(max_weight, int(rnd.lognormvariate(5, 0.8)) + 1) for _ in range(n)]
        else:
            weights = [rnd.randint(1, max_weight) for _ in range(n)]
        topics[f"t{i}"] = {"partitions": n, "weights": weights}
        if rnd.random() < 0.5:
            topics[f"t{i}"]["move_costs"] = [rnd.randint(1, 5) for _ in range(n)]
    names = list(topics)
    group = [{"id": f"m{k}", "topics": names[:], "capacity": rnd.randint(1, 4)}
             for k in range(rnd.randint(*members) + 1)]
    load = {m["id"]: 0.0 for m in group}
    owned: dict[str, dict[str, list[int]]] = {m["id"]: {} for m in group}
    items = [(t, p, topics[t]["weights"][p]) for t in names for p in range(topics[t]["partitions"])]
    rnd.shuffle(items)
    for t, p, w in sorted(items, key=lambda x: -x[2] * rnd.uniform(0.7, 1.3)):
        pick = min(rnd.sample(group, min(3, len(group))), key=lambda m: (load[m["id"]] + w) / m["capacity"])
        owned[pick["id"]].setdefault(t, []).append(p)
        load[pick["id"]] += w
    gone = rnd.choice(group)["id"]
    group = [m for m in group if m["id"] != gone]
    for m in group:
        m["owned"] = {t: sorted(ps) for t, ps in owned[m["id"]].items()}
    return {"format": "kassign/v1", "name": f"w-{seed}", "protocol": "consumer", "topics": topics, "members": group}


def moved(doc: dict[str, Any], res: Any) -> float:
    """The stage value ``moves`` of a result (what the tests compare)."""
    return float(res.objective[res.extra["stages"].index("moves")])


# ---- 1. monotone by construction
@settings(max_examples=5, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10**6))
def test_a_tolerance_answer_never_moves_more_than_the_strict_answer(seed: int) -> None:
    doc = weighted_group(seed, partitions=(80, 160), members=(5, 12), max_weight=5000, lognormal=True)
    inst = parse_instance(doc)
    strict = solve(inst, Params(time_limit=1.0))
    z = float(strict.objective[0])
    for eps in (0.01, 0.05):
        tol = solve(inst, Params(time_limit=1.0, balance_tolerance=eps))
        # the same first phase: the max load the window sits above is the strict run's
        assert tol.extra["balance_tolerance"]["optimal_max_load"] == z
        assert float(tol.objective[0]) <= z * (1 + eps) + 1e-9
        assert moved(doc, tol) <= moved(doc, strict) + 1e-9, (eps, moved(doc, tol), moved(doc, strict))


# ---- 2. small tight groups proven, checked against a plain CP-SAT model
def plain_reference(doc: dict[str, Any]) -> tuple[float, float]:
    """(least max load per capacity, least moved cost at it) by a plain CP-SAT model, proven.

    Partitions alike (same load, previous owner and move cost) are one integer count per member (a
    Boolean per partition would leave CP-SAT their symmetry to prove); loads times ``L / capacity``
    (``L`` the lcm of the capacities) are integers, so both stages are exact.  The members' loads sum to
    the total as a constraint of its own: without it CP-SAT with two workers does not prove lognormal seed
    1's 8 moved in 300 s; with it, in about 5 s.
    """
    from collections import Counter

    from ortools.sat.python import cp_model

    members = doc["members"]
    caps = [int(m["capacity"]) for m in members]
    big = math.lcm(*caps)
    owner = {(t, p): i for i, m in enumerate(members) for t, ps in m["owned"].items() for p in ps}
    kinds = Counter((int(spec["weights"][p]), owner.get((t, p), -1),
                     int(spec.get("move_costs", [1] * spec["partitions"])[p]))
                    for t, spec in doc["topics"].items() for p in range(spec["partitions"]))
    classes = sorted(kinds.items())

    def model(z_cap: int | None) -> tuple[Any, Any, Any]:
        md = cp_model.CpModel()
        x = [[md.new_int_var(0, n, f"x{i}_{j}") for j in range(len(members))] for i, (_, n) in enumerate(classes)]
        for row, (_, n) in zip(x, classes, strict=True):
            md.add(sum(row) == n)
        z = md.new_int_var(0, big * sum(w * n for (w, _, _), n in classes), "z")
        loads = [md.new_int_var(0, sum(w * n for (w, _, _), n in classes), f"l{j}") for j in range(len(members))]
        for j, c in enumerate(caps):
            md.add(loads[j] == sum(w * x[i][j] for i, ((w, _, _), _) in enumerate(classes)))
            md.add(loads[j] * (big // c) <= z)
        md.add(sum(loads) == sum(w * n for (w, _, _), n in classes))
        if z_cap is not None:
            md.add(z <= z_cap)
        mv = sum(cost * (n - x[i][o]) for i, ((_, o, cost), n) in enumerate(classes) if o >= 0)
        return md, z, mv

    def run(md: Any) -> Any:
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 2
        solver.parameters.max_time_in_seconds = 300
        assert solver.solve(md) == cp_model.OPTIMAL
        return solver

    md, z, _ = model(None)
    md.minimize(z)
    z_opt = round(run(md).objective_value)
    md, _, mv = model(z_opt)
    md.minimize(mv)
    return z_opt / big, run(md).objective_value


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_small_tight_groups_are_proven_in_both_stages(seed: int) -> None:
    doc = weighted_group(seed, partitions=(40, 48), members=(5, 5), max_weight=30)
    res = solve(parse_instance(doc), Params(time_limit=10.0))
    z_ref, mv_ref = plain_reference(doc)
    assert res.status is Status.OPTIMAL, res.extra
    assert math.isclose(float(res.objective[0]), z_ref, rel_tol=1e-9)
    assert moved(doc, res) == pytest.approx(mv_ref, abs=1e-9)



@pytest.mark.parametrize("seed", [1, 4, 20])
def test_a_lognormal_tight_group_is_proven_in_both_stages(seed: int) -> None:
    # lognormal loads over 5 members of capacities 1-4 after a leave.  Seed 4 (43 partitions): the moves
    # stage's column generation must keep its columns on a master this small (pruned, its integer models
    # answered 10 moved against the proven 6, unproven after 5 s; unpruned, 6 proven in 0.3 s).  Seed 1
    # (42 partitions): proven only with the members' loads summing to the total as a constraint of the
    # CP-SAT model (before: 8 moved against a bound of 7 at --time-limit 10).  Seed 20: proven only with the
    # moves stage's interleaved portfolio (one worker's default search: 5 moved against the proven 4)
    doc = weighted_group(seed, partitions=(40, 48), members=(5, 5), max_weight=5000, lognormal=True)
    res = solve(parse_instance(doc), Params(time_limit=10.0))
    z_ref, mv_ref = plain_reference(doc)
    assert res.extra["stage_proven"][:2] == [True, True], res.extra
    assert math.isclose(float(res.objective[0]), z_ref, rel_tol=1e-9)
    assert moved(doc, res) == pytest.approx(mv_ref, abs=1e-9)

# ---- 3. reproducible by default
BURN = "import time\nt = time.time()\nwhile time.time() - t < 120:\n    pass\n"


def _assign(path: Path, out: Path) -> dict[str, Any]:
    subprocess.run([str(Path(sys.executable).parent / "kassign"), "assign", "-a", "optimal", "--time-limit", "1",
                    "--balance-tolerance", "0.01", str(path), "-o", str(out)], check=True, capture_output=True)
    doc: dict[str, Any] = json.loads(out.read_text())
    for key in TIMING_KEYS:
        doc["stats"].pop(key, None)
    return doc


def test_the_same_output_on_an_idle_and_a_busy_machine(tmp_path: Path) -> None:
    doc = weighted_group(11, partitions=(150, 150), members=(10, 10), max_weight=5000, lognormal=True)
    path = tmp_path / "group.json"
    path.write_text(json.dumps(doc))
    quiet = _assign(path, tmp_path / "a.json")
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(3)]
    try:
        busy = _assign(path, tmp_path / "b.json")
    finally:
        for b in burners:
            b.kill()
            b.wait()
    assert quiet["stats"]["status"] in ("optimal", "feasible")
    assert busy == quiet


# ---- 1b. each frontier point seeds the next
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 10**6))
def test_frontier_max_load_never_rises_as_the_budget_grows(seed: int) -> None:
    from solver.consumer.frontier import compute_frontier

    doc = weighted_group(seed, partitions=(60, 120), members=(5, 10), max_weight=5000, lognormal=True)
    front = compute_frontier(parse_instance(doc), Params(time_limit=0.3), max_points=6)
    points = sorted(front["points"], key=lambda p: p["budget"])
    assert points, front
    for a, b in itertools.pairwise(points):
        assert b["max_load"] <= a["max_load"] + 1e-9, (a, b)
        assert b["moved"] <= b["budget"] + 1e-9
