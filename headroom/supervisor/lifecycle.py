"""The supervisor's moving parts, kept apart from its public surface (supervisor.py):
preflight, one watch tick (log, process, /health, metrics), log events, stop, diagnosis.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import httpx

from headroom.supervisor import preflight as pf
from headroom.supervisor import statefile
from headroom.supervisor.journal import RunRecord, new_run_id
from headroom.supervisor.launcher import flag_tokens
from headroom.supervisor.run_stats import gpus_from_snapshot, model_shape_dict, topology_summary
from headroom.supervisor.states import ServerState
from headroom.vllm_cmd import redact_argv

# A server that serves this long after a crash restart gets its crash budget back.
CRASH_BUDGET_RESET_S = 600.0

if TYPE_CHECKING:
    from headroom.supervisor.supervisor import Supervisor


def gpu_indices(sup: Supervisor) -> list[int] | None:
    snapshot = None
    return pf.visible_gpu_indices(sup.child_env(), snapshot)


def _probe(sup: Supervisor):
    if sup.nvml_probe is None:
        sup.nvml_probe = pf.make_nvml_probe() or False  # False: looked, none there
    return sup.nvml_probe or None


def _world_size(sup: Supervisor) -> int:
    size = 1
    for name in ("tensor_parallel_size", "pipeline_parallel_size"):
        try:
            size *= int(sup.command.get(name) or 1)
        except (TypeError, ValueError):
            pass
    return size


async def run_preflight(sup: Supervisor) -> None:
    from headroom.supervisor.supervisor import PreflightError

    failures: list[str] = []
    port_problem = pf.check_port(sup.command.get("host") or "0.0.0.0", sup.port)  # noqa: S104
    if port_problem:
        live = statefile.read_state(sup.port, sup.state_dir)
        if live is not None and live.alive():
            port_problem += (
                f"; Headroom started pid {live.pid} there ({live.model}): "
                "`headroom serve` re-adopts it, or stop it first"
            )
        failures.append(port_problem)
    probe = _probe(sup)
    if probe is not None:
        snapshot = await asyncio.to_thread(probe.read)
        kv_bytes = sup.command.get("kv_cache_memory_bytes")
        result = pf.check_gpus(
            snapshot,
            env=sup.child_env(),
            utilization=_float(sup.command.get("gpu_memory_utilization")),
            kv_cache_memory_bytes=kv_bytes if isinstance(kv_bytes, int) else None,
            world_size=_world_size(sup),
        )
        failures += result.failures
        if not getattr(snapshot, "available", False):
            sup.nvml_probe = None  # look again before the next start (a driver may appear)
        for note in result.notes:
            sup.emit("notice", note)
    for failure in failures:
        sup.emit("preflight", failure, check=failure.split(" ", 1)[0])
    if failures:
        sup.failure_reason = "preflight: " + "; ".join(failures)
        sup.set_state(ServerState.FAILED, sup.failure_reason)
        raise PreflightError(tuple(failures))


def _float(value: object) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def write_state_file(sup: Supervisor) -> None:
    proc = sup.process
    if proc is None or sup.log_path is None:
        return
    record = statefile.ServerRecord(
        pid=proc.pid,
        pgid=proc.pgid,
        port=sup.port,
        url=sup.url,
        model=sup.command.model,
        argv=redact_argv(sup.argv()),
        flags=redact_argv(flag_tokens(sup.command)),
        launcher=sup.template,
        env=sup.relevant_env(),
        log_path=str(sup.log_path),
        started_at=time.time(),
        create_time=proc.create_time,
        run_id=sup.run_id,
        headroom_pid=__import__("os").getpid(),
    )
    try:
        statefile.write_state(record, sup.state_dir)
    except OSError as exc:
        sup.emit("notice", f"could not write the state file (no re-adoption after a drop): {exc}")


def journal_new_run(sup: Supervisor, argv: list[str], reason: str | None) -> None:
    """The journal record of a run that just launched (secrets redacted)."""
    record = RunRecord(
        run_id=sup.run_id or new_run_id(),
        model=sup.command.model,
        command=redact_argv(argv),
        flags=redact_argv(flag_tokens(sup.command)),
        launcher=sup.launcher_name,
        env=sup.relevant_env(),
        port=sup.port,
        log_path=str(sup.log_path),
        trigger=reason or sup._run_reason,
        parent_run_id=sup._run_parent,
        changes=sup._run_changes,
    )
    fill_context(sup, record)
    sup._journal_safely(sup.journal.append, record)


def fill_context(sup: Supervisor, record: RunRecord) -> None:
    """GPUs and model shape for the journal, best effort and quick."""
    record.model_shape = model_shape_dict(sup.command.model)
    probe = _probe(sup)
    if probe is not None:
        try:
            record.gpus = gpus_from_snapshot(probe.read(), gpu_indices(sup))
        except Exception:
            record.gpus = []


async def journal_topology(sup: Supervisor) -> None:
    """Add the GPUs' topology (links between the GPUs in use) to the run's record."""
    if _probe(sup) is None:
        return  # no GPUs to describe
    try:
        from headroom.probes.topology import read_topology

        matrix = await read_topology(getattr(sup.nvml_probe, "nvml", None))
    except Exception:
        return
    summary = topology_summary(matrix, gpu_indices(sup))
    if summary:
        sup.journal_update(topology=summary)


def prune_logs(folder, keep: int = 200) -> int:
    """Delete all but the newest `keep` per-run logs (run ids sort by time); returns how many."""
    try:
        logs = sorted(p for p in folder.glob("*.log") if p.is_file())
    except OSError:
        return 0
    removed = 0
    for path in logs[: max(len(logs) - keep, 0)]:
        try:
            path.unlink()
            removed += 1
        except OSError:
            pass
    return removed


def last_good_start_from_journal(sup: Supervisor) -> float | None:
    try:
        records = sup.journal.records()
    except OSError:
        return None
    for record in reversed(records):
        if record.model == sup.command.model and record.time_to_ready_s:
            return float(record.time_to_ready_s)
    return None


def read_log(sup: Supervisor, *, final: bool = False) -> list[str]:
    """Pull new lines from the run's log into the digest, ring buffer and listeners."""
    if sup._tail is None:
        return []
    skipped_before = sup._tail.skipped_bytes
    lines = sup._tail.read_lines(final=final)
    if sup._tail.skipped_bytes != skipped_before:
        skipped = sup._tail.skipped_bytes - skipped_before
        sup.emit(
            "notice",
            f"the log grows faster than it can be read: skipped {skipped / 2**20:.0f} MiB "
            f"of {sup.log_path}",
        )
    if not lines:
        return lines
    sup._last_progress = time.monotonic()
    for line in lines:
        sup.log_lines.append(line)
        try:
            event = sup.digest.feed(line)
        except Exception:  # the log reader must never stop the supervisor
            event = None
        if event is not None:
            on_log_event(sup, event)
    for listener in list(sup._log_listeners):
        try:
            listener(lines)
        except Exception:
            pass
    return lines


