"""``lag-based``: the source's own test cases (ported as data), and the rule against a direct oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from heuristics._java import java_string_key
from heuristics.lag_based import lag_based, partition_lag
from solver import registry
from solver.io import parse_instance
from solver.model import Instance
from solver.model.scoring import score
from solver.result import Params

CASES = json.loads((Path(__file__).parent / "data" / "lag_based_cases.json").read_text())


def run(inst: Instance) -> dict[str, dict[str, list[int]]]:
    return lag_based(inst, Params()).assignment.canonical(inst.member_ids)


def test_the_sources_assign_cases() -> None:
    assert len(CASES["assign"]) == 4
    for case in CASES["assign"]:
        inst = parse_instance(case["instance"])
        got = run(inst)
        if "expected" in case:
            want = {m: {t: ps for t, ps in tps.items()} for m, tps in case["expected"].items()}
            assert got == want, case["case"]
        if "lag_per_member" in case:
            loads = {m: sum(inst.topics[t].weight_array()[p] for t, ps in tps.items() for p in ps)
                     for m, tps in got.items()}
            assert loads == case["lag_per_member"], case["case"]
        if "partition_count_spread_at_most" in case:
            counts = [sum(len(ps) for ps in tps.values()) for tps in got.values()]
            assert max(counts) - min(counts) <= case["partition_count_spread_at_most"], case["case"]
        # every case: a valid assignment of every partition
        s = score(inst, lag_based(inst, Params()).assignment)
        assert s["valid"] and s["unassigned"] == 0, case["case"]


def test_the_sources_lag_computation_cases() -> None:
    for case in CASES["compute_partition_lag"]:
        assert partition_lag(case["committed"], case["begin"], case["end"], case["reset"]) == case["lag"], case["case"]


def test_heavily_skewed_lags_exact_answer() -> None:
    """The skewed case worked by hand: 455000 and 424000 first to consumer-1 and -2, then by lag so far."""
    case = next(c for c in CASES["assign"] if c["case"] == "testAssignWithHeavilySkewedLags")
    got = run(parse_instance(case["instance"]))
    # order: p8 455000, p9 424000, p4 444, p0 360, p1 359, p2 230, p5 122, p3 118, p7 111, p6 65
    # round 1: c1 p8, c2 p9, c3 p4; round 2 by lag so far: c3 (444) p0, c2 (424000) p1, c1 p2;
    # round 3: c3 (804) p5, c2 (424359) p3, c1 (455230) p7; round 4: c3 (926) p6
    assert got == {"consumer-1": {"topic1": [2, 7, 8]}, "consumer-2": {"topic1": [1, 3, 9]},
                   "consumer-3": {"topic1": [0, 4, 5, 6]}}


def test_registered_beside_kafkas_assignors() -> None:
    spec = registry.get("lag-based")
    assert (spec.kind, spec.protocol) == ("heuristic", "consumer")
    assert "grantneale/kafka-lag-based-assignor" in spec.source


def test_owned_capacities_and_other_topics_play_no_part() -> None:
    base = {"format": "kassign/v1", "topics": {"a": {"partitions": 3, "weights": [5, 9, 1]}, "b": 4},
            "members": [{"id": "x", "topics": ["a", "b"]}, {"id": "y", "topics": ["a", "b"]}]}
    sticky = json.loads(json.dumps(base))
    sticky["members"][0].update(owned={"a": [0, 1, 2], "b": [0, 1, 2, 3]}, generation=3, capacity=4.0)
    assert run(parse_instance(base)) == run(parse_instance(sticky))


def naive(inst: Instance) -> dict[str, dict[str, list[int]]]:
    """The source's loop, partition by partition: a Collections.min over the topic's subscribers."""
    out: dict[str, dict[str, list[int]]] = {m.id: {} for m in inst.members}
    for t, topic in inst.topics.items():
        consumers = [m.id for m in inst.members if t in m.topics]
        if not consumers:
            continue
        # integer lags are Java longs (exact; a total wraps past 2^63 - 1); fractional ones are real numbers
        exact = topic.lags is not None
        lags = topic.lags.tolist() if topic.lags is not None else topic.weight_array().tolist()
        count = dict.fromkeys(consumers, 0)
        total: dict[str, Any] = dict.fromkeys(consumers, 0 if exact else 0.0)
        for p in sorted(range(topic.partitions), key=lambda p: (-lags[p], p)):
            who = min(consumers, key=lambda c: (count[c], total[c], java_string_key(c)))
            out[who].setdefault(t, []).append(p)
            count[who] += 1
            total[who] = _java_long(total[who] + lags[p]) if exact else total[who] + lags[p]
    return {m: {t: sorted(ps) for t, ps in sorted(tps.items())} for m, tps in out.items()}


def _java_long(v: int) -> int:
    return (v + 2**63) % 2**64 - 2**63


@st.composite
def instances(draw: Any) -> Instance:
    names = draw(st.lists(st.sampled_from(["a", "b", "B", "c-1", "c-10", "c-2", "\u00e9", "\U0001f600", "\uffff"]),
                          min_size=1, max_size=6, unique=True))
    topics: dict[str, Any] = {}
    for i in range(draw(st.integers(1, 3))):
        n = draw(st.integers(0, 12))
        lag = draw(st.sampled_from([st.sampled_from([0, 1, 7, 100]), st.integers(0, 10**6),
                                    st.sampled_from([2**53 - 1, 2**53, 2**53 + 1, 2**63 - 2, 2**63 - 1]),
                                    st.integers(2**53, 2**63 - 1), st.sampled_from([0.5, 1.0, 2.5])]))
        topics[f"t{i}"] = ({"partitions": n, "weights": draw(st.lists(lag, min_size=n, max_size=n))}
                           if draw(st.booleans()) else n)
    members = [{"id": m, "topics": draw(st.lists(st.sampled_from(sorted(topics)), min_size=1, unique=True))}
               for m in names]
    return parse_instance({"format": "kassign/v1", "topics": topics, "members": members})


@settings(max_examples=200, deadline=None)
@given(instances())
def test_rounds_equal_the_sources_loop(inst: Instance) -> None:
    assert run(inst) == naive(inst)


def _two(weights: list[Any]) -> Instance:
    return parse_instance({"format": "kassign/v1", "topics": {"t": {"partitions": len(weights), "weights": weights}},
                           "members": [{"id": "a", "topics": ["t"]}, {"id": "b", "topics": ["t"]}]})


def test_lags_past_2_53_are_compared_as_the_longs_they_are() -> None:
    """2^53 and 2^53 + 1 are one float64: the larger lag goes first (to ``a``), as Java's Long.compare says."""
    assert run(_two([2**53, 2**53 + 1])) == {"a": {"t": [1]}, "b": {"t": [0]}}
    assert run(_two([2**53 + 1, 2**53])) == {"a": {"t": [0]}, "b": {"t": [1]}}
    # written as a fraction, the same numbers are real numbers: a tie, by partition
    assert run(_two([2.0**53, 2.0**53 + 2])) == {"a": {"t": [1]}, "b": {"t": [0]}}
    assert run(_two([9007199254740992.0, 9007199254740993.0])) == {"a": {"t": [0]}, "b": {"t": [1]}}


