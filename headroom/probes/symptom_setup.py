"""The setup a person's words name: the model, the GPU kind and its memory.

An issue title is often the whole log ("vllm not support Yi-34B-Chat", "运行qwen-1.5-72B报错",
"Llama-3.2-11B-Vision gives OOM error on 96GB H100", "cannot load llama 3.2 3b on a 16gb gpu",
"24G的显存当使用vllm加载模型时，提示显存不足", "8*a100 40g"). The doctor sizes a model on a GPU
with the memory model; a title gives it both only in words. This module reads them:

- model names: a word that starts with a model family's name ("Qwen2-VL-72B-Instruct",
  "meta-llama/Llama-2-70b-hf", "glm-4-9b-chat-1m") or a family word followed by its version
  and size in separate words ("llama 3.2 3b", "Qwen2.5 7B"). These are candidates only: the
  doctor keeps those its model table knows (headroom.doctor.words_setup);
- GPU names: NVIDIA's datacenter names ("A100", "H100", "V100", "L40S", "T4") and GeForce
  numbers ("4090", "RTX 3090", "3060"), as written;
- GPU memory: a size beside a GPU name ("A100 80G", "A100-40GB") or beside the word for GPU
  memory ("24GB VRAM", "16gb gpu", "24G显存", "显存24G", "48GB显存"). A size beside RAM, a
  model ("the model is only 1.6G") or a disk is not the GPU's.

Conservative: only a name or size the words tie to a GPU or a model family; bounded work on
any input; never raises.
"""

from __future__ import annotations

import re

__all__ = ["GPU_NAME", "gpu_memory_gib", "gpu_names", "model_names"]

# ASCII word classes: a Chinese character beside an English word ("报错OOM", "会OOM",
# "有8 GPUs") is not a word character that blocks \b or a lookaround.
_IA = re.IGNORECASE | re.ASCII

_MAX_CHARS = 2000
_MAX_NAMES = 8

# Families of open checkpoints vLLM serves (the start of a checkpoint's name, lower case).
_FAMILIES = (
    "llama", "codellama", "qwen", "qwq", "yi", "glm", "chatglm", "mistral", "mixtral",
    "ministral", "codestral", "gemma", "phi", "deepseek", "internlm", "internvl", "baichuan",
    "minicpm", "falcon", "command-r", "c4ai", "aya", "gpt-oss", "gpt-j", "gpt-neox", "opt",
    "bloom", "starcoder", "vicuna", "solar", "olmo", "granite", "nemotron", "kimi", "minimax",
    "whisper", "llava", "pixtral", "molmo", "idefics", "paligemma", "smollm", "dbrx", "jamba",
    "exaone", "hunyuan", "ernie", "mimo", "zephyr", "openchat", "tinyllama", "wizardlm",
    "dolphin", "hermes", "nous-hermes", "orca", "xverse", "skywork", "seed-oss",
)  # fmt: skip
_FAMILY = "|".join(sorted((re.escape(f) for f in _FAMILIES), key=len, reverse=True))
# One word: an optional "org/" and a name that starts with a family and holds a digit
# ("Qwen1.5-72B-Chat", "Yi-34B-Chat", "THUDM/glm-4-9b-chat", "qwen2.5vl").
_NAME_WORD = re.compile(
    rf"(?<![A-Za-z0-9_./-])((?:[A-Za-z0-9][A-Za-z0-9_.-]*/){{0,2}}(?:{_FAMILY})(?=[\d\s._-]|$)"
    r"[A-Za-z0-9_.+-]*)",
    _IA,
)
# A name written in words: the family (and its version) then a version, a size or a variant
# each in its own word ("llama 3.2 3b", "Qwen2.5 7B", "qwen2.5vl 7B", "Yi 34B chat").
_PART_WORD = r"(?:\d+(?:\.\d+)?[bBmMkK]?|v\d[\w.]*|vl|chat|instruct|it|coder|vision|moe|a\d+b)"
_NAME_PHRASE = re.compile(
    rf"(?<![A-Za-z0-9_./-])((?:{_FAMILY})[A-Za-z0-9_.-]*(?:[ ]+{_PART_WORD}(?![A-Za-z0-9_.-])){{1,3}})",
    _IA,
)

