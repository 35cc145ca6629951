"""The words ask for a quantized checkpoint, or say more GPUs made vLLM slower: step 1 and step
2 answers from words.

Quant wish. A quantized version asked for in words, so the model runs on the GPUs at hand: step 1.

"FP16 version is impossible to run on local GPU, I hope there will be GPTQ and AWQ versions"
(QwenLM/Qwen3-VL#719: answered with a community AWQ checkpoint), "Would be nice to have AWQ
quantization, so we can run on vLLM with a lower end GPU" (rubra-ai/rubra#119: the maintainer
published an AWQ checkpoint, "Worked!"), "[Feature]: Support awq quantization on Window?"
(SystemPanic/vllm-windows#16: `--quantization awq_marlin`). The words (probes.symptom_layout)
name the fix themselves: weights in 4 or 8 bits, a half or a quarter of bf16's, from a
quantized checkpoint (vLLM reads AWQ / GPTQ / compressed-tensors from its config) or
--quantization fp8 on the fly on a GPU that has FP8. That is step 1's knob for weights that
do not fit (oom_weights offers the same action when nothing sizes the model).

Silent when the model or the command is quantized already (candidates.is_quantized), beside
any error line (a failure's own rule answers), and when the words ask for no quantized
version. The action carries no value: which checkpoint or method depends on the model's
published checkpoints and the GPU.

Tp slower. More GPUs said to make vLLM slower, for weights that fit fewer: a smaller TP (step 2).

Tensor parallelism all-reduces every layer's output across the GPUs (two all-reduces per
transformer layer, each step); for a model whose weights one GPU (or fewer GPUs) holds, that
communication costs more than the split compute saves, most of all over PCIe. The field's
threads (probes.symptom_layout: vllm#689, #1873, #6027, HabanaAI/vllm-fork#204) are
answered that way by vLLM's maintainers ("The cost of inter-GPU communication outweighs the
parallelisation of the compute for smaller models"; "You don't really need TP for memory
reasons ... Running TP across PCIe-connected GPUs isn't ideal for latency, especially with
smaller models"), and the fix is the smaller TP, more replicas for throughput.

Only when the words say so, the TP in force is above 1 (the command line's, else the number
the sentence gives: "tp2", "tensor-parallel-size=2"), and the weights fit the smaller TP
with room for a KV cache: the model's size from its config or name (rules_preflight.sizing),
else a parameter count the words give ("a 1b model", bf16); at most 60 % of one GPU's memory
(of a 16 GB GPU when the GPU is not known). Silent with no size, beside any error line, and
when the halved TP would not hold the weights: then TP is there for memory.
"""

from __future__ import annotations

import re

from headroom.doctor.candidates import is_quantized
from headroom.doctor.findings import Action, Finding
from headroom.doctor.rules_preflight import sizing
from headroom.probes.symptom_layout import quantized_wanted, tp_slower

__all__ = []


# --- quant wish -----------------------------------------------------------------------------------

QUANT_WISH_ID = "words-quantized-wanted"

_NEUTRAL_KINDS = frozenset({"version", "model", "non_default_args", "max_model_len"})


def quantized_version_wanted(ctx) -> list[Finding]:
    """The words ask for a quantized version (module doc)."""
    said = next((line.strip() for line in ctx.prose_lines if quantized_wanted(line)), None)
    if said is None:
        return []
    if any(e.kind not in _NEUTRAL_KINDS for e in ctx.events):
        return []
    if is_quantized(ctx.model_read, ctx.knobs):
        return []
    act = Action(
        "quantization",
        "set",
        None,
        "a quantized checkpoint (AWQ, GPTQ, FP8) holds the weights in a half or a quarter of "
        "bf16's memory; --quantization fp8 quantizes on the fly on a GPU with FP8",
        "some quality loss; a quantized checkpoint of this model must exist for AWQ/GPTQ",
        step=1,
    )
    evidence = (
        said[:400],
        "the words ask for a quantized version: weights that fit the GPUs at hand",
    )
    title = "A quantized checkpoint asked for: the weights in 4 or 8 bits"
    return [Finding(QUANT_WISH_ID, 1, "warning", title, evidence, (act,))]


# --- tp slower ------------------------------------------------------------------------------------

TP_SLOWER_ID = "words-tp-slower"

_WEIGHTS_SHARE = 0.6  # of one GPU's memory: the weights, with room left for the KV cache

_UNKNOWN_GPU_GIB = 16.0  # the smallest data-centre GPU the field runs vLLM on (T4, V100 16G)

_BF16_BYTES = 2

_GIB = 1024**3

_TP_IN_WORDS = re.compile(
    r"\btp\s*=?\s*(\d{1,2})\b|\btp(\d{1,2})\b|tensor[-_ ]?parallel[-_ ]size\s*=?\s*(\d{1,2})",
    re.IGNORECASE,
)

_PARAMS_IN_WORDS = re.compile(
    r"(?<![\w.])(\d{1,3}(?:\.\d)?)\s*b\b(?:[- ]?param\w*|\s+model)?", re.IGNORECASE
)

_TP_SLOWER_NEUTRAL_KINDS = frozenset(
    {"version", "model", "non_default_args", "max_model_len", "stats"}
)


def _tp(ctx, text: str) -> int | None:
    if ctx.knob_state("tensor_parallel_size") == "set":
        return ctx.knobs.tp
    sizes = [int(g) for m in _TP_IN_WORDS.finditer(text) for g in m.groups() if g]
    return max(sizes) if sizes else None


def _weights_gib(ctx, text: str, tp: int) -> float | None:
    """The weights per GPU at `tp`: the model's size, else the words' parameter count."""
    sized = sizing(ctx)
    if sized is not None:
        return sized.per_gpu(tp, ctx.knobs.pp, ctx.knobs.quantization)
    counts = {float(m.group(1)) for m in _PARAMS_IN_WORDS.finditer(text)}
    if len(counts) != 1:
        return None  # no count, or two (a comparison of models): nothing to size
    return counts.pop() * 1e9 * _BF16_BYTES / _GIB / tp


def tp_said_slower(ctx) -> list[Finding]:
    """More GPUs said to be slower (module doc)."""
    said = next((line.strip() for line in ctx.prose_lines if tp_slower(line)), None)
    if said is None or any(e.kind not in _TP_SLOWER_NEUTRAL_KINDS for e in ctx.events):
        return []
    tp = _tp(ctx, said)
    if tp is None or tp < 2:
        return []
    smaller = tp // 2
    weights = _weights_gib(ctx, said, smaller)
    if weights is None:
        return []
    gpu_gib = ctx.gpu.usable_gib if ctx.gpu is not None else _UNKNOWN_GPU_GIB
    if weights > _WEIGHTS_SHARE * gpu_gib:
        return []  # TP holds the weights: it is there for memory
    act = Action(
        "tensor_parallel_size",
        "lower",
        smaller,
        f"the weights fit TP {smaller} ({weights:.1f} GiB per GPU of {gpu_gib:.0f}): below that "
        "size each step's all-reduces between GPUs cost more than the split compute saves",
        "less KV cache per replica; run replicas (data parallel) on the freed GPUs for throughput",
        step=2,
    )
    evidence = (
        said[:400],
        f"tensor parallel size {tp}: every layer all-reduces across the GPUs; the weights do "
        f"not need {tp} GPUs",
    )
    title = f"More GPUs said to be slower: the weights fit TP {smaller}"
    return [Finding(TP_SLOWER_ID, 2, "warning", title, evidence, (act,))]


RULES = (
    quantized_version_wanted,
    tp_said_slower,
)
