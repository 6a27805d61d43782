"""Sweeps: :mod:`~spark_runner.sweep.evaluate` (one scenario through every assignor and the optimum, a pure
function), :mod:`~spark_runner.sweep.run` (the grid on Spark, Parquet rows, resume) and
:mod:`~spark_runner.sweep.report` (HTML, Markdown and plots)."""
