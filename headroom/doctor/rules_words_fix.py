"""A log of words that says what fixed the failure, or that the context length caused it.

probes.symptom_fixes reads both from a person's sentence; these rules turn them into the
five-step table's actions:

- a stated fix ("OOM ... until reduce max_model_len to 188000", "After setting --max-model-len
  8192 the OOM went away", "reducing gpu_memory_utilization to 0.8 fixed it"): that knob, that
  way. A verb says the way; "set X to N" is compared with what ran (the command line, else
  the model's own length, else the release's default utilization); a length, a sequence or a
  batch budget set after a memory failure can only have helped by going down;
- CUDA-graph capture said to fail: vLLM's own advice before capture, in its order (a lower
  utilization, eager mode, fewer sequences);
- a memory failure said in words whose sentence blames the context length ("using default
  value [of max_model_len] caused OOM", "128k context OOM", "上下文太长导致爆显存"): step 4's
  max_model_len, down. Only for a CUDA OOM said in words: a KV shortage in words keeps the
  table's own order (the budget first, kv-order's rules).

Never a wrong direction: a fix whose way cannot be told (a utilization "set to 0.9" with no
value to compare with) says nothing, and the rules stay silent when a real vLLM error line
is in the log (ctx.words is None then).
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.findings import KNOB_STEPS, Action, Finding, compact_actions
from headroom.doctor.versions import default_utilization, effective_version
from headroom.probes.symptom_facts import WordFacts
from headroom.probes.symptom_fixes import StatedFix

# Knobs that free memory only by going down: a stated "set" after a memory failure lowered them.
_DOWN_FOR_MEMORY = ("max_model_len", "max_num_seqs", "max_num_batched_tokens")
_COSTS = {
    "max_model_len": "requests longer than this are rejected",
    "gpu_memory_utilization": "the share of the GPU vLLM takes: less KV cache, or less slack",
    "max_num_seqs": "fewer requests run at once: lower throughput under load",
    "max_num_batched_tokens": "long prompts prefill in more chunks: slower time to first token",
    "tensor_parallel_size": "more GPUs, and an all-reduce on every layer",
}


def _words(ctx) -> WordFacts | None:
    return getattr(ctx, "words", None)


def _said(ctx, *kinds: str) -> list:
    return [e for e in ctx.of(*kinds) if e.fields.get("from_words")]


def _memory_trouble(ctx, words: WordFacts) -> bool:
    return bool(_said(ctx, "cuda_oom", "no_cache_memory")) or words.memory_short


def _current(ctx, knob: str) -> float | None:
    """The value that ran: the command line's (or the log's non-default args), else what
    vLLM takes when it is not set, where that is known."""
    knobs = ctx.knobs
    if knob == "max_model_len":
        shape = ctx.model_read
        return knobs.max_model_len or getattr(shape, "max_position_embeddings", None) or None
    if knob == "gpu_memory_utilization":
        if knobs.gpu_memory_utilization:
            return knobs.gpu_memory_utilization
        return default_utilization(effective_version(ctx.version))
    if knob == "tensor_parallel_size":
        return knobs.tp
    return getattr(knobs, knob, None)


def _way(ctx, words: WordFacts, fix: StatedFix) -> str | None:
    if fix.direction is not None:
        return fix.direction
    current = _current(ctx, fix.knob)
    if fix.value is not None and current is not None:
        if fix.value < current - 1e-9:
            return "lower"
        if fix.value > current + 1e-9:
            return "raise"
        return None  # the value that already ran: not what changed
    if fix.knob in _DOWN_FOR_MEMORY and _memory_trouble(ctx, words):
        return "lower"
    return None


def _value(knob: str, value: float | None):
    if value is None:
        return None
    if knob == "gpu_memory_utilization":
        return round(value, 3)
    return int(value)


def _action(ctx, fix: StatedFix, way: str) -> Action | None:
    why = f"the words say it worked after this change: {fix.text[:160]}"
    value = _value(fix.knob, fix.value)
    if fix.knob == "max_model_len" and way == "lower" and isinstance(value, int):
        return A.lower_max_model_len(value, why)
    if fix.knob == "tensor_parallel_size":
        if way != "raise":
            return None  # a TP lowered to fix memory contradicts step 1; leave it unsaid
        return Action(fix.knob, "raise", value, why, _COSTS[fix.knob], step=1)
    return Action(fix.knob, way, value, why, _COSTS[fix.knob])


def stated_fix(ctx) -> list[Finding]:
    """The knob the words say fixed the failure, turned the way they say."""
    words = _words(ctx)
    if words is None or not words.fixes:
        return []
    said = _said(ctx, "cuda_oom", "no_cache_memory")
    if not (said or words.trouble or words.cannot_run or words.memory_short):
        return []  # a change described without any failure: not a fix
    acts = []
    for fix in words.fixes:
        way = _way(ctx, words, fix)
        action = _action(ctx, fix, way) if way is not None else None
        if action is not None:
            acts.append(action)
    if not acts:
        return []
    first = acts[0]
    step = first.step or KNOB_STEPS.get(first.knob)
    evidence = tuple(dict.fromkeys(f.text for f in words.fixes))
    return [
        Finding(
            "words-stated-fix",
            step,
            "error",
            f"The words say the failure went away after changing {first.knob}",
            evidence,
            tuple(acts),
        )
    ]


def length_blamed(ctx) -> list[Finding]:
    """A CUDA OOM said in words whose sentence blames the context length: max_model_len
    sets the KV cache a request needs and (V0, or no chunked prefill) the start-up profile's
    prefill; lower it (to half the length that ran when that is known)."""
    words = _words(ctx)
    if words is None or not words.length_blamed:
        return []
    said = _said(ctx, "cuda_oom")
    if not said:
        return []
    current = _current(ctx, "max_model_len")
    why = "the words name the context length as the cause of the out-of-memory"
    if current and ctx.known("max_model_len"):
        action = A.lower_max_model_len(int(current) // 2, f"{why}; half of {int(current):,}")
    else:
        action = Action("max_model_len", "lower", None, why, _COSTS["max_model_len"])
    evidence = [said[0].line.strip()[:400]]
    if words.text and words.text != evidence[0]:
        evidence.append(words.text[:400])
    if current and ctx.known("max_model_len"):
        evidence.append(
            f"max_model_len {int(current):,} ran (the command line, else the model's own)"
        )
    elif current:
        evidence.append(
            "the max_model_len in force is not known (no command line): vLLM's default for "
            f"this model is its own {int(current):,}"
        )
    return [
        Finding(
            "words-length-blamed",
            4,
            "error",
            "Out of GPU memory, and the words blame the context length",
            tuple(evidence),
            (action,),
        )
    ]


def graph_capture_failed(ctx) -> list[Finding]:
    """CUDA-graph capture said to fail ("CUDA graph capture fails during profiling"): the
    graphs are captured after the KV cache took its share of the GPU, outside vLLM's budget
    in the releases that do not count them (versions.RELEASE_TABLE), so what is left beside
    the budget ran out. vLLM's own words before capture (V0 worker/model_runner.py
    capture_model, 0.6.3): "CUDA graphs can take additional 1~3 GiB memory per GPU. If you are
    running out of memory, consider decreasing `gpu_memory_utilization` or enforcing eager
    mode. You can also reduce the `max_num_seqs` as needed": that order."""
    words = _words(ctx)
    if words is None or not words.graph_capture_failed:
        return []
    why = "CUDA-graph capture needs memory outside vLLM's budget"
    acts = [A.lower_kv_memory(ctx, None, f"{why}: a smaller budget leaves it room")]
    if not ctx.knobs.enforce_eager:
        acts.append(A.enforce_eager("no CUDA graphs to capture"))
    seqs = ctx.knobs.max_num_seqs or (ctx.account.max_num_seqs if ctx.account else None)
    if seqs:
        acts.append(A.lower_max_num_seqs(seqs, None, "fewer batch sizes to capture graphs for"))
    kept = compact_actions(acts)
    if not kept:
        return []
    evidence = (words.text[:400], "the words say CUDA-graph capture failed")
    return [
        Finding(
            "words-graph-capture",
            4,
            "error",
            "CUDA-graph capture failed: the memory beside vLLM's budget ran out",
            evidence,
            kept,
        )
    ]


RULES = (stated_fix, length_blamed, graph_capture_failed)
