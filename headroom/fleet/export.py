"""Headroom's own state as Prometheus metrics, for the alerts and dashboards people already run.

    exporter = MetricsExporter(provider)     # provider() -> ExportState, called per scrape
    await exporter.start("127.0.0.1", 9450)  # GET /metrics
    ExportState.from_fleet(snapshot)         # `headroom fleet --export N`
    (headroom.supervisor.metrics_export builds one for `headroom serve --headless --metrics-port`)

Series (all gauges unless named *_total; every finding is one series while it is active):
    headroom_up 1
    headroom_supervisor_state{state}                 1 for the current state, 0 for the others
    headroom_restarts_total / headroom_rollbacks_total
    headroom_finding{id,step,severity,server}        1 per active doctor finding
    headroom_findings{severity}                      how many are active
    headroom_kv_headroom_requests{server}            free KV tokens / mean request tokens
    headroom_kv_cache_usage_ratio{server}            0..1
    headroom_server_up{server,model}                 fleet: 1 up, 0 down
    headroom_gpus{server}                            fleet: GPUs joined to the server
examples/prometheus/headroom-alerts.yml and examples/grafana/headroom-dashboard.json use them.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from headroom.fleet.model import FleetSnapshot

SUPERVISOR_STATES = ("starting", "ready", "degraded", "stopping", "stopped", "failed")
SEVERITIES = ("info", "warning", "error")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@dataclass(frozen=True)
class ExportedFinding:
    id: str
    step: int | None
    severity: str
    server: str = ""


@dataclass(frozen=True)
class ServerGauge:
    server: str
    model: str = ""
    up: bool = True
    headroom_requests: float | None = None
    kv_cache_usage: float | None = None
    gpus: int | None = None


@dataclass(frozen=True)
class ExportState:
    supervisor_state: str | None = None
    restarts: int | None = None
    rollbacks: int | None = None
    findings: tuple[ExportedFinding, ...] = ()
    servers: tuple[ServerGauge, ...] = ()
    extra: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def from_fleet(cls, snap: FleetSnapshot) -> ExportState:
        findings: dict[tuple, ExportedFinding] = {}
        for server in snap.servers:
            for item in server.findings:
                f = item.finding
                key = (f.id, server.instance)
                findings[key] = ExportedFinding(f.id, f.step, f.severity, server.instance)
        for item in snap.findings:  # fleet findings about no server (a DCGM target down)
            if not item.servers:
                f = item.finding
                findings[(f.id, "")] = ExportedFinding(f.id, f.step, f.severity, "")
        servers = tuple(
            ServerGauge(
                s.instance,
                s.model or "",
                s.state == "up",
                s.total.headroom_requests,
                s.total.kv_cache_usage,
                len(s.gpus),
            )
            for s in snap.servers
        )
        return cls(findings=tuple(findings.values()), servers=servers)


def render(state: ExportState) -> str:
    lines: list[str] = []

    def family(name: str, kind: str, help_text: str, samples: Iterable[tuple[str, float]]) -> None:
        rows = [(labels, value) for labels, value in samples if _finite(value)]
        lines.append(f"# HELP {name} {help_text}")
        lines.append(f"# TYPE {name} {kind}")
        lines.extend(f"{name}{labels} {_number(value)}" for labels, value in rows)

    family("headroom_up", "gauge", "1 while Headroom runs and exports.", [("", 1.0)])
    if state.supervisor_state is not None:
        current = state.supervisor_state.lower()
        family(
            "headroom_supervisor_state",
            "gauge",
            "The supervised vLLM server's state (1 for the current one).",
            [(_labels(state=s), 1.0 if s == current else 0.0) for s in SUPERVISOR_STATES],
        )
    if state.restarts is not None:
        family(
            "headroom_restarts_total",
            "counter",
            "Restarts Headroom made (fixes, crashes).",
            [("", float(state.restarts))],
        )
    if state.rollbacks is not None:
        family(
            "headroom_rollbacks_total",
            "counter",
            "Restarts that failed and went back to the last good configuration.",
            [("", float(state.rollbacks))],
        )
    family(
        "headroom_finding",
        "gauge",
        "An active doctor finding (1 while active); step is 1-5 or 'other'.",
        [
            (
                _labels(
                    id=f.id,
                    step=str(f.step) if f.step else "other",
                    severity=f.severity,
                    server=f.server,
                ),
                1.0,
            )
            for f in sorted(state.findings, key=lambda f: (f.server, f.id))
        ],
    )
    family(
        "headroom_findings",
        "gauge",
        "How many doctor findings are active, by severity.",
        [
            (_labels(severity=s), float(sum(f.severity == s for f in state.findings)))
            for s in SEVERITIES
        ],
    )
    servers = sorted(state.servers, key=lambda s: s.server)
    family(
        "headroom_kv_headroom_requests",
        "gauge",
        "Free KV-cache tokens over the mean request size: how many more requests fit.",
        [
            (_labels(server=s.server), s.headroom_requests)
            for s in servers
            if s.headroom_requests is not None
        ],
    )
    family(
        "headroom_kv_cache_usage_ratio",
        "gauge",
        "KV-cache usage, 0 to 1.",
        [
            (_labels(server=s.server), s.kv_cache_usage)
            for s in servers
            if s.kv_cache_usage is not None
        ],
    )
    family(
        "headroom_server_up",
        "gauge",
        "1 when the server answers, else 0.",
        [(_labels(server=s.server, model=s.model), 1.0 if s.up else 0.0) for s in servers],
    )
    family(
        "headroom_gpus",
        "gauge",
        "GPUs joined to the server (DCGM exporter).",
        [(_labels(server=s.server), float(s.gpus)) for s in servers if s.gpus is not None],
    )
    for name, value in sorted(state.extra.items()):
        family(name, "gauge", name.replace("_", " "), [("", value)])
    return "\n".join(lines) + "\n"


class MetricsExporter:
    """A tiny HTTP server: GET /metrics renders `provider()` at every scrape."""

    def __init__(self, provider: Callable[[], ExportState] | None = None) -> None:
        self._provider = provider
        self._state = ExportState()
        self._server: asyncio.Server | None = None
        self.scrapes = 0
        self.port: int | None = None

    def update(self, state: ExportState) -> None:
        self._state = state

    def update_fleet(self, snap: FleetSnapshot) -> None:
        self.update(ExportState.from_fleet(snap))

    def current(self) -> ExportState:
        if self._provider is None:
            return self._state
        try:
            return self._provider()
        except Exception as error:  # a broken provider must not take the scrape down
            return ExportState(
                extra={"headroom_export_errors": 1.0},
                findings=(ExportedFinding(f"export-error-{type(error).__name__}", None, "info"),),
            )

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._handle, host, port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while True:  # headers (ignored)
                line = await asyncio.wait_for(reader.readline(), 5)
                if line in (b"\r\n", b"\n", b""):
                    break
            parts = request.decode("latin-1").split()
            path = parts[1].split("?", 1)[0] if len(parts) >= 2 else ""
            if len(parts) >= 2 and parts[0] == "GET" and path in ("/metrics", "/"):
                self.scrapes += 1
                body = render(self.current()).encode()
                status, kind = "200 OK", CONTENT_TYPE
            else:
                body, status, kind = b"not found\n", "404 Not Found", "text/plain"
            head = (
                f"HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


def _labels(**pairs: str) -> str:
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs.items())
    return "{" + inner + "}"


def _escape(value: str) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(value)


def now() -> float:
    return time.time()


class ExporterThread:
    """A MetricsExporter on its own event loop in a daemon thread, for callers whose loops
    come and go (the fleet TUI runs one Textual app after another)."""

    def __init__(self, host: str, port: int) -> None:
        import threading

        self.host, self.port = host, port
        self.exporter = MetricsExporter()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="headroom-exporter", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise OSError(f"cannot serve metrics on {self.host}:{self.port}: {self._error}")

    def update_fleet(self, snap: FleetSnapshot) -> None:
        self.exporter.update_fleet(snap)  # one attribute assignment: safe across threads

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self.exporter.start(self.host, self.port))
        except OSError as error:
            self._error = error
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
