"""Which inherited signal dispositions kassign replaces (the console script and the command supervisor)."""

from __future__ import annotations

import signal
from typing import Any


def takes_over(sig: int, current: Any) -> bool:
    """Whether kassign installs its own handler for ``sig``, given the handler it inherited.

    Python's defaults and kassign's early handler are replaced.  An inherited *ignored* SIGINT or SIGTERM is
    replaced too: a shell script's background job (``kassign ... &``) starts with SIGINT ignored, and Ctrl-C
    or a supervisor's SIGINT must still stop it (exit 130).  An ignored SIGHUP stays ignored: that is
    ``nohup``'s request.  A handler someone else installed (embedding code) is kept.
    """
    if current in (signal.SIG_DFL, signal.default_int_handler) or getattr(current, "kassign_early", False):
        return True
    return current == signal.SIG_IGN and sig in (signal.SIGINT, signal.SIGTERM)
