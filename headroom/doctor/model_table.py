"""Shapes of common models (from their public config.json files), so `headroom plan` works
with a name and no download. A local directory, the HF cache or the Hub go through the
probe layer instead (headroom.probes.model_lookup, called by the CLI's input loading:
this module reads no file).

Table entries are the probe layer's own `ModelShape` (source "built-in table"), with the
optional extras the memory model uses filled in where they matter (MoE and MLA sizes, tied
embeddings), so the doctor has one model record whichever way the model was found.
"""

from __future__ import annotations

import re
from dataclasses import replace

from headroom.probes.model import ModelShape


class UnknownModelError(ValueError):
    """A model name not in the table and not a readable local path."""


def _m(name, arch, layers, hidden, inter, heads, kv, hd, vocab, maxpos, params, aliases=(), **kw):
    shape = ModelShape(
        name=name, architecture=arch, num_layers=layers, hidden_size=hidden,
        intermediate_size=inter, num_attention_heads=heads, num_kv_heads=kv, head_dim=hd,
        vocab_size=vocab, dtype="bfloat16", max_position_embeddings=maxpos, quantization=None,
        rope_scaling=None, num_experts=kw.pop("num_experts", None),
        param_count=round(params * 1e9), weight_bytes=None, source="built-in table", **kw,
    )  # fmt: skip
    return shape, tuple(aliases)


_L, _Q2, _Q3, _Q3M = (
    "LlamaForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
)
_MS, _MX, _G2, _P3 = (
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "Gemma2ForCausalLM",
    "Phi3ForCausalLM",
)
_TIED = {"tie_word_embeddings": True}
# name, architecture, layers, hidden, intermediate, heads, KV heads, head_dim, vocab,
# max_position_embeddings, parameters (billions), aliases, extras -- from each config.json.
# fmt: off
_TABLE = (
    _m("Llama-3.1-8B", _L, 32, 4096, 14336, 32, 8, 128, 128256, 131072, 8.03,
       ["llama-3-8b", "meta-llama-3-8b", "llama-3.1-8b", "meta-llama-3.1-8b", "llama3.1-8b"]),
    _m("Llama-3.1-70B", _L, 80, 8192, 28672, 64, 8, 128, 128256, 131072, 70.55,
       ["llama-3-70b", "meta-llama-3-70b", "meta-llama-3.1-70b", "llama-3.3-70b", "llama3.1-70b",
        "deepseek-r1-distill-llama-70b"]),
    _m("Llama-3.1-405B", _L, 126, 16384, 53248, 128, 8, 128, 128256, 131072, 405.85,
       ["meta-llama-3.1-405b", "llama3.1-405b"]),
    _m("Llama-3.2-1B", _L, 16, 2048, 8192, 32, 8, 64, 128256, 131072, 1.24, ["llama3.2-1b"], **_TIED),
    _m("Llama-3.2-3B", _L, 28, 3072, 8192, 24, 8, 128, 128256, 131072, 3.21, ["llama3.2-3b"], **_TIED),
    _m("Qwen1.5-7B", _Q2, 32, 4096, 11008, 32, 32, 128, 151936, 32768, 7.72, ["qwen1.5-7b-chat"]),
    _m("Qwen2.5-7B", _Q2, 28, 3584, 18944, 28, 4, 128, 152064, 32768, 7.62,
       ["qwen2-7b", "deepseek-r1-distill-qwen-7b"]),
    _m("Qwen2.5-14B", _Q2, 48, 5120, 13824, 40, 8, 128, 152064, 131072, 14.77,
       ["deepseek-r1-distill-qwen-14b"]),
    _m("Qwen2.5-32B", _Q2, 64, 5120, 27648, 40, 8, 128, 152064, 131072, 32.76,
       ["deepseek-r1-distill-qwen-32b", "qwq-32b"]),
    _m("Qwen2.5-72B", _Q2, 80, 8192, 29568, 64, 8, 128, 152064, 32768, 72.71, ["qwen2-72b"]),
    _m("Qwen3-8B", _Q3, 36, 4096, 12288, 32, 8, 128, 151936, 40960, 8.19),
    _m("Qwen3-14B", _Q3, 40, 5120, 17408, 40, 8, 128, 151936, 40960, 14.77),
    _m("Qwen3-32B", _Q3, 64, 5120, 25600, 64, 8, 128, 151936, 40960, 32.76),
    _m("Qwen3-30B-A3B", _Q3M, 48, 2048, 6144, 32, 4, 128, 151936, 40960, 30.53, ["qwen3-coder-30b-a3b"],
       num_experts=128, moe_intermediate_size=768, num_experts_per_token=8),
    _m("Qwen3-235B-A22B", _Q3M, 94, 4096, 12288, 64, 4, 128, 151936, 40960, 235.09,
       num_experts=128, moe_intermediate_size=1536, num_experts_per_token=8),
    _m("Mistral-7B", _MS, 32, 4096, 14336, 32, 8, 128, 32768, 32768, 7.25,
       ["mistral-7b-v0.3", "mistral-7b-v0.1", "mistral-7b-v0.2"]),
    _m("Mistral-Small-24B", _MS, 40, 5120, 32768, 32, 8, 128, 131072, 32768, 23.57,
       ["mistral-small-3.1-24b", "mistral-small-24b-2501"]),
    _m("Mixtral-8x7B", _MX, 32, 4096, 14336, 32, 8, 128, 32000, 32768, 46.7,
       num_experts=8, moe_intermediate_size=14336, num_experts_per_token=2),
    _m("Mixtral-8x22B", _MX, 56, 6144, 16384, 48, 8, 128, 32768, 65536, 140.6, ["wizardlm-2-8x22b"],
       num_experts=8, moe_intermediate_size=16384, num_experts_per_token=2),
    _m("Gemma-2-9B", _G2, 42, 3584, 14336, 16, 8, 256, 256000, 8192, 9.24, **_TIED),
    _m("Gemma-2-27B", _G2, 46, 4608, 36864, 32, 16, 128, 256000, 8192, 27.23, **_TIED),
    _m("Phi-3-mini", _P3, 32, 3072, 8192, 32, 32, 96, 32064, 131072, 3.82,
       ["phi-3-mini-128k", "phi-3-mini-4k", "phi-3.5-mini"]),
    _m("Phi-4", _P3, 40, 5120, 17920, 40, 10, 128, 100352, 16384, 14.66),
    # openai/gpt-oss-120b: MXFP4 experts (quantization set below), half the layers sliding-window
    _m("gpt-oss-120b", "GptOssForCausalLM", 36, 2880, 2880, 64, 8, 64, 201088, 131072, 116.83,
       num_experts=128, moe_intermediate_size=2880, num_experts_per_token=4, sliding_window=128),
    _m("DeepSeek-V3", "DeepseekV3ForCausalLM", 61, 7168, 18432, 128, 128, 128, 129280, 163840, 671.0,
       ["deepseek-r1", "deepseek-v3-0324", "deepseek-r1-0528"],
       num_experts=256, moe_intermediate_size=2048, num_experts_per_token=8, kv_lora_rank=512, qk_rope_head_dim=64),
)
# fmt: on

