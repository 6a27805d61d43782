"""The sweep report's rows: read ``DIR/rows`` (one row per scenario, step and assignor) and normalise them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from solver.errors import InstanceError, Problem
from solver.model.files import check_input_dir
from solver.model.scoring import INVALID, SPLIT, VALID
from spark_runner.sweep.evaluate import EPS
from spark_runner.sweep.rows import ROW_KEY, arrow_schema, check_row_parts, unreadable_rows

#: The gap columns of a consumer row and of a Streams row.
GAPS = ("max_load_gap", "sum_sq_gap", "excess_moves")
STREAMS_GAPS = ("active_balance_gap", "total_balance_gap", "restoration_gap")

#: The columns the report reads (a large sweep has millions of rows; params_json alone would be big).
REPORT_COLUMNS = ("scenario_id", "seed", "step", "event", "protocol", "members", "partitions", "status", "seconds",
                  "rounds", "error", "valid", "outcome", "param_copartition", "copartition_violations", "moved",
                  "moved_cost", "max_load_gap", "sum_sq_gap", "excess_moves", "excess_moves_proven", "balance_optimal",
                  "opt_status",
                  "not_caught_up_actives", "moved_actives", "warmups", "probing_rebalance", "restoration_cost",
                  "kafka_version", "param_weights", *STREAMS_GAPS)


def load_rows(out: str | Path, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Rows under ``out/rows`` (all columns, or ``columns`` plus ``assignor`` as a plain string column)."""
    check_input_dir(out)  # missing: exit 66; a file, a link loop, a name too long: 65
    rows = Path(out) / "rows"
    if not rows.is_dir() or not any(rows.glob("assignor=*/*.parquet")):
        raise InstanceError(str(out), [Problem("", "no sweep rows (expected Parquet under rows/assignor=*/)")])
    import pyarrow as pa
    import pyarrow.dataset as ds

    # the full row schema: columns added since older files were written (protocol, Streams) read as null
    schema = arrow_schema()
    part = ds.partitioning(pa.schema([schema.field("assignor")]), flavor="hive")
    cols = None if columns is None else list(dict.fromkeys([*columns, *ROW_KEY]))
    check_row_parts(rows)  # a foreign part, or one without a column the others have: exit 65 naming it
    with unreadable_rows(rows):
        dataset = ds.dataset(str(rows), format="parquet", partitioning=part, schema=schema)
        df = dataset.to_table(columns=cols).to_pandas()
    df["assignor"] = df["assignor"].astype(str)
    # One row per (scenario, step, assignor), whatever an interrupted run left (store.clear_uncommitted).
    df = df.drop_duplicates(subset=list(ROW_KEY), keep="first", ignore_index=True)
    if columns is not None:
        df = df[list(dict.fromkeys([*columns, "assignor"]))]
    if "protocol" in df.columns:
        df["protocol"] = df["protocol"].fillna("consumer").astype(str)
    return _normalize(df)


def _normalize(df: pd.DataFrame) -> pd.DataFrame:
    """One rule for every reader: gaps are defined for a ``valid`` outcome only.

    ``outcome`` is derived from ``valid`` and ``copartition_violations`` where a row lacks it (sweeps
    written before the column existed); rows of another outcome get no gaps and are not balance
    optimal; ``balance_optimal`` is recomputed from the gaps (both 0).
    """
    if not {"valid", "copartition_violations"} <= set(df.columns):
        return df
    valid = df["valid"]
    split = pd.to_numeric(df["copartition_violations"], errors="coerce").fillna(0) > 0
    derived = pd.Series(None, index=df.index, dtype=object)
    derived[valid == False] = INVALID  # noqa: E712 (nullable column)
    derived[(valid == True) & split] = SPLIT  # noqa: E712
    derived[(valid == True) & ~split] = VALID  # noqa: E712
    have = df["outcome"] if "outcome" in df.columns else pd.Series(None, index=df.index, dtype=object)
    df["outcome"] = have.where(have.notna(), derived)
    other = df["outcome"].notna() & (df["outcome"] != VALID)
    for gap in (*GAPS, *STREAMS_GAPS):
        if gap in df.columns:
            df[gap] = pd.to_numeric(df[gap], errors="coerce").where(~other)
    if "excess_moves_proven" in df.columns:
        df["excess_moves_proven"] = df["excess_moves_proven"].astype(object).where(~other, None)
    if "balance_optimal" in df.columns:
        def both_zero(a: str, b: str) -> pd.Series:
            if a not in df.columns or b not in df.columns:
                return pd.Series(None, index=df.index, dtype=object)
            x, y = pd.to_numeric(df[a], errors="coerce"), pd.to_numeric(df[b], errors="coerce")
            return ((x <= EPS) & (y <= EPS)).astype(object).where(x.notna() & y.notna(), None)

        streams = df["protocol"] == "streams" if "protocol" in df.columns else pd.Series(False, index=df.index)
        bo = both_zero("max_load_gap", "sum_sq_gap").where(~streams, both_zero("active_balance_gap",
                                                                                 "total_balance_gap"))
        df["balance_optimal"] = bo.where(~other, False)
    return df
