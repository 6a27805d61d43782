"""The ``kassign`` command line (Typer + Rich): the root app, its commands in order, and every error's exit code.

Data goes to stdout (or ``-o``), progress and diagnostics to stderr.  Exit
codes: 0 success, 2 usage error, 65 invalid input data, 66 a missing input file, 3 infeasible or no
solution within the limit, 1 internal error.

Each command is a function in its own module of :mod:`spark_runner.cli.commands`, listed below in the order
``kassign --help`` shows them.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from typing import Annotated, Any

import typer

from solver.errors import InstanceError, KassignError, Problem
from solver.registry import UnknownAssignorError, UnsupportedInstanceError
from spark_runner.cli.commands import (
    assign,
    capture,
    compare,
    decode_subscription,
    frontier,
    list_assignors,
    plan,
    report,
    score,
    serve,
    sweep,
    validate,
)
from spark_runner.cli.common import EXIT_DATA, EXIT_INFEASIBLE, EXIT_INTERNAL, EXIT_USAGE, check_environment

app = typer.Typer(
    name="kassign",
    help="Provably optimal Kafka partition and task assignments, and how far Kafka's own assignors are from them.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("kassign")
        except PackageNotFoundError:
            v = "0+unknown"
        typer.echo(f"kassign {v}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """kassign: optimal Kafka assignments and heuristic gap scoring."""


# --------------------------------------------------------------------------- the commands, in --help's order

app.command("validate", short_help=validate.SHORT_HELP)(validate.validate)
app.command("assign", short_help=assign.SHORT_HELP)(assign.assign)
app.command("score", short_help=score.SHORT_HELP)(score.score)
app.command("list", short_help=list_assignors.SHORT_HELP)(list_assignors.list_assignors)
app.command("capture", short_help=capture.SHORT_HELP)(capture.capture)
app.command("compare", short_help=compare.SHORT_HELP)(compare.compare)
app.command("frontier", short_help=frontier.SHORT_HELP)(frontier.frontier)
app.command("plan", short_help=plan.SHORT_HELP)(plan.plan_cmd)
app.command("serve", short_help=serve.SHORT_HELP)(serve.serve)
app.command("decode-subscription", short_help=decode_subscription.SHORT_HELP)(decode_subscription.decode_subscription)
app.command("sweep", short_help=sweep.SHORT_HELP)(sweep.sweep)
app.command("report", short_help=report.SHORT_HELP)(report.report)


def main() -> None:
    """Console-script entry point: run the app under the supervisor (signals, stdout) and exit with its code."""
    from spark_runner.cli import supervise

    sys.exit(supervise.run(_main, _say))


def _say(line: str) -> None:
    """One diagnostic line on stderr, plainly: it must work when nothing else does (no memory left)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except Exception:  # stderr itself is gone: nothing left to tell
        pass


def _main() -> int:
    """Run the app; map every error to its documented exit code (docs/cli.md) and a one-line message."""
    from solver.errors import Interrupted
    from spark_runner.cli.supervise import StdoutError

    try:
        check_environment()
        app()
        return 0
    except SystemExit as e:  # Typer's own exit (help, usage errors, typer.Exit)
        return e.code if isinstance(e.code, int) else (0 if e.code is None else EXIT_USAGE)
    except (StdoutError, Interrupted):
        raise  # the supervisor's
    except InstanceError as e:  # 65 invalid data, 66 a missing file
        _say(e.render())
        return e.exit_code
    except UnknownAssignorError as e:
        _say(f"error: {e.args[0]}")
        return EXIT_USAGE
    except UnsupportedInstanceError as e:
        _say(f"error: {e}")
        return EXIT_INFEASIBLE
    except KassignError as e:  # usage 2, infeasible 3, output 73/74, busy 75 ...
        _say(f"error: {e}")
        return e.exit_code
    except MemoryError:  # an estimate that fell short: the documented refusal, not a crash
        return out_of_memory(_say)
    except ImportError as e:  # a library that cannot be mapped under an address-space limit is the same
        if "failed to map segment" not in str(e) and "Cannot allocate memory" not in str(e):
            raise
        return out_of_memory(_say, str(e))
    except OSError as e:
        if e.errno != errno.ENOMEM:  # the system refused memory (an import listing a folder, a thread, mmap)
            return _internal(e)
        return out_of_memory(_say, str(e))
    except SystemError as e:  # a C extension that failed to allocate and returned without an exception
        from solver.resources import memory_limited

        if not memory_limited():
            return _internal(e)
        return out_of_memory(_say, str(e))
    except Exception as e:  # internal error: short message, traceback on request
        return _internal(e)


def _internal(e: BaseException) -> int:
    """An internal error: a short message, the traceback with ``KASSIGN_DEBUG=1``; exit 1."""
    if os.environ.get("KASSIGN_DEBUG"):
        traceback.print_exception(e)
    else:
        _say(f"internal error: {type(e).__name__}: {e} (set KASSIGN_DEBUG=1 for a traceback)")
    return EXIT_INTERNAL


def out_of_memory(say: Any, detail: str = "") -> int:
    """Say that the run needs more memory than it may use; return the documented code (65)."""
    from solver.resources import MEMORY_ENV, available_memory, human

    try:
        avail = f" ({human(available_memory())} is available)"
    except Exception:  # the limit itself may be what is wrong
        avail = ""
    more = f": {detail}" if detail else ""
    say(f"error: out of memory{avail}{more}; the input is too large for this machine or its limits (ulimit -v, "
        f"the cgroup, {MEMORY_ENV}); nothing was written")
    # out now: the interpreter's clean-up after a half-loaded library can crash (SIGSEGV) on the way out
    from solver import runtime

    runtime.remove_temps()
    os._exit(EXIT_DATA)


__all__ = ["Problem", "app", "main"]
