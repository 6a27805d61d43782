"""``kassign validate FILE...``: check instances; every problem with its file and JSON path."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from solver.errors import InstanceError, MissingFileError
from solver.io import is_batch, iter_records
from spark_runner.cli.common import EXIT_DATA, EXIT_NOINPUT, _describe, stderr, stdout

#: The command's line in ``kassign --help`` (``validate``).
SHORT_HELP = "Check instances; every problem with its JSON path."


def validate(
    files: Annotated[list[Path], typer.Argument(help="Instance files (.json, .yaml, .jsonl, .jsonl.gz).")],
) -> None:
    """Check instances; print every problem with its file and JSON path (exit 65 if any, 66 for a missing file)."""
    bad = missing = 0
    for f in files:
        good = 0
        absent = False
        for rec in iter_records(f):  # a missing file is one MissingFileError; a name too long, a loop: 65
            if isinstance(rec, MissingFileError):
                missing += 1
                absent = True
                stderr.print(rec.render(), markup=False)
            elif isinstance(rec, InstanceError):
                bad += 1
                stderr.print(rec.render(), markup=False)
            else:
                good += 1
                if not is_batch(f):
                    stdout.print(f"{f}: valid ({_describe(rec)})", markup=False)
        if is_batch(f) and not absent:
            stdout.print(f"{f}: {good} valid instances", markup=False)
    if bad:
        stderr.print(f"{bad} invalid instance(s)", markup=False)
    if missing or bad:
        raise typer.Exit(EXIT_NOINPUT if missing else EXIT_DATA)
