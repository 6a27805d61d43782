"""Hostile grids are refused before Spark starts -- also under ``--dry-run`` -- with their YAML path, fast and in
little memory; a second sweep into a locked ``--out`` is refused at once."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from spark_runner.sweep.grid import MAX_GRID_POINTS, MAX_SCENARIOS, SEED_MAX, read_grid
from spark_runner.sweep.store import sweep_lock
from tests.spark_runner.cli.test_cli import kassign
from tests.spark_runner.sweep.conftest import grid_problems

BASE = {"seeds": 2, "assignors": ["range"], "params": {"members": 4, "topics": 2, "steps": 2}}


def _grid(**changes: object) -> dict[str, object]:
    doc = json.loads(json.dumps(BASE))
    for k, v in changes.items():
        if k.startswith("params."):
            doc["params"][k[len("params."):]] = v  # type: ignore[index]
        else:
            doc[k] = v
    return doc


HOSTILE = {
    "a billion seeds": (_grid(seeds=10**9), "seeds: a count of seeds must be between 1 and 1,000,000"),
    "seed range past a Java long": (_grid(seeds={"start": SEED_MAX - 5, "count": 10}),
                                    "seeds.count: the last seed would be"),
    "a seed past a Java long": (_grid(seeds=[1, 2**63]), "seeds[1]: a seed is an integer between 0 and "),
    "a negative seed": (_grid(seeds=[-1]), "seeds[0]: a seed is an integer"),
    "seeds as text": (_grid(seeds="many"), "seeds: expected a count, a list of seeds or {start, count}"),
    "a billion grid points": (_grid(**{"params.members": list(range(1, 1001)),
                                       "params.topics": list(range(1, 1001)), "params.steps": list(range(1000))}),
                              "params: 1,000,000,000 combinations of values, more than a grid's limit"),
    "points x seeds": (_grid(seeds=1000, **{"params.members": list(range(1, 2001))}), "scenarios, more than"),
    "partitions past a Java int": (_grid(**{"params.partitions_max": 2**31}),
                                   "params.partitions_max: must be <= 2147483647 (a Java int)"),
    "a scenario too large": (_grid(**{"params.partitions_max": 10**6, "params.topics": 5}),
                             "partitions, more than a scenario's limit of 100,000"),
    "members too many": (_grid(**{"params.members": 100_000}), "more than a scenario's limit of 10,000"),
    "steps": (_grid(**{"params.steps": 10**6}), "params.steps: must be <= 1000"),
    "non-finite factor": (_grid(**{"params.hot_factor": float("inf"), "params.weights": "hot"}),
                          "params.hot_factor: must be a finite number, got inf"),
    "nan": (_grid(**{"params.zipf_a": float("nan")}), "params.zipf_a: expected a number, got nan"),
    "huge time limit": (_grid(solver_time_limit=1e308), "solver_time_limit: Input should be less than or equal"),
    "Streams lag past a long": ({"seeds": 1, "assignors": ["high-availability"],
                                 "params": {"protocol": "streams", "clients": 3, "acceptable_recovery_lag": 2**63}},
                                "params.acceptable_recovery_lag: must be <= "),
    "stream threads past the member limit": ({"seeds": 1, "assignors": ["streams-server-sticky"],
                                              "params": {"protocol": "streams", "clients": 3,
                                                         "threads_max": 2**31 - 1}},
                                             "params.threads_max: 8 clients x 2,147,483,647 threads is "),
    "every combination invalid": (_grid(**{"params.partitions_min": 20, "params.partitions_max": [2, 3, 4]}),
                                  "params: every one of the 3 combination(s) is invalid"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_grids_are_refused_with_their_path(case: str, registry_loaded: None) -> None:
    doc, message = HOSTILE[case]
    t0 = time.monotonic()
    problems = grid_problems(doc)
    assert time.monotonic() - t0 < 5
    assert any(message in p for p in problems), problems


BOMB = """\
a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
seeds: 1
assignors: all
"""


@pytest.mark.parametrize(("text", "message"), [
    (BOMB, "more than 64 aliases"),
    (BOMB.split("\nh:")[0] + "\nseeds: 1\nassignors: all\n", "values (YAML aliases expanded), more than the limit "
                                                              "100,000"),
    ("x: &x {members: 4}\nseeds: 1\nassignors: all\nparams:\n  <<: *x\n", "x: unknown key"),
    ("seeds: 1\nassignors: all\nparams: &p\n  members: 4\n  nested: *p\n", "a YAML alias refers to a value that "
                                                                           "contains it"),
])
def test_yaml_aliases_and_merge_keys_are_bounded(tmp_path: Path, text: str, message: str,
                                                 registry_loaded: None) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(text)
    t0 = time.monotonic()
    r = kassign("sweep", str(f), "--out", str(tmp_path / "out"), "--dry-run")
    assert r.returncode == 65 and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and time.monotonic() - t0 < 30
    assert not (tmp_path / "out").exists()


def test_merge_keys_within_the_bound_work(tmp_path: Path, registry_loaded: None) -> None:
    f = tmp_path / "g.yaml"
    f.write_text("seeds: 2\nassignors: [range]\nparams:\n  - &base {members: 4, topics: 2, steps: 1}\n"
                 "  - <<: *base\n    members: 6\n")
    g = read_grid(f)
    assert sorted(p.members for p in g.points) == [4, 6]


def test_dry_run_reports_the_grid_limits_too(tmp_path: Path) -> None:
    f = tmp_path / "g.yaml"
    f.write_text(yaml.safe_dump(_grid(seeds=10**9)))
    r = kassign("sweep", str(f), "--out", str(tmp_path / "out"), "--dry-run")
    assert r.returncode == 65 and "seeds: a count of seeds must be between 1 and 1,000,000" in r.stderr
    assert not (tmp_path / "out").exists()


def test_limits_are_the_documented_ones() -> None:
    assert (MAX_GRID_POINTS, MAX_SCENARIOS) == (100_000, 1_000_000)
    doc = (Path(__file__).resolve().parents[3] / "docs" / "sweeps.md").read_text()
    assert "at most 100,000, counted before a single point is built" in doc and "at most 1,000,000" in doc


def test_a_second_sweep_into_a_locked_directory_is_refused_at_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml.safe_dump(BASE))
    with sweep_lock(out):
        t0 = time.monotonic()
        r = kassign("sweep", str(grid), "--out", str(out))
        assert time.monotonic() - t0 < 30  # no Spark was started
    assert r.returncode == 75, r.stderr
    assert f"{out}: another sweep is writing to this directory (pid " in r.stderr
    assert "wait for it to finish, or give another --out" in r.stderr
    assert not (out / "rows").exists()
    with sweep_lock(out):  # released when the holder let go
        pass


def test_out_naming_a_file_is_an_output_error(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    grid = tmp_path / "g.yaml"
    grid.write_text(yaml.safe_dump(BASE))
    r = kassign("sweep", str(grid), "--out", str(f))
    assert r.returncode == 73 and f"cannot write {f}: exists and is not a directory" in r.stderr
