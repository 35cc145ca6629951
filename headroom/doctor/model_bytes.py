"""The model's own bytes on one GPU, as vLLM lays them out: the weights (by the parameter
count or the real checkpoint size, in the quantization's bytes per weight, split over TP and
PP) and the KV cache per token (2 x layers in the stage x KV heads per GPU x head_dim x the
KV dtype's bytes; one latent per layer for MLA). The memory accounting (memory_model.py)
builds on these.
"""

from __future__ import annotations

import math

GIB = 2**30
_KV_DTYPE_BYTES = {"auto": None, "float16": 2, "bfloat16": 2, "half": 2, "float32": 4}


def dtype_bytes(dtype: str | None) -> int:
    if dtype and "32" in str(dtype) and "float" in str(dtype):
        return 2  # vLLM serves float32 checkpoints in half precision by default
    return 2


def kv_dtype_bytes(kv_cache_dtype: str, model_dtype: str | None) -> int:
    kv = (kv_cache_dtype or "auto").lower()
    if kv.startswith("fp8") or kv.startswith("int8"):
        return 1
    known = _KV_DTYPE_BYTES.get(kv)
    return known if known else dtype_bytes(model_dtype)


def mla_width(model) -> int | None:
    """Cached width per token per layer of an MLA model (DeepSeek V2/V3): the compressed
    latent (kv_lora_rank) plus the rope part (qk_rope_head_dim)."""
    rank = getattr(model, "kv_lora_rank", None)
    return rank + (getattr(model, "qk_rope_head_dim", None) or 0) if rank else None


def kv_bytes_per_token(model, tp: int = 1, pp: int = 1, kv_cache_dtype: str = "auto") -> int:
    """KV bytes per token on the fullest GPU: 2 x layers in the stage x max(1, kv_heads // TP)
    x head_dim x dtype bytes. MLA models cache one latent per layer, not split by TP."""
    # hybrid models cache K/V only in their attention layers (kv_layers); PP splits them too
    layers = math.ceil((getattr(model, "kv_layers", None) or model.num_layers) / max(pp, 1))
    nbytes = kv_dtype_bytes(kv_cache_dtype, model.dtype)
    mla = mla_width(model)
    if mla:
        return layers * mla * nbytes
    return 2 * layers * max(1, model.num_kv_heads // max(tp, 1)) * model.head_dim * nbytes


def param_split(model) -> tuple[float, float]:
    """(parameters in the transformer layers, parameters in embedding + lm_head)."""
    vocab = model.vocab_size or 0
    embed = vocab * model.hidden_size * (1 if getattr(model, "tie_word_embeddings", False) else 2)
    if model.param_count:
        return max(model.param_count - embed, 0), embed
    h, hd = model.hidden_size, model.head_dim
    attn = h * model.num_attention_heads * hd * 2 + h * model.num_kv_heads * hd * 2
    experts = model.num_experts or 0
    inter = getattr(model, "moe_intermediate_size", None) or model.intermediate_size or 4 * h
    mlp = 3 * h * inter * (experts if experts else 1)
    return model.num_layers * (attn + mlp), embed


def compressed_tensors_bytes(config) -> float | None:
    """Bytes per weight of a compressed-tensors checkpoint, from its quantization_config's
    config_groups (weights num_bits: 8 -> FP8/INT8 = 1 byte, 4 -> 4-bit plus scales)."""
    groups = (config or {}).get("config_groups") if isinstance(config, dict) else None
    bits = []
    for group in (groups or {}).values():
        weights = group.get("weights") if isinstance(group, dict) else None
        if isinstance(weights, dict) and isinstance(weights.get("num_bits"), int):
            bits.append(weights["num_bits"])
    if not bits:
        fmt = str((config or {}).get("format", "")) if isinstance(config, dict) else ""
        return 1.0 if "float-quantized" in fmt or "int-quantized" in fmt else None
    return 1.0 if max(bits) >= 8 else 0.56


# Integer-quantized checkpoints (AWQ, GPTQ, bitsandbytes, GGUF) hold their weights in `bits`
# plus a 16-bit scale (and zero) per group of 128 or so: 4-bit weights take ~0.56 bytes.
_GROUP_OVERHEAD = 0.06
_INT_GROUPED = {"awq", "gptq", "awq_marlin", "gptq_marlin", "bitsandbytes", "gguf",
                "compressed-tensors-w4"}  # fmt: skip


def weight_bytes_per_param(
    quantization: str | None, dtype: str | None, config=None, bits: int | None = None
) -> float:
    """Bytes a weight takes in this quantization; `bits` is the checkpoint's weight width
    where known (a GPTQ-Int8 checkpoint is 1 byte a weight, an Int4 one 0.56)."""
    q = (quantization or "").lower()
    if q == "compressed-tensors":
        found = compressed_tensors_bytes(config)
        if found is not None:
            return found
        if bits:  # the bits a name or the table gave, without the config's groups
            return 1.0 if bits >= 8 else bits / 8 + _GROUP_OVERHEAD
    if "fp8" in q or "int8" in q or "w8" in q or q == "experts_int8":
        return 1.0
    if q in _INT_GROUPED:
        if bits and 2 <= bits < 8:
            return bits / 8 + _GROUP_OVERHEAD
        if bits and bits >= 8:
            return 1.0 if bits == 8 else float(dtype_bytes(dtype))
        return 0.5 + _GROUP_OVERHEAD  # 4-bit, the width these methods are published in
    if "fp4" in q or "mxfp4" in q:
        return 0.53
    return float(dtype_bytes(dtype))


def weights_gib_per_gpu(model, tp: int, pp: int, quantization: str | None = None) -> float:
    quant = quantization or getattr(model, "quantization", None)
    layers, embed = param_split(model)
    if getattr(model, "weight_bytes", None) and not quantization:
        # Real checkpoint size: split it the same way as the parameter count.
        total = float(model.weight_bytes)
        embed_bytes = min(total, embed * 2)
        layer_bytes = total - embed_bytes
    else:
        config = getattr(model, "quantization_config", None)
        # the checkpoint's own bits count only for its own method (--quantization may name
        # another: then that method's usual width)
        own = quantization is None or quantization == getattr(model, "quantization", None)
        bits = getattr(model, "quantization_bits", None) if own else None
        layer_bytes = layers * weight_bytes_per_param(quant, model.dtype, config, bits)
        embed_bytes = embed * 2  # embeddings and lm_head stay in 16-bit when quantized
    if pp > 1:  # first stage holds the embedding, last the lm_head: the larger half counts
        embed_bytes = embed_bytes / (1 if getattr(model, "tie_word_embeddings", False) else 2)
    return (layer_bytes / pp + embed_bytes) / tp / GIB


def needed_kv_gib(model, tp: int, pp: int, tokens: int, kv_cache_dtype: str = "auto") -> float:
    return tokens * kv_bytes_per_token(model, tp, pp, kv_cache_dtype) / GIB
