"""The row schema of a sweep: one row per (scenario, step, assignor), the same columns for both protocols.

:data:`ROW_SCHEMA` names every column with its Spark SQL type, in order; :data:`COLUMNS` the names alone and
:data:`ROW_KEY` the columns that identify a row.  The column groups (:data:`ID_COLUMNS`, :data:`RUN_COLUMNS`,
:data:`SCORE_COLUMNS`, :data:`GAP_COLUMNS`, :data:`STREAMS_COLUMNS`, :data:`PARAM_COLUMNS`) say what each
part holds; a column of the other protocol is null.  :func:`arrow_schema` is the same schema for pyarrow, and
:func:`check_row_parts` / :func:`unreadable_rows` refuse rows on disk that are not kassign's (exit 65).
:func:`spark_runner.sweep.evaluate.evaluate_scenario` fills these rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from solver.errors import InstanceError, Problem
from spark_runner.scenarios.consumer import ScenarioParams
from spark_runner.scenarios.streams import StreamsScenarioParams

#: Identity of a row.
ID_COLUMNS: tuple[tuple[str, str], ...] = (
    ("scenario_id", "string"),
    ("seed", "long"),
    ("step", "int"),
    ("event", "string"),
    ("event_detail", "string"),
    ("assignor", "string"),
    ("protocol", "string"),
)

#: Size of the instance at that step and how the run went.
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("members", "int"),
    ("topics", "int"),
    ("partitions", "long"),
    ("status", "string"),
    ("seconds", "double"),
    ("rounds", "int"),
    ("error", "string"),
    ("kafka_version", "string"),
)

#: Every metric of :func:`solver.model.scoring.score`, ``violations`` flattened.
SCORE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("valid", "boolean"),
    ("outcome", "string"),
    ("violations", "int"),
    ("violation_first", "string"),
    ("unassigned", "long"),
    ("not_joinable", "long"),
    ("copartition_violations", "long"),
    ("max_load", "double"),
    ("min_load", "double"),
    ("spread", "double"),
    ("sum_sq_load", "double"),
    ("weighted_max_load", "double"),
    ("moved", "long"),
    ("moved_cost", "double"),
    ("cross_rack", "long"),
    ("locally_balanced", "boolean"),
)

#: Gaps against the optimum of the same step.
GAP_COLUMNS: tuple[tuple[str, str], ...] = (
    ("max_load_gap", "double"),
    ("sum_sq_gap", "double"),
    ("excess_moves", "double"),
    ("excess_moves_proven", "boolean"),
    ("balance_optimal", "boolean"),
    ("opt_status", "string"),
)


#: Streams sizes and :func:`solver.streams.scoring.score_streams` metrics (null on consumer rows;
#: ``members`` / ``topics`` / ``partitions`` hold clients / sub-topologies / tasks on Streams rows).
STREAMS_COLUMNS: tuple[tuple[str, str], ...] = (
    ("threads", "long"),
    ("stateful_tasks", "long"),
    ("unassigned_tasks", "long"),
    ("duplicate_actives", "long"),
    ("standby_shortfall", "long"),
    ("not_caught_up_actives", "long"),
    ("max_active_load", "double"),
    ("min_active_load", "double"),
    ("active_spread", "double"),
    ("max_total_load", "double"),
    ("min_total_load", "double"),
    ("total_spread", "double"),
    ("restoration_cost", "double"),
    ("moved_actives", "long"),
    ("standbys", "long"),
    ("warmups", "long"),
    ("probing_rebalance", "boolean"),
    ("cross_rack_traffic", "long"),
    ("max_member_tasks", "long"),
    ("member_spread", "long"),
    ("moved_member_actives", "long"),
    ("active_balance_gap", "double"),
    ("total_balance_gap", "double"),
    ("restoration_gap", "double"),
    ("member_balance_gap", "double"),
)


def _param_type(name: str) -> str:
    types = {f.name: f.type for f in fields(StreamsScenarioParams)}
    types.update({f.name: f.type for f in fields(ScenarioParams)})
    text = str(types[name])
    if name == "events":
        return "string"
    if "bool" in text:
        return "boolean"
    if "int" in text:
        return "long"
    if "float" in text:
        return "double"
    return "string"


_PARAM_NAMES = tuple(dict.fromkeys([*(f.name for f in fields(ScenarioParams)),
                                     *(f.name for f in fields(StreamsScenarioParams))]))

#: Generator parameters of both protocols, one column each (``events`` comma-joined), plus the JSON.
PARAM_COLUMNS: tuple[tuple[str, str], ...] = (
    *((f"param_{n}", _param_type(n)) for n in _PARAM_NAMES),
    ("params_json", "string"),
)

#: Every column of a row, in order, with its Spark SQL type.
ROW_SCHEMA: tuple[tuple[str, str], ...] = (ID_COLUMNS + RUN_COLUMNS + SCORE_COLUMNS + GAP_COLUMNS + STREAMS_COLUMNS
                                           + PARAM_COLUMNS)
#: Columns that identify a row: one step of one scenario as seen by one assignor (readers keep one row per key).
ROW_KEY = ("scenario_id", "step", "assignor")
COLUMNS: tuple[str, ...] = tuple(n for n, _ in ROW_SCHEMA)


@contextlib.contextmanager
def unreadable_rows(rows: Path) -> Iterator[None]:
    """Turn a sweep's rows that cannot be read (a file that is not Parquet, a schema it does not have, an OS
    error) into an :class:`~solver.errors.InstanceError` naming the folder (exit 65), not a traceback."""
    import pyarrow as pa

    try:
        yield
    except (pa.ArrowException, OSError) as e:
        why = " ".join(str(e).split())[:300]
        raise InstanceError(str(rows), [Problem("", f"cannot read the sweep rows: {why} (move the file away, or "
                                                    f"start over with --overwrite)")]) from None


def check_row_parts(rows: Path) -> None:
    """Every Parquet part under ``rows/assignor=*/`` is a part of kassign's rows, or an
    :class:`~solver.errors.InstanceError` naming the first that is not (exit 65).

    Each part's columns must be row columns of their type (:data:`ROW_SCHEMA`) with the row key, and all parts
    the same columns: a foreign file, or a part without a column the others have (which would read as null and
    change the report's shares), is refused instead of read.  Only the files' footers are read.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    want = arrow_schema()
    parts = sorted(rows.glob("assignor=*/*.parquet"))
    seen: dict[frozenset[str], Path] = {}
    for f in parts:
        try:
            schema = pq.read_schema(f)
        except (pa.ArrowException, OSError) as e:
            why = " ".join(str(e).split())[:200]
            raise InstanceError(str(f), [Problem("", f"not a Parquet file of sweep rows ({why}): move it away, or "
                                                     "start over with --overwrite")]) from None
        problem = ""
        for field in schema:
            if field.name == "assignor":
                continue
            if want.get_field_index(field.name) < 0:
                problem = f"column {field.name!r} is not a sweep row column"
            elif not field.type.equals(want.field(field.name).type):
                problem = (f"column {field.name!r} is {field.type}, a sweep row's is "
                           f"{want.field(field.name).type}")
            if problem:
                break
        names = frozenset(schema.names) - {"assignor"}
        missing = [k for k in ROW_KEY if k != "assignor" and k not in names]
        if not problem and missing:
            problem = f"no {missing[0]!r} column"
        if not problem and seen and names not in seen:
            other, other_file = next(iter(seen.items()))
            gone = sorted(other - names)
            extra = sorted(names - other)
            problem = (f"its columns differ from {other_file.relative_to(rows)}'s "
                       + (f"(it lacks {', '.join(gone[:3])})" if gone else f"(it adds {', '.join(extra[:3])})"))
        if problem:
            raise InstanceError(str(f), [Problem("", f"not a part of these sweep rows: {problem} (move it away, or "
                                                     "start over with --overwrite)")])
        seen.setdefault(names, f)


def arrow_schema() -> Any:
    """:data:`ROW_SCHEMA` as a ``pyarrow.Schema``: reading a sweep with it gives every column, null in
    files written before a column existed (e.g. Streams columns in an older consumer sweep)."""
    import pyarrow as pa

    types = {"string": pa.string(), "long": pa.int64(), "int": pa.int32(), "double": pa.float64(),
             "boolean": pa.bool_()}
    return pa.schema([pa.field(n, types[t]) for n, t in ROW_SCHEMA])


__all__ = ["COLUMNS", "GAP_COLUMNS", "ID_COLUMNS", "PARAM_COLUMNS", "ROW_KEY", "ROW_SCHEMA", "RUN_COLUMNS",
           "SCORE_COLUMNS", "STREAMS_COLUMNS", "arrow_schema", "check_row_parts", "unreadable_rows"]
