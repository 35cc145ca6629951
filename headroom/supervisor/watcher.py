"""The process watcher: one look at the server every poll interval (its log, its process,
/health, now and then /metrics and the GPUs), turning what it sees into state changes.

The engine is judged dead from the process's exit or /health, never from a log line alone:
a request's prompt can contain any text, and it lands in vLLM's request log. An error line
read while serving is kept as the evidence (failure_kind / failure_reason) that explains the
death once the process or /health confirms it. During start-up a failure line does count:
nothing but vLLM writes to the log before the API serves, and vLLM exits soon after one
(if it does not, it is stopped after failure_exit_grace_s).
"""

from __future__ import annotations

import asyncio
import time

import httpx

from headroom.probes.metrics import ServerMetrics
from headroom.probes.tls import tls_context_for
from headroom.probes.vllm_log import LogEvent
from headroom.supervisor.host import SupervisorHost
from headroom.supervisor.state_signal import cancel_task
from headroom.supervisor.states import ENGINE_DEATH, STARTUP_FAILURES, ServerState
from headroom.vllm_cmd import redact_text

# A server that serves this long after a crash restart gets its crash budget back.
CRASH_BUDGET_RESET_S = 600.0
# /health answering 503 (EngineDeadError) this long, with the process still there, is a death
# (twice vLLM's own 5 s watchdog that shuts the API server down after one; see vllm-facts 3.7).
DEAD_HEALTH_S = 10.0


