"""The PromQL Headroom sends: a fixed handful per refresh, whatever the fleet's size.

Rates and quantiles are computed by Prometheus (`rate`, `histogram_quantile`), never
re-derived from raw series. Several expressions are joined with `or` into one request, each
tagged with a `hr_field` label by `label_replace` (rate() drops the metric name, so the tag is
how the answers are told apart). Only PromQL that Prometheus 2.42 already had is used.
Metric names: vLLM's (vllm-facts.md 1.5, old names as fallbacks), dcgm-exporter's
(fleet-facts.md 1).
"""

from __future__ import annotations

SERIES = "instance, job, model_name, engine"
SERVER = "instance, job"
FIELD = "hr_field"

VLLM_GAUGES = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:cache_config_info",
)
COUNTER_RATES = {
    "preemptions": "vllm:num_preemptions_total",
    "prompt_tokens": "vllm:prompt_tokens_total",
    "generation_tokens": "vllm:generation_tokens_total",
    "finished": "vllm:request_success_total",
}
DCGM_GAUGES = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
)
VIOLATIONS = {"power": "DCGM_FI_DEV_POWER_VIOLATION", "thermal": "DCGM_FI_DEV_THERMAL_VIOLATION"}
QUANTILES = (0.5, 0.95)


def _names(names: tuple[str, ...]) -> str:
    return '{__name__=~"' + "|".join(n.replace(".", "\\\\.") for n in names) + '"}'


def _tag(expr: str, value: str, label: str = FIELD) -> str:
    return f'label_replace({expr}, "{label}", "{value}", "", "")'


def window(scrape_interval_s: float | None) -> str:
    """The rate window: four scrape intervals (Prometheus' advice), at least 4 s."""
    seconds = max(4, int(round(4 * (scrape_interval_s or 15.0))))
    return f"{seconds}s"


def vllm_gauges() -> str:
    return _names(VLLM_GAUGES)


# dcgm-exporter series carry long label sets (UUID, model name, bus id, pod...) on every
# metric. Headroom asks for them once per GPU (`group by`) and for the values with only the
# key that joins the two: (instance, gpu, GPU_I_ID), plus err_msg on the XID line. The
# metric name is copied into `hr_metric` first, because an aggregation keeps no __name__.
GPU_KEY = "instance, gpu, GPU_I_ID"
IDENTITY_LABELS = (
    "instance, job, Hostname, hostname, gpu, UUID, uuid, GPU_I_ID, GPU_I_PROFILE, "
    "modelName, pci_bus_id, pod, namespace, pod_name, pod_namespace"
)
METRIC = "hr_metric"


def dcgm_identity() -> str:
    return f"group by ({IDENTITY_LABELS}) ({_names(DCGM_GAUGES)})"


def dcgm_gauges() -> str:
    named = f'label_replace({_names(DCGM_GAUGES)}, "{METRIC}", "$1", "__name__", "(.+)")'
    return f"max by ({METRIC}, {GPU_KEY}, err_msg) ({named})"


def vllm_rates(w: str) -> str:
    """Per-second rates per (instance, model, engine), and the mean tokens of a request
    (prompt + generated) over the window, else over the server's life."""
    parts = [
        _tag(f"sum by ({SERIES}) (rate({metric}[{w}]))", name)
        for name, metric in COUNTER_RATES.items()
    ]
    recent = (
        f"(sum by ({SERVER}) (rate(vllm:request_prompt_tokens_sum[{w}]))"
        f" + sum by ({SERVER}) (rate(vllm:request_generation_tokens_sum[{w}])))"
        f" / sum by ({SERVER}) (rate(vllm:request_prompt_tokens_count[{w}]))"
    )
    lifetime = (
        f"(sum by ({SERVER}) (vllm:request_prompt_tokens_sum)"
        f" + sum by ({SERVER}) (vllm:request_generation_tokens_sum))"
        f" / sum by ({SERVER}) (vllm:request_prompt_tokens_count)"
    )
    # NaN (no request finished in the window) fails `> 0`, so the lifetime mean takes over.
    parts.append(_tag(f"(({recent}) > 0) or (({lifetime}) > 0)", "avg_request_tokens"))
    return " or ".join(parts)


def latency_quantiles(w: str) -> str:
    """TTFT and ITL p50/p95, per engine and per server (no model_name/engine labels)."""
    ttft = f"rate(vllm:time_to_first_token_seconds_bucket[{w}])"
    itl = (
        f"(rate(vllm:inter_token_latency_seconds_bucket[{w}])"
        f" or rate(vllm:time_per_output_token_seconds_bucket[{w}]))"
    )
    parts = []
    for name, buckets in (("ttft", ttft), ("itl", itl)):
        for q in QUANTILES:
            tag = f"{name}_p{int(q * 100)}"
            for by in (SERIES, SERVER):
                expr = f"histogram_quantile({q}, sum by ({by}, le) ({buckets}))"
                parts.append(_tag(expr, tag))
    return " or ".join(parts)


def dcgm_throttle(w: str) -> str:
    """Microseconds throttled per second, per GPU and reason (0 = not throttled)."""
    return " or ".join(
        _tag(f"max by ({GPU_KEY}) (rate({metric}[{w}]))", reason)
        for reason, metric in VIOLATIONS.items()
    )


def history() -> str:
    """Per-server trends for the runtime rules (a query_range over the recent window)."""
    usage = "avg by (instance, job) (vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc)"
    return " or ".join(
        [
            _tag(usage, "kv_cache_usage"),
            _tag("sum by (instance, job) (vllm:num_requests_running)", "requests_running"),
            _tag("sum by (instance, job) (vllm:num_requests_waiting)", "requests_waiting"),
            _tag("sum by (instance, job) (vllm:num_preemptions_total)", "preemptions_total"),
        ]
    )
