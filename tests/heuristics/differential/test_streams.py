"""kassign's Kafka Streams assignors give Apache Kafka's answer, at every release of the matrix.

The reference is Kafka's released classes (java/harness): ``high-availability`` (with KIP-925 rack awareness
and KIP-708 client tags, which are drawn for every assignor) and ``sticky-task`` (Kafka Streams' classic
assignors), ``kip924-sticky`` (KIP-924's public assignor) and ``streams-server-sticky`` (the KIP-1071 group
coordinator's).  Compared: each client's actives, its standbys
(warm-ups counted as standbys, as Kafka reports them), each KIP-1071 member's tasks, the probing-rebalance
flag and whether rack awareness was on.  A fixed-seed sample of ``KASSIGN_DIFF_SAMPLE`` groups (200 by
default) per assignor, each at every release that has the assignor.
"""

from __future__ import annotations

import os

import pytest

from tests.heuristics.differential.check import kafka_streams_view, releases_of, streams_answer
from tests.heuristics.differential.reference import Matrix
from tests.heuristics.differential.sample import shapes_sample
from tests.heuristics.differential.streams_groups import streams_group

SAMPLE = int(os.environ.get("KASSIGN_DIFF_SAMPLE", "200"))
STREAMS = ("high-availability", "sticky-task", "kip924-sticky", "streams-server-sticky")
FIRST = {"high-availability": "3.8.1", "sticky-task": "3.8.1", "kip924-sticky": "3.8.1",
         "streams-server-sticky": "4.2.2"}

pytestmark = pytest.mark.java


@pytest.mark.parametrize("assignor", STREAMS)
def test_every_release_that_has_the_assignor_is_checked(assignor: str, kafka_matrix: Matrix) -> None:
    releases = releases_of(assignor, kafka_matrix)
    assert releases[0] == FIRST[assignor] and releases[-1] == "4.4.0"


@pytest.mark.parametrize("assignor", STREAMS)
def test_fixed_seed_sample_is_exact_at_every_release(assignor: str, kafka_matrix: Matrix) -> None:
    cases = [streams_group(s, assignor) for s in shapes_sample(SAMPLE, seed=5)]
    bad = []
    for r in releases_of(assignor, kafka_matrix):
        answers = kafka_matrix[r].ask_many([{"assignor": assignor, "instance": c} for c in cases])
        for c, k in zip(cases, answers, strict=True):
            theirs = kafka_streams_view(k, assignor)
            ours = streams_answer(assignor, c, r)
            if ours != theirs:
                bad.append(f"{c['name']} at Kafka {r}:\n  kassign {ours}\n  Kafka   {theirs}")
    assert not bad, f"{len(bad)} mismatches:\n" + "\n".join(bad[:3])
