"""vLLM release rules the memory model depends on, read from vLLM's own source, release by release.

Read from the PyPI wheels' Python files (`pip download --no-deps --only-binary=:all: vllm==X`;
commit ids from vllm/_version.py where the release has one): 0.2.7, 0.3.3, 0.4.0, 0.4.3,
0.5.0, 0.5.4, 0.6.3, 0.6.4.post1, 0.6.5, 0.9.0, 0.9.1 (the budget and chunked rows), 0.5.5,
0.6.4, 0.7.3, 0.8.0, 0.8.5, 0.9.2, 0.10.0, 0.10.2 (g26b999c71), 0.11.0 (gf71952c1c), 0.19.0 (g2a69949bd),
0.20.0 (gb8160878f), 0.21.0 (gad7125a43); 0.33.0 (g4ba787ec9) from the team's notes.
RELEASE_TABLE below is the same list in words, each row with where it was read; `rules_text`
names the rows a given release uses, so `plan` and the doctor can say which rules they applied.
"""

from __future__ import annotations

import re

NEWEST_KNOWN = "0.33.0"
# When the release is not known, the estimate is repeated under these releases' rules and
# shown as a range (the V1 era; V0 is not what anyone installs today).
UNKNOWN_RELEASE_SPAN = ("0.8.5", "0.10.2", "0.19.0", NEWEST_KNOWN)

