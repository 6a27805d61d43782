"""A real Spark standalone cluster on 127.0.0.1: one master, two workers, `kassign sweep --master spark://...`.

Started from the installed pyspark (``SPARK_HOME`` = the pyspark package folder); every process
started here is stopped in a ``finally`` (each in its own process group, so executors go too).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from spark_runner.sweep.report import load_rows
from tests.spark_runner.sweep.conftest import expected_rows, need_registered

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass
class Cluster:
    """A running standalone cluster."""

    url: str
    webui: str
    workers: list[subprocess.Popen] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.webui}/json/", timeout=5) as r:
            return json.loads(r.read())


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(SPARK_HOME=str(_spark_home()), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_NO_DAEMONIZE="1")
    return env


def _wait(cond, what: str, timeout: float = 180.0) -> None:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            if cond():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)  # its own process group: the JVM and its executors
    deadline = time.monotonic() + 20
    for p in reversed(procs):
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    spark_class = _spark_home() / "bin" / "spark-class"
    if not spark_class.exists():
        pytest.skip(f"{spark_class} not found")
    tmp = tmp_path_factory.mktemp("cluster")
    port, webui = _free_port(), _free_port()
    env = _env()
    procs: list[subprocess.Popen] = []
    fds: list[int] = []

    def log(name: str) -> int:
        fds.append(os.open(tmp / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        return fds[-1]

    try:
        master = subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(webui)],
            env=env, stdout=log("master.log"), stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(master)
        c = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{webui}", procs=procs)
        _wait(lambda: c.state()["status"] == "ALIVE", "the master")
        for i in range(2):
            w = subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", c.url, "--host", "127.0.0.1",
                 "--cores", "1", "--memory", "1g", "--webui-port", str(_free_port()),
                 "--work-dir", str(tmp / f"work{i}")],
                env=env, stdout=log(f"worker{i}.log"), stderr=subprocess.STDOUT,
                start_new_session=True)
            procs.append(w)
            c.workers.append(w)
        _wait(lambda: sum(w["state"] == "ALIVE" for w in c.state()["workers"]) == 2, "two workers")
        yield c
    finally:
        _stop(procs)
        for fd in fds:
            os.close(fd)


GRID = {
    "name": "cluster",
    "seeds": 3,
    "assignors": ["range", "roundrobin"],
    "solver_time_limit": 5,
    "params": {"members": [3, 5], "topics": 2, "partitions_min": 2, "partitions_max": 6, "steps": 4,
               "events": ["join", "leave", "crash", "rolling-restart", "partition-expansion"]},
}


def _sweep_cmd(grid: Path, out: Path, url: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "spark_runner", "sweep", str(grid), "--out", str(out), "--master", url,
            "--conf", "spark.executor.memory=512m", "--conf", "spark.cores.max=2", *extra]


def _check_rows(out: Path, doc: dict) -> None:
    df = load_rows(out)
    want = expected_rows(doc)
    assert len(df) == len(want)
    assert not df.duplicated(["scenario_id", "step", "assignor"]).any()
    got = df.set_index(["scenario_id", "step", "assignor"]).sort_index()
    exp = want.set_index(["scenario_id", "step", "assignor"]).sort_index()
    assert got.index.equals(exp.index)
    for col in ("moved", "max_load", "sum_sq_load", "max_load_gap", "valid", "members", "partitions"):
        assert got[col].astype(float).tolist() == exp[col].astype(float).tolist(), col


def test_sweep_on_a_standalone_cluster(cluster: Cluster, tmp_path: Path) -> None:
    need_registered("range", "roundrobin")
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump(GRID))
    out = tmp_path / "out"
    proc = subprocess.run(_sweep_cmd(grid, out, cluster.url), env=_env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "[sweep] done" in proc.stderr
    _check_rows(out, GRID)
    assert (out / "report" / "index.html").exists()
    apps = cluster.state()["completedapps"]
    assert any(a["name"] == "kassign-sweep" for a in apps)  # it really ran on this cluster


def _executors(worker: subprocess.Popen) -> list[int]:
    """Executor JVMs the worker launched (they are in the worker's process group, which we started)."""
    out = subprocess.run(["ps", "-e", "-ww", "-o", "pid=,pgid=,args="], capture_output=True, text=True)
    pids = []
    for line in out.stdout.splitlines():
        pid, pgid, args = line.split(None, 2)
        if int(pgid) == worker.pid and "CoarseGrainedExecutorBackend" in args:
            pids.append(int(pid))
    return pids


def test_killing_an_executor_mid_sweep_loses_and_duplicates_no_rows(cluster: Cluster, tmp_path: Path) -> None:
    need_registered("range", "roundrobin")
    doc = dict(GRID, seeds=8, name="cluster-kill")
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    proc = subprocess.Popen(_sweep_cmd(grid, out, cluster.url, "--partitions", "16", "--progress-every", "0.5",
                                       "--no-report"),
                            env=_env(), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    lines: list[str] = []
    killed: list[int] = []

    def watch() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            hit = re.search(r"tasks (\d+)/(\d+) done", line)
            if hit and not killed and 1 <= int(hit.group(1)) < int(hit.group(2)) - 2:
                for w in cluster.workers:
                    pids = _executors(w)
                    if pids:
                        os.kill(pids[0], signal.SIGKILL)  # an executor started by our worker dies mid-job
                        killed.append(pids[0])
                        break

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        rc = proc.wait(timeout=900)
    finally:
        if proc.poll() is None:
            proc.kill()
    t.join(timeout=10)
    assert rc == 0, "".join(lines[-40:])
    assert killed, "no executor was killed mid-sweep (the job finished too fast?)\n" + "".join(lines[-20:])
    _check_rows(out, doc)