# NVIDIA's names as people write them. Datacenter: longest first so "H200" is not read "H20".
_DATACENTER = (
    r"GH200|B200|B100|H200|H100|H800|H20|A100|A800|A6000|A5000|A4000|A40|A30|A10G?|A16|"
    r"L40S|L40|L20|L4|V100|P100|P40|T4|RTX\s?(?:PRO\s?)?6000(?:\s?Ada)?"
)
# GeForce numbers 1050-5090 (two zeros-or-tens digits: 2060, 3080, 4090); "Ti"/"Super" kept.
_GEFORCE = r"(?:(?:RTX|GTX)\s?)?[1-5]0[5-9]0(?:\s?Ti|\s?Super)?"
# One GPU name as a pattern of its own (symptom_facts counts "two Nvidia 3090s", "8张A800").
# The name ends the word, or a count follows it glued ("4090x2", "A100*8").
_NAME_END = r"(?:(?=[xX×*]\d)|(?![A-Za-z0-9_.]))"
GPU_NAME = rf"(?:NVIDIA\s+)?(?:Tesla\s+|GeForce\s+)?(?:{_DATACENTER}|{_GEFORCE})(?:s\b)?{_NAME_END}"
_GPU_NAME = re.compile(
    # ("4块GPU3090": the word GPU glued to the number, dhcode-cpp/X-R1#38)
    rf"(?:(?<![A-Za-z0-9_.-])|(?<=\d[xX×*])|(?<=GPU)|(?<=gpu))(?:NVIDIA\s+)?(?:Tesla\s+|GeForce\s+)?"
    rf"({_DATACENTER}|{_GEFORCE})(?:s\b)?{_NAME_END}",
    _IA,
)
# A size with its unit: "24G", "24GB", "24 GB", "80GiB", "16gb", "12G".
_SIZE = r"(?<![A-Za-z0-9_.])(\d{1,3}(?:\.\d)?)\s*(?:G|GB|GiB)(?![A-Za-z])"
_MEMORY_WORD = r"(?:显存|显卡|VRAM|vram|GPUs?|gpus?|cards?|graphics\s+cards?|卡)"
_MEMORY = re.compile(
    # "24GB VRAM", "16gb gpu", "24G显存", "24G的显存", "80G的显卡", "48GB 显存"
    rf"{_SIZE}\s*(?:的)?\s*(?:of\s+)?{_MEMORY_WORD}|"
    # a count times the size: "2x11gb gpu" (vllm#18478), "4*24G显卡"
    rf"(?<=\d[xX×*])(\d{{1,3}}(?:\.\d)?)\s*(?:G|GB|GiB)(?![A-Za-z])\s*(?:的)?\s*{_MEMORY_WORD}|"
    # "显存24G", "显存为 24GB", "VRAM: 24GB", "GPU memory of 24 GB", "24564MiB" is not read
    rf"(?:显存|VRAM|GPU\s+memory|video\s+memory)\s*(?:为|是|只有|仅|:|：|of|is)?\s*{_SIZE}|"
    # a size said not to be enough, in a sentence about GPU memory: "到底需要多大显存？16G都不够"
    # (QwenLM/Qwen3-VL#1224)
    rf"(?<=显存)[^。！!\n]{{0,12}}?{_SIZE}\s*(?:的)?\s*(?:都|也|还|完全)?\s*(?:不够|不足)",
    _IA,
)
# A size beside a GPU name: "A100 80G", "A100-40GB", "4090 24G", "V100(32G)", "a 3060 with
# 12G", "96GB H100".
_NAMED_SIZE = re.compile(
    # ("H800 1*80G": a count times the size, vllm#6737)
    rf"(?:{_DATACENTER}|{_GEFORCE})(?:[\s_-]*(?:SXM\d?|PCIe|NVL))?(?:[\s_(（-]*|\s+with\s+)"
    rf"(?:\d{{1,2}}\s*[x×*]\s*)?{_SIZE}|"
    rf"{_SIZE}[\s-]*(?:NVIDIA\s+)?(?:{_DATACENTER}|{_GEFORCE})(?![A-Za-z0-9_.])",
    _IA,
)
_MAX_GIB = 300.0  # no single GPU has more (B200: 180 GiB); a larger size is not one GPU's


def _text(text: object) -> str:
    return text[:_MAX_CHARS] if isinstance(text, str) else ""


def model_names(text: object) -> tuple[str, ...]:
    """Candidate model names in the text, in order, each once (at most 8). Never raises."""
    words = _text(text)
    if not words:
        return ()
    try:
        found: list[tuple[int, str]] = []
        for pattern in (_NAME_WORD, _NAME_PHRASE):
            for match in pattern.finditer(words):
                name = match.group(1).strip(" .-_")
                if any(ch.isdigit() for ch in name):
                    found.append((match.start(), name))
        out: list[str] = []
        for _, name in sorted(found):
            if name not in out:
                out.append(name)
        return tuple(out[:_MAX_NAMES])
    except Exception:  # a reader of untrusted text must not stop the doctor
        return ()


def gpu_names(text: object) -> tuple[str, ...]:
    """The GPU names the text writes ("A100", "RTX 4090", "3090"), each once, as written
    (spaces collapsed). Never raises."""
    words = _text(text)
    if not words:
        return ()
    try:
        out: list[str] = []
        for match in _GPU_NAME.finditer(words):
            name = " ".join(match.group(1).split())
            if name.upper() not in (n.upper() for n in out):
                out.append(name)
        return tuple(out[:_MAX_NAMES])
    except Exception:
        return ()


def gpu_memory_gib(text: object) -> float | None:
    """The memory of one GPU the text names (GB as written), or None when it names none or
    several different sizes. Never raises."""
    words = _text(text)
    if not words:
        return None
    try:
        sizes = set()
        for pattern in (_MEMORY, _NAMED_SIZE):
            for match in pattern.finditer(words):
                raw = next((g for g in match.groups() if g is not None), None)
                if raw is None:
                    continue
                value = float(raw)
                if 1.0 <= value <= _MAX_GIB:
                    sizes.add(value)
        return sizes.pop() if len(sizes) == 1 else None
    except Exception:
        return None
