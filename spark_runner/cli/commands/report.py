"""``kassign report``: rebuild a sweep's report from its rows (through :mod:`spark_runner.sweep.api`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

stderr = Console(stderr=True, highlight=False, soft_wrap=True)

SHORT_HELP = "Rebuild a sweep's report from its rows."


def report(
    out: Annotated[Path, typer.Argument(help="A sweep output directory (with rows/).")],
    title: Annotated[str | None, typer.Option(help="Report title (default: the grid name).")] = None,
) -> None:
    """Rebuild DIR/report/ (index.html, summary.md, PNG plots) from the sweep's Parquet rows."""
    from solver.options import check_text
    from spark_runner.sweep import api

    check_text("--title", title)
    index = api.build_report(out, title=title)
    stderr.print(f"report: {index}", markup=False)