# (first release, what changed, where it was read) -- oldest first.
RELEASE_TABLE: tuple[tuple[str, str, str], ...] = (
    ("0.2.5", "V0 budget = total x utilization - (total - free after the profile run): every "
     "process's memory on the GPU counts against this instance (PR #2031), so a second "
     "instance's utilization must cover the first's. No chunked prefill: the profile is one "
     "max(max_model_len, 2048)-token prefill. CUDA graphs (0.2.6+) are captured after the "
     "KV cache is sized (warm_up_model): eager mode frees nothing for the KV budget.",
     "0.2.7 vllm/worker/worker.py profile_num_available_blocks / warm_up_model, "
     "vllm/config.py SchedulerConfig; PR #2031 in 0.2.5 per vllm-project/vllm#2248"),
    ("0.2.7", "Defaults when the user sets nothing: max_num_seqs 256, enforce_eager False (CUDA "
     "graphs captured for batch sizes 1, 2, 4, 8..256, up to max_num_seqs, contexts up to "
     "max_context_len_to_capture 8192), gpu_memory_utilization 0.9.",
     "0.2.7 vllm/engine/arg_utils.py EngineArgs, vllm/worker/model_runner.py "
     "_BATCH_SIZES_TO_CAPTURE"),
    ("0.3.3", "V0 counts only its own memory: peak = free at worker init - free after the "
     "profile run; what others held before it started is not deducted (it can then OOM "
     "allocating a KV cache the GPU no longer has).",
     "0.3.3, 0.4.3, 0.5.4, 0.6.3 vllm/worker/worker.py (init_gpu_memory)"),
    ("0.4.0", "--enable-chunked-prefill (off by default): max_num_batched_tokens then defaults "
     "to 512, and the profile runs 512 tokens instead of one whole max_model_len prompt.",
     "0.4.0/0.4.3/0.5.0 vllm/engine/arg_utils.py, vllm/config.py SchedulerConfig; not in 0.3.3"),
    ("0.5.4", "V0 turns chunked prefill on by itself only for max_model_len > 32768 on CUDA "
     "(not with a sliding window, speculative decoding, LoRA, prompt adapters, prefix caching "
     "or mamba-type layers; 0.6.x not for multimodal models): 'This is to avoid OOM errors "
     "in the initial memory profiling phase'. At 32768 and below the profile stays one whole "
     "prompt, and --enable-chunked-prefill is the knob that shrinks it.",
     "0.5.4/0.6.3/0.7.3 vllm/engine/arg_utils.py create_engine_config (use_long_context); "
     "0.5.0 has no such default"),
    ("0.5.5", "V0 engine. Profile run: one prefill of max_num_batched_tokens split over "
     "max_num_seqs (256) dummy sequences; its torch peak is the activation. Chunked prefill is "
     "on by default only for max_model_len > 32K (CUDA, no sliding window); then "
     "max_num_batched_tokens = 512, else max(max_model_len, 2048): 0.5/0.6 profile a whole "
     "max_model_len prefill. Non-torch memory (CUDA context, NCCL, custom all-reduce) counts "
     "in the budget. KV check: max_model_len <= num_gpu_blocks x block_size (no null block). "
     "Encoder-decoder models are forced eager when enforce_eager is unset.",
     "0.5.5/0.6.4 vllm/config.py SchedulerConfig.__init__, vllm/engine/arg_utils.py "
     "create_engine_config (use_long_context), vllm/worker/model_runner.py profile_run; "
     "0.5.5 vllm/config.py ModelConfig (is_encoder_decoder -> enforce_eager)"),
    ("0.6.4", "Encoder-decoder multimodal models (mllama, Llama-3.2-Vision) are no longer forced "
     "eager: CUDA graphs by default. Their profile run builds max_num_seqs dummy sequences, "
     "EACH with a whole encoder input (max image tiles), so the vision encoder runs over "
     "max_num_seqs images: 256 by default (vLLM's vision example runs mllama with "
     "max_num_seqs=16, enforce_eager=True). V0's budget counts every process's memory again "
     "(non-torch = used - torch allocated, PR #9352: utilization became a whole-GPU limit), "
     "until 0.6.5 profiles against a start-up baseline (PR #10511).",
     "0.6.4 vllm/config.py ModelConfig (enforce_eager None -> False), "
     "vllm/worker/enc_dec_model_runner.py profile_run, models/mllama.py "
     "dummy_encoder_data_for_mllama; examples/offline_inference_vision_language.py run_mllama; "
     "0.6.4.post1 vllm/worker/worker.py determine_num_available_blocks, 0.6.5 vllm/utils.py "
     "memory_profiling"),
    ("0.7.0", "V0: with chunked prefill on, max_num_batched_tokens defaults to 2048 (was 512).",
     "0.7.3 vllm/config.py SchedulerConfig.__post_init__"),
    ("0.8.0", "V1 engine by default (VLLM_USE_V1=1): chunked prefill always on; "
     "max_num_batched_tokens 8192 on H100/H200 (by name), else 2048 (`vllm serve`); "
     "max_num_seqs 1024 on EVERY GPU (V0: 256). Budget = total x utilization - (torch peak + "
     "all non-torch memory = used - torch allocated: the CUDA context AND every other "
     "process's memory on the GPU; a second instance's utilization must cover the first's). "
     "CUDA graphs for batch sizes 1, 2, 4, "
     "8..512, captured after the KV cache is sized: outside the budget. The profile run "
     "also warms the sampler over max_num_seqs dummy requests (read in 0.8.5; not in "
     "0.7.3's V1: vllm PRs #13594/#14508), and a multimodal model's encoder over "
     "min(encoder budget / tokens per item, max_num_seqs x items per prompt) dummy items.",
     "0.8.0 vllm/envs.py VLLM_USE_V1, vllm/engine/arg_utils.py _override_v1_engine_args, "
     "vllm/v1/worker/gpu_worker.py determine_available_memory; 0.7.3/0.8.5 vllm/config.py "
     "CompilationConfig batch_size_capture_list, vllm/v1/worker/gpu_model_runner.py "
     "profile_run, _dummy_sampler_run"),
    ("0.8.5", "V1: batch defaults by memory: >= 70 GiB -> 8192 tokens / 1024 seqs, else "
     "2048 / 256 (vllm PR #16158 reverted max_num_seqs to V0's 256 below 70 GiB after OOM "
     "reports; merged after 0.8.3, read in 0.8.5). The block pool keeps one null block out "
     "of the requests' blocks.",
     "0.8.5 vllm/engine/arg_utils.py _set_default_args_v1, vllm/v1/core/block_pool.py "
     "(null_block = popleft()); vllm-project/vllm#16158"),
    ("0.9.0", "V1: the >= 70 GiB batch default leaves out the A100.",
     "0.9.0/0.9.2 vllm/engine/arg_utils.py"),
    ("0.9.1", "V1 memory is profiled against a snapshot taken at start-up (PR #18974): only "
     "non-torch memory that grows after it (NCCL, custom all-reduce) counts, not the CUDA "
     "context nor other processes, so each instance's utilization is its own share; instead "
     "a start whose free memory is below total x utilization refuses ('Free memory on device "
     "... is less than desired GPU memory utilization'). 0.9.0 still counted all of it.",
     "0.9.0 vs 0.9.1 (and 0.9.2) vllm/v1/worker/gpu_worker.py init_device / "
     "determine_available_memory"),
    ("0.10.2", "--kv-cache-memory-bytes sets the KV cache per GPU and skips the budget. "
     "Default max_num_seqs is capped at max_num_batched_tokens; CUDA graphs are captured up "
     "to min(2 x max_num_seqs, 512).",
     "0.10.2 vllm/config/cache.py CacheConfig.kv_cache_memory_bytes, gpu_worker.py; "
     "vllm/engine/arg_utils.py _set_default_args_v1, vllm/config/__init__.py "
     "VllmConfig (max_graph_size)"),
    ("0.12.0", "V1 honours --no-enable-chunked-prefill for generative models (a warning: 'This "
     "model does not officially support disabling chunked prefill'), and then "
     "max_num_batched_tokens = max(max_model_len, the default): the profile is one whole "
     "prompt again, as in V0. 0.11.0 turned chunked prefill on for every generative model.",
     "0.11.0 vs 0.12.0 (and 0.16.0, 0.20.0, 0.33.0) vllm/engine/arg_utils.py "
     "_set_default_args / max_num_batched_tokens defaults"),
    ("0.20.0", "Default gpu_memory_utilization 0.92 (was 0.9), and CUDA graph memory is "
     "estimated during profiling and taken out of the budget "
     "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1; 0 in 0.19.0, although the "
     "log line says 'default since v0.21.0').",
     "0.19.0/0.20.0 vllm/config/cache.py, vllm/envs.py, vllm/v1/worker/gpu_worker.py"),
    ("0.22.0", "V1: >= 160 GiB GPUs default to 16384 tokens / 1024 seqs (not in 0.21.0; in "
     "0.33.0). 0.33.0: GB10 stays on the small tier (2048 / 256); CUDA graphs up to "
     "min(2 x max_num_seqs x decode query length, 512), 1024 on Blackwell (family 100).",
     "0.21.0 and 0.33.0 vllm/engine/arg_utils.py get_batch_defaults; 0.33.0 "
     "vllm/config/vllm.py (default_max_graph_size)"),
    ("0.32.0", "--performance-mode throughput doubles the max_num_seqs and "
     "max_num_batched_tokens defaults (each only when the user left it unset).",
     "0.32.0/0.33.0 vllm/engine/arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args"),
)  # fmt: skip
# Facts that hold in every release read: block size 16 on CUDA; KV bytes per token =
# 2 x layers x KV heads / TP x head_dim x dtype bytes (MLA: one latent of kv_lora_rank +
# qk_rope_head_dim per layer); fp8 KV = 1 byte; hybrid sliding-window models (gpt-oss) share
# one page size, and "GPU KV cache size" counts tokens over all layers.

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def parse_version(text: str | None) -> tuple[int, int, int] | None:
    """'0.11.0', 'v0.9.2', '0.15.2rc1.dev93+g11a4c9d30' -> (0, 15, 2); None if unreadable."""
    if not text:
        return None
    match = _VERSION.search(str(text))
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def effective_version(text: str | None) -> tuple[int, int, int]:
    """The version to reason with: the given one, else the newest this table knows."""
    return parse_version(text) or parse_version(NEWEST_KNOWN)  # type: ignore[return-value]


