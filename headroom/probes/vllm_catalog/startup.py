"""Catalog entries: start-up facts and scheduler notices (info and warnings), in match order."""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import Signature as S

_GIB = r"([\d.]+) ?GiB"

ENTRIES: tuple[S, ...] = (
    S("server_version", "version", "info", ("server version",),
      r"vLLM (?:API )?server version (?P<version>\S+?),?(?: serving model (?P<model>\S+))?\s*$",
      probe=("vLLM API server version", "vLLM server version"), fields=("version", "model"),
      feeds="StartupFacts.vllm_version (doctor: version-specific advice)",
      examples=("vLLM API server version 0.6.4.post1", "vLLM server version 0.33.0, serving model Qwen/Qwen3-8B")),
    S("engine_config", "version", "info",
      ("Initializing an LLM engine", "Initializing a V1 LLM engine", "Initializing a V0 LLM engine"),
      r"Initializing an? (?:V\d )?LLM engine(?: \(v(?P<version>[^)\s]+)\))? with config", "engine_config",
      probe=("LLM engine (v", "Initializing an LLM engine with config"), fields=("version", "model", "tensor_parallel_size", "max_seq_len", "dtype"),
      feeds="StartupFacts (version, TP, max_model_len)",
      examples=("Initializing an LLM engine (v0.6.4.post1) with config: model='meta-llama/Llama-3.1-70B', "
                "speculative_config=None, tokenizer='meta-llama/Llama-3.1-70B', dtype=torch.bfloat16, "
                "max_seq_len=8192, tensor_parallel_size=8, pipeline_parallel_size=1, kv_cache_dtype=auto",
                "Initializing a V1 LLM engine (v0.10.2) with config: model='Qwen/Qwen3-8B', "
                "max_seq_len=40960, tensor_parallel_size=2, pipeline_parallel_size=1, quantization=None",
                "Initializing an LLM engine with config: model='/model_repos/CustomLLM/Qwen-7B-QAnything', "
                "tokenizer='/model_repos/CustomLLM/Qwen-7B-QAnything', tokenizer_mode=auto, revision=None, "
                "tokenizer_revision=None, trust_remote_code=True, dtype=torch.bfloat16, max_seq_len=4096")),
    S("banner_version", "version", "info", (" version ",), r"[█▀▄]\s+version\s+(?P<version>\S+)\s*$",
      probe=("█ ▀▄▀ █${r}  version",), fields=("version",), feeds="StartupFacts.vllm_version",
      examples=(" ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.32.0",)),
    S("banner_model", "model", "info", (" model ",), r"[█▀▄]\s+model\s+(?P<model>\S+)\s*$",
      probe=("█     █${r}  model   ",), fields=("model",), feeds="StartupFacts.model",
      examples=("  █▄█▀ █     █     █     █  model   /models/tiny-llama",)),
    S("non_default_args", "non_default_args", "info", ("non-default args:",),
      r"non-default args: (?P<args>.*)$", "non_default_args", probe=("non-default args",),
      fields=("args",), feeds="doctor knobs (the flags the server really got)",
      examples=("non-default args: {'model': 'Qwen/Qwen3-8B', 'max_model_len': 32768, 'gpu_memory_utilization': 0.95}",)),
    S("using_max_model_len", "max_model_len", "info", ("Using max model len",),
      r"Using max model len (?P<max_model_len>\d+)", probe=("Using max model len",),
      fields=("max_model_len",), feeds="ledger.max_model_len",
      examples=("Using max model len 40960",)),
    S("auto_fit_max_model_len", "max_model_len", "info", ("Auto-fit max_model_len:",),
      r"Auto-fit max_model_len: (?:reduced from (?P<reduced_from>\d+) to (?P<max_model_len>\d+)"
      r"|full model context length (?P<full>\d+) fits)",
      probe=("Auto-fit max_model_len: reduced from", "Auto-fit max_model_len: full model context length"),
      fields=("max_model_len", "reduced_from", "full"), feeds="ledger.max_model_len",
      examples=("Auto-fit max_model_len: reduced from 131072 to 45056 to fit in available KV cache memory (6.19 GiB)",)),
    S("model_loading_took", "weights_loaded", "info", ("Model loading took", "Loading model weights took"),
      r"(?:Model loading|Loading model weights) took (?P<weights_gib>[\d.]+) ?Gi?B"
      r"(?: memory)?(?: and (?P<load_s>[\d.]+) seconds?)?",
      probe=("Model loading took", "Loading model weights took"), fields=("weights_gib", "load_s"),
      feeds="ledger.weights_gib (step 1)",
      examples=("Loading model weights took 13.9476 GB", "Model loading took 15.5 GiB memory and 12.345678 seconds",
                "Model loading took 29.0934 GiB and 10.500000 seconds")),
    S("encoder_cache_profile", "encoder_profile", "info", ("Encoder cache will be initialized with a budget of",),
      r"Encoder cache will be initialized with a budget of (?P<encoder_budget>\d+) tokens, and profiled with "
      r"(?P<mm_items>\d+) (?P<modality>\w+) items",
      probe=("Encoder cache will be initialized with a budget of",),
      fields=("encoder_budget", "mm_items", "modality"),
      feeds="rules_defaults (a multimodal model's start-up profile: min(encoder budget / tokens per item, "
            "max_num_seqs x items per prompt) dummy items)",
      examples=("Encoder cache will be initialized with a budget of 8192 tokens, and profiled with 31 image items "
                "of the maximum feature size.",
                "Encoder cache will be initialized with a budget of 16384 tokens, and profiled with 1 image items "
                "of the maximum feature size.")),
    S("available_kv_memory", "kv_memory_available", "info", ("Available KV cache memory:",),
      r"Available KV cache memory: (?P<kv_gib>-?[\d.]+) ?GiB", probe=("Available KV cache memory",),
      fields=("kv_gib",), feeds="ledger.kv_gib (max-seq-len-exceeds-kv, no-cache-memory)",
      examples=("Available KV cache memory: 10.55 GiB", "Available KV cache memory: -1.2 GiB")),
    S("kv_memory_bytes_reserved", "kv_memory_reserved", "info", ("as specified by kv_cache_memory_bytes",),
      rf"Initial free memory {_GIB}, reserved (?P<kv_gib>[\d.]+) ?GiB memory for KV Cache", "kv_reserved",
      probe=("as specified by kv_cache_memory_bytes",), fields=("free_gib", "kv_gib"),
      feeds="ledger.kv_gib (--kv-cache-memory-bytes sizes KV)",
      examples=("Initial free memory 78.5 GiB, reserved 20.0 GiB memory for KV Cache as specified by "
                "kv_cache_memory_bytes config and skipped memory profiling. This does not respect the "
                "gpu_memory_utilization config. Only use kv_cache_memory_bytes config when you want manual "
                "control of KV cache memory size. If OOM'ed, check the difference of initial free memory "
                "between the current run and the previous run where kv_cache_memory_bytes is suggested and "
                "update it correspondingly.",)),
    S("cpu_kv_explicit", "kv_memory_reserved", "info", ("for KV cache on node",),
      r"Explicitly set \((?P<kv_gib>[\d.]+)/(?P<total_gib>[\d.]+)\) GiB for KV cache on node (?P<node>\d+)",
      probe=("for KV cache on node",), fields=("kv_gib", "total_gib", "node"), feeds="ledger.kv_gib (CPU backend)",
      examples=("Explicitly set (4.0/62.79) GiB for KV cache on node 0.",)),
    S("kv_cache_size_tokens", "kv_cache_tokens", "info", ("KV cache size:",),
      r"(?:(?P<device>[A-Z][A-Za-z0-9]*(?: \+ host)?) )?KV cache size: (?P<tokens>[\d,]+) tokens"
      r"(?:, Maximum concurrency for (?P<per_request_tokens>[\d,]+) tokens per request: (?P<concurrency>[\d.]+)x)?",
      probe=("KV cache size:",), fields=("device", "tokens", "per_request_tokens", "concurrency"),
      feeds="ledger.kv_tokens, ledger.concurrency",
      examples=("GPU KV cache size: 230,528 tokens",
                "CPU KV cache size: 1,048,576 tokens, Maximum concurrency for 1,024 tokens per request: 1024.00x")),
    S("max_concurrency", "max_concurrency", "info", ("Maximum concurrency for",),
      r"Maximum concurrency for (?P<per_request_tokens>[\d,]+) tokens per request: (?P<concurrency>[\d.]+)x",
      probe=("Maximum concurrency for",), fields=("per_request_tokens", "concurrency"),
      feeds="ledger.concurrency (kv-capacity-thin)",
      examples=("Maximum concurrency for 40000 tokens per request: 1.54x",
                "Maximum concurrency for 32,768 tokens per request: 1.30x")),
    S("graph_capturing_finished", "cuda_graph_memory", "info", ("Graph capturing finished",),
      r"Graph capturing finished in (?P<capture_s>[\d.]+) secs?(?:, took (?P<graph_gib>-?[\d.]+) ?GiB)?",
      probe=("Graph capturing finished in",), fields=("capture_s", "graph_gib"), feeds="ledger.graph_gib",
      examples=("Graph capturing finished in 13 secs, took 0.53 GiB", "Graph capturing finished in 5 secs.")),
    S("estimated_cuda_graph", "cuda_graph_memory", "info", ("Estimated CUDA graph memory:",),
      r"Estimated CUDA graph memory: (?P<estimated_gib>[\d.]+) ?GiB", probe=("Estimated CUDA graph memory",),
      fields=("estimated_gib",), feeds="ledger.graph_gib (GPU total from the log)",
      examples=("Estimated CUDA graph memory: 0.36 GiB total",)),
    S("cuda_graph_pool", "cuda_graph_memory", "info", ("CUDA graph pool memory:",),
      r"CUDA graph pool memory: (?P<graph_gib>[\d.]+) GiB \(actual\), (?P<estimated_gib>[\d.]+) GiB \(estimated\)",
      probe=("CUDA graph pool memory",), fields=("graph_gib", "estimated_gib"), feeds="ledger.graph_gib",
      examples=("CUDA graph pool memory: 0.41 GiB (actual), 0.36 GiB (estimated), difference: 0.05 GiB (13.9%).",)),
    S("v1_memory_summary", "memory_summary", "info", ("on startup. Desired GPU memory utilization is",),
      r"\((?P<free_gib>[\d.]+)/(?P<total_gib>[\d.]+) GiB\) on startup\. Desired GPU memory utilization is "
      r"\((?P<utilization>[\d.]+), (?P<requested_gib>[\d.]+) GiB\)\. Actual usage is (?P<consumed_gib>[\d.]+) GiB "
      r"for consumed memory \(weights \+ non-torch\), (?P<activation_gib>[\d.]+) GiB for peak activation, and "
      r"(?P<graph_gib>[\d.]+) GiB for CUDAGraph memory\.(?:.*?--kv-cache-memory=(?P<kv_bytes_fit>\d+).*?"
      r"--kv-cache-memory=(?P<kv_bytes_full>\d+))?(?:.*?kv cache memory in use is (?P<kv_gib>[\d.]+) GiB)?",
      probe=("on startup. Desired GPU memory utilization is",),
      fields=("free_gib", "total_gib", "utilization", "requested_gib", "consumed_gib", "activation_gib",
              "graph_gib", "kv_gib"),
      feeds="ledger (total x utilization, weights+non-torch, activation, graphs, KV)",
      examples=("Free memory on device (78.84/79.18 GiB) on startup. Desired GPU memory utilization is (0.9, "
                "71.26 GiB). Actual usage is 15.5 GiB for consumed memory (weights + non-torch), 1.2 GiB for "
                "peak activation, and 0.5 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with "
                "`--kv-cache-memory=56836534067` (52.93 GiB) to fit into requested memory, or "
                "`--kv-cache-memory=64831472435` (60.38 GiB) to fully utilize gpu memory. Current kv cache "
                "memory in use is 54.06 GiB.",)),
    S("v0_profile_results", "memory_summary", "info", ("Memory profiling results:",), r".", "v0_profile",
      probe=("Memory profiling results",),
      fields=("total_gib", "initial_usage_gib", "peak_torch_gib", "non_torch_gib", "kv_gib", "utilization"),
      feeds="ledger (V0 0.6.3-0.6.5 profile)",
      examples=("Memory profiling results: total_gpu_memory=139.72GiB initial_memory_usage=19.65GiB "
                "peak_torch_memory=16.53GiB memory_usage_post_profile=22.18GiB non_torch_memory=5.68GiB "
                "kv_cache_size=110.52GiB gpu_memory_utilization=0.95",)),
    S("v0_profile_budget", "memory_summary", "info", ("the current vLLM instance can use total_gpu_memory",),
      r".", "v0_profile", probe=("the current vLLM instance can use",), fields=("total_gib", "utilization"),
      feeds="ledger.total_gib, ledger.utilization (V0 0.6.6-0.10)",
      examples=("the current vLLM instance can use total_gpu_memory (15.77GiB) x gpu_memory_utilization (0.90) = 14.20GiB",)),
    S("v0_profile_breakdown", "memory_summary", "info", ("model weights take",), r".", "v0_profile",
      probe=("the rest of the memory reserved for KV Cache is",),
      fields=("weights_gib", "non_torch_gib", "activation_gib", "kv_gib"),
      feeds="ledger (weights, non-torch, activation, KV; a negative KV is no-cache-memory)",
      examples=("model weights take 7.51GiB; non_torch_memory takes 0.39GiB; PyTorch activation peak memory "
                "takes 2.53GiB; the rest of the memory reserved for KV Cache is 3.76GiB.",
                "model weights take 14.99GiB; non_torch_memory takes 0.35GiB; PyTorch activation peak memory "
                "takes 8.07GiB; the rest of the memory reserved for KV Cache is -1.2GiB.")),
    S("v0_gpu_blocks", "kv_cache_blocks", "info", ("GPU blocks:", "cuda blocks:"),
      r"(?:GPU|cuda) blocks: (?P<gpu_blocks>\d+)(?:, # CPU blocks: (?P<cpu_blocks>\d+))?",
      probe=("# GPU blocks: {num_gpu_blocks}", "GPU blocks: %d, # CPU blocks", "blocks: %d, # CPU blocks"),
      fields=("gpu_blocks", "cpu_blocks"),
      feeds="ledger.gpu_blocks (0 blocks: no-cache-memory)",
      examples=("# GPU blocks: 3852, # CPU blocks: 4096", "# GPU blocks: 0, # CPU blocks: 256",
                "# cuda blocks: 0, # CPU blocks: 4096")),
    S("server_starting", "server_starting", "info", ("Starting vLLM API server", "Starting vLLM server"),
      r"Starting vLLM (?:API )?server(?: \d+)? on (?P<url>\S+)",
      probe=("Starting vLLM API server", "Starting vLLM server on"), fields=("url",),
      feeds="StartupFacts.server_url", examples=("Starting vLLM API server 0 on http://0.0.0.0:8000",
                                                 "Starting vLLM server on http://0.0.0.0:8000")),
    S("uvicorn_startup_complete", "startup_complete", "info", ("Application startup complete",),
      origin="uvicorn", library="uvicorn", feeds="StartupFacts.ready", examples=("Application startup complete.",)),
    S("shutdown", "shutdown", "info", ("shutdown triggered", "Application shutdown complete", "INFO:     Shutting down"),
      r"(?:API server: shutdown triggered|Application shutdown complete|^INFO:\s+Shutting down)",
      origin="uvicorn", library="uvicorn / vLLM launcher", probe=("shutdown triggered",),
      feeds="StartupFacts.shut_down", examples=("[shutdown] API server: shutdown triggered", "Application shutdown complete.")),
    S("stats", "stats", "info", ("Avg prompt throughput:",), r"Avg prompt throughput", "stats",
      probe=("Avg prompt throughput",), fields=("prompt_tps", "generation_tps", "running", "waiting",
                                                "swapped", "preemptions", "kv_cache_usage"),
      feeds="kv-full-with-preemptions, queue-growing-kv-full",
      examples=("Engine 000: Avg prompt throughput: 120.5 tokens/s, Avg generation throughput: 300.1 tokens/s, "
                "Running: 12 reqs, Waiting: 3 reqs, GPU KV cache usage: 97.5%, Prefix cache hit rate: 10.0%",
                "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 35.2 tokens/s, Running: 2 reqs, "
                "Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.2%, CPU KV cache usage: 0.0%.")),
    S("v0_preemption", "preemption", "warning", ("is preempted by PreemptionMode",),
      r"Sequence group (?P<group>\S+) is preempted by PreemptionMode\.(?P<mode>\w+).*?"
      r"total_(?:num_)?cumulative_preemption(?:_cnt)?=(?P<total>\d+)",
      probe=("is preempted by %s mode because there is not enough KV cache space",),
      fields=("group", "mode", "total"), feeds="kv-full-with-preemptions (KV budget up, fewer seqs)",
      examples=("Sequence group 0 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV "
                "cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or "
                "tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=1",
                "Sequence group 0 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV "
                "cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or "
                "tensor_parallel_size to provide more KV cache memory. total_cumulative_preemption_cnt=1")),
    S("v0_prompt_exceeds_limit", "prompt_too_long", "warning", ("is too long and exceeds limit of",),
      r"Input prompt \((?P<prompt_tokens>\d+) tokens\) is too long and exceeds limit of (?P<limit>\d+)",
      probe=("is too long and exceeds limit of",), fields=("prompt_tokens", "limit"),
      feeds="prompt-too-long: a request longer than max_model_len (the client's prompt, or raise max_model_len)",
      examples=("Input prompt (5000 tokens) is too long and exceeds limit of 4096",)),
    S("v0_prompt_exceeds_blocks", "prompt_exceeds_kv", "warning", ("exceeds the capacity of block_manager",),
      r"Input prompt \((?P<prompt_tokens>\d+) tokens\)", probe=("exceeds the capacity of block_manager",),
      fields=("prompt_tokens",), feeds="prompt-exceeds-kv: the KV cache cannot hold one prompt (KV budget up)",
      examples=("Input prompt (20000 tokens) is too long and exceeds the capacity of block_manager",
                "Input prompt (20000 tokens) + lookahead slots (0) is too long and exceeds the capacity of "
                "block_manager")),
    S("fp8_kv_cache_info", "kv_cache_dtype", "info", ("Using fp8 data type to store kv cache",),
      probe=("Using fp8 data type to store kv cache",), feeds="StartupFacts: KV cache is fp8 (step 5 already taken)",
      examples=("Using fp8 data type to store kv cache. It reduces the GPU memory footprint and boosts the "
                "performance. Meanwhile, it may cause accuracy drop without a proper scaling factor",)),
    S("ray_placement_group_wait", "ray_placement_wait", "warning", ("Waiting for creating a placement group",),
      r"placement group of specs for (?P<waited_s>\d+) seconds", probe=("Waiting for creating a placement group",),
      fields=("waited_s",), feeds="Ray cannot place the workers: fewer GPUs than TP x PP in the cluster",
      examples=("Waiting for creating a placement group of specs for 10 seconds. specs=[{'GPU': 1.0, 'node:10.0.0.2': "
                "0.001}, {'GPU': 1.0}]. Check `ray status` and `ray list nodes` to see if you have enough "
                "resources, and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP "
                "environment variable specified in each node if you are running on a multi-node.",)),
)  # fmt: skip
