"""Words that ask for a quantized version of a model, so that it runs on the GPUs at hand.

"FP16 version is impossible to run on local GPU, I hope there will be GPTQ and AWQ versions,
please!!!" (QwenLM/Qwen3-VL#719), "WOuld be nice to have AWQ quantization, so we can run on
vLLM with a lower end GPU." (rubra-ai/rubra#119), "[Feature]: Support awq quantization on
Window?" (SystemPanic/vllm-windows#16), "有没有量化版本" (the Chinese shape of the ask). The
answers are a quantized checkpoint (AWQ, GPTQ, FP8) and vLLM's --quantization for it.

Not it: a failure with a quantized model ("AWQ model fails", "GPTQ error"), a statement that
one is used, a negation, and a quantized KV cache (--kv-cache-dtype is step 5). Never raises.
"""

from __future__ import annotations

import re

__all__ = ["quantized_wanted"]

_IA = re.IGNORECASE | re.ASCII
_MAX_CHARS = 2000

_QUANT = (
    r"(?:AWQ|GPTQ|GGUF|int4|int8|w4a16|w8a8|4[- ]?bit|8[- ]?bit|quanti[sz]ed|quanti[sz]ation|"
    r"quants?)"
)
_WISH = (
    r"(?:hope|hoping|wish|would\s+(?:be\s+)?(?:nice|great|good|love|appreciate)|"
    r"(?:is|are)\s+there|will\s+there\s+be|any\s+plans?|plan(?:s|ning)?\s+to|when\s+will|"
    r"please\s+(?:add|release|provide|support|upload)|looking\s+for|request(?:ing)?|"
    r"can\s+(?:you|we)\s+(?:get|have|release|provide))"
)
_EN = (
    rf"\b{_WISH}\b[^.?!]{{0,60}}?\b{_QUANT}\b",
    # a feature request for a method: "[Feature]: Support awq quantization on Window?"
    rf"^\s*\[Feature\]:?\s*(?:please\s+)?(?:add\s+)?support\s+(?:for\s+)?{_QUANT}\b",
)
_ZH = (
    r"(?:有没有|是否有|有无|希望|能否|能不能|求|出一?个|提供|什么时候出)[^。？！?!]{0,20}"
    r"(?:量化|AWQ|GPTQ|int4|int8|INT4|INT8)",
)
_SAID = re.compile("|".join(f"(?:{p})" for p in (*_EN, *_ZH)), _IA | re.MULTILINE)
# A failure or a KV cache in the same sentence: not an ask for a checkpoint.
_NOT_ASK = re.compile(
    r"\b(?:error|errors|fail(?:s|ed|ing|ure)?|crash\w*|bug|broken|wrong|garbage|gibberish|"
    r"slow(?:er)?|kv[-_ ]cache|kv_cache_dtype)\b|报错|失败|错误|乱码",
    _IA,
)
_NEGATED = re.compile(r"\b(?:not|n't|never|no)\s+(?:\w+\s+){0,2}$", _IA)
_SENTENCE_END = re.compile(r"(?<=[;!?。；！？])|\n|\.(?=\s|$)")


def quantized_wanted(text: object) -> bool:
    """Whether a sentence of the text asks for a quantized version (module doc). Never
    raises."""
    if not isinstance(text, str) or not text.strip():
        return False
    try:
        for sentence in _SENTENCE_END.split(text[:_MAX_CHARS]):
            if not sentence or _NOT_ASK.search(sentence):
                continue
            for match in _SAID.finditer(sentence):
                if not _NEGATED.search(sentence[: match.start()]):
                    return True
        return False
    except Exception:  # a reader of untrusted text must not stop the doctor
        return False
