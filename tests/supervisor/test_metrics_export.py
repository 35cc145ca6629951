"""What `serve --headless --metrics-port` exports, from a supervisor-shaped object: restart
and rollback events counted, the runtime rules' findings over its recent scrapes, the last
failure's diagnosis taking precedence, KV headroom from the latest scrape."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from headroom.doctor import Diagnosis, Finding
from headroom.fleet.export import render
from headroom.probes.metrics_types import EngineMetrics, ServerMetrics
from headroom.supervisor.metrics_export import SupervisorExport
from headroom.supervisor.states import ServerState, SupervisorEvent


class FakeSupervisor(SimpleNamespace):
    def subscribe(self, callback) -> None:
        self.listeners.append(callback)

    def emit(self, kind: str) -> None:
        for callback in self.listeners:
            callback(SupervisorEvent(kind, kind, self.state))


def scrape(i: int) -> ServerMetrics:
    total = replace(
        EngineMetrics.empty("tiny"),
        kv_cache_usage=0.97,
        requests_running=30.0,
        requests_waiting=5.0 + i,
        preemptions_total=10.0 * i,
        kv_capacity_tokens=3904,
        headroom_requests=0.2,
    )
    return ServerMetrics(float(i), "http://127.0.0.1:8000", "up", None, total, (), ())


def make(history, diagnosis=None) -> FakeSupervisor:
    return FakeSupervisor(
        listeners=[],
        state=ServerState.READY,
        url="http://127.0.0.1:8000",
        command=SimpleNamespace(model="tiny", get=lambda *a, **k: None, has=lambda *a: False),
        stats=SimpleNamespace(history=history),
        diagnosis=diagnosis,
    )


def test_runtime_findings_restarts_and_headroom_are_exported() -> None:
    sup = make([scrape(i) for i in range(8)])
    export = SupervisorExport(sup)
    sup.emit("restart")
    sup.emit("restart")
    sup.emit("rollback")
    text = render(export.state())
    assert "headroom_restarts_total 2" in text and "headroom_rollbacks_total 1" in text
    assert 'id="kv-full-preemptions",step="4",severity="warning"' in text
    assert 'headroom_kv_headroom_requests{server="http://127.0.0.1:8000"} 0.2' in text
    assert 'headroom_supervisor_state{state="ready"} 1' in text


def test_the_failure_diagnosis_is_what_is_active_after_a_failed_start() -> None:
    failed = Diagnosis((Finding("max-seq-len-exceeds-kv", 4, "error", "too long"),), (), ())
    sup = make([], diagnosis=failed)
    sup.state = ServerState.FAILED
    text = render(SupervisorExport(sup).state())
    assert 'headroom_finding{id="max-seq-len-exceeds-kv",step="4",severity="error"' in text
    assert 'headroom_supervisor_state{state="failed"} 1' in text
