"""Rules for the signature catalog's event kinds that had none (headroom/probes/vllm_catalog):
each reads the event's fields (numbers), never its sentence.

Two families:
- a configuration change the catalog's `feeds` names: a prompt the KV cache cannot hold
  (KV budget up, as for any KV shortage), an fp8 e5m2 KV cache with an fp8 checkpoint (e4m3),
  --quantization against the checkpoint's own method, more sequences than batched tokens,
  Ray's object store without /dev/shm;
- NOT_CONFIG entries (a kernel bug, an old release, an architecture this vLLM lacks, memory
  released by another process during profiling): the finding says what it is and "upgrade /
  known bug", and turns no knob. A workaround that is not a fix stays in the evidence.
"""

from __future__ import annotations

from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.kernel_workarounds import illegal_memory_workaround


def _first(ctx, kind: str, *signatures: str):
    """The first event of `kind` (from one of `signatures`, when named)."""
    for event in ctx.of(kind):
        if not signatures or event.signature in signatures:
            return event
    return None


def _int(fields, name: str) -> int | None:
    try:
        return int(fields[name])
    except (KeyError, TypeError, ValueError):
        return None


def _float(fields, name: str) -> float | None:
    try:
        return float(fields[name])
    except (KeyError, TypeError, ValueError):
        return None


# --- configuration changes ------------------------------------------------------------------


def _kv_capacity_tokens(ctx) -> int | None:
    """Tokens the whole KV cache holds, from the log: the ledger's, else V0's "# GPU blocks"
    times the block size (--block-size, else vLLM's CUDA default of 16)."""
    ledger = getattr(ctx.facts, "ledger", None)
    if ledger is None:
        return None
    if ledger.kv_capacity_tokens:
        return ledger.kv_capacity_tokens
    if ledger.gpu_blocks:
        return ledger.gpu_blocks * (ctx.knobs.block_size or 16)
    return None


def prompt_exceeds_kv(ctx) -> list[Finding]:
    """V0's block manager: "Input prompt (N tokens) is too long and exceeds the capacity of
    block_manager": the whole KV cache holds fewer tokens than one prompt. A KV shortage: the
    budget goes up first, then fp8 KV, then TP; max_model_len down to what fits last."""
    event = _first(ctx, "prompt_exceeds_kv")
    if event is None:
        return []
    tokens = _int(event.fields, "prompt_tokens")
    evidence = [event.line.strip()[:400]]
    capacity = _kv_capacity_tokens(ctx)
    gap = scale = None
    if tokens and capacity:
        evidence.append(f"a prompt of {tokens:,} tokens; the KV cache holds {capacity:,}")
        scale = tokens / capacity if capacity > 0 else None
        gap = A.extra_gib_for_tokens(ctx, tokens, capacity)
        if gap is not None:
            evidence.append(f"short by about {gap:.2f} GiB of KV cache per GPU")
    why = "the KV cache must hold a whole prompt" + (f" of {tokens:,} tokens" if tokens else "")
    acts = [
        A.raise_kv_budget(ctx, gap if gap and gap > 0.005 else None, why, scale),
        A.fp8_kv(ctx, "halves the KV bytes per token, so twice the tokens fit"),
        A.raise_tp(ctx, A.lowest_fitting_tp(ctx, tokens), "more GPUs hold more KV cache"),
    ]
    if capacity:
        acts.append(
            A.lower_max_model_len(capacity, "refuse up front what the KV cache cannot hold")
        )
    title = "A prompt is longer than the whole KV cache holds"
    if tokens:
        title = f"A prompt of {tokens:,} tokens is longer than the whole KV cache holds"
    return [
        Finding("prompt-exceeds-kv", 4, "warning", title, tuple(evidence), compact_actions(acts))
    ]


# Weight formats a model's name says that are not fp8 (an AWQ/GPTQ/int4 upload says so).
_NOT_FP8_NAMES = ("awq", "gptq", "int4", "int8", "4bit", "8bit", "w4a16", "bnb", "gguf", "exl2")


