"""``kassign serve`` as a client sees it: a real service subprocess on 127.0.0.1, answers checked against the CLI."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_runner.serve.request import REQUEST_KEYS, Weights, apply_weights
from spark_runner.serve.server import PATHS
from tests.spark_runner.serve.serve_harness import Serve, kassign_assign

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow

#: What may differ between two runs of the same solve: wall-clock figures.
CLOCK = ("seconds", "stage_seconds", "stage_done_s")


def unit_group(seed: int, partitions: int = 40, members: int = 7) -> dict[str, Any]:
    """A random consumer group without weights: uneven subscriptions, some partitions owned."""
    rng = random.Random(seed)
    topics = {f"t{i}": rng.randint(1, partitions // 3) for i in range(4)}
    names = sorted(topics)
    mems = []
    for m in range(members):
        subs = sorted(rng.sample(names, rng.randint(1, len(names))))
        owned = {t: sorted(rng.sample(range(topics[t]), rng.randint(0, topics[t]) // members)) for t in subs}
        mems.append({"id": f"m{m}", "topics": subs, "generation": 1})
        mems[-1]["owned"] = {t: ps for t, ps in owned.items() if ps}
    # one owner per partition: the first member that claims it keeps it
    seen: set[tuple[str, int]] = set()
    for mem in mems:
        for t, ps in list(mem["owned"].items()):
            keep = [p for p in ps if (t, p) not in seen]
            seen.update((t, p) for p in keep)
            if keep:
                mem["owned"][t] = keep
            else:
                del mem["owned"][t]
    return {"format": "kassign/v1", "name": f"unit-{seed}", "topics": topics, "members": mems}


def _same(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Two result documents agree on everything but the clock."""
    strip = {k: v for k, v in a["stats"].items() if k not in CLOCK}
    assert strip == {k: v for k, v in b["stats"].items() if k not in CLOCK}
    assert {k: v for k, v in a.items() if k not in ("stats", "service")} == \
        {k: v for k, v in b.items() if k not in ("stats", "service")}


@pytest.fixture(scope="module")
def weights_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("serve") / "weights.json"
    path.write_text(json.dumps({"format": "kassign-weights/v1", "unit": "records",
                                "topics": {"t0": [900, 10, 10, 5], "t1": {"1": 400, "0": 3}}}))
    return path


@pytest.fixture(scope="module")
def service(weights_file: Path) -> Iterator[Serve]:
    s = Serve("--workers", "2", "--weights-file", str(weights_file))
    try:
        yield s
    finally:
        code = s.stop()
        assert code == 0, s.stderr
        assert any("stopped (SIGTERM)" in line for line in s.stderr)


def test_health(service: Serve) -> None:
    assert service.request("GET", "/healthz")[:2] == (200, {"status": "ok"})


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_unit_groups_equal_the_cli_and_are_proven(service: Serve, seed: int, tmp_path: Path) -> None:
    inst = unit_group(seed)
    path = tmp_path / "group.json"
    path.write_text(json.dumps(inst))
    code, doc = service.assign({"instance": inst})
    assert code == 200, doc
    assert doc["stats"]["status"] == "optimal"
    assert doc["service"]["fallback"] is False and doc["service"]["reason"] is None
    assert doc["service"]["deadline_ms"] == 5000 and 0 <= doc["service"]["elapsed_ms"] <= 5000
    _same(doc, kassign_assign(path, "--assignor", "optimal"))


def test_weighted_group_matches_the_cli(service: Serve) -> None:
    path = REPO / "examples" / "orders-group.json"
    code, doc = service.assign({"instance": json.loads(path.read_text()), "deadline_ms": 20_000})
    assert code == 200, doc
    cli = kassign_assign(path, "--assignor", "optimal")
    assert doc["stats"]["status"] == cli["stats"]["status"] == "optimal"
    assert doc["stats"]["objective"] == cli["stats"]["objective"]  # the proven optimum: the same values


def test_balance_tolerance_is_the_clis(service: Serve) -> None:
    path = REPO / "examples" / "orders-group.json"
    code, doc = service.assign({"instance": json.loads(path.read_text()), "deadline_ms": 20_000,
                                "balance_tolerance": 0.5})
    assert code == 200, doc
    cli = kassign_assign(path, "--assignor", "optimal", "--balance-tolerance", "0.5")
    assert doc["stats"]["objective"] == cli["stats"]["objective"]


def test_streams_defaults_to_optimal_streams(service: Serve) -> None:
    path = REPO / "examples" / "streams-app.json"
    code, doc = service.assign({"instance": json.loads(path.read_text())})
    assert code == 200, doc
    assert doc["assignor"] == "optimal-streams" and doc["service"]["fallback"] is False
    assert set(next(iter(doc["assignment"].values()))) == {"active", "standby", "warmup"}
    _same(doc, kassign_assign(path, "--assignor", "optimal-streams"))


