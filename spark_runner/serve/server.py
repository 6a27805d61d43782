"""``kassign serve``: the HTTP server (standard library ``http.server``), its limits and its routes.

One thread per connection, at most ``max_connections`` of them (more are answered
503 at once and closed); one request per connection (``Connection: close``); a
connection that has not sent its whole request within ``read_timeout`` seconds is
answered 408 (or closed, when its headers are not complete).  A body is read only
when its ``Content-Length`` is within ``max_body`` and the bytes of every body held
stay within ``max_buffered``; it is decoded by at most ``workers`` threads at once;
an assignment waits for one of ``workers`` worker processes, at most ``max_queue``
of them waiting (more: 429).  See docs/serve.md.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from spark_runner.serve.admin import ADMIN_TIMEOUT, AdminLag
from spark_runner.serve.metrics import Metrics
from spark_runner.serve.request import RequestError, WeightsFile, check_request
from spark_runner.serve.worker import Pool, run_job

DEFAULT_PORT = 8736
DEFAULT_MAX_BODY = 64 << 20
DEFAULT_MAX_QUEUE = 64
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_READ_TIMEOUT = 10.0
#: Time kept for the answer's way back (serialising, sending): this share of the deadline, within these seconds.
RETURN_SHARE = 0.05
RETURN_MIN = 0.02
RETURN_MAX = 1.0
#: Share of a request's time left that the Admin API lookup of ``weights.source: admin`` may take.
ADMIN_SHARE = 0.5
#: Paths the service answers (the OpenAPI document lists each).
PATHS = ("/v1/assign", "/healthz", "/metrics", "/openapi.json")


@dataclass(frozen=True)
class ServeConfig:
    """The service's settings (``kassign serve`` options; docs/serve.md says what each bounds)."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 2
    spares: int = 1
    max_body: int = DEFAULT_MAX_BODY
    max_queue: int = DEFAULT_MAX_QUEUE
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_buffered: int = 4 * DEFAULT_MAX_BODY
    read_timeout: float = DEFAULT_READ_TIMEOUT
    weights_file: Path | None = None
    bootstrap: str | None = None
    client_config: dict[str, Any] | None = None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the listen backlog: a burst of connections waits for accept, not refused
    service: Service

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self.service.slots.acquire(blocking=False):
            self.service.refuse(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except RuntimeError:  # no thread to be had
            self.service.slots.release()
            self.service.refuse(request)
            self.shutdown_request(request)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)  # type: ignore[misc]
        finally:
            self.service.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that vanished mid-answer is not news; anything else is said in one line, no traceback
        err = sys.exc_info()[1]
        if not isinstance(err, (ConnectionError, TimeoutError, OSError)):
            print(f"kassign serve: internal error: {type(err).__name__}: {err}", file=sys.stderr, flush=True)


