"""Hostile input and faults, round three (issue 34): KIP-1071 members, the score cache, sweeps that mix grids and
the environment users really have -- each case through the console script: the exit code and what it prints."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.spark_runner.cli.test_faults import CMD, REPO, _clean, _peak

P1, P2 = "00000000-0000-0000-0000-000000000001", "00000000-0000-0000-0000-000000000002"


def _kassign(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **(env or {})}
    return subprocess.run([*CMD, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, env=full)


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(json.dumps(doc))
    return path


def _mixed(member_id: str = "m2") -> dict[str, Any]:
    """A KIP-1071 group: client ``a`` lists two members, client ``b`` (capacity 2) lists none."""
    return {"format": "kassign/v1", "protocol": "streams", "tasks": [{"id": f"0_{p}"} for p in range(5)],
            "clients": [{"id": "a", "process_id": P1, "members": [{"id": "m1", "active": ["0_0"]},
                                                                   {"id": member_id}]},
                        {"id": "b", "process_id": P2, "capacity": 2, "active": ["0_1"]}],
            "config": {"num_standby_replicas": 0}}


# --- 4. KIP-1071 groups mixing clients with and without members -------------------------------------------------

def test_mixed_members_answers_score_valid_and_name_only_real_members(tmp_path: Path) -> None:
    inst = _write(tmp_path / "in.json", _mixed())
    for assignor in ("optimal-streams", "streams-server-sticky"):
        out = tmp_path / f"{assignor}.json"
        r = _kassign("assign", str(inst), "-a", assignor, "-o", str(out))
        _clean(r, 0)
        doc = json.loads(out.read_text())
        # the members of the answer are the group's members: b's stream threads are not invented members
        assert sorted(doc["members"]) == ["m1", "m2"], assignor
        held = [t for m in doc["members"].values() for t in m["active"]]
        assert sorted(held) == sorted(doc["assignment"]["a"]["active"]), assignor
        r = _kassign("score", str(inst), str(out), "--format", "json")
        _clean(r, 0)
        assert json.loads(r.stdout)["valid"] is True, (assignor, r.stdout)
    r = _kassign("compare", str(inst), "--assignors", "streams-server-sticky")
    _clean(r, 0)
    assert "invalid" not in r.stdout, r.stdout


def test_a_member_named_like_a_synthetic_member_is_refused(tmp_path: Path) -> None:
    inst = _write(tmp_path / "in.json", _mixed("b#1"))
    r = _kassign("validate", str(inst))
    _clean(r, 65)
    assert (f"{inst}: clients[0].members[1].id: member id 'b#1' is the name of stream thread 1 of client 'b'"
            in r.stdout + r.stderr)
    # not a thread of b (capacity 2), or not a canonical number: an ordinary member id
    for fine in ("b#2", "b#01", "c#0"):
        _clean(_kassign("validate", str(_write(tmp_path / "ok.json", _mixed(fine)))), 0)


# --- 1. the members' sharing step of optimal-streams -------------------------------------------------------------

def _wide_group(processes: int, members: int, tasks: int) -> dict[str, Any]:
    return {"format": "kassign/v1", "protocol": "streams",
            "tasks": [{"id": f"0_{p}"} for p in range(tasks)],
            "clients": [{"id": f"c{c}", "process_id": f"00000000-0000-0000-0000-{c:012d}",
                         "members": [{"id": f"c{c}-m{k}"} for k in range(members)]} for c in range(processes)],
            "config": {"num_standby_replicas": 0}}


def test_sharing_among_many_members_is_small_and_quick(tmp_path: Path) -> None:
    # 1,000 members x 5,000 tasks was a 5-million-arc flow: 1.5 GB and up to 18 s past --time-limit 1
    inst = _write(tmp_path / "wide.json", _wide_group(1, 1000, 5000))
    t0 = time.monotonic()
    out = tmp_path / "out.json"
    r, peak = _peak(["assign", str(inst), "-a", "optimal-streams", "--time-limit", "1", "-o", str(out)],
                    env={**os.environ, "KASSIGN_MEMORY_LIMIT": "1G"})
    _clean(r, 0)
    assert time.monotonic() - t0 < 30
    assert peak < 400 << 10, f"peak {peak:,} KiB"  # measured: 90 MB (the arc per task and member: 1.5 GB)
    doc = json.loads(out.read_text())
    counts = sorted(len(m["active"]) for m in doc["members"].values())
    assert len(counts) == 1000 and counts[0] == counts[-1] == 5  # 5,000 tasks over 1,000 members: 5 each


def test_too_many_members_are_refused_up_front(tmp_path: Path) -> None:
    # 10 processes x 50,000 members: refused before anything is built (exit 65), not a hang that ignores SIGTERM
    # (reading the 500,000 members is what takes the time: the refusal comes before any solver or flow runs)
    inst = _write(tmp_path / "many.json", _wide_group(10, 50_000, 20))
    r = _kassign("assign", str(inst), "-a", "optimal-streams")
    _clean(r, 65)
    assert "500,000 group members" in r.stderr and "at most 100,000" in r.stderr, r.stderr


# --- 6. output encodings and outputs that are inputs --------------------------------------------------------------

def _accented(tmp_path: Path) -> Path:
    return _write(tmp_path / "in.json", {"format": "kassign/v1", "topics": {"commandes-é": 3},
                                         "members": [{"id": "consommateur-ü", "topics": ["commandes-é"]}]})


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"}, {"PYTHONIOENCODING": "latin-1"},
                                 {"PYTHONIOENCODING": "utf-16"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}],
                         ids=["ascii", "latin-1", "utf-16", "C-locale"])
def test_output_is_utf8_whatever_the_locale(tmp_path: Path, env: dict[str, str]) -> None:
    inst = _accented(tmp_path)
    full = {**os.environ, **env}
    r = subprocess.run([*CMD, "assign", str(inst), "-a", "range"], capture_output=True, cwd=REPO, env=full,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout.decode("utf-8"))  # strict: not UTF-8 (or escaped) fails here
    assert doc["assignment"] == {"consommateur-ü": {"commandes-é": [0, 1, 2]}}
    r = subprocess.run([*CMD, "validate", str(tmp_path / "missing-é.json")], capture_output=True, cwd=REPO, env=full,
                       timeout=300)
    assert r.returncode == 66 and "missing-é.json" in r.stderr.decode("utf-8"), r.stderr


@pytest.mark.parametrize("how", ["same name", "symlink", "hard link", "other spelling"])
def test_an_output_that_is_an_input_is_exit_2(tmp_path: Path, how: str) -> None:
    inst = _accented(tmp_path)
    before = inst.read_bytes()
    out = {"same name": inst, "symlink": tmp_path / "link.json", "hard link": tmp_path / "hard.json",
           "other spelling": tmp_path / "." / "sub" / ".." / "in.json"}[how]
    (tmp_path / "sub").mkdir()
    if how == "symlink":
        out.symlink_to(inst)
    elif how == "hard link":
        os.link(inst, out)
    r = _kassign("assign", str(inst), "-a", "range", "-o", str(out))
    _clean(r, 2)
    assert f"is the input {inst}" in r.stderr, r.stderr
    assert inst.read_bytes() == before


def test_decode_subscription_onto_its_own_bytes_is_exit_2(tmp_path: Path) -> None:
    src = tmp_path / "thread.bin"
    src.write_bytes((REPO / "examples" / "subscriptions" / "host-a-thread-1.bin").read_bytes())
    before = src.read_bytes()
    r = _kassign("decode-subscription", str(src), "-o", str(src))
    _clean(r, 2)
    assert src.read_bytes() == before


# --- 8. the environment users really have --------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "env"), [
    (["--kafka-version", "٤.٤"], {}), (["--kafka-version", "４.４.０"], {}),
    ([], {"KASSIGN_MEMORY_LIMIT": "５１２M"}), ([], {"KASSIGN_MEMORY_LIMIT": "٥١٢M"}),
])
def test_digits_of_other_scripts_are_not_numbers(args: list[str], env: dict[str, str]) -> None:
    r = _kassign("assign", str(REPO / "examples" / "orders-group.json"), "-a", "range", *args, env=env)
    _clean(r, 2)


def test_cache_dir_follows_the_xdg_spec_and_never_makes_up_a_home(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    from spark_runner.cli.cache import default_dir

    monkeypatch.delenv("KASSIGN_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # invalid per the spec: ignored
    assert default_dir() == tmp_path / ".cache" / "kassign"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_dir() == tmp_path / "xdg" / "kassign"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "/nonexistent")
    assert default_dir() is None


def test_score_with_a_home_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "nonexistent"
    env = {"HOME": str(home), "KASSIGN_CACHE_DIR": "", "XDG_CACHE_HOME": ""}
    asg = tmp_path / "a.json"
    _clean(_kassign("assign", str(REPO / "examples" / "orders-group.json"), "-a", "range", "-o", str(asg)), 0)
    r = _kassign("score", str(REPO / "examples" / "orders-group.json"), str(asg), "--json", "--time-limit", "5",
                 env=env)
    _clean(r, 0)
    assert not home.exists()


def test_a_bad_hypothesis_profile_does_not_break_pytest() -> None:
    import sys

    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "tests/test_architecture.py"], capture_output=True, text=True, cwd=REPO, timeout=300,
                       env={**os.environ, "KASSIGN_HYPOTHESIS": "junk"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def test_standby_task_order_reads_task_ids_as_kafka_task_ids(tmp_path: Path) -> None:
    doc: dict[str, Any] = {
        "format": "kassign/v1", "protocol": "streams",
        "tasks": [{"id": "0_0", "stateful": True}, {"id": "0_1", "stateful": True}],
        "clients": [{"id": "a", "process_id": P1, "capacity": 1}, {"id": "b", "process_id": P2, "capacity": 1}],
        "standby_task_order": ["00_01", "0_0"], "config": {"num_standby_replicas": 1}}
    _clean(_kassign("validate", str(_write(tmp_path / "ok.json", doc))), 0)
    out = tmp_path / "out.json"
    _clean(_kassign("assign", str(tmp_path / "ok.json"), "-a", "kip924-sticky", "-o", str(out)), 0)
    doc["standby_task_order"] = ["00_00", "0_0", "0_1"]
    r = _kassign("validate", str(_write(tmp_path / "twice.json", doc)))
    _clean(r, 65)
    assert ("standby_task_order[1]: task '0_0' listed twice (also standby_task_order[0], the same TaskId as '00_00')"
            in r.stderr)


# --- 8. capture's exit codes ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("error", ["KafkaConnectionError", "NodeNotReadyError", "RequestTimedOutError",
                                   "KafkaTimeoutError"])
def test_a_broker_that_stops_answering_is_exit_75(error: str) -> None:
    import kafka.errors as errors

    from spark_runner.live.broker import Broker, CaptureTimeout

    b = object.__new__(Broker)
    b.bootstrap = "127.0.0.1:9092"

    def fail() -> None:
        raise getattr(errors, error)()

    with pytest.raises(CaptureTimeout) as e:
        b._call("DescribeGroups", fail)
    assert e.value.exit_code == 75


@pytest.mark.parametrize(("members", "problem"), [
    ([{"id": "c1", "topics": ["t"]}, {"id": "c1", "topics": ["t"]}], "duplicate member id"),
    ([{"id": "c1", "topics": ["t"], "owned": {"t": [-1]}}], "members[0].owned.t[0]"),
])
def test_broker_data_an_instance_cannot_hold_is_exit_69(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str],
                                                        members: list[dict[str, Any]], problem: str) -> None:
    import spark_runner.live.capture as live_capture
    from tests.spark_runner.cli.test_fuzz import _run

    doc = {"format": "kassign/v1", "topics": {"t": 2}, "members": members,
           "source": {"assignor": "range"}}
    monkeypatch.setattr(live_capture, "capture", lambda *a, **k: doc)
    code, err = _run(["capture", "--bootstrap-server", "127.0.0.1:9092", "--group", "g"], capsys)
    assert code == 69, err
    assert "group 'g' cannot be captured: the broker reports what an instance cannot hold" in err
    assert problem in err and "Traceback" not in err


def test_plan_on_an_old_release_leaves_kafkas_column_out_as_compare_does(tmp_path: Path) -> None:
    inst = _write(tmp_path / "old.json", {"format": "kassign/v1", "kafka_version": "3.0", "topics": {"t": 4},
                                          "members": [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}]})
    r = _kassign("plan", str(inst), "--capacity", "10", "--json")
    _clean(r, 0)
    assert "note: assignor 'cooperative-sticky' is not in Kafka 3.0.2" in " ".join(r.stderr.split())
    rows = json.loads(r.stdout)["rows"]
    assert rows and all(row["kafka_status"] == "unavailable" for row in rows), rows[0]
    # a release asked for by the flag stays a usage error (docs/cli.md: an assignor the release does not have)
    _clean(_kassign("plan", str(inst), "--capacity", "10", "--kafka-version", "3.0"), 2)
