"""Prometheus answers for one server -> the probes layer's ServerMetrics.

The same numbers the /metrics probe computes from a page, but with rates and quantiles
already computed by Prometheus. KV capacity follows metrics_build (vllm-facts.md 1.4):
`kv_cache_size_tokens` is per data-parallel engine, `num_gpu_blocks` is already summed over
the engines; and a cache_config_info without an `engine` label describes one cache however
many `model_name` series share the endpoint, so it is counted once in the total.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from headroom.probes.metrics_build import finite_mean, finite_sum
from headroom.probes.metrics_parse import label_float, label_int
from headroom.probes.metrics_types import EngineMetrics, ServerMetrics
from headroom.probes.metrics_window import Latency

Key = tuple[str | None, str | None]  # (model_name, engine)
SERVER_KEY: Key = (None, None)

_GAUGE_FIELDS = {
    "vllm:num_requests_running": "running",
    "vllm:num_requests_waiting": "waiting",
    "vllm:kv_cache_usage_perc": "usage",
    "vllm:gpu_cache_usage_perc": "usage_old",
    "vllm:num_preemptions_total": "preemptions_total",
}


@dataclass
class ServerSamples:
    """Everything the queries said about one instance, by (model_name, engine)."""

    gauges: dict[Key, dict[str, float]] = field(default_factory=dict)
    derived: dict[Key, dict[str, float]] = field(default_factory=dict)  # rates, quantiles
    cache_info: dict[str | None, Mapping[str, str]] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)  # of any one series (host labels)

    def add_gauge(self, name: str, labels: Mapping[str, str], value: float | None) -> None:
        if not self.labels:
            self.labels = labels
        if name == "vllm:cache_config_info":
            self.cache_info[labels.get("engine")] = labels
            return
        attr = _GAUGE_FIELDS.get(name)
        if attr is None or value is None:
            return
        key = (labels.get("model_name"), labels.get("engine"))
        self.gauges.setdefault(key, {})[attr] = value

    def add_derived(self, tag: str, labels: Mapping[str, str], value: float | None) -> None:
        if value is None:
            return
        key = (labels.get("model_name"), labels.get("engine"))
        self.derived.setdefault(key, {})[tag] = value


def build_server_metrics(
    instance: str, url: str, samples: ServerSamples, taken_at: float
) -> ServerMetrics:
    keys = sorted(
        (k for k in samples.gauges if k != SERVER_KEY), key=lambda k: (k[0] or "", _order(k[1]))
    )
    if not keys:
        message = "target is up but serves no vLLM engine metrics"
        return ServerMetrics(taken_at, url, "metrics_off", message, EngineMetrics.empty(), (), ())
    avg_tokens = samples.derived.get(SERVER_KEY, {}).get("avg_request_tokens")
    by_model: dict[str | None, list[Key]] = {}
    for key in keys:
        by_model.setdefault(key[0], []).append(key)
    engines: list[EngineMetrics] = []
    models: list[EngineMetrics] = []
    model_caches: list[tuple[int | None, tuple[int, ...]]] = []
    for model, model_keys in by_model.items():
        dp = len(model_keys) > 1
        rows = []
        for key in model_keys:
            labels = _cache_labels(samples, key[1])
            capacity = _positive(labels, "kv_cache_size_tokens")
            if capacity is None and not dp:
                capacity = _blocks_capacity(labels)
            rows.append(_row(samples, [key], model, key[1], capacity, avg_tokens))
        engines.extend(rows)
        labels_used = [_cache_labels(samples, k[1]) for k in model_keys]
        per_engine = [r.kv_capacity_tokens for r in rows]
        if all(c is not None for c in per_engine) and any(
            _positive(lab, "kv_cache_size_tokens") for lab in labels_used
        ):
            capacity = sum(per_engine)  # type: ignore[arg-type]
        else:
            capacity = _blocks_capacity(labels_used[0]) if labels_used else None
        models.append(_row(samples, model_keys, model, None, capacity, avg_tokens, rows))
        model_caches.append((capacity, tuple(sorted({id(lab) for lab in labels_used}))))
    # A cache described by the same cache_config_info series counts once, however many
    # model_name series point at it (an aggregator's page: one cache, several names).
    seen: set[tuple[int, ...]] = set()
    total_capacity: int | None = 0
    for capacity, cache_ids in model_caches:
        if cache_ids in seen:
            continue
        seen.add(cache_ids)
        total_capacity = (
            None if capacity is None or total_capacity is None else total_capacity + capacity
        )
    total = _row(
        samples,
        keys,
        models[0].model_name if len(models) == 1 else None,
        None,
        total_capacity,
        avg_tokens,
        engines,
        server_level=True,
    )
    return ServerMetrics(taken_at, url, "up", None, total, tuple(engines), tuple(models))


def _row(
    samples: ServerSamples,
    keys: list[Key],
    model: str | None,
    engine: str | None,
    capacity: int | None,
    avg_tokens: float | None,
    parts: list[EngineMetrics] | None = None,
    server_level: bool = False,
) -> EngineMetrics:
    gauges = [samples.gauges.get(k, {}) for k in keys]
    derived = [samples.derived.get(k, {}) for k in keys]
    labels = [_cache_labels(samples, k[1]) for k in keys]
    usage = _usage(gauges, parts)
    free = None
    if capacity is not None and usage is not None:
        free = max(0, int(round(capacity * (1.0 - usage))))
    latency_source = (
        samples.derived.get(SERVER_KEY, {})
        if server_level
        else (derived[0] if len(derived) == 1 else {})
    )
    return EngineMetrics(
        model_name=model,
        engine=engine,
        kv_cache_usage=usage,
        kv_capacity_tokens=capacity,
        kv_free_tokens=free,
        headroom_requests=free / avg_tokens if free is not None and avg_tokens else None,
        block_size=_common(label_int(lab, "block_size") for lab in labels),
        num_gpu_blocks=_common(_positive(lab, "num_gpu_blocks") for lab in labels),
        cache_dtype=_common(lab.get("cache_dtype") for lab in labels),
        gpu_memory_utilization=_common(
            label_float(lab, "gpu_memory_utilization") for lab in labels
        ),
        kv_cache_memory_bytes=_common(label_int(lab, "kv_cache_memory_bytes") for lab in labels),
        requests_running=finite_sum(g.get("running") for g in gauges),
        requests_waiting=finite_sum(g.get("waiting") for g in gauges),
        preemptions_total=finite_sum(g.get("preemptions_total") for g in gauges),
        preemptions_per_s=finite_sum(d.get("preemptions") for d in derived),
        prompt_tokens_per_s=finite_sum(d.get("prompt_tokens") for d in derived),
        generation_tokens_per_s=finite_sum(d.get("generation_tokens") for d in derived),
        avg_request_tokens=avg_tokens,
        ttft=_latency(latency_source, "ttft"),
        itl=_latency(latency_source, "itl"),
        e2e=Latency.empty(),
        finished_requests_per_s=finite_sum(d.get("finished") for d in derived),
    )


def _usage(gauges: list[dict[str, float]], parts: list[EngineMetrics] | None) -> float | None:
    if parts and len(parts) > 1:
        pairs = [(p.kv_cache_usage, p.kv_capacity_tokens) for p in parts]
        known = [(u, w) for u, w in pairs if u is not None and w]
        if len(known) == len(pairs):
            return sum(u * w for u, w in known) / sum(w for _, w in known)
        return finite_mean(p.kv_cache_usage for p in parts)
    return finite_mean(g.get("usage", g.get("usage_old")) for g in gauges)


def _latency(values: Mapping[str, float], name: str) -> Latency:
    p50, p95 = values.get(f"{name}_p50"), values.get(f"{name}_p95")
    if p50 is None and p95 is None:
        return Latency.empty()
    return Latency(p50, p95, None, None, 0, False, None)


def _cache_labels(samples: ServerSamples, engine: str | None) -> Mapping[str, str]:
    info = samples.cache_info
    if engine in info:
        return info[engine]
    if None in info:
        return info[None]
    return info[next(iter(info))] if len(info) == 1 else {}


def _blocks_capacity(labels: Mapping[str, str]) -> int | None:
    blocks, size = _positive(labels, "num_gpu_blocks"), _positive(labels, "block_size")
    hybrid = labels.get("is_attention_free") == "True" or any(
        labels.get(m, "None") not in ("None", "0", "")
        for m in ("mamba_block_size", "mamba_page_size_padded", "sliding_window")
    )
    return None if blocks is None or size is None or hybrid else blocks * size


def _positive(labels: Mapping[str, str], key: str) -> int | None:
    value = label_int(labels, key)
    return value if value is not None and value > 0 else None


def _common(values):
    distinct = {v for v in values if v is not None}
    return distinct.pop() if len(distinct) == 1 else None


def _order(engine: str | None) -> tuple[int, str]:
    return (int(engine), "") if engine and engine.isdigit() else (1 << 30, engine or "")
