"""The sweep report: summary tables and plots from the Parquet rows of a sweep.

``build_report(DIR)`` reads ``DIR/rows`` and writes ``DIR/report/``:

- ``index.html``: the answer (which assignor to run, what it costs, its worst step and the command
  that reproduces it; :func:`recommend`), summary tables and the plots;
- ``summary.md``: the same in Markdown (for a KIP or a pull request);
- ``summary.csv``: the per-assignor table as CSV (raw column names);
- ``gaps.png`` (gap distributions per assignor, invalid and unit-splitting steps left out and counted),
  ``moves.png`` (mean cumulative moved partitions over the steps, one panel per assignor beside the
  optimum), ``optimum.png`` (share of steps proven and seconds against instance size);
- ``worst-<assignor>.yaml``: a one-scenario grid that re-runs the recommended assignor's worst step;
- when the sweep has Kafka Streams rows (``protocol = streams``): Streams
  tables (``summary_streams.csv``) and ``streams_gaps.png``.

"Optimal on balance" means ``max_load_gap`` and ``sum_sq_gap`` are both zero:
the assignor's load vector is as balanced as the optimum's.  For Streams it
means ``active_balance_gap`` and ``total_balance_gap`` are both zero.

One module per step: :mod:`~spark_runner.sweep.report.load` (the rows),
:mod:`~spark_runner.sweep.report.tables` (metric names and tables),
:mod:`~spark_runner.sweep.report.plots` (PNG plots), :mod:`~spark_runner.sweep.report.format` (cells and
tables as Markdown and HTML), :mod:`~spark_runner.sweep.report.answer` (the answer on top) and
:mod:`~spark_runner.sweep.report.render` (the pages; :func:`build_report`).
"""

from __future__ import annotations

from spark_runner.sweep.report.answer import (
    WORST_GAPS,
    Block,
    answer_blocks,
    blocks_html,
    blocks_markdown,
    recommend,
    worst_step,
    write_worst_grid,
)
from spark_runner.sweep.report.format import ZERO_NOISE, breakable, html_table, markdown_table, md_inline_html
from spark_runner.sweep.report.load import GAPS, REPORT_COLUMNS, STREAMS_GAPS, load_rows
from spark_runner.sweep.report.render import build_report, gap_sections
from spark_runner.sweep.report.tables import (
    LABELS,
    STATS,
    event_table,
    gap_tables,
    gaps_csv,
    label,
    streams_summary_table,
    summary_table,
    unproven_by_point,
)

__all__ = ["GAPS", "LABELS", "REPORT_COLUMNS", "STATS", "STREAMS_GAPS", "WORST_GAPS", "ZERO_NOISE", "Block",
           "answer_blocks", "blocks_html", "blocks_markdown", "breakable", "build_report", "event_table",
           "gap_sections", "gap_tables", "gaps_csv", "html_table", "label", "load_rows", "markdown_table",
           "md_inline_html", "recommend", "streams_summary_table", "summary_table", "unproven_by_point",
           "worst_step", "write_worst_grid"]
