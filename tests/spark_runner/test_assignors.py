"""The complete registry: lazy lookup by name finds the same specs as loading everything."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from solver.registry import UnknownAssignorError
from spark_runner.assignors import SOLVER_PREFIX, get, load_all


def test_solver_names_and_only_solver_names_carry_the_prefix() -> None:
    specs = load_all()
    assert {s.kind for s in specs} == {"heuristic", "solver"}
    for s in specs:
        assert s.name.startswith(SOLVER_PREFIX) == (s.kind == "solver"), s.name


def test_get_returns_the_registered_spec_for_every_name() -> None:
    for s in load_all():
        assert get(s.name) is s


def test_unknown_name_lists_every_known_name() -> None:
    with pytest.raises(UnknownAssignorError) as e:
        get("stiky")
    text = str(e.value)
    for s in load_all():
        assert s.name in text


_PROBE = """
import json, sys
from spark_runner.assignors import get
spec = get(sys.argv[1])
print(json.dumps({"name": spec.name, "heuristics": "heuristics.range" in sys.modules,
                  "optimal": "solver.consumer.optimal" in sys.modules,
                  "cp_model": "ortools.sat.python.cp_model" in sys.modules}))
"""


def _probe(name: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", _PROBE, name], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def test_lookup_imports_only_what_the_name_needs() -> None:
    # a fresh interpreter: the optimum does not pull in the heuristics or CP-SAT (and its pandas import)
    assert _probe("optimal") == {"name": "optimal", "heuristics": False, "optimal": True, "cp_model": False}
    assert _probe("range") == {"name": "range", "heuristics": True, "optimal": False, "cp_model": False}


def test_every_document_an_assignor_cites_is_in_the_repository() -> None:
    """``kassign list`` shows each assignor's source; a file it names must be one a user can open."""
    import re
    from pathlib import Path

    from spark_runner.assignors import load_all

    repo = Path(__file__).resolve().parents[2]
    for spec in load_all():
        for doc in re.findall(r"[\w./-]+\.md\b", spec.source):
            assert (repo / doc).exists(), f"{spec.name}: source cites {doc}, not in the repository"
