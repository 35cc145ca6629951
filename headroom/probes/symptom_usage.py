"""Words that say vLLM takes too much GPU memory, without any failure.

One of the most common questions on vLLM's tracker is not an error at all: "Why 0.5B model
requires 21G gpu ram ?" (vllm#4253), "GPU consumption" ("when load 13b llama in vllm, GPU
usage is about 73G", vllm#550), "the gguf model is only 800M, but why does the GPU memory
usage exceed 20G?" (vllm#7979), "Is there an option to reduce GPU memory usage？" (vllm#7495),
"vllm占用显存太多". The answer is the same in every thread: vLLM reserves
gpu_memory_utilization (0.9 by default) of the GPU up front for the weights and the KV cache,
whatever the model's size; lower it (or, when it is already low, a shorter max_model_len and
eager mode: vllm#3345).

This module reads that complaint: vLLM (or the model) taking / using / occupying much, most
or all of the GPU's memory, a size of it, a usage called too high, or a wish to reduce or
limit the GPU memory it takes, in English and Chinese. Host RAM, disk and a negation ("does
not use much memory") are not it. Never raises; bounded.
"""

from __future__ import annotations

import re

from headroom.probes.prose_lines import said_unnegated
from headroom.probes.symptom_setup import GPU_NAME

__all__ = ["memory_taken"]

_IA = re.IGNORECASE | re.ASCII
_MAX_CHARS = 2000