# Name decorations that do not change the shape.
_SUFFIXES = ("instruct", "chat", "it", "hf", "base", "2507", "2503", "2501", "0324", "0528")
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
}


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-")


def _strip(key: str) -> tuple[str, str | None]:
    parts = [p for p in key.split("-") if p]
    quant = None
    kept = []
    for part in parts:
        if part in _QUANT_WORDS:
            quant = quant or _QUANT_WORDS[part]
            continue
        kept.append(part)
    while kept and kept[-1] in _SUFFIXES:
        kept.pop()
    return "-".join(kept), quant


_INDEX: dict[str, ModelShape] = {}
for _facts, _aliases in _TABLE:
    for _alias in (_facts.name, *_aliases):
        _INDEX.setdefault(_strip(_norm(_alias))[0], _facts)


def known_model_names() -> list[str]:
    return [facts.name for facts, _ in _TABLE]


# Checkpoints published quantized whatever their name says (their config.json's quant_method).
_CHECKPOINT_QUANT = {"gpt-oss-120b": "mxfp4"}


def find_model(name: str) -> ModelShape | None:
    """Look a model up by HF id or short name; quantization words in the name (FP8, AWQ,
    GPTQ-Int4) set `quantization`. None when unknown."""
    last = name.rstrip("/").split("/")[-1]
    key, quant = _strip(_norm(last))
    facts = _INDEX.get(key)
    if facts is None:
        return None
    quant = quant or _CHECKPOINT_QUANT.get(facts.name)
    return replace(facts, name=last, quantization=quant) if quant or last != facts.name else facts
