"""A sweep's ``--out`` remembers its grid (issue 34): another grid's sweep into it is refused (exit 2) before Spark
starts, ``--dry-run`` included; a grid that only adds scenarios or assignors resumes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.spark_runner.cli.test_cli import kassign
from tests.spark_runner.sweep.test_report import PARAMS, _sweep

#: The grid of test_report's rows: 2 seeds x 1 point, uniform, fair and cooperative-sticky beside the optimum.
SAME: dict[str, Any] = {"name": "tiny", "seeds": [0, 1], "assignors": ["uniform", "fair", "cooperative-sticky"],
                        "params": PARAMS}


def _grid(tmp_path: Path, **over: Any) -> Path:
    f = tmp_path / "grid.yaml"
    f.write_text(json.dumps({**SAME, **over}))
    return f


@pytest.mark.parametrize(("over", "what"), [
    ({"name": "other", "params": {**PARAMS, "partitions_max": 6}}, "2 of its 2 scenario(s) are not in this grid"),
    ({"seeds": [0]}, "1 of its 2 scenario(s) are not in this grid"),
    ({"assignors": ["uniform"]}, "it evaluated cooperative-sticky, fair, which this grid does not list"),
], ids=["other-points", "fewer-seeds", "fewer-assignors"])
@pytest.mark.parametrize("dry", [True, False], ids=["dry-run", "run"])
def test_another_grid_into_the_same_out_is_exit_2(tmp_path: Path, over: dict[str, Any], what: str, dry: bool) -> None:
    out = _sweep(tmp_path)
    before = sorted(p.relative_to(out) for p in out.rglob("*") if p.name != ".kassign-sweep.lock")
    r = kassign("sweep", str(_grid(tmp_path, **over)), "--out", str(out), *(["--dry-run"] if dry else []))
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert f"{out} holds the rows of grid 'tiny' ({what})" in r.stderr, r.stderr
    assert "use another --out, or --overwrite" in r.stderr
    after = sorted(p.relative_to(out) for p in out.rglob("*") if p.name != ".kassign-sweep.lock")
    assert after == before  # nothing written, nothing deleted (the lock file of a run aside)


def test_the_same_grid_or_one_that_adds_resumes(tmp_path: Path) -> None:
    out = _sweep(tmp_path)
    r = kassign("sweep", str(_grid(tmp_path)), "--out", str(out), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "0 pending" in r.stderr, r.stderr
    r = kassign("sweep", str(_grid(tmp_path, seeds=[0, 1, 2], assignors=[*SAME["assignors"], "range"])),
                "--out", str(out), "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "3 pending" in r.stderr, r.stderr  # range on the two old scenarios, everything on the new one


def test_dry_run_with_overwrite_counts_everything_pending(tmp_path: Path) -> None:
    out = _sweep(tmp_path)
    r = kassign("sweep", str(_grid(tmp_path, seeds=[5])), "--out", str(out), "--dry-run", "--overwrite")
    assert r.returncode == 0, r.stderr
    assert "1 scenario(s)" in r.stderr and "1 pending" in r.stderr, r.stderr
    assert (out / "rows").is_dir()  # a dry run deletes nothing


def test_dry_run_probes_the_out_directory(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only directory")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        r = kassign("sweep", str(_grid(tmp_path)), "--out", str(ro), "--dry-run")
    finally:
        ro.chmod(0o700)
    assert r.returncode == 73, r.stderr


# --- report: every part's schema is checked (issue 34, item 5) -----------------------------------------------------

def _reshape(part: Path, change: Any) -> None:
    import pyarrow.parquet as pq

    pq.write_table(change(pq.read_table(part)), part)


@pytest.mark.parametrize(("how", "problem"), [
    ("foreign", "column 'a' is not a sweep row column"),
    ("retyped", "column 'max_load_gap' is string, a sweep row's is double"),
    ("missing", "its columns differ from"),
    ("not parquet", "not a Parquet file of sweep rows"),
])
def test_report_refuses_a_part_that_is_not_one_of_the_rows(tmp_path: Path, how: str, problem: str) -> None:
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    out = _sweep(tmp_path)
    part = out / "rows" / "assignor=uniform" / "part-0.parquet"
    if how == "foreign":
        pq.write_table(pa.table({"a": [1, 2], "b": ["x", "y"]}), out / "rows" / "assignor=uniform" / "part-9.parquet")
        part = out / "rows" / "assignor=uniform" / "part-9.parquet"
    elif how == "retyped":
        _reshape(part, lambda t: t.set_column(t.schema.get_field_index("max_load_gap"), "max_load_gap",
                                              pc.cast(t.column("max_load_gap"), pa.string())))
    elif how == "missing":
        _reshape(part, lambda t: t.drop_columns(["max_load_gap"]))
    else:
        part.write_bytes(b"PAR1 not really")
    r = kassign("report", str(out))
    assert r.returncode == 65, r.stderr
    assert "Traceback" not in r.stderr
    assert r.stderr.startswith(f"{part}: ") and problem in r.stderr, r.stderr


# --- a disk that fills up during a sweep (issue 34, item 9) ---------------------------------------------------------

@pytest.mark.parametrize(("java", "code"), [
    ("java.io.IOException: No space left on device", 74),
    ("org.apache.hadoop.fs.FSError: java.io.IOException: Disk quota exceeded", 74),
    ("java.io.IOException: Input/output error", 74),
    ("java.nio.file.FileSystemException: /o/rows: Read-only file system", 73),
])
def test_a_spark_write_the_os_refused_is_an_output_error(tmp_path: Path, java: str, code: int) -> None:
    from solver.errors import OutputError
    from spark_runner.sweep.store import output_failure

    e = Exception(f"An error occurred while calling o212.parquet.\n: org.apache.spark.SparkException: Job aborted.\n"
                  f"Caused by: {java}\n\tat org.apache.parquet.hadoop.ParquetFileWriter.end(ParquetFileWriter.java:1)")
    with pytest.raises(OutputError) as err:
        output_failure(e, tmp_path)
    assert err.value.exit_code == code
    assert str(err.value).startswith(f"cannot write {tmp_path / 'rows'}") or str(tmp_path / "rows") in str(err.value)
    output_failure(Exception("org.apache.spark.SparkException: Python worker exited unexpectedly"), tmp_path)
