"""The `serve` command line, with vLLM's own flag names (vLLM 0.33 `EngineArgs` and
`FrontendArgs`), parsed by argparse the way vLLM parses it.

Every flag below is accepted and reported among the "non-default args" like vLLM does; only a
handful change the simulation. A flag vLLM lacks is rejected by argparse itself (exit status
2, "unrecognized arguments"). Independent of headroom.vllm_cmd on purpose.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable

# Flags that take a value: (name, kind). Order follows vLLM's groups (frontend, model, load,
# parallel, cache, scheduler, ...) because "non-default args" prints in namespace order.
_FRONTEND = [
    ("host", "str"),
    ("port", "int"),
    ("uds", "str"),
    ("uvicorn-log-level", "str"),
    ("allowed-origins", "json"),
    ("api-key", "list"),
    ("lora-modules", "list"),
    ("chat-template", "str"),
    ("chat-template-content-format", "str"),
    ("response-role", "str"),
    ("ssl-keyfile", "str"),
    ("ssl-certfile", "str"),
    ("root-path", "str"),
    ("middleware", "list"),
    ("tool-call-parser", "str"),
    ("tool-parser-plugin", "str"),
    ("reasoning-parser", "str"),
    ("max-log-len", "int"),
    ("api-server-count", "int"),
    ("h11-max-incomplete-event-size", "int"),
    ("h11-max-header-count", "int"),
    ("allowed-local-media-path", "str"),
    ("config", "str"),
    ("shutdown-timeout", "int"),
]
_FRONTEND_BOOL = [
    "disable-uvicorn-access-log",
    "allow-credentials",
    "enable-auto-tool-choice",
    "disable-frontend-multiprocessing",
    "enable-request-id-headers",
    "disable-fastapi-docs",
    "enable-prompt-tokens-details",
    "enable-server-load-tracking",
    "enable-force-include-usage",
    "enable-tokenizer-info-endpoint",
    "enable-log-outputs",
    "enable-log-requests",
    "return-tokens-as-token-ids",
    "disable-log-requests",
]
_ENGINE = [
    ("model", "str"),
    ("runner", "str"),
    ("convert", "str"),
    ("tokenizer", "str"),
    ("tokenizer-mode", "str"),
    ("dtype", "str"),
    ("seed", "int"),
    ("hf-config-path", "str"),
    ("revision", "str"),
    ("code-revision", "str"),
    ("tokenizer-revision", "str"),
    ("max-model-len", "hint_len"),
    ("quantization", "str"),
    ("max-logprobs", "int"),
    ("logprobs-mode", "str"),
    ("served-model-name", "list"),
    ("config-format", "str"),
    ("hf-token", "str"),
    ("hf-overrides", "json"),
    ("override-generation-config", "json"),
    ("generation-config", "str"),
    ("model-impl", "str"),
    ("override-attention-dtype", "str"),
    ("logits-processors", "list"),
    ("io-processor-plugin", "str"),
    ("pooler-config", "json"),
    ("load-format", "str"),
    ("download-dir", "str"),
    ("safetensors-load-strategy", "str"),
    ("model-loader-extra-config", "json"),
    ("ignore-patterns", "list"),
    ("distributed-executor-backend", "str"),
    ("pipeline-parallel-size", "int"),
    ("tensor-parallel-size", "int"),
    ("decode-context-parallel-size", "int"),
    ("data-parallel-size", "int"),
    ("data-parallel-rank", "int"),
    ("data-parallel-size-local", "int"),
    ("data-parallel-address", "str"),
    ("data-parallel-rpc-port", "int"),
    ("data-parallel-backend", "str"),
    ("nnodes", "int"),
    ("node-rank", "int"),
    ("master-addr", "str"),
    ("master-port", "int"),
    ("max-parallel-loading-workers", "int"),
    ("distributed-timeout-seconds", "int"),
    ("cpu-distributed-timeout-seconds", "int"),
    ("block-size", "int"),
    ("gpu-memory-utilization", "float"),
    ("kv-cache-memory-bytes", "hint"),
    ("kv-cache-dtype", "str"),
    ("num-gpu-blocks-override", "int"),
    ("prefix-caching-hash-algo", "str"),
    ("cpu-offload-gb", "float"),
    ("mamba-cache-dtype", "str"),
    ("mamba-ssm-cache-dtype", "str"),
    ("kv-offloading-size", "float"),
    ("kv-offloading-backend", "str"),
    ("limit-mm-per-prompt", "json"),
    ("mm-processor-kwargs", "json"),
    ("max-lora-rank", "int"),
    ("max-loras", "int"),
    ("max-cpu-loras", "int"),
    ("lora-dtype", "str"),
    ("max-num-batched-tokens", "hint"),
    ("max-num-seqs", "int"),
    ("max-num-partial-prefills", "int"),
    ("long-prefill-token-threshold", "int"),
    ("scheduling-policy", "str"),
    ("scheduler-cls", "str"),
    ("performance-mode", "str"),
    ("speculative-config", "json"),
    ("kv-transfer-config", "json"),
    ("kv-events-config", "json"),
    ("compilation-config", "json"),
    ("-O", "str"),
    ("additional-config", "json"),
    ("structured-outputs-config", "json"),
    ("reasoning-parser-plugin", "str"),
    ("show-hidden-metrics-for-version", "str"),
    ("otlp-traces-endpoint", "str"),
    ("collect-detailed-traces", "list"),
    ("kv-cache-metrics-sample", "float"),
    ("custom-histogram-buckets", "json"),
    ("worker-cls", "str"),
    ("worker-extension-cls", "str"),
    ("eplb-config", "json"),
    ("data-parallel-start-rank", "int"),
    ("max-long-partial-prefills", "int"),
    ("mm-encoder-tp-mode", "str"),
    ("max-cudagraph-capture-size", "int"),
    ("cuda-graph-sizes", "list"),
]
_ENGINE_BOOL = [
    "skip-tokenizer-init",
    "enable-prompt-embeds",
    "trust-remote-code",
    "enforce-eager",
    "disable-sliding-window",
    "disable-cascade-attn",
    "enable-sleep-mode",
    "disable-custom-all-reduce",
    "enable-expert-parallel",
    "enable-eplb",
    "enable-dbo",
    "ray-workers-use-nsight",
    "kv-sharing-fast-prefill",
    "enable-lora",
    "fully-sharded-loras",
    "enable-chunked-prefill",
    "disable-chunked-prefill",
    "enable-prefix-caching",
    "disable-prefix-caching",
    "disable-log-stats",
    "aggregate-engine-logging",
    "kv-cache-metrics",
    "cudagraph-metrics",
    "enable-mfu-metrics",
    "enable-logging-iteration-details",
    "async-scheduling",
    "disable-hybrid-kv-cache-manager",
    "headless",
    "data-parallel-hybrid-lb",
    "data-parallel-external-lb",
    "enable-scale-out",
]

HUMAN_UNITS = {
    "k": 10**3,
    "m": 10**6,
    "g": 10**9,
    "t": 10**12,
    "K": 2**10,
    "M": 2**20,
    "G": 2**30,
    "T": 2**40,
}


def human_readable_int(text: str) -> int:
    """vLLM's human_readable_int: 10G = 10 GiB, 10g = 1e10 bytes, plain digits as is."""
    text = text.strip()
    try:
        if text and text[-1] in HUMAN_UNITS:
            number = float(text[:-1])
            if number != number or number in (float("inf"), float("-inf")):
                raise ValueError(text)
            return int(number * HUMAN_UNITS[text[-1]])
        return int(text)
    except OverflowError:
        raise ValueError(text) from None


