"""Words that say the model's output is numerically broken: NaN, "!!!!!", empty text.

"NaN when running OLMo-core v2 trained models via VLLM" (allenai/olmo-cookbook#60),
"[Bug]: GLM-4-32B-0414-FP8 output !!!!! error (tensor is nan)" (vllm#17154), "[Bug]: Model
outputs are always '!!!!!!!!!!!!!!'" (vllm#22881: "nan will cause the detokenizer to output
'!!!!'"), "[Bug]: Gemma-3 models output empty text." (vllm#14817). The usual cause is float16:
vLLM casts a float32 checkpoint to float16 (0.6.3 config._get_and_verify_dtype; the
platform's first dtype from 0.9, which is float16 on GPUs without bfloat16), and models
trained in bfloat16 overflow in it (0.9.2 config._FLOAT16_NOT_SUPPORTED_MODELS: gemma2,
gemma3, plamo2, glm4, "Numerical instability. Please use bfloat16 or float32 instead.").

This module reads two strengths of that report:
- `nan_output`: NaN values or a run of "!" as the output (what NaN logits decode to);
- `empty_output`: empty or garbled output, which has other causes too (a chat template, stop
  tokens), so the doctor weighs it only beside a float16 setting or a model vLLM itself keeps
  out of float16.

A negated clause ("no NaN", "not empty") says nothing. Never raises; bounded.
"""

from __future__ import annotations

import re

__all__ = [
    "empty_output",
    "fp16_unstable_name",
    "nan_output",
    "structured_backend_named",
    "structured_output_slow",
]

_IA = re.IGNORECASE | re.ASCII
_MAX_CHARS = 2000

_NAN = re.compile(
    r"(?<![A-Za-z0-9_])NaNs?(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])nan(?:\s+values?|\s+logits?)(?![A-Za-z])|"
    r"\b(?:is|are|become|becomes|became|gives?|outputs?|produces?|returns?)\s+nan\b|"
    # a run of "!" as the output, not as emphasis ("OOM!!!!"): quoted, or after a word for
    # what the model gave
    r"['\"`]!{3,}|(?:outputs?|produces?|generat\w*|returns?|gives?|answers?|responses?|results?|"
    r"text|always|only|all|输出|生成|返回|回答|全是|都是)[^.;?\n]{0,20}?!{3,}|"
    r"全是感叹号|都是感叹号|\bexclamation\s+marks?\b",
    _IA,
)
_EMPTY = re.compile(
    r"\b(?:empty|blank)\s+(?:text|outputs?|responses?|strings?|completions?|generations?|"
    r"results?|answers?)\b|\boutputs?\s+(?:is|are|were|was)\s+(?:always\s+|often\s+)?empty\b|"
    r"\bgenerates?\s+nothing\b|\bgarbled\b|\bgibberish\b|\bgarbage\s+(?:output|text|characters|tokens)\b|"
    r"输出为空|输出空|返回为空|空字符串|空输出|输出乱码|乱码",
    _IA,
)
_NEGATED = re.compile(
    r"\b(?:no|not|never|without|n't)\b[^.;!?,]*$|(?:没有|不是|无)[^。；！？，]{0,4}$", _IA
)
# Families vLLM refuses to run in float16 (0.9.2 config._FLOAT16_NOT_SUPPORTED_MODELS), by the
# names their checkpoints carry: Gemma 2 and 3, PLaMo 2, GLM-4-0414 (model_type glm4).
_FP16_UNSTABLE = re.compile(
    r"(?<![A-Za-z])gemma[-_ ]?[23](?![0-9])|(?<![A-Za-z])plamo[-_ ]?2(?![0-9])|"
    r"(?<![A-Za-z])glm[-_ ]?4[-_.A-Za-z0-9]*0414",
    _IA,
)


def _reported(pattern: re.Pattern[str], text: object) -> bool:
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        words = text[:_MAX_CHARS]
        for match in pattern.finditer(words):
            before = words[: match.start()]
            cut = max(before.rfind(c) for c in ".;:!?\n。；！？")
            if not _NEGATED.search(before[cut + 1 :]):
                return True
        return False
    except Exception:  # a reader of untrusted text must not stop the doctor
        return False


def nan_output(text: object) -> bool:
    """NaN values, or a run of '!' as the output, reported (module doc). Never raises."""
    return _reported(_NAN, text)


def empty_output(text: object) -> bool:
    """Empty or garbled output reported (module doc). Never raises."""
    return _reported(_EMPTY, text)


def fp16_unstable_name(text: object) -> bool:
    """The text names a model family vLLM keeps out of float16. Never raises."""
    if not isinstance(text, str):
        return False
    try:
        return bool(_FP16_UNSTABLE.search(text[:_MAX_CHARS]))
    except Exception:
        return False


# Structured output said to be slow: "Structured outputs inference often took a very long
# time, and eventually causing a timeout" (vllm#10081), "guided generation is very slow in
# offline mode" (vllm#8313), "Very slow guided decoding with Outlines backend since v0.6.5"
# (vllm#12005), "Performance loss with guided_json activated in vLLM" (outlines#1011).
_STRUCTURED = (
    r"structured[\s_-]+outputs?|guided[\s_-]+(?:decoding|generation|json|regex|choice|grammar)|"
    r"guided_(?:json|regex|choice|grammar)|json[\s_-]+schema|json[\s_-]+mode|response_format|"
    r"constrained[\s_-]+(?:decoding|generation)|(?:CFG|grammar)[\s_-]+decoding|xgrammar|"
    r"outlines[\s_-]+backend|lm[-_]format[-_]enforcer|结构化输出|格式化输出|约束解码"
)
_SLOW = (
    r"\bslow(?:er|ly|s|ing|down)?\b|\blong\s+time\b|\btakes?\s+(?:a\s+)?(?:very\s+|too\s+)?long\b|"
    r"\btook\s+(?:a\s+)?(?:very\s+|too\s+)?long\b|\btime[sd]?\s*out\b|\btimeouts?\b|"
    r"\bhigh\s+latency\b|\b(?:performance|throughput|speed)\s+(?:loss|drops?|degrad\w*|regress\w*)\b|"
    r"\bdegraded\b|很慢|变慢|太慢|超时|耗时"
)
_STRUCTURED_SLOW = re.compile(
    rf"(?:{_STRUCTURED})[^.;!?\n]{{0,80}}?(?:{_SLOW})|(?:{_SLOW})[^.;!?\n]{{0,40}}?(?:{_STRUCTURED})",
    _IA,
)


def structured_output_slow(text: object) -> bool:
    """Structured (guided) output said to be slow or to time out. Never raises."""
    return _reported(_STRUCTURED_SLOW, text)


_BACKEND = re.compile(
    r"(?<![A-Za-z])(outlines|xgrammar|guidance|lm[-_]format[-_]enforcer)(?![A-Za-z])", _IA
)


def structured_backend_named(text: object) -> str | None:
    """The one structured-output backend the text names (lower case, dashes), else None."""
    if not isinstance(text, str):
        return None
    try:
        names = {m.group(1).lower().replace("_", "-") for m in _BACKEND.finditer(text[:_MAX_CHARS])}
        return names.pop() if len(names) == 1 else None
    except Exception:
        return None
