"""A max_model_len over vLLM's own 32K threshold that the start-up profile runs as one prefill.

V0 without chunked prefill profiles one whole max_model_len prefill at start-up, and V1 does
too with --no-enable-chunked-prefill (oom_lengths.whole_prompt_profile, read per release):
its activations grow with max_model_len, and a model's own length (128K, 1M, a rope-scaled
524288) started without --max-model-len makes them larger than any GPU. vLLM's own answer,
in the warning it prints from 0.5.4 when it leaves chunked prefill off above 32K: "This may
cause OOM errors during the initial memory profiling phase ... Consider setting
--max-model-len to a smaller value."

- A CUDA OOM the log does not place, at start-up (`long_context`, called by rules_oom): lower
  max_model_len (to 32K, vLLM's threshold), then the utilization. In a person's words an
  "OOM" may also be the KV cache's refusal of one request of that length, which the same cut
  answers: there any release counts, and the utilization is left alone.
- No OOM in the log yet, only the engine's config line or the command (`long_context_profile`):
  the same warning for the releases that do not print it (before 0.5.4), ranked after every
  finding a real error line gives.

With the model's shape and the GPU the arithmetic decides (the weights plus the profile's
activations, or one request's KV cache, against total x utilization): a length that fits is
not the cause. Without them the evidence says what it would take.
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.actions import largest_known_gpu_gib
from headroom.doctor.findings import Finding, compact_actions
from headroom.doctor.memory_model import activation_gib
from headroom.doctor.model_bytes import GIB, kv_bytes_per_token, weights_gib_per_gpu
from headroom.doctor.oom_lengths import (
    LONG_CONTEXT,
    Length,
    length_in_force,
    long_name_shape,
    model_in_words,
    whole_prompt_profile,
)
from headroom.doctor.oom_sizes import past_profile
from headroom.doctor.rules_preflight import model_name

_WHY = "the start-up profile (or the KV cache) must hold one request of max_model_len"


def _long_need(ctx, shape, length: Length, whole: bool | None) -> tuple[float, str] | None:
    """(GiB per GPU, how) that a `length`-long max_model_len needs with nothing else: the
    weights plus the profile's whole-prompt activations (whole) or one request's KV cache,
    whichever is larger."""
    knobs = ctx.knobs
    tp, pp = max(knobs.tp, 1), max(knobs.pp, 1)
    try:
        weights = weights_gib_per_gpu(shape, tp, pp, knobs.quantization)
        kv = length.tokens * kv_bytes_per_token(shape, tp, pp, knobs.kv_cache_dtype) / GIB
        act = activation_gib(shape, tp, length.tokens, 1, False) if whole else 0.0
    except (ArithmeticError, AttributeError, TypeError, ValueError):
        return None
    one_gpu = "" if ctx.known("tensor_parallel_size") else " at TP 1 (the TP in use is not given)"
    if whole and act >= kv:
        return weights + act, (
            f"{weights:.2f} GiB of weights + {act:.2f} GiB of activations for one "
            f"{length.tokens:,}-token prefill{one_gpu}"
        )
    if ctx.inputs.command is None and weights > largest_known_gpu_gib():
        # No command line: weights that fit no GPU at TP 1 ran at some TP the input does not
        # give, so only the request's own KV cache is counted (at TP 1, an upper bound)
        return kv, (
            f"{kv:.2f} GiB of KV cache for one request of {length.tokens:,} tokens at TP 1 "
            f"(the weights, {weights:.2f} GiB, fit no single GPU: the TP in use is not given)"
        )
    return weights + kv, (
        f"{weights:.2f} GiB of weights + {kv:.2f} GiB of KV cache for one request of "
        f"{length.tokens:,} tokens{one_gpu}"
    )


def _weighed(ctx, name: str, length: Length, whole: bool | None, total: float | None):
    """The arithmetic's lines, or None when it shows the length fits (not the cause)."""
    shape = ctx.model or long_name_shape(name)
    sizable = shape is not None and shape.sizable
    need = _long_need(ctx, shape, length, whole) if sizable else None
    if need is not None and total:
        budget = total * ctx.utilization
        if need[0] < budget:
            return None
        return [f"{need[1]} = {need[0]:.2f} GiB, more than the budget {budget:.2f} GiB"]
    if need is not None:
        return [
            f"{need[1]} = {need[0]:.2f} GiB per GPU: more than any GPU of under "
            f"{need[0] / ctx.utilization:.0f} GiB holds at utilization {ctx.utilization_said}"
        ]
    return ["the model's shape or the GPU is not known: the arithmetic would say how long a "
            "max_model_len fits (--model-config, --gpus)"]  # fmt: skip


