"""``make demo`` output: pip's and setuptools' chatter hidden, ``report:`` once, the master as given.

A fake ``python3`` creates a fake venv whose ``pip`` prints a banner and whose ``kassign`` records its
arguments, so the Makefile's own behaviour is tested without installing anything.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FAKE_PYTHON = """#!/bin/sh
# fake "python3 -m venv DIR": a pip that prints setuptools' banner, a kassign that records its arguments
dir="$3"
mkdir -p "$dir/bin"
cat > "$dir/bin/pip" <<'EOS'
#!/bin/sh
echo "$*" >> "$(dirname "$0")/../pip.args"
echo "Editable install banner: setuptools ... (this is the noise make demo must not show)"
echo "banner on stderr" >&2
exit ${FAKE_PIP_EXIT:-0}
EOS
cat > "$dir/bin/kassign" <<'EOS'
#!/bin/sh
printf '%s\\n' "$@" > "$(dirname "$0")/../kassign.args"
echo "report: out/sweep-small/report/index.html" >&2
EOS
chmod +x "$dir/bin/pip" "$dir/bin/kassign"
"""


def _make(tmp_path: Path, *env: tuple[str, str], target: str = "demo") -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "python3"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    venv = tmp_path / "venv"
    return subprocess.run(["make", "-s", "-C", str(REPO), target, f"PYTHON={fake}", f"VENV={venv}"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, **dict(env)})


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_demo_is_quiet_says_report_once_and_passes_local2(tmp_path: Path) -> None:
    r = _make(tmp_path)
    assert r.returncode == 0, r.stderr
    out = r.stdout + r.stderr
    assert "banner" not in out.lower()
    assert out.count("report:") == 1
    args = (tmp_path / "venv" / "kassign.args").read_text().split("\n")
    assert args[:6] == ["sweep", "examples/sweep-small.yaml", "--out", "out/sweep-small", "--master", "local[2]"]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_a_failed_install_shows_the_log(tmp_path: Path) -> None:
    r = _make(tmp_path, ("FAKE_PIP_EXIT", "1"))
    assert r.returncode != 0 and "banner" in (r.stdout + r.stderr).lower()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("target", ["demo", "install"])
def test_demo_and_install_get_runtime_dependencies_only(tmp_path: Path, target: str) -> None:
    """The test tools (pytest, mypy, ruff, the test broker: the `test` extra) come with `make test` only."""
    r = _make(tmp_path, target=target)
    assert r.returncode == 0, r.stderr
    installs = [a for a in (tmp_path / "venv" / "pip.args").read_text().splitlines() if a.startswith("install")]
    assert any(a.endswith("-e .") for a in installs), installs
    assert not [a for a in installs if "[test]" in a], installs
