"""How much memory the GPU has, read from a vLLM start-up log when no GPU spec is given.

Exact when vLLM prints the total:
- V1 (gpu_worker.py, after start-up): "Free memory on device (free/total GiB) on startup.
  Desired GPU memory utilization is (util, requested GiB). ..."
- V1 refusal (worker/utils.py): "Free memory on device (free/total GiB) on startup is less
  than desired GPU memory utilization (util, requested GiB)."
- V0: "Memory profiling results: total_gpu_memory=23.58GiB ..."

Otherwise a lower bound, from what must have fitted in the budget (gpu_worker.py
determine_available_memory: available KV = total x utilization - (weights + peak activation
+ non-torch) - CUDA-graph estimate), so total >= (weights + CUDA graphs + available KV) /
utilization (the available KV alone, without a weights line, is a lower floor still); and
from the CUDA-graph line ("The current --gpu-memory-utilization=A is
equivalent to --gpu-memory-utilization=B without CUDA graph memory profiling": B = A -
graphs / total), so total ~ graphs / (A - B), taken at the low end of the printed rounding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from headroom.probes.memory_ledger import MemoryLedger

_NUM = r"(-?[\d.]+)"
_EXACT = (
    re.compile(r"Free memory on device \(" + _NUM + r"/" + _NUM + r" ?GiB\)"),
    re.compile(r"total_gpu_memory=" + _NUM + r" ?GiB"),
)
_GRAPH_EST = re.compile(r"Estimated CUDA graph memory: " + _NUM + r" ?GiB")
_EQUIVALENT = re.compile(
    r"--gpu-memory-utilization=" + _NUM + r" is equivalent to --gpu-memory-utilization="
    + _NUM + r" without CUDA graph"
)  # fmt: skip
_AVAILABLE = (
    re.compile(r"Available KV cache memory: " + _NUM + r" ?GiB"),
    re.compile(r"available KV cache memory \(" + _NUM + r" ?GiB\)"),
)
_WEIGHTS = re.compile(
    r"(?:Model loading took|Loading model weights took) " + _NUM + r" ?(?:GiB|GB)"
)


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _last(pattern: re.Pattern, lines: list[str], group: int = 1) -> float | None:
    for line in reversed(lines):
        match = pattern.search(line)
        if match and (value := _num(match.group(group))) is not None:
            return value
    return None


def gpu_total_from_log(
    lines: Iterable[str],
    utilization: float | None,
    weights_gib: float | None = None,
    ledger: MemoryLedger | None = None,
) -> tuple[float, bool] | None:
    """(total GiB per GPU, exact) from the log, or None when it says nothing usable. The
    memory ledger's total (any wording that printed it, e.g. V0's "total_gpu_memory
    (15.77GiB) x gpu_memory_utilization") is exact too."""
    if ledger is not None and ledger.total_gib and ledger.total_gib > 0:
        return ledger.total_gib, True
    lines = [str(x) for x in lines]
    for pattern in _EXACT:
        group = 2 if pattern.groups == 2 else 1
        total = _last(pattern, lines, group)
        if total and total > 0:
            return total, True
    floors: list[float] = []
    graphs = _last(_GRAPH_EST, lines) or 0.0
    for line in reversed(lines):
        match = _EQUIVALENT.search(line)
        if not match:
            continue
        current, without = _num(match.group(1)), _num(match.group(2))
        if current is not None and without is not None and graphs > 0.005:
            # printed to 4 decimals and 2 decimals: the smallest total they allow
            diff = current - without + 0.0001
            if diff > 0:
                floors.append((graphs - 0.005) / diff)
        break
    weights = weights_gib if weights_gib else _last(_WEIGHTS, lines)
    available = next((v for p in _AVAILABLE if (v := _last(p, lines)) is not None), None)
    if utilization and weights:
        floors.append((weights + graphs + (available or 0.0)) / utilization)
    elif utilization and available and available > 0:
        # No weights line (a pasted excerpt, a refusal quoted alone): the KV cache vLLM sized
        # is itself inside the budget, so total >= (CUDA graphs + available KV) / utilization
        floors.append((graphs + available) / utilization)
    floors = [f for f in floors if f > 0]
    return (round(max(floors), 2), False) if floors else None


def available_kv_from_log(lines: Iterable[str]) -> float | None:
    """The last "Available KV cache memory" vLLM printed, in GiB (negative when the weights
    and activations overran the budget), or the refusal's "available KV cache memory (x)"."""
    lines = [str(x) for x in lines]
    return next((v for p in _AVAILABLE if (v := _last(p, lines)) is not None), None)


def activation_from_log(events: Iterable, ledger: MemoryLedger | None) -> float | None:
    """The start-up profile's activation peak as the log gives it, GiB per GPU: V0
    0.6.5-0.10's "PyTorch activation peak memory takes X GiB" (the ledger), else 0.6.3-0.6.4's
    "Memory profiling results: ... peak_torch_memory=X" less the weights (torch's peak holds
    the weights too). None when the log says neither."""
    if ledger is not None and ledger.activation_gib is not None:
        return ledger.activation_gib if ledger.activation_gib >= 0 else None
    weights = ledger.weights_gib if ledger is not None else None
    if not weights:
        return None
    for event in events:
        peak = getattr(event, "fields", {}).get("peak_torch_gib")
        if getattr(event, "kind", None) == "memory_summary" and isinstance(peak, float):
            return max(peak - weights, 0.0) if peak > 0 else None
    return None
