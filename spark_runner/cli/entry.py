"""The ``kassign`` console script: signal handling first, then the app (whose imports take a second).

Until :func:`spark_runner.cli.supervise.run` takes over, a SIGINT or SIGTERM
ends the process at once with ``128 + N``: nothing has been read or written
yet, and Python's default (a ``KeyboardInterrupt`` traceback from the middle
of an import) is what a user must never see.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
from typing import TYPE_CHECKING

from spark_runner.cli.signals import takes_over

if TYPE_CHECKING:
    from types import FrameType


def _early_exit(signum: int, _frame: FrameType | None) -> None:
    os.write(2, f"interrupted ({signal.Signals(signum).name}); nothing was written\n".encode())
    os._exit(128 + signum)


_early_exit.kassign_early = True  # type: ignore[attr-defined]  # supervise.run replaces it


#: Native libraries each command loads, imported first under an address-space limit (below); a command not named
#: here loads the assignor registry (OR-Tools' min-cost flow), except the light ones.
_FLOW = ("ortools.graph.python.min_cost_flow",)
_SOLVERS = ("ortools.sat.python.cp_model", *_FLOW)  # CP-SAT, HiGHS, SCIP, and pandas with them
PRELOAD = {"assign": _SOLVERS, "compare": _SOLVERS, "frontier": _SOLVERS, "score": _SOLVERS, "plan": _SOLVERS,
           "report": (*_FLOW, "pandas", "pyarrow.dataset")}
#: Commands that load none of them.
LIGHT_COMMANDS = ("validate", "decode-subscription", "capture")


def _address_space_limited() -> bool:
    try:
        import resource

        return resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY
    except (ImportError, ValueError, OSError):
        return False


def reserve_std_fds() -> None:
    """Put ``/dev/null`` on descriptors 0, 1 and 2 where they are closed (``kassign ... >&- 2>&-``), before
    anything opens a file.

    Otherwise the next file opened takes the number: a temporary output file on descriptor 2 would receive
    every library's diagnostics.  Descriptor 1 gets it read-only, so that writing what the command prints
    fails (exit 74) instead of vanishing.
    """
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        try:
            new = os.open(os.devnull, os.O_WRONLY if fd == 2 else os.O_RDONLY)
            if new != fd:
                os.dup2(new, fd)
                os.close(new)
        except OSError:
            pass


def _quiet_hashlib() -> None:
    """Import ``hashlib`` with its complaints silenced: when OpenSSL cannot be mapped (a tight ``ulimit -v``) it
    logs a traceback per algorithm it then lacks, and kassign must print none (what fails for memory later is
    exit 65 with one line)."""
    import logging

    root = logging.getLogger()
    null = logging.NullHandler()
    root.addHandler(null)
    try:
        import hashlib  # noqa: F401
    finally:
        root.removeHandler(null)


def main() -> None:
    """Install the early signal handlers, then run :func:`spark_runner.cli.app.main`.

    Under an address-space limit (``ulimit -v``), before any library starts a thread: OpenBLAS gets one
    thread (each of its threads reserves a large buffer), pyarrow's jemalloc none in the background, and the C
    allocator shares its arenas
    (:func:`solver.resources.limit_arenas`); an import that still fails for memory is exit 65, not a
    traceback.
    """
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if takes_over(sig, signal.getsignal(sig)):
            signal.signal(sig, _early_exit)
    reserve_std_fds()
    from spark_runner.cli.watchdog import fork

    fork()  # returns in the child, which runs the command; the parent owns the signals (watchdog.py)
    limited = _address_space_limited()
    if limited:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        # pyarrow's jemalloc starts a background thread and, when that fails for memory, says so on stderr
        os.environ.setdefault("JE_ARROW_MALLOC_CONF", "background_thread:false")
    try:
        from solver.resources import limit_arenas

        limit_arenas()
        if limited:
            _quiet_hashlib()
        command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
        if limited and command is not None and command not in LIGHT_COMMANDS:
            # load the native libraries now, in the only thread: loaded later from a worker thread, a library
            # that does not fit can abort the process (glibc: "cannot allocate memory for thread-local data",
            # exit 127: `kassign list` under ulimit -v 200M did)
            import importlib

            for module in PRELOAD.get(command, _FLOW):
                importlib.import_module(module)
        from spark_runner.cli.app import main as app_main
    except (MemoryError, ImportError, SystemError, OSError) as e:
        # under an address-space limit any library that fails to load failed for memory (C extensions then
        # report it in odd ways: "failed to map segment", "error return without exception set", an OSError
        # ENOMEM listing a package's folder)
        if isinstance(e, OSError) and e.errno != errno.ENOMEM:
            raise
        if not (limited or isinstance(e, (MemoryError, OSError)) or "failed to map segment" in str(e)
                or "Cannot allocate memory" in str(e)):
            raise
        os.write(2, f"error: out of memory: kassign does not start in the memory this process may use (ulimit -v, "
                    f"the cgroup): {str(e) or 'an allocation failed'}\n".encode())
        os._exit(65)
    app_main()
