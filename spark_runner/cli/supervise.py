"""The ``kassign`` process around a command: signals, stdout, exit codes.

A command runs in a worker thread; the main thread only waits and handles
signals.  Python runs signal handlers in the main thread between bytecodes, so
a command blocked in a native call (a CP-SAT solve, a Spark job through py4j)
would otherwise not see Ctrl-C until the call returned -- the run went on and
replaced its output.  Here a SIGINT or SIGTERM:

1. asks the run to stop (:func:`solver.runtime.request_stop`): running
   solvers stop their search, Spark cancels its jobs, and nothing is published
   any more (the atomic writer and stdout refuse);
2. waits for the command to end by itself for a short grace period
   (:data:`GRACE`, longer for a sweep, which stops Spark and says how to
   resume), then
3. removes the temporary files of unfinished writes and exits ``128 + N``
   (130 for SIGINT, 143 for SIGTERM), whatever the command was doing.

A second signal exits at once.  Signals that were ignored when kassign started
(``nohup``, a background job) stay ignored.

stdout is wrapped so that a failed write (``/dev/full``, a closed pipe) is an
:class:`~solver.errors.OutputError` naming ``stdout`` (exit 74), or for a
reader that went away (``kassign list | head -1``) a quiet exit 141, never a
traceback at interpreter exit.  ``SIGXFSZ`` is ignored, so a file size limit
(``ulimit -f``) is a write error (exit 74), not a signal death.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from solver import runtime
from solver.errors import Interrupted, OutputError
from spark_runner.cli import watchdog
from spark_runner.cli.signals import takes_over

if TYPE_CHECKING:
    from types import FrameType

#: Seconds a command gets to end by itself after a signal before the process exits anyway (solvers seldom stop
#: sooner, and the exit must come within a second on a loaded machine too).
GRACE = 0.5
#: Exit code when stdout's reader went away (EPIPE): what a shell reports for a command killed by SIGPIPE.
EXIT_PIPE = 141
#: Signals that stop a run (SIGHUP: the terminal went away; left alone when ignored, as under ``nohup``).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_grace: float | Callable[[], float] = GRACE
_hard_exit_note: Callable[[], str] | None = None


def set_grace(seconds: float | Callable[[], float], note: Callable[[], str] | None = None, *,
              at_most: float | None = None, killed_note: str | None = None) -> None:
    """Give the running command ``seconds`` to stop by itself (a sweep stopping Spark; a callable is asked when
    the signal comes: what there is to wait for depends on what the command is doing); ``note()`` is printed
    if it does not and the process exits anyway.

    The parent process (:mod:`spark_runner.cli.watchdog`) is told ``at_most`` (needed with a callable): the
    longest the command may take, after which it kills this process and prints ``killed_note``.
    """
    global _grace, _hard_exit_note
    _grace = seconds
    _hard_exit_note = note
    bound = at_most if at_most is not None else (GRACE if callable(seconds) else float(seconds))
    watchdog.tell_grace(bound, killed_note)


def _grace_now() -> float:
    try:
        return float(_grace() if callable(_grace) else _grace)
    except Exception:  # the command's own answer failed: the default
        return GRACE


class StdoutError(Exception):
    """A write to stdout failed.  Not an ``OSError``: kept apart from the command's own OS errors (and from
    click, which would turn a broken pipe into exit 1)."""

    def __init__(self, err: OSError) -> None:
        super().__init__(err.strerror or str(err))
        self.os_error = err


class _RawFd(io.RawIOBase):
    """A writable raw stream on an open descriptor (what the guarded standard streams share)."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)


class _GuardedStdout(_RawFd):
    """File descriptor 1, refusing to write once a stop was requested; its errors name stdout."""

    def write(self, data: Any) -> int:
        signum = runtime.stop_requested()
        if signum is not None:
            raise Interrupted(signum)
        try:
            return os.write(self._fd, data)
        except OSError as e:
            raise StdoutError(e) from None


