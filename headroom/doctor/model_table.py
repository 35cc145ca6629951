"""Shapes of common models (from their public config.json files), so `headroom plan` works
with a name and no download. A local directory, the HF cache or the Hub go through the
probe layer instead (headroom.probes.model_lookup, called by the CLI's input loading:
this module reads no file).

The rows live in headroom.doctor.model_shapes (sources: docs/model_shapes_sources.md).
Table entries are the probe layer's own `ModelShape` (source "built-in table"), with the
optional extras the memory model uses filled in where they matter (MoE and MLA sizes, tied
embeddings), so the doctor has one model record whichever way the model was found.
"""

from __future__ import annotations

import re
from dataclasses import replace

from headroom.doctor.model_shapes import ALL
from headroom.probes.model import ModelShape


class UnknownModelError(ValueError):
    """A model name not in the table and not a readable local path."""


_TABLE = ALL

# Name decorations that do not change the shape, wherever they stand ("internlm2-chat-7b",
# "Mistral-7B-Instruct-v0.2", "Llama-2-7b-chat-hf").
_DECORATIONS = {"instruct", "chat", "it", "hf", "base", "thinking"}
# A release tag at the end ("-v0.1", "-2507", "-0324"): tried with it first (a row of its own
# wins), then without it.
_RELEASE_TAG = re.compile(r"v\d+(\.\d+)*|\d{4}")
_QUANT_WORDS = {
    "fp8": "fp8",
    "awq": "awq",
    "gptq": "gptq",
    "int4": "gptq",
    "int8": "int8",
    "bnb": "bitsandbytes",
    "nf4": "bitsandbytes",
    "w4a16": "gptq",
    "w8a8": "int8",
    "w8a16": "int8",
}
# Words that say how a checkpoint was made, not which model it is ("-quantized.w4a16",
# "-AWQ-4bit", "-bnb-4bit").
_NOISE = {"quantized", "4bit", "8bit"}


def _norm(text: str) -> str:
    # "InternVL2_5-8B", "MiniCPM-V-2_6": an underscore between digits is a version's dot.
    text = re.sub(r"(?<=\d)_(?=\d)", ".", text.lower())
    return re.sub(r"[^a-z0-9.]+", "-", text).strip("-")


def _strip(key: str) -> tuple[str, str | None]:
    parts = [p for p in key.split("-") if p]
    quant = None
    kept = []
    for part in parts:
        words = part.split(".") if part.startswith(tuple(_NOISE)) else [part]
        if all(w in _QUANT_WORDS or w in _NOISE for w in words):
            for w in words:
                quant = quant or _QUANT_WORDS.get(w)
            continue
        if part not in _DECORATIONS:
            kept.append(part)
    return "-".join(kept), quant


def _keys(key: str) -> list[str]:
    """The key, then the key less each trailing release tag in turn."""
    parts = key.split("-")
    keys = [key]
    while len(parts) > 1 and _RELEASE_TAG.fullmatch(parts[-1]):
        parts.pop()
        keys.append("-".join(parts))
    return keys


_INDEX: dict[str, ModelShape] = {}
for _facts, _aliases in _TABLE:
    for _alias in (_facts.name, *_aliases):
        _INDEX.setdefault(_strip(_norm(_alias))[0], _facts)


def known_model_names() -> list[str]:
    return [facts.name for facts, _ in _TABLE]


# Checkpoints published quantized whatever their name says (their config.json's quant_method).
_CHECKPOINT_QUANT = {
    "gpt-oss-120b": "mxfp4",
    "gpt-oss-20b": "mxfp4",
    "Kimi-K2": "fp8",
    "DeepSeek-V3": "fp8",
    "MiniMax-M2.5": "fp8",
}


def find_model(name: str) -> ModelShape | None:
    """Look a model up by HF id or short name; quantization words in the name (FP8, AWQ,
    GPTQ-Int4) set `quantization`. None when unknown."""
    last = name.rstrip("/").split("/")[-1]
    key, quant = _strip(_norm(last))
    facts = next((_INDEX[k] for k in _keys(key) if k in _INDEX), None)
    if facts is None:
        return None
    quant = quant or _CHECKPOINT_QUANT.get(facts.name)
    return replace(facts, name=last, quantization=quant) if quant or last != facts.name else facts
