"""The ``kassign`` commands, one a module: each defines its command as a function at module level and its
``SHORT_HELP``; :mod:`spark_runner.cli.app` lists them."""
