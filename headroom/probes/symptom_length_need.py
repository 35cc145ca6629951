"""Words that ask what hardware a context length needs: the length is the requirement.

"请教glm4-9b-1M跑起来需要多少显存？ ... 请问一下需要多少显存才能跑支持max_model_len为1M的大模型？"
(zai-org/GLM-4#149), "用vllm部署，开启1M上下文，至少需要多少显存" (MiniMax-AI/MiniMax-M1#2),
"What's the minimum VRAM needed to use entire context length for Llama 3.1 70B" and "how many
nodes each having 8 H100s do I need ... at full context length" (vllm-project/vllm#8188). The
answers size the GPUs for that length (GLM-4#149: 8 H100 for 1M; MiniMax-M1#2: 8x141 GB, or
int8 experts on 8x96 GB; LargeWorldModel/LWM#7: 1 A100-80GB for 32K ... 8 for 512K), never a
shorter length: the person asked for this one.

The reader returns the length in tokens (K = 1,024, M = 1,048,576: 128K is 131,072 and 1M
1,048,576 in model configs), 0 for "the entire / full context length" (the model's own), or
None when the words ask no sizing question or name no length. Never raises (untrusted text).
"""

from __future__ import annotations

import re

__all__ = ["length_wanted"]

_IA = re.IGNORECASE | re.ASCII
_MAX_CHARS = 2000
_MAX_TOKENS = 1 << 24  # 16M tokens: beyond any model's context

# A sizing question: how much memory, how many GPUs / nodes / cards.
_QUESTION = re.compile(
    r"(?:需要|要|得)多少(?:显存|张卡|块卡|卡|GPU|机器|资源)|至少(?:需要|要)[^。？?\n]{0,12}?(?:显存|卡|GPU)|"
    r"多少显存|几张卡|几块卡|"
    r"\bhow\s+much\s+(?:gpu\s+)?(?:memory|vram)\b|\bminimum\s+(?:gpu\s+)?(?:memory|vram)\b|"
    r"\bhow\s+many\s+(?:gpus|nodes|cards|h100s?|a100s?)\b|\bvram\s+(?:is\s+)?(?:needed|required)\b|"
    r"\b(?:memory|vram)\s+requirements?\b",
    _IA,
)
# A length named beside a context word: "max_model_len为1M", "1M上下文", "128k context",
# "context length of 131072".
_UNIT = r"(\d{1,7}(?:\.\d{1,2})?)\s*([kKmM])?(?![\w.])"
_CONTEXT_WORD = (
    r"(?:context(?:\s+length|\s+window)?|tokens?|上下文|长度|长文本|max[_\s-]*model[_\s-]*len)"
)
_LENGTH = re.compile(
    rf"(?:max[_\s-]*model[_\s-]*len|context(?:\s+length|\s+window)?|上下文(?:长度)?)"
    rf"\s*(?:为|=|:|of|是|到|to)?\s*{_UNIT}|"
    rf"(?<![\w.-]){_UNIT}\s*(?:的)?\s*{_CONTEXT_WORD}",
    _IA,
)
_FULL = re.compile(
    r"\b(?:entire|full|whole|maximum|max)\s+context(?:\s+length|\s+window)?\b|完整上下文|最大上下文",
    _IA,
)


def _tokens(number: str, unit: str | None) -> int | None:
    value = float(number)
    if unit:
        value *= 1024 if unit.lower() == "k" else 1024 * 1024
    tokens = int(value)
    # a bare number is a length only when it reads as one (4,096 and up)
    if not unit and tokens < 4096:
        return None
    return tokens if 0 < tokens <= _MAX_TOKENS else None


def length_wanted(text: object) -> int | None:
    """The context length (tokens) a sizing question asks for; 0 for the model's full
    length; None when the words ask no such thing."""
    if not isinstance(text, str) or not text.strip():
        return None
    words = text[:_MAX_CHARS]
    try:
        if not _QUESTION.search(words):
            return None
        found = set()
        for match in _LENGTH.finditer(words):
            groups = [g for g in match.groups()]
            number, unit = (
                (groups[0], groups[1]) if groups[0] is not None else (groups[2], groups[3])
            )
            if number is not None and (tokens := _tokens(number, unit)) is not None:
                found.add(tokens)
        if len(found) == 1:
            return found.pop()
        if not found and _FULL.search(words):
            return 0
    except Exception:  # a reader of untrusted text must not stop the doctor
        return None
    return None
