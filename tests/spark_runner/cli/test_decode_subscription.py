"""``kassign decode-subscription``: --fields on Kafka's own bytes, hostile bytes and JSON side files, unknown lags.

Runs the console entry point in-process (``main`` with ``sys.argv``), so that the
exit code and stderr are exactly what a user sees.
"""

from __future__ import annotations

import base64
import json
import random
import struct
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.solver.streams.test_subscription_fields import mutate, records

PID = "12345678-9abc-def0-1234-56789abcdef0"
REPO = Path(__file__).resolve().parents[3]


def _run(main: Callable[[], None], argv: list[str]) -> int:
    old = sys.argv
    sys.argv = ["kassign", *argv]
    try:
        main()
    except SystemExit as e:
        return int(e.code or 0)
    finally:
        sys.argv = old
    return 0


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from spark_runner.cli.app import main

    code = _run(main, argv)
    out, err = capsys.readouterr()
    return code, out, err


def _v7(pid: str, sums: list[tuple[int, int, int]]) -> bytes:
    body = b"".join(struct.pack(">iiiq", s, 1, p, off) for s, p, off in sums)
    return (struct.pack(">ii", 7, 7) + uuid.UUID(pid).bytes + struct.pack(">i", 0)
            + struct.pack(">i", len(sums)) + body)


def test_cli_prints_the_fields_of_every_record(tmp_path: Path) -> None:
    from spark_runner.cli.app import main

    recs = records()
    for kind in ("streams", "consumer"):
        mine = [r for r in recs if r["kind"] == kind]
        files = []
        for r in mine:
            f = tmp_path / f"{r['id']}.{'b64' if len(files) % 2 else 'bin'}"  # both encodings
            data = base64.b64decode(r["bytes_b64"])
            f.write_bytes(r["bytes_b64"].encode() if f.suffix == ".b64" else data)
            files.append(str(f))
        out = tmp_path / f"{kind}.jsonl"
        code = _run(main, ["decode-subscription", "--fields", "--kind", kind, *files, "-o", str(out)])
        assert code == 0
        lines = out.read_text(encoding="utf-8").splitlines()
        assert [json.loads(x) for x in lines] == [r["decoded"] for r in mine]
        assert [list(json.loads(x)) for x in lines] == [list(r["decoded"]) for r in mine]


def test_cli_never_exits_1_on_mutated_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from spark_runner.cli.app import main

    rng = random.Random(7)
    recs = records()
    codes: dict[int, int] = {}
    for n in range(150):
        r = recs[n]
        f = tmp_path / f"m{n}.bin"
        f.write_bytes(mutate(rng, base64.b64decode(r["bytes_b64"])))
        args = ["decode-subscription", "--encoding", "binary", str(f)]
        for extra in (["--fields", "--kind", r["kind"]], ["--kind", r["kind"]]):
            code = _run(main, [*args, *extra])
            err = capsys.readouterr().err
            codes[code] = codes.get(code, 0) + 1
            assert code in (0, 65), err
            assert "Traceback" not in err and "internal error" not in err
            if code == 65:
                assert f"{f}: " in err and ("byte " in err or "user data" in err or "named topolog" in err), err
    print(f"\nexit codes over 300 runs: {codes}")
    assert codes.get(65, 0) > 0


def test_unknown_lags_warned_and_side_files_validated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sub = tmp_path / "a.bin"
    sub.write_bytes(_v7(PID, [(0, 0, -2), (0, 1, 500)]))
    code, out, err = _cli(["decode-subscription", str(sub)], capsys)
    assert code == 0, err
    assert json.loads(out)["clients"][0]["lags"] == {"0_1": None}  # state on disk, lag unknown
    assert "1 lag(s) unknown (no --end-offsets given)" in err
    (tmp_path / "ends.json").write_text(json.dumps({"0_1": 800}))
    code, out, err = _cli(["decode-subscription", str(sub), "--end-offsets", str(tmp_path / "ends.json")], capsys)
    assert code == 0 and json.loads(out)["clients"][0]["lags"] == {"0_1": 300} and "unknown" not in err
    for name, content, where in [
        ("ends-abc.json", {"0_1": "abc"}, "0_1: end offset sum must be an integer 0..2^63-1, got 'abc'"),
        ("ends-null.json", {"0_1": None}, "0_1: end offset sum must be an integer 0..2^63-1, got None"),
        ("ends-neg.json", {"0_1": -5}, "0_1: end offset sum must be an integer"),
        ("ends-key.json", {"x": 5}, "x: task id 'x' is not"),
        ("ends-list.json", [1], "expected an object"),
    ]:
        (tmp_path / name).write_text(json.dumps(content))
        code, _, err = _cli(["decode-subscription", str(sub), "--end-offsets", str(tmp_path / name)], capsys)
        assert code == 65, err
        assert f"{tmp_path / name}: {where}" in err, err
    for name, content, where in [
        ("tasks-ints.json", {"tasks": [1, 2]}, "tasks[0]: "),
        ("tasks-list.json", [{"id": "0_0"}, {"id": "zz"}], "[1].id: "),
        ("tasks-subs.json", {"subtopologies": [{"id": -1, "source_topics": {}}]}, "subtopologies[0].id: "),
        ("tasks-none.json", {"other": 1}, "expected 'tasks' or 'subtopologies'"),
    ]:
        (tmp_path / name).write_text(json.dumps(content))
        code, _, err = _cli(["decode-subscription", str(sub), "--tasks", str(tmp_path / name)], capsys)
        assert code == 65, err
        assert f"{tmp_path / name}: {where}" in err, err


def test_examples_decode(capsys: pytest.CaptureFixture[str]) -> None:
    """The sample bytes in examples/subscriptions/ (docs/cli.md): both clients, lags from the end offsets."""
    ex = REPO / "examples" / "subscriptions"
    files = [str(ex / n) for n in ("host-a-thread-1.bin", "host-a-thread-2.b64", "host-b-thread-1.bin")]
    code, out, err = _cli(["decode-subscription", *files, "--end-offsets", str(ex / "end-offsets.json"),
                           "--num-standby-replicas", "1"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert [(c["id"], c["capacity"], c["active"], c["lags"]) for c in doc["clients"]] == [
        ("host-a:8080", 2, ["0_0", "0_1", "1_0"], {"0_2": 10000}),
        ("host-b:8080", 1, ["0_2", "1_1"], {"0_0": 12000})]
    code, out, err = _cli(["decode-subscription", "--fields", "--kind", "consumer",
                           str(ex / "host-b-thread-1.consumer.bin")], capsys)
    assert code == 0, err
    fields = json.loads(out)
    assert fields["owned_partitions"] == {"orders": [2], "payments": [1]} and fields["rack"] == "eu-west-1b"
    streams = (ex / "host-b-thread-1.bin").read_bytes()
    assert base64.b64decode(fields["user_data_b64"]) == streams
    code, out, _ = _cli(["decode-subscription", "--kind", "consumer", str(ex / "host-b-thread-1.consumer.bin")],
                        capsys)
    assert code == 0 and json.loads(out)["clients"][0]["id"] == "host-b:8080"
