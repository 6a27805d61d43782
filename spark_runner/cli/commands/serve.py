"""``kassign serve``: the assignment service (HTTP and JSON; docs/serve.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer


def _size(text: str, option: str) -> int:
    from solver.resources import parse_size
    from spark_runner.cli.common import UsageError

    try:
        n = parse_size(text, option)
    except Exception as e:
        raise UsageError(str(e)) from None
    if not 1024 <= n <= 1 << 40:
        raise UsageError(f"{option} must be between 1K and 1T, got {text!r}")
    return n


#: The command's line in ``kassign --help`` (``serve``).
SHORT_HELP = "Serve assignments over HTTP (POST /v1/assign)."


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port, printed).")] = 8736,
    workers: Annotated[int | None, typer.Option(
        help="Worker processes solving at once (default: the machine's cores).")] = None,
    spare_workers: Annotated[int, typer.Option(
        help="Warm worker processes standing by to replace one killed at a deadline.")] = 1,
    max_body: Annotated[str, typer.Option(help="Largest request body (bytes; K, M, G suffixes).")] = "64M",
    max_queue: Annotated[int, typer.Option(help="Requests that may wait for a worker; more get 429.")] = 64,
    max_connections: Annotated[int, typer.Option(
        help="Connections served at once; more get 503 at once.")] = 256,
    max_buffered: Annotated[str | None, typer.Option(
        help="Bytes of request bodies held at once (default 4 x --max-body); more get 503.")] = None,
    read_timeout: Annotated[float, typer.Option(
        help="Seconds a client has to send its whole request; then 408.")] = 10.0,
    weights_file: Annotated[Path | None, typer.Option(
        help="Weights file (kassign-weights/v1) for requests with weights.source=file.")] = None,
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", help="HOST:PORT[,...] of the cluster whose lag weighs requests with "
                                   "weights.source=admin.")] = None,
    command_config: Annotated[Path | None, typer.Option(
        help="Kafka client properties for --bootstrap-server (security.protocol, sasl.*, ssl.*).")] = None,
) -> None:
    """Serve optimal assignments within each request's deadline (docs/serve.md); stop with SIGTERM or Ctrl-C."""
    from solver import runtime
    from solver.errors import InstanceError, Interrupted, Problem
    from spark_runner.cli import supervise
    from spark_runner.cli.common import UsageError
    from spark_runner.serve.request import WeightsFileError
    from spark_runner.serve.server import ServeConfig, Service

    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be between 0 and 65535, got {port}")
    n_workers = workers if workers is not None else (os.cpu_count() or 1)
    if not 1 <= n_workers <= 256:
        raise UsageError(f"--workers must be between 1 and 256, got {n_workers}")
    if not 0 <= spare_workers <= 64:
        raise UsageError(f"--spare-workers must be between 0 and 64, got {spare_workers}")
    if not 0 <= max_queue <= 100_000:
        raise UsageError(f"--max-queue must be between 0 and 100,000, got {max_queue}")
    if not 1 <= max_connections <= 100_000:
        raise UsageError(f"--max-connections must be between 1 and 100,000, got {max_connections}")
    if not 0.1 <= read_timeout <= 3600:
        raise UsageError(f"--read-timeout must be between 0.1 and 3,600 seconds, got {read_timeout:g}")
    body = _size(max_body, "--max-body")
    buffered = _size(max_buffered, "--max-buffered") if max_buffered else 4 * body
    if buffered < body:
        raise UsageError(f"--max-buffered ({buffered:,} bytes) must be at least --max-body ({body:,} bytes)")
    client_config = None
    if command_config is not None:
        if bootstrap_server is None:
            raise UsageError("--command-config needs --bootstrap-server")
        from spark_runner.live.broker import read_client_config

        client_config, _ignored = read_client_config(command_config)
    if bootstrap_server is not None:
        from spark_runner.live.broker import check_bootstrap

        bootstrap_server = check_bootstrap(bootstrap_server)
    cfg = ServeConfig(host=host, port=port, workers=n_workers, spares=spare_workers, max_body=body,
                      max_queue=max_queue, max_connections=max_connections, max_buffered=buffered,
                      read_timeout=read_timeout, weights_file=weights_file,
                      bootstrap=bootstrap_server, client_config=client_config)
    if weights_file is not None and not weights_file.exists():
        from solver.errors import MissingFileError

        raise MissingFileError(str(weights_file), [Problem("", "no such file")])
    try:
        service = Service(cfg)
    except WeightsFileError as e:
        raise InstanceError(str(weights_file), [Problem("", str(e).removeprefix(f"{weights_file}: "))]) from None
    except OSError as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    supervise.set_grace(10.0)
    try:
        h, p = service.address
        shown = f"[{h}]" if ":" in h else h
        print(f"kassign serve listening on http://{shown}:{p}", file=sys.stderr, flush=True)
        with runtime.stoppable(service.stop):
            service.serve()
    except Interrupted as e:
        import signal

        print(f"kassign serve: stopped ({signal.Signals(e.signum).name})", file=sys.stderr, flush=True)
    finally:
        service.close()
