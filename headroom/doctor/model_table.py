"""Shapes of common models (from their public config.json files), so `headroom plan` works
with a name and no download. A local directory, the HF cache or the Hub go through the
probe layer instead (headroom.probes.model_lookup, called by the CLI's input loading:
this module reads no file).

The rows live in headroom.doctor.model_shapes (sources: docs/model_shapes_sources.md).
Table entries are the probe layer's own `ModelShape` (source "built-in table"), with the
optional extras the memory model uses filled in where they matter (MoE and MLA sizes, tied
embeddings), so the doctor has one model record whichever way the model was found.

A name is read as people write it: an HF id or a ModelScope one (`qwen/Qwen1.5-7B-Chat`), a
local path (`/models/Qwen2-7B/`, an HF cache directory `models--Qwen--Qwen2-7B/snapshots/<hash>`),
a GGUF file name, spaces or underscores for hyphens (`llama 3.2 3b`, `llama2_70b`), the
separators between a family and its version left out (`llama3-70b`, `qwen2.5vl-7b`). Words
that say how a checkpoint was made, not which model it is (Instruct, Chat, -hf, FP8-Dynamic,
GPTQ-Int4, bnb-4bit, ...), are dropped, the quantization ones kept as the checkpoint's
quantization. A name no row holds stays unknown.
"""

from __future__ import annotations

import re
from dataclasses import replace

from headroom.doctor.model_shapes import ALL, CHECKPOINT_QUANT
from headroom.probes.model import ModelShape


class UnknownModelError(ValueError):
    """A model name not in the table and not a readable local path."""


_TABLE = ALL

# Name decorations that do not change the shape, wherever they stand ("internlm2-chat-7b",
# "Mistral-7B-Instruct-v0.2", "Llama-2-7b-chat-hf"). Training words (SFT, DPO, GRPO, ...)
# keep the architecture of the row named before them (docs/model_shapes_sources.md).
_DECORATIONS = {
    "instruct", "chat", "it", "hf", "base", "thinking", "bf16", "fp16", "f16", "fp32",
    "sft", "dpo", "grpo", "orpo", "rlhf", "finetune", "finetuned", "ft", "merged",
}  # fmt: skip
# A release tag at the end ("-v0.1", "-2507", "-0324"): tried with it first (a row of its own
# wins), then without it.
_RELEASE_TAG = re.compile(r"v\d+(\.\d+)*|\d{4}")
# quantization word -> (quant_method, weight bits); a bits word ("int8", "8bit") sets the
# bits of a method named beside it ("GPTQ-Int8" is GPTQ at 8 bits).
_QUANT_WORDS: dict[str, tuple[str | None, int | None]] = {
    "fp8": ("fp8", 8), "awq": ("awq", 4), "gptq": ("gptq", 4), "int4": ("gptq", 4),
    "int8": ("int8", 8), "bnb": ("bitsandbytes", 4), "nf4": ("bitsandbytes", 4),
    "w4a16": ("gptq", 4), "w8a8": ("int8", 8), "w8a16": ("int8", 8), "w4a8": ("gptq", 4),
    "nvfp4": ("modelopt_fp4", 4), "mxfp4": ("mxfp4", 4), "fp4": ("modelopt_fp4", 4),
    "gguf": ("gguf", None), "4bit": (None, 4), "8bit": (None, 8),
}  # fmt: skip
# Words that say how a checkpoint was made, not which model it is ("-quantized.w4a16",
# "-FP8-Dynamic", "-unsloth-bnb-4bit", "-gptq-4bit-32g-actorder_True", "-AWQ-marlin").
_NOISE = {
    "quantized", "dynamic", "static", "pertensor", "per", "tensor", "block", "kv", "marlin",
    "unsloth", "actorder", "true", "false", "g128", "g64", "g32", "128g", "64g", "32g",
    "e4m3", "fnuz", "gguf", "exl2", "mlx",
}  # fmt: skip
# GGUF quant levels ("q4_k_m", "iq3_xs", "q8_0"): the digit is the weight bits.
_WIDTH_WORDS = {"int4", "int8", "4bit", "8bit"}
_GGUF_LEVEL = re.compile(r"i?q([2-8])(?:[-.](?:k|0|1))?(?:-(?:xxs|xs|s|m|l|nl))?")
_HASH = re.compile(r"[0-9a-f]{12,64}")
_FILE_SUFFIX = re.compile(r"\.(?:gguf|safetensors|bin|json)$", re.IGNORECASE)


