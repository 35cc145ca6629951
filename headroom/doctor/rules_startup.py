"""Start-up rules: a vLLM log's failure events, read with their numbers, become findings.

Directions (the brief's mitigation order, never the other way round):
- "max seq len ... larger than ... KV cache": KV budget up, or max_model_len down to vLLM's
  own estimate; fewer sequences cannot fix it.
- "No available memory for the cache blocks": weights + activations fill the budget: budget
  up if there is room, else the lowest TP that fits.
- CUDA OOM: another process's memory, CUDA-graph capture or the activation peak want a LOWER
  utilization, --enforce-eager or fewer batched tokens; OOM while loading weights wants TP.
- Free memory below the utilization at start-up: memory held by others is a gate: lower the
  utilization to what is free, or free the GPU.
"""

from __future__ import annotations

from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor import log_events as LE
from headroom.doctor.findings import Action, Finding
from headroom.doctor.memory_model import GIB, kv_bytes_per_token


def _compact(actions) -> tuple[Action, ...]:
    return tuple(a for a in actions if a is not None)


def max_seq_len_exceeds_kv(ctx) -> list[Finding]:
    out = []
    for event in ctx.of("max_seq_len_exceeds_kv")[:1]:
        nums = LE.max_seq_len_numbers(event.line)
        max_len = int(nums.get("max_model_len") or ctx.knobs.max_model_len or 0)
        estimate = nums.get("estimated_max_len") or nums.get("kv_tokens")
        evidence = [event.line.strip()]
        extra = None
        if nums.get("needed_gib", 0) > nums.get("available_gib", 0) and "available_gib" in nums:
            extra = nums["needed_gib"] - nums["available_gib"]
            evidence.append(
                f"short by {nums['needed_gib']:.2f} - {nums['available_gib']:.2f} = {extra:.2f} GiB of KV cache"
            )
        elif "kv_tokens" in nums and max_len:
            extra = A.extra_gib_for_tokens(ctx, max_len, int(nums["kv_tokens"]))
            evidence.append(
                f"{max_len:,} tokens needed for one request, {int(nums['kv_tokens']):,} fit"
            )
            if extra is not None:
                evidence.append(f"short by about {extra:.2f} GiB of KV cache per GPU")
        if ctx.knobs.kv_cache_memory_bytes:
            evidence.append(
                "--kv-cache-memory-bytes is set: it, not gpu_memory_utilization, sizes the KV cache"
            )
        why_budget = "one request at max_model_len must fit in the KV cache"
        scale = max_len / estimate if (estimate and max_len) else None
        acts = [
            A.raise_kv_budget(ctx, extra if extra and extra > 0.005 else None, why_budget, scale)
        ]
        if estimate:
            acts.append(A.lower_max_model_len(int(estimate), "vLLM's own estimate of what fits"))
        acts.append(A.fp8_kv(ctx, "halves the KV bytes per token, so twice the tokens fit"))
        acts.append(
            A.raise_tp(
                ctx,
                A.lowest_fitting_tp(ctx, max_len or None),
                "spreads weights and KV heads over more GPUs",
            )
        )
        out.append(
            Finding(
                "max-seq-len-exceeds-kv",
                4,
                "error",
                f"The KV cache cannot hold one request of max_model_len {max_len:,}",
                tuple(evidence),
                _compact(acts),
            )
        )
    return out


def no_cache_memory(ctx) -> list[Finding]:
    events = ctx.of("no_cache_memory")
    zero = [line for line in ctx.raw_lines if "# GPU blocks: 0," in line]  # V0's way of saying it
    if not events and not zero:
        return []
    evidence = [events[0].line.strip() if events else zero[0].strip()]
    acc = ctx.account
    if acc is not None:
        evidence.append(
            f"estimate: weights {acc.weights_gib:.2f} + activations {acc.activation_gib:.2f} + "
            f"overhead {acc.overhead_gib:.2f} GiB against a budget of {acc.budget_gib:.2f} GiB per GPU"
        )
    tp = A.lowest_fitting_tp(ctx)
    acts = [
        A.raise_kv_budget(ctx, None, "the weights and activations leave nothing for the KV cache"),
        A.raise_tp(ctx, tp, "the weights do not leave room for a KV cache on this many GPUs"),
        A.lower_batched_tokens(acc.batched_tokens, "a smaller activation peak leaves room for KV")
        if acc
        else None,
    ]
    return [
        Finding(
            "no-cache-memory",
            1,
            "error",
            "No memory left for the KV cache after the weights",
            tuple(evidence),
            _compact(acts),
        )
    ]