def _release_line(whole: bool | None, why: str) -> str:
    if whole is not None:
        return why
    return ("the release is not known: V0 without chunked prefill profiles a whole "
            "max_model_len prefill, and every release needs one request of max_model_len in "
            "the KV cache")  # fmt: skip


def long_context(ctx, event, phase: str, evidence: list[str]) -> Finding | None:
    """A CUDA OOM at start-up with a max_model_len over 32K that the profile runs whole (or
    said in words): lower max_model_len (module docstring)."""
    if phase not in ("unknown", "activation") or past_profile(ctx, event):
        return None
    words = bool(event.fields.get("from_words"))
    given = model_name(ctx)
    # PyTorch's own line carries its numbers and never a model's name; an OOM line without
    # numbers that names a model is a person's sentence quoting it ("... start DeepSeek-r1-awq
    # model, there is a phenomenon of cuda out of memory", vllm#13252's title)
    numbered = any(k in event.fields for k in ("tried_gib", "total_gib", "free_gib"))
    named = model_in_words(event.line) if (words or not numbered) else None
    words = words or named is not None
    name = given or named or ""
    # a model given (--model-config) is the one that ran, whatever else the words name
    length = length_in_force(ctx, None if given or ctx.inputs.model is not None else name or None)
    if length is None or length.tokens <= LONG_CONTEXT:
        return None
    whole, why_whole = whole_prompt_profile(ctx, length.tokens)
    if not whole and not words:
        return None  # the profile does not run max_model_len: it is not what filled the GPU
    value = event.fields.get("total_gib")
    total = float(value) if isinstance(value, int | float) and value > 0 else None
    total = total or (ctx.gpu.min_usable_gib if ctx.gpu is not None else None)
    weighed = _weighed(ctx, name, length, whole, total)
    if weighed is None:
        return None
    found = [*evidence, length_line(ctx, length), _release_line(whole, why_whole), *weighed]
    acts = [A.lower_max_model_len(LONG_CONTEXT, _WHY)]
    if not words and (less := A.lower_kv_memory(ctx, None, "leaves room above the profile")):
        acts.append(less)
    if assumed(ctx, length):
        # the length is vLLM's default for the model, not one the input says ran: a
        # condition, ranked after the causes the input does say (rank_order.ID_ORDER)
        title = f"Out of GPU memory, if max_model_len was left at the model's {length.tokens:,}"
        fid = ASSUMED_ID
    else:
        title = f"Out of GPU memory with a {length.tokens:,}-token max_model_len"
        fid = "cuda-oom-long-context"
    return Finding(fid, 4, "error", title, tuple(found), compact_actions(acts))


ASSUMED_ID = "cuda-oom-if-long-context"


def assumed(ctx, length: Length) -> bool:
    """Whether `length` is only vLLM's default for the model: no input says what ran."""
    return not length.chosen and not ctx.known("max_model_len")


def length_line(ctx, length: Length) -> str:
    """The evidence line for the max_model_len weighed: in force, or only the default."""
    if assumed(ctx, length):
        return (
            f"the max_model_len in force is not known (no command line): vLLM's default for "
            f"this model is {length.tokens:,} ({length.source})"
        )
    return f"max_model_len {length.tokens:,}: {length.source}"


def long_context_profile(ctx) -> list[Finding]:
    """No OOM in the log yet: the release will profile one whole max_model_len prefill over
    32K that the GPU cannot hold (or that nothing shows it can)."""
    if ctx.of("cuda_oom") or past_profile(ctx):
        return []
    length = length_in_force(ctx)
    if length is None or length.tokens <= LONG_CONTEXT:
        return []
    whole, why_whole = whole_prompt_profile(ctx, length.tokens)
    if not whole:
        return []
    total = ctx.gpu.min_usable_gib if ctx.gpu is not None else None
    weighed = _weighed(ctx, model_name(ctx), length, whole, total)
    if weighed is None:
        return []
    evidence = (length_line(ctx, length), why_whole, *weighed,
                "vLLM's own advice for this case: 'Consider setting --max-model-len to a "
                "smaller value'")  # fmt: skip
    title = f"The start-up profile will run one {length.tokens:,}-token prefill"
    if assumed(ctx, length):
        title = f"If max_model_len was left at the model's {length.tokens:,}, {title[4:]}"
    act = A.lower_max_model_len(LONG_CONTEXT, _WHY)
    return [Finding("preflight-long-context-profile", 4, "warning", title, evidence, (act,))]


RULES = (long_context_profile,)
