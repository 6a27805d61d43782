"""The ``kassign`` console script: signal handling first, then the app (whose imports take a second).

Until :func:`spark_runner.cli.supervise.run` takes over, a SIGINT or SIGTERM
ends the process at once with ``128 + N``: nothing has been read or written
yet, and Python's default (a ``KeyboardInterrupt`` traceback from the middle
of an import) is what a user must never see.
"""

from __future__ import annotations

import os
import signal
from typing import Any


def _early_exit(signum: int, _frame: Any) -> None:
    os.write(2, f"interrupted ({signal.Signals(signum).name}); nothing was written\n".encode())
    os._exit(128 + signum)


_early_exit.kassign_early = True  # type: ignore[attr-defined]  # supervise.run replaces it


def main() -> None:
    """Install the early signal handlers, then run :func:`spark_runner.cli.app.main`."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(sig, _early_exit)
    from spark_runner.cli.app import main as app_main

    app_main()