def _oom_phase(ctx, event: LE.Event) -> str:
    """Where the OOM happened, from the lines around it: weights, sampler, graphs, runtime."""
    index = ctx.events.index(event)
    before = ctx.events[:index]
    around = " ".join(
        ctx.lines_before(event) or [e.line for e in ctx.events[max(0, index - 6) : index + 1]]
    )
    around = around.lower()
    nums = LE.oom_numbers(event.line)
    if "failed to load model" in around or "load_weights" in around:
        return "weights"
    if "allocate_kv_cache" in around or "initialize_kv_cache" in around or "cache_engine" in around:
        return "kv-alloc"
    if "sampler" in around or "warming up sampler" in around:
        return "sampler"
    if "captur" in around or nums.get("graph_pools_gib", 0) > 1.0:
        return "graphs"
    if any(e.kind in ("startup_complete", "stats") for e in before):
        return "runtime"
    if not any(e.kind in ("weights_loaded",) for e in before):
        total, process = nums.get("total_gib"), nums.get("largest_process_gib")
        if (
            total
            and process
            and process > 0.9 * total
            and ctx.knobs.gpu_memory_utilization
            and ctx.knobs.gpu_memory_utilization < 0.8
        ):
            return "weights"  # the process filled the GPU before any KV cache existed
        if "load" in around or "weight" in around or not before:
            return "weights"
    return "activation"


def cuda_oom(ctx) -> list[Finding]:
    events = ctx.of("cuda_oom")
    if not events:
        return []
    event = events[0]
    nums = LE.oom_numbers(event.line)
    phase = _oom_phase(ctx, event)
    evidence = [event.line.strip()[:400]]
    if "total_gib" in nums and "free_gib" in nums:
        evidence.append(
            f"{nums.get('free_gib', 0):.2f} GiB free of {nums['total_gib']:.2f} GiB when "
            f"{nums.get('tried_gib', 0):.2f} GiB more was asked for"
        )
    if nums.get("process_count", 0) > 1:
        evidence.append(f"{int(nums['process_count'])} processes hold memory on this GPU")
    acc = ctx.account
    if nums.get("process_count", 0) > 1:
        acts = [A.lower_utilization(ctx, None, "another process's memory is on this GPU too")]
        return [
            Finding(
                "cuda-oom-foreign-process",
                None,
                "error",
                "Out of GPU memory: other processes share this GPU",
                tuple(evidence),
                _compact(acts),
            )
        ]
    if phase == "weights":
        tp = A.lowest_fitting_tp(ctx)
        if acc is not None:
            evidence.append(
                f"estimate: {acc.weights_gib:.2f} GiB of weights per GPU at TP {acc.tp} "
                f"on {acc.gpu_usable_gib:.2f} GiB GPUs"
            )
        acts = [
            A.raise_tp(ctx, tp, "the weights alone do not fit this many GPUs"),
            Action(
                "quantization",
                "set",
                None,
                "a quantized checkpoint (FP8, AWQ, GPTQ) halves or quarters the weights",
                "some quality loss; needs a quantized checkpoint or an FP8-capable GPU",
            ),
        ]
        return [
            Finding(
                "cuda-oom-weights",
                1,
                "error",
                "Out of GPU memory while loading the weights",
                tuple(evidence),
                _compact(acts),
            )
        ]
    seqs = ctx.knobs.max_num_seqs or (acc.max_num_seqs if acc else 256)
    batched = ctx.knobs.max_num_batched_tokens or (acc.batched_tokens if acc else 2048)
    if phase == "sampler":
        acts = [
            A.lower_max_num_seqs(
                seqs, None, "the sampler warm-up allocates logits for every sequence"
            ),
            A.lower_utilization(ctx, None, "leaves room for the sampler's fp32 logits"),
        ]
        title = "Out of GPU memory warming up the sampler (max_num_seqs dummy requests)"
    elif phase == "kv-alloc":
        acts = [
            A.lower_utilization(ctx, None, "the KV cache was sized larger than what is free"),
            A.lower_batched_tokens(batched, "a smaller activation peak per step"),
        ]
        title = "Out of GPU memory allocating the KV cache"
    elif phase == "graphs":
        acts = [
            A.enforce_eager("CUDA-graph capture needs memory outside the KV cache"),
            A.lower_utilization(ctx, None, "leaves room for CUDA-graph pools"),
        ]
        title = "Out of GPU memory capturing CUDA graphs"
    else:
        acts = [
            A.lower_batched_tokens(batched, "a smaller activation peak per step"),
            A.lower_utilization(ctx, None, "leaves room above the profiled activation peak"),
        ]
        title = "Out of GPU memory at the activation peak"
    return [Finding(f"cuda-oom-{phase}", 4, "error", title, tuple(evidence), _compact(acts))]


