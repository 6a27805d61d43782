"""Item classes: :func:`class_counts` is the inverse of :func:`expand`."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.consumer.items import build_classes, class_counts, expand
from solver.model import Assignment
from tests.solver.consumer.optimal_strategies import instances


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_topics=3, max_partitions=5, max_members=4, copartition="any"), data=st.data())
def test_class_counts_inverts_expand(inst, data) -> None:
    ic = build_classes(inst)
    flows = []
    for c in range(ic.n_classes):
        elig = ic.eligsets[int(ic.cls_elig[c])].tolist()
        if not elig:
            return
        left = int(ic.count[c])
        for m in elig:
            k = left if m == elig[-1] else data.draw(st.integers(0, left))
            flows.append((c, m, k))
            left -= k
    counts = np.zeros((ic.n_classes, ic.n_members), dtype=np.int64)
    for c, m, k in flows:
        counts[c, m] += k
    got = class_counts(ic, inst, expand(ic, inst, flows))
    assert got is not None and (got == counts).all()


def test_a_split_unit_or_a_partition_twice_has_no_counts() -> None:
    from solver.io import parse_instance

    inst = parse_instance({"format": "kassign/v1", "topics": {"A": 2, "B": 2}, "copartition": [["A", "B"]],
                           "members": [{"id": "x", "topics": ["A", "B"]}, {"id": "y", "topics": ["A", "B"]}]})
    ic = build_classes(inst)
    whole = Assignment.from_lists({"x": {"A": [0], "B": [0]}, "y": {"A": [1], "B": [1]}})
    assert class_counts(ic, inst, whole) is not None
    split = Assignment.from_lists({"x": {"A": [0], "B": [1]}, "y": {"A": [1], "B": [0]}})
    assert class_counts(ic, inst, split) is None
    twice = Assignment.from_lists({"x": {"A": [0, 1], "B": [0, 1]}, "y": {"A": [1], "B": [1]}})
    assert class_counts(ic, inst, twice) is None
