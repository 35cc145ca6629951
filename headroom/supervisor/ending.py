"""How a run ends: stopping the server (whole group, escalating signals, GPU memory wait),
finishing a failed run (diagnosis, journal, state), and asking the doctor about it."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from headroom.supervisor import preflight as pf
from headroom.supervisor import statefile
from headroom.supervisor.lifecycle import _facts, _probe, gpu_indices
from headroom.supervisor.states import ServerState

if TYPE_CHECKING:
    from headroom.supervisor.supervisor import Supervisor


async def finish_failed(sup: Supervisor, why: str, *, outcome: str) -> None:
    """A run that will not serve: make sure it is gone, diagnose, journal, say why."""
    if sup.process is not None and sup.process.alive():
        await stop_process(sup)
    sup.read_log(final=True)
    if outcome == "failed" and sup.failure_kind != "ready_timeout":
        facts = _facts(sup)
        root = facts.failures[0] if facts is not None and facts.failures else None
        if root is not None:  # the log reader ranks the root cause first
            sup.failure_kind = root.kind
            why = root.line.strip()[:500]
    sup.failure_reason = why
    if outcome == "failed":
        kind = sup.failure_kind or "exit"
        sup.emit("failure", f"start-up failed ({kind}): {why[:300]}", event=kind)
    run_diagnosis(sup)
    statefile.remove_state(sup.port, sup.state_dir)
    sup.journal_update(
        outcome=outcome,
        reason=why[:500],
        ended_at=time.time(),
        findings=_findings_json(sup),
        summary=sup.stats.summary(),
    )
    sup.set_state(ServerState.FAILED, why)


def run_diagnosis(sup: Supervisor, *, emit: bool = True) -> None:
    """Ask the doctor about this run; emit its findings (top three) as events."""
    try:
        from headroom.doctor import DoctorInputs, diagnose

        sup.diagnosis = diagnose(
            DoctorInputs(
                command=sup.command,
                log=sup.digest,
                metrics_history=tuple(sup.stats.history),
            )
        )
    except Exception as exc:  # doctor missing or broken: the supervisor still reports
        sup.diagnosis = None
        if emit:
            sup.emit("notice", f"no diagnosis available: {exc!r}")
        return
    if not emit:
        return
    for finding in sup.diagnosis.findings[:3]:
        actions = [
            {"knob": a.knob, "direction": a.direction, "value": a.value, "why": a.why}
            for a in finding.actions
        ]
        sup.emit(
            "finding",
            f"{finding.severity}: {finding.title}",
            id=finding.id,
            severity=finding.severity,
            evidence=list(finding.evidence),
            actions=actions,
        )


def _findings_json(sup: Supervisor) -> list[dict]:
    if sup.diagnosis is None:
        return []
    try:
        from headroom.doctor import diagnosis_to_json

        return list(diagnosis_to_json(sup.diagnosis).get("findings", []))
    except Exception:
        return [{"id": f.id, "title": f.title} for f in sup.diagnosis.findings]


async def stop_process(sup: Supervisor) -> None:
    proc = sup.process
    if proc is None:
        return
    sup._stopping = True
    report = await proc.stop(sup.grace_int_s, sup.grace_term_s)
    if report.signals:
        sup.emit(
            "notice",
            f"stopped pid {proc.pid} with {', '.join(report.signals)} in {report.seconds:.1f} s",
            signals=list(report.signals),
        )
    if report.orphans_killed:
        sup.emit("notice", f"killed stray processes that left the group: {report.orphans_killed}")
    probe = _probe(sup)
    if probe is not None and getattr(await asyncio.to_thread(probe.read), "available", False):
        sup.emit("memory", "waiting for the GPUs to release the server's memory")
        released, message = await pf.wait_memory_released(
            probe, report.pids, gpu_indices(sup), timeout_s=sup.memory_timeout_s
        )
        sup.emit("memory", message, released=released)


async def stop_server(sup: Supervisor, *, outcome: str | None = None) -> None:
    if sup.process is None:
        sup.set_state(ServerState.STOPPED, "nothing was running")
        return
    was = sup.state
    await sup._cancel_watch()
    if was in (ServerState.FAILED, ServerState.STOPPED) and not sup.process.alive():
        return  # already over and journaled
    sup.set_state(ServerState.STOPPING, "stop requested")
    await stop_process(sup)
    sup.read_log(final=True)
    statefile.remove_state(sup.port, sup.state_dir)
    fields: dict[str, object] = {}
    if was in (ServerState.READY, ServerState.DEGRADED):
        run_diagnosis(sup, emit=False)  # what the doctor made of it, for the journal
        fields["findings"] = _findings_json(sup)
    sup.journal_update(
        outcome=outcome or ("stopped" if was != ServerState.STARTING else "stopped_before_ready"),
        ended_at=time.time(),
        summary=sup.stats.summary(),
        **fields,
    )
    sup.set_state(ServerState.STOPPED, "stopped")