def test_lags_up_to_2_63_minus_1_with_java_long_totals() -> None:
    m = 2**63 - 1
    # round 2: totals m and m - 1 compared exactly: b (smaller) takes the larger of the round's lags
    assert run(_two([m, m - 1, 1, 0])) == {"a": {"t": [0, 3]}, "b": {"t": [1, 2]}}
    # a's total m + 1 wraps to -2^63 as a Java long sum does, so a is "least lag so far" in round 3
    assert run(_two([m, m, 1, 0, 0, 0])) == {"a": {"t": [0, 2, 4]}, "b": {"t": [1, 3, 5]}}


def test_integer_lags_survive_writing_and_reading_an_instance() -> None:
    from solver.io import instance_to_dict

    inst = _two([2**53 + 1, 2**63 - 1, 0])
    doc = instance_to_dict(inst)
    assert doc["topics"]["t"]["weights"] == [2**53 + 1, 2**63 - 1, 0]
    assert all(type(v) is int for v in doc["topics"]["t"]["weights"])
    again = parse_instance(json.loads(json.dumps(doc)))
    assert again == inst and again.topics["t"].lags is not None
    assert again.topics["t"].lags.tolist() == [2**53 + 1, 2**63 - 1, 0]
    assert inst != _two([2**53, 2**63 - 1, 0])  # 2^53 + 1 and 2^53: different instances