class ProcessWatcher:
    """Owns the watch loop of the current run and what it counts between ticks."""

    def __init__(self, host: SupervisorHost) -> None:
        self.host = host
        self.task: asyncio.Task[None] | None = None
        self.health_failures = 0
        self.dead_answers = 0  # 503s from /health in a row
        self.dead_since: float | None = None
        self.metrics_state: str | None = None
        self.last_metrics_at = 0.0
        self.last_observed: ServerMetrics | None = None

    def reset(self) -> None:
        self.health_failures = 0
        self.dead_answers, self.dead_since = 0, None
        self.metrics_state = None

    # -- the loop -------------------------------------------------------------------------
    def begin(self) -> None:
        self.task = asyncio.create_task(self._loop(), name="headroom-supervisor-watch")

    @property
    def watching(self) -> bool:
        return self.task is not None

    async def cancel(self) -> None:
        task, self.task = self.task, None
        await cancel_task(task)

    async def _loop(self) -> None:
        settings = self.host.settings
        async with httpx.AsyncClient(
            timeout=settings.health_timeout_s,
            trust_env=False,
            verify=tls_context_for(self.host.url, trust_env=False),
        ) as client:
            while True:
                try:
                    done = await self.tick(client)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # keep watching; say what broke
                    self.host.emit("notice", f"supervisor watch error (still watching): {exc!r}")
                    done = False
                if done:
                    return
                await asyncio.sleep(settings.poll_interval_s)

    # -- the log --------------------------------------------------------------------------
    def read_log(self, *, final: bool = False, listeners: tuple = ()) -> list[str]:
        """Pull new lines from the run's log into the digest, ring buffer and listeners."""
        run = self.host.run
        if run.tail is None:
            return []
        skipped_before = run.tail.skipped_bytes
        # Secrets never leave this function: each line is redacted before the digest, the
        # ring buffer, the listeners (the TUI) or a failure reason see it.
        lines = [redact_text(line, run.secrets) for line in run.tail.read_lines(final=final)]
        if run.scrubber is not None:
            run.scrubber.scrub(final=final)
        if run.tail.skipped_bytes != skipped_before:
            skipped = run.tail.skipped_bytes - skipped_before
            self.host.emit(
                "notice",
                f"the log grows faster than it can be read: skipped {skipped / 2**20:.0f} MiB "
                f"of {run.log_path}",
            )
        if not lines:
            return lines
        run.last_progress = time.monotonic()
        for line in lines:
            run.log_lines.append(line)
            try:
                event = run.digest.feed(line)
            except Exception:  # the log reader must never stop the supervisor
                event = None
            if event is not None:
                self.on_log_event(event)
        for listener in listeners:
            try:
                listener(lines)
            except Exception:
                pass
        return lines

    def on_log_event(self, event: LogEvent) -> None:
        """Keep a classified error line: the cause of a start-up failure, or the evidence of
        an engine death that the process or /health must still confirm."""
        if event.severity != "error":
            return
        host, run = self.host, self.host.run
        if host.state == ServerState.STARTING and event.kind in STARTUP_FAILURES:
            if run.failure_kind is None or run.failure_kind == "engine_core_failed":
                # The first specific error is the root cause; "engine core failed" only echoes it.
                run.failure_kind = event.kind
                run.failure_reason = event.line.strip()[:500]
            if run.failure_seen_at is None:
                run.failure_seen_at = time.monotonic()  # vLLM exits soon; if not, it is stopped
        elif host.state in (ServerState.READY, ServerState.DEGRADED) and event.kind in ENGINE_DEATH:
            # Evidence only: a client's prompt can carry the same words into the request log.
            run.failure_kind = event.kind
            run.failure_reason = event.line.strip()[:500]

    # -- one tick -------------------------------------------------------------------------
    async def tick(self, client: httpx.AsyncClient) -> bool:
        """One look at the server. Returns True when there is nothing left to watch."""
        host, run = self.host, self.host.run
        host.read_log()
        proc = run.process
        if proc is None or run.stopping:
            return run.stopping is False and proc is None
        alive = proc.alive()
        now = time.monotonic()
        if host.state == ServerState.STARTING:
            return await self._tick_starting(client, alive, now)
        if not alive:
            host.read_log(final=True)
            why = run.failure_reason or f"the server exited (status {proc.exit_code}) while serving"
            await host.after_crash(why)
            return True
        status = await self.health_status(client)
        healthy = status == 200
        if status == 503:
            self.dead_answers += 1
            self.dead_since = self.dead_since or now
        else:
            self.dead_answers, self.dead_since = 0, None
        if healthy:
            self.health_failures = 0
            if run.ready_at is not None and now - run.ready_at > CRASH_BUDGET_RESET_S:
                host.served_well()  # served well for a while: earlier crashes were not a loop
            if host.state == ServerState.DEGRADED:
                host.set_state(ServerState.READY, "/health answers again")
        else:
            self.health_failures += 1
            limit = host.settings.degraded_after_failures
            said_dead = run.failure_kind in ENGINE_DEATH or _facts_say_dead(run)
            # /health confirms what the log said (an error answer, not a slow one), or says
            # it alone, again and again: 503 is vLLM's answer once its engine is dead.
            confirmed = status is not None and status >= 500 or self.health_failures >= limit
            # /health alone: vLLM exits by itself within its 5 s watchdog after an engine
            # death (unless told to stay alive), so the exit path gets the first chance.
            dead_for = now - self.dead_since if self.dead_since is not None else 0.0
            health_says_dead = self.dead_answers >= limit and dead_for >= DEAD_HEALTH_S
            if (said_dead and confirmed) or health_says_dead:
                why = run.failure_reason or (
                    f"/health answered 503 for {dead_for:.0f} s "
                    "(vLLM's answer when its engine is dead)"
                )
                host.emit("failure", f"engine died: {why[:300]}", event=run.failure_kind)
                host.set_state(ServerState.DEGRADED, "engine dead")
                await host.after_crash(why, stop_first=True)
                return True
            if host.state == ServerState.READY and self.health_failures >= limit:
                host.set_state(
                    ServerState.DEGRADED, f"/health failed {self.health_failures} times in a row"
                )
        if now - self.last_metrics_at >= host.settings.metrics_interval_s:
            self.last_metrics_at = now
            await asyncio.to_thread(proc.members)  # remember workers for the no-orphan stop
            await self.sample_metrics()
        return False

    async def _tick_starting(self, client: httpx.AsyncClient, alive: bool, now: float) -> bool:
        host, run = self.host, self.host.run
        proc = run.process
        assert proc is not None
        if not alive:
            host.read_log(final=True)
            why = run.failure_reason or f"exited with status {proc.exit_code} before it was ready"
            await host.finish_failed(why, outcome="failed")
            return True
        grace = host.settings.failure_exit_grace_s
        if run.failure_seen_at is not None and now - run.failure_seen_at > grace:
            await host.finish_failed(run.failure_reason or "start-up failed", outcome="failed")
            return True
        if now - run.last_progress > host.ready_timeout():
            why = (
                f"not ready after {host.ready_timeout():.0f} s without any log progress "
                "(hung start-up?)"
            )
            run.failure_kind = "ready_timeout"
            await host.finish_failed(why, outcome="failed")
            return True
        if await self.healthy(client):
            await asyncio.to_thread(proc.members)  # its workers, for the no-orphan stop
            run.time_to_ready_s = now - (run.started_mono or now)
            run.ready_at = now
            host.note_ready()
            facts = run.facts()
            if host.adopted:
                host.set_state(ServerState.READY, "/health answers (re-adopted server)")
                host.records.update(run.run_id, outcome="ready")
                return False
            host.set_state(ServerState.READY, f"/health answered after {run.time_to_ready_s:.1f} s")
            host.records.update(
                run.run_id,
                outcome="ready",
                time_to_ready_s=round(run.time_to_ready_s, 2),
                vllm_version=getattr(facts, "vllm_version", None),
                kv_cache_tokens=getattr(facts, "kv_cache_tokens", None),
                max_concurrency=getattr(facts, "max_concurrency", None),
            )
        return False

    async def healthy(self, client: httpx.AsyncClient) -> bool:
        return await self.health_status(client) == 200

    async def health_status(self, client: httpx.AsyncClient) -> int | None:
        """/health's status code; None when it did not answer (refused, timed out)."""
        try:
            response = await client.get(self.host.url + "/health")
        except (httpx.HTTPError, OSError):
            return None
        return response.status_code

    async def sample_metrics(self) -> None:
        host, run = self.host, self.host.run
        if host.settings.scrape_metrics:
            message: str | None
            # A snapshot the TUI took less than half an interval ago is as good as a new one
            # (the server is scraped once, not once per reader); older ones are not.
            max_age = host.settings.metrics_interval_s / 2
            try:
                metrics = await host.metrics.latest(host.url, max_age)
            except Exception as exc:  # a probe must not stop the watching
                state, message = "error", repr(exc)
            else:
                if metrics is not self.last_observed:  # each snapshot counts once
                    run.stats.observe_metrics(metrics)
                    self.last_observed = metrics
                state, message = metrics.state, metrics.message
            if state != self.metrics_state:  # say it once per change, not every scrape
                if state != "up":
                    host.emit("notice", f"/metrics {state}: {message or 'no detail'}")
                elif self.metrics_state is not None:
                    host.emit("notice", "/metrics answers again")
                self.metrics_state = state
        try:
            snapshot = await host.gpus.read()
        except Exception:
            snapshot = None
        if snapshot is not None:
            run.stats.observe_gpus(snapshot, host.gpus.indices(host.child_env()))


def _facts_say_dead(run) -> bool:
    facts = run.facts()
    return bool(getattr(facts, "engine_dead", False))
