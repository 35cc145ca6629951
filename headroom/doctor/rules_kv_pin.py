"""A start that died with --kv-cache-memory-bytes pinned, and no line naming why (step 4).

vLLM 0.10.2+ (vllm/v1/worker/gpu_worker.py determine_available_memory, read in 0.10.2 and
0.33.0): with kv_cache_memory_bytes set, the worker still runs the profile (to compile the
model) but then "reserved X GiB memory for KV Cache as specified by kv_cache_memory_bytes
config and skipped memory profiling. This does not respect the gpu_memory_utilization
config. ... If OOM'ed, check the difference of initial free memory between the current run
and the previous run where kv_cache_memory_bytes is suggested and update it
correspondingly." The pin is the one setting that turns off vLLM's own fitting of the KV
cache to the memory: a pool sized on one machine (or with the desktop, a browser or another
process using less of the GPU) no longer fits beside the weights, the activations and the
CUDA graphs when less is free, and the engine dies allocating it or capturing the graphs.
Raising gpu_memory_utilization changes nothing then; the pin comes down (or goes, so that
vLLM profiles what is free).

Only when the log names no root cause (the engine's "Engine core initialization failed" and
its echoes alone): an OOM with the pin is rules_oom's (lower_kv_memory), a refusal with a
number is rules_startup's. With the model and GPU known, the pin must also be tight by the
memory model: weights + activations + graphs + pin leave less of the GPU than the release's
default utilization would (vLLM's own margin); otherwise the pin is no suspect.
"""

from __future__ import annotations

import math

from headroom.doctor.findings import Action, Finding
from headroom.doctor.memory_model import CUDA_CONTEXT_GIB, fit_len
from headroom.doctor.model_bytes import GIB
from headroom.doctor.versions import default_utilization, effective_version

# The failure kinds that say an engine died but not why (probes/vllm_log.py _FAILURE_RANK's
# last, generic rows): any other failure in the log is a root cause another rule answers.
_ECHOES = frozenset({"engine_core_failed", "engine_dead", "worker_died", "worker_exception",
                     "traceback"})  # fmt: skip
# Without a number to size it by: down by a fifth (rules_oom's lower_kv_memory step; the
# thread this family was read from went 5.2 -> 3.7 GiB, a larger step than this).
_STEP = 0.8
_MIB = 2**20
COST = "a smaller KV cache: fewer tokens in flight, more preemption under load"


def pinned_kv_start_failed(ctx) -> list[Finding]:
    pin = ctx.knobs.kv_cache_memory_bytes
    if not pin or getattr(ctx.facts, "ready", False):
        return []
    failures = list(getattr(ctx.facts, "failures", ()) or ())
    dead = ctx.of("engine_core_failed", "engine_dead", "worker_died")
    if not dead or any(f.kind not in _ECHOES for f in failures):
        return []
    evidence = [
        dead[0].line.strip()[:300],
        f"--kv-cache-memory-bytes {pin:,} ({pin / GIB:.2f} GiB) pins the KV cache: vLLM "
        "skips its memory profiling and ignores gpu_memory_utilization, so the pool does not "
        "shrink when less of the GPU is free (another process, the desktop, a larger graph "
        "pool)",
    ]
    tight, target, line = _tightness(ctx, pin)
    if not tight:
        return []
    if line:
        evidence.append(line)
    if target is None or target >= pin:
        target = pin * _STEP
    value = max(int(math.floor(target / _MIB)) * _MIB, _MIB)
    shorter = _length_the_pin_holds(ctx, value)
    also = (("max_model_len", shorter),) if shorter is not None else ()
    actions = [
        Action(
            "kv_cache_memory_bytes",
            "lower",
            value,
            "a pinned KV pool that no longer fits beside what else the GPU holds; or drop the "
            "flag so that vLLM sizes the KV cache to the free memory itself",
            COST,
            also=also,
        )
    ]
    if shorter is not None:
        evidence.append(
            f"{value / GIB:.2f} GiB of KV holds one request of at most {shorter:,} tokens"
        )
        actions.append(
            Action(
                "max_model_len",
                "lower",
                shorter,
                "what the lowered pin holds: vLLM refuses a max_model_len one request of "
                "which the KV cache cannot hold",
                "requests longer than this are rejected",
                also=(("kv_cache_memory_bytes", value),),
            )
        )
    return [
        Finding(
            "kv-pin-start-failed",
            4,
            "error",
            "The engine died at start-up with the KV cache pinned by --kv-cache-memory-bytes",
            tuple(evidence),
            tuple(actions),
        )
    ]


def _length_the_pin_holds(ctx, pin: int) -> int | None:
    """The max_model_len to go with a lowered pin, when the model is known and the pin no
    longer holds one request of the current one (kv_cache_utils' check, the null block
    kept out); None when it still does."""
    acc, model = ctx.account, ctx.model
    if acc is None or model is None or not acc.kv_bytes_per_token:
        return None
    block = max(acc.block_size, 1)
    blocks = int(pin // (acc.kv_bytes_per_token * block))
    fit = fit_len(blocks * block, block, model.max_position_embeddings, acc.null_block)
    if fit >= acc.max_model_len:
        return None
    return max(fit // 16 * 16, 16)


def _tightness(ctx, pin: int) -> tuple[bool, float | None, str | None]:
    """(is the pin a suspect, a pin that leaves vLLM's own margin, the arithmetic line).
    Unknown model or GPU: a suspect, unsized. Known: the memory model's weights, activation
    peak, graphs and CUDA context beside the pin, against total x the release's default
    utilization (what vLLM itself would have taken)."""
    acc, gpu = ctx.account, ctx.gpu
    ledger = getattr(ctx.facts, "ledger", None)
    free = getattr(ledger, "free_at_start_gib", None) if ledger is not None else None
    if acc is None or gpu is None:
        return True, None, None
    pin_gib = pin / GIB
    graphs = acc.cudagraph_gib
    others = acc.weights_gib + acc.activation_gib + acc.overhead_gib + graphs + CUDA_CONTEXT_GIB
    usable = gpu.min_usable_gib
    # what vLLM would have budgeted by itself: the default share of the GPU, or the free
    # memory the log says it found, whichever is smaller
    room = usable * default_utilization(effective_version(ctx.version))
    where = f"{default_utilization(effective_version(ctx.version))} x {usable:.2f} GiB"
    if free is not None and free < room:
        room, where = free, f"the {free:.2f} GiB free at start-up"
    if others + pin_gib <= room:
        return False, None, None
    fits = (room - others) * GIB
    if fits < _MIB:
        return False, None, None  # the rest alone fills the room: the weights' finding answers
    line = (
        f"estimate: weights {acc.weights_gib:.2f} + activations {acc.activation_gib:.2f} + "
        f"overhead {acc.overhead_gib:.2f} + graphs {graphs:.2f} + CUDA context "
        f"{CUDA_CONTEXT_GIB:.2f} + pinned KV {pin_gib:.2f} GiB > {where}"
    )
    return True, fits, line


RULES = (pinned_kv_start_failed,)