#: Encoding error handler of kassign's standard streams (registered with :mod:`codecs`).
UTF8_ERRORS = "kassign-utf8"


def _utf8_errors(e: UnicodeError) -> tuple[str | bytes, int]:
    """What UTF-8 cannot encode: bytes a POSIX locale escaped (``surrogateescape``) go out as they came when they
    are UTF-8 (a file name typed under ``LC_ALL=C``); anything else is a ``\\udcXX`` escape, never a failure."""
    if not isinstance(e, UnicodeEncodeError):
        raise e
    chunk = e.object[e.start:e.end]
    if all(0xDC80 <= ord(c) <= 0xDCFF for c in chunk):
        raw = bytes(ord(c) - 0xDC00 for c in chunk)
        with contextlib.suppress(UnicodeDecodeError):
            raw.decode("utf-8")
            return raw, e.end
    return chunk.encode("ascii", "backslashreplace").decode("ascii"), e.end


codecs.register_error(UTF8_ERRORS, _utf8_errors)


def guard_stdout() -> None:
    """Replace ``sys.stdout`` with a guarded UTF-8 text stream on the same descriptor (same buffering).

    A stdout that was closed when kassign started (``>&-``; Python then sets ``sys.stdout`` to ``None``) is
    descriptor 1 all the same: :func:`spark_runner.cli.entry.reserve_std_fds` put ``/dev/null`` there read-only,
    so the first write
    fails like any stdout that cannot be written (exit 74), and no file kassign opens can take its place.
    """
    old = sys.stdout
    if isinstance(getattr(getattr(old, "buffer", None), "raw", None), _GuardedStdout):
        return
    if old is None:
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(_GuardedStdout(1)), encoding="utf-8",
                                      errors=UTF8_ERRORS)
        return
    try:
        fd = old.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real descriptor (captured by a test): leave it
    with contextlib.suppress(Exception):
        old.flush()
    # output is UTF-8 whatever the locale or PYTHONIOENCODING says (ascii would escape JSON's text, latin-1 or
    # utf-16 would not be UTF-8): what cannot be UTF-8 (a name's undecodable bytes) is escaped, never a failure
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(_GuardedStdout(fd)), encoding="utf-8", errors=UTF8_ERRORS,
                                  line_buffering=bool(old.line_buffering))


class _QuietStderr(_RawFd):
    """File descriptor 2, dropping what cannot be written (``2>/dev/full``, a file size limit): a diagnostic that
    cannot be shown must not change what the command does or its exit code."""

    def write(self, data: Any) -> int:
        try:
            return os.write(self._fd, data)
        except OSError:
            return len(data)


def guard_stderr() -> None:
    """Replace ``sys.stderr`` with a UTF-8 stream on descriptor 2 whose failed writes are dropped."""
    old = sys.stderr
    if isinstance(getattr(getattr(old, "buffer", None), "raw", None), _QuietStderr):
        return
    if old is not None:
        try:
            old.fileno()
        except (AttributeError, OSError, ValueError):
            return  # not a real descriptor (captured by a test): leave it
        with contextlib.suppress(Exception):
            old.flush()
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(_QuietStderr(2)), encoding="utf-8", errors=UTF8_ERRORS,
                                  write_through=True, line_buffering=True)


