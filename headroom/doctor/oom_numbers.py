"""The numbers in PyTorch's CUDA out-of-memory message, and whose memory filled the GPU.

PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp) has printed three wordings;
each one is in tests/fixtures/incidents (threads' pastes) and tests/doctor/test_oom_numbers.py:

- up to 2.0: "Tried to allocate X (GPU 0; T total capacity; A already allocated; F free;
  [L allowed; ]R reserved in total by PyTorch)";
- 2.1: "Tried to allocate X. GPU 0 has a total capacty of T of which F is free. Process P has
  U memory in use. [...] Of the allocated memory A is allocated by PyTorch, and R is reserved
  by PyTorch but unallocated." ("capacty" sic). Every process on the GPU is listed, this one
  too when it cannot name itself (a container's PID namespace);
- 2.2+: "capacity", and "Including non-PyTorch memory, this process has U memory in use."
  after the other processes' lines; "with P allocated in private pools (e.g., CUDA Graphs)".
  ROCm prints the same with "HIP out of memory".

What the GPU holds beyond this process is another job's: T - F - U (2.2+), T - F - the sum of
the listed processes (2.1: processes the container cannot see), or, with no process named,
T - F - PyTorch's reserved memory less an allowance for this process's own non-PyTorch memory
(CUDA context, NCCL and cuBLAS buffers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from headroom.doctor.actions import MAX_UTILIZATION
from headroom.doctor.rules_preflight import sizing
from headroom.probes.vllm_log_fields import to_gib

_SIZE = r"([\d.]+) ?(bytes|[KMGT]iB)"
_TRIED = re.compile(rf"Tried to allocate {_SIZE}")
_NEW = re.compile(rf"total capac\w* of {_SIZE} of which {_SIZE} is free")
_OLD = re.compile(
    rf"\(GPU \d+; {_SIZE} total capacity; {_SIZE} already allocated; {_SIZE} free;"
    rf"(?: {_SIZE} allowed;)? {_SIZE} reserved in total by PyTorch\)"
)
_PROCESS = re.compile(rf"Process \d+ has {_SIZE} memory in use")
_THIS = re.compile(rf"this process has {_SIZE} memory in use")
_ALLOCATED = re.compile(rf"Of the allocated memory {_SIZE} is allocated by PyTorch")
_UNALLOCATED = re.compile(rf"and {_SIZE} is reserved by PyTorch but unallocated")

# Memory a listed total misses by rounding (two decimals per figure) and the driver's own.
SLOP_GIB = 0.5
# This process's memory outside PyTorch's allocator when the message does not say it: the
# CUDA context (~0.3-0.6 GiB), NCCL and cuBLAS workspaces.
NON_TORCH_GIB = 2.0
# What vLLM needs at the least beside the weights: its CUDA context, the profile's activations
# and a few KV blocks. With the weights unknown, the smallest models served (0.5-1B
# parameters, 1-2 GiB at 16 bits) need about this in all.
MIN_ENGINE_GIB = 2.0


@dataclass(frozen=True)
class OomNumbers:
    """What one OOM message says, in GiB; None = the message (or its cut) does not say."""

    tried: float | None = None
    total: float | None = None
    free: float | None = None
    this_process: float | None = None  # "this process has" (2.2+)
    listed: tuple[float, ...] = ()  # every "Process P has U" line
    torch_allocated: float | None = None
    torch_reserved: float | None = None  # allocated + reserved-but-unallocated (all of it)

    @property
    def foreign(self) -> float | None:
        """GiB on this GPU that are not this process's; None when the message cannot say."""
        if self.total is None or self.free is None:
            return self._listed_others()
        used = self.total - self.free
        if self.this_process is not None:
            # 2.2+: the listed processes are the others; anything unlisted is another
            # container's process. PyTorch reads "this process has" from NVML by its pid; in a
            # container NVML sees other pids and it says "0 bytes" beside GiB "allocated by
            # PyTorch" (rhymes-ai/Aria#24): this process holds at least what PyTorch reserved.
            own = max(self.this_process, self.torch_reserved or 0.0)
            unlisted = used - own - sum(self.listed)
            return sum(self.listed) + max(unlisted - SLOP_GIB, 0.0)
        if self.listed:
            # 2.1 lists this process among the others: the largest is taken to be it.
            unlisted = used - sum(self.listed)
            return (self._listed_others() or 0.0) + max(unlisted - SLOP_GIB, 0.0)
        if self.torch_reserved is not None:
            return max(used - self.torch_reserved - NON_TORCH_GIB, 0.0)
        return None

    @property
    def foreign_named(self) -> bool:
        """Whether the others' memory is read from processes PyTorch lists or from this
        process's own total, not estimated from PyTorch's reserved memory alone."""
        return self.this_process is not None or bool(self.listed)

    def _listed_others(self) -> float | None:
        if not self.listed:
            return None
        if self.this_process is not None:
            return sum(self.listed)
        return sum(self.listed) - max(self.listed)