class Service:
    """The pool of workers, the limits and the counters behind the HTTP handler."""

    def __init__(self, cfg: ServeConfig, pool: Pool | None = None) -> None:
        self.cfg = cfg
        self.weights = WeightsFile(cfg.weights_file) if cfg.weights_file else None
        self.admin: AdminLag | None = None
        if cfg.bootstrap:
            self.admin = AdminLag(cfg.bootstrap, cfg.client_config)
        self.metrics = Metrics()
        self.slots = threading.BoundedSemaphore(cfg.max_connections)
        self.decoding = threading.BoundedSemaphore(cfg.workers)
        self._lock = threading.Lock()
        self._buffered = 0
        self._admitted = 0
        self._watch: dict[Any, float] = {}
        self._stop = threading.Event()
        self.httpd = _Server((cfg.host, cfg.port), Handler)  # a port in use fails before anything starts
        self.httpd.service = self
        try:
            # the registry (every assignor's module) is imported here, before the first request: checking a
            # request's assignor names must not cost that request seconds of its deadline
            check_request(_decode(b'{"instance": {"format": "kassign/v1", "topics": {}, "members": []}}'))
            self.pool = pool if pool is not None else Pool(cfg.workers, cfg.spares)
        except BaseException:
            self.httpd.server_close()
            raise
        threading.Thread(target=self._watchdog, name="kassign-watchdog", daemon=True).start()

    @property
    def address(self) -> tuple[str, int]:
        """The host and port listened on (the port the OS chose for ``--port 0``)."""
        host, port = self.httpd.server_address[:2]
        return str(host), int(port)

    def serve(self) -> None:
        """Answer requests until :meth:`stop`."""
        self.httpd.serve_forever(poll_interval=0.2)

    def stop(self) -> None:
        """Stop accepting, stop the workers (a call from any thread but the serving one)."""
        self._stop.set()
        self.httpd.shutdown()

    def close(self) -> None:
        """Release the socket and kill the workers."""
        self.httpd.server_close()
        self.pool.close()
        if self.admin is not None:
            self.admin.close()

    # ------------------------------------------------------------------ limits

    def refuse(self, sock: socket.socket) -> None:
        """Answer 503 on a connection over ``max_connections`` without a thread (never blocks)."""
        body = json.dumps({"error": f"too many connections (the limit is {self.cfg.max_connections:,}); "
                                    "retry later", "path": ""}).encode()
        head = (f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: {len(body)}"
                "\r\nRetry-After: 1\r\nConnection: close\r\n\r\n").encode()
        try:
            sock.setblocking(False)
            sock.send(head + body)
        except OSError:
            pass
        self.metrics.finish(503, 0.0, admitted=False)

    def reserve(self, n: int) -> bool:
        """Hold ``n`` bytes of the body budget (``max_buffered``); ``False`` when they are not there."""
        with self._lock:
            if self._buffered + n > self.cfg.max_buffered:
                return False
            self._buffered += n
            return True

    def release(self, n: int) -> None:
        """Give back ``n`` bytes of the body budget."""
        with self._lock:
            self._buffered -= n

    def admit(self) -> bool:
        """Take a place among the requests running or waiting for a worker; ``False`` when the queue is full."""
        with self._lock:
            if self._admitted >= self.cfg.workers + self.cfg.max_queue:
                return False
            self._admitted += 1
            return True

    def leave(self) -> None:
        """Give back a place taken by :meth:`admit`."""
        with self._lock:
            self._admitted -= 1

    def watch(self, handler: Any) -> None:
        """Close the reading side of ``handler``'s connection if its request is not in by ``read_timeout``."""
        with self._lock:
            self._watch[handler] = time.monotonic() + self.cfg.read_timeout

    def unwatch(self, handler: Any) -> None:
        """The request of ``handler`` is in (or it is done)."""
        with self._lock:
            self._watch.pop(handler, None)

    def _watchdog(self) -> None:
        while not self._stop.wait(0.1):
            now = time.monotonic()
            with self._lock:
                late = [h for h, at in self._watch.items() if at <= now]
                for h in late:
                    del self._watch[h]
            for h in late:
                h.timed_out = True
                with contextlib.suppress(OSError):
                    h.connection.shutdown(socket.SHUT_RD)  # a blocked read returns: no more bytes taken


