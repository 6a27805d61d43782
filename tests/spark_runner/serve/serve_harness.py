"""A real ``kassign serve`` subprocess on 127.0.0.1 and a plain HTTP client for it (tests and the benchmark)."""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
KASSIGN = str(Path(sys.executable).with_name("kassign"))


class Serve:
    """``kassign serve --port 0 ARGS`` started and waited for; :meth:`stop` sends SIGTERM and reaps it."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, startup: float = 180.0) -> None:
        self.proc = subprocess.Popen([KASSIGN, "serve", "--host", HOST, "--port", "0", *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                     env={**os.environ, **(env or {})})
        self.lines: queue.Queue[str] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        end = time.monotonic() + startup
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, end - time.monotonic()))
            except queue.Empty:
                self.stop()
                raise RuntimeError(f"kassign serve did not start within {startup} s: {self.stderr}") from None
            m = re.fullmatch(r"kassign serve listening on http://127\.0\.0\.1:(\d+)", line.rstrip("\n"))
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"kassign serve exited {self.proc.returncode}: {self.stderr}")

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            self.lines.put(line)

    def stop(self) -> int:
        """SIGTERM, then the exit code (SIGKILL if it takes more than 30 s)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def request(self, method: str, path: str, body: bytes | None = None, *, timeout: float = 120.0,
                headers: dict[str, str] | None = None) -> tuple[int, Any, dict[str, str]]:
        """One request on a fresh connection: (status, decoded JSON or text, headers)."""
        conn = http.client.HTTPConnection(HOST, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
        finally:
            conn.close()
        text = data.decode()
        return resp.status, json.loads(text) if hdrs.get("content-type") == "application/json" else text, hdrs

    def assign(self, request: dict[str, Any], timeout: float = 120.0) -> tuple[int, Any]:
        """``POST /v1/assign`` with ``request`` as JSON: (status, answer)."""
        code, doc, _ = self.request("POST", "/v1/assign", json.dumps(request).encode(), timeout=timeout,
                                    headers={"Content-Type": "application/json"})
        return code, doc


def kassign_assign(path: Path, *args: str) -> dict[str, Any]:
    """What ``kassign assign PATH ARGS`` writes (exit 0 asserted)."""
    out = subprocess.run([KASSIGN, "assign", str(path), *args], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    doc: dict[str, Any] = json.loads(out.stdout)
    return doc
