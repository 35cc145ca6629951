"""The table of vLLM server flags: which take a value, of what type, and which are booleans.

Taken from vLLM 0.32.0's own argument parser (`make_arg_parser(FlexibleArgumentParser())` in
`vllm.entrypoints.launchers.cli_args`, dumped action by action), plus flags of older releases
that users still have in their scripts. Knowing the kind of each flag is what lets
`headroom.vllm_cmd` tell a flag's value from the next flag or from a positional argument.

Row format: ``KIND TYPE OPTION [ALIASES...]``
  - KIND ``value``: takes a value. TYPE is ``int``, ``float``, ``str``, ``json`` (a JSON
    object or list), ``json_or_str`` (JSON when it parses, else a string), ``hint``
    (vLLM's human_readable_int: ``16k``, ``10G``) or ``hint_auto`` (hint, or ``auto``/-1).
    A trailing ``+`` means one or more values (argparse ``nargs="+"``), ``?`` an optional one.
  - KIND ``bool``: ``--x`` / ``--no-x`` (argparse BooleanOptionalAction; 0.33's
    EnableDisableAction adds ``--disable-x`` for ``--enable-x``). TYPE is vLLM's default
    (``False``, ``True`` or ``None`` = decided from the model/hardware): it tells whether
    turning the knob off can be done by removing the flag.
  - KIND ``flag``: store_true, no ``--no-`` form.
  - KIND ``append``: may be repeated, values accumulate.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class FlagSpec:
    """How one vLLM flag is spelled and what it takes."""

    dest: str  # engine-arg name with underscores, e.g. "tensor_parallel_size"
    kind: str  # "value" | "bool" | "flag" | "append"
    type: str  # value type (see module docstring); "bool" for bool/flag kinds
    nargs: str | None  # None, "+" or "?"
    option: str  # canonical long option, e.g. "--tensor-parallel-size"
    aliases: tuple[str, ...]  # other spellings, e.g. ("-tp",)
    default: bool | None = None  # for kind "bool": vLLM's default


# vLLM 0.32.0, in parser order.
_VLLM_0_32 = """
flag - --headless
value int --api-server-count -asc
value str --config
flag - --grpc
value str+ --lora-modules
value str --chat-template
value str --chat-template-content-format
bool False --trust-request-chat-template
bool False --trust-request-mm-kwargs
value json --default-chat-template-kwargs
value str --response-role
bool False --return-tokens-as-token-ids
bool False --enable-auto-tool-choice
bool False --exclude-tools-when-tool-choice-none
value str --tool-call-parser
value str --tool-parser-plugin
value str --tool-strict-level
value str --tool-server
value int --max-log-len
bool False --enable-prompt-tokens-details
bool False --enable-per-request-metrics
bool False --enable-server-load-tracking
bool False --enable-force-include-usage
value int --sse-keep-alive-interval
bool False --enable-tokenizer-info-endpoint
bool False --enable-log-outputs
bool True --enable-log-deltas
bool True --cohere-is-reasoning-model
value str --cohere-format
value str --anthropic-disabled-thinking-effort
bool False --log-error-stack
bool False --tokens-only
bool False --enable-scale-out
value str --fingerprint-mode
value str --fingerprint-value
value str --host
value int --port
value int --grpc-port
value int --data-parallel-supervisor-port
value float --dp-supervisor-probe-interval-s
value float --dp-supervisor-probe-timeout-s
value int --dp-supervisor-probe-failure-threshold
value str --uds
value str --uvicorn-log-level
bool False --disable-uvicorn-access-log
value str --disable-access-log-for-endpoints
bool False --allow-credentials
value json --allowed-origins
value json --allowed-methods
value json --allowed-headers
value str+ --api-key
value str --ssl-keyfile
value str --ssl-certfile
value str --ssl-ca-certs
bool False --enable-ssl-refresh
value int --ssl-cert-reqs
value str --ssl-ciphers
value str --root-path
append str --middleware
bool False --enable-request-id-headers
bool False --disable-fastapi-docs
value int --h11-max-incomplete-event-size
value int --h11-max-header-count
bool False --enable-offline-docs
bool True --enable-flash-late-interaction
value str --model
value str --runner
value str --convert
value str --tokenizer
value str --tokenizer-mode
bool False --trust-remote-code
value str --dtype
value int --seed
value str --hf-config-path
value str --allowed-local-media-path
value str+ --allowed-media-domains
value str --revision
value str --code-revision
value str --tokenizer-revision
value hint_auto --max-model-len
value str --quantization -q
value json --quantization-config
bool False --allow-deprecated-quantization
bool False --enforce-eager
bool False --enable-return-routed-experts
bool False --return-sampling-mask
value int --max-logprobs
value str --logprobs-mode
bool False --use-fp64-gumbel
bool False --enable-trace-replay
bool False --disable-sliding-window
bool None --disable-cascade-attn
bool False --skip-tokenizer-init
bool False --enable-prompt-embeds
value str+ --served-model-name
value str --config-format
value str? --hf-token
value json_or_str --hf-overrides
value json --model-class-overrides
value json --pooler-config
value str --generation-config
value json --override-generation-config
bool False --enable-sleep-mode
bool False --sleep-mode-offload-cudagraph
value str+ --sleep-preserve-parameter-names
bool False --enable-cumem-allocator
bool False --enable-nccl-comm-suspend
value str --model-impl
value str+ --logits-processors
value str --io-processor-plugin
value int --renderer-num-workers
value str --load-format
value str --download-dir
value str --safetensors-load-strategy
value int --safetensors-prefetch-num-threads
value hint --safetensors-prefetch-block-size
value json_or_str --model-loader-extra-config
value str+ --ignore-patterns
bool True --use-tqdm-on-load
value json_or_str --pt-load-map-location
value str --attention-backend
value str --mamba-backend
value str --mamba-ssu-algorithm
bool False --enable-mamba-cache-stochastic-rounding
value int --mamba-cache-philox-rounds
value str --reasoning-parser
value str --reasoning-parser-plugin
value str --distributed-executor-backend
value int --pipeline-parallel-size -pp
value str --master-addr
value int --master-port
value int --nnodes -n
value int --node-rank -r
value int --distributed-timeout-seconds
value int --cpu-distributed-timeout-seconds
bool False --numa-bind
value int+ --numa-bind-nodes
value str+ --numa-bind-cpus
value str --device-ids
value int --tensor-parallel-size -tp
value int --decode-context-parallel-size -dcp
value str --dcp-comm-backend
bool None --dcp-q-replicate
value int --dcp-kv-cache-interleave-size
value int --cp-kv-cache-interleave-size
value int --prefill-context-parallel-size -pcp
value int --data-parallel-size -dp
value int --data-parallel-rank -dpn
value int --data-parallel-start-rank -dpr
value int --data-parallel-size-local -dpl
value str --data-parallel-address -dpa
value int --data-parallel-rpc-port -dpp
value str --data-parallel-backend -dpb
bool False --data-parallel-hybrid-lb -dph
bool False --data-parallel-external-lb -dpe
flag - --data-parallel-multi-port-external-lb -dpm
bool False --enable-hc-sp
bool False --enable-expert-parallel -ep
bool None --enable-batch-sharded-sampling
bool False --enable-ep-weight-filter
value str --all2all-backend
bool False --enable-dbo
bool False --enable-shm-tensor-arena
value int --ubatch-size
bool False --enable-elastic-ep
value int --elastic-ep-max-dp-size
value int --dbo-decode-token-threshold
value int --dp-sync-interval
value int --dbo-prefill-token-threshold
bool None --disable-nccl-for-dp-synchronization
bool False --enable-eplb
value json --eplb-config
value str --expert-placement-strategy
value int --max-parallel-loading-workers
bool False --ray-workers-use-nsight
bool False --disable-custom-all-reduce
value str --worker-cls
value str --worker-extension-cls
bool False --enable-fault-tolerance
value json --fault-tolerance-config
value int --block-size
value float --gpu-memory-utilization --device-memory-utilization
value hint --kv-cache-memory-bytes
value str --kv-cache-dtype
value int --num-gpu-blocks-override
bool None --enable-prefix-caching
value str --prefix-caching-hash-algo
value int --prefix-cache-retention-interval
value str+ --kv-cache-dtype-skip-layers
bool False --kv-sharing-fast-prefill
bool True --swa-bounded-replay
value str --mamba-cache-dtype
value str --mamba-ssm-cache-dtype
value int --mamba-block-size
value int --prefix-match-unit
value str --mamba-cache-mode
bool False --enable-mamba-shared-prefix-checkpoint
value int --replayssm-buffer-len
bool False --use-replayssm
value float --kv-offloading-size
value str --kv-offloading-backend
value str --offload-backend
value float --cpu-offload-gb
value str+ --cpu-offload-params
value int --offload-group-size
value int --offload-num-in-group
value int --offload-prefetch-step
value str+ --offload-params
bool False --language-model-only
value json --limit-mm-per-prompt
bool False --enable-mm-embeds
value json --media-io-kwargs
value json --mm-processor-kwargs
value float --mm-processor-cache-gb
value str --mm-processor-cache-type
value str --mm-hasher-algorithm
value int --mm-shm-cache-max-object-size-mb
bool False --mm-encoder-only
value str --mm-encoder-tp-mode
value str --mm-encoder-attn-backend
value str --mm-encoder-attn-dtype
value str --mm-encoder-fp8-scale-path
value str --mm-encoder-fp8-scale-save-path
value float --mm-encoder-fp8-scale-save-margin
bool False --interleave-mm-strings
bool False --skip-mm-profiling
value float --video-pruning-rate
value str --video-pruning-method
value str --mm-tensor-ipc
value str --mm-processor-device
value float --mm-ipc-gpu-memory-gb
bool None --mm-device-do-normalize
bool None --enable-lora
value int --max-loras
value int --max-lora-rank
value str --lora-dtype
bool False --enable-tower-connector-lora
value int --max-cpu-loras
bool False --fully-sharded-loras
value str+ --lora-target-modules
value json --default-mm-loras
bool False --specialize-active-lora
bool False --enable-mixed-moe-lora-format
bool False --enable-moe-shared-loras
value int --max-lora-cls-labels
value json --logging-config
value str --log-level
value str --log-config-file
value str --show-hidden-metrics-for-version
value str --otlp-traces-endpoint
value str+ --collect-detailed-traces
value str --per-request-spec-decode-metrics
bool False --kv-cache-metrics
value float --kv-cache-metrics-sample
value json --custom-histogram-buckets
bool False --cudagraph-metrics
bool False --enable-layerwise-nvtx-tracing
bool False --enable-mfu-metrics
bool False --enable-logging-iteration-details
value str --jit-monitor-mode
bool False --jit-monitor-verbose
value hint --max-num-batched-tokens
value hint --max-num-scheduled-tokens
value int --max-num-seqs
value int --max-num-active-seqs
value int --max-num-queued-reqs
value hint --max-num-queued-tokens
value int --long-prefill-token-threshold
bool False --long-prefill-token-threshold-adaptive
value str --scheduling-policy
bool None --enable-chunked-prefill
bool False --disable-chunked-mm-input
value str --scheduler-cls
bool True --scheduler-reserve-full-isl
value float --watermark
value int --prefill-schedule-interval
bool None --disable-hybrid-kv-cache-manager
bool None --async-scheduling
value int --stream-interval
value int+ --cudagraph-capture-sizes
value int --max-cudagraph-capture-size
value json --ir-op-priority
bool None --enable-flashinfer-autotune
value str --moe-backend
value str --linear-backend
value str --sparse-indexer-topk-backend
value json --speculative-config -sc
value str --spec-method
value str --spec-model
value int --spec-tokens
value json --watermark-config
value json --diffusion-config -dc
value json --kv-transfer-config
value json --kv-events-config
value json --ec-transfer-config
value json --ec-manager-config
value json --compilation-config -cc
value json --attention-config -ac
value json --engram-config
value json --reasoning-config
value json --kernel-config
value json_or_str --additional-config
value json --structured-outputs-config
value json --aux-output-config
value json --profiler-config
value str --optimization-level
value str --performance-mode
value json --weight-transfer-config
flag - --disable-log-stats
flag - --aggregate-engine-logging
bool False --fail-on-environ-validation
value int --shutdown-timeout
value str --gdn-prefill-backend
value str --kda-prefill-backend
value str --kda-decode-backend
bool False --enable-log-requests
"""

# Flags of older releases (removed by 0.32): still accepted here so that old launch scripts
# parse, and so that the doctor can point at them.
_OLDER = """
value float --swap-space
flag - --disable-log-requests
value int --num-scheduler-steps
value int --max-seq-len-to-capture
value str --task
value str --guided-decoding-backend
value int --tokenizer-pool-size
flag - --disable-frontend-multiprocessing
value str --preemption-mode
flag - --enable-reasoning
flag - --use-v2-block-manager
flag - --disable-async-output-proc
flag - --engine-use-ray
flag - --worker-use-ray
"""


def _build() -> tuple[dict[str, FlagSpec], dict[str, FlagSpec]]:
    by_option: dict[str, FlagSpec] = {}
    by_dest: dict[str, FlagSpec] = {}
    for row in (_VLLM_0_32 + _OLDER).split("\n"):
        if not row.strip():
            continue
        kind, type_, option, *aliases = row.split()
        nargs = None
        default: bool | None = None
        if kind == "bool":
            default = {"True": True, "False": False, "None": None}[type_]
            type_ = "bool"
        elif kind == "flag":
            type_ = "bool"
        elif type_[-1] in "+?":
            type_, nargs = type_[:-1], type_[-1]
        dest = option.lstrip("-").replace("-", "_")
        spec = FlagSpec(dest, kind, type_, nargs, option, tuple(aliases), default)
        if dest in by_dest:  # a newer release's spelling wins over an older one
            continue
        by_dest[dest] = spec
        for name in (option, *aliases):
            by_option[name] = spec
    return by_option, by_dest


FLAGS_BY_OPTION, FLAGS_BY_DEST = _build()


def lookup_option(option: str) -> FlagSpec | None:
    """The spec for an option string as typed (``--max_model_len`` and ``-tp`` work too).

    Like argparse (vLLM does not turn abbreviations off), an unambiguous prefix of a long
    option names it: vLLM's own start-up summary suggests ``--kv-cache-memory=N``, which is
    ``--kv-cache-memory-bytes``. An ambiguous prefix names nothing.
    """
    spec = FLAGS_BY_OPTION.get(option)
    if spec is None and option.startswith("--") and len(option) > 2:
        long = "--" + option[2:].replace("_", "-")
        spec = FLAGS_BY_OPTION.get(long) or _by_prefix(long)
    return spec


@lru_cache(maxsize=1024)
def _by_prefix(long: str) -> FlagSpec | None:
    found = {spec.dest: spec for name, spec in FLAGS_BY_OPTION.items() if name.startswith(long)}
    return next(iter(found.values())) if len(found) == 1 else None


def lookup_dest(name: str) -> FlagSpec | None:
    """The spec for an engine-arg name (``tensor_parallel_size``; dashes are accepted)."""
    return FLAGS_BY_DEST.get(name.replace("-", "_"))
