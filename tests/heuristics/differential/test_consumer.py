"""kassign's consumer assignors give Apache Kafka's answer, at every release of the matrix.

Kafka's own released classes (java/harness on each release's classpath) are the reference.  CI runs a
fixed-seed sample (``KASSIGN_DIFF_SAMPLE`` cases per assignor, 200 by default, every case at every release
that has the assignor) and a hypothesis search that shrinks a failure to a small shape
(``KASSIGN_DIFF_EXAMPLES``, 20 by default); ``python -m benchmarks.differential`` runs the long campaign.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings

from tests.heuristics.differential.check import (
    NPE,
    differ,
    differ_many,
    kafka_consumer_answer,
    releases_of,
    sequence_differ,
)
from tests.heuristics.differential.reference import Matrix, with_topic_ids
from tests.heuristics.differential.sample import shapes_sample
from tests.heuristics.differential.strategies import Shape, consumer_group, shapes
from tests.heuristics.sticky.test_eager import KAFKA_NPE_GROUP

SAMPLE = int(os.environ.get("KASSIGN_DIFF_SAMPLE", "200"))
EXAMPLES = int(os.environ.get("KASSIGN_DIFF_EXAMPLES", "20"))
CLASSIC = ("range", "roundrobin", "sticky", "cooperative-sticky")
SERVER = ("uniform", "server-range")
#: The first release of the matrix at which kassign models each assignor (docs/algorithms.md).
FIRST = {"range": "3.0.2", "roundrobin": "3.0.2", "sticky": "3.7.2", "cooperative-sticky": "3.7.2",
         "uniform": "4.0.0", "server-range": "4.0.0"}

pytestmark = pytest.mark.java


@pytest.mark.parametrize("assignor", CLASSIC + SERVER)
def test_every_release_that_has_the_assignor_is_checked(assignor: str, kafka_matrix: Matrix) -> None:
    releases = releases_of(assignor, kafka_matrix)
    assert releases[0] == FIRST[assignor] and releases[-1] == "4.4.0"


@pytest.mark.parametrize("assignor", CLASSIC + SERVER)
def test_fixed_seed_sample_is_exact_at_every_release(assignor: str, kafka_matrix: Matrix) -> None:
    cases = [consumer_group(s, conflicts=assignor not in SERVER) for s in shapes_sample(SAMPLE, seed=31)]
    bad = differ_many(assignor, cases, kafka_matrix, releases_of(assignor, kafka_matrix))
    report = [f"case {k} ({cases[k]['name']}): {m}" for ms in bad.values() for k, m in ms[:2]]
    assert not report, f"{sum(map(len, bad.values()))} mismatches:\n" + "\n".join(report[:6])


@pytest.mark.parametrize("assignor", CLASSIC + SERVER)
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(shape=shapes)
def test_kassign_gives_kafkas_answer(assignor: str, shape: Shape, kafka_matrix: Matrix) -> None:
    instance = consumer_group(shape, conflicts=assignor not in SERVER)
    bad = differ(assignor, instance, kafka_matrix, releases_of(assignor, kafka_matrix))
    assert not bad, "\n".join(map(str, bad[:3]))


@pytest.mark.parametrize("assignor", CLASSIC + SERVER)
@pytest.mark.parametrize("release", ["4.3.1", "4.4.0"])
def test_rebalances_in_a_row_follow_kafka(assignor: str, release: str, kafka_matrix: Matrix) -> None:
    """Groups two and three rebalances in, each owning what Kafka gave them the step before."""
    for k, shape in enumerate(shapes_sample(SAMPLE // 10, seed=77)):
        start = consumer_group(shape, conflicts=assignor not in SERVER)
        bad = sequence_differ(assignor, start, kafka_matrix, release, steps=4, seed=k)
        assert not bad, f"{start['name']}: " + bad[0]


@pytest.mark.parametrize("assignor", ("sticky", "cooperative-sticky"))
def test_kafka_throws_where_kassign_refuses(assignor: str, kafka_matrix: Matrix) -> None:
    """The group kassign refuses as Kafka's NullPointerException makes Kafka's own classes throw it, at every
    release that has the assignor (and ``differ`` counts the two failures as the same answer)."""
    for r in releases_of(assignor, kafka_matrix):
        kafka = kafka_matrix[r].ask(assignor, with_topic_ids(KAFKA_NPE_GROUP))
        assert kafka_consumer_answer(kafka) == NPE, (r, kafka)
    assert differ(assignor, KAFKA_NPE_GROUP, kafka_matrix, releases_of(assignor, kafka_matrix)) == []


#: two real KIP-848 member ids (a live run's) whose ``String.hashCode`` share a bucket of a 16-bucket ``HashMap``
SAME_BUCKET = ("Ue9h5_Z2RoG2myhwiRMlNw", "vfmaIA6DTtGLnxtKUhbL8g")


@pytest.mark.parametrize("owned", [False, True])
def test_member_ids_sharing_a_bucket_keep_the_instances_order(owned: bool, kafka_matrix: Matrix) -> None:
    """The coordinator fills uniform's member ``HashMap`` in its own member order; ids that share a bucket
    iterate in that order, so swapping them in the instance swaps their shares -- in Kafka's classes as in
    kassign.  (Capture keeps ConsumerGroupDescribe's member order for this reason; docs/capture.md.)"""
    from heuristics._java import hashmap_order

    a, b = SAME_BUCKET
    assert hashmap_order([a, b]) == [a, b] and hashmap_order([b, a]) == [b, a]  # one bucket: insertion order
    members = [{"id": a, "topics": ["t", "u"]}, {"id": b, "topics": ["t", "u"]}]
    if owned:
        members[1]["owned"] = {"t": [0, 1]}
    answers = []
    for order in (members, members[::-1]):
        inst = {"format": "kassign/v1", "name": "same-bucket", "topics": {"t": 2, "u": 3}, "members": order}
        assert differ("uniform", inst, kafka_matrix, releases_of("uniform", kafka_matrix)) == []
        answers.append(kafka_consumer_answer(kafka_matrix["4.4.0"].ask("uniform", with_topic_ids(inst))))
    assert answers[0] != answers[1]  # the order matters: the case can fail