def on_log_event(sup: Supervisor, event) -> None:
    """React to a classified log line: start-up failures, engine death."""
    from headroom.supervisor.supervisor import ENGINE_DEATH, STARTUP_FAILURES

    if event.severity != "error":
        return
    if sup.state == ServerState.STARTING and event.kind in STARTUP_FAILURES:
        if sup.failure_kind is None or sup.failure_kind == "engine_core_failed":
            # The first specific error is the root cause; "engine core failed" only echoes it.
            sup.failure_kind = event.kind
            sup.failure_reason = event.line.strip()[:500]
        if sup._failure_seen_at is None:
            sup._failure_seen_at = time.monotonic()  # vLLM exits soon; if not, it is stopped
    elif sup.state in (ServerState.READY, ServerState.DEGRADED) and event.kind in ENGINE_DEATH:
        sup.failure_kind = event.kind
        sup.failure_reason = event.line.strip()[:500]
        sup.emit("failure", f"engine died: {event.line.strip()[:300]}", event=event.kind)
        sup.set_state(ServerState.DEGRADED, f"engine dead ({event.kind}); the API may still answer")


async def watch_tick(sup: Supervisor, client: httpx.AsyncClient) -> bool:
    """One look at the server. Returns True when there is nothing left to watch."""
    from headroom.supervisor import ending

    sup.read_log()
    proc = sup.process
    if proc is None or sup._stopping:
        return sup._stopping is False and proc is None
    alive = proc.alive()
    now = time.monotonic()
    if sup.state == ServerState.STARTING:
        if not alive:
            sup.read_log(final=True)
            code = proc.exit_code
            why = sup.failure_reason or f"exited with status {code} before it was ready"
            await ending.finish_failed(sup, why, outcome="failed")
            return True
        if (
            sup._failure_seen_at is not None
            and now - sup._failure_seen_at > sup.failure_exit_grace_s
        ):
            await ending.finish_failed(
                sup, sup.failure_reason or "start-up failed", outcome="failed"
            )
            return True
        if now - sup._last_progress > sup.ready_timeout():
            why = (
                f"not ready after {sup.ready_timeout():.0f} s without any log progress "
                "(hung start-up?)"
            )
            sup.failure_kind = "ready_timeout"
            await ending.finish_failed(sup, why, outcome="failed")
            return True
        if await _healthy(sup, client):
            sup.time_to_ready_s = now - (sup._started_mono or now)
            sup.last_good = sup.command
            sup.last_good_env = dict(sup.env)
            sup.last_good_start_s = sup.time_to_ready_s
            if sup._run_reason != "crash restart":
                sup.crash_count = 0  # a deliberate start begins a fresh crash budget
            sup._ready_at = now
            facts = _facts(sup)
            if sup.adopted:
                sup.set_state(ServerState.READY, "/health answers (re-adopted server)")
                sup.journal_update(outcome="ready")
                return False
            sup.set_state(ServerState.READY, f"/health answered after {sup.time_to_ready_s:.1f} s")
            sup.journal_update(
                outcome="ready",
                time_to_ready_s=round(sup.time_to_ready_s, 2),
                vllm_version=getattr(facts, "vllm_version", None),
                kv_cache_tokens=getattr(facts, "kv_cache_tokens", None),
                max_concurrency=getattr(facts, "max_concurrency", None),
            )
        return False
    if not alive:
        sup.read_log(final=True)
        why = sup.failure_reason or f"the server exited (status {proc.exit_code}) while serving"
        from headroom.supervisor.restart import after_crash

        await after_crash(sup, why)
        return True
    healthy = await _healthy(sup, client)
    engine_dead = sup.failure_kind in _engine_death() or getattr(_facts(sup), "engine_dead", False)
    if engine_dead:
        from headroom.supervisor.restart import after_crash

        sup.set_state(ServerState.DEGRADED, "engine dead")
        await after_crash(sup, sup.failure_reason or "the engine died", stop_first=True)
        return True
    if healthy:
        sup._health_failures = 0
        if sup.crash_count and now - getattr(sup, "_ready_at", now) > CRASH_BUDGET_RESET_S:
            sup.crash_count = 0  # served well for a while: earlier crashes were not a loop
        if sup.state == ServerState.DEGRADED:
            sup.set_state(ServerState.READY, "/health answers again")
    else:
        sup._health_failures += 1
        if sup.state == ServerState.READY and sup._health_failures >= sup.degraded_after_failures:
            sup.set_state(
                ServerState.DEGRADED, f"/health failed {sup._health_failures} times in a row"
            )
    if now - sup._last_metrics_at >= sup.metrics_interval_s:
        sup._last_metrics_at = now
        await asyncio.to_thread(proc.members)  # remember workers for the no-orphan stop
        await _sample_metrics(sup, client)
    return False


