"""A loopback HTTP server that misbehaves on purpose: huge, slow, endless, redirecting bodies.

    with HostileServer() as server:                       # 127.0.0.1, a free port, a thread
        server.route("/metrics", huge(1 << 30, prefix=PAGE))   # 1 GiB, generated as it is sent
        server.route("/metrics", trickle(b"x", every_s=0.05))  # endless, one byte at a time
        server.route("/metrics", redirect("http://localhost:9/metrics"))
        server.route("/version", fixed(b'{"version": "\\u001b]0;pwned\\u0007"}'))
        ... server.url ... server.sent_bytes["/metrics"] ... server.requests

Bodies are close-delimited (HTTP/1.0, no Content-Length) unless a behaviour declares one, so
"endless" really has no end. Writers stop when the client hangs up or the server stops.
The benchmark benchmarks/hostile_metrics.py uses the same server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Behaviour = Callable[["_Handler", "HostileServer"], None]
FILLER_LINE = b'vllm:padding_total{engine="0",model_name="x"} 1.0\n'


class HostileServer:
    def __init__(self) -> None:
        self._routes: dict[str, Behaviour] = {}
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self.requests: list[str] = []
        self.sent_bytes: dict[str, int] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def route(self, path: str, behaviour: Behaviour) -> HostileServer:
        with self._lock:
            self._routes[path] = behaviour
        return self

    def start(self) -> HostileServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self.url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def count(self, path: str, sent: int) -> None:
        with self._lock:
            self.sent_bytes[path] = self.sent_bytes.get(path, 0) + sent


def _handler_for(server: HostileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        owner = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # close-delimited bodies
    owner: HostileServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        path = self.path.split("?", 1)[0]
        with self.owner._lock:
            self.owner.requests.append(path)
            behaviour = self.owner._routes.get(path)
        try:
            if behaviour is None:
                self.head(404, "text/plain")
                self.write(path, b"not here\n")
            else:
                behaviour(self, self.owner)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading: what a bounded reader should do

    def do_POST(self) -> None:  # noqa: N802 (a form POST, e.g. Prometheus's query API)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self.do_GET()

    def head(self, status: int, content_type: str, length: int | None = None, **extra) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if length is not None:
            self.send_header("Content-Length", str(length))
        for name, value in extra.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()

    def write(self, path: str, data: bytes) -> None:
        self.wfile.write(data)
        self.owner.count(path, len(data))


PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


def fixed(body: bytes | str, status: int = 200, content_type: str = PROMETHEUS) -> Behaviour:
    data = body.encode("utf-8") if isinstance(body, str) else body

    def behave(handler: _Handler, server: HostileServer) -> None:
        handler.head(status, content_type, len(data))
        handler.write(handler.path, data)

    return behave


def huge(
    total: int,
    *,
    prefix: bytes | str = b"",
    line: bytes = FILLER_LINE,
    declare_length: bool = False,
    chunk: int = 1 << 16,
) -> Behaviour:
    """`prefix`, then `line` repeated until `total` bytes, generated as it goes (no memory)."""
    head = prefix.encode("utf-8") if isinstance(prefix, str) else prefix
    block = line * max(1, chunk // len(line))

    def behave(handler: _Handler, server: HostileServer) -> None:
        handler.head(200, PROMETHEUS, total if declare_length else None)
        handler.write(handler.path, head[:total])
        left = total - min(len(head), total)
        while left > 0 and not server.stopping.is_set():
            piece = block[:left]
            handler.write(handler.path, piece)
            left -= len(piece)

    return behave


def trickle(piece: bytes, *, every_s: float, prefix: bytes = b"") -> Behaviour:
    """Headers at once, then `piece` every `every_s` seconds, for ever."""

    def behave(handler: _Handler, server: HostileServer) -> None:
        handler.head(200, PROMETHEUS)
        handler.write(handler.path, prefix)
        handler.wfile.flush()
        while not server.stopping.wait(every_s):
            handler.write(handler.path, piece)
            handler.wfile.flush()

    return behave


def silent(for_s: float) -> Behaviour:
    """Accepts, then says nothing (not even headers) for `for_s` seconds."""

    def behave(handler: _Handler, server: HostileServer) -> None:
        server.stopping.wait(for_s)

    return behave


def redirect(location: str, status: int = 302) -> Behaviour:
    def behave(handler: _Handler, server: HostileServer) -> None:
        handler.head(status, "text/plain", 0, Location=location)

    return behave


def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
