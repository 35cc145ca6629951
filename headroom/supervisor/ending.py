"""How a run ends: stopping the server (whole group, escalating signals, GPU memory wait),
finishing a failed run (diagnosis, journal, state), and asking the doctor about it."""

from __future__ import annotations

import time
from dataclasses import replace

from headroom.doctor import Diagnosis, DoctorInputs, diagnose, diagnosis_to_json
from headroom.doctor.model_table import find_model
from headroom.probes.model import ModelShape
from headroom.probes.model_lookup import lookup_model
from headroom.supervisor import preflight as pf
from headroom.supervisor.host import SupervisorHost
from headroom.supervisor.states import ServerState


class RunEnder:
    """Stops the server and closes its run's books (journal, state file, diagnosis)."""

    def __init__(self, host: SupervisorHost) -> None:
        self.host = host

    async def finish_failed(self, why: str, *, outcome: str) -> None:
        """A run that will not serve: make sure it is gone, diagnose, journal, say why."""
        host, run = self.host, self.host.run
        # Not only a live leader: when it died, what it started may live on in its group.
        if run.process is not None and run.process.anything_left():
            await self.stop_process()
        host.read_log(final=True)
        if outcome == "failed" and run.failure_kind != "ready_timeout":
            facts = run.facts()
            root = facts.failures[0] if facts is not None and facts.failures else None
            if root is not None:  # the log reader ranks the root cause first
                run.failure_kind = root.kind
                why = root.line.strip()[:500]
        run.failure_reason = why
        if outcome == "failed":
            kind = run.failure_kind or "exit"
            host.emit("failure", f"start-up failed ({kind}): {why[:300]}", event=kind)
        self.run_diagnosis()
        host.records.remove_state(host.port)
        host.records.update(
            run.run_id,
            outcome=outcome,
            reason=why[:500],
            ended_at=time.time(),
            findings=self.findings_json(),
            summary=run.stats.summary(),
        )
        host.set_state(ServerState.FAILED, why)

    def run_diagnosis(self, *, emit: bool = True, whole_run: bool = False) -> Diagnosis | None:
        """Ask the doctor about this run; emit its findings (top three) as events.

        whole_run: also what the metrics showed earlier in the run. The runtime rules judge
        the latest samples, so a run stopped after its load ended would otherwise be
        journaled as if nothing had happened while it served (KV full, preemptions)."""
        host, run = self.host, self.host.run
        model = local_model(getattr(host.command, "model", None))

        def ask(history: tuple) -> Diagnosis:
            return diagnose(
                DoctorInputs(
                    command=host.command,
                    log=run.digest,
                    metrics_history=history,
                    model=model,
                    ray_cluster=host.ray.cluster,  # read while it started (ray_watch)
                )
            )

        try:
            history = tuple(run.stats.history)
            run.diagnosis = ask(history)
            if whole_run:
                run.diagnosis = _with_earlier(run.diagnosis, history, ask)
        except Exception as exc:  # a doctor bug: the supervisor still reports
            run.diagnosis = None
            if emit:
                host.emit("notice", f"no diagnosis available: {exc!r}")
            return None
        if emit:
            for finding in run.diagnosis.findings[:3]:
                actions = [
                    {"knob": a.knob, "direction": a.direction, "value": a.value, "why": a.why}
                    for a in finding.actions
                ]
                host.emit(
                    "finding",
                    f"{finding.severity}: {finding.title}",
                    id=finding.id,
                    severity=finding.severity,
                    evidence=list(finding.evidence),
                    actions=actions,
                )
        return run.diagnosis

    def findings_json(self) -> list[dict]:
        diagnosis = self.host.run.diagnosis
        if diagnosis is None:
            return []
        try:
            findings = diagnosis_to_json(diagnosis).get("findings")
            return list(findings) if isinstance(findings, list) else []
        except Exception:
            return [{"id": f.id, "title": f.title} for f in diagnosis.findings]

    async def stop_process(self) -> None:
        host, run = self.host, self.host.run
        proc = run.process
        if proc is None:
            return
        run.stopping = True
        settings = host.settings
        report = await proc.stop(settings.grace_int_s, settings.grace_term_s)
        if report.signals:
            host.emit(
                "notice",
                f"stopped pid {proc.pid} with {', '.join(report.signals)} "
                f"in {report.seconds:.1f} s",
                signals=list(report.signals),
            )
        if report.orphans_killed:
            host.emit(
                "notice", f"killed stray processes that left the group: {report.orphans_killed}"
            )
        probe = host.gpus.probe()
        if probe is not None and getattr(await host.gpus.read(), "available", False):
            host.emit("memory", "waiting for the GPUs to release the server's memory")
            released, message = await pf.wait_memory_released(
                probe,
                report.pids,
                host.gpus.indices(host.child_env()),
                timeout_s=settings.memory_timeout_s,
            )
            host.emit("memory", message, released=released)

    async def stop_server(self, *, outcome: str | None = None) -> None:
        host, run = self.host, self.host.run
        if run.process is None:
            host.set_state(ServerState.STOPPED, "nothing was running")
            return
        was = host.state
        await host.close()
        if was in (ServerState.FAILED, ServerState.STOPPED) and not run.process.alive():
            # Already over and journaled; whatever it left behind goes now (a worker that
            # outlived a crashed leader), without touching the run's record.
            if run.process.anything_left():
                await self.stop_process()
            return
        host.set_state(ServerState.STOPPING, "stop requested")
        await self.stop_process()
        host.read_log(final=True)
        host.records.remove_state(host.port)
        fields: dict[str, object] = {}
        if was in (ServerState.READY, ServerState.DEGRADED):
            # what the doctor made of it while it served, for the journal
            self.run_diagnosis(emit=False, whole_run=True)
            fields["findings"] = self.findings_json()
        stopped = "stopped" if was != ServerState.STARTING else "stopped_before_ready"
        host.records.update(
            run.run_id,
            outcome=outcome or stopped,
            ended_at=time.time(),
            summary=run.stats.summary(),
            **fields,
        )
        host.set_state(ServerState.STOPPED, "stopped")


def local_model(name: str | None) -> ModelShape | None:
    """The model's shape from a local directory or the HF cache: the doctor is pure and reads
    no file. A name the built-in table knows needs no read; no hub from here (it could block)."""
    if not name or find_model(name) is not None:
        return None
    return lookup_model(name, hub=False).shape


# The runtime rules read the newest few samples, so the history is cut after every sample:
# a burst that filled the KV cache for two samples is still seen. At most 60 looks (the
# history kept), each well under a millisecond for metrics alone.
EARLIER_WINDOW = 1


def _with_earlier(final: Diagnosis, history: tuple, ask) -> Diagnosis:
    """`final` plus the findings the doctor had at earlier points of the history (the history
    cut after every EARLIER_WINDOW-th sample), each finding once, the final ones first."""
    seen = {f.id for f in final.findings}
    found = list(final.findings)
    for end in range(EARLIER_WINDOW, len(history), EARLIER_WINDOW):
        for finding in ask(history[:end]).findings:
            if finding.id not in seen:
                seen.add(finding.id)
                found.append(finding)
    return replace(final, findings=tuple(found))