def test_kafka_assignor_wins_when_the_optimum_is_worse(service: Serve, tmp_path: Path) -> None:
    # with a tolerance of 1000 the optimum keeps every partition where it is (no move), max load 12;
    # uniform moves 6 for max load 6: better on max load, so the service answers uniform's
    inst = {"format": "kassign/v1", "topics": {"T": 12},
            "members": [{"id": "a", "topics": ["T"], "owned": {"T": list(range(12))}, "generation": 1},
                        {"id": "b", "topics": ["T"]}]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(inst))
    code, doc = service.assign({"instance": inst, "balance_tolerance": 1000})
    assert code == 200, doc
    assert doc["service"]["fallback"] is True
    assert "uniform is better" in doc["service"]["reason"]
    _same(doc, kassign_assign(path, "--assignor", "uniform"))
    strict = service.assign({"instance": inst})[1]
    assert strict["service"]["fallback"] is False and strict["stats"]["objective"][0] == 6


def test_a_split_join_never_wins_on_load(service: Serve) -> None:
    # uniform's busiest member holds 7 here, the optimum's 8, but uniform splits a co-partitioned unit
    # (a stream-stream join would read wrong data): the optimum is the answer
    path = REPO / "examples" / "join-d-leaves.json"
    code, doc = service.assign({"instance": json.loads(path.read_text())})
    assert code == 200, doc
    assert doc["service"]["fallback"] is False and doc["assignor"] == "optimal"
    _same(doc, kassign_assign(path, "--assignor", "optimal"))


def test_deadline_is_kept_on_a_large_weighted_group(service: Serve) -> None:
    rng = random.Random(7)
    topics = {f"t{i}": {"partitions": 500, "weights": [rng.randint(1, 10_000) for _ in range(500)]}
              for i in range(8)}
    members = [{"id": f"m{i:02d}", "topics": sorted(topics)} for i in range(37)]
    inst = {"format": "kassign/v1", "topics": topics, "members": members}
    start = time.monotonic()
    code, doc = service.assign({"instance": inst, "deadline_ms": 1500})
    wall = time.monotonic() - start
    assert code == 200, doc
    assert doc["service"]["elapsed_ms"] <= 1500 + 50  # the service's own clock: the answer left by the deadline
    assert wall < 1.5 + 3.0  # and the client got it (sending 4,000 weights takes its share on a loaded machine)
    assert doc["stats"]["status"] in ("optimal", "feasible", "heuristic")
    assert len([p for m in doc["assignment"].values() for ps in m.values() for p in ps]) == 4000


def test_weights_file_source(service: Serve, tmp_path: Path, weights_file: Path) -> None:
    inst = unit_group(11)
    code, doc = service.assign({"instance": inst, "weights": {"source": "file"}, "deadline_ms": 20_000})
    assert code == 200, doc
    assert doc["service"]["weights"] == "file"
    file_doc = json.loads(weights_file.read_text())
    weighted = apply_weights(inst, Weights(file_doc["unit"], {t: dict(enumerate(v)) if isinstance(v, list) else
                                                              {int(k): float(w) for k, w in v.items()}
                                                              for t, v in file_doc["topics"].items()}))
    assert weighted["units"] == {"weights": "records"}
    path = tmp_path / "weighted.json"
    path.write_text(json.dumps(weighted))
    cli = kassign_assign(path, "--assignor", "optimal")
    assert doc["stats"]["status"] == cli["stats"]["status"] == "optimal"
    assert doc["stats"]["objective"] == cli["stats"]["objective"]


def test_weights_sources_refused_with_their_field(service: Serve) -> None:
    inst = unit_group(1)
    code, doc = service.assign({"instance": inst, "weights": {"source": "admin"}})
    assert (code, doc["path"]) == (422, "weights.source") and "--bootstrap-server" in doc["error"]
    code, doc = service.assign({"instance": inst, "weights": {"source": "elsewhere"}})
    assert (code, doc["path"]) == (422, "weights.source")


def test_metrics_count_requests(service: Serve) -> None:
    service.assign({"instance": unit_group(5)})
    service.assign({"instance": {"topics": -1}})
    code, text, headers = service.request("GET", "/metrics")
    assert code == 200 and headers["content-type"].startswith("text/plain")
    values = dict(re.findall(r"^(\w+(?:\{[^}]*\})?) (\S+)$", text, re.M))
    assert int(values['kassign_requests_total{code="200"}']) >= 1
    assert int(values['kassign_requests_total{code="422"}']) >= 1
    assert int(values["kassign_proven_total"]) >= 1
    assert int(values["kassign_proven_total"]) <= int(values["kassign_assignments_total"])
    assert values["kassign_inflight"] == "0"
    assert int(values['kassign_request_seconds_bucket{le="+Inf"}']) == int(values["kassign_request_seconds_count"])
    for name in ("kassign_fallbacks_total", "kassign_request_seconds_sum"):
        assert name in values


