"""One differential check: kassign's Kafka-named assignor against Kafka's own classes at each release."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import heuristics  # noqa: F401  (registers every assignor)
from heuristics.sticky.general import KafkaNullPointerError
from solver import Params
from solver.io import parse_instance
from solver.kafka_version import KafkaVersionError
from solver.registry import get
from tests.heuristics.differential.reference import Matrix, with_topic_ids


@dataclass(frozen=True)
class Mismatch:
    """A case where kassign and Kafka differ at one release."""

    assignor: str
    release: str
    kassign: Any
    kafka: Any

    def __str__(self) -> str:
        return f"{self.assignor} at Kafka {self.release}: kassign {self.kassign} != Kafka {self.kafka}"


def releases_of(assignor: str, releases: Iterable[str]) -> list[str]:
    """The releases of ``releases`` at which kassign models ``assignor`` (the others it refuses, exit 2)."""
    spec = get(assignor)
    out = []
    for r in releases:
        try:
            spec.rule(Params(kafka_version=r))
        except KafkaVersionError:
            continue
        out.append(r)
    return out


#: what both sides show for a group on which Kafka's sticky assignors throw NullPointerException
NPE = {"error": "NullPointerException"}


def consumer_answer(assignor: str, instance: Mapping[str, Any], release: str,
                    options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """kassign's answer (one round, as Kafka's classes give one), members, topics and partitions sorted;
    :data:`NPE` where kassign reproduces Kafka's NullPointerException.  ``options``: the assignor's ``-O``."""
    inst = parse_instance(dict(instance))
    try:
        res = get(assignor).run(inst, Params(kafka_version=release, options=dict(options or {})))
    except KafkaNullPointerError:
        return NPE
    return res.assignment.canonical(inst.member_ids)


def kafka_consumer_answer(kafka: Mapping[str, Any]) -> dict[str, Any]:
    """The harness's answer as :func:`consumer_answer` shows it: the assignment, :data:`NPE`, or the error."""
    if "assignment" in kafka:
        return dict(kafka["assignment"])
    err = str(kafka.get("error"))
    return NPE if err.startswith("java.lang.NullPointerException") else {"error": err}


def differ(assignor: str, instance: Mapping[str, Any], matrix: Matrix, releases: Iterable[str]) -> list[Mismatch]:
    """Every release where kassign's answer is not Kafka's (Kafka refusing a case counts as a mismatch)."""
    doc = with_topic_ids(instance)
    out = []
    for r in releases:
        kafka = matrix[r].ask(assignor, doc)
        theirs = kafka_consumer_answer(kafka)
        ours = consumer_answer(assignor, instance, r)
        if ours != theirs:
            out.append(Mismatch(assignor, r, ours, theirs))
    return out


def differ_many(assignor: str, instances: list[Mapping[str, Any]], matrix: Matrix, releases: Iterable[str]
                ) -> dict[str, list[tuple[int, Mismatch]]]:
    """:func:`differ` for many cases at once: each release's JVM gets them in one batch.

    Returns release -> ``(case index, mismatch)`` for every case that differs there.
    """
    docs = [{"assignor": assignor, "instance": with_topic_ids(i)} for i in instances]
    out: dict[str, list[tuple[int, Mismatch]]] = {}
    for r in releases:
        answers = matrix[r].ask_many(docs)
        bad = out.setdefault(r, [])
        for k, (inst, kafka) in enumerate(zip(instances, answers, strict=True)):
            theirs = kafka_consumer_answer(kafka)
            ours = consumer_answer(assignor, inst, r)
            if ours != theirs:
                bad.append((k, Mismatch(assignor, r, ours, theirs)))
    return out


def sequence_differ(assignor: str, instance: dict[str, Any], matrix: Matrix, release: str, steps: int,
                    seed: int) -> list[str]:
    """Rebalances in a row, each step's ``owned`` being Kafka's own answer to the step before (as a real group
    goes); returns a line per step where kassign differs (the sequence stops there)."""
    import random

    from tests.heuristics.differential.strategies import next_step

    rng = random.Random(seed)
    server = assignor in ("uniform", "server-range")
    for step in range(steps):
        kafka = matrix[release].ask(assignor, with_topic_ids(instance))
        theirs = kafka_consumer_answer(kafka)
        ours = consumer_answer(assignor, instance, release)
        if ours != theirs:
            return [f"step {step}: {Mismatch(assignor, release, ours, theirs)}"]
        instance = next_step(instance, theirs, rng, shuffle_owned=server)
    return []


def streams_view(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A Streams answer as sets: per client its actives and its standbys (warm-ups counted as standbys, as
    Kafka reports them), per member the same when there are members, and the probing flag."""
    out: dict[str, Any] = {"clients": {}, "probing_rebalance": bool(doc.get("probing_rebalance", False))}
    for c, t in doc["assignment"].items():
        out["clients"][c] = {"active": sorted(t.get("active", [])),
                             "standby": sorted(set(t.get("standby", [])) | set(t.get("warmup", [])))}
    if "members" in doc:
        out["members"] = {m: {"active": sorted(t.get("active", [])), "standby": sorted(t.get("standby", []))}
                          for m, t in doc["members"].items()}
    if "rack_aware" in doc:
        out["rack_aware"] = doc["rack_aware"]
    return out


def streams_answer(assignor: str, instance: Mapping[str, Any], release: str,
                   options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """kassign's Streams answer at ``release`` as :func:`streams_view` shows it (``options``: the ``-O``)."""
    inst = parse_instance(dict(instance))
    res = get(assignor).run(inst, Params(kafka_version=release, options=dict(options or {})))
    doc = dict(res.assignment.to_json_dict())
    if "rack_aware" in res.extra:
        doc["rack_aware"] = res.extra["rack_aware"]
    return streams_view(doc)


def kafka_streams_view(answer: Mapping[str, Any], assignor: str) -> dict[str, Any]:
    """Kafka's Streams answer as :func:`streams_view` shows it (an error stays an error)."""
    if "assignment" not in answer:
        return {"error": answer.get("error")}
    doc = dict(answer)
    if assignor != "high-availability":
        doc.pop("rack_aware", None)
    return streams_view(doc)
