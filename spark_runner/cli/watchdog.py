"""kassign's two processes: a small parent that owns the signals, and the command in a forked child.

Python runs a signal handler only in the main thread, and only once that thread gets the GIL back.  A
worker thread that keeps the GIL in native code (an allocator looping under ``ulimit -v``, a library call
that does not release it) therefore delays SIGINT and SIGTERM for as long as it runs.  So the console script
forks before it imports anything large: the **parent** stays a few megabytes of plain Python that only
waits, and the **child** runs the command (:func:`spark_runner.cli.supervise.run`, unchanged).

- The parent takes SIGINT, SIGTERM and SIGHUP (those kassign takes over, :func:`takes_over`) and passes each
  on to the child, which stops as before (solvers stop, nothing is published, exit ``128 + N``).  A signal
  sent to the whole process group (Ctrl-C, ``timeout``, ``kill -- -PGID``) reaches both: the child ignores
  its own copy while its parent lives, so each signal counts once.
- If the child has not ended :data:`MARGIN` seconds after its own grace period (it could not run Python),
  the parent kills it (SIGKILL), removes the temporary files it had announced (``.NAME.PID.tmp`` of the
  atomic writer) and exits ``128 + N`` with the usual message: nothing was published.
- A child that dies by a signal of its own -- SIGABRT (``std::bad_alloc`` in a native library), SIGSEGV or
  SIGBUS, or SIGKILL from the kernel's out-of-memory killer -- while the process is memory-limited
  (``ulimit -v``/``-d``, ``KASSIGN_MEMORY_LIMIT``, a cgroup) ran out of memory: exit 65 with one line,
  as for any refusal for memory.  Without a limit it is a crash: exit 1 with one line.
- A child's ordinary exit code is the parent's exit code.

The child tells the parent what it needs on a pipe: its grace period (``G``), what to say if it has to be
killed (``N``), and each temporary file it creates (``T``) and publishes or removes (``U``).
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
from typing import TYPE_CHECKING

from spark_runner.cli.signals import takes_over

if TYPE_CHECKING:
    from types import FrameType

#: Seconds the parent waits, after the child's own grace period, before it kills the child.
MARGIN = 0.5
#: The child's grace period until it says otherwise (:data:`spark_runner.cli.supervise.GRACE`).
DEFAULT_GRACE = 0.5
#: Signals the parent passes on.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: The signal that tells the child a stop signal is waiting on its pipe.
NOTICE = signal.SIGUSR1
#: Deaths by signal that mean "out of memory" in a memory-limited process.
MEMORY_DEATHS = (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGKILL)

# in the child: the pipes to and from the parent, and the parent's pid
_parent: int | None = None
_notices: int = -1
_report: int = -1


def supervised() -> bool:
    """Whether this process is the child of a kassign parent (which owns the signals)."""
    return _parent is not None


def kassign_pid() -> int:
    """The id of the process the user started: the parent when this is its child, else this process."""
    return _parent if _parent is not None and not orphaned() else os.getpid()


def orphaned() -> bool:
    """In the child: whether the parent is gone (a signal sent to the child alone is then its own)."""
    return _parent is not None and os.getppid() != _parent


def take_stops() -> list[int]:
    """In the child: the stop signals the parent passed on since the last call."""
    if _notices < 0:
        return []
    try:
        data = os.read(_notices, 64)
    except (BlockingIOError, InterruptedError):
        return []
    except OSError:
        return []
    return list(data)


def _tell(kind: bytes, text: str) -> None:
    if _report < 0:
        return
    with contextlib.suppress(OSError):
        os.write(_report, kind + os.fsencode(text).replace(b"\0", b"") + b"\0")


def tell_grace(seconds: float, note: str | None = None) -> None:
    """In the child: the longest it may take to stop after a signal, and what the parent says if it must kill
    it (default: nothing was written)."""
    _tell(b"G", repr(float(seconds)))
    _tell(b"N", note or "")


def tell_temp(path: str, live: bool) -> None:
    """In the child: a temporary file was created (``live``) or renamed into place / removed."""
    _tell(b"T" if live else b"U", path)


def _memory_limited() -> bool:
    if os.environ.get("KASSIGN_MEMORY_LIMIT"):
        return True
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        for lim in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
            if resource.getrlimit(lim)[0] != resource.RLIM_INFINITY:
                return True
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/cgroup", encoding="ascii") as f:
            rel = f.read().strip().split("::", 1)[-1]
        with open(f"/sys/fs/cgroup{rel}/memory.max", encoding="ascii") as f:
            return f.read().strip() != "max"
    return False


def _say(line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode("utf-8", "backslashreplace"))


class _Parent:
    """The parent's state: the child, its announced temporary files and grace, the stop in progress."""

    def __init__(self, pid: int, notices: int, report: int) -> None:
        self.pid = pid
        self.notices = notices
        self.report = report
        self.temps: set[bytes] = set()
        self.grace = DEFAULT_GRACE
        self.note = ""
        self.code: int | None = None
        self.pending = b""

    def on_stop(self, signum: int, _frame: FrameType | None) -> None:
        first = self.code is None
        if first:
            self.code = 128 + signum
        with contextlib.suppress(OSError):
            os.write(self.notices, bytes([signum]))
        with contextlib.suppress(OSError):
            os.kill(self.pid, NOTICE)
        # the child stops by itself within its grace (a second signal: at once); past that it cannot run Python
        signal.setitimer(signal.ITIMER_REAL, (self.grace if first else 0.0) + MARGIN)

    def on_alarm(self, _signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)
        self.drain()
        self.remove_temps()
        code = self.code or 128 + signal.SIGTERM
        name = signal.Signals(code - 128).name
        _say(f"interrupted ({name}): {self.note}" if self.note else f"interrupted ({name}); nothing was written")
        os._exit(code)

    def read(self) -> bool:
        """Read what the child reported; ``False`` at the end of the pipe."""
        if self.report < 0:
            return False
        try:
            data = os.read(self.report, 65536)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False
        if not data:
            return False
        self.pending += data
        *messages, self.pending = self.pending.split(b"\0")
        for m in messages:
            kind, text = m[:1], m[1:]
            if kind == b"T":
                self.temps.add(text)
            elif kind == b"U":
                self.temps.discard(text)
            elif kind == b"G":
                with contextlib.suppress(ValueError):
                    self.grace = max(0.0, float(text))
            elif kind == b"N":
                self.note = text.decode("utf-8", "replace")
        return True

    def drain(self) -> None:
        """Read everything the child reported and has not been read (it has ended)."""
        while self.report >= 0:
            try:
                if not select.select([self.report], [], [], 0)[0] or not self.read():
                    return
            except (OSError, ValueError):
                return

    def remove_temps(self) -> None:
        for p in self.temps:
            with contextlib.suppress(OSError):
                os.unlink(p)
        self.temps.clear()

    def exit_code(self, status: int) -> int:
        """The parent's exit code for the child's wait status (and the line it prints for a death)."""
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else signal.SIGKILL
        self.drain()
        self.remove_temps()
        if self.code is not None:  # it died while stopping: the stop's code
            name = signal.Signals(self.code - 128).name
            _say(f"interrupted ({name}): {self.note}" if self.note else f"interrupted ({name}); nothing was written")
            return self.code
        if sig == signal.SIGPIPE:
            return 141
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        if sig in MEMORY_DEATHS and _memory_limited():
            _say(f"error: out of memory: the command is too large for the memory available (ulimit -v, the cgroup, "
                 f"KASSIGN_MEMORY_LIMIT; a native library ended the worker with {name}); nothing was written")
            return 65
        _say(f"error: internal error: the worker process died by {name}; nothing was written "
             f"(please report it with the command and its input)")
        return 1

    def wait(self, wake: int) -> int:
        """Relay until the child ends; its exit code."""
        while True:
            watched = [wake] if self.report < 0 else [self.report, wake]
            with contextlib.suppress(InterruptedError):
                ready = select.select(watched, [], [])[0]
                if wake in ready:
                    with contextlib.suppress(OSError):
                        os.read(wake, 512)
                if self.report in ready and not self.read():
                    self.report_closed()
            try:
                done, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return 1
            if done:
                return self.exit_code(status)

    def report_closed(self) -> None:
        # the child closed its end (it is exiting): wait for it without selecting on the pipe again
        with contextlib.suppress(OSError):
            os.close(self.report)
        self.report = -1


