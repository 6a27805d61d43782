"""The ``kassign`` command line: :mod:`~spark_runner.cli.app` (the root app, the list of commands and ``main``
with every error's exit code), :mod:`~spark_runner.cli.common` (exit codes, consoles, shared option handling,
the environment check), :mod:`~spark_runner.cli.output` (result and assignment documents),
:mod:`~spark_runner.cli.cache` (score's cached optima and gaps) and one module per command in
:mod:`spark_runner.cli.commands`."""