def _silence_stdout() -> None:
    """After a failed stdout, point it at /dev/null so that the interpreter's final flush stays quiet."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until exit


def stdout_exit(e: OSError, say: Callable[[str], None]) -> int:
    """The exit code for a failed stdout (and its message): 141 quietly for a closed pipe, else 74."""
    _silence_stdout()
    if e.errno == errno.EPIPE:
        return EXIT_PIPE
    # stdout exists: whatever failed (a full device, a descriptor open read-only or closed), it failed writing
    err = OutputError("stdout", f"{e.strerror or e} (what was written before may be incomplete)", 74)
    say(f"error: {err}")
    return err.exit_code


def _hard_exit(code: int) -> None:
    runtime.remove_temps()
    note = _hard_exit_note() if _hard_exit_note is not None else ""
    name = signal.Signals(code - 128).name
    # an output published before the stop took effect is in place and complete: the line says so
    msg = f"interrupted ({name}): {note}" if note else runtime.stopped_line(code - 128)
    with contextlib.suppress(Exception):
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()
    os._exit(code)


def run(body: Callable[[], int], say: Callable[[str], None]) -> int:
    """Run ``body()`` (returns an exit code) in a worker thread; return its code, or exit on a signal.

    ``say(line)`` prints a diagnostic on stderr.
    """
    from solver.model.files import reset_inputs

    guard_stdout()
    guard_stderr()
    runtime.reset()
    reset_inputs()
    with contextlib.suppress(AttributeError, ValueError, OSError):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    state: dict[str, Any] = {"deadline": None, "code": None}

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if state["deadline"] is not None:  # a second signal: out now
            _hard_exit(state["code"])
        state["code"] = 128 + signum
        state["deadline"] = time.monotonic() + _grace_now()
        # the stop hooks talk to solvers and to Spark's JVM: never block the handler on them
        threading.Thread(target=runtime.request_stop, args=(signum,), name="kassign-stop", daemon=True).start()

    previous: dict[int, Any] = {}
    if watchdog.supervised():
        # the parent owns the signals and passes each on (a notice on a pipe); a signal of the child's own is a
        # copy of what the parent got (a process group's), unless the parent is gone
        def on_own(signum: int, frame: FrameType | None) -> None:
            if watchdog.orphaned():
                on_signal(signum, frame)

        def on_notice(_signum: int, frame: FrameType | None) -> None:
            for signum in watchdog.take_stops():
                on_signal(signum, frame)

        runtime.listen_temps(watchdog.tell_temp)
        with contextlib.suppress(ValueError, OSError):
            previous[watchdog.NOTICE] = signal.signal(watchdog.NOTICE, on_notice)
        handler: Callable[[int, Any], None] = on_own
    else:
        handler = on_signal
    for sig in STOP_SIGNALS:
        with contextlib.suppress(ValueError, OSError):
            if takes_over(sig, signal.getsignal(sig)):
                previous[sig] = signal.signal(sig, handler)
    box: list[int] = []

    def work() -> None:
        box.append(_guarded(body, say))

    worker = threading.Thread(target=work, name="kassign-command", daemon=True)
    try:
        try:
            worker.start()
        except RuntimeError:  # no memory for a thread's stack (ulimit -v): run here, stoppable between steps only
            work()
        while worker.is_alive():
            worker.join(0.05)
            deadline = state["deadline"]
            if deadline is not None and time.monotonic() > deadline and worker.is_alive():
                _hard_exit(state["code"])
    finally:
        for signum, handler in previous.items():  # in-process callers (tests) get their handlers back
            with contextlib.suppress(ValueError, OSError):
                signal.signal(signum, handler)
    # a command that ended with 0 after a signal had published everything before it: it did finish
    return box[0] if box else 1


def _guarded(body: Callable[[], int], say: Callable[[str], None]) -> int:
    """``body()``, with stdout failures and stop requests turned into exit codes."""
    try:
        code = body()
        sys.stdout.flush()
        return code
    except StdoutError as e:
        return stdout_exit(e.os_error, say)
    except Interrupted as e:
        # the default message says nothing was written: not so when an output was published before the stop
        say(str(e) if e.own_message else runtime.stopped_line(e.signum))
        return e.exit_code
    except MemoryError:  # raised while an error was being reported: the documented refusal still
        with contextlib.suppress(OSError):
            os.write(2, b"error: out of memory; nothing was written\n")
        return 65


__all__ = ["EXIT_PIPE", "GRACE", "StdoutError", "guard_stderr", "guard_stdout", "run", "set_grace", "stdout_exit"]
