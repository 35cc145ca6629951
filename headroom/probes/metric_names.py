"""The one table of vLLM metric names Headroom reads, by the field each one feeds.

Names differ across vLLM 0.8-0.33 (vllm-facts.md section 1.5): each field lists its names,
newest first, and the first one a series carries wins. The parser keeps exactly these
samples (`WANTED_SAMPLE_NAMES`); the builder maps them onto `EngineMetrics` fields.
"""

from __future__ import annotations

GAUGE_NAMES: dict[str, tuple[str, ...]] = {
    "running": ("vllm:num_requests_running",),
    "waiting": ("vllm:num_requests_waiting",),
    "usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
}
# Counters, as exposed (prometheus_client appends `_total`).
COUNTER_NAMES: dict[str, tuple[str, ...]] = {
    "preemptions": ("vllm:num_preemptions_total",),
    "prompt_tokens": ("vllm:prompt_tokens_total",),
    "generation_tokens": ("vllm:generation_tokens_total",),
    "finished": ("vllm:request_success_total",),
    "prefix_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
}
HISTOGRAM_NAMES: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds",),
    "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
    "e2e": ("vllm:e2e_request_latency_seconds",),
    "queue": ("vllm:request_queue_time_seconds",),
    "prompt_len": ("vllm:request_prompt_tokens",),
    "generation_len": ("vllm:request_generation_tokens",),
}
# A gauge of value 1 whose labels are the cache configuration (block size, blocks, dtype...).
CACHE_INFO = "vllm:cache_config_info"
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def _all(table: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(name for names in table.values() for name in names)


GAUGES: tuple[str, ...] = (*_all(GAUGE_NAMES), CACHE_INFO)
COUNTERS: tuple[str, ...] = _all(COUNTER_NAMES)
HISTOGRAMS: tuple[str, ...] = _all(HISTOGRAM_NAMES)
WANTED_SAMPLE_NAMES: frozenset[str] = frozenset(
    (*GAUGES, *COUNTERS, *(h + s for h in HISTOGRAMS for s in HISTOGRAM_SUFFIXES))
)