def _checkpoint_method(ctx) -> str | None:
    """The checkpoint's quantization: --quantization, its config's quant_method, else what
    the model's name says (lower case); None when nothing says."""
    method = ctx.knobs.quantization or getattr(ctx.model_read, "quantization", None)
    if method:
        return str(method).lower()
    cmd = ctx.inputs.command
    name = str(getattr(cmd, "model", None) or getattr(ctx.facts, "model", None) or "").lower()
    if "fp8" in name:
        return "fp8"
    return next((hint for hint in _NOT_FP8_NAMES if hint in name), None)


def fp8_e5m2_with_fp8_checkpoint(ctx) -> list[Finding]:
    """vLLM's fp8 checkpoints carry e4m3 scales: an e5m2 KV cache is refused with them. The
    same gate once refused e5m2 for any quantized checkpoint (AWQ, GPTQ): with a checkpoint
    that is not fp8 it is that bug, and no knob is the fix."""
    event = _first(ctx, "kv_cache_dtype_unsupported", "fp8_e5m2_with_fp8_checkpoint")
    if event is None:
        return []
    method = _checkpoint_method(ctx)
    if method is not None and "fp8" not in method:
        return [
            _not_config(
                "fp8-e5m2-gate-not-fp8-checkpoint",
                f"vLLM refused an fp8_e5m2 KV cache for a checkpoint that is not fp8 ({method}): "
                "a known bug, upgrade vLLM",
                event,
                "the check that an fp8 checkpoint's e4m3 scales exclude e5m2 also caught "
                "checkpoints that are not fp8; newer releases check the method",
            )
        ]
    act = Action(
        "kv_cache_dtype",
        "set",
        "fp8",
        "an fp8 checkpoint's KV scales are e4m3; e5m2 is refused with it",
        "fp8 KV either way: check output quality on your workload",
    )
    return [
        Finding(
            "fp8-e5m2-with-fp8-checkpoint",
            5,
            "error",
            "An fp8_e5m2 KV cache cannot load with an fp8 checkpoint",
            (event.line.strip()[:400],),
            (act,),
        )
    ]


def quantization_mismatch(ctx) -> list[Finding]:
    """--quantization names a method other than the checkpoint's own: the checkpoint wins."""
    event = _first(ctx, "quantization_mismatch")
    if event is None:
        return []
    own = str(event.fields.get("checkpoint_method") or "").strip() or None
    given = str(event.fields.get("method") or "").strip() or None
    why = "the checkpoint's quantization_config names its method; --quantization must agree"
    if own and given:
        why = f"the checkpoint is {own}, --quantization said {given}"
    act = Action(
        "quantization", "set", own, why, "none: the weights are already quantized this way"
    )
    return [
        Finding(
            "quantization-mismatch",
            1,
            "error",
            "--quantization does not match the checkpoint's own method",
            (event.line.strip()[:400],),
            (act,),
        )
    ]


def batched_tokens_below_max_num_seqs(ctx) -> list[Finding]:
    """ "max_num_batched_tokens (B) must be greater than or equal to max_num_seqs (S)": each
    running sequence needs a token of the batch; fewer sequences first (no memory cost)."""
    event = _first(ctx, "batched_tokens_too_small", "batched_tokens_below_max_seqs")
    if event is None:
        return []
    batched = _int(event.fields, "max_num_batched_tokens")
    seqs = _int(event.fields, "max_num_seqs")
    if batched is None or seqs is None:
        return []
    acts = (
        A.lower_max_num_seqs(
            seqs, batched, f"each step gives every running sequence a token: {batched:,} at most"
        ),
        Action(
            "max_num_batched_tokens",
            "raise",
            seqs,
            f"or a step of at least one token for each of {seqs:,} sequences",
            "a larger activation peak per step (profiled at start-up)",
        ),
    )
    return [
        Finding(
            "batched-tokens-below-max-num-seqs",
            4,
            "error",
            f"max_num_seqs {seqs:,} is above max_num_batched_tokens {batched:,}",
            (event.line.strip()[:400],),
            compact_actions(acts),
        )
    ]


