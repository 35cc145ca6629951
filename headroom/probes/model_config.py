"""Read the sizing facts out of a config.json in any of the common dialects.

Architectures name the same fact differently; transformers maps them with each config
class's `attribute_map` (GPT2Config: n_layer -> num_hidden_layers, n_embd -> hidden_size;
ChatGLM: num_layers, multi_query_group_num, ffn_hidden_size, kv_channels; Falcon/RW:
n_head, n_head_kv, num_kv_heads; MPT/DBRX: d_model, n_heads, n_layers, attn_config.kv_n_heads,
ffn_config.moe_num_experts; T5-style: d_model, num_heads, num_layers, d_ff, d_kv). ALIASES
below is that table, canonical name first. Vision-language models keep the language model
under text_config / llm_config / language_config; that nested config wins over the outer
one (the outer one often carries the vision tower's sizes too).

Nothing here raises on a Mapping: a fact no alias gives is None, and `read_config` says
which ones were missing so the doctor can name them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headroom.probes.safe_text import safe_text

# canonical name -> every key (or dotted path) that architectures use for it, most common first
ALIASES: dict[str, tuple[str, ...]] = {
    "num_layers": ("num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_decoder_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model", "n_embed", "dim", "model_dim"),
    "num_attention_heads": (
        "num_attention_heads",
        "n_head",
        "n_heads",
        "num_heads",
        "attn_config.n_heads",
    ),
    "num_kv_heads": (
        "num_key_value_heads",
        "num_kv_heads",
        "n_head_kv",
        "n_kv_heads",
        "multi_query_group_num",
        "num_query_groups",
        "attn_config.kv_n_heads",
    ),
    "head_dim": ("head_dim", "kv_channels", "d_kv", "attention_head_size", "v_head_dim"),
    "intermediate_size": (
        "intermediate_size",
        "ffn_hidden_size",
        "n_inner",
        "ffn_dim",
        "d_ff",
        "inner_hidden_size",
        "ffn_config.ffn_hidden_size",
    ),
    "vocab_size": ("vocab_size", "padded_vocab_size", "n_vocab"),
    "max_position_embeddings": (
        "max_position_embeddings",
        "n_positions",
        "max_sequence_length",
        "seq_length",
        "max_seq_len",
        "n_ctx",
        "model_max_length",
    ),
    "num_experts": (
        "num_local_experts",
        "num_experts",
        "n_routed_experts",
        "moe_num_experts",
        "ffn_config.moe_num_experts",
    ),
    "num_experts_per_token": (
        "num_experts_per_tok",
        "moe_top_k",
        "num_selected_experts",
        "ffn_config.moe_top_k",
    ),
    "moe_intermediate_size": ("moe_intermediate_size", "expert_intermediate_size"),
    "num_shared_experts": ("n_shared_experts", "num_shared_experts"),
    "shared_expert_intermediate_size": (
        "shared_expert_intermediate_size",
        "moe_shared_expert_intermediate_size",
        "shared_intermediate_size",
    ),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_rope_head_dim": ("qk_rope_head_dim",),
    "sliding_window": ("sliding_window",),
}

# Facts sizing cannot do without: named in `unread` when absent.
CORE = ("num_layers", "hidden_size", "num_attention_heads")
DERIVED = ("num_kv_heads", "head_dim")  # from CORE when absent; unread only when spoiled
_NESTED = ("text_config", "llm_config", "language_config", "thinker_config.text_config")

# transformers writes a nested text_config as the difference from its own class defaults, so
# llava-hf/llava-1.5-7b-hf's text_config says only model_type "llama" and vocab_size. These
# are LlamaConfig's / MistralConfig's __init__ defaults (transformers 4.x).
MODEL_TYPE_DEFAULTS: dict[str, dict[str, int]] = {
    "llama": {
        "num_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_attention_heads": 32,
        "max_position_embeddings": 2048,
        "vocab_size": 32000,
    },
    "mistral": {
        "num_layers": 32,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_kv_heads": 8,
        "max_position_embeddings": 4096 * 32,
        "vocab_size": 32000,
    },
}


@dataclass(frozen=True)
class Quantization:
    """A checkpoint's own quantization: `quant_method` and weight bits (None = not said)."""

    method: str
    bits: int | None


@dataclass(frozen=True)
class ConfigFacts:
    """Everything read from one config.json; None = no alias gave it."""

    values: Mapping[str, Any]
    architecture: str | None
    dtype: str | None
    quantization: Quantization | None
    quantization_config: Mapping | None
    rope_scaling: Mapping | None
    tie_word_embeddings: bool | None
    unread: tuple[str, ...]  # core facts no alias gave
    assumed: tuple[str, ...]  # facts taken from the model type's transformers defaults
    # which of vision_config / audio_config / is_encoder_decoder (true) the config has: a
    # multimodal or encoder-decoder model, whatever its architecture is called
    modality_keys: tuple[str, ...] = ()