def free_memory_below_utilization(ctx) -> list[Finding]:
    events = ctx.of("free_memory_below_utilization")
    if not events:
        return []
    nums = LE.free_memory_numbers(events[0].line)
    evidence = [events[0].line.strip()]
    target = None
    if nums:
        target = nums["free_gib"] / nums["total_gib"] - 0.02
        evidence.append(
            f"{nums['total_gib'] - nums['free_gib']:.2f} GiB is held by other processes"
        )
    acts = [
        A.lower_utilization(
            ctx, target, "vLLM asks for utilization x total, and only the free part is there"
        ),
        Action(
            "gpu_memory_utilization",
            "lower",
            None,
            "or stop the other process holding GPU memory",
            "none for vLLM; the other job stops",
        ),
    ]
    return [
        Finding(
            "free-memory-below-utilization",
            None,
            "error",
            "Other processes hold GPU memory vLLM wants",
            tuple(evidence),
            _compact(acts),
        )
    ]


def heads_not_divisible(ctx) -> list[Finding]:
    events = ctx.of("heads_not_divisible", "kv_heads_not_divisible")
    if not events:
        return []
    event = events[0]
    nums = LE.two_ints(
        event.line, r"heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)"
    )
    tp = nums[1] if nums else ctx.knobs.tp
    evidence = [event.line.strip()]
    value = _nearest_tp(ctx, tp, nums[0] if nums else None)
    if ctx.model is not None:
        evidence.append(
            f"{ctx.model.num_attention_heads} attention heads, {ctx.model.num_kv_heads} KV heads; "
            "TP must divide both, or be a multiple of the KV heads (vLLM then replicates them)"
        )
    direction = "set" if value is None else ("lower" if value < tp else "raise")
    acts = [
        Action(
            "tensor_parallel_size",
            direction,
            value,
            "the nearest TP that divides the heads and fits in memory",
            "a different number of GPUs" if value else "",
        )
    ]
    return [
        Finding(
            "tp-heads-not-divisible",
            2,
            "error",
            f"Tensor parallel size {tp} does not divide the model's heads",
            tuple(evidence),
            tuple(acts),
        )
    ]


def _nearest_tp(ctx, tp: int, heads: int | None) -> int | None:
    model, limit = ctx.model, (ctx.gpu_count or max(tp, 8))
    if model is not None:
        candidates = A.valid_tps(model, limit)
    elif heads:
        candidates = [t for t in range(1, limit + 1) if heads % t == 0]
    else:
        return None
    fitting = [t for t in candidates if _fits(ctx, t)] or candidates
    # Nearest; on a tie the smaller TP (the GPUs for it surely exist).
    return min(fitting, key=lambda t: (abs(t - tp), t)) if fitting else None


def _fits(ctx, tp: int) -> bool:
    if ctx.model is None or ctx.gpu is None:
        return True
    from dataclasses import replace

    from headroom.doctor.memory_model import account

    acc = account(ctx.model, ctx.gpu, replace(ctx.knobs, tp=tp), ctx.version)
    return acc.fits


def world_size_too_large(ctx) -> list[Finding]:
    events = ctx.of("world_size_too_large")
    if not events:
        return []
    nums = LE.two_ints(
        events[0].line,
        r"World size \((\d+)\) is larger than the number of available GPUs \((\d+)\)",
    )
    gpus = nums[1] if nums else ctx.gpu_count
    evidence = [events[0].line.strip()]
    acts = []
    if gpus and ctx.knobs.tp > gpus:
        valid = A.valid_tps(ctx.model, gpus) if ctx.model is not None else list(range(1, gpus + 1))
        value = max(valid or [1])
        acts.append(
            Action(
                "tensor_parallel_size",
                "lower",
                value,
                f"only {gpus} GPUs are visible on this node",
                "fewer GPUs per replica; use --pipeline-parallel-size across nodes if it does not fit",
            )
        )
    acts.append(
        Action(
            "pipeline_parallel_size",
            "set",
            None,
            "TP inside a node, PP across nodes (with --nnodes or Ray)",
            "multi-node set-up",
        )
    )
    return [
        Finding(
            "world-size-too-large",
            3,
            "error",
            "More GPUs requested than this node has",
            tuple(evidence),
            tuple(acts),
        )
    ]


