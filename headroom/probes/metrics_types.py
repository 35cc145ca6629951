"""The snapshot types of the /metrics probe (re-exported by headroom.probes.metrics).

They live apart from the probe so metrics_build can construct them without an import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from headroom.probes.errors import ProbeError, metrics_failure
from headroom.probes.metrics_window import Latency

_LATENCY_FIELDS = ("ttft", "itl", "e2e", "queue")
STATES = ("up", "down", "slow", "not_vllm", "metrics_off", "error")


@dataclass(frozen=True)
class EngineMetrics:
    """One (model_name, engine) pair, one model across its engines, or the server total.

    Every value a page did not provide is None. Rates are per second between the last two
    scrapes; latencies are over the probe's sliding window.
    """

    model_name: str | None
    engine: str | None
    kv_cache_usage: float | None  # 0..1
    kv_capacity_tokens: int | None
    kv_free_tokens: int | None
    headroom_requests: float | None  # free tokens / avg_request_tokens
    block_size: int | None
    num_gpu_blocks: int | None  # for a DP model: vLLM's summed count; per DP engine: None
    cache_dtype: str | None
    gpu_memory_utilization: float | None
    kv_cache_memory_bytes: int | None
    requests_running: float | None
    requests_waiting: float | None
    preemptions_total: float | None
    preemptions_per_s: float | None
    prompt_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    avg_request_tokens: float | None  # prompt + generation of recent requests
    ttft: Latency
    itl: Latency
    e2e: Latency
    # Added beyond the contract (defaults keep keyword construction elsewhere working):
    queue: Latency = Latency.empty()
    finished_requests_per_s: float | None = None
    prefix_cache_hit_rate: float | None = None  # hits / queries over the window

    @classmethod
    def empty(cls, model_name: str | None = None, engine: str | None = None) -> EngineMetrics:
        """All values unknown (server down, metrics off...)."""
        values: dict[str, Any] = {  # the fields' own types differ: None or Latency
            f.name: None for f in fields(cls) if f.name not in _LATENCY_FIELDS
        }
        values.update(model_name=model_name, engine=engine)
        values.update({name: Latency.empty() for name in _LATENCY_FIELDS})
        return cls(**values)


@dataclass(frozen=True)
class ServerMetrics:
    """One scrape of one server: its state and the numbers, per engine, per model and total."""

    taken_at: float  # time.monotonic() (or the probe's clock)
    url: str
    state: str  # "up" | "down" | "slow" | "not_vllm" | "metrics_off" | "error"
    message: str | None  # human explanation when state != "up"
    total: EngineMetrics
    engines: tuple[EngineMetrics, ...]
    models: tuple[EngineMetrics, ...]

    @property
    def failure(self) -> ProbeError | None:
        """Why this scrape has no figures, in the probes' error tree; None when up."""
        return metrics_failure(self.state, self.message)