def _engine_death() -> frozenset[str]:
    from headroom.supervisor.supervisor import ENGINE_DEATH

    return ENGINE_DEATH


def _facts(sup: Supervisor):
    try:
        return sup.digest.facts()
    except Exception:
        return None


async def _healthy(sup: Supervisor, client: httpx.AsyncClient) -> bool:
    try:
        response = await client.get(sup.url + "/health")
    except (httpx.HTTPError, OSError):
        return False
    return response.status_code == 200


async def _sample_metrics(sup: Supervisor, client: httpx.AsyncClient) -> None:
    if sup.scrape_metrics:
        probe = sup._metrics_probe
        if probe is None:
            try:
                from headroom.probes.metrics import MetricsProbe

                probe = MetricsProbe(sup.url + "/metrics", client=client)
            except Exception:
                probe = False
            sup._metrics_probe = probe
        if probe:
            try:
                metrics = await probe.scrape()
            except Exception as exc:  # a probe must not stop the watching
                metrics = None
                state, message = "error", repr(exc)
            else:
                sup.stats.observe_metrics(metrics)
                state, message = metrics.state, metrics.message
            if state != sup._metrics_state:  # say it once per change, not every scrape
                if state != "up":
                    sup.emit("notice", f"/metrics {state}: {message or 'no detail'}")
                elif sup._metrics_state is not None:
                    sup.emit("notice", "/metrics answers again")
                sup._metrics_state = state
    nvml = _probe(sup)
    if nvml is not None:
        try:
            sup.stats.observe_gpus(await asyncio.to_thread(nvml.read), gpu_indices(sup))
        except Exception:
            pass
