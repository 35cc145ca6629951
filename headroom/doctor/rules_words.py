"""A person's sentence instead of a log: the symptom plus what the words say about the setup.

probes.symptom_text turns "OOM" / "显存不足" / "KV cache too small" into the event a real line
gives, and the OOM and KV rules answer it. What those rules cannot see is what the rest of
the sentence says (probes.symptom_facts); these rules combine it with the command line, the
GPUs and the model, on the five-step table:

- a memory symptom on ONE GPU of several ("OOM when 1 gpu, even though I have multi-gpu"):
  step 1, memory sets the lowest TP: raise TP onto the GPUs at hand;
- heads that the GPU count does not divide ("固定12头, 只能4卡部署, 8卡设备上无法部署"):
  the largest TP that divides both the heads and the GPUs, PP across the rest (step 3), or
  that TP alone (step 2) when the words do not say memory is short;
- a gpu_memory_utilization below the release default named as the cause of a failed start
  ("gpu利用率默认参数为0.61导致rtx3060用不起"), with no OOM said: step 4, raise it to the
  default (the budget vLLM's own "No available memory for the cache blocks" asks to raise);
- a KV-cache dtype or eager mode the person says works ("... - working with fp8_e5m2"),
  beside a trouble: set it (a set has no direction to get wrong).

Never a wrong direction: a rule says nothing when the words, the command line and the GPUs
disagree (the command already spreads the model, --gpus says one GPU, the words call the
utilization too high, an OOM beside a low utilization).
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import default_utilization, effective_version
from headroom.probes.symptom_facts import WordFacts


def _words(ctx) -> WordFacts | None:
    return getattr(ctx, "words", None)


def _said_symptoms(ctx, *kinds: str) -> list:
    """The symptoms a person's words named (symptom_text's events), of these kinds."""
    return [e for e in ctx.of(*kinds) if e.fields.get("from_words")]


def _heads_known(ctx, words: WordFacts) -> int | None:
    if words.heads:
        return words.heads
    model = ctx.model_read
    return getattr(model, "num_attention_heads", None) or None


def one_gpu_of_several(ctx) -> list[Finding]:
    """Out of memory on one GPU while the machine has more: the table's step 1 (memory
    accounting -> the lowest TP that holds the model) says spread it over them. Without a
    memory symptom, words that contrast one GPU at work with several configured ("vllm多卡启动
    显示成功，但是实际上只有一张显卡被占用") get the threads' answer to that: a TP over the
    GPUs at hand (vLLM runs on TP x PP GPUs whatever is visible)."""
    words = _words(ctx)
    if words is None or not words.one_gpu_in_use:
        return []
    if not (words.one_gpu_of_several or (ctx.gpu_count or 0) > 1):
        return []  # neither the words nor --gpus say there are more GPUs
    said = _said_symptoms(ctx, "cuda_oom", "no_cache_memory")
    if ctx.knobs.tp * ctx.knobs.pp > 1:
        return []  # the command line already spreads the model
    at_hand = ctx.gpu_count or words.gpus_at_hand
    if at_hand is not None and at_hand < 2:
        return []  # --gpus says one GPU: the words' "several" is not this machine
    if not said:
        return _idle_gpus(ctx, words, at_hand)
    heads = _heads_known(ctx, words)
    limit = at_hand or 2
    candidates = [t for t in range(2, limit + 1) if not heads or heads % t == 0]
    if ctx.model is not None:
        candidates = [t for t in candidates if t in A.valid_tps(ctx.model, limit)]
    fitting = A.lowest_fitting_tp(ctx)
    if fitting is not None and fitting >= 2 and fitting in candidates:
        candidates = [fitting]
    if not candidates:
        return []
    value = candidates[0]
    have = f"{at_hand} GPUs" if at_hand else "several GPUs"
    action = A.raise_tp(ctx, value, f"the model's memory is split over {value} GPUs instead of one")
    if action is None:
        return []
    evidence = (
        said[0].line.strip()[:400],
        f"the words say the model runs on one GPU while the machine has {have}",
        _layout_line(ctx),
    )
    return [
        Finding(
            "words-one-gpu-of-several",
            1,
            "error",
            f"Out of GPU memory on one GPU of {have}: tensor parallelism spreads the model",
            evidence,
            (action,),
        )
    ]


def _layout_line(ctx) -> str:
    """The TP x PP in use as the input says it (the words' one GPU when nothing else does)."""
    if ctx.known("tensor_parallel_size"):
        return f"TP {ctx.knobs.tp} x PP {ctx.knobs.pp} on the command line"
    return "no command line gives the TP x PP: the words' one GPU in use is TP x PP 1"


def _idle_gpus(ctx, words: WordFacts, at_hand: int | None) -> list[Finding]:
    """One GPU at work of several, no failure: TP over the GPUs the heads allow."""
    if not words.one_gpu_of_several or not at_hand:
        return []  # the words themselves must contrast one GPU with a count of several
    heads = _heads_known(ctx, words)
    candidates = [t for t in range(2, at_hand + 1) if not heads or heads % t == 0]
    if ctx.model is not None:
        candidates = [t for t in candidates if t in A.valid_tps(ctx.model, at_hand)]
    if not candidates:
        return []
    value = candidates[-1]
    action = A.raise_tp(ctx, value, f"vLLM runs on TP x PP GPUs: TP {value} puts {value} to work")
    if action is None:
        return []
    evidence = (
        words.text[:400],
        f"the words say one GPU does the work while the machine has {at_hand}",
        _layout_line(ctx) + ": vLLM uses TP x PP GPUs",
    )
    return [Finding("words-one-gpu-used", 1, "warning",
                    f"One GPU of {at_hand} at work: tensor parallelism uses the others",
                    evidence, (action,))]  # fmt: skip


def heads_over_gpus(ctx) -> list[Finding]:
    """A head count the GPUs at hand do not divide, said in words: TP must divide the heads,
    so TP = the largest divisor of both and PP takes the remaining GPUs (step 3); the TP
    alone is step 2's answer when the words do not say that memory is short."""
    words = _words(ctx)
    if words is None or words.heads is None:
        return []
    if not (words.cannot_run or words.memory_short or words.trouble):
        return []  # a head count in passing, not a failure
    at_hand = ctx.gpu_count or words.gpus_at_hand
    heads = words.heads
    if not at_hand or at_hand < 2 or heads % at_hand == 0:
        return []
    tp = max(t for t in range(1, at_hand + 1) if heads % t == 0 and at_hand % t == 0)
    pp = at_hand // tp
    if ctx.knobs.tp == tp and ctx.knobs.pp >= pp:
        return []  # the command line already has this layout
    failing_tp = ctx.knobs.tp if ctx.knobs.tp > 1 else at_hand
    evidence = [
        words.text[:400],
        f"{heads} heads: TP must divide them; {at_hand} GPUs do not, {tp} divides both",
        f"TP {tp} x PP {pp} = {at_hand} GPUs: TP inside the GPUs that divide the heads, "
        "PP across the rest",
    ]
    acts = [
        Action(
            "pipeline_parallel_size",
            "raise",
            pp,
            f"PP {pp} takes the GPUs TP {tp} cannot use, so all {at_hand} GPUs hold the model",
            "pipeline bubbles at low concurrency",
            also=(("tensor_parallel_size", tp),),
        )
    ]
    if not words.memory_short and tp != failing_tp:
        acts.append(
            Action(
                "tensor_parallel_size",
                "lower" if tp < failing_tp else "raise",
                tp,
                f"the largest TP that divides the {heads} heads on {at_hand} GPUs",
                f"{tp} GPUs must hold the model",
                step=2,
            )
        )
    return [
        Finding(
            "words-heads-over-gpus",
            3,
            "error",
            f"{at_hand} GPUs do not divide the model's {heads} heads",
            tuple(evidence),
            tuple(acts),
        )
    ]


def low_utilization_blamed(ctx) -> list[Finding]:
    """A utilization below the release's default, named as the cause of a failed start, with
    no OOM said: the budget vLLM sizes the KV cache from is too small; raise it."""
    words = _words(ctx)
    if words is None or not words.utilization_blamed or words.utilization is None:
        return []
    kv_short = _said_symptoms(ctx, "no_cache_memory")
    if ctx.of("cuda_oom") or (words.memory_short and not kv_short):
        return []  # an OOM wants the budget down: the words cannot settle which
    if not (words.cannot_run or words.trouble or kv_short):
        return []
    if ctx.knobs.kv_cache_memory_bytes:
        return []  # the byte budget overrides the utilization
    said, given = words.utilization, ctx.knobs.gpu_memory_utilization
    if given is not None and abs(given - said) > 0.005:
        return []  # the words and the command line disagree on the value
    default = default_utilization(effective_version(ctx.version))
    if said >= default:
        return []
    action = Action(
        "gpu_memory_utilization",
        "raise",
        default,
        f"{said:g} is below the release's default {default:g}: vLLM's budget for the weights "
        "and the KV cache is that share of the GPU",
        "less memory left for other processes on the GPU",
    )
    evidence = (
        words.text[:400],
        f"the words name gpu_memory_utilization {said:g} as the cause",
    )
    return [
        Finding(
            "words-low-utilization",
            4,
            "error",
            f"gpu_memory_utilization {said:g} leaves vLLM too small a share of the GPU",
            evidence,
            (action,),
        )
    ]


def works_with(ctx) -> list[Finding]:
    """The person says which setting works ("working with fp8_e5m2", "works with
    --enforce-eager") beside a trouble: set that (a KV dtype is step 5, eager step 4)."""
    words = _words(ctx)
    if words is None or not words.works_with:
        return []
    said = _said_symptoms(ctx, "cuda_oom", "no_cache_memory")
    if not (words.trouble or words.cannot_run or words.memory_short or said):
        return []
    acts = []
    for knob, value in words.works_with:
        if knob == "kv_cache_dtype" and (ctx.knobs.kv_cache_dtype or "auto").lower() != value:
            acts.append(
                Action(
                    "kv_cache_dtype",
                    "set",
                    value,
                    f"the words say it works with a {value} KV cache",
                    "an fp8 KV cache: check the output quality",
                )
            )
        elif knob == "enforce_eager" and not ctx.arg("enforce_eager"):
            acts.append(A.enforce_eager("the words say it works in eager mode"))
    if not acts:
        return []
    return [
        Finding(
            "words-works-with",
            None,
            "error",
            "The failing setup works with a setting the words name",
            (words.text[:400],),
            tuple(acts),
        )
    ]


RULES = (one_gpu_of_several, heads_over_gpus, low_utilization_blamed, works_with)
