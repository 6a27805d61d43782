"""The problem model: immutable instance data, its schema, semantics and scoring.

The data types live in :mod:`solver.model.instance` and are re-exported here;
:mod:`solver.model.schema` validates documents, :mod:`solver.model.semantics`
derives previous owners, eligibility and co-partition units, and
:mod:`solver.model.scoring` computes every metric of a consumer assignment.
:mod:`solver.model.files` reads and writes documents (JSON, YAML, JSON lines; the
reading half is :mod:`solver.model.inputs`).
"""

from solver.model.instance import (
    EMPTY_OWNED,
    FORMAT,
    Assignment,
    FloatArray,
    Instance,
    IntArray,
    Member,
    OwnedMap,
    Protocol,
    Topic,
    frozen_array,
)

__all__ = [
    "EMPTY_OWNED", "FORMAT", "Assignment", "FloatArray", "Instance", "IntArray", "Member", "OwnedMap",
    "Protocol", "Topic", "frozen_array",
]
