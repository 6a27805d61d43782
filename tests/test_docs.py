"""Every ``console`` and ``pycon`` example in README.md and docs/*.md is run and its output checked.

A block fenced as ```console holds commands (``$ ...``) each followed by the
exact stdout it prints; a line ``[exit N]`` after the output states a non-zero
exit code (stderr is then compared instead of stdout).  Commands run in order, as
in a user's shell, in a scratch folder where ``examples/`` is the repository's
(so files they write, e.g. ``-o assignment.json``, land there), with the installed
``kassign`` on PATH.

A block fenced as ```pycon is a Python session (``>>>`` prompts, each followed
by what it prints): the blocks of one document run in order in one namespace,
from the repository root, as a notebook would, and every printed line is
compared (doctest).
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```console\n(.*?)^```", re.S | re.M)
PYCON = re.compile(r"^```pycon\n(.*?)^```", re.S | re.M)


@dataclass
class Example:
    doc: str
    command: str
    expected: list[str]
    exit_code: int


def examples() -> list[Example]:
    out: list[Example] = []
    for doc in DOCS:
        for block in BLOCK.findall(doc.read_text()):
            current: Example | None = None
            for line in block.splitlines():
                if line.startswith("$ "):
                    current = Example(doc.name, line[2:], [], 0)
                    out.append(current)
                elif current is not None:
                    m = re.fullmatch(r"\[exit (\d+)\]", line.strip())
                    if m:
                        current.exit_code = int(m.group(1))
                    else:
                        current.expected.append(line.rstrip())
    return out


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder shared by the examples of a run, as a user's shell session: the commands run there, and
    ``examples``, ``docs`` and ``benchmarks`` are the repository's."""
    d = tmp_path_factory.mktemp("docs-out")
    for name in ("examples", "docs", "benchmarks"):
        (d / name).symlink_to(REPO / name)
    (d / "out").mkdir()
    return d


@pytest.mark.parametrize("ex", examples(), ids=lambda e: f"{e.doc}:{e.command[:60]}")
def test_console_example(ex: Example, out_dir: Path):
    if "../shared" in ex.command and not (REPO.parent / "shared").exists():
        pytest.skip("needs ../shared beside the repository")
    bindir = Path(sys.executable).parent  # the venv's kassign and python come first
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "120",
           "KASSIGN_OUT": str(out_dir)}
    r = subprocess.run(ex.command, shell=True, cwd=out_dir, capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == ex.exit_code, f"{ex.command}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    got = (r.stdout if ex.exit_code == 0 else r.stderr).rstrip("\n").splitlines()
    assert [g.rstrip() for g in got] == ex.expected


def test_output_paths_in_examples_have_a_default() -> None:
    """``-o $KASSIGN_OUT/x`` with the variable unset writes ``/x`` at the filesystem root: every use has a default."""
    for ex in examples():
        for m in re.finditer(r"\$\{?KASSIGN_OUT(:-[^}]+)?\}?", ex.command):
            assert m.group(1), f"{ex.doc}: {ex.command}"


def test_the_readme_shows_real_output_not_one_liners() -> None:
    """A reader sees the commands and what they print: no ``python -c`` pipes, no variable only the tests set."""
    for ex in examples():
        if ex.doc == "README.md":
            assert "python -c" not in ex.command and "KASSIGN_OUT" not in ex.command, ex.command


def test_the_readme_walks_through_one_story() -> None:
    """capture or write a group -> compare -> what to deploy and how -> plan, each step a tested command."""
    commands = [ex.command for ex in examples() if ex.doc == "README.md"]
    story = ["kassign validate examples/clickstream-group.json", "kassign compare examples/clickstream-group.json",
             "kassign assign examples/clickstream-group.json --assignor optimal -o assignment.json",
             "kassign score examples/clickstream-group.json assignment.json",
             "kassign plan examples/clickstream-group.json"]
    found = [next(i for i, c in enumerate(commands) if c.startswith(step)) for step in story]
    assert found == sorted(found)
    compare = next(ex for ex in examples() if ex.command == story[1])
    assert compare.expected[-1].startswith("Best Kafka assignor here: ")


def _sessions() -> list[Path]:
    return [d for d in DOCS if PYCON.search(d.read_text())]


def test_api_doc_has_a_session() -> None:
    assert REPO / "docs" / "api.md" in _sessions()


@pytest.mark.parametrize("doc", _sessions(), ids=lambda d: d.name)
def test_python_session(doc: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # the session reads examples/ relative to the repository root
    text = doc.read_text()
    session = "\n".join(b.rstrip("\n") + "\n" for b in PYCON.findall(text))
    line0 = text[:text.index("```pycon")].count("\n") + 1
    test = doctest.DocTestParser().get_doctest(session, {"__name__": "__docs__"}, doc.name, str(doc), line0)
    assert test.examples, f"{doc.name}: no examples"
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    result = runner.run(test, out=report.append, clear_globs=True)
    assert result.failed == 0, "".join(report)