def _child_signal(signum: int, _frame: FrameType | None) -> None:
    """The child's handler until the command runs: the parent's notice, or its own signal once orphaned."""
    stops = take_stops() if signum == NOTICE else ([signum] if orphaned() else [])
    if stops:
        _say(f"interrupted ({signal.Signals(stops[0]).name}); nothing was written")
        os._exit(128 + stops[0])


_child_signal.kassign_early = True  # type: ignore[attr-defined]  # supervise.run replaces it


def _on_child(_signum: int, _frame: FrameType | None) -> None:
    """The parent's SIGCHLD: nothing to do here (the wake-up descriptor ends its wait)."""


def fork() -> None:
    """Fork; return in the child, run the parent until the child ends (never returns there).

    Does nothing (the command runs in this process, as before) when the fork fails.
    """
    global _parent, _notices, _report
    taken = [s for s in STOP_SIGNALS if takes_over(s, signal.getsignal(s))]
    blocked = {*taken, signal.SIGCHLD, NOTICE}
    try:
        notices_r, notices_w = os.pipe()
        report_r, report_w = os.pipe()
        wake_r, wake_w = os.pipe()
    except OSError:
        return
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
    # before the fork: an inherited ignored SIGCHLD would reap the child before the parent could wait for it
    old_chld = signal.signal(signal.SIGCHLD, _on_child)
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        signal.signal(signal.SIGCHLD, old_chld)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        for fd in (notices_r, notices_w, report_r, report_w, wake_r, wake_w):
            os.close(fd)
        return
    if pid == 0:
        for fd in (notices_w, report_r, wake_r, wake_w):
            os.close(fd)
        signal.signal(signal.SIGCHLD, old_chld)
        os.set_blocking(notices_r, False)
        _parent, _notices, _report = parent, notices_r, report_w
        for s in taken:
            signal.signal(s, _child_signal)
        signal.signal(NOTICE, _child_signal)
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        if orphaned():  # the parent died before the handlers were in place
            os._exit(128 + signal.SIGTERM)
        _die_with_parent()
        return
    for fd in (notices_r, report_w):
        os.close(fd)
    os.set_blocking(wake_w, False)
    os.set_blocking(report_r, False)
    state = _Parent(pid, notices_w, report_r)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGALRM, state.on_alarm)
    signal.signal(NOTICE, signal.SIG_IGN)
    for s in taken:
        signal.signal(s, state.on_stop)
    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    os._exit(state.wait(wake_r))


def _die_with_parent() -> None:
    """Linux: the child is killed when the parent dies (a SIGKILL; nobody is left to stop it otherwise)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(Exception):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(1, int(signal.SIGKILL), 0, 0, 0) != 0:  # PR_SET_PDEATHSIG
            return
        if orphaned():
            os._exit(128 + signal.SIGTERM)


__all__ = ["MARGIN", "NOTICE", "fork", "kassign_pid", "orphaned", "supervised", "take_stops", "tell_grace", "tell_temp"]