def _lookup(config: Mapping, path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


# A size past 2**40 (layers, heads, widths, vocab, positions) is no model's: reading it as
# unknown keeps later arithmetic from overflowing a float (a config.json is untrusted input).
MAX_DIMENSION = 2**40


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and 0 <= value <= MAX_DIMENSION:
        return value
    return None


def _first_int(config: Mapping, keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = _int(_lookup(config, key))
        if value is not None:
            return value
    return None


def text_config(config: Mapping) -> tuple[Mapping, Mapping | None]:
    """(the language model's config with the outer keys under it, the nested part or None)."""
    for path in _NESTED:
        nested = _lookup(config, path)
        if isinstance(nested, Mapping) and nested:
            outer = {k: v for k, v in config.items() if k not in ("vision_config", path)}
            return {**outer, **nested}, nested
    return config, None


def _bits_of(quant: Mapping) -> int | None:
    for key in ("bits", "w_bit", "wbits", "nbits", "weight_bits", "num_bits"):
        bits = _int(quant.get(key))
        if bits:
            return bits
    if quant.get("load_in_4bit") or quant.get("_load_in_4bit"):
        return 4
    if quant.get("load_in_8bit") or quant.get("_load_in_8bit"):
        return 8
    groups = quant.get("config_groups")
    if isinstance(groups, Mapping):  # compressed-tensors: each group's weights.num_bits
        found: list[int] = []
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, Mapping) else None
            bits_value = weights.get("num_bits") if isinstance(weights, Mapping) else None
            if isinstance(bits_value, Mapping):  # per-module bits in some exports
                found.extend(b for b in map(_int, bits_value.values()) if b)
            elif _int(bits_value):
                found.append(_int(bits_value) or 0)
        if found:
            return max(found)  # mixed groups: the widest decides the memory bound
    text = " ".join(
        str(quant.get(k) or "") for k in ("quant_method", "quant_algo", "format", "fmt")
    ).lower()
    if "fp8" in text or "e4m3" in text or "int8" in text or "w8a8" in text:
        return 8
    if "fp4" in text or "int4" in text or "w4a16" in text:
        return 4
    return None


def read_quantization(quant: Any) -> Quantization | None:
    """(method, bits) of a quantization_config; None when it is not one."""
    if not isinstance(quant, Mapping):
        return None
    method = quant.get("quant_method") or quant.get("quant_algo")
    if not method:
        if quant.get("load_in_4bit") or quant.get("load_in_8bit"):
            method = "bitsandbytes"
        elif isinstance(quant.get("config_groups"), Mapping):
            method = "compressed-tensors"
        else:
            return None
    if not isinstance(method, str):
        return None
    return Quantization(safe_text(method.lower()), _bits_of(quant))


def read_config(config: Mapping) -> ConfigFacts:
    """Every sizing fact the config gives, under canonical names. Never raises."""
    merged, nested = text_config(config)
    values: dict[str, Any] = {name: _first_int(merged, keys) for name, keys in ALIASES.items()}
    assumed: list[str] = []
    model_type = nested.get("model_type") if nested is not None else None
    for name, default in MODEL_TYPE_DEFAULTS.get(str(model_type), {}).items():
        if values.get(name) is None and nested is not None:
            values[name] = default
            assumed.append(name)
    kv = values.get("num_kv_heads")
    if merged.get("multi_query_attention") is False:
        kv = values["num_attention_heads"]  # ChatGLM ignores its group count without MQA
    elif kv is None and merged.get("multi_query") is True:
        kv = 1  # Falcon-7B-style multi-query attention without a group count
    elif kv is None:
        kv = values["num_attention_heads"]  # transformers' default: one KV head per head
    values["num_kv_heads"] = kv
    heads, hidden = values["num_attention_heads"], values["hidden_size"]
    if values["head_dim"] is None and heads and hidden:
        values["head_dim"] = hidden // heads
    if values["intermediate_size"] is None and hidden and _int(merged.get("expansion_ratio")):
        values["intermediate_size"] = hidden * (_int(merged.get("expansion_ratio")) or 0)  # MPT
    values["kv_layers"] = kv_layers(merged, values["num_layers"])
    values["max_position_embeddings"] = derived_max_len(merged, values["max_position_embeddings"])
    architectures = config.get("architectures")
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        quant = merged.get("quantization_config")
    quant = quant if isinstance(quant, Mapping) else None
    dtype = _lookup(config, "torch_dtype") or _lookup(config, "dtype")
    dtype = dtype or merged.get("torch_dtype") or merged.get("dtype")
    rope = merged.get("rope_scaling")
    tie = merged.get("tie_word_embeddings")
    return ConfigFacts(
        values=values,
        # config strings are anyone's text: escaped for terminals
        architecture=safe_text(architectures[0])
        if isinstance(architectures, list) and architectures and isinstance(architectures[0], str)
        else None,
        dtype=safe_text(dtype) if isinstance(dtype, str) else None,
        quantization=read_quantization(quant),
        quantization_config=quant,
        rope_scaling=rope if isinstance(rope, Mapping) else None,
        tie_word_embeddings=tie if isinstance(tie, bool) else None,
        unread=_unread(values),
        assumed=tuple(assumed),
        modality_keys=_modality_keys(config),
    )


def _unread(values: Mapping[str, Any]) -> tuple[str, ...]:
    """The core facts no alias gave; with all of them given, the derived ones sizing also
    needs that the config spoils ("num_key_value_heads": 0, "head_dim": 0 are written, so no
    default replaces them, yet no arithmetic can use them)."""
    missing = tuple(n for n in CORE if not values.get(n))
    return missing or tuple(n for n in DERIVED if not values.get(n))


_MODALITY_KEYS = ("vision_config", "audio_config", "vision_tower", "is_encoder_decoder")


def _modality_keys(config: Mapping) -> tuple[str, ...]:
    """The keys that say the model reads more than text, or has an encoder (a false
    is_encoder_decoder, or an empty sub-config, says nothing)."""
    return tuple(key for key in _MODALITY_KEYS if config.get(key))


# Layer kinds that keep a fixed state per sequence instead of K/V per token.
_STATEFUL = ("linear", "mamba", "ssm", "delta", "recurrent", "conv")


def kv_layers(config: Mapping, layers: int | None) -> int | None:
    """How many layers of a hybrid model cache K/V per token (None: all of them): the
    attention entries of `layer_types` when others are linear attention or Mamba (Qwen3.5,
    Qwen3-Next), `layers_block_type` (Jamba, Granite 4), MiniMax's `attn_type_list` (1 is
    softmax attention, 0 lightning attention), the "*" of Nemotron-H's
    `hybrid_override_pattern`, Jamba's `attn_layer_period`, or `full_attention_interval`."""
    for key in ("layer_types", "layers_block_type"):
        kinds = config.get(key)
        if isinstance(kinds, list) and kinds and all(isinstance(k, str) for k in kinds):
            stateful = sum(1 for k in kinds if any(s in k.lower() for s in _STATEFUL))
            if stateful:
                return len(kinds) - stateful
            return None  # full and sliding-window attention: every layer caches K/V
    types = config.get("attn_type_list")  # MiniMax-Text-01 / M1: 0 lightning (linear), 1 softmax
    if isinstance(types, list) and types and all(t in (0, 1) for t in types) and 0 in types:
        return sum(1 for t in types if t == 1)
    pattern = config.get("hybrid_override_pattern")
    if isinstance(pattern, str) and "*" in pattern and len(pattern) <= MAX_DIMENSION:
        return pattern.count("*")
    for key in ("attn_layer_period", "full_attention_interval"):
        period = _int(config.get(key))
        if period and layers and period > 1:
            return max(1, layers // period)
    return None


# The keys vLLM reads the model's length from (the smallest wins: Command-R's
# max_position_embeddings 8192 over its model_max_length 131072), as in
# vllm/config.py _get_and_verify_max_len of 0.4.3 - 0.25.1.
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "model_max_length", "max_target_positions", "max_sequence_length",
                "max_seq_length", "seq_len")  # fmt: skip


def derived_max_len(config: Mapping, first: int | None) -> int | None:
    """The max_model_len vLLM derives when none is given: the smallest length key, times the
    rope factor of a yarn (from original_max_position_embeddings), linear or dynamic
    rope_scaling (not su/longrope/llama3, whose factor is already in the length; not Gemma 3,
    whose config states the scaled length: 0.8.5+). Transformers 5 configs say
    `rope_parameters`, one dict or one per layer type (vLLM 0.20+ reads both)."""
    lengths = [n for n in (_int(config.get(k)) for k in _LENGTH_KEYS) if n]
    length = min(lengths) if lengths else first
    if not length or "gemma3" in str(config.get("model_type")):
        return length
    rope = config.get("rope_scaling")
    if not isinstance(rope, Mapping):
        rope = config.get("rope_parameters")
    if not isinstance(rope, Mapping):
        return length
    nested = [r for r in rope.values() if isinstance(r, Mapping)]
    factor, base = 1.0, length
    for part in nested or [rope]:
        kind = str(part.get("rope_type") or part.get("type") or "")
        found = part.get("factor")
        if kind in ("", "default", "su", "longrope", "llama3", "mrope", "proportional"):
            continue
        if isinstance(found, bool) or not isinstance(found, (int, float)) or not 1 <= found <= 1024:
            continue
        factor = float(found)
        if kind == "yarn":
            base = _int(part.get("original_max_position_embeddings")) or base
    scaled = int(base * factor)
    return scaled if factor > 1 and scaled <= MAX_DIMENSION else length