def is_v1(version: tuple[int, int, int]) -> bool:
    return version >= (0, 8, 0)


def default_utilization(version: tuple[int, int, int]) -> float:
    return 0.92 if version >= (0, 20, 0) else 0.9


def cudagraph_in_budget(version: tuple[int, int, int]) -> bool:
    return version >= (0, 20, 0)


def has_kv_cache_memory_bytes(version: tuple[int, int, int]) -> bool:
    return version >= (0, 10, 2)


def context_in_budget(version: tuple[int, int, int]) -> bool:
    """Whether the CUDA context counts as non-torch memory inside the budget: V0 and V1 up
    to 0.9.0; from 0.9.1 only growth after the start-up snapshot (PR #18974)."""
    return version < (0, 9, 1)


def others_in_budget(version: tuple[int, int, int]) -> bool:
    """Whether memory other processes hold on the GPU is deducted from this instance's
    budget (RELEASE_TABLE 0.2.5, 0.6.4, 0.8.0 rows): then a second instance needs a HIGHER
    utilization, one that covers the first's memory too; elsewhere the share is its own."""
    return (
        (0, 2, 5) <= version < (0, 3, 3)
        or (0, 6, 4) <= version < (0, 6, 5)
        or (0, 8, 0) <= version < (0, 9, 1)
    )


