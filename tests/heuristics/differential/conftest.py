"""The Kafka matrix for the differential tests: one harness JVM per release, for the whole session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.heuristics.differential.reference import HarnessNotBuilt, Matrix, declared_matrix, matrix


@pytest.fixture(scope="session")
def kafka_matrix() -> Iterator[Matrix]:
    """Every release of the matrix; CI fails when one was not built, elsewhere the tests skip."""
    missing = sorted(set(declared_matrix()) - set(matrix()))
    if missing or not matrix():
        msg = (f"Kafka releases not built: {', '.join(missing) or 'all'}; run `cd java && mvn -B -q package "
               "-DskipTests` (make test does)")
        if os.environ.get("CI"):
            raise HarnessNotBuilt(msg)
        pytest.skip(msg)
    m = Matrix()
    try:
        yield m
    finally:
        m.close()
