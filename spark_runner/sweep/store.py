"""A sweep's output directory: its lock, the rows already written, the uncommitted output of a crash, the manifest.

A hard crash (the driver killed with its JVM and Python workers) leaves the
committed task files of the unfinished job under ``rows/_temporary/``; the next
job's commit would publish them beside the re-computed rows.  A run therefore
first deletes that uncommitted output (:func:`clear_uncommitted`), and rows are
keyed on ``(scenario_id, step, assignor)``: readers keep one row per key
(:func:`spark_runner.sweep.report.load_rows`).  Only one sweep may write to an
output directory at a time (:func:`sweep_lock`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from solver.errors import InstanceError, KassignError, Problem
from solver.io import read_document, write_atomic
from spark_runner.sweep.grid import Grid
from spark_runner.sweep.rows import ROW_KEY, check_row_parts, unreadable_rows

ROWS = "rows"
REPORT = "report"
MANIFEST = "manifest.json"
#: The JVM's own output (Spark's banner and log4j warnings) of a sweep, under its ``--out``.
SPARK_LOG = "spark.log"




#: What a killed Spark job leaves under the output directory: task output never committed by a job.
UNCOMMITTED = ("_temporary", ".spark-staging-*")


def clear_uncommitted(out: Path) -> int:
    """Delete the output of Spark jobs that never committed (``rows/_temporary`` ...); return how many paths.

    Parameters
    ----------
    out
        The sweep's output directory.
    """
    rows = out / ROWS
    gone = 0
    for pattern in UNCOMMITTED:
        for p in rows.glob(pattern):
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
            gone += 1
    return gone


def finished(out: Path) -> set[tuple[str, str]]:
    """``(scenario id, assignor)`` pairs that already have rows under ``out/rows``."""
    rows = out / ROWS
    if not rows.exists() or not any(rows.glob("assignor=*/*.parquet")):
        return set()
    import pyarrow.dataset as ds

    check_row_parts(rows)
    with unreadable_rows(rows):
        table = ds.dataset(str(rows), format="parquet", partitioning="hive").to_table(
            columns=["scenario_id", "assignor"])
    sids = table.column("scenario_id").to_pylist()
    names = [str(a) for a in table.column("assignor").to_pylist()]
    return set(zip(sids, names, strict=True))



#: The lock file of a sweep's output directory (held with ``flock`` while a sweep writes there).
LOCK = ".kassign-sweep.lock"


@contextlib.contextmanager
def sweep_lock(out: Path) -> Iterator[None]:
    """Hold ``out``'s sweep lock for the block; another process holding it is a :class:`BusyError` (exit 75).

    ``flock`` on ``out/.kassign-sweep.lock``: the kernel releases it when the holder exits, however it
    ends (no stale lock after a crash).  The file says who holds it, for the message.
    """
    import fcntl

    from solver.errors import BusyError, OutputError

    try:
        out.mkdir(parents=True, exist_ok=True)
        fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o666)
    except FileExistsError:
        raise OutputError(str(out), "exists and is not a directory") from None
    except OSError as e:
        raise OutputError.from_os(str(out), e) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise BusyError(f"{out}: another sweep is writing to this directory ({holder}); wait for it to "
                            f"finish, or give another --out") from None
        os.ftruncate(fd, 0)
        from spark_runner.cli.watchdog import kassign_pid

        # the process the user started (and would signal), not its command's worker
        os.pwrite(fd, f"pid {kassign_pid()}, started {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock



#: failed output (exit 73/74 as any output) rather than a crash: the disk is full, a quota, a file size limit ...
_WRITE_ERRNOS = ("ENOSPC", "EDQUOT", "EFBIG", "EIO", "EROFS", "EACCES")


def output_failure(e: BaseException, out: Path) -> None:
    """Raise :class:`~solver.errors.OutputError` for ``out/rows`` when ``e`` (a failed Spark write) says why an
    OS refused the write (``No space left on device`` ...); return otherwise (the caller re-raises ``e``)."""
    import errno

    from solver.errors import OutputError

    text = str(e)
    for name in _WRITE_ERRNOS:
        code = getattr(errno, name, None)
        if code is not None and os.strerror(code) in text:
            raise OutputError.from_os(str(out / ROWS), OSError(code, os.strerror(code)), partial=True) from None



def count_rows(out: Path) -> int:
    rows = out / ROWS
    if not rows.exists() or not any(rows.glob("assignor=*/*.parquet")):
        return 0
    import pyarrow.dataset as ds

    table = ds.dataset(str(rows), format="parquet", partitioning="hive").to_table(columns=list(ROW_KEY))
    return len(set(zip(*(table.column(c).to_pylist() for c in ROW_KEY), strict=True)))


class ReleaseMismatchError(KassignError):
    """The output directory holds rows made following another Kafka release (exit 2)."""

    exit_code = 2


def read_manifest(out: Path) -> dict[str, Any]:
    """``out/manifest.json`` as the last sweep wrote it (``{}`` when there is none), its keys of the types
    kassign writes (``grid`` and ``kafka_version`` text, ``solver_time_limit`` a number).

    Raises
    ------
    solver.errors.InstanceError
        The file is not such an object (damaged, edited, too deep or too large): exit 65 naming it.
    """
    path = out / MANIFEST
    if not os.path.lexists(path):
        return {}
    from solver.model.files import private_reads

    with private_reads():  # kassign's own file, written again by this sweep
        doc = read_document(path)  # bounded, strict JSON
    types: dict[str, Any] = {"grid": str, "kafka_version": str, "solver_time_limit": (int, float)}
    bad = [k for k, t in types.items() if isinstance(doc, dict) and k in doc and doc[k] is not None
           and (not isinstance(doc[k], t) or isinstance(doc[k], bool))]
    if not isinstance(doc, dict) or bad:
        what = f"{bad[0]} is not {'text' if bad[0] != 'solver_time_limit' else 'a number'}" if bad else \
            "not an object"
        raise InstanceError(str(path), [Problem(bad[0] if bad else "", f"not a sweep manifest ({what}): delete it "
                                                                     f"(or start over with --overwrite)")])
    return doc


def check_release(out: Path, grid: Grid) -> None:
    """Refuse to resume rows made following another Kafka release: rows are keyed without it.

    Raises
    ------
    ReleaseMismatchError
        When ``out/manifest.json`` records another ``kafka_version`` and rows exist.
    """
    if not (out / ROWS).exists():
        return
    before = read_manifest(out).get("kafka_version")
    from solver.kafka_version import DEFAULT

    now = grid.kafka_version or str(DEFAULT)
    if (before or str(DEFAULT)) != now:
        raise ReleaseMismatchError(f"{out} holds rows made following Kafka {before or DEFAULT}; this sweep follows "
                                   f"Kafka {now}: use another --out, or --overwrite")


class GridMismatchError(KassignError):
    """The output directory holds rows of another grid (exit 2): a report would mix both."""

    exit_code = 2


def check_grid(out: Path, grid: Grid, done: set[tuple[str, str]]) -> None:
    """Refuse to add this grid's rows to ``out`` when its rows ``done`` are of another grid.

    ``out`` remembers its grid by its rows: every scenario there must be one of this grid's (same points,
    seeds and scenario parameters: the scenario id is their digest) and every assignor one it evaluates.
    A grid that *adds* scenarios or assignors resumes (only what is missing runs); one that drops any, or
    describes other scenarios, would make a report of both grids under this grid's name.

    Raises
    ------
    GridMismatchError
        With what differs and how to go on (another ``--out``, or ``--overwrite``).
    """
    if not done:
        return
    mine = {sid for sid, _, _ in grid.scenarios()}
    theirs = {sid for sid, _ in done}
    names = {a for _, a in done}
    other_sids = theirs - mine
    other_names = sorted(names - set(grid.evaluated))
    if not other_sids and not other_names:
        return
    before = read_manifest(out).get("grid")
    whose = f"grid {before!r}" if isinstance(before, str) and before else "another grid"
    what = (f"{len(other_sids):,} of its {len(theirs):,} scenario(s) are not in this grid" if other_sids else
            f"it evaluated {', '.join(other_names)}, which this grid does not list")
    raise GridMismatchError(f"{out} holds the rows of {whose} ({what}); this sweep ({grid.name!r}) would report "
                            f"both: use another --out, or --overwrite")


def write_manifest(out: Path, grid: Grid, scenarios: int, rows: int) -> None:
    from solver.kafka_version import DEFAULT

    doc = {
        "grid": grid.name,
        "source": grid.source,
        "seeds": list(grid.seeds),
        "assignors": list(grid.evaluated),
        "kafka_version": grid.kafka_version or str(DEFAULT),
        "solver_time_limit": grid.solver_time_limit,
        "points": [p.to_dict() for p in grid.points],
        "scenarios": scenarios,
        "rows": rows,
        "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_atomic(out / MANIFEST, json.dumps(doc, indent=1) + "\n")
