"""The score cache: a damaged, replaced or forged entry is a miss (the same answer as ``--no-cache``), never an
error, a hang or a wrong answer; a cache folder that cannot be used only costs a solve."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from spark_runner.cli.cache import Cache
from tests.spark_runner.cli.test_faults import CMD, EXAMPLES, REPO, _clean

ORDERS = EXAMPLES / "orders-group.json"
STREAMS = EXAMPLES / "streams-app.json"


def _score(inst: Path, asg: Path, cache: Path | str, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KASSIGN_CACHE_DIR": str(cache)}
    return subprocess.run([*CMD, "score", str(inst), str(asg), "--json", "--time-limit", "5", *extra],
                          capture_output=True, text=True, timeout=120, cwd=REPO, env=env)


@pytest.fixture(scope="module")
def assignments(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("asg")
    out = {}
    for inst, name in ((ORDERS, "range"), (STREAMS, "high-availability")):
        p = d / f"{inst.stem}.json"
        r = subprocess.run([*CMD, "assign", str(inst), "-a", name, "-o", str(p)], capture_output=True, text=True,
                           cwd=REPO, timeout=120)
        assert r.returncode == 0, r.stderr
        out[inst.stem] = p
    return out


def _damage(entry: Path, how: str) -> None:
    if how == "fifo":
        entry.unlink()
        os.mkfifo(entry)
    elif how == "directory":
        entry.unlink()
        entry.mkdir()
    elif how == "link to /dev/zero":
        entry.unlink()
        entry.symlink_to("/dev/zero")
    elif how == "deep nesting":
        entry.write_text("[" * 100_000 + "]" * 100_000)
    elif how == "wrong shape":
        entry.write_text('{"assignment": "x", "stats": []}')
    elif how == "truncated":
        entry.write_bytes(entry.read_bytes()[:40])
    elif how == "a changed number":  # still valid JSON: only the digest tells
        text = entry.read_text()
        entry.write_text(text.replace(":0", ":7", 1) if ":0" in text else text.replace(":1", ":8", 1))
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", ["fifo", "directory", "link to /dev/zero", "deep nesting", "wrong shape",
                                 "truncated", "a changed number"])
@pytest.mark.parametrize("inst", [ORDERS, STREAMS], ids=["consumer", "streams"])
def test_a_damaged_entry_is_a_miss_with_the_same_answer(tmp_path: Path, assignments: dict[str, Path], how: str,
                                                        inst: Path) -> None:
    cache = tmp_path / "cache"
    asg = assignments[inst.stem]
    first = _score(inst, asg, cache)
    _clean(first, 0)
    entries = sorted(cache.glob("*.json"))
    assert [p.name.split("-")[0] for p in entries] == ["gaps", "optimum"]
    for entry in entries:
        _damage(entry, how)
    again = _score(inst, asg, cache)
    _clean(again, 0)
    assert json.loads(again.stdout) == json.loads(first.stdout)
    third = _score(inst, asg, cache)  # the damaged entries were replaced (a directory stays: nothing is deleted)
    _clean(third, 0)
    assert json.loads(third.stdout) == json.loads(first.stdout)


@pytest.mark.parametrize("where", ["a regular file", "below a regular file", "/dev/null", "a symlink loop"])
def test_a_cache_folder_that_cannot_be_used_only_costs_a_solve(tmp_path: Path, assignments: dict[str, Path],
                                                              where: str) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    cache = {"a regular file": tmp_path / "file", "below a regular file": tmp_path / "file" / "c",
             "/dev/null": Path("/dev/null"), "a symlink loop": tmp_path / "loop"}[where]
    r = _score(ORDERS, assignments["orders-group"], cache)
    _clean(r, 0)
    assert json.loads(r.stdout)["optimal_status"] == "optimal"
    assert (tmp_path / "file").read_text() == "x"


def test_entries_are_enveloped_with_their_digest(tmp_path: Path) -> None:
    c = Cache(tmp_path)
    k = c.key("gaps", {"a": 1})
    c.put(k, {"max_load_gap": 0})
    entry = json.loads((tmp_path / f"{k}.json").read_text())
    assert entry["format"] == "kassign-cache/1" and entry["key"] == k and set(entry) == {"format", "key", "sha256",
                                                                                        "doc"}
    assert c.get(k) == {"max_load_gap": 0}
    (tmp_path / f"{k}.json").write_text(json.dumps({**entry, "doc": '{"max_load_gap":5}'}))
    assert c.get(k) is None and not (tmp_path / f"{k}.json").exists()  # removed: the next put writes it again
    other = c.key("gaps", {"a": 2})  # an intact entry copied under another key's name is not that key's
    c.put(k, {"max_load_gap": 0})
    os.replace(tmp_path / f"{k}.json", tmp_path / f"{other}.json")
    assert c.get(other) is None


def test_a_fifo_in_an_entrys_place_is_replaced_not_written_through(tmp_path: Path) -> None:
    c = Cache(tmp_path)
    k = c.key("optimum", {})
    os.mkfifo(tmp_path / f"{k}.json")
    assert c.get(k) is None  # does not block
    c.put(k, [1])  # does not block either
    assert c.get(k) == [1]


def test_no_home_and_no_variable_means_no_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    from spark_runner.cli import cache as mod

    for var in ("KASSIGN_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(mod.Path, "home", staticmethod(no_home))
    c = Cache()
    assert c.folder is None and c.get(c.key("x", 1)) is None
    c.put(c.key("x", 1), {"a": 1})  # nothing to write to, no error


# --- issue 34: an intact entry is re-checked against the instance -------------------------------------------------

def _forge(entry: Path, change: Any) -> None:
    """Rewrite the document inside ``entry`` with ``change(doc)`` and a digest that matches again."""
    from spark_runner.cli.cache import _digest

    env = json.loads(entry.read_text())
    doc = change(json.loads(env["doc"]))
    text = json.dumps(doc, separators=(",", ":"))
    entry.write_text(json.dumps({**env, "doc": text, "sha256": _digest(text)}))


def _set_stage(doc: dict[str, Any], stage: str, value: float) -> dict[str, Any]:
    k = doc["stats"]["stages"].index(stage)
    doc["stats"]["objective"][k] = doc["stats"]["bound"][k] = value
    return doc


def _scored_by(asg: Path) -> Any:
    def change(doc: dict[str, Any]) -> dict[str, Any]:  # the optimum's assignment replaced by the scored one
        return {**doc, "assignment": json.loads(asg.read_text())["assignment"]}
    return change


@pytest.mark.parametrize(("kind", "change"), [
    ("optimum", lambda d: _set_stage(d, "max_load", 1e12)),  # gap 0 for any assignment, as in the issue
    ("optimum", lambda d: _set_stage(d, "sum_sq", 0.5)),
    ("optimum", lambda d: {**d, "stats": {**d["stats"], "bound": [v + 1 for v in d["stats"]["objective"]]}}),
    ("optimum", "scored"),
    ("gaps", lambda d: {**d, "max_load_gap": -5, "sum_sq_gap": "not a number"}),
    ("gaps", lambda d: {**d, "max_load_gap": 0.0, "sum_sq_gap": 0.0}),
    ("gaps", lambda d: {**d, "excess_moves": -3}),
    ("gaps", lambda d: {**d, "excess_moves": 1e300}),
    ("gaps", lambda d: {**d, "optimal_status": "feasible"}),
    ("gaps", lambda d: {**d, "extra": 1}),
], ids=["objective", "sum-sq", "bound-above", "worse-assignment", "planted", "zero-gaps", "negative-moves",
        "huge-moves", "status", "extra-key"])
def test_a_forged_entry_is_a_miss_it_deletes(tmp_path: Path, assignments: dict[str, Path], kind: str,
                                             change: Any) -> None:
    cache = tmp_path / "cache"
    asg = assignments["orders-group"]
    first = _score(ORDERS, asg, cache)
    _clean(first, 0)
    truth = json.loads(first.stdout)
    assert truth["max_load_gap"] > 0  # range is not optimal here: a forged 0 would show
    (entry,) = cache.glob(f"{kind}-*.json")
    if kind == "optimum":  # the gaps entry must not hide the optimum's
        next(cache.glob("gaps-*.json")).unlink()
    before = entry.read_text()
    _forge(entry, _scored_by(asg) if change == "scored" else change)
    again = _score(ORDERS, asg, cache)
    _clean(again, 0)
    assert json.loads(again.stdout) == truth
    # the miss deleted the forged entry and the solve wrote the true one again
    def doc(text: str) -> Any:
        d = json.loads(json.loads(text)["doc"])
        keep = ("status", "objective", "bound", "stages")
        return {**d, "stats": {k: d["stats"].get(k) for k in keep}} if "stats" in d else d

    assert doc(entry.read_text()) == doc(before)


def test_an_entry_too_large_to_decode_is_a_miss_it_deletes(tmp_path: Path, assignments: dict[str, Path]) -> None:
    cache = tmp_path / "cache"
    asg = assignments["orders-group"]
    first = _score(ORDERS, asg, cache)
    _clean(first, 0)
    (entry,) = cache.glob("gaps-*.json")
    env = json.loads(entry.read_text())
    doc = json.loads(env["doc"])
    doc["padding"] = [0] * 12_000_000  # 24 MB of JSON: about 300 MB decoded, over a 256M limit
    text = json.dumps(doc, separators=(",", ":"))
    from spark_runner.cli.cache import _digest

    entry.write_text(json.dumps({**env, "doc": text, "sha256": _digest(text)}))
    env_vars = {**os.environ, "KASSIGN_CACHE_DIR": str(cache), "KASSIGN_MEMORY_LIMIT": "256M"}
    for _ in range(2):  # the miss deletes it: the next score does not meet it again
        r = subprocess.run([*CMD, "score", str(ORDERS), str(asg), "--json", "--time-limit", "5"], capture_output=True,
                           text=True, timeout=120, cwd=REPO, env=env_vars)
        _clean(r, 0)
        assert json.loads(r.stdout) == json.loads(first.stdout)
    assert entry.stat().st_size < 1 << 20