class Handler(BaseHTTPRequestHandler):
    """One connection, one request."""

    protocol_version = "HTTP/1.1"
    server_version = "kassign"
    sys_version = ""
    server: _Server
    timed_out = False

    def setup(self) -> None:
        self.timeout = self.server.service.cfg.read_timeout  # type: ignore[misc]  # each read and write; the watchdog bounds the sum
        self.started = time.monotonic()
        super().setup()
        self.server.service.watch(self)

    def finish(self) -> None:
        self.server.service.unwatch(self)
        with contextlib.suppress(OSError):
            super().finish()

    def parse_request(self) -> bool:
        """The standard library's parse, except that headers cut short by the watchdog are not a request.

        The watchdog's shutdown makes a blocked header read return end-of-file, which the standard
        library takes for the end of the headers; a request so cut would be answered (411, say) although
        its client never finished it.  Such a connection is closed without an answer, as when the read's
        own timeout fires first.
        """
        ok = super().parse_request()
        if ok and self.timed_out:
            self.close_connection = True
            return False
        return ok

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (a malformed request line, a line too long, too many
        headers, an unsupported method) as JSON, like every other error."""
        self.server.service.unwatch(self)
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":  # no request line understood: answer 1.1
            self.request_version = "HTTP/1.1"
        what = message or self.responses.get(code, ("error",))[0]
        self._error(RequestError(code, f"{what} (the request line and headers)" if code != 501 else
                                 "method not allowed: GET /healthz, /metrics, /openapi.json; POST /v1/assign", ""))

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the metrics count requests (a log line per request would be the service's bottleneck)."""

    # ------------------------------------------------------------------ answers

    def _send(self, code: int, body: bytes, ctype: str = "application/json", extra: dict[str, str] | None = None
              ) -> None:
        self.close_connection = True
        try:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:  # the client left: nothing to tell it
            pass

    def _json(self, code: int, doc: Any, extra: dict[str, str] | None = None) -> None:
        from solver.model.files import dumps

        self._send(code, (dumps(doc) + "\n").encode(), extra=extra)

    def _error(self, e: RequestError, admitted: bool = False) -> None:
        extra = {"Retry-After": "1"} if e.status in (429, 503) else None
        self._json(e.status, e.body(), extra)
        self.server.service.metrics.finish(e.status, time.monotonic() - self.started, admitted=admitted)

    # ------------------------------------------------------------------ routes

    def do_GET(self) -> None:
        """``/healthz``, ``/metrics``, ``/openapi.json``."""
        self.server.service.unwatch(self)
        service = self.server.service
        path = self.path.split("?", 1)[0]
        if path == "/healthz":
            self._json(200, {"status": "ok"})
        elif path == "/metrics":
            text = service.metrics.render(service.pool.counts())
            self._send(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")
        elif path == "/openapi.json":
            from spark_runner.serve.openapi import openapi_document

            self._json(200, openapi_document(service.cfg))
        else:
            self._error(RequestError(404, f"no such path; the service answers {', '.join(PATHS)}", ""))
            return
        service.metrics.finish(200, time.monotonic() - self.started, admitted=False)

    def do_POST(self) -> None:
        """``POST /v1/assign``."""
        if self.path.split("?", 1)[0] != "/v1/assign":
            self.server.service.unwatch(self)
            self._error(RequestError(404 if self.path.split("?", 1)[0] not in PATHS else 405,
                                     "POST goes to /v1/assign", ""))
            return
        try:
            self._assign()
        except RequestError as e:
            self._error(e)
        except Exception as e:  # a bug of the service's: the client gets a 500 in JSON, the service goes on
            print(f"kassign serve: internal error: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
            self._error(RequestError(500, f"internal error: {type(e).__name__}", ""))

    def _other(self) -> None:
        self.server.service.unwatch(self)
        self._error(RequestError(405, f"method {self.command} not allowed: GET /healthz, /metrics, /openapi.json; "
                                      "POST /v1/assign", ""))

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _other

    def _assign(self) -> None:
        service = self.server.service
        n = self._length()
        if not service.reserve(n):
            raise RequestError(503, "the service holds as many request bodies as it may (--max-buffered); "
                                    "retry later", "")
        try:
            body = self._read(n)
            service.unwatch(self)
            received = time.monotonic()
            with service.decoding:
                req = check_request(_decode(body), service.weights, service.admin is not None)
            del body
            if not service.admit():
                raise RequestError(429, f"the queue is full ({service.cfg.max_queue:,} requests waiting); "
                                        "retry later", "")
            service.metrics.start()
            try:
                self._answer(req, received)
            except RequestError as e:  # the Admin API lookup
                self._error(e, admitted=True)
            except Exception as e:  # a bug of the service's: a 500 in JSON, and the counters stay right
                print(f"kassign serve: internal error: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
                self._error(RequestError(500, f"internal error: {type(e).__name__}", ""), admitted=True)
            finally:
                service.leave()
        finally:
            service.release(n)

    def _answer(self, req: Any, received: float) -> None:
        service = self.server.service
        seconds = req.deadline_ms / 1000
        # the answer has to be written and travel back before the deadline: the wait ends a little earlier
        deadline = received + seconds - min(RETURN_MAX, max(RETURN_MIN, RETURN_SHARE * seconds))
        instance = req.instance
        if req.weights == "admin" and service.admin is not None and req.group is not None:
            # at most half the time left: Kafka's assignor and the optimum need the rest
            instance = service.admin.apply(instance, req.group, min(ADMIN_SHARE * (deadline - time.monotonic()),
                                                                    ADMIN_TIMEOUT))
        job = {"instance": instance, "assignor": req.assignor, "fallback": req.fallback,
               "balance_tolerance": req.balance_tolerance}
        msg = run_job(service.pool, job, deadline)
        elapsed = time.monotonic() - received
        if msg[0] == "result":
            _, doc, fallback, reason = msg
            doc = {**doc, "service": {"fallback": bool(fallback), "reason": reason, "deadline_ms": req.deadline_ms,
                                      "elapsed_ms": round(elapsed * 1000), "weights": req.weights}}
            self._json(200, doc)
            status = doc.get("stats", {}).get("status")
            service.metrics.finish(200, time.monotonic() - self.started, assigned=True, fallback=bool(fallback),
                                   proven=status == "optimal" and not fallback)
            return
        if msg[0] == "invalid":
            problems = msg[1]
            first = problems[0] if problems else None
            err = RequestError(422, first.message if first else "invalid instance", first.path if first else
                               "instance", problems)
        elif msg[0] == "busy":
            err = RequestError(503, f"{msg[1]} ({req.deadline_ms:,} ms)", "deadline_ms")
        else:
            err = RequestError(500, msg[1], "")
        self._error(err, admitted=True)

    def _length(self) -> int:
        if "Transfer-Encoding" in self.headers:
            raise RequestError(411, "send the body with a Content-Length (chunked bodies are not accepted)", "")
        text = self.headers.get("Content-Length")
        if text is None:
            raise RequestError(411, "a request needs a Content-Length", "")
        if not text.strip().isdigit() or len(text.strip()) > 18:
            raise RequestError(400, f"Content-Length is not a byte count: {text[:40]!r}", "")
        n = int(text)
        limit = self.server.service.cfg.max_body
        if n > limit:
            raise RequestError(413, f"the body is {n:,} bytes; the limit is {limit:,} bytes (--max-body)", "")
        return n

    def _read(self, n: int) -> bytes:
        chunks: list[bytes] = []
        got = 0
        while got < n:
            try:
                chunk = self.rfile.read1(min(n - got, 1 << 20))  # type: ignore[attr-defined]
            except TimeoutError:
                self.timed_out, chunk = True, b""
            except OSError:
                chunk = b""
            if not chunk:
                if self.timed_out:
                    raise RequestError(408, f"the body did not arrive within {self.server.service.cfg.read_timeout:g} "
                                            f"seconds ({got:,} of {n:,} bytes)", "")
                raise RequestError(400, f"the body ended after {got:,} of its {n:,} bytes (Content-Length)", "")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)


def _decode(body: bytes) -> Any:
    """The body's JSON value; 400 naming where it breaks (``decode_json``'s messages and limits)."""
    from solver.model.decode import DecodeError, decode_json

    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(400, f"the body is not UTF-8 text (byte {e.start:,})", "") from None
    try:
        return decode_json(text.removeprefix("\ufeff"))
    except DecodeError as e:
        p = e.problems[0]
        raise RequestError(400, p.message, p.path, e.problems) from None
    except MemoryError:
        raise RequestError(413, "the body does not fit in this service's memory when decoded", "") from None