def _last_name(name: str) -> str:
    """The part of a path or id that names the model: the last component, skipping an HF
    cache's snapshots/<hash> and reading `models--org--name` (and `org--name`) as `name`."""
    parts = [p for p in re.split(r"[\\/]+", name.strip()) if p]
    while len(parts) > 1 and (_HASH.fullmatch(parts[-1]) or parts[-1] in ("snapshots", "main")):
        parts.pop()
    last = _FILE_SUFFIX.sub("", parts[-1]) if parts else ""
    return last.split("--")[-1] if "--" in last else last


def _norm(text: str) -> str:
    text = text.lower()
    # "InternVL2_5-8B", "MiniCPM-V-2_6": an underscore between digits is a version's dot,
    # unless a size follows it ("llama2_70b", "qwen2_7b").
    text = re.sub(r"(?<=\d)_(?=\d+(?![\d.]*[bm](?![a-z0-9])))", ".", text)
    return re.sub(r"[^a-z0-9.]+", "-", text).strip("-.")


def _strip(key: str) -> tuple[str, tuple[str | None, int | None]]:
    """The key less decorations and quantization words, and the (method, bits) those said:
    a method word wins over a bare width ("Int4-AWQ" is AWQ), and a width word sets the bits
    of the method beside it ("GPTQ-Int8" is GPTQ at 8 bits)."""
    said: list[str] = []
    kept = []
    gguf_bits = None
    for part in (p for p in key.split("-") if p):
        words = part.split(".")
        level = _GGUF_LEVEL.fullmatch(part)
        if level:
            gguf_bits = gguf_bits or int(level.group(1))
            continue
        if gguf_bits and part in ("k", "m", "s", "l", "0", "1", "xs", "xxs"):
            continue  # the rest of a "q4_k_m" level
        if all(w in _QUANT_WORDS or w in _NOISE for w in words):
            said += [w for w in words if w in _QUANT_WORDS]
            continue
        if part not in _DECORATIONS:
            kept.append(part)
    if kept and kept[0] == "meta" and len(kept) > 1:  # "Meta-Llama-3-8B" is "Llama-3-8B"
        kept.pop(0)
    methods = [w for w in said if w not in _WIDTH_WORDS] or [w for w in said if w in _WIDTH_WORDS]
    method, bits = _QUANT_WORDS[methods[0]] if methods else (None, None)
    if gguf_bits:
        method, bits = method or "gguf", gguf_bits
    widths = [_QUANT_WORDS[w][1] for w in said if w in _WIDTH_WORDS]
    if widths and method not in ("fp8", "modelopt_fp4", "mxfp4"):
        bits = widths[0]
    return "-".join(kept), (method, bits if method else None)


def _compact(key: str) -> str:
    """The key with the hyphens that stand beside a letter left out ("llama-3-70b" and
    "llama3-70b" alike); a hyphen between two digits stays ("qwen2-57b" is not "qwen257b")."""
    return re.sub(r"(?<![0-9])-|-(?![0-9])", "", key)


def _keys(key: str) -> list[str]:
    """The key, then the key less each trailing release tag in turn."""
    parts = key.split("-")
    keys = [key]
    while len(parts) > 1 and _RELEASE_TAG.fullmatch(parts[-1]):
        parts.pop()
        keys.append("-".join(parts))
    return [_compact(k) for k in keys]


def _index() -> dict[str, ModelShape]:
    index: dict[str, ModelShape] = {}
    for facts, aliases in _TABLE:
        for alias in (facts.name, *aliases):
            index.setdefault(_compact(_strip(_norm(alias))[0]), facts)
    return index


_INDEX = _index()


def known_model_names() -> list[str]:
    return [facts.name for facts, _ in _TABLE]


def find_model(name: str) -> ModelShape | None:
    """Look a model up by HF id, path or short name; quantization words in the name (FP8,
    AWQ, GPTQ-Int4) set `quantization` and `quantization_bits`. None when unknown. Never
    raises on any text."""
    if not isinstance(name, str):
        return None
    last = _last_name(name)
    key, (method, bits) = _strip(_norm(last))
    if not key:
        return None
    facts = next((_INDEX[k] for k in _keys(key) if k in _INDEX), None)
    if facts is None:
        return None
    if method is None and facts.name in CHECKPOINT_QUANT:
        method, bits = CHECKPOINT_QUANT[facts.name]
    if method or last != facts.name:
        return replace(facts, name=last, quantization=method, quantization_bits=bits)
    return facts
