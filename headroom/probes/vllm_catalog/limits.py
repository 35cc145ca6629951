"""Catalog entries found by walking vLLM's own sources (scripts/catalog_coverage.py): CPU swap
space, the Ray driver without a GPU, quantized weights that a tensor-parallel size cannot
split, pipeline parallelism an old release lacks, the V0 engine's death notices, sequences the
whole KV cache cannot hold and clients' requests over max_model_len, the custom all-reduce and
CuPy paths a flag turns off, and the texts in which vLLM itself says it hit a bug. In match order, before `failures` (whose "is not
divisible by" needle is broader) and before the generic engine-death and exception entries."""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import NOT_CONFIG
from headroom.probes.vllm_catalog.signature import Signature as S

_SWAP = (r"(?P<swap_gib>[\d.]+) GiB out of the (?P<cpu_total_gib>[\d.]+) GiB total CPU memory is "
         r"allocated for the swap space")  # fmt: skip
# The numbers of the split. Required (not only the needle): a traceback through
# linear.py quotes source lines such as `self.input_size_per_partition = divide(...)`.
_SPLIT = (r"(?P<what>\w[\w' ]*?) = (?P<partition>\d+) is not divisible\s+by\s+(?:weight quantization )?"
          r"(?P<divisor_name>\w+) = (?P<divisor>\d+)")  # fmt: skip