def test_integers_past_a_long_and_fractions_stay_real_numbers() -> None:
    assert _two([2**63, 1]).topics["t"].lags is None
    assert _two([1.0, 2]).topics["t"].lags is None


def test_in_list_compare_score_and_sweeps(tmp_path: Path) -> None:
    """Beside Kafka's assignors: ``kassign list``, ``compare`` (all assignors by default), ``score``, sweeps."""
    from spark_runner.sweep.evaluate import evaluate_scenario
    from tests.spark_runner.cli.test_cli import kassign

    r = kassign("list", "--format", "tsv")
    assert r.returncode == 0 and any(line.split("\t")[0] == "lag-based" for line in r.stdout.splitlines())
    case = next(c for c in CASES["assign"] if c["case"] == "testAssign")
    inst_file = tmp_path / "inst.json"
    inst_file.write_text(json.dumps(case["instance"]))
    r = kassign("compare", str(inst_file), "--json")
    assert r.returncode == 0, r.stderr
    rows = {row["assignor"]: row for row in json.loads(r.stdout)["rows"]}
    assert {"lag-based", "range", "cooperative-sticky", "optimal"} <= set(rows)
    # lags 100000+500+900000+100000 on consumer-1 (it alone reads topic2), 100000+1 on consumer-2
    assert rows["lag-based"]["weighted_max_load"] == 1_100_500.0
    out = tmp_path / "lag.json"
    assert kassign("assign", str(inst_file), "--assignor", "lag-based", "-o", str(out)).returncode == 0
    assert json.loads(out.read_text())["assignment"] == case["expected"]
    r = kassign("score", str(inst_file), str(out), "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["weighted_max_load"] == 1_100_500.0
    rows_sweep = evaluate_scenario({"members": 4, "topics": 2, "partitions_min": 3, "partitions_max": 8,
                                    "weights": "lognormal", "steps": 3}, 5, ["lag-based"], 10.0)
    ours = [row for row in rows_sweep if row["assignor"] == "lag-based"]
    assert len(ours) == 4 and all(row["valid"] and row["error"] is None for row in ours)
    assert all(row["max_load_gap"] >= -1e-9 for row in ours if row["opt_status"] == "optimal")


def test_per_topic_bookkeeping_stacks_the_heavy_partitions(tmp_path: Path) -> None:
    """docs/algorithms.md (lag-based): each topic's lag-100 partition goes to x, 200 against the optimum's 101."""
    inst = parse_instance({"format": "kassign/v1",
                           "topics": {"a": {"partitions": 2, "weights": [100, 1]},
                                      "b": {"partitions": 2, "weights": [100, 1]}},
                           "members": [{"id": "x", "topics": ["a", "b"]}, {"id": "y", "topics": ["a", "b"]}]})
    assert run(inst) == {"x": {"a": [0], "b": [0]}, "y": {"a": [1], "b": [1]}}
    assert score(inst, lag_based(inst, Params()).assignment)["weighted_max_load"] == 200.0
    from spark_runner.assignors import get

    best = get("optimal").run(inst, Params(seed=0))
    assert score(inst, best.assignment)["weighted_max_load"] == 101.0
