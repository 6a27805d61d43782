"""``kassign sweep`` and ``kassign report`` reach the sweep through :mod:`spark_runner.sweep.api` alone, and their
commands are module-level functions (not closures inside ``register``)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from spark_runner.cli.commands import report, sweep

COMMANDS = Path(__file__).resolve().parents[3] / "spark_runner" / "cli" / "commands"


@pytest.mark.parametrize("name", ["sweep.py", "report.py"])
def test_the_sweep_commands_import_only_the_api_of_the_sweep(name: str) -> None:
    tree = ast.parse((COMMANDS / name).read_text())
    named: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            named |= {node.module} if node.module != "spark_runner.sweep" else {
                f"spark_runner.sweep.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            named |= {a.name for a in node.names}
    sweep_modules = {m for m in named if m == "spark_runner.sweep" or m.startswith("spark_runner.sweep.")}
    assert sweep_modules == {"spark_runner.sweep.api"}


def test_the_commands_are_module_level_functions() -> None:
    for module, name in ((sweep, "sweep"), (report, "report")):
        fn = getattr(module, name)
        assert inspect.isfunction(fn) and fn.__qualname__ == name and fn.__module__ == module.__name__