def chunked_by_default(version: tuple[int, int, int], max_model_len: int) -> bool:
    """Chunked prefill on without the flag: always in V1; in V0 from 0.5.4 (not in 0.5.0)
    above 32768 tokens (RELEASE_TABLE 0.5.4 row; the feature's exclusions aside)."""
    return is_v1(version) or (version >= (0, 5, 4) and max_model_len > 32768)


def has_chunked_prefill(version: tuple[int, int, int]) -> bool:
    return version >= (0, 4, 0)


def honours_chunked_off(version: tuple[int, int, int]) -> bool:
    """Whether --no-enable-chunked-prefill turns chunked prefill off: always in V0 (0.4.0+);
    in V1 from 0.12.0 (RELEASE_TABLE 0.12.0 row), before it V1 turned it on for every
    generative model."""
    return not is_v1(version) or version >= (0, 12, 0)


def chunked_batch_default(
    version: tuple[int, int, int], default_tokens: int, max_model_len: int, chunked: bool | None
) -> int:
    """max_num_batched_tokens when the user set chunked prefill but not the batch: with it
    on, V0's chunk (512; 2048 from 0.7.0); with it off (where the release honours that), one
    whole prompt, max(max_model_len, the default). `chunked` None: the release's default."""
    if chunked is None:
        return default_tokens
    if chunked:
        if is_v1(version) or not has_chunked_prefill(version):
            return default_tokens
        return 2048 if version >= (0, 7, 0) else 512
    if not honours_chunked_off(version):
        return default_tokens
    return max(max_model_len, 2048 if not is_v1(version) else default_tokens)


def profile_follows_length(
    version: tuple[int, int, int],
    max_model_len: int,
    batched_set: bool = False,
    chunked: bool | None = None,
) -> bool:
    """Whether the start-up profile is one whole max_model_len prompt, its activation peak
    growing with max_model_len: V0 without chunked prefill, or chunked prefill turned off
    where the release honours it (V1 0.12+), and no max_num_batched_tokens given."""
    if batched_set:
        return False
    if chunked is None:
        return not chunked_by_default(version, max_model_len)
    return not chunked and honours_chunked_off(version)


def has_null_block(version: tuple[int, int, int]) -> bool:
    return version >= (0, 8, 5)


def batch_defaults(
    version: tuple[int, int, int], usable_gib: float, gpu_name: str, max_model_len: int
) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM picks when the user sets neither
    (`vllm serve`; see RELEASE_TABLE)."""
    name = gpu_name.upper()
    if not is_v1(version):
        if chunked_by_default(version, max_model_len):  # long contexts, 0.5.4+
            return (2048 if version >= (0, 7, 0) else 512), 256
        return max(max_model_len, 2048), 256
    if version < (0, 8, 5):
        tokens = 8192 if ("H100" in name or "H200" in name) else 2048
        seqs = 1024
    elif version < (0, 9, 0):
        tokens, seqs = (8192, 1024) if usable_gib >= 70 else (2048, 256)
    elif usable_gib >= 160 and version >= (0, 22, 0):
        tokens, seqs = 16384, 1024
    elif usable_gib >= 70 and "A100" not in name:
        tokens, seqs = 8192, 1024
    else:
        tokens, seqs = 2048, 256
    return min(tokens, seqs * max_model_len), seqs


def format_version(version: tuple[int, int, int]) -> str:
    return ".".join(str(p) for p in version)


def rules_text(version_text: str | None) -> str:
    """Which release's rules an estimate used, in one line."""
    ver = effective_version(version_text)
    rows = [since for since, _, _ in RELEASE_TABLE if parse_version(since) <= ver]  # type: ignore[operator]
    engine = "V1" if is_v1(ver) else "V0"
    graphs = "inside" if cudagraph_in_budget(ver) else "outside"
    given = "" if version_text else f" (release not given: newest known, {NEWEST_KNOWN})"
    return (
        f"vLLM {format_version(ver)} rules{given}: {engine} engine, default utilization "
        f"{default_utilization(ver)}, CUDA graphs {graphs} the budget, CUDA context "
        f"{'inside' if context_in_budget(ver) else 'outside'} it, "
        f"{'one null block' if has_null_block(ver) else 'no null block'} "
        f"(release table rows {', '.join(rows) or 'none'})"
    )
