"""Helpers shared by the sweep tests (consumer, Streams, crash and cluster sweeps)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
import pytest

from solver.errors import InstanceError
from spark_runner.sweep.evaluate import COLUMNS, OPTIMAL, ROW_SCHEMA, evaluate_scenario, load_registry
from spark_runner.sweep.grid import parse_grid

#: A sweep row's key: one row per (scenario, step, assignor).
KEY = ["scenario_id", "step", "assignor"]


def need_registered(*names: str, optimum: str = OPTIMAL) -> None:
    """Skip the calling test unless ``names`` and ``optimum`` are registered assignors."""
    known = {s.name for s in load_registry()}
    missing = [n for n in (*names, optimum) if n not in known]
    if missing:
        pytest.skip(f"not registered: {', '.join(missing)}")


def grid_problems(doc: object) -> list[str]:
    """The problems :func:`~spark_runner.sweep.grid.parse_grid` reports for ``doc`` (which must be invalid)."""
    with pytest.raises(InstanceError) as e:
        parse_grid(doc, "g.yaml")
    return [str(p) for p in e.value.problems]


def expected_rows(doc: dict[str, Any]) -> pd.DataFrame:
    """The rows of a consumer grid evaluated without Spark, scenario by scenario."""
    g = parse_grid(doc, "g.yaml")
    rows = []
    for _sid, seed, p in g.scenarios():
        rows += evaluate_scenario(p, seed, list(g.assignors), g.solver_time_limit)
    return pd.DataFrame(rows)


def comparable(df: pd.DataFrame) -> pd.DataFrame:
    """Rows in key order without the timings, nulls as ``None``: equal for equal sweeps."""
    cols = [c for c in df.columns if c != "seconds"]
    out = df[cols].sort_values(KEY).reset_index(drop=True)
    return out.astype(object).where(out.notna(), None)


def assert_row_types(rows: Iterable[dict[str, Any]]) -> None:
    """Every row has exactly the sweep's columns, in order, each value ``None`` or of its ``ROW_SCHEMA`` type."""
    py = {"string": str, "long": int, "int": int, "double": float, "boolean": bool}
    for r in rows:
        assert tuple(r) == COLUMNS
        for name, typ in ROW_SCHEMA:
            v = r[name]
            assert v is None or isinstance(v, py[typ]), (name, v)
