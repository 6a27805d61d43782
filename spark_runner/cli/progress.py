"""Progress of a long command on stderr: a transient line on a terminal, a line at a steady pace when piped.

A command that takes minutes (``compare``, ``score`` with its optimum, ``frontier``) says what it is doing:
on a terminal a transient status line (rich), otherwise -- stderr piped to a file or a CI log -- one line
every :data:`DEFAULT_EVERY` seconds (``KASSIGN_PROGRESS_SECONDS`` overrides it) with what it is doing and
for how long, e.g. ``compare: cooperative-sticky (40 s)``.  A command that ends before the first line is
due prints nothing.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

#: Seconds between two progress lines when stderr is not a terminal.
DEFAULT_EVERY = 10.0


def interval() -> float:
    """Seconds between two progress lines: ``KASSIGN_PROGRESS_SECONDS`` when a positive number, else 10."""
    try:
        v = float(os.environ.get("KASSIGN_PROGRESS_SECONDS", DEFAULT_EVERY))
    except ValueError:
        return DEFAULT_EVERY
    return v if v > 0 else DEFAULT_EVERY


@contextmanager
def progress(err: Console | None, command: str, start: str = "starting") -> Iterator[Callable[[str], None]]:
    """Yields ``update(what)``: what ``command`` is doing now, shown on ``err`` (see the module docstring)."""
    if err is None:
        yield lambda what: None
        return
    if err.is_terminal:
        with err.status(f"{command}: {start}", spinner="line") as status:
            yield lambda what: status.update(f"{command}: {what}")
        return
    state = {"what": start}
    t0 = time.monotonic()
    stop = threading.Event()
    every = interval()

    def tick() -> None:
        while not stop.wait(every):
            err.print(f"{command}: {state['what']} ({time.monotonic() - t0:,.0f} s)", markup=False, soft_wrap=True)

    thread = threading.Thread(target=tick, name=f"{command}-progress", daemon=True)
    thread.start()
    try:
        yield lambda what: state.__setitem__("what", what)
    finally:
        stop.set()
        thread.join()


__all__ = ["DEFAULT_EVERY", "interval", "progress"]
