"""The fleet's snapshot types: one row per vLLM server, its GPUs, and fleet findings.

Both sources (Prometheus, direct scrape) build the same FleetSnapshot, so the table, the
JSON/CSV output, the doctor and the exporter never care where the numbers came from.
A server's numbers are a probes-layer `ServerMetrics` (the same type the single-server
dashboard shows), so Enter on a fleet row can open the existing screens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from headroom.doctor.findings import Finding
from headroom.probes.dcgm import DcgmGpu
from headroom.probes.metrics_types import EngineMetrics, ServerMetrics
from headroom.probes.server_info import ServerInfo

SEVERITY_RANK = {"error": 3, "warning": 2, "info": 1}


@dataclass(frozen=True)
class FleetFinding:
    """A doctor finding, and the servers (instances) it is about (empty: the fleet)."""

    finding: Finding
    servers: tuple[str, ...] = ()


@dataclass(frozen=True)
class FleetServer:
    instance: str  # Prometheus `instance`, or host:port of the URL
    url: str | None  # base URL (where /metrics lives), when known
    job: str | None
    host: str | None  # the host its GPUs are joined by
    metrics: ServerMetrics  # state/message/total/engines/models
    info: ServerInfo | None = None
    gpus: tuple[DcgmGpu, ...] = ()
    findings: tuple[FleetFinding, ...] = ()
    history: tuple[ServerMetrics, ...] = ()  # recent snapshots (runtime rules read trends)

    @property
    def state(self) -> str:
        return self.metrics.state

    @property
    def total(self) -> EngineMetrics:
        return self.metrics.total

    @property
    def model(self) -> str | None:
        if self.total.model_name:
            return self.total.model_name
        names = [m.model_name for m in self.metrics.models if m.model_name]
        if names:
            return ",".join(names)
        return self.info.model_ids[0] if self.info and self.info.model_ids else None

    @property
    def engine_count(self) -> int:
        return len({e.engine for e in self.metrics.engines}) or (1 if self.state == "up" else 0)

    @property
    def trouble(self) -> int:
        """Higher = needs a look first: down, then errors, then warnings, then pressure."""
        score = 0 if self.state == "up" else 1000
        for item in self.findings:
            score += {3: 100, 2: 10, 1: 1}[SEVERITY_RANK[item.finding.severity]]
        t = self.total
        if t.preemptions_per_s:
            score += 5
        if t.requests_waiting:
            score += 3
        if t.kv_cache_usage is not None and t.kv_cache_usage >= 0.9:
            score += 2
        if any(g.xid for g in self.gpus) or any(g.throttle for g in self.gpus):
            score += 20
        return score


@dataclass(frozen=True)
class TargetHealth:
    """A scrape target Headroom cares about (a vLLM or DCGM job) and its health."""

    job: str
    instance: str
    kind: str  # "vllm" | "dcgm" | "other"
    health: str  # "up" | "down" | "unknown"
    last_error: str


@dataclass(frozen=True)
class FleetSnapshot:
    taken_at: float  # wall clock (time.time())
    source: str  # "prometheus http://..." | "direct"
    servers: tuple[FleetServer, ...]
    unmatched_gpus: tuple[DcgmGpu, ...] = ()
    targets: tuple[TargetHealth, ...] = ()
    findings: tuple[FleetFinding, ...] = ()  # fleet-only findings (also on their servers)
    warnings: tuple[str, ...] = ()  # Prometheus warnings, partial data, unreachable parts
    requests_made: int = 0  # HTTP requests this refresh cost
    extra: dict[str, object] = field(default_factory=dict)

    def sorted_servers(self) -> tuple[FleetServer, ...]:
        return tuple(sorted(self.servers, key=lambda s: (-s.trouble, s.instance)))

    def server(self, instance: str) -> FleetServer | None:
        for s in self.servers:
            if s.instance == instance:
                return s
        return None
