"""Every module path and dotted module name in README.md and docs/*.md exists in the tree.

Paths like ``solver/consumer/flow.py`` or ``tests/solver/streams/test_optimal.py``
(globs such as ``heuristics/sticky/*.py`` must match a file; folders such as
``spark_runner/cli/commands/`` must exist), bare module file names in backticks
(```config.py```: some package, test or benchmark folder holds one) and dotted
names like ``solver.model.semantics.previous_owners`` (the longest importable
module prefix, then attributes) are checked, so the architecture notes cannot
drift from the code.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PACKAGES = r"(?:solver|heuristics|spark_runner)"
PATH = re.compile(rf"(?<![\w./-])(?:{PACKAGES}|tests|benchmarks)/[\w/*.-]*")
DOTTED = re.compile(rf"(?<![\w./-])(?:{PACKAGES}|benchmarks)(?:\.\w+)+")
#: A module named by its file name alone, in backticks: `config.py`.
BARE = re.compile(r"`(\w+\.py)`")
#: Where the code lives: a bare file name must be one of theirs.
CODE_DIRS = ("solver", "heuristics", "spark_runner", "tests", "benchmarks")


def _refs(kind: re.Pattern[str]) -> list[tuple[str, str]]:
    out = set()
    for doc in DOCS:
        text = doc.read_text()
        for m in kind.finditer(text):
            if text[m.end():m.end() + 1] in ("<", "*"):
                continue  # a placeholder: benchmarks.bench_<name>
            ref = (m.group(1) if kind is BARE else m.group(0)).rstrip(".")
            if kind is PATH and not (ref.endswith((".py", "/")) or "." not in ref.rsplit("/", 1)[-1]):
                continue  # e.g. a data file name: not a module reference
            out.add((doc.name, ref))
    return sorted(out)


def _path_exists(ref: str) -> bool:
    if "*" in ref:
        return any(REPO.glob(ref))
    p = REPO / ref
    return p.is_dir() if ref.endswith("/") else p.is_file() or p.is_dir()


def _bare_exists(name: str) -> bool:
    return any(p for d in CODE_DIRS for p in (REPO / d).rglob(name))


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        try:
            spec = importlib.util.find_spec(name)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        obj: object = importlib.import_module(name)
        for attr in parts[n:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize(("doc", "ref"), _refs(PATH), ids=lambda x: str(x))
def test_module_path_exists(doc: str, ref: str) -> None:
    assert _path_exists(ref), f"{doc} names {ref}, which is not in the tree"


def test_bare_module_file_names_exist() -> None:
    missing = [f"{doc}: {ref}" for doc, ref in _refs(BARE) if not _bare_exists(ref)]
    assert not missing, f"module files named in the docs but not in the tree: {missing}"


@pytest.mark.parametrize(("doc", "ref"), _refs(DOTTED), ids=lambda x: str(x))
def test_dotted_name_resolves(doc: str, ref: str) -> None:
    assert _resolves(ref), f"{doc} names {ref}, which does not resolve"


def test_the_checks_can_fail() -> None:
    assert not _path_exists("solver/planning_kafka.py") and not _path_exists("heuristics/_sticky_*.py")
    assert not _resolves("solver.streams_optimal") and not _resolves("solver.model.scoring.nonesuch")
    assert _resolves("solver.model.semantics") and _path_exists("spark_runner/cli/commands/")
    assert not _bare_exists("planning_config.py") and _bare_exists("config.py")
    assert len(_refs(PATH)) > 20 and len(_refs(DOTTED)) > 10


#: Markdown files kassign writes (a sweep report's summary.md), not part of the repository.
GENERATED = {"summary.md"}
#: A Markdown file named in the docs or the code: README.md, docs/format.md, design.md ...
MARKDOWN = re.compile(r"(?<![\w/.-])((?:docs/)?[\w-]+\.md)\b")


def test_every_markdown_file_named_in_the_docs_and_the_code_exists() -> None:
    """A reader sent to design.md found no such file: every *.md named in README.md, docs/*.md or a module of
    the three packages is in the repository (docs/X.md, or README.md at the top)."""
    sources = [*DOCS, *(p for pkg in ("solver", "heuristics", "spark_runner") for p in (REPO / pkg).rglob("*.py"))]
    missing = set()
    for src in sources:
        for m in MARKDOWN.finditer(src.read_text()):
            name = m.group(1)
            if name in GENERATED:
                continue
            if not ((REPO / name).is_file() or (REPO / "docs" / name).is_file()):
                missing.add((str(src.relative_to(REPO)), name))
    assert not missing, sorted(missing)
