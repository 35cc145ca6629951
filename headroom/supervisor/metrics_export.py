"""What `headroom serve --headless --metrics-port N` exports: the supervisor's state, its
restarts and rollbacks (counted from its events), the doctor's active findings (the last
failure's diagnosis, or the runtime rules over recent /metrics scrapes) and KV headroom.
The rendering and the HTTP server are headroom.fleet.export's."""

from __future__ import annotations

import time
from typing import Any

from headroom.doctor import DoctorInputs, diagnose
from headroom.fleet.export import ExportedFinding, ExportState, ServerGauge
from headroom.supervisor.states import SupervisorEvent
from headroom.supervisor.supervisor import Supervisor

RUNTIME_EVERY_S = 2.0  # the runtime rules run at most this often, whatever the scrape rate


class SupervisorExport:
    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup
        self.restarts = 0
        self.rollbacks = 0
        self._runtime: tuple[float, tuple[ExportedFinding, ...]] = (0.0, ())
        sup.subscribe(self._count)

    def _count(self, event: SupervisorEvent) -> None:
        if event.kind == "restart":
            self.restarts += 1
        elif event.kind == "rollback":
            self.rollbacks += 1

    def state(self) -> ExportState:
        sup = self.sup
        history = list(getattr(getattr(sup, "stats", None), "history", []) or [])
        last = history[-1] if history else None
        total = getattr(last, "total", None)
        server = ServerGauge(
            server=str(getattr(sup, "url", "") or ""),
            model=str(getattr(getattr(sup, "command", None), "model", "") or ""),
            up=str(getattr(sup, "state", "")) == "ready",
            headroom_requests=getattr(total, "headroom_requests", None),
            kv_cache_usage=getattr(total, "kv_cache_usage", None),
        )
        return ExportState(
            supervisor_state=str(getattr(sup, "state", "unknown")),
            restarts=self.restarts,
            rollbacks=self.rollbacks,
            findings=self._findings(history),
            servers=(server,),
        )

    def _findings(self, history: list) -> tuple[ExportedFinding, ...]:
        diagnosis = getattr(self.sup, "diagnosis", None)
        if diagnosis is not None:  # the last failure's: stays active until a new start
            return tuple(self._exported(f) for f in diagnosis.findings)
        if not history:
            return ()
        at, cached = self._runtime
        if time.monotonic() - at < RUNTIME_EVERY_S:
            return cached
        inputs = DoctorInputs(command=getattr(self.sup, "command", None), metrics_history=history)
        found = tuple(
            self._exported(f)
            for f in diagnose(inputs).findings
            if f.severity in ("warning", "error") and not f.id.startswith("rule-error")
        )
        self._runtime = (time.monotonic(), found)
        return found

    def _exported(self, finding: Any) -> ExportedFinding:
        return ExportedFinding(
            finding.id, finding.step, finding.severity, str(getattr(self.sup, "url", "") or "")
        )