def _gib(match: re.Match[str] | None, group: int = 1) -> float | None:
    if match is None:
        return None
    return to_gib(match.group(group), match.group(group + 1))


def parse_oom(text: str) -> OomNumbers:
    """The numbers of PyTorch's OOM message in `text` (any wording above, or a cut of one)."""
    total = free = reserved = allocated = None
    new = _NEW.search(text)
    if new:
        total, free = _gib(new, 1), _gib(new, 3)
    old = _OLD.search(text)
    if old:
        total, allocated, free = _gib(old, 1), _gib(old, 3), _gib(old, 5)
        reserved = _gib(old, 9)
    listed = tuple(
        g for number, unit in _PROCESS.findall(text) if (g := to_gib(number, unit)) is not None
    )
    a, r = _gib(_ALLOCATED.search(text)), _gib(_UNALLOCATED.search(text))
    if a is not None:
        allocated = a
        reserved = a + r if r is not None else None
    return OomNumbers(
        tried=_gib(_TRIED.search(text)),
        total=total,
        free=free,
        this_process=_gib(_THIS.search(text)),
        listed=listed,
        torch_allocated=allocated,
        torch_reserved=reserved,
    )


def own_memory(numbers: OomNumbers, utilization: float, known: bool = True) -> list[str]:
    """This process's memory against vLLM's budget (total x gpu_memory_utilization), in
    words: above the budget, what filled the GPU is what vLLM does not size from it (the
    weights and the start-up profile before the KV cache exists, CUDA graphs outside it).
    `known`: whether the utilization is the one in use or only the release's default."""
    held, who = numbers.this_process, "this process holds"
    if held is None or (numbers.torch_reserved or 0.0) > held:  # None, or NVML's pid miss
        held, who = numbers.torch_reserved, "PyTorch in this process holds"
    if held is None or not numbers.total:
        return []
    budget = numbers.total * utilization
    side = "above" if held > budget else "within"
    said = "" if known else ", if gpu_memory_utilization was left at its default"
    return [
        f"{who} {held:.2f} GiB, {side} vLLM's budget of {budget:.2f} GiB "
        f"({utilization:g} x {numbers.total:.2f} GiB{said})"
    ]


def foreign_gib(line: str) -> float | None:
    """GiB other processes hold on the GPU the OOM message names (see OomNumbers.foreign)."""
    return parse_oom(line).foreign


def weights_per_gpu(ctx) -> float | None:
    """The weights' share per GPU at the command's TP x PP (config or name), if known."""
    sized = sizing(ctx)
    if sized is None:
        return None
    knobs = ctx.knobs
    return sized.per_gpu(knobs.tp, knobs.pp, knobs.quantization)


def too_little_left(ctx, left_gib: float, total_gib: float | None = None) -> str | None:
    """Why the memory other processes leave on a GPU cannot hold this model at any
    utilization (the weights' share per GPU, from the config or the name, plus the engine's
    least); None when it can, when nothing says what the model needs, or when the weights
    alone exceed the whole GPU (then freeing it would not help: step 1's rules answer)."""
    weights = weights_per_gpu(ctx)
    if weights is not None and total_gib and weights >= total_gib * MAX_UTILIZATION:
        return None
    if weights is not None:
        need, what = weights + MIN_ENGINE_GIB, f"{weights:.2f} GiB of weights per GPU + "
    else:
        need, what = MIN_ENGINE_GIB, "the smallest model's weights, "
    if left_gib >= need:
        return None
    return (
        f"the others leave {left_gib:.2f} GiB, less than {what}a CUDA context, activations "
        f"and a KV cache ({need:.2f} GiB): no utilization fits; free the GPU (or use another)"
    )
