"""Process-wide state of one run: a stop request, the stop hooks of running solvers, temporary files.

A signal (SIGINT, SIGTERM) must end a run within a second and leave every
output as it was.  Long native calls (a CP-SAT or MIP solve, a Spark job) do
not return to Python until they finish, so the signal is turned into
:func:`request_stop`: every running solver's stop hook is called (CP-SAT's
``stop_search``, ``MPSolver.InterruptSolve``, a MathOpt interrupter, Spark's
``cancelAllJobs``), the call returns early, and :func:`stoppable` raises
:class:`~solver.errors.Interrupted` instead of letting a partial answer be
used.  The atomic writer (:mod:`solver.model.files`) registers its temporary
files here and refuses to publish anything once a stop was requested, so
what a command writes is either complete or absent.

The CLI installs the signal handlers (``spark_runner/cli/supervise.py``);
from Python (a notebook) nothing is installed and nothing here changes
behaviour until :func:`request_stop` is called.

Examples
--------
>>> reset()
>>> stopped = []
>>> with stoppable(lambda: stopped.append("cp-sat")):
...     request_stop(2)
Traceback (most recent call last):
...
solver.errors.Interrupted: interrupted (SIGINT); nothing was written
>>> stopped
['cp-sat']
>>> reset()
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from solver.errors import Interrupted, signal_name

_lock = threading.RLock()
_signum: int | None = None
_hooks: dict[int, Callable[[], Any]] = {}
_ids = itertools.count()
_temps: set[str] = set()
_published: list[str] = []
#: Told of every temporary file created (``True``) and published or removed (``False``): the process that
#: removes them if this one is killed (``spark_runner/cli/watchdog.py``).
_temp_listener: Callable[[str, bool], Any] | None = None


#: Seconds after a stop request at which the hooks still registered are called again: a solver whose
#: ``stop_search`` came just before its native search started would otherwise run its whole budget.
RETRY_AFTER = (0.2, 1.0)


def request_stop(signum: int) -> None:
    """Ask the run to stop (``signum``: the signal that asked); calls every registered stop hook.

    The hooks still registered are called again after :data:`RETRY_AFTER` seconds (from a daemon thread).
    """
    global _signum
    with _lock:
        first = _signum is None
        if first:
            _signum = signum
    if not first:
        return
    _call_hooks()
    threading.Thread(target=_retry_hooks, name="kassign-stop-retry", daemon=True).start()


def _call_hooks() -> None:
    with _lock:
        hooks = list(_hooks.values())
    for hook in hooks:
        with contextlib.suppress(Exception):  # a solver that already finished may refuse to stop
            hook()


def _retry_hooks() -> None:
    last = 0.0
    for at in RETRY_AFTER:
        time.sleep(at - last)
        last = at
        if _signum is None:  # reset in the meantime (a new run in this process)
            return
        _call_hooks()


def stop_requested() -> int | None:
    """The signal number of the stop request, or ``None`` while the run may go on."""
    return _signum


def check() -> None:
    """Raise :class:`~solver.errors.Interrupted` when a stop was requested (call between units of work)."""
    if _signum is not None:
        raise Interrupted(_signum)


@contextlib.contextmanager
def stoppable(stop: Callable[[], Any]) -> Iterator[None]:
    """Register ``stop`` (ends the call inside early) while the block runs; raise ``Interrupted`` after it.

    A call ended by ``stop`` returns a partial answer, or fails (a cancelled Spark job); either way the
    block's outcome must not be used, so a stop request during (or before) the block raises
    :class:`~solver.errors.Interrupted` when it ends, in place of whatever the block raised.
    """
    check()  # asked to stop already: do not start the call at all
    key = next(_ids)
    with _lock:
        _hooks[key] = stop
    try:
        yield
    except Exception:
        if _signum is not None:
            raise Interrupted(_signum) from None
        raise
    finally:
        with _lock:
            _hooks.pop(key, None)
    check()


def listen_temps(listener: Callable[[str, bool], Any] | None) -> None:
    """Tell ``listener(path, live)`` of every temporary file tracked (``live``) and forgotten from now on."""
    global _temp_listener
    _temp_listener = listener


def track_temp(path: str) -> None:
    """Remember a temporary file, so that a hard exit on a signal removes it."""
    with _lock:
        _temps.add(path)
    if _temp_listener is not None:
        _temp_listener(os.path.abspath(path), True)


def untrack_temp(path: str) -> None:
    """Forget a temporary file (renamed into place or removed)."""
    with _lock:
        _temps.discard(path)
    if _temp_listener is not None:
        _temp_listener(os.path.abspath(path), False)


def remove_temps() -> None:
    """Remove every tracked temporary file (before a hard exit)."""
    with _lock:
        paths = list(_temps)
        _temps.clear()
    for p in paths:
        with contextlib.suppress(OSError):
            os.unlink(p)


def reset() -> None:
    """Forget a stop request, every hook and what was published (tests; a new run in the same process)."""
    global _signum
    with _lock:
        _signum = None
        _hooks.clear()
        _published.clear()


@contextlib.contextmanager
def publishing() -> Iterator[None]:
    """Hold off stop requests while the block publishes: it starts only if no stop was requested (else
    :class:`~solver.errors.Interrupted`), and a request that comes meanwhile takes effect after it, so a
    stop never lands between the check and the renames."""
    with _lock:
        check()
        yield


def note_published(shown: str) -> None:
    """Remember that the output ``shown`` (a file's name as the user gave it) is in place."""
    with _lock:
        _published.append(shown)


def published() -> tuple[str, ...]:
    """The outputs published in this run, in order (see :func:`note_published`)."""
    with _lock:
        return tuple(_published)


def stopped_line(signum: int) -> str:
    """The line a stopped run prints: nothing was written, or which outputs had been before the stop.

    Examples
    --------
    >>> reset()
    >>> stopped_line(15)
    'interrupted (SIGTERM); nothing was written'
    >>> note_published("out.json")
    >>> stopped_line(2)
    'interrupted (SIGINT) after out.json was written (complete); nothing else was written'
    >>> reset()
    """
    done = published()
    if not done:
        return str(Interrupted(signum))
    verb = "was" if len(done) == 1 else "were"
    return (f"interrupted ({signal_name(signum)}) after {', '.join(done)} {verb} written (complete); "
            "nothing else was written")


def run_cpsat(solver: Any, model: Any, callback: Any = None) -> Any:
    """``solver.solve(model)`` bounded in memory and stoppable; returns the CP-SAT status.

    ``max_memory_in_mb`` (CP-SAT ends its search when it is crossed, instead of failing to allocate) is
    set to what this process may still use (:func:`solver.resources.solver_memory_mb`); the workers are
    as many as the memory left holds (each thread has its stack and its own copy of the model: under
    ``ulimit -v`` eight of them do not fit where one does; :func:`solver.resources.cpsat_workers`, which
    refuses with :class:`~solver.resources.TooLargeError` when not one fits); and a stop request ends the
    search at once (``stop_search``) and raises :class:`~solver.errors.Interrupted`.
    """
    from solver.resources import cpsat_workers, solver_memory_mb

    prm = solver.parameters
    prm.max_memory_in_mb = min(int(prm.max_memory_in_mb), solver_memory_mb())
    # CP-SAT's own SIGINT handler would replace the process's (and abort in std::bad_function_call from
    # Python): signals are the process's business, a stop reaches the search through stop_search
    prm.catch_sigint_signal = False
    proto = model.proto
    wanted = int(prm.num_workers) or DEFAULT_WORKERS
    # TooLargeError (exit 65) when not even one worker fits: a refusal, not std::bad_alloc mid-search
    fit = cpsat_workers(len(proto.variables) + len(proto.constraints), wanted)
    if wanted > fit:
        prm.num_workers = fit
    with stoppable(solver.stop_search):
        return solver.solve(model, callback) if callback is not None else solver.solve(model)


#: Deterministic mode: the wall-clock safety net of one CP-SAT solve, ``SAFETY_FACTOR * budget +
#: SAFETY_SECONDS`` (a short stage's presolve on a machine running many processes per core took over 20x
#: its deterministic budget plus a second, and the answer then depended on the load).
SAFETY_FACTOR = 20.0
SAFETY_SECONDS = 10.0


def set_budget(solver: Any, seconds: float, *, seed: int, deterministic: bool, workers: int,
               interleave: bool = False) -> None:
    """Seed, workers and time limits of one CP-SAT solve, the same way for every stage that calls CP-SAT.

    Deterministic: one worker and ``seconds`` of CP-SAT's deterministic time, the wall clock only as a
    safety net (:data:`SAFETY_FACTOR` times ``seconds`` plus :data:`SAFETY_SECONDS`), so the answer does not
    depend on the machine's load; with ``interleave``, that worker runs the interleaved portfolio
    (:func:`set_work_budget`).  Otherwise ``workers`` (a parallel portfolio) and ``seconds`` of wall clock.

    Examples
    --------
    >>> from ortools.sat.python import cp_model
    >>> s = cp_model.CpSolver()
    >>> set_budget(s, 2.0, seed=7, deterministic=True, workers=8)
    >>> s.parameters.num_workers, s.parameters.max_deterministic_time, s.parameters.max_time_in_seconds
    (1, 2.0, 50.0)
    >>> set_budget(s, 0.0, seed=7, deterministic=False, workers=4)
    >>> s.parameters.num_workers, s.parameters.max_time_in_seconds
    (4, 0.01)
    """
    seconds = max(0.01, float(seconds))
    if deterministic:
        set_work_budget(solver, seconds, wall_cap=SAFETY_FACTOR * seconds + SAFETY_SECONDS, seed=seed,
                        interleave=interleave)
        return
    p = solver.parameters
    p.random_seed = int(seed)
    p.num_workers = max(1, int(workers))
    p.max_time_in_seconds = seconds


def set_work_budget(solver: Any, work: float, *, wall_cap: float, seed: int, workers: int = 1,
                    interleave: bool = False) -> None:
    """Seed, workers and a budget of ``work`` seconds of CP-SAT's deterministic time, ``wall_cap`` seconds
    of wall clock stopping it anyway (for stages whose caller sets its own cap).

    One worker, or several with ``interleave`` (an interleaved portfolio), is reproducible unless the wall
    cap rather than the work budget ends the solve; several without it run a parallel portfolio.

    Examples
    --------
    >>> from ortools.sat.python import cp_model
    >>> s = cp_model.CpSolver()
    >>> set_work_budget(s, 1.5, wall_cap=4.0, seed=3, workers=2, interleave=True)
    >>> s.parameters.max_deterministic_time, s.parameters.max_time_in_seconds, s.parameters.interleave_search
    (1.5, 4.0, True)
    """
    p = solver.parameters
    p.random_seed = int(seed) % (1 << 31)
    p.num_workers = max(1, int(workers))
    if interleave:
        p.interleave_search = True
    p.max_deterministic_time = max(0.01, float(work))
    p.max_time_in_seconds = max(0.01, float(wall_cap))


#: CP-SAT's own worker count when ``num_workers`` is 0 (it uses the cores, at most 8 on this size of machine).
DEFAULT_WORKERS = 8


def run_mip(lp: Any) -> Any:
    """``lp.Solve()`` for a ``pywraplp`` solver, stoppable (``InterruptSolve``); SCIP also gets a memory bound."""
    from solver.resources import solver_memory_mb

    if lp.SolverVersion().upper().startswith("SCIP"):
        lp.SetSolverSpecificParametersAsString(f"limits/memory = {solver_memory_mb()}\n")
    with stoppable(lp.InterruptSolve):
        return lp.Solve()


def run_mathopt(solve: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``mathopt.solve(*args, **kwargs)`` with an interrupter a stop request triggers."""
    from ortools.util.python.solve_interrupter import SolveInterrupter

    interrupter = SolveInterrupter()
    with stoppable(interrupter.interrupt):
        return solve(*args, interrupter=interrupter, **kwargs)


__all__ = ["check", "listen_temps", "note_published", "published", "publishing", "remove_temps", "request_stop",
           "reset", "run_cpsat", "run_mathopt", "run_mip", "set_budget", "set_work_budget", "stop_requested",
           "stoppable", "stopped_line", "track_temp", "untrack_temp"]
