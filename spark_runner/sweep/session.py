"""The Spark session of a sweep: its master, its start (in a session of its own, its log to a file), its cancel."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from solver import runtime
from solver.errors import KassignError

#: Task attempts per task in local mode (Spark's local[N] default is 1: no retry).
LOCAL_MAX_FAILURES = 4


def master_label(master: str | None) -> str:
    """The master as the user gave it, with the task retries kassign adds said in words.

    Examples
    --------
    >>> master_label("local[2]")
    'local[2], 4 attempts per task'
    >>> master_label(None)
    'local[*], 4 attempts per task'
    >>> master_label("spark://127.0.0.1:7077")
    'spark://127.0.0.1:7077'
    """
    given = master or "local[*]"
    real = normalize_master(master)
    if real == given:
        return given
    tries = real.rsplit(",", 1)[1].rstrip("]")
    return f"{given}, {tries} attempts per task"


def normalize_master(master: str | None) -> str:
    """``local[*]`` by default; ``local`` / ``local[N]`` get task retries (``local[N,F]``).

    Examples
    --------
    >>> normalize_master(None)
    'local[*,4]'
    >>> normalize_master("local[2]")
    'local[2,4]'
    >>> normalize_master("local[2,1]")
    'local[2,1]'
    >>> normalize_master("spark://127.0.0.1:7077")
    'spark://127.0.0.1:7077'
    """
    m = (master or "local[*]").strip()
    if m == "local":
        m = "local[1]"
    hit = re.fullmatch(r"local\[(\*|\d+)\]", m)
    if hit:
        return f"local[{hit.group(1)},{LOCAL_MAX_FAILURES}]"
    return m


def is_local(master: str) -> bool:
    """True for ``local``, ``local[...]`` masters."""
    return master == "local" or master.startswith("local[")


def _loopback_master(master: str) -> bool:
    hit = re.match(r"spark://([^:/,]+)", master)
    return bool(hit) and hit.group(1) in ("127.0.0.1", "localhost")  # type: ignore[union-attr]


def _code_zip() -> str:
    """Zip the three kassign packages so cluster executors import the same code as the driver."""
    root = Path(__file__).resolve().parents[2]
    fd, path = tempfile.mkstemp(prefix="kassign-code-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for pkg in ("solver", "heuristics", "spark_runner"):
            for f in sorted((root / pkg).rglob("*.py")):
                z.write(f, f.relative_to(root).as_posix())
    return path


def start_spark(
    master: str | None = None, conf: Mapping[str, str] | None = None, app_name: str = "kassign-sweep",
    log_path: str | Path | None = None,
) -> Any:
    """Start (or get) a SparkSession for sweeps.

    Local masters bind to 127.0.0.1, get task retries and run their workers with the running interpreter
    (``PYSPARK_PYTHON`` is overridden: the workers need kassign); a cluster's ``PYSPARK_PYTHON`` defaults to it.
    With ``log_path`` the JVM's own output (its start-up banner, log4j's
    warnings) goes to that file instead of the terminal, so a user sees only
    kassign's lines; Spark errors still reach Python as exceptions.
    """
    m = normalize_master(master)
    local = is_local(m)
    if local:
        # local workers run on this machine: kassign's own interpreter, whatever PYSPARK_PYTHON says (a Spark
        # installation often sets it to a python without kassign: every task then failed with a Java trace)
        given = os.environ.get("PYSPARK_PYTHON")
        if given and given != sys.executable:
            print(f"[sweep] local Spark workers run kassign's interpreter {sys.executable}, not PYSPARK_PYTHON={given}",
                  file=sys.stderr, flush=True)
        os.environ["PYSPARK_PYTHON"] = sys.executable
    else:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    settings = {"spark.master": m, "spark.app.name": app_name,
                "spark.ui.showConsoleProgress": "false",
                "spark.log.level": "ERROR",
                "spark.sql.shuffle.partitions": "8",
                "spark.hadoop.mapreduce.fileoutputcommitter.algorithm.version": "1",
                "spark.sql.sources.partitionOverwriteMode": "static",
                "spark.speculation": "false"}
    if local:
        settings["spark.ui.enabled"] = "false"
    if local or _loopback_master(m):
        # a local run, or a cluster on this machine's loopback: the driver listens on 127.0.0.1 only
        settings.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
    settings.update(conf or {})
    b = SparkSession.builder
    for k, v in settings.items():
        b = b.config(k, v)
    _starting.set()
    try:
        # a stop request (Ctrl-C) while Spark starts ends its JVM: the start-up (tens of seconds on a busy
        # machine) has nothing to cancel and nothing to save, so there is no reason to wait for it
        with runtime.stoppable(lambda: _end_starting_jvm(SparkContext)):
            _launch_gateway(SparkConf(loadDefaults=False).setAll(list(settings.items())), SparkContext, log_path)
        with runtime.stoppable(lambda: _end_starting_jvm(SparkContext)):
            spark = b.getOrCreate()
    except Exception as e:  # a bad --master or --conf, no Java: one line, not the JVM's stack trace
        where = f" (Spark's own log: {log_path})" if log_path is not None else ""
        raise SparkStartError(f"cannot start Spark (master {master or 'local[*]'}): {_first_line(e)}{where}") \
            from None
    finally:
        _starting.clear()
    spark.sparkContext.setLogLevel("ERROR")
    if not local:
        spark.sparkContext.addPyFile(_code_zip())
    return spark


#: Set while :func:`start_spark` starts Spark (its JVM launching, the SparkContext being built).
_starting = threading.Event()


def spark_starting() -> bool:
    """Whether :func:`start_spark` is starting Spark now: a signal then has nothing to cancel or save."""
    return _starting.is_set()


def _end_starting_jvm(context: Any) -> None:
    """Kill the JVM of ``context``'s gateway (launched by :func:`_launch_gateway`), if it runs yet: the py4j
    call waiting on it then fails, and :func:`solver.runtime.stoppable` turns that into ``Interrupted``."""
    proc = getattr(context._gateway, "proc", None)
    if proc is not None and proc.poll() is None:
        proc.kill()


class SparkStartError(KassignError):
    """Spark did not start (a bad ``--master`` or ``--conf``, no Java): exit 69, ``EX_UNAVAILABLE``."""

    exit_code = 69


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "Traceback", "py4j")):
            return line[:300]
    return text.splitlines()[0][:300]


def _launch_gateway(spark_conf: Any, context: Any, log_path: str | Path | None) -> None:
    """Start Spark's JVM in a session of its own (``setsid``), its output to ``log_path``, unless it runs.

    Ctrl-C sends SIGINT to the terminal's whole process group; Spark's JVM ignores it, but the Python
    workers it starts do not, and die with tracebacks mid-task.  In its own session nothing reaches
    them: the driver alone gets the signal, cancels the jobs and stops Spark (the JVM still exits when
    the driver dies: it watches its stdin).
    """
    if context._gateway is not None:
        return
    from pyspark.java_gateway import launch_gateway

    kwargs: dict[str, Any] = {"start_new_session": True}
    if log_path is None:
        context._ensure_initialized(gateway=launch_gateway(spark_conf, popen_kwargs=kwargs))
        return
    with open(log_path, "ab") as log:  # the JVM keeps its own copy of the descriptor
        context._ensure_initialized(gateway=launch_gateway(spark_conf, popen_kwargs={**kwargs, "stdout": log,
                                                                                      "stderr": log}))



def cancel_jobs(spark: Any) -> None:
    """Cancel every Spark job, quietly: the job's abort is expected, not an error to print."""
    sc = spark.sparkContext
    with contextlib.suppress(Exception):
        sc.setLogLevel("OFF")
    sc.cancelAllJobs()

