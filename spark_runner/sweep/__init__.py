"""Sweeps, entered through :mod:`~spark_runner.sweep.api` (what ``kassign sweep`` and ``kassign report`` call).

Behind it, one module per concern: :mod:`~spark_runner.sweep.grid` (the grid document, validated, and its
pending work), :mod:`~spark_runner.sweep.store` (the output directory: lock, finished rows, manifest),
:mod:`~spark_runner.sweep.session` (the Spark session), :mod:`~spark_runner.sweep.batches` (the pending
scenarios on Spark, batch by batch), :mod:`~spark_runner.sweep.evaluate` (one scenario through every assignor
and the optimum, a pure function), :mod:`~spark_runner.sweep.rows` (the row schema it fills) and
:mod:`~spark_runner.sweep.report` (HTML, Markdown and plots)."""
