"""The ``kassign`` console script: signal handling first, then the app (whose imports take a second).

Until :func:`spark_runner.cli.supervise.run` takes over, a SIGINT or SIGTERM
ends the process at once with ``128 + N``: nothing has been read or written
yet, and Python's default (a ``KeyboardInterrupt`` traceback from the middle
of an import) is what a user must never see.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from spark_runner.cli.signals import takes_over


def _early_exit(signum: int, _frame: Any) -> None:
    os.write(2, f"interrupted ({signal.Signals(signum).name}); nothing was written\n".encode())
    os._exit(128 + signum)


_early_exit.kassign_early = True  # type: ignore[attr-defined]  # supervise.run replaces it


#: Commands that load OR-Tools (and pandas with it).
SOLVING_COMMANDS = ("assign", "compare", "frontier", "score", "plan")


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


def main() -> None:
    """Install the early signal handlers, then run :func:`spark_runner.cli.app.main`.

    Under an address-space limit (``ulimit -v``), before any library starts a thread: OpenBLAS gets one
    thread (each of its threads reserves a large buffer) and the C allocator shares its arenas
    (:func:`solver.resources.limit_arenas`); an import that still fails for memory is exit 65, not a
    traceback.
    """
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if takes_over(sig, signal.getsignal(sig)):
            signal.signal(sig, _early_exit)
    reserve_std_fds()
    limited = _address_space_limited()
    if limited:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        from solver.resources import limit_arenas

        limit_arenas()
        if limited and len(sys.argv) > 1 and sys.argv[1] in SOLVING_COMMANDS:
            # load the solver libraries now, in the only thread: loaded later from a worker thread, a library
            # that does not fit can abort the process (glibc: "cannot allocate memory for thread-local data")
            import ortools.sat.python.cp_model  # noqa: F401
        from spark_runner.cli.app import main as app_main
    except (MemoryError, ImportError, SystemError) as e:
        # under an address-space limit any library that fails to load failed for memory (C extensions then
        # report it in odd ways: "failed to map segment", "error return without exception set")
        if not (limited or isinstance(e, MemoryError) or "failed to map segment" in str(e)
                or "Cannot allocate memory" in str(e)):
            raise
        os.write(2, f"error: out of memory: kassign does not start in the memory this process may use (ulimit -v, "
                    f"the cgroup): {e}\n".encode())
        os._exit(65)
    app_main()