def ray_shm_small(ctx) -> list[Finding]:
    """Ray's object store fell back to /tmp: the container's /dev/shm is too small (a
    container setting, not an engine argument, so no knob)."""
    event = _first(ctx, "ray_shm_small")
    if event is None:
        return []
    size = _int(event.fields, "shm_bytes")
    title = "/dev/shm is too small for Ray's object store"
    if size is not None:
        title = f"/dev/shm has only {size / 2**20:.0f} MiB: Ray's object store uses /tmp"
    evidence = (
        event.line.strip()[:400],
        "give the container more shared memory: docker --shm-size (Ray asks for 30% of RAM) "
        "or --ipc=host; NCCL stages traffic through /dev/shm too",
    )
    return [Finding("shm-small", None, "warning", title, evidence, ())]


# --- not configuration problems: say so, turn no knob ------------------------------------------


def _not_config(finding_id: str, title: str, event, *advice: str) -> Finding:
    evidence = (event.line.strip()[:400], *advice)
    return Finding(finding_id, None, "error", title, evidence, ())


def not_config_failures(ctx) -> list[Finding]:
    out = []
    event = _first(ctx, "memory_profiling_error")
    if event is not None:
        before, after = (_float(event.fields, k) for k in ("initial_free_gib", "free_gib"))
        numbers = []
        if before is not None and after is not None:
            numbers.append(
                f"free GPU memory went from {before:.2f} to {after:.2f} GiB while vLLM profiled "
                f"({after - before:+.2f} GiB): another process released memory"
            )
        out.append(
            _not_config(
                "memory-profiling-disturbed",
                "Another process changed GPU memory while vLLM profiled (not a configuration "
                "problem)",
                event,
                *numbers,
                "start vLLM with the GPU to itself (its own container), then start again; no "
                "knob changes this",
            )
        )
    event = _first(ctx, "model_unsupported")
    if event is not None:
        names = str(event.fields.get("architectures") or "the model's architecture")
        version = f" {ctx.version}" if ctx.version else ""
        out.append(
            _not_config(
                "model-unsupported",
                f"This vLLM{version} does not know {names}: upgrade vLLM",
                event,
                "not a configuration problem: a release that lists the architecture serves it",
            )
        )
    event = _first(ctx, "pp_layers_not_divisible")
    if event is not None:
        layers, pp = _int(event.fields, "layers"), _int(event.fields, "pp")
        advice = ["vLLM 0.5+ splits layers unevenly over pipeline stages: upgrade (known limit)"]
        if layers and pp:
            fits = [d for d in range(2, min(layers, 16) + 1) if layers % d == 0]
            if fits:
                listed = ", ".join(map(str, fits[:6]))
                advice.append(f"on this release, a pipeline size that divides {layers}: {listed}")
        out.append(
            _not_config(
                "pp-layers-not-divisible",
                "This vLLM needs the layers to divide evenly over pipeline stages (an old release)",
                event,
                *advice,
            )
        )
    event = _first(ctx, "graph_capture_failed")
    if event is not None:
        out.append(
            _not_config(
                "cuda-graph-capture-failed",
                "NCCL ran inside CUDA-graph capture: an old vLLM/NCCL bug, upgrade",
                event,
                "not a configuration problem; to start on this release meanwhile, "
                "--enforce-eager skips CUDA graphs (slower decoding)",
            )
        )
    event = _first(ctx, "host_oom")
    if event is not None:
        out.append(
            _not_config(
                "host-oom",
                "The host ran out of RAM and Ray killed a task (not GPU memory)",
                event,
                "not a GPU setting: no vLLM knob frees host memory; fewer processes per node, "
                "CPU offload off, or a node with more RAM",
            )
        )
    event = _first(ctx, "cuda_illegal_memory")
    if event is not None:
        finding = _not_config(
            "cuda-illegal-memory",
            "A CUDA kernel touched memory it does not own: a bug, upgrade vLLM",
            event,
            "not a configuration problem; CUDA_LAUNCH_BLOCKING=1 names the kernel, and "
            "--enforce-eager rules CUDA graphs in or out",
        )
        workaround = illegal_memory_workaround(ctx)  # a V0 release's known workaround
        out.append(replace(finding, actions=(workaround,)) if workaround else finding)
    return out


RULES = (
    prompt_exceeds_kv,
    fp8_e5m2_with_fp8_checkpoint,
    quantization_mismatch,
    batched_tokens_below_max_num_seqs,
    ray_shm_small,
    not_config_failures,
)
