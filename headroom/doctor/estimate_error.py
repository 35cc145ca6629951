"""How far the memory model's KV estimate is off, measured, and the fit as a range.

`plan` and the doctor show a range, not one number, where the estimate's error or an unknown
release leaves the answer open; a cut of max_model_len goes to the range's low end with its
reason said.
"""

from __future__ import annotations

from headroom.doctor.memory_model import MemoryAccount, account
from headroom.doctor.model_bytes import GIB
from headroom.doctor.versions import UNKNOWN_RELEASE_SPAN

# How far the KV estimate is off, measured: benchmarks/memory_model.py against 11 real
# start-up logs (V0 0.3-0.7 and V1 0.10.1.1; tests/fixtures/startup-logs and
# gpu-startup-logs) gives a median KV error of 1.1 % and a worst of 9.3 % (TP across two
# nodes, whose NCCL buffers the model does not know). The fit is shown as a range of that
# width, and the recommended --max-model-len is its low end, with the reason said; the
# absolute floor covers small caches (the activation + non-torch residual of the single-node
# start-ups was off by at most 0.15 GiB).
KV_ESTIMATE_ERROR_REL = 0.10
KV_ESTIMATE_ERROR_GIB = 0.25
MEASURED_ERROR = "median 1.1 %, worst 9.3 % of KV memory on 11 real start-ups"


def fit_range(model, gpu, knobs, version, acc: MemoryAccount):
    """(low, high, reasons): the max_model_len that fits, as a range. Its width is the
    estimate's measured error (KV_ESTIMATE_ERROR_REL of the KV memory, at least
    KV_ESTIMATE_ERROR_GIB); with the release unknown, the rules of the releases in
    UNKNOWN_RELEASE_SPAN widen it (defaults and where CUDA graphs count changed between
    them)."""
    per_token = max(acc.kv_bytes_per_token, 1)
    error_gib = max(acc.kv_cache_gib * KV_ESTIMATE_ERROR_REL, KV_ESTIMATE_ERROR_GIB)
    error_tokens = int(error_gib * GIB // per_token)
    # The error is taken off the fit before the model's position cap, not after: a 70B on
    # 8 H100 holds ten times its 131,072-token context, and the cap minus the error (0) is
    # no honest low end.
    lows, highs = [acc.usable_tokens], [acc.usable_tokens]
    reasons = [
        f"the estimate's measured error ({MEASURED_ERROR}, benchmarks/memory_model.py): "
        f"+/- {error_gib:.2f} GiB of KV per GPU = {error_tokens:,} tokens"
    ]
    if version is None:
        span = []
        for release in UNKNOWN_RELEASE_SPAN:
            other = account(model, gpu, knobs, release)
            lows.append(other.usable_tokens)
            highs.append(other.usable_tokens)
            span.append(f"{release}: {other.max_model_len_fit:,}")
        reasons.append("release not given (--vllm-version): fits by release " + ", ".join(span))
    if not getattr(gpu, "known", True) and acc.tp * acc.pp > 1:
        # a GPU named by its memory alone: NVLink or PCIe is open, and with it ~2 GiB of
        # non-torch memory at TP >= 2 (memory_model.overhead_gib)
        from dataclasses import replace

        other = account(model, replace(gpu, nvlink=not gpu.nvlink), knobs, version)
        lows.append(other.usable_tokens)
        highs.append(other.usable_tokens)
        reasons.append(
            f"links not known (--gpus by memory only): over {'PCIe' if gpu.nvlink else 'NVLink'} "
            f"non-torch memory is {other.overhead_gib:.2f} GiB, not {acc.overhead_gib:.2f}: "
            f"fits {other.max_model_len_fit:,}"
        )
    cap = acc.position_limit or None
    low = max(min(lows) - error_tokens, 0)
    high = max(highs) + error_tokens
    if cap:
        low, high = min(low, cap), min(high, cap)
    return low, high, reasons


__all__ = [
    "KV_ESTIMATE_ERROR_GIB",
    "KV_ESTIMATE_ERROR_REL",
    "MEASURED_ERROR",
    "fit_range",
]
