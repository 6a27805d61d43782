"""Worker processes: each solves one request at a time; the service kills one that overruns its deadline.

A worker is ``python -m spark_runner.serve.worker FD``: it talks to the service
over a socket pair (:class:`multiprocessing.connection.Connection`, pickled
messages).  For one job it sends

1. ``("fallback", doc, cost)``: Kafka's own assignor for the protocol, computed first
   (fast) so that the service has an answer whatever happens to the optimum;
2. ``("result", doc, fallback_used, reason)``: the optimum within the time left,
   or Kafka's answer when that is better on (max load, moved cost) or the optimum
   found none; or ``("invalid", problems)`` / ``("error", message)``.

Native solvers (OR-Tools) cannot be interrupted from Python, so the cut at the
deadline is the process boundary: the service stops waiting at the deadline,
answers with what it has and kills the worker (a fresh one takes its place).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from solver.errors import InstanceError

#: Share of the time left that the optimum's solver gets as its time limit (model building, scoring and the
#: answer's trip back take the rest), and the least time worth starting a solve for.
SOLVE_SHARE = 0.7
SOLVE_RESERVE = 0.05
MIN_SOLVE = 0.02
#: Seconds a worker sleeps before each optimum (fault injection for tests: a solve that ignores its limit).
DELAY_ENV = "KASSIGN_SERVE_SOLVE_DELAY"
Send = Callable[[tuple[Any, ...]], None]


def cost(instance: Any, assignment: Any) -> tuple[float, ...]:
    """What the service compares, lexicographically (lower is better).

    Consumer groups: (not valid, max load, moved cost) -- ``weighted_max_load`` is the max
    load in the instance's unit (partitions per capacity without weights); an assignment
    that splits co-partitioned units (outcome ``split``: a stream-stream join reads wrong
    data) counts as not valid, whatever its load.  Streams: (invalid, busiest thread's
    actives, busiest thread's replicas, restoration cost).
    """
    from solver.model.scoring import score

    if instance.protocol == "streams":
        from solver.streams.scoring import score_streams

        s = score_streams(instance, assignment)
        return (float(not s["valid"]), _num(s["max_active_load"]), _num(s["max_total_load"]),
                _num(s["restoration_cost"]))
    m = score(instance, assignment)
    return float(m["outcome"] != "valid"), _num(m["weighted_max_load"]), _num(m["moved_cost"])


def _num(v: Any) -> float:
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else math.inf


def solve(job: dict[str, Any], send: Send) -> None:
    """Carry out one job (a checked request) and send its messages (see the module's docstring).

    Parameters
    ----------
    job
        ``instance`` (decoded JSON), ``assignor``, ``fallback``, ``balance_tolerance`` and
        ``seconds`` (wall seconds left until the deadline when the job was sent).
    send
        Where the messages go.
    """
    from solver.io import parse_instance
    from solver.options import ASSIGNOR_OPTIONS
    from solver.result import Params, Status
    from spark_runner.assignors import get
    from spark_runner.cli.output import result_document

    start = time.monotonic()
    try:
        inst = parse_instance(job["instance"], "request", ("instance",))
    except InstanceError as e:
        send(("invalid", e.problems))
        return
    try:
        fb = get(job["fallback"]).run(inst, Params())
        fb_doc = result_document(inst, job["fallback"], fb)
        fb_cost = cost(inst, fb.assignment)
    except Exception as e:  # an instance Kafka's assignor refuses (e.g. too large): no fallback answer
        fb_doc, fb_cost = None, None
        fb_error = f"{job['fallback']} failed: {e}"
    else:
        fb_error = ""
        send(("fallback", fb_doc, fb_cost))
    if job["assignor"] == job["fallback"] and fb_doc is not None:  # Kafka's assignor asked for by name
        send(("result", fb_doc, False, None))
        return
    left = job["seconds"] - (time.monotonic() - start)
    limit = left * SOLVE_SHARE - SOLVE_RESERVE
    delay = os.environ.get(DELAY_ENV)
    if delay:  # fault injection (tests, docs/serve.md): an optimum that overruns its time limit, as native code can
        time.sleep(float(delay))
    if limit < MIN_SOLVE:
        send(_fallback(fb_doc, "the deadline left no time for the optimum", fb_error))
        return
    try:
        # what `kassign assign --assignor NAME --time-limit T [--balance-tolerance EPS] -O deterministic=0` runs
        # (seed 0): a request has a deadline on the clock, so the engine's budgets are wall-clock shares
        # (docs/algorithms.md, "Time and determinism": the service opts out of work budgets for latency)
        opts = {"deterministic": False} if "deterministic" in ASSIGNOR_OPTIONS.get(job["assignor"], {}) else {}
        res = get(job["assignor"]).run(inst, Params(time_limit=limit, seed=0, options=opts,
                                                    balance_tolerance=job["balance_tolerance"]))
    except InstanceError as e:  # too large for this machine's memory, located by the engine
        send(("invalid", e.problems))
        return
    except Exception as e:
        send(_fallback(fb_doc, f"{job['assignor']} failed: {e}", fb_error))
        return
    if res.assignment is None or res.status in (Status.INFEASIBLE, Status.TIMEOUT):
        send(_fallback(fb_doc, f"{job['assignor']} found no assignment within the deadline ({res.status})", fb_error))
        return
    doc = result_document(inst, job["assignor"], res)
    if fb_cost is not None:
        mine = cost(inst, res.assignment)
        if fb_cost < mine:
            send(_fallback(fb_doc, f"{job['fallback']} is better on (max load, moved cost): "
                                   f"{_show(fb_cost)} against {_show(mine)}", fb_error))
            return
    send(("result", doc, False, None))


def _fallback(doc: Any, reason: str, fb_error: str) -> tuple[Any, ...]:
    if doc is None:
        return ("error", f"{reason}; {fb_error}" if fb_error else reason)
    return ("result", doc, True, reason)


def _show(c: tuple[float, ...]) -> str:
    return "(" + ", ".join(f"{v:,.6g}" for v in c[1:]) + ")"


#: A small weighted group: solving it once imports and initialises every engine a request may use.  Its
#: unequal loads and the member that owns everything take the exact engine through its CP-SAT stages (the first
#: import of CP-SAT, which loads pandas, costs seconds: a first weighted request paid them at its deadline).
_WARM_UP = {"format": "kassign/v1", "topics": {"T": {"partitions": 6, "weights": [100, 1, 1, 1, 1, 1]}},
            "members": [{"id": "a", "topics": ["T"], "owned": {"T": [0, 1, 2, 3, 4, 5]}, "generation": 1},
                        {"id": "b", "topics": ["T"]}]}


def warm_up() -> None:
    """Import the registry and run the engines once, so that the first request pays for neither."""
    from spark_runner.assignors import load_all

    load_all()
    from ortools.sat.python import cp_model  # noqa: F401  (also when the instance below needs no CP-SAT)

    unit = {**_WARM_UP, "topics": {"T": 6}}
    delay = os.environ.pop(DELAY_ENV, None)  # the fault is for requests
    try:
        for instance in (_WARM_UP, unit):
            solve({"instance": instance, "assignor": "optimal", "fallback": "uniform", "balance_tolerance": None,
                   "seconds": 5.0}, lambda _msg: None)
    finally:
        if delay is not None:
            os.environ[DELAY_ENV] = delay


def main(fd: int) -> None:
    """The worker's loop: receive a job, solve it, wait for the next; exit when the service goes away."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the service stops its workers itself
    conn = Connection(fd)
    warm_up()
    try:
        conn.send(("ready",))
    except OSError:
        return
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        try:
            solve(job, conn.send)
        except MemoryError:
            conn.send(("error", "out of memory"))
        except Exception as e:  # never a traceback to the client; the service logs it
            conn.send(("error", f"internal error: {type(e).__name__}: {e}"))


# --------------------------------------------------------------------------- the service's side


class Worker:
    """One worker process and the service's end of its socket pair."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "spark_runner.serve.worker", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C at the terminal reaches the service, which stops its workers
        )
        theirs.close()
        self.conn = Connection(ours.detach())

    def ready(self, timeout: float = 120.0) -> bool:
        """Wait until the process has warmed up (``False``: it died or took longer than ``timeout`` seconds)."""
        try:
            return bool(self.conn.poll(timeout)) and self.conn.recv() == ("ready",)
        except (EOFError, OSError):
            return False

    def kill(self) -> None:
        """Stop the process at once (SIGKILL: a native solver does not answer anything gentler) and reap it."""
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        self.conn.close()

    def alive(self) -> bool:
        """Whether the process still runs."""
        return self.proc.poll() is None


class Pool:
    """``size`` worker processes serving, ``spares`` more warmed up beside them.

    A request borrows a serving worker.  One that overran its deadline is killed and a
    spare takes its place at once (a fresh process needs seconds to import and warm
    up); a new spare starts in the background.
    """

    def __init__(self, size: int, spares: int = 1) -> None:
        self.size = size
        self.spares = spares
        self._idle: list[Worker] = []
        self._spare: list[Worker] = []
        self._serving = 0
        self._all: set[Worker] = set()
        self._cond = threading.Condition()
        self._closed = False
        started = [Worker() for _ in range(size + spares)]  # they warm up side by side
        for w in started:
            if not w.ready():
                for v in started:
                    v.kill()
                raise OSError("a worker process did not start (see the lines above)")
            self._place(w)

    def _place(self, w: Worker) -> None:
        """A warm worker: serving when a place is free, else a spare."""
        with self._cond:
            if self._closed:
                w.kill()
                return
            self._all.add(w)
            if self._serving < self.size:
                self._serving += 1
                self._idle.append(w)
                self._cond.notify()
            else:
                self._spare.append(w)

    def counts(self) -> tuple[int, int, int]:
        """(serving, idle, spare) worker processes."""
        with self._cond:
            return self._serving, len(self._idle), len(self._spare)

    def borrow(self, timeout: float) -> Worker | None:
        """An idle worker, or ``None`` when none is free within ``timeout`` seconds."""
        end = time.monotonic() + timeout
        with self._cond:
            while not self._idle:
                left = end - time.monotonic()
                if left <= 0 or self._closed:
                    return None
                self._cond.wait(left)
            return self._idle.pop()

    def give_back(self, w: Worker) -> None:
        """Return a worker that finished its job."""
        if not w.alive():
            self.replace(w)
            return
        with self._cond:
            self._idle.append(w)
            self._cond.notify()

    def replace(self, w: Worker) -> None:
        """Kill ``w``; a spare serves in its place at once, and a fresh worker starts in the background."""
        with self._cond:
            self._all.discard(w)
            self._serving -= 1
            if self._spare:
                self._serving += 1
                self._idle.append(self._spare.pop())
                self._cond.notify()

        def renew() -> None:
            w.kill()
            try:
                fresh = Worker()
                if not fresh.ready():
                    fresh.kill()
                    raise OSError("it did not warm up")
                self._place(fresh)
            except OSError as e:  # out of processes: the pool runs smaller, and says so
                print(f"kassign serve: cannot start a worker: {e}", file=sys.stderr, flush=True)

        threading.Thread(target=renew, name="kassign-renew", daemon=True).start()

    def close(self) -> None:
        """Kill every worker."""
        with self._cond:
            self._closed = True
            workers = list(self._all)
            self._all.clear()
            self._idle.clear()
            self._spare.clear()
            self._cond.notify_all()
        for w in workers:
            w.kill()


def run_job(pool: Pool, job: dict[str, Any], deadline: float) -> tuple[Any, ...]:
    """Run ``job`` on a pooled worker until ``deadline`` (``time.monotonic()``); the message to answer with.

    Returns ``("result", doc, fallback_used, reason)``, ``("invalid", problems)``,
    ``("error", message)`` or ``("busy", message)`` (no worker free in time) -- past the
    deadline Kafka's answer when the worker sent it, the worker then killed.
    """
    w = pool.borrow(max(0.0, deadline - time.monotonic()))
    if w is None:
        return ("busy", "no worker was free before the deadline")
    job = {**job, "seconds": max(0.0, deadline - time.monotonic())}
    fallback: tuple[Any, ...] | None = None
    try:
        w.conn.send(job)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not w.conn.poll(left):
                pool.replace(w)
                if fallback is not None:
                    return ("result", fallback[1], True, "the optimum was cut at the deadline")
                return ("busy", "neither the optimum nor Kafka's assignor answered within the deadline")
            msg = w.conn.recv()
            if msg[0] == "fallback":
                fallback = msg
                continue
            pool.give_back(w)
            return tuple(msg)
    except (EOFError, OSError) as e:  # the worker died (killed by the OS for memory, say)
        pool.replace(w)
        if fallback is not None:
            return ("result", fallback[1], True, f"the optimum's worker died ({type(e).__name__})")
        return ("error", "the worker died while solving (out of memory?)")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main(int(sys.argv[1]))