_TAKE = (
    r"(?:takes?|taking|took|uses?|using|used|consumes?|consuming|consumed|occup(?:y|ies|ying|ied)|"
    r"reserves?|reserved|reserving|spends?|spending|eats?|eating|allocat(?:e|es|ed|ing)|"
    r"grabs?|grabbing|hogs?|requires?|required|needs?|needed|pre-?allocat(?:e|es|ed|ing))"
)
_AMOUNT = (
    r"(?:almost\s+|nearly\s+|about\s+|around\s+|over\s+|more\s+than\s+|up\s+to\s+)?"
    r"(?:all|most|(?:the\s+)?(?:whole|entire)|so\s+much|too\s+much|much\s+more|much|a\s+lot\s+of|"
    r"lots\s+of|huge|high|"
    r"excessive|\d{2,3}\s*%|\d+(?:\.\d+)?\s*(?:G|GB|GiB)(?![A-Za-z]))"
)
_GPU_MEMORY = r"(?:GPU|VRAM|vram|video|gpu\s+ram|graphics)"
_EN = (
    # "takes 38 GB GPU memory", "requires 21G gpu ram", "consumes high memory", "uses almost
    # all of the GPU memory", "takes up 90% of VRAM"
    # ("use all my gpus" counts GPUs: the noun ends the word)
    rf"\b{_TAKE}\s+(?:up\s+)?{_AMOUNT}\s+(?:of\s+)?(?:the\s+|my\s+|its\s+)?(?:available\s+)?"
    rf"(?:{_GPU_MEMORY}(?:\s+memory)?|memory)(?![A-Za-z])",
    # "uses almost all available space on my H100" (vllm#8816)
    rf"\b{_TAKE}\s+(?:up\s+)?{_AMOUNT}\s+(?:of\s+)?(?:the\s+)?(?:available\s+)?(?:space|memory)\s+"
    rf"(?:on|of)\s+(?:the\s+|my\s+|a\s+|each\s+|every\s+)?(?:GPUs?|cards?|{GPU_NAME})",
    # a size asked about: "why `3B-Instruct-AWQ` takes 16G" (vllm#15204), "why does a 7B model
    # need 60GB"
    rf"\bwhy\b[^.?!;]{{0,80}}?\b{_TAKE}\s+(?:up\s+)?(?:about\s+|around\s+|over\s+|almost\s+|"
    r"nearly\s+|more\s+than\s+)?\d+(?:\.\d+)?\s*(?:G|GB|GiB)(?![A-Za-z])",
    # "GPU usage is about 73G", "GPU memory usage exceed 20G", "VRAM usage too high"
    rf"\b{_GPU_MEMORY}\s+(?:memory\s+)?(?:usage|consumption|footprint)\s+(?:is\s+|was\s+)?"
    r"(?:about\s+|around\s+|over\s+)?(?:too\s+high|so\s+high|very\s+high|high|huge|exceed(?:s|ed)?|"
    r"\d+(?:\.\d+)?\s*(?:G|GB|GiB)(?![A-Za-z]))",
    # "high GPU memory usage", "huge VRAM consumption"
    rf"\b(?:high|huge|excessive|large|massive)\s+(?:{_GPU_MEMORY}\s+)?memory\s+"
    r"(?:usage|consumption|footprint)",
    # a wish to reduce it: "how to reduce gpu memory in vllm", "Is there an option to reduce
    # GPU memory usage？" ("Reduce GPU memory usage of X" alone is a pull request's title)
    rf"\b(?:how\s+(?:to|can\s+i|do\s+i|could\s+i)|option\s+to|way\s+to|possible\s+to|want\s+to|"
    rf"need\s+to|can\s+i|could\s+i)\s+(?:reduce|limit|lower|decrease|cap|control|restrict)\s+"
    rf"(?:the\s+)?{_GPU_MEMORY}\s*(?:memory)?",
)
_ZH = (
    r"显存(?:的)?(?:占用|使用|消耗)(?:量|率)?(?:过高|太高|太大|很大|过大|很高|偏高|非常大|非常高|巨大|"
    r"达到|超过|高达)",
    # "占用整个显存" (QwenLM/Qwen#835), "只占用 50 % 的显存", "占满了整个显存"
    r"(?:占用|占|吃|用|消耗)(?:了)?(?:大量|全部|所有|整个|几乎全部|几乎所有|很多|太多|\d{2,3}\s*%|"
    r"\d+(?:\.\d+)?\s*[Gg][Bb]?)\s*(?:的)?显存",
    r"(?:占满|吃满|用满|占尽)(?:了)?(?:整个|全部|所有)?(?:的)?显存",
    r"(?:占用|占|吃|用|消耗)(?:了)?(?:的)?显存(?:太多|过多|很多|过大|太大|过高|太高)",
    r"(?:降低|减少|限制|控制|减小)(?:vllm|vLLM)?(?:的)?显存(?:占用|使用|消耗)?",
    # set to one share, still takes more: "我设置了vllm显存占用为0.7，但是最后一张卡好像还是占用了0.9"
    # (modelscope/ms-swift#3342)
    r"(?:还是|仍然|依然|却)(?:会)?(?:占用|占了|占满)(?:了)?\s*(?:0?\.\d{1,2}|\d{2,3}\s*%)",
)
_TAKEN = re.compile("|".join(f"(?:{p})" for p in (*_EN, *_ZH)), _IA)
# A size seen taken, in a sentence that names the GPU's memory elsewhere: "文档写占用显存18GB，
# 但是我实际vllm部署时候发现占用了70多GB呢" (OpenBMB/MiniCPM-V#919: the docs' 18 GB against the 70
# the reservation took). "了" says it was observed; "多" after the number is "more than".
_ZH_SIZE_TAKEN = re.compile(
    r"(?:占用|占|吃|用|消耗)了\s*(?:将近|接近|差不多|大约|约)?\s*\d+(?:\.\d+)?\s*多?\s*"
    r"(?:G|GB|GiB)(?![A-Za-z])",
    _IA,
)
_GPU_MEMORY_NAMED = re.compile(r"显存|显卡|\bGPU|\bVRAM\b", _IA)
# Host memory, disk: not the GPU's; vLLM's own lines ("Model loading took 13.31 GiB memory",
# "Graph capturing finished in 71 secs, took 6.56 GiB") report, they do not complain. A
# negation before it: not the complaint.
_NOT_GPU = re.compile(
    r"(?<!GPU )(?<!gpu )\bRAM\b|\bCPU\b|\bhost\s+memory|\bsystem\s+memory|\bdisk\b|\bswap\b|"
    r"/dev/shm|内存(?!.*显存)|\bloading\s+(?:model\s+weights\s+)?took\b|\bweights\s+took\b|"
    r"\bcapturing\s+finished\b",
    _IA,
)
_NEGATED = re.compile(
    r"\b(?:not|n't|never|no|without|doesn't|does\s+not|won't)\b[^.;!?]*$|(?:不|没有|没)[^。；！？]{0,6}$",
    _IA,
)


# Tags of vLLM's pull requests and feature requests: a change to vLLM's code, not a user's
# complaint ("[Perf] Reduce peak memory usage ...", "[Feature]: ...").
_DEV_TAG = re.compile(
    r"^\s*\[(?:Core|Perf|Kernel|Bugfix|BugFix|Feature|RFC|Model|Misc|CI|Doc|Docs|Refactor|V1|"
    r"Frontend|Hardware|Optimization|Quantization|Spec\s*Decode|Build|Test|CI/Build)\]",
    _IA,
)


def memory_taken(text: object) -> bool:
    """Whether a sentence of the text says vLLM takes too much GPU memory (module doc).
    Never raises."""
    if not isinstance(text, str) or _DEV_TAG.match(text):
        return False
    return said_unnegated(
        text, _TAKEN, _NEGATED, max_chars=_MAX_CHARS, skip=(_NOT_GPU,)
    ) or said_unnegated(
        text,
        _ZH_SIZE_TAKEN,
        _NEGATED,
        max_chars=_MAX_CHARS,
        skip=(_NOT_GPU,),
        keep=lambda match: bool(_GPU_MEMORY_NAMED.search(match.string)),  # in its sentence
    )