def _max_model_len(text: str) -> int:
    return -1 if text.strip().lower() == "auto" else human_readable_int(text)


_TYPES: dict[str, Callable[[str], object]] = {
    "int": int,
    "float": float,
    "str": str,
    "hint": human_readable_int,
    "hint_len": _max_model_len,
    "json": json.loads,
}


def build_parser() -> argparse.ArgumentParser:
    # prog names vLLM's own command so usage and error lines read like vLLM's.
    parser = argparse.ArgumentParser(prog="vllm serve", usage="vllm serve [model_tag] [options]")
    parser.add_argument("model_tag", nargs="?", default=None)
    for name, kind in _FRONTEND + _ENGINE:
        flags = [name] if name.startswith("-") and not name.startswith("--") else ["--" + name]
        dest = name.lstrip("-").replace("-", "_")
        if name == "tensor-parallel-size":
            flags.append("-tp")
        if name == "pipeline-parallel-size":
            flags.append("-pp")
        if name == "data-parallel-size":
            flags.append("-dp")
        if name == "gpu-memory-utilization":
            flags.append("--device-memory-utilization")
        if kind == "list":
            parser.add_argument(*flags, dest=dest, nargs="+", default=None)
        else:
            parser.add_argument(*flags, dest=dest, type=_TYPES[kind], default=None)
    for name in _FRONTEND_BOOL + _ENGINE_BOOL:
        parser.add_argument(
            "--" + name,
            dest=name.replace("-", "_"),
            action=argparse.BooleanOptionalAction,
            default=None,
        )
    return parser


def parse_serve_args(argv: list[str]) -> argparse.Namespace:
    """Parse like `vllm serve`; argparse exits with status 2 on an unknown flag."""
    ns = build_parser().parse_args(argv)
    if ns.model_tag and not ns.model:
        ns.model = ns.model_tag
    if not ns.model:
        ns.model = "Qwen/Qwen3-0.6B"  # vLLM's default model
    return ns


def non_default_args(ns: argparse.Namespace) -> dict[str, object]:
    """What vLLM prints after "non-default args:" (secrets included as given, like vLLM)."""
    out: dict[str, object] = {}
    for key, value in vars(ns).items():
        if key == "model_tag" or value is None:
            continue
        out[key] = value
    # vLLM lists frontend args before engine args; model comes first among the engine ones.
    return out


def bool_flag(ns: argparse.Namespace, name: str, default: bool = False) -> bool:
    value = getattr(ns, name, None)
    return default if value is None else bool(value)
