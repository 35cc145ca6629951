"""The output said to be NaN, "!!!!!" or empty: float16 numerics, answered with the dtype.

"NaN when running OLMo-core v2 trained models via VLLM" (the maintainer: "for fp32 models HF
uses fp32 whereas vllm uses fp16 ... fp16 can make even HF produce `!!!!!` output"),
"GLM-4-32B-0414-FP8 output !!!!! error (tensor is nan)" (vllm#17154: "This model has
numerical stability issues when using float16. Please change the base dtype to bfloat16 or
float32"; "it does work by using dtype bfloat16"), "Gemma-3 models output empty text."
(vllm#14817: "Gemma3 is trained on bfloat16 ... dtype='bfloat16'"). What vLLM does with
dtype "auto" sets this up: a float32 checkpoint runs in float16 (0.6.3
config._get_and_verify_dtype, Gemma 2 excepted), and from 0.9 in the platform's first dtype,
float16 on a GPU without bfloat16 (config._resolve_auto_dtype, with "Falling back to ... for
compatibility"); 0.9.2 refuses float16 outright for gemma2, gemma3, plamo2 and glm4.

So: set dtype to bfloat16, or float32 on a GPU before Ampere (no bfloat16: V100, T4, RTX 20,
Pascal). NaN or a run of "!" is enough; empty or garbled output only beside float16 on the
command line or a family vLLM keeps out of float16 (it has other causes). Nothing when the
command already runs bfloat16 or float32: the dtype is not it.
"""

from __future__ import annotations

import re

from headroom.doctor.findings import Action, Finding
from headroom.doctor.gpu_table import find_gpu
from headroom.doctor.versions import parse_version
from headroom.probes.symptom_facts import WordFacts

_FP16 = {"half", "float16", "fp16"}
_WIDE = {"bfloat16", "bf16", "float32", "float", "fp32"}
_NO_BF16_GENERATIONS = {"Volta", "Turing", "Pascal", "Maxwell", "Kepler"}
# GPU names outside the table that have no bfloat16 (compute capability below 8.0)
_PRE_AMPERE = re.compile(
    r"V100|\bT4\b|P100|P40|\bP4\b|K80|M60|RTX ?20\d\d|GTX|Quadro RTX|TITAN (?:V|RTX|Xp?)\b", re.I
)


def _no_bf16(ctx) -> bool:
    name = getattr(ctx.gpu, "name", None) or ""
    if not name:
        return False
    known = find_gpu(name)
    if known is not None:
        return known.generation in _NO_BF16_GENERATIONS
    return bool(_PRE_AMPERE.search(name))


def fp16_numerics(ctx) -> list[Finding]:
    """NaN / '!!!!' (or empty output beside float16) said in words: set a wider dtype."""
    words: WordFacts | None = getattr(ctx, "words", None)
    if words is None or not (words.nan_output or words.empty_output):
        return []
    dtype = str(ctx.arg("dtype") or "auto").lower()
    if dtype in _WIDE:
        return []  # already bfloat16 or float32: float16 is not what broke it
    fp16 = dtype in _FP16
    if not words.nan_output and not (fp16 or words.fp16_unstable):
        return []  # empty output alone has other causes (templates, stop tokens)
    value = "float32" if _no_bf16(ctx) else "bfloat16"
    said = "--dtype " + dtype if fp16 else "dtype auto, which runs a float32 checkpoint in float16"
    evidence = [
        words.text[:400],
        f"{said}: float16's range overflows on models trained in bfloat16 or float32, and NaN "
        "logits decode to '!' or to nothing",
    ]
    if words.fp16_unstable:
        evidence.append("vLLM 0.9.2 refuses float16 for this family: 'Numerical instability. "
                        "Please use bfloat16 or float32 instead.'")  # fmt: skip
    cost = (
        "twice the weight memory of float16 (this GPU has no bfloat16)"
        if value == "float32"
        else "needs a GPU with bfloat16 (compute capability 8.0+; else float32)"
    )
    act = Action("dtype", "set", value, "a dtype whose range holds the model's activations", cost)
    return [
        Finding(
            "words-fp16-numerics",
            None,
            "error",
            f"The output is NaN or empty: float16 overflows, run {value}",
            tuple(evidence),
            (act,),
        )
    ]


# The guided-decoding backends of each release, read from its source: 0.6.3
# engine/arg_utils.py guided_decoding_backend = 'outlines' (with lm-format-enforcer); 0.9.2
# config.py DecodingConfig.backend = "auto" under V1 (xgrammar, guidance as its fallback),
# "xgrammar" under V0. The other backend is the threads' answer to a slow one (vllm#10081:
# "try using guided decoding backends other than `outlines`" -> xgrammar "faster too";
# vllm#12122: xgrammar degraded after 0.6.5).
_OTHER_BACKEND = {
    "outlines": "xgrammar",
    "lm-format-enforcer": "xgrammar",
    "xgrammar": "guidance",
    "guidance": "xgrammar",
    "auto": "guidance",
}


def _backend_in_force(ctx, words: WordFacts) -> tuple[str | None, str]:
    given = ctx.arg("guided_decoding_backend")
    if given:
        return str(given).lower().replace("_", "-"), "the command line's"
    if words.structured_backend:
        return words.structured_backend, "the one the words name"
    version = parse_version(ctx.version)
    if version is not None and version < (0, 6, 5):
        return "outlines", f"vLLM {ctx.version}'s default"
    return None, "not known"


def structured_output_slow(ctx) -> list[Finding]:
    """Structured output said to be slow or to time out: another guided-decoding backend."""
    words: WordFacts | None = getattr(ctx, "words", None)
    if words is None or not words.structured_slow:
        return []
    backend, how = _backend_in_force(ctx, words)
    value = _OTHER_BACKEND.get(backend or "", "xgrammar")
    if backend == value:
        return []
    why = (
        f"{backend} ({how}) builds the grammar's token masks; {value} is the other backend"
        if backend
        else "xgrammar compiles the grammar once (0.6.5+; the default from 0.7); if it already "
        "runs xgrammar, guidance"
    )
    act = Action(
        "guided_decoding_backend",
        "set",
        value,
        why,
        "a backend may lack a feature of the schema (vLLM says which it cannot take)",
    )
    return [
        Finding(
            "words-structured-output-slow",
            None,
            "warning",
            "Structured output is slow: the guided-decoding backend builds its masks per step",
            (words.text[:400], f"the backend in force is {backend or 'not known'} ({how})"),
            (act,),
        )
    ]


RULES = (fp16_numerics, structured_output_slow)