ENTRIES: tuple[S, ...] = (
    # --- CPU swap space (V0: --swap-space GiB per GPU, times the TP of one node) ---------------
    S("too_large_swap_space", "swap_space_too_large", "error", ("Too large swap space.",), _SWAP,
      require_match=False, origin="raise", probe=("Too large swap space. ",),
      fields=("swap_gib", "cpu_total_gib"),
      feeds="swap-space-too-large: lower --swap-space (swap x TP above 70% of the host's RAM)",
      examples=("ValueError: Too large swap space. 80.00 GiB out of the 62.79 GiB total CPU memory is allocated "
                "for the swap space.",)),
    S("possibly_too_large_swap_space", "swap_space_large", "warning", ("Possibly too large swap space.",),
      _SWAP, require_match=False, probe=("Possibly too large swap space",),
      fields=("swap_gib", "cpu_total_gib"),
      feeds="swap-space-too-large (warning: swap x TP above 40% of the host's RAM)",
      examples=("Possibly too large swap space. 32.00 GiB out of the 62.79 GiB total CPU memory is allocated for "
                "the swap space.",)),
    S("lack_of_cpu_swap_space", "swap_space_exhausted", "error", ("Aborted due to the lack of CPU swap space",),
      origin="raise", probe=("Aborted due to the lack of CPU swap space",),
      feeds="swap-space-exhausted: V0 swapped out parallel-sampling/beam groups and the CPU blocks ran out "
            "(raise --swap-space, or fewer sequences)",
      examples=("RuntimeError: Aborted due to the lack of CPU swap space. Please increase the swap space to "
                "avoid this error.",)),
    # --- Ray: the process that drives the engine holds no GPU of the placement group ------------
    S("ray_driver_no_gpu", "ray_driver_without_gpu", "error",
      ("Ray does not allocate any GPUs on the driver node", "is not included in a placement group"),
      r"Driver IP: (?P<driver_ip>[\d.:a-fA-F]+)", require_match=False, origin="raise",
      probe=("Ray does not allocate any GPUs on the driver node", "is not included in a placement "),
      fields=("driver_ip",),
      feeds="ray-driver-without-gpu: start vLLM on a GPU node of the Ray cluster (up to 0.5: --engine-use-ray "
            "lets Ray place the engine)",
      examples=("ValueError: Ray does not allocate any GPUs on the driver node. Consider adjusting the Ray "
                "placement group or running the driver on a GPU node.",
                "ValueError: Ray does not allocate any GPUs on the driver node.Driver IP: 10.0.0.5, worker IPs: "
                "['10.0.0.6', '10.0.0.6'].Consider adjusting the Ray placement group or running the driver on a "
                "GPU node.",
                "RuntimeError: driver node id 8f1c is not included in a placement group PlacementGroupID(4a2b). "
                "Node id -> bundles {'9d3e': [0, 1]}. You don't have enough GPUs available in a current node. "
                "Check `ray status` and `ray list nodes` to see if you have available GPUs in a node "
                "`{driver_node_id}` before starting an vLLM engine.")),
    # --- quantized weights a tensor-parallel size cannot split -------------------------------
    S("quantized_shard_not_divisible", "quantized_tp_split", "error",
      ("_per_partition = ", "output_partition_size = ", "of down's weight = ", "gate's and up's weight = "),
      _SPLIT, origin="raise",
      probe=("Consider reducing tensor_parallel_size or running ", "is not divisible by weight quantization block_"),
      fields=("what", "partition", "divisor_name", "divisor"),
      feeds="quantized-tp-split (step 2): a TP whose weight shards the quantization's groups/blocks divide",
      examples=("ValueError: Weight input_size_per_partition = 1792 is not divisible by group_size = 128. "
                "Consider reducing tensor_parallel_size or running with --quantization gptq.",
                "ValueError: Weight output_size_per_partition = 1848 is not divisible by  min_thread_n = 64. "
                "Consider reducing tensor_parallel_size or running with --quantization gptq.",
                "ValueError: Weight output_partition_size = 1536 is not divisible by weight quantization block_n "
                "= 128.")),
    S("awq_not_aligned", "quantized_tp_split", "error", ("is not aligned with the quantized weight shape",),
      origin="raise", probe=("is not aligned with the quantized weight shape",),
      feeds="quantized-tp-split (step 2): AWQ/GPTQ's own words, 'too large tensor parallel size'",
      examples=("ValueError: The input size is not aligned with the quantized weight shape. This can be caused by "
                "too large tensor parallel size.",)),
    S("bnb_prequant_tp", "quantized_tp_unsupported", "error",
      ("Prequant BitsAndBytes models with tensor parallelism is not supported",),
      origin="raise", probe=("Prequant BitsAndBytes models with tensor parallelism is not",),
      feeds="quantized-tp-unsupported: a pre-quantized bitsandbytes checkpoint: TP 1, the GPUs as PP",
      examples=("ValueError: Prequant BitsAndBytes models with tensor parallelism is not supported. Please try "
                "with pipeline parallelism.",)),
    # --- pipeline parallelism an old release lacks ---------------------------------------------
    S("pp_not_supported_yet", "pp_unsupported_release", "error", ("Pipeline parallelism is not supported yet",),
      origin="raise", probe=("Pipeline parallelism is not supported yet",),
      feeds=NOT_CONFIG + ": 0.2-0.4 have no pipeline parallelism; upgrade (or PP 1 on this release)",
      examples=("NotImplementedError: Pipeline parallelism is not supported yet.",)),
    S("pp_architectures", "pp_unsupported_release", "error",
      ("Pipeline parallelism is only supported for the following",),
      r"architectures: (?P<architectures>\[.*?\])", require_match=False,
      origin="raise", probe=("Pipeline parallelism is only supported for the following",),
      fields=("architectures",),
      feeds=NOT_CONFIG + ": 0.5 ran PP for a short list of architectures, later releases for almost all; "
            "upgrade (or PP 1 on this release)",
      examples=("NotImplementedError: Pipeline parallelism is only supported for the following  architectures: "
                "['AquilaForCausalLM', 'LlamaForCausalLM', 'MistralForCausalLM'].",)),
    # --- the engine's death, as the V0 servers and 0.6-0.10's front-end say it ----------------------
    S("engine_process_failed", "engine_core_failed", "error",
      ("Engine process failed to start", "EngineCoreProc failed to start", "EngineCore initialization failed",
       "Frontend process failed during engine core initialization"),
      origin="raise",
      probe=("Engine process failed to start", "EngineCoreProc failed to start",
             "Frontend process failed during engine core initialization"),
      feeds="engine death (echo of the root cause above it)",
      examples=("RuntimeError: Engine process failed to start. See stack trace for the root cause.",
                "RuntimeError: EngineCore initialization failed. See root cause above.",
                "RuntimeError: EngineCoreProc failed to start.")),
    S("v0_engine_dead", "engine_dead", "error",
      ("AsyncLLMEngine has failed, terminating server process", "is already dead, terminating server process",
       "Engine background task failed", "Task finished unexpectedly. This should never happen"),
      origin="raise",
      probe=("AsyncLLMEngine has failed, terminating server ", "is already dead, terminating server ",
             "Engine background task failed", "Task finished unexpectedly. This should never happen"),
      feeds="engine death (the V0 engine's loop died; its root cause is above)",
      examples=("AsyncLLMEngine has failed, terminating server process",
                "MQLLMEngine is already dead, terminating server process",
                "vllm.engine.async_llm_engine.AsyncEngineDeadError: Task finished unexpectedly. This should never "
                "happen! Please open an issue on GitHub. See stack trace above for the actual cause.")),
    # --- a sequence the whole KV cache cannot hold; a client's request over max_model_len --------
    S("v0_swapped_exceeds_blocks", "prompt_exceeds_kv", "warning",
      ("because there's not enough kv cache blocks to run the entire sequence",),
      probe=("because there's not enough kv cache blocks to run the entire sequence",),
      feeds="prompt-exceeds-kv: a swapped-out sequence no longer fits the whole KV cache (KV budget up)",
      examples=("Failing the request 42 because there's not enough kv cache blocks to run the entire sequence.",)),
    S("v1_prompt_length_of", "prompt_too_long", "warning", ("Prompt length of ",),
      r"Prompt length of (?P<prompt_tokens>\d+) is longer than the maximum model length of (?P<limit>\d+)",
      origin="raise", probe=("Prompt length of {len(prompt_ids)} is longer than the ",),
      fields=("prompt_tokens", "limit"),
      feeds=NOT_CONFIG + ": a client's prompt longer than max_model_len (0.7 V1; raise max_model_len only if it fits)",
      examples=("ValueError: Prompt length of 9000 is longer than the maximum model length of 8192.",)),
    S("v1_prompt_plus_output", "prompt_too_long", "warning", ("plus the number of requested output tokens",),
      r"prompt \(length (?P<prompt_tokens>\d+)\) plus the number of requested output tokens \(at least 1\) is "
      r"longer than the maximum model length of (?P<limit>\d+)", origin="raise",
      probe=("plus the number of requested output tokens (at least 1)",), fields=("prompt_tokens", "limit"),
      feeds=NOT_CONFIG + ": a client's prompt that leaves no room for one output token under max_model_len",
      examples=("VLLMValidationError: The decoder prompt (length 8192) plus the number of requested output tokens "
                "(at least 1) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no "
                "smaller than the number of text tokens (prompt + requested output tokens).",)),
    S("input_length_over_context", "prompt_too_long", "warning", ("exceeds model's maximum context length",),
      r"Input length \((?P<prompt_tokens>\d+)\) exceeds model's maximum context length \((?P<limit>\d+)\)",
      origin="raise", probe=("exceeds model's maximum context length",),
      fields=("prompt_tokens", "limit"),
      feeds=NOT_CONFIG + ": a client's input longer than max_model_len (HTTP 400, 0.32+)",
      examples=("ValueError: Input length (40000) exceeds model's maximum context length (32768).",)),
    S("mm_prompt_too_long", "prompt_too_long", "warning", ("is too long to fit into the model (context length",),
      r"total length (?P<prompt_tokens>\d+)\) is too long to fit into the model \(context length (?P<limit>\d+)\)",
      origin="raise", probe=("is too long to fit into the model (context length",),
      fields=("prompt_tokens", "limit"),
      feeds=NOT_CONFIG + ": a client's text + image tokens longer than max_model_len (0.6-0.7)",
      examples=("ValueError: The prompt (total length 4500) is too long to fit into the model (context length "
                "4096). Make sure that `max_model_len` is no smaller than the number of text tokens plus multimodal "
                "tokens. For image inputs, the number of image tokens depends on the number of images, and possibly "
                "their aspect ratios as well.",)),
    # --- all-reduce paths that a flag turns off ------------------------------------------------
    S("custom_allreduce_cudacheck", "custom_allreduce_failed", "error", ("custom_all_reduce.cuh:",),
      r"Failed: (?:Cuda error )?\S*custom_all_reduce\.cuh:(?P<line_no>\d+) '(?P<error>[^']*)'",
      origin="csrc",
      library="vLLM's C++ extension: CUDACHECK in csrc/custom_all_reduce.cuh prints 'Failed: [Cuda error ]"
              "<file>:<line> '<error>'' and exits (vllm-project/vllm@036bb68; the older form in "
              "tests/fixtures/incidents/vllm-project--vllm--5613--runningleon.json)",
      fields=("line_no", "error"),
      feeds="custom-allreduce-failed: --disable-custom-all-reduce (NCCL does the all-reduce)",
      examples=("Failed: /home/runner/work/vllm/vllm/csrc/custom_all_reduce.cuh:310 'invalid argument'",
                "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'peer access is not supported "
                "between these two devices'")),
    S("cupy_tcpstore", "cupy_nccl_failed", "error", ("TCPStore is not available",), origin="cupy",
      library="CuPy (cupyx.distributed's TCP store, which vLLM 0.3.x's cupy_utils used for CUDA-graph all-reduce)",
      feeds="cupy-nccl-failed: 0.3.x set up CuPy's NCCL only for CUDA graphs: --enforce-eager",
      examples=("RuntimeError: TCPStore is not available",)),
    S("cupy_barrier", "cupy_nccl_failed", "error", ("CuPy NCCL barrier is not supported",), origin="raise",
      probe=("CuPy NCCL barrier is not supported",),
      feeds="cupy-nccl-failed: 0.3.x set up CuPy's NCCL only for CUDA graphs: --enforce-eager",
      examples=("RuntimeError: Currently, CuPy NCCL barrier is not supported since the TCP store is immediately "
                "stopped after the initialization.",)),
    # --- refusals rules_compat reads from raw lines too (wrapped pastes); here as events -----------
    S("quant_dtype_unsupported", "dtype_unsupported", "error", ("is not supported for quantization method",),
      r"(?:torch\.)?(?P<dtype>\w+) is not supported for quantization method (?P<method>\w+)",
      origin="raise", probe=("is not supported for quantization method", "is not supported for quantization \""),
      fields=("dtype", "method"), feeds="dtype-unsupported: the dtype the quantization's kernels take",
      examples=("ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: "
                "[torch.float16]",)),
    S("quant_scheme_capability", "quantization_unsupported", "error", ("Quantization scheme is not supported for",),
      r"capability: (?P<min_capability>\d+)\.[ ',]*Current capability: (?P<capability>\d+)",
      require_match=False, origin="raise", quoted=True, probe=("Quantization scheme is not supported for ",),
      fields=("min_capability", "capability"),
      feeds="quantization-unsupported: a checkpoint whose scheme this GPU runs (no memory knob)",
      examples=("RuntimeError: ('Quantization scheme is not supported for ', 'the current GPU. Min capability: "
                "80. ', 'Current capability: 70.')",)),
    S("mamba_blocks_below_max_num_seqs", "mamba_blocks_too_few", "error", ("exceeds available Mamba cache",),
      r"max_num_seqs \((?P<max_num_seqs>\d+)\) exceeds available Mamba cache blocks \((?P<blocks>\d+)\)",
      require_match=False, origin="raise", probe=("exceeds available Mamba cache ",),
      fields=("max_num_seqs", "blocks"),
      feeds="mamba-blocks-below-max-num-seqs (step 4: max_num_seqs down to the blocks)",
      examples=("ValueError: max_num_seqs (1024) exceeds available Mamba cache blocks (856). Each decode sequence "
                "requires one Mamba cache block, so CUDA graph capture cannot proceed. Please lower max_num_seqs to "
                "at most 856 or increase gpu_memory_utilization.",)),
    # --- fp8 KV scales a release cannot load; CUDA touched before vLLM forked ------------------------
    S("fp8_kv_scale_per_tensor", "kv_scale_unsupported", "error",
      ("Only support per-tensor scaling factor for fp8 KV cache",), origin="raise",
      probe=("Only support per-tensor scaling factor",),
      feeds=NOT_CONFIG + ": the checkpoint's KV scales are not one per tensor (or a release's scale bug); "
            "upgrade, or --kv-cache-dtype auto",
      examples=("ValueError: Only support per-tensor scaling factor for fp8 KV cache",)),
    S("cuda_forked_subprocess", "cuda_forked_subprocess", "error", ("Cannot re-initialize CUDA in forked subprocess",),
      origin="torch", library="PyTorch (torch.cuda lazy init in a forked child)",
      feeds="cuda-forked-subprocess: CUDA was used before vLLM forked its workers (create the engine first, or "
            "VLLM_WORKER_MULTIPROC_METHOD=spawn; 0.6+ switches to spawn itself)",
      examples=("RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you "
                "must use the 'spawn' start method.",)),
    # --- the memory gate's other wordings; a utilization above 1 ------------------------------------
    S("free_memory_below_engine_budget", "free_memory_below_utilization", "error",
      ("is less than the engine's budget after excluding",),
      r"Free memory on device(?: (?P<device>\S+))? \((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) on startup "
      r"is less than the engine's budget after excluding external process's weights \((?P<utilization>[\d.]+), "
      r"(?P<requested_gib>[\d.]+) GiB\)", require_match=False, origin="raise",
      probe=("is less than the engine's budget after excluding",),
      fields=("device", "free_gib", "total_gib", "utilization", "requested_gib"),
      feeds="free-memory-below-utilization (0.32+, weights held by another process excluded)",
      examples=("ValueError: Free memory on device cuda:0 (20.10/79.19 GiB) on startup is less than the engine's "
                "budget after excluding external process's weights (0.9, 41.27 GiB). Decrease GPU memory "
                "utilization or reduce GPU memory used by other processes.",)),
    S("cpu_memory_below_utilization", "free_memory_below_utilization", "error",
      ("on startup is less than desired CPU memory utilization",),
      r"Available memory on node (?P<device>\d+) \((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) on startup "
      r"is less than desired CPU memory utilization \((?P<utilization>[\d.]+), (?P<requested_gib>[\d.]+) GiB\)",
      require_match=False, origin="raise", probe=("is less than desired CPU memory utilization",),
      fields=("device", "free_gib", "total_gib", "utilization", "requested_gib"),
      feeds="free-memory-below-utilization (CPU backend: --gpu-memory-utilization sets the CPU reservation)",
      examples=("ValueError: Available memory on node 0 (10.78/15.61 GiB) on startup is less than desired CPU "
                "memory utilization (0.7, 10.93 GiB). On the CPU backend, the `--gpu-memory-utilization` flag "
                "controls the fraction of CPU memory reserved (despite its name).",)),
    S("utilization_above_one", "utilization_out_of_range", "error", ("GPU memory utilization must be less than 1.0",),
      r"Got (?P<utilization>[\d.]+)", require_match=False, origin="raise",
      probe=("GPU memory utilization must be less than 1.0",), fields=("utilization",),
      feeds="utilization-out-of-range: --gpu-memory-utilization is a fraction (0.9 = 90%)",
      examples=("ValueError: GPU memory utilization must be less than 1.0. Got 90.0.",)),
    # --- two features a release cannot run together (drop one, or upgrade) -------------------------
    S("feature_combination", "feature_combination_unsupported", "error",
      ("Chunked prefill is not supported with sliding window", "Prefix caching is not supported for fp8 cache_dtype",
       "LoRA is not supported with chunked prefill", "chunked prefill cannot be used with prefix caching",
       "Speculative decoding and chunked prefill are currently mutually exclusive",
       "Chunked prefill is not supported with multi-step", "Multi-step scheduling is not supported (and not needed)"),
      origin="raise",
      probe=("Chunked prefill is not supported with sliding window", "Prefix caching is not supported for fp8 cache",
             "LoRA is not supported with chunked prefill", "chunked prefill cannot be used with prefix caching",
             "Speculative decoding and chunked prefill are currently mutually exclusive",
             "Chunked prefill is not supported with multi-step", "Multi-step scheduling is not supported (and not"),
      feeds="feature-combination-unsupported: drop one of the two features (or a release that runs both); no "
            "memory knob",
      examples=("ValueError: Chunked prefill is not supported with sliding window. Set --disable-sliding-window to "
                "disable sliding window.",
                "NotImplementedError: Prefix caching is not supported for fp8 cache_dtype. Run with --kv-cache-dtype "
                "auto to use prefix caching.",
                "ValueError: LoRA is not supported with chunked prefill yet.",
                "RuntimeError: chunked prefill cannot be used with prefix caching now.",
                "NotImplementedError: Multi-step scheduling is not supported (and not needed) on vLLM V1. Please "
                "launch without --num-scheduler-steps.")),
    # --- a KV-cache dtype the model or kernel refuses; CUDA-graph modes a model or backend lacks -------
    S("fp8_key_cache_head_size", "kv_cache_dtype_refused", "error",
      ("Does not support key cache of type fp8 with head_size",),
      r"head_size (?P<head_size>\d+)", require_match=False, origin="raise",
      probe=("Does not support key cache of type fp8 with head_size",), fields=("head_size",),
      feeds="kv-cache-dtype-refused: --kv-cache-dtype auto (the fp8 key cache needs head_size % 16 == 0)",
      examples=("ValueError: Does not support key cache of type fp8 with head_size 120",)),
    S("trtllm_fp8_sinks", "kv_cache_dtype_refused", "error",
      ("TRTLLM FP8-qkv kernel is not supported for attention sinks",), origin="raise",
      probe=("TRTLLM FP8-qkv kernel is not supported for attention sinks",),
      feeds="kv-cache-dtype-refused: --kv-cache-dtype auto (vLLM's own advice, 0.11)",
      examples=("RuntimeError: TRTLLM FP8-qkv kernel is not supported for attention sinks. Use kv_cache_dtype=auto "
                "for now.",)),
    S("mamba_cuda_graph", "cuda_graph_unsupported", "error", ("Mamba with cuda graph is not supported yet",),
      origin="raise", probe=("Mamba with cuda graph is not supported yet",),
      feeds="cuda-graph-unsupported: --enforce-eager (0.9 V1 ran Mamba layers only in eager mode)",
      examples=("NotImplementedError: Mamba with cuda graph is not supported yet.",)),
    S("full_cudagraph_backend", "cuda_graph_unsupported", "error",
      ("Full CUDAGraph not supported for", "please try cudagraph_mode=PIECEWISE"), origin="raise",
      probe=("Full CUDAGraph not supported for", "please try cudagraph_mode=PIECEWISE"),
      feeds="cuda-graph-unsupported: full CUDA graphs with an attention backend that has none: piecewise "
            "graphs (compilation config), no memory knob",
      examples=("ValueError: Full CUDAGraph not supported for FlashInferBackend. Turn off "
                "CompilationConfig.full_cuda_graph or use a different attention backend.",
                "ValueError: CUDAGraphMode.FULL is not supported with FlashInferMetadataBuilder backend "
                "(support:AttentionCGSupport.NEVER) ; please try cudagraph_mode=PIECEWISE, and make sure "
                "compilation level is piecewise")),
    # --- vLLM's own words: a bug, not a setting ----------------------------------------------------
    S("vllm_says_bug", "vllm_bug", "error",
      ("This is a bug, please file an issue", "This indicates a bug in", "This error should NOT happen"),
      origin="raise",
      probe=("This is a bug, please file an issue", "This indicates a bug in", "This error should NOT happen"),
      feeds=NOT_CONFIG + ": vLLM's own text calls it a bug",
      examples=("AssertionError: vLLM tried to hash some configs that may have Python objects ids in them. This "
                "is a bug, please file an issue. Text being hashed: ModelConfig(...)",
                "AssertionError: Invalid block_id 9000 >= 8192. This indicates a bug in the KV connector - workers "
                "should only report block IDs that were allocated by the scheduler.")),
)  # fmt: skip
