"""``kassign serve``: one group's assignment per HTTP request, within its deadline (docs/serve.md).

:mod:`~spark_runner.serve.server` is the HTTP layer and its limits, :mod:`~spark_runner.serve.request`
the request's checks and the weights file, :mod:`~spark_runner.serve.admin` lag from the Admin API,
:mod:`~spark_runner.serve.worker` the worker processes that solve (and are killed at a deadline).
"""
