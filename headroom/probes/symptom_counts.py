"""GPU counts a person's words name, for a log that is only words (probes.symptom_facts).

"8 GPUs", "2x3080", "8xA100", "8*80G A100", "H800 1*80G", "one GPU", "single-GPU", "4卡",
"8张卡", "单卡", "双卡", "两块4090", "4090x2", "CUDA_VISIBLE_DEVICES=0,1"; whether the text says "several"
without a count ("multi-gpu", "多卡"); whether it says one GPU does the work ("only the first
GPU", "第一张卡"), which a count of one said to WORK ("works fine on a single GPU") is not.
A number is read only beside the word that says what it counts. Never raises.
"""

from __future__ import annotations

import re

from headroom.probes.symptom_setup import GPU_NAME

__all__ = ["MAX_GPUS", "gpu_counts", "one_gpu_in_use", "several_gpus"]

_IA = re.IGNORECASE | re.ASCII
MAX_GPUS = 1024  # a count above this is not a GPU count ("2048 GPUs" of a cluster aside)
_MAX_GPUS = MAX_GPUS

_ZH_DIGITS = {"一": 1, "单": 1, "两": 2, "二": 2, "双": 2, "三": 3, "四": 4, "五": 5, "六": 6,
              "七": 7, "八": 8, "十六": 16}  # fmt: skip
_EN_NUMBERS = {"one": 1, "a single": 1, "single": 1, "two": 2, "dual": 2, "three": 3,
               "four": 4, "six": 6, "eight": 8, "sixteen": 16}  # fmt: skip

# "8 GPUs", "8 gpu", "2 cards", "4 x GPUs", "one GPU", "a single GPU", "single-GPU", "dual GPU".
_EN_COUNT = re.compile(
    r"(?<![\w.])(\d{1,4}|one|a single|single|two|dual|three|four|six|eight|sixteen)"
    r"[\s-]*(?:[x×*]\s*)?(?:NVIDIA\s+)?(?:GPUs?|cards?|graphics\s+cards?|devices?)(?![\w-])",
    _IA,
)
# "2x3080", "8xA100", "8*a100 40g", "2 * 3080Ti": a count times a GPU model ("Mixtral-8x7B" is
# a model, not 8 GPUs of a "7B": the lookbehind and the letter-first model keep it out), and a
# bare four-digit model is a GeForce number (1050-5090): "1024x1024" is an image size.
_TIMES_MODEL = re.compile(
    r"(?<![\w.-])(\d{1,2})\s*[x×*]\s*(?:NVIDIA\s+|Tesla\s+|GeForce\s+)?(?:RTX\s*|GTX\s*)?"
    r"(?:[A-Z]{1,2}\d{2,4}|[1-5]0[5-9]0)(?!\d)",
    _IA,
)
# "4卡", "8张卡", "8 块 GPU", "8个GPU", "单卡", "双卡", "八卡": a count before 卡/张卡/块卡/GPU/显卡.
# 卡 alone also means "stuck" (卡住, 卡在): only a count right before it makes it a card; 第一张卡
# is "the first card", an ordinal (_ONE_IN_USE reads it).
_ZH_COUNT = re.compile(
    r"(?<![A-Za-z0-9.第])(\d{1,4}|十六|[一单两二双三四五六七八])\s*(?:张|块|个|台)?\s*"
    # the card's size may stand between: "四张80g显卡", "8张40G的卡"
    r"(?:(?<=[张块个台])\d{1,3}\s*[gG][bB]?\s*的?\s*)?(?:显卡|卡|GPU|gpu)"
)
# A count before a GPU's name: "two Nvidia 3090s", "4 A100s", "8 H100", "8张A800", "两块4090",
# "4xL4" (a one-digit name _TIMES_MODEL does not take).
_NAMED_COUNT = re.compile(
    rf"(?<![A-Za-z0-9_.])(\d{{1,3}}|one|a single|single|two|dual|three|four|six|eight|sixteen|"
    rf"十六|[一单两二双三四五六七八])\s*(?:[x×*]\s*)?(?:张|块|个|台)?\s*{GPU_NAME}",
    _IA,
)
# A count times a size times a GPU, or a GPU then a count times its size: "8*80G A100"
# (GAIR-NLP/auto-j#13), "H800 1*80G" (vllm#6737), "2x 24GB 4090", "2x11gb gpu" (vllm#18478).
_TIMES_SIZE = re.compile(
    rf"(?<![\w.])(\d{{1,2}})\s*[x×*]\s*\d{{1,3}}\s*(?:G|GB|GiB)\s*(?:的)?\s*"
    rf"(?:{GPU_NAME}|GPUs?\b|cards?\b|显卡|卡)|"
    rf"{GPU_NAME}\s*[(（]?\s*(\d{{1,2}})\s*[x×*]\s*\d{{1,3}}\s*(?:G|GB|GiB)(?![A-Za-z])",
    _IA,
)
# A GPU's name then the count: "4090x2", "A100 x 8", "RTX 3090*2", "H100 ×4" (the count
# after the name, as a shopping list writes it); a size after it is _TIMES_SIZE's.
_NAME_TIMES = re.compile(
    rf"{GPU_NAME}\s*[x×*]\s*(\d{{1,2}})(?![\d.]|\s*(?:G|GB|GiB)\b)",
    _IA,
)
# The devices made visible: "CUDA_VISIBLE_DEVICES=0,1" names two GPUs (vllm#3525's comment:
# "when I use `CUDA_VISIBLE_DEVICES=0,1` to load the model, but only the first one gpu working").
_DEVICE_LIST = re.compile(r"CUDA_VISIBLE_DEVICES\s*=\s*['\"]?(\d{1,3}(?:\s*,\s*\d{1,3})+)")
# A count of one said to WORK is the contrast, not the GPU in use: "not getting loaded on
# multiple GPUs but works fine on a single GPU" (vllm#3974).
_WORKS_ON_ONE = re.compile(
    r"\b(?:works?|working|worked|runs?|running|ran|fine|ok|okay)\s+(?:fine\s+|well\s+|ok\s+|okay\s+)?"
    r"(?:on|with)\s+(?:a\s+single|one|1|single|a)\s+(?:GPU|card)",
    _IA,
)
_SEVERAL = re.compile(
    r"\bmulti(?:ple)?[\s-]*(?:GPUs?|cards?)|\bseveral\s+GPUs|\bmore\s+GPUs|\bother\s+GPUs|"
    r"多卡|多张卡|多块|其他卡|其他显卡|其它卡|其余卡",
    _IA,
)
# Only one GPU does the work: "only the first GPU", "GPU 0 only", "第一张卡的显存增加直到溢出",
# "只有一张显卡被占用" (a count of one is read by the count patterns).
_ONE_IN_USE = re.compile(
    r"\bonly\s+(?:uses?\s+|using\s+|runs?\s+on\s+|on\s+)?(?:the\s+first(?:\s+one)?|one|1|a\s+single)\s+GPU|"
    r"\bGPU\s*0\s+only|"
    r"第一(?:张|块)?(?:显卡|卡|GPU)|只有一(?:张|块)|只用(?:了)?一(?:张|块)",
    _IA,
)


