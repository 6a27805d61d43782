"""Fuzzing the CLI with mutated instances (consumer and Streams) and option values.

A seeded generator (the same cases in every run; ``KASSIGN_FUZZ_SEED`` / ``KASSIGN_FUZZ_CASES`` explore
more) mutates valid documents -- values swapped for hostile ones, keys dropped, duplicated or invented,
text cut or nested -- and runs ``validate`` and ``assign`` in-process.  Whatever comes in: no exit 1, no
traceback, and every rejection names the file and where in it (a JSON path or a line and column).
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from spark_runner.cli.app import main

SEED = int(os.environ.get("KASSIGN_FUZZ_SEED", "15"))
CASES = int(os.environ.get("KASSIGN_FUZZ_CASES", "160"))

CONSUMER: dict[str, Any] = {
    "format": "kassign/v1", "name": "g",
    "topics": {"T1": 3, "T2": {"partitions": 3, "id": "0b5f0c6e-3b1a-4d3c-9a55-6b6f2c7e2a10",
                               "weights": [5.0, 1.0, 2.0], "move_costs": [3, 1, 1],
                               "racks": [["r1"], ["r2"], ["r1", "r2"]]}},
    "members": [{"id": "C1", "topics": ["T1", "T2"], "owned": {"T1": [0, 2]}, "generation": 3, "rack": "r1"},
                {"id": "C2", "topics": ["T1", "T2"], "owned": {"T2": [1]}, "generation": 3, "capacity": 2.0},
                {"id": "C3", "topics": ["T2"], "instance_id": "i-3"}],
    "copartition": [["T1", "T2"]],
    "notes": {"why": ["fuzz", 1, None]},
}
STREAMS: dict[str, Any] = {
    "format": "kassign/v1", "protocol": "streams",
    "tasks": [{"id": "0_0", "stores": 1}, {"id": "0_1"}, {"id": "1_0", "stateful": False}],
    "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001", "capacity": 2,
                 "active": ["0_0"], "standby": ["0_1"], "lags": {"0_1": 40}},
                {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002", "lags": {"0_0": 10}}],
    "config": {"num_standby_replicas": 1, "acceptable_recovery_lag": 100},
}
DERIVED: dict[str, Any] = {
    "format": "kassign/v1", "protocol": "streams",
    "subtopologies": [{"id": 0, "source_topics": {"in": 4, "other": 2}, "stores": 1},
                      {"id": 1, "source_topics": {"x": 3}, "stateful": False}],
    "clients": [{"id": "a", "process_id": "00000000-0000-0000-0000-000000000001"},
                {"id": "b", "process_id": "00000000-0000-0000-0000-000000000002", "active": ["0_3"]}],
}
HOSTILE: list[Any] = [None, True, False, -1, 0, 1, 2**31 - 1, 2**31, 2**63, 2**64, 10**30, -(2**31) - 1, 1e308,
                      -1e-300, 1e-300, 0.5, "", "x", "0_1", "00_01", "0_99999999999", "T1", "C1", "é", [], {},
                      [[]], [None], {"a": 1}, [0, 0], [2**64], ["T1", "T1"], {"T1": [2**64]}, {"0_0": -1}]
ASSIGNORS = {"consumer": ["range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "optimal"],
             "streams": ["high-availability", "sticky-task", "optimal-streams"]}
OPTIONS: list[list[str]] = [[], [], [], ["--seed", "7"], ["--seed", "-1"], ["--seed", "1" * 23],
                            ["-O", "workers=abc"], ["-O", "workers=2"], ["-O", "nope=1"], ["--time-limit", "nan"],
                            ["--time-limit", "inf"], ["--time-limit", "0"], ["-O", "interleave=maybe"],
                            ["-O", "engine=cp-sat"], ["-O", "=1"], ["--settle"]]
#: A problem line after the file name: a JSON path then ': ', or a located syntax error, or a whole-document one.
LOCATED = re.compile(r"^(malformed (JSON|YAML)|line \d+|[^\s:][^:]*?: |expected a JSON object|give )")


def _paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*here, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*here, i))
    return out


def _mutate(rng: random.Random, base: dict[str, Any]) -> str:
    """One mutated document as text (JSON, sometimes YAML-only constructs or broken text)."""
    doc = copy.deepcopy(base)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(_paths(doc)[1:])
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        last = path[-1]
        op = rng.random()
        if op < 0.55:
            parent[last] = copy.deepcopy(rng.choice(HOSTILE))
        elif op < 0.7 and isinstance(parent, dict):
            del parent[last]
        elif op < 0.8 and isinstance(parent, dict):
            parent[f"{last}_extra"] = 1
        elif op < 0.9 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        else:
            parent[last] = {"deep": json.loads("[" * 70 + "]" * 70)}
    text = json.dumps(doc)
    kind = rng.random()
    if kind < 0.08:  # a duplicate key spliced into the text
        text = text.replace('"format": "kassign/v1"', '"format": "kassign/v1", "format": "kassign/v1"', 1)
    elif kind < 0.12:
        text = text[: rng.randint(0, len(text))]
    elif kind < 0.15:
        text = text.replace('"format"', '"notes2": ' + "[" * 5000 + "]" * 5000 + ', "format"', 1)
    elif kind < 0.18:
        text = text.replace('"format"', '"n": ' + "7" * 6000 + ', "format"', 1)
    return text


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    argv = sys.argv
    sys.argv = ["kassign", *args]
    try:
        main()
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
    return code, capsys.readouterr().err


def _check(code: int, err: str, source: str, what: str) -> None:
    assert code in (0, 2, 3, 65), f"{what}: exit {code}\n{err}"
    assert "Traceback" not in err and "internal error" not in err, f"{what}:\n{err}"
    if code == 65:
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.endswith("invalid instance(s)")]
        assert lines, f"{what}: exit 65 without a message"
        for ln in lines:
            assert ln.startswith(f"{source}: "), f"{what}: the problem does not name the file: {ln}"
            assert LOCATED.match(ln[len(source) + 2:]), f"{what}: the problem names no path: {ln}"


def test_fuzzed_instances_and_options_never_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  registry_loaded: None) -> None:
    rng = random.Random(SEED)
    outcomes: dict[int, int] = {}
    for case in range(CASES):
        base = rng.choice([CONSUMER, STREAMS, DERIVED])
        text = _mutate(rng, base)
        f = tmp_path / f"case{case}.{'yaml' if rng.random() < 0.2 else 'json'}"
        f.write_text(text)
        code, err = _run(["validate", str(f)], capsys)
        _check(code, err, str(f), f"validate case {case}: {text[:300]}")
        protocol = "consumer" if base is CONSUMER else "streams"
        name = rng.choice(ASSIGNORS[protocol])
        opts = rng.choice(OPTIONS)
        code, err = _run(["assign", str(f), "-a", name, "--time-limit", "2", *opts], capsys)
        _check(code, err, str(f), f"assign -a {name} {opts} case {case}: {text[:300]}")
        outcomes[code] = outcomes.get(code, 0) + 1
    # the generator reaches every outcome: accepted, usage errors, invalid data
    assert outcomes.get(0, 0) > 0 and outcomes.get(2, 0) > 0 and outcomes.get(65, 0) > 0, outcomes