def test_openapi_lists_every_path(service: Serve) -> None:
    code, doc, _ = service.request("GET", "/openapi.json")
    assert code == 200
    try:
        from openapi_spec_validator import validate
    except ImportError:  # structure checks
        assert doc["openapi"].startswith("3.") and doc["info"]["title"]
        for path, ops in doc["paths"].items():
            for op in ops.values():
                assert op["responses"], (path, op)
                for resp in op["responses"].values():
                    for media in resp.get("content", {}).values():
                        ref = media["schema"].get("$ref")
                        if ref:
                            assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"]
    else:
        validate(doc)
    assert sorted(doc["paths"]) == sorted(PATHS)
    assert set(doc["components"]["schemas"]["Request"]["properties"]) == set(REQUEST_KEYS)
    for path in PATHS:  # every listed path is answered
        method = "post" if "post" in doc["paths"][path] else "get"
        code = service.request(method.upper(), path, b"{}" if method == "post" else None)[0]
        assert code != 404


def test_answers_match_the_openapi_schema(service: Serve) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    _, api, _ = service.request("GET", "/openapi.json")
    schemas = api["components"]["schemas"]
    code, doc = service.assign({"instance": unit_group(2)})
    assert code == 200
    jsonschema.validate(doc, {**schemas["Answer"], "components": api["components"]})
    code, err = service.assign({"instance": unit_group(2), "deadline_ms": 1})
    assert (code, err["path"]) == (422, "deadline_ms")
    jsonschema.validate(err, schemas["Error"])


def test_the_documented_example(service: Serve) -> None:
    text = (REPO / "docs" / "serve.md").read_text()
    blocks = {m.group(1): m.group(2) for m in
              re.finditer(r"<!-- serve-example: (\w+) -->\n```json\n(.*?)```", text, re.S)}
    code, doc = service.assign(json.loads(blocks["request"]))
    assert code == 200, doc
    shown = json.loads(blocks["answer"])
    assert doc["service"]["elapsed_ms"] <= doc["service"]["deadline_ms"]
    doc["service"]["elapsed_ms"] = shown["service"]["elapsed_ms"]
    _same(doc, shown)
    assert doc["service"] == shown["service"]


def test_weights_file_is_read_again_when_it_changes(service: Serve, weights_file: Path) -> None:
    inst = {"format": "kassign/v1", "topics": {"t0": 4},
            "members": [{"id": "a", "topics": ["t0"]}, {"id": "b", "topics": ["t0"]}]}
    request = {"instance": inst, "weights": {"source": "file"}}
    before = weights_file.read_text()
    try:
        assert service.assign(request)[1]["stats"]["objective"][0] == 900  # [900, 10, 10, 5]: 900 alone
        weights_file.write_text(json.dumps({"format": "kassign-weights/v1", "unit": "records",
                                            "topics": {"t0": [1, 1, 1, 1]}}))
        assert service.assign(request)[1]["stats"]["objective"][0] == 2
        weights_file.write_text("{not json")  # a broken rewrite keeps the last good weights, and says why
        assert service.assign(request)[1]["stats"]["objective"][0] == 2
        assert any("keeping the previous weights" in line for line in service.stderr)
    finally:
        weights_file.write_text(before)


@pytest.mark.parametrize(("content", "code", "words"), [
    (None, 66, "no such file"),
    ('{"format": "kassign-weights/v1", "unit": "records", "topics": {"T": [1, -2]}}', 65, "topics.T[1]"),
    ('{"format": "kassign-weights/v1", "topics": {}}', 65, "unit"),
    ("[1, 2", 65, "malformed"),
])
def test_a_bad_weights_file_stops_the_start(tmp_path: Path, content: str | None, code: int, words: str) -> None:
    import subprocess

    from tests.spark_runner.serve.serve_harness import KASSIGN

    path = tmp_path / "w.json"
    if content is not None:
        path.write_text(content)
    out = subprocess.run([KASSIGN, "serve", "--port", "0", "--weights-file", str(path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == code, out.stderr
    assert str(path) in out.stderr and words in out.stderr and "Traceback" not in out.stderr


def test_a_port_in_use_is_a_usage_error() -> None:
    import socket
    import subprocess

    from tests.spark_runner.serve.serve_harness import KASSIGN

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = subprocess.run([KASSIGN, "serve", "--port", str(port), "--workers", "1"], capture_output=True,
                             text=True, timeout=120)
    assert out.returncode == 2
    assert out.stderr == f"error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
