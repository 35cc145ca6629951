"""Words that name Hugging Face's layer placement (device_map, max_memory) for vLLM.

Transformers/Accelerate place a model's layers over GPUs with `device_map="auto"` and cap each
GPU with `max_memory`; vLLM has neither (no such engine arg in any release): it splits a model
over GPUs with tensor_parallel_size, or pipeline_parallel_size where the GPU count does not
divide the heads. Threads: "No `device_map` option." (vllm-project/vllm#196, answered with
tensor_parallel_size), "--tensor-parallel-size vs device_map?" / "Does vllm support
device_map?" (vllm#1752), "Can vllm use a method similar to device_map in transformers ?"
(vllm#6601, answered `--pipeline-parallel-size 3` on three 4090s), "swift在部署的时候
--max_memory没生效" (modelscope/ms-swift#3363: "max_memory 这个参数只对infer_backend pt生效",
"vllm请使用tensor_parallel_size"). Never raises (the text is untrusted).
"""

from __future__ import annotations

import re

__all__ = ["placement_named"]

_MAX_CHARS = 2000
# `device_map`, `device-map`, `max_memory`, `--max_memory`; not `max_memory_usage` or a
# longer identifier around them.
_PLACEMENT = re.compile(r"(?<![\w.])-{0,2}(?:device[_-]map|max[_-]memory)(?![\w-])", re.I | re.A)


def placement_named(text: object) -> bool:
    """The words name device_map or max_memory (Hugging Face's placement options)."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        return bool(_PLACEMENT.search(text[:_MAX_CHARS]))
    except Exception:  # a reader of untrusted text must not stop the doctor
        return False
