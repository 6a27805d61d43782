"""The ``kassign`` command line: :mod:`~spark_runner.cli.app` (the Typer app and ``main``),
:mod:`~spark_runner.cli.common` (exit codes, consoles, shared option handling),
:mod:`~spark_runner.cli.output` (result documents) and one module per further
command group in :mod:`spark_runner.cli.commands`."""
