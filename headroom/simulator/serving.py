"""The running server's heart: drives the engine in simulated time, records vLLM's metrics,
prints the periodic stats line and writes the state file.

Simulated time advances by each step's modelled duration; the loop sleeps so that simulated
time runs `time_scale` times faster than the wall clock (HEADROOM_SIM_TIME_SCALE). When idle,
simulated time catches up with the scaled wall clock.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

from headroom.simulator.accounting import StartupPlan
from headroom.simulator.engine import Engine, SimRequest
from headroom.simulator.hardware import Machine
from headroom.simulator.logs import VllmLog
from headroom.simulator.metrics import MetricsRegistry, cache_config_labels
from headroom.simulator.state import build_state, write_state
from headroom.simulator.timing import StepTimer
from headroom.simulator.topo import topo_m_text

TICK_S = 0.25  # how often the state file is rewritten (wall seconds)


class Runtime:
    """One simulated vLLM engine behind the HTTP server."""

    def __init__(
        self,
        plan: StartupPlan,
        machine: Machine,
        model_name: str,
        log: VllmLog,
        *,
        time_scale: float = 1.0,
        state_path: str | None = None,
        prefix_caching: bool = True,
        log_stats: bool = True,
    ) -> None:
        self.plan, self.machine, self.log = plan, machine, log
        self.time_scale = max(1e-3, time_scale)
        self.state_path = state_path
        self.log_stats = log_stats
        self.timer = StepTimer.for_plan(plan, machine)
        self.sim_time = 0.0
        self._wall0 = time.monotonic()
        self.engine = Engine(
            plan.num_blocks,
            plan.block_size,
            plan.max_num_seqs,
            plan.max_num_batched_tokens,
            self.timer.step_s,
            lambda: self.sim_time,
            prefix_caching=prefix_caching,
        )
        s = plan.settings
        self.metrics = MetricsRegistry(
            model_name,
            plan.max_model_len,
            cache_config_labels(
                plan.block_size,
                s.gpu_memory_utilization,
                s.kv_cache_dtype,
                plan.num_blocks,
                plan.kv_tokens,
                plan.max_concurrency,
                s.kv_cache_memory_bytes,
                prefix_caching,
                s.num_gpu_blocks_override,
            ),
        )
        self._wake = asyncio.Event()
        self._stopped = False
        self._busy_sim = 0.0  # simulated seconds spent running steps since the last tick
        self._last_tick_sim = 0.0
        self._listeners: dict[int, Callable[[SimRequest, int, bool], None]] = {}
        self._last_stats = (time.monotonic(), 0.0, 0, 0, 0, 0, 0)
        self.topo_text = topo_m_text(machine)
        self.last_state: dict | None = None

    # --- clock --------------------------------------------------------------------------

    def scaled_wall(self) -> float:
        return (time.monotonic() - self._wall0) * self.time_scale

    # --- requests -----------------------------------------------------------------------

    def submit(
        self,
        prompt_tokens: int,
        max_tokens: int,
        eos_at: int | None,
        listener: Callable[[SimRequest, int, bool], None],
    ) -> SimRequest:
        if not self.engine.has_work:
            self.sim_time = max(self.sim_time, self.scaled_wall())
        req = SimRequest(prompt_tokens, max_tokens, arrival=self.sim_time or 1e-9, eos_at=eos_at)
        self._listeners[id(req)] = listener
        self.engine.add_request(req)
        m = self.metrics
        m.observe("vllm:request_params_n", 1)
        m.observe("vllm:request_params_max_tokens", max_tokens)
        self._wake.set()
        return req

    def abort(self, req: SimRequest) -> None:
        if req.finish_reason is None:
            self.engine.abort(req)
            self._finish(req)

    # --- main loop ----------------------------------------------------------------------

    async def run(self) -> None:
        next_tick = 0.0
        while not self._stopped:
            now = time.monotonic()
            if now >= next_tick:
                self._tick(now)
                next_tick = now + TICK_S
            if not self.engine.has_work:
                self.sim_time = max(self.sim_time, self.scaled_wall())
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), timeout=TICK_S)
                except TimeoutError:
                    pass
                continue
            result = self.engine.step()
            if not result.emitted:
                await asyncio.sleep(0.01)  # nothing fits yet; let aborts and arrivals happen
                continue
            self.sim_time += result.duration
            ahead = self.sim_time / self.time_scale - (time.monotonic() - self._wall0)
            await asyncio.sleep(max(0.0, ahead))
            self._busy_sim += result.duration
            self.engine.complete(result)
            self._record_step(result)

    def stop(self) -> None:
        self._stopped = True
        self._wake.set()

    def _record_step(self, result) -> None:
        m, e = self.metrics, self.engine
        m.observe("vllm:iteration_tokens_total", result.prefill_tokens + result.decode_seqs)
        for req, n in result.emitted:
            times = req.token_times
            if len(times) >= 2:
                m.observe("vllm:inter_token_latency_seconds", times[-1] - times[-2])
            elif req.first_token_at is not None and len(times) == 1:
                m.observe("vllm:time_to_first_token_seconds", req.first_token_at - req.arrival)
            listener = self._listeners.get(id(req))
            if listener:
                listener(req, n, req.finish_reason is not None)
        for req in result.finished:
            self._finish(req)
        m.counters[("vllm:num_preemptions", None)] = float(e.num_preemptions)
        m.counters[("vllm:prompt_tokens", None)] = float(e.prompt_tokens)
        m.counters[("vllm:generation_tokens", None)] = float(e.generation_tokens)
        m.counters[("vllm:prefix_cache_queries", None)] = float(e.prefix_queries)
        m.counters[("vllm:prefix_cache_hits", None)] = float(e.prefix_hits)
        m.counters[("vllm:prompt_tokens_cached", None)] = float(e.prefix_hits)
        m.counters[("vllm:prompt_tokens_cached_by_source", "device")] = float(e.prefix_hits)
        m.counters[("vllm:prompt_tokens_by_source", "local_cache_hit")] = float(e.prefix_hits)
        m.counters[("vllm:prompt_tokens_by_source", "local_compute")] = float(
            max(0, e.prefix_queries - e.prefix_hits)
        )
        tokens = result.prefill_tokens + result.decode_seqs
        m.inc("vllm:estimated_flops_per_gpu", 2 * self.timer.params_per_gpu * tokens)
        m.inc("vllm:estimated_read_bytes_per_gpu", float(self.timer.weights_bytes))
        m.inc("vllm:estimated_write_bytes_per_gpu", tokens * self.timer.kv_bytes_per_token)
        self._gauges()

    def _gauges(self) -> None:
        g = self.metrics.gauges
        g["running"] = float(len(self.engine.running))
        g["waiting"] = float(len(self.engine.waiting))
        g["kv"] = self.engine.kv_usage

    def _finish(self, req: SimRequest) -> None:
        m = self.metrics
        reason = req.finish_reason or "abort"
        m.inc("vllm:request_success", 1, reason)
        listener = self._listeners.pop(id(req), None)
        if reason == "abort":
            if listener:
                listener(req, 0, True)
            return
        end = req.finished_at or self.sim_time
        m.observe("vllm:e2e_request_latency_seconds", end - req.arrival)
        m.observe("vllm:request_prompt_tokens", req.prompt_tokens)
        m.observe("vllm:request_generation_tokens", req.output_tokens)
        m.observe("vllm:request_max_num_generation_tokens", req.max_tokens)
        m.observe("vllm:request_num_preemptions", req.preemptions)
        m.observe("vllm:request_prefill_kv_computed_tokens", req.prompt_tokens)
        if req.scheduled_at is not None:
            m.observe("vllm:request_queue_time_seconds", req.scheduled_at - req.arrival)
            m.observe("vllm:request_inference_time_seconds", end - req.scheduled_at)
            first = req.first_token_at or end
            m.observe("vllm:request_prefill_time_seconds", first - req.scheduled_at)
            m.observe("vllm:request_decode_time_seconds", end - first)
        if req.output_tokens > 1 and req.first_token_at is not None:
            m.observe(
                "vllm:request_time_per_output_token_seconds",
                (end - req.first_token_at) / (req.output_tokens - 1),
            )
        else:
            m.observe("vllm:request_time_per_output_token_seconds", 0.0)

    # --- periodic work ------------------------------------------------------------------

    def _tick(self, now: float) -> None:
        self._gauges()
        interval = float(os.environ.get("VLLM_LOG_STATS_INTERVAL", "10") or 10)
        last_wall, last_sim, last_p, last_g, last_pre, last_q, last_h = self._last_stats
        e = self.engine
        if self.log_stats and now - last_wall >= interval:
            dt = max(1e-9, self.sim_time - last_sim)
            busy = e.prompt_tokens != last_p or e.generation_tokens != last_g or e.has_work
            if busy:  # vLLM logs the idle line at DEBUG only
                queries, hits = e.prefix_queries, e.prefix_hits
                self.log.emit(
                    "api",
                    "INFO",
                    "loggers.py:335",
                    self.log.stats_line(
                        (e.prompt_tokens - last_p) / dt,
                        (e.generation_tokens - last_g) / dt,
                        len(e.running),
                        len(e.waiting),
                        e.num_preemptions - last_pre,
                        e.kv_usage,
                        hits / queries if queries else 0.0,
                        self.machine.device,
                    ),
                )
            self._last_stats = (
                now,
                self.sim_time,
                e.prompt_tokens,
                e.generation_tokens,
                e.num_preemptions,
                e.prefix_queries,
                e.prefix_hits,
            )
        # GPU utilisation: the share of simulated time the GPUs spent running steps.
        span = self.sim_time - self._last_tick_sim
        busy_share = min(1.0, self._busy_sim / span) if span > 0 else 0.0
        self._busy_sim, self._last_tick_sim = 0.0, self.sim_time
        # Kept in memory for /dcgm-metrics; written to disk for the NVML stand-in.
        self.last_state = build_state(
            self.machine, os.getpid(), self.memory_in_use(), busy_share, "serving", self.topo_text
        )
        if self.state_path:
            try:
                write_state(self.state_path, self.last_state)
            except OSError:
                pass  # a full or vanished disk must not stop serving

    def current_state(self) -> dict:
        """The GPUs now, before the first tick has kept one."""
        return build_state(
            self.machine, os.getpid(), self.memory_in_use(), 0.0, "serving", self.topo_text
        )

    def memory_in_use(self) -> dict[int, int]:
        """What vLLM holds on each GPU once serving: the whole requested budget (weights,
        activation pool, KV cache, graphs); or, with --kv-cache-memory-bytes, what it sized."""
        return memory_in_use(self.plan)


def memory_in_use(plan: StartupPlan, phase: str = "serving") -> dict[int, int]:
    out: dict[int, int] = {}
    tp = plan.settings.tp
    for w in plan.workers:
        if phase == "loading":
            used = w.weights_bytes + w.non_torch_bytes
        else:
            kv = plan.num_blocks * w.page_bytes_per_layer * w.layers
            used = (
                w.weights_bytes
                + w.non_torch_bytes
                + w.activation_bytes
                + kv
                + w.cudagraph_actual_bytes
            )
        for r in range(tp):
            out[w.pp_rank * tp + r] = used
    return out