def pp_unsupported(ctx) -> list[Finding]:
    events = ctx.of("pp_unsupported")
    if not events:
        return []
    total = ctx.knobs.tp * ctx.knobs.pp
    acts = [
        Action(
            "pipeline_parallel_size",
            "lower",
            1,
            "this model has no pipeline-parallel support",
            "all GPUs must go to tensor parallelism",
        )
    ]
    if ctx.model is None or total in A.valid_tps(ctx.model, total):
        acts[0] = replace(acts[0], also=(("tensor_parallel_size", total),))
        acts.append(
            Action(
                "tensor_parallel_size",
                "raise",
                total,
                "use the same GPUs as tensor parallel",
                "all-reduce on every layer: needs fast links",
            )
        )
    return [
        Finding(
            "pp-unsupported",
            3,
            "error",
            "This model cannot run pipeline parallel",
            (events[0].line.strip(),),
            tuple(acts),
        )
    ]


def kv_capacity_thin(ctx) -> list[Finding]:
    """A clean start whose KV cache holds barely one or two full-length requests."""
    if ctx.of("max_seq_len_exceeds_kv", "cuda_oom", "no_cache_memory"):
        return []
    tokens = getattr(ctx.facts, "kv_cache_tokens", None)
    max_len = ctx.knobs.max_model_len or (ctx.model.max_position_embeddings if ctx.model else None)
    if not tokens or not max_len:
        return []
    concurrency = tokens / max_len
    if concurrency >= 2:
        return []
    evidence = [
        f"KV cache holds {tokens:,} tokens = {concurrency:.2f} requests of {max_len:,} tokens"
    ]
    acts = [
        A.raise_kv_budget(ctx, None, "more KV memory holds more requests at once"),
        A.fp8_kv(ctx, "twice the tokens in the same memory"),
    ]
    return [
        Finding(
            "kv-capacity-thin",
            4,
            "warning",
            f"Only {concurrency:.2f} full-length requests fit in the KV cache",
            tuple(evidence),
            _compact(acts),
        )
    ]


def predicted_misfit(ctx) -> list[Finding]:
    """Before launch (no log): the memory model says the weights or one request do not fit."""
    if ctx.events or ctx.account is None:
        return []
    acc = ctx.account
    per = kv_bytes_per_token(ctx.model, acc.tp, acc.pp, ctx.knobs.kv_cache_dtype)
    evidence = list(acc.arithmetic)
    if acc.kv_cache_gib <= 0:
        tp = A.lowest_fitting_tp(ctx)
        acts = [
            A.raise_tp(ctx, tp, "the weights and activations fill the budget on this many GPUs"),
            A.raise_kv_budget(
                ctx,
                -acc.kv_cache_gib + acc.max_model_len * per / GIB,
                "a larger budget leaves room for a KV cache",
            ),
        ]
        return [
            Finding(
                "predicted-no-kv-memory",
                1,
                "error",
                "By the estimate, nothing is left for the KV cache",
                tuple(evidence),
                _compact(acts),
            )
        ]
    if acc.kv_capacity_tokens < acc.max_model_len:
        extra = (acc.max_model_len - acc.kv_capacity_tokens) * per / GIB
        acts = [
            A.raise_kv_budget(ctx, extra, "one request at max_model_len must fit"),
            A.lower_max_model_len(acc.kv_capacity_tokens, "what the estimate says fits"),
            A.fp8_kv(ctx, "twice the tokens in the same memory"),
            A.raise_tp(ctx, A.lowest_fitting_tp(ctx), "spreads weights and KV over more GPUs"),
        ]
        return [
            Finding(
                "predicted-max-seq-len-exceeds-kv",
                4,
                "warning",
                f"By the estimate, one request of {acc.max_model_len:,} tokens will not fit "
                f"({acc.kv_capacity_tokens:,} tokens of KV cache)",
                tuple(evidence),
                _compact(acts),
            )
        ]
    return []


RULES = (
    max_seq_len_exceeds_kv,
    no_cache_memory,
    cuda_oom,
    free_memory_below_utilization,
    heads_not_divisible,
    world_size_too_large,
    pp_unsupported,
    kv_capacity_thin,
    predicted_misfit,
)
