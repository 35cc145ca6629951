"""vLLM version rules the memory model depends on (from vLLM's source, release by release).

- V1 engine is the default from 0.8.0; before it, V0 profiled a whole max_model_len prefill.
- Default gpu_memory_utilization: 0.9 through 0.19, 0.92 from 0.20.0 (vllm/config/cache.py).
- CUDA-graph memory is estimated and taken out of the utilization budget from 0.21.0
  (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1); before, graphs were captured after
  the KV cache was sized and lived in the (1 - utilization) slack.
- `--kv-cache-memory-bytes` exists from 0.10.2.
- Batch defaults (EngineArgs.get_batch_defaults, `vllm serve`): >= 160 GiB: 16384 tokens /
  1024 seqs; >= 70 GiB and not an A100: 8192 / 1024; otherwise 2048 / 256.
"""

from __future__ import annotations

import re

NEWEST_KNOWN = "0.33.0"

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
    return version >= (0, 21, 0)


def has_kv_cache_memory_bytes(version: tuple[int, int, int]) -> bool:
    return version >= (0, 10, 2)


def batch_defaults(
    version: tuple[int, int, int], usable_gib: float, gpu_name: str, max_model_len: int
) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM picks when the user sets neither."""
    if not is_v1(version):
        # V0: chunked prefill only for contexts over 32K (then 512-token chunks), otherwise
        # one whole max_model_len prefill is profiled.
        if max_model_len > 32768:
            return 512, 256
        return max(max_model_len, 2048), 256
    if version < (0, 10, 0):
        tokens, seqs = 2048, 256
    elif usable_gib >= 160:
        tokens, seqs = 16384, 1024
    elif usable_gib >= 70 and "A100" not in gpu_name.upper():
        tokens, seqs = 8192, 1024
    else:
        tokens, seqs = 2048, 256
    return min(tokens, seqs * max_model_len), seqs


def format_version(version: tuple[int, int, int]) -> str:
    return ".".join(str(p) for p in version)
