"""The app's single copy of what the probes last said, plus short histories.

Handlers on the app write here; screens read from here when they redraw. Keeping one store
(rather than each widget holding its own data) means a screen that was off-screen can draw
itself completely the moment it is shown.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from headroom.doctor.findings import Diagnosis, Finding
from headroom.probes.metrics_types import ServerMetrics
from headroom.probes.nvml_types import GpuSnapshot
from headroom.probes.ray_cluster import RayCluster
from headroom.probes.safe_text import safe_optional, safe_text
from headroom.probes.server_info import ServerInfo as ReportedInfo
from headroom.probes.topology_types import TopologyMatrix
from headroom.probes.topology_verdict import TpVerdict
from headroom.supervisor.journal import RunRecord
from headroom.tui.log_classes import LogEntry, classify
from headroom.vllm_cmd import VllmCommand

HISTORY = 120  # samples kept for sparklines: two minutes at the default 1 s interval
LOG_KEEP = 5000  # log lines kept in memory for the Logs screen
EVENTS_KEEP = 60  # classified log events (warnings, errors, known milestones) for the dashboard


@dataclass
class ServerInfo:
    """What Headroom knows about the server it watches, beyond /metrics."""

    url: str | None = None
    state: str = "unknown"  # supervisor state, or the metrics state when only attached
    detail: str | None = None
    model: str | None = None
    command: VllmCommand | None = None
    up_since: float | None = None  # clock() value when the server was first seen up
    supervised: bool = False
    reported: ReportedInfo | None = None  # what /v1/models and /version said


@dataclass(frozen=True)
class RayReading:
    """The Ray cluster under a `--distributed-executor-backend ray` server, and what the
    doctor's multi-node rules make of it (why a placement group waits, dead nodes)."""

    cluster: RayCluster
    findings: tuple[Finding, ...] = ()


@dataclass
class Store:
    """Latest probe results and histories. `None` means "not read yet"; a probe that cannot
    read anything records why in `unavailable`."""

    server: ServerInfo = field(default_factory=ServerInfo)
    metrics: ServerMetrics | None = None
    metrics_history: deque[ServerMetrics] = field(default_factory=lambda: deque(maxlen=HISTORY))
    kv_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    gpus: GpuSnapshot | None = None
    gpu_util_history: dict[int, deque[float]] = field(default_factory=dict)  # 0..1 per sample
    gpu_mem_history: dict[int, deque[float]] = field(default_factory=dict)  # used / total
    topology: TopologyMatrix | None = None
    verdicts: list[TpVerdict] = field(default_factory=list)
    log_entries: deque[LogEntry] = field(default_factory=lambda: deque(maxlen=LOG_KEEP))
    log_pending: list[str] = field(default_factory=list)
    log_total: int = 0  # lines ever seen, so line numbers survive trimming
    events: deque[LogEntry] = field(default_factory=lambda: deque(maxlen=EVENTS_KEEP))
    diagnosis: Diagnosis | None = None
    runs: list[RunRecord] = field(default_factory=list)
    ray: RayReading | None = None  # None: the server does not run on Ray (no panel)
    unavailable: dict[str, str] = field(default_factory=dict)

    def record_metrics(self, snapshot: ServerMetrics, now: float) -> None:
        self.metrics = snapshot
        self.metrics_history.append(snapshot)
        usage = snapshot.total.kv_cache_usage
        state = snapshot.state
        self.kv_history.append(usage if usage is not None else 0.0)
        if state == "up":
            self.unavailable.pop("metrics", None)
            if self.server.up_since is None and not self.server.supervised:
                self.server.up_since = now
        elif not self.server.supervised:
            self.server.up_since = None
        if not self.server.supervised:
            self.server.state = state
            self.server.detail = safe_optional(snapshot.message)
        model = snapshot.total.model_name
        if model is None and snapshot.models:
            model = snapshot.models[0].model_name
        if model and not self.server.model:
            self.server.model = safe_text(model)

    def record_gpus(self, snapshot: GpuSnapshot) -> None:
        self.gpus = snapshot
        if (failure := snapshot.failure) is not None:
            self.unavailable["gpus"] = str(failure)
            return
        self.unavailable.pop("gpus", None)
        for gpu in snapshot.gpus:
            util = self.gpu_util_history.setdefault(gpu.index, deque(maxlen=HISTORY))
            mem = self.gpu_mem_history.setdefault(gpu.index, deque(maxlen=HISTORY))
            util.append((gpu.util_gpu or 0.0) / 100.0)
            total, used = gpu.memory_total, gpu.memory_used
            mem.append(used / total if total and used is not None else 0.0)

    def add_log_lines(self, lines: list[str]) -> None:
        # Log lines are anyone's text (a client's prompt lands in vLLM's request log): every
        # line reaches the Logs screen and the events with control characters escaped.
        self.log_pending.extend(safe_text(line) for line in lines)

    def add_notice(self, kind: str, message: str) -> None:
        """A supervisor event, kept among the log events (severity by kind)."""
        severity = "warning" if kind in {"rollback", "crash_backoff", "preflight"} else "info"
        self.events.append(
            LogEntry(
                self.log_total, f"headroom: {safe_text(message)}", f"headroom {kind}", severity
            )
        )

    def take_log_lines(self) -> list[LogEntry]:
        """Classify pending lines (once, here), keep them, and return the new `LogEntry`s for
        incremental draws. Lines that mean something (a known event, a warning, an error)
        also become dashboard events."""
        lines, self.log_pending = self.log_pending, []
        entries: list[LogEntry] = []
        for line in lines:
            self.log_total += 1
            entry = classify(line, self.log_total)
            entries.append(entry)
            if entry.kind is not None or entry.severity != "info":
                self.events.append(entry)
        self.log_entries.extend(entries)
        return entries