def _number(token: str) -> int | None:
    token = token.strip().lower()
    if token.isdigit():
        return int(token)
    return _ZH_DIGITS.get(token) or _EN_NUMBERS.get(token)


def gpu_counts(text: str) -> tuple[int, ...]:
    found: list[tuple[int, int]] = []  # (position, count)
    for pattern in (_EN_COUNT, _TIMES_MODEL, _ZH_COUNT, _NAMED_COUNT):
        for match in pattern.finditer(text):
            count = _number(match.group(1))
            if count is not None and 0 < count <= _MAX_GPUS:
                found.append((match.start(), count))
    for match in _TIMES_SIZE.finditer(text):
        count = _number(next(g for g in match.groups() if g is not None))
        if count is not None and 0 < count <= _MAX_GPUS:
            found.append((match.start(), count))
    for match in _NAME_TIMES.finditer(text):
        count = _number(match.group(1))
        if count is not None and 0 < count <= _MAX_GPUS:
            found.append((match.start(), count))
    for match in _DEVICE_LIST.finditer(text):
        devices = {d.strip() for d in match.group(1).split(",")}
        if 1 < len(devices) <= _MAX_GPUS:
            found.append((match.start(), len(devices)))
    out: list[int] = []
    for _, count in sorted(found):
        if count not in out:
            out.append(count)
    return tuple(out)


def several_gpus(text: str) -> bool:
    """The text says more than one GPU without a count ("multi-gpu", "多卡")."""
    return bool(_SEVERAL.search(text))


def one_gpu_in_use(text: str, counts: tuple[int, ...]) -> bool:
    """The text says one GPU does the work: a count of one not said to work, or "only the
    first GPU" / "第一张卡"."""
    return (1 in counts and not _WORKS_ON_ONE.search(text)) or bool(_ONE_IN_USE.search(text))
