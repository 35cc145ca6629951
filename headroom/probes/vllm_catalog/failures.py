"""Catalog entries: start-up failures (memory, parallel sizes and heads, dtype/fp8/quantization,
configuration), in match order: specific causes before the generic ones."""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import NOT_CONFIG
from headroom.probes.vllm_catalog.signature import Signature as S

_OOM_TAIL = ("If reserved but unallocated memory is large try setting "
             "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")  # fmt: skip

ENTRIES: tuple[S, ...] = (
    # --- KV cache and memory --------------------------------------------------------------
    S("v1_max_seq_len_exceeds_kv", "max_seq_len_exceeds_kv", "error",
      ("KV cache is needed", "To serve at least one request with the", "the estimated maximum model length is"),
      r".", "v1_refusal",  # each part on its own: a paste often wraps the message over lines
      origin="raise", probe=("To serve at least one request with the",),
      fields=("max_seq_len", "needed_gib", "available_gib", "estimated_max_len"), feeds="max-seq-len-exceeds-kv",
      fragments=('or decreasing `max_model_len` when initializing the engine',),
      examples=("ValueError: To serve at least one request with the models's max seq len (221000), (10.12 GiB KV "
                "cache is needed, which is larger than the available KV cache memory (5.59 GiB). Based on the "
                "available memory, the estimated maximum model length is 122080. Try increasing "
                "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
                "ValueError: To serve at least one request with the model's max seq len (65536), (4.76 GiB KV cache "
                "is needed, which is larger than the available KV cache memory (1.56 GiB). Based on the available "
                "memory, the estimated maximum model length is 15984. Try increasing `gpu_memory_utilization` "
                "(which also controls CPU memory on the CPU backend) or decreasing `max_model_len` when "
                "initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for "
                "more details.",
                "22.5 GiB KV cache is needed, which is larger than the available KV cache memory (17.39 GiB).",
                "Based on the available memory, the estimated maximum model length is 810208.")),
    S("v0_max_seq_len_exceeds_kv", "max_seq_len_exceeds_kv", "error", ("can be stored in KV cache",),
      r"model's max seq len \((?P<max_seq_len>\d+)\) is larger than the maximum number of tokens that "
      r"can be stored in KV cache \((?P<estimated_max_len>\d+)\)", "v0_max_seq_len",
      origin="raise", probe=("is larger than the maximum number of tokens that can be stored in KV cache",),
      fields=("max_seq_len", "estimated_max_len", "kv_tokens"), feeds="max-seq-len-exceeds-kv",
      fragments=('or decreasing `max_model_len` when initializing the engine',),
      examples=("ValueError: The model's max seq len (131072) is larger than the maximum number of tokens that can "
                "be stored in KV cache (81536). Try increasing `gpu_memory_utilization` or decreasing "
                "`max_model_len` when initializing the engine.",
                # as pasted in OpenRLHF/OpenRLHF#336 (the start of the line cut off)
                "model's max seq len (8192) is larger than the maximum number of tokens that can be stored in KV "
                "cache (6048).")),
    S("no_cache_memory", "no_cache_memory", "error", ("No available memory for the cache blocks",),
      origin="raise", probe=("No available memory for the cache blocks",), feeds="no-cache-memory",
      fragments=('Try increasing `gpu_memory_utilization` when initializing the engine',),
      examples=("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
                "when initializing the engine.",)),
    S("cannot_auto_fit", "no_cache_memory", "error", ("Cannot auto-fit max_model_len",),
      origin="raise", probe=("Cannot auto-fit max_model_len",), feeds="no-cache-memory",
      examples=("ValueError: Cannot auto-fit max_model_len: not enough GPU memory available to serve even a "
                "single token. Try increasing `gpu_memory_utilization`.",)),
    S("free_memory_below_utilization", "free_memory_below_utilization", "error",
      ("is less than desired GPU memory utilization",),
      r"Free memory on device(?: (?P<device>\S+))? \((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) on startup "
      r"is less than desired GPU memory utilization \((?P<utilization>[\d.]+), (?P<requested_gib>[\d.]+) GiB\)",
      origin="raise", probe=("is less than desired GPU memory utilization",),
      fields=("device", "free_gib", "total_gib", "utilization", "requested_gib"),
      feeds="free-memory-below-utilization",
      fragments=('Decrease GPU memory utilization or reduce GPU memory used by other processes',),
      examples=("ValueError: Free memory on device (19.77/22.05 GiB) on startup is less than desired GPU memory "
                "utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
                "processes.",
                "ValueError: Free memory on device cuda:0 (19.77/22.05 GiB) on startup is less than desired GPU "
                "memory utilization (0.9, 19.84 GiB). Decrease GPU memory utilization or reduce GPU memory used "
                "by other processes.")),
    S("memory_profiling_changed", "memory_profiling_error", "error", ("Error in memory profiling",),
      r"Initial free memory (?P<initial_free_gib>[\d.]+) GiB, current free memory (?P<free_gib>[\d.]+) GiB",
      origin="assert", require_match=False, probe=("Error in memory profiling",),
      fields=("initial_free_gib", "free_gib"),
      feeds=NOT_CONFIG + ": another process released GPU memory during profiling; start again alone",
      fragments=('release GPU memory while vLLM is profiling during initialization',),
      examples=("AssertionError: Error in memory profiling. Initial free memory 70.5 GiB, current free memory "
                "72.1 GiB. This happens when other processes sharing the same container release GPU memory while "
                "vLLM is profiling during initialization. To fix this, ensure consistent GPU memory allocation or "
                "isolate vLLM in its own container.",)),
    S("load_model_oom", "cuda_oom", "error", ("Failed to load model - not enough GPU memory",), r".", "oom",
      origin="log", probe=("Failed to load model - not enough GPU memory",), fields=("phase", "tried_gib"),
      feeds="cuda-oom (loading: raise TP or quantize)",
      fragments=('Try lowering --gpu-memory-utilization to free memory for weights',),
      examples=("Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free "
                "memory for weights, increasing --tensor-parallel-size, or using --quantization. See "
                "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. (original error: "
                "CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 79.15 GiB of which "
                "147.75 MiB is free.)",)),
    S("sampler_warmup_oom", "cuda_oom", "error", ("out of memory occurred when warming up",), r".", "oom",
      origin="raise", probe=("CUDA out of memory occurred when warming up sampler",), fields=("phase", "num_reqs"),
      feeds="cuda-oom (warm-up: fewer max_num_seqs or lower utilization)",
      fragments=('Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine',),
      examples=("RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests. "
                "Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.",)),
    # Ray's memory monitor (the raylet) kills a task when the HOST's RAM passes its threshold
    # and raises ray.exceptions.OutOfMemoryError: host memory, not the GPU's; before the
    # torch OOM entry, whose "OutOfMemoryError" needle it would otherwise match.
    # Ray's own exception class names host memory alone (ray/exceptions.py OutOfMemoryError:
    # "the node is running out of memory"): a line a terminal or an editor cut before the
    # eviction text is still Ray's.
    S("ray_memory_monitor_kill", "host_oom", "error",
      ("running low on memory", "ray.exceptions.OutOfMemoryError"), origin="ray",
      library="Ray's memory monitor (raylet; the eviction text python/ray/tests/test_memory_pressure.py expects)",
      feeds=NOT_CONFIG + ": host RAM ran out and Ray killed a task; no GPU or vLLM knob",
      examples=("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
                # hiyouga/EasyR1#59, as pasted (ids cut)
                "Task was killed due to the node running low on memory. Memory on the node (IP: 1xx, ID: dbef7e7a) "
                "where the task (task ID: 9238c22a, name=main_task, pid=3103112, memory used=0.87GB) was running was "
                "726.33GB / 760.00GB (0.9557), which exceeds the memory usage threshold of 0.95. Ray killed this "
                "worker (ID: 9d97ec7c) because it was the most recently scheduled task")),
    S("torch_cuda_oom", "cuda_oom", "error", ("out of memory", "OutOfMemoryError"), r".", "oom",
      origin="torch", library="PyTorch (c10/cuda/CUDACachingAllocator.cpp)",
      fields=("tried_gib", "gpu", "total_gib", "free_gib", "process_gib", "process_count", "graph_pools_gib"),
      feeds="cuda-oom",
      fragments=('If reserved but unallocated memory is large try setting',
                 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation'),
      examples=("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 786.00 MiB. GPU 0 has a total "
                "capacity of 79.11 GiB of which 640.00 MiB is free. Including non-PyTorch memory, this process has "
                "78.47 GiB memory in use. Of the allocated memory 76.48 GiB is allocated by PyTorch, with 660.00 MiB "
                "allocated in private pools (e.g., CUDA Graphs), and 225.07 MiB is reserved by PyTorch but "
                "unallocated. " + _OOM_TAIL,
                "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total "
                "capacty of 79.15 GiB of which 147.75 MiB is free. Process 37672 has 79.00 GiB memory in use. Of the "
                "allocated memory 78.52 GiB is allocated by PyTorch, and 1.62 MiB is reserved by PyTorch but "
                "unallocated. " + _OOM_TAIL)),
    # --- parallel sizes and heads -----------------------------------------------------------
    S("heads_not_divisible", "heads_not_divisible", "error", ("must be divisible by tensor parallel size",),
      r"Total number of attention heads \((?P<heads>\d+)\) must be divisible by tensor parallel size \((?P<tp>\d+)\)",
      require_match=False, origin="raise", probe=("must be divisible by tensor parallel size",), fields=("heads", "tp"),
      feeds="tp-heads-not-divisible",
      examples=("ValueError: Total number of attention heads (32) must be divisible by tensor parallel size (3).",
                "  Value error, Total number of attention heads (4) must be divisible by tensor parallel size (3). "
                "[type=value_error, input_value=ArgsKwargs((), {'model_co...}), input_type=ArgsKwargs]")),
    S("kv_heads_divide", "kv_heads_not_divisible", "error", ("is not divisible by",),
      r"(?:AssertionError: )?(?P<numerator>\d+) is not divisible by (?P<denominator>\d+)\s*$", "divide",
      origin="assert", probe=("is not divisible by",), fields=("kv_heads", "tp", "numerator", "denominator"),
      feeds="tp-heads-not-divisible",
      examples=("AssertionError: 8 is not divisible by 6",)),
    S("kv_heads_assert_source", "kv_heads_not_divisible", "error", ("total_num_kv_heads % tp_size",),
      r"assert self\.total_num_kv_heads % tp_size == 0", origin="source",
      probe=("assert self.total_num_kv_heads % tp_size == 0",), feeds="tp-heads-not-divisible",
      examples=("    assert self.total_num_kv_heads % tp_size == 0",)),
    S("pp_layers_not_divisible", "pp_layers_not_divisible", "error", ("must be divisible by pipeline parallel size",),
      r"Total number of hidden layers \((?P<layers>\d+)\) must be divisible by pipeline parallel size \((?P<pp>\d+)\)",
      origin="raise", probe=("must be divisible by pipeline parallel size",), fields=("layers", "pp"),
      feeds=NOT_CONFIG + " in 0.5+: an old release; upgrade, or a PP that divides the layers",
      examples=("NotImplementedError: Total number of hidden layers (30) must be divisible by pipeline parallel "
                "size (4).",)),
    # 0.12-0.13 said it of the TP ("Tensor parallel size (N) cannot be larger than ...", read in
    # the 0.12.0 wheel's config/parallel.py:566, a release RELEASES does not list).
    S("world_size_too_large", "world_size_too_large", "error",
      ("is larger than the number of available GPUs", "cannot be larger than the number of available GPUs"),
      r"(?:World|Tensor parallel) size \((?P<world_size>\d+)\) (?:is|cannot be) larger than the number of "
      r"available GPUs \((?P<gpus>\d+)\)",
      origin="raise", probe=("is larger than the number of available GPUs",), fields=("world_size", "gpus"),
      feeds="world-size-too-large",
      examples=("ValueError: World size (8) is larger than the number of available GPUs (4) in this node. If this "
                "is intentional and you are using:",
                "ValueError: Tensor parallel size (8) cannot be larger than the number of available GPUs (4).")),
    S("pp_unsupported", "pp_unsupported", "error", ("Pipeline parallelism is not supported for this model",),
      origin="raise", probe=("Pipeline parallelism is not supported for this model",), feeds="pp-unsupported",
      fragments=('Supported models implement the `SupportsPP` interface',),
      examples=("NotImplementedError: Pipeline parallelism is not supported for this model. Supported models "
                "implement the `SupportsPP` interface.",)),
    S("ray_placement_gpus", "ray_placement_failed", "error",
      ("exceeds the total number of available GPUs in the placement group", "Cannot provide a placement group requiring",
       "Cannot provide a placement group of placement_group_specs"),
      r"requiring (?P<gpus_required>\d+) GPUs", require_match=False, origin="raise",
      probe=("exceeds the total number of available GPUs in the placement group",
             "Cannot provide a placement group requiring", "Cannot provide a placement group of "),
      fields=("gpus_required",),
      feeds="ray-placement-failed: TP x PP is more GPUs than the Ray cluster has (lower TP/PP, or add nodes)",
      examples=("ValueError: The number of required GPUs exceeds the total number of available GPUs in the "
                "placement group.",
                "ValueError: Cannot provide a placement group requiring 8 GPUs (placement_group_specs=[{'GPU': 1.0}]) "
                "within 1800 seconds.",
                # 0.5.5-0.33.0 (executor/ray_utils.py); 0.8+ adds "and `ray list nodes`"
                "ValueError: Cannot provide a placement group of placement_group_specs=[{'GPU': 1.0}, {'GPU': 1.0}] "
                "within 1800 seconds. See `ray status` and `ray list nodes` to make sure the cluster has enough "
                "resources.")),
    # --- scheduler limits -------------------------------------------------------------------
    S("batched_tokens_below_max_len", "batched_tokens_too_small", "error", ("is smaller than max_model_len",),
      r"max_num_batched_tokens \((?P<max_num_batched_tokens>\d+)\) is smaller than max_model_len "
      r"\((?P<max_model_len>\d+)\)", origin="raise", probe=("is smaller than max_model_len",),
      fields=("max_num_batched_tokens", "max_model_len"),
      feeds="step 4: raise --max-num-batched-tokens to max_model_len (or lower max_model_len)",
      fragments=('Please increase max_num_batched_tokens or decrease max_model_len',),
      examples=("ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (4096). This effectively "
                "limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer "
                "sequences. Please increase max_num_batched_tokens or decrease max_model_len.",)),
    S("mm_item_over_batched_tokens", "batched_tokens_too_small", "error",
      ("is larger than max_num_batched_tokens", "Chunked MM input disabled but max_tokens_per_mm_item"),
      r"max_tokens_per_mm_item \((?P<mm_item_tokens>\d+)\) is larger than\s+max_num_batched_tokens "
      r"\((?P<max_num_batched_tokens>\d+)\)", require_match=False, origin="raise",
      probe=("is larger than max_num_batched_tokens",), fields=("mm_item_tokens", "max_num_batched_tokens"),
      feeds="step 4: raise --max-num-batched-tokens to one multimodal item",
      examples=("ValueError: Chunked MM input disabled but max_tokens_per_mm_item (2496) is larger than "
                "max_num_batched_tokens (512). Please increase max_num_batched_tokens.",
                "Chunked MM input disabled but max_tokens_per_mm_item (2496) is larger")),
    S("batched_tokens_below_max_seqs", "batched_tokens_too_small", "error",
      ("must be greater than or equal to max_num_seqs",),
      r"max_num_batched_tokens \((?P<max_num_batched_tokens>\d+)\) must be greater than or equal to "
      r"max_num_seqs \((?P<max_num_seqs>\d+)\)", origin="raise",
      probe=("must be greater than or equal to max_num_seqs",), fields=("max_num_batched_tokens", "max_num_seqs"),
      feeds="step 4: --max-num-seqs at most --max-num-batched-tokens",
      examples=("ValueError: max_num_batched_tokens (128) must be greater than or equal to max_num_seqs (256).",)),
    S("v1_prompt_longer_than_max_len", "prompt_too_long", "warning", ("is longer than the maximum model length of",),
      r"prompt \(length (?P<prompt_tokens>\d+)\) is longer than the maximum model length of (?P<limit>\d+)",
      origin="raise", probe=("is longer than the maximum model length of",), fields=("prompt_tokens", "limit"),
      feeds=NOT_CONFIG + ": a client's prompt longer than max_model_len (raise max_model_len only if it fits)",
      examples=("ValueError: The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make "
                "sure that `max_model_len` is no smaller than the number of text tokens.",)),
    S("openai_context_length", "prompt_too_long", "warning", ("maximum context length is",),
      r"maximum context length is (?P<limit>\d+) tokens", origin="raise", probe=("maximum context length is",),
      fields=("limit",), feeds=NOT_CONFIG + ": a client's request longer than max_model_len (HTTP 400)",
      examples=("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in "
                "the messages, 1000 in the completion). Please reduce the length of the messages or completion.",)),
    # --- model support ----------------------------------------------------------------------
    S("architecture_unsupported", "model_unsupported", "error", ("are not supported for now",),
      r"Model architectures (?P<architectures>\[.*?\]) are not supported for now", origin="raise", quoted=True,
      probe=("are not supported for now",), fields=("architectures",),
      feeds=NOT_CONFIG + ": this vLLM does not know the architecture; upgrade vLLM",
      examples=("ValueError: Model architectures ['Qwen3ForCausalLM'] are not supported for now. Supported "
                "architectures: dict_keys(['LlamaForCausalLM'])",)),
    # --- dtype, fp8, quantization -----------------------------------------------------------
    S("bf16_unsupported", "dtype_unsupported", "error", ("Bfloat16 is only supported on GPUs",),
      r"Your (?P<gpu>.+?) GPU has compute capability (?P<capability>\d+(?:\.\d+)?)", origin="raise",
      require_match=False, probe=("Bfloat16 is only supported on GPUs with compute capability",),
      fields=("gpu", "capability"), feeds="dtype-unsupported: --dtype float16 (no memory knob)",
      fragments=('You can use float16 instead by explicitly setting the',),
      examples=("ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
                "Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly setting the "
                "`dtype` flag in CLI, for example: --dtype=half.",
                # 0.3.3-0.9.2 (worker/worker.py) join "setting the" to "`dtype`" without a space
                "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your "
                "Tesla V100-SXM2-32GB GPU has compute capability 7.0. You can use float16 instead by explicitly "
                "setting the`dtype` flag in CLI, for example: --dtype=half.")),
    S("fp8_e5m2_with_fp8_checkpoint", "kv_cache_dtype_unsupported", "error",
      ("fp8_e5m2 kv-cache is not supported with fp8 checkpoints",), origin="raise",
      probe=("fp8_e5m2 kv-cache is not supported with",), feeds="kv-dtype-unsupported: --kv-cache-dtype fp8 (e4m3)",
      examples=("ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints.",)),
    S("triton_fp8e4nv_arch", "kv_cache_dtype_unsupported", "error",
      ("fp8e4nv data type is not supported on CUDA arch", "type fp8e4nv not supported in this architecture"),
      r"CUDA arch < (?P<min_arch>\d+)", require_match=False, origin="triton", quoted=True, library="Triton (fp8e4nv needs sm_89+)",
      fields=("min_arch",), feeds="kv-dtype-unsupported: this GPU cannot run fp8 (e4m3) KV kernels; --kv-cache-dtype auto",
      examples=("AssertionError: fp8e4nv data type is not supported on CUDA arch < 89",
                "ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are "
                "('fp8e4b15', 'fp8e5')\")")),
    S("quantization_capability", "quantization_unsupported", "error",
      ("is not supported for the current GPU. Minimum capability",),
      r"The quantization method (?P<method>\S+) is not supported for the current GPU\. Minimum capability: "
      r"(?P<min_capability>\d+)\. Current capability: (?P<capability>\d+)", origin="raise",
      probe=("is not supported for the current GPU. Minimum capability",),
      fields=("method", "min_capability", "capability"),
      feeds="quantization-unsupported: another checkpoint/method for this GPU (no memory knob)",
      examples=("ValueError: The quantization method fp8 is not supported for the current GPU. Minimum "
                "capability: 80. Current capability: 75.",)),
    S("quantization_mismatch", "quantization_mismatch", "error",
      ("does not match the quantization method specified in the",),
      r"model config \((?P<checkpoint_method>[^)]+)\) does not match the quantization method specified in the "
      r"`?quantization`? argument \((?P<method>[^)]+)\)", origin="raise",
      probe=("does not match the quantization method specified in the",), fields=("checkpoint_method", "method"),
      feeds="quantization-mismatch: drop --quantization (the checkpoint names its own method)",
      examples=("ValueError: Quantization method specified in the model config (gptq) does not match the "
                "quantization method specified in the `quantization` argument (awq).",)),
    # --- command line and configuration -------------------------------------------------------
    S("unrecognized_arguments", "unrecognized_arguments", "error", ("unrecognized arguments:",),
      r"unrecognized arguments: (?P<args>.*)$", "unrecognized", origin="argparse", library="argparse",
      probe=("unrecognized arguments",), fields=("args",), feeds="unrecognized-arguments",
      examples=("vllm: error: unrecognized arguments: --kv-cache-memory-gib 20",)),
    S("max_model_len_over_derived", "config_error", "error", ("is greater than the derived max_model_len",),
      r"(?:.*?(?:Value error, |error: ))?(?P<message>.+?)(?: \[type=.*)?$", "config_error", origin="raise",
      probe=("is greater than the derived max_model_len",),
      fields=("message", "max_model_len", "derived_max_model_len", "derived_from"), feeds="config-error (max_model_len)",
      examples=("ValueError: User-specified max_model_len (65536) is greater than the derived max_model_len "
                "(max_position_embeddings=32768 or model_max_length=None in model's config.json). To allow "
                "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative "
                "position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses "
                "absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array "
                "out-of-bounds error.",)),
    S("config_value_error", "config_error", "error", ("Value error, ", "error: argument "),
      r"(?:.*?(?:Value error, |error: ))?(?P<message>.+?)(?: \[type=.*)?$", "config_error",
      origin="pydantic", library="pydantic (vLLM's config dataclasses) / argparse", fields=("message",),
      generic=True,
      feeds="config-error",
      examples=("  Value error, Invalid repository ID or local directory specified: '/models/x'. [type=value_error, "
                "input_value=ArgsKwargs((), {'model': '/models/x'}), input_type=ArgsKwargs]",
                "vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'two'")),
)  # fmt: skip
