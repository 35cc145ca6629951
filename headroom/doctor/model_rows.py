"""How a row of the built-in model table is written, and the parameter count a shape implies.

A row (`row(...)`): name, architecture, layers, hidden, intermediate, attention heads, KV
heads, head_dim, vocab, the length vLLM derives from the config (max_position_embeddings, or
the smallest of its length keys, times a yarn/linear/dynamic rope factor where vLLM applies
one), the parameter count in billions as the model card or the checkpoint's safetensors
total states it (None: computed here from the shape, and the row is listed in
COMPUTED_PARAMS), aliases, then keyword extras:

- ModelShape fields: num_experts, moe_intermediate_size, num_experts_per_token,
  num_shared_experts, shared_expert_intermediate_size, kv_lora_rank, qk_rope_head_dim,
  sliding_window, tie_word_embeddings, kv_layers (hybrid models: the layers that cache K/V
  per token), rope_scaling.
- `quant`: the checkpoint's own quant_method where the published weights are quantized
  whatever the name says (gpt-oss: mxfp4); `bits` its weight bits.
- counting only: `vision` (billions a vision/audio tower adds, computed from vision_config),
  `qkv_bias`, `gated` (False: an up/down MLP), `dense_layers` (the layers of a MoE model
  with a dense MLP), `q_lora`, `nope`, `v_hd` (MLA ranks and widths).
"""

from __future__ import annotations

from headroom.probes.model import ModelShape

# Rows whose parameter count is computed from the shape (no card or safetensors total read).
COMPUTED_PARAMS: set[str] = set()
# Rows published quantized whatever their name says: name -> (quant_method, weight bits).
CHECKPOINT_QUANT: dict[str, tuple[str, int | None]] = {}
# The arguments each row's count is computed from (tests check stated counts against them).
COUNT_ARGS: dict[str, dict] = {}


def shape_params(
    layers: int,
    hidden: int,
    inter: int,
    heads: int,
    kv: int,
    head_dim: int,
    vocab: int,
    tied: bool = False,
    qkv_bias: bool = False,
    gated: bool = True,
) -> int:
    """Parameters a dense decoder of this shape holds: attention (q, k, v, o, with the q/k/v
    bias Qwen2 carries), the MLP (gate+up+down when `gated`, else up+down as in Falcon), two
    norms a layer, the embedding and an untied lm_head."""
    return count_params(layers, hidden, inter, heads, kv, head_dim, vocab, tied=tied,
                        qkv_bias=qkv_bias, gated=gated)  # fmt: skip


def count_params(
    layers: int,
    hidden: int,
    inter: int,
    heads: int,
    kv: int,
    head_dim: int,
    vocab: int,
    *,
    tied: bool = False,
    qkv_bias: bool = False,
    gated: bool = True,
    experts: int = 0,
    moe_inter: int = 0,
    shared: int = 0,
    shared_inter: int = 0,
    dense_layers: int = 0,
    q_lora: int = 0,
    kv_lora: int = 0,
    nope: int = 0,
    rope: int = 0,
    v_hd: int = 0,
    attn_gate: bool = False,
    linear_layers: int = 0,
    linear: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0),
) -> int:
    """Parameters of a decoder of this shape. Dense layers: q/k/v/o and a gated (or up/down)
    MLP. MoE layers (all but `dense_layers` when `experts`): every routed expert's
    gate/up/down of `moe_inter`, the router, and `shared` shared experts of `shared_inter`.
    MLA attention (when `kv_lora`): q (through a q LoRA of `q_lora` when set), the joint KV
    down-projection to kv_lora + rope, its up-projection to heads x (nope + v_hd), and o.
    Hybrid models (Qwen3-Next, Qwen3.5): `linear_layers` of the layers are Gated DeltaNet
    linear attention of `linear` = (key heads, key head dim, value heads, value head dim,
    conv kernel) instead: q/k/v/z and b/a projections, a depthwise conv over q/k/v, the
    per-head decay and bias, a norm and the output projection; `attn_gate`: the full
    attention's q projection also yields an output gate (twice the width)."""
    h = hidden
    if kv_lora:
        qk = nope + rope
        q = h * q_lora + q_lora + q_lora * heads * qk if q_lora else h * heads * qk
        attn = q + h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_hd)
        attn += heads * v_hd * h
    else:
        attn = h * heads * head_dim * (3 if attn_gate else 2) + h * kv * head_dim * 2
        attn += (heads + 2 * kv) * head_dim if qkv_bias else 0
    if linear_layers:
        k_heads, k_hd, v_heads, v_hd_lin, kernel = linear
        key, value = k_heads * k_hd, v_heads * v_hd_lin
        delta = h * (2 * key + 2 * value) + h * 2 * v_heads + (2 * key + value) * kernel
        delta += 2 * v_heads + v_hd_lin + value * h
    else:
        delta = 0
    full_layers = layers - linear_layers
    dense_mlp = (3 if gated else 2) * h * inter
    if experts:
        moe_mlp = experts * 3 * h * moe_inter + h * experts + shared * 3 * h * shared_inter
        mlp = dense_layers * dense_mlp + (layers - dense_layers) * moe_mlp
    else:
        mlp = layers * dense_mlp
    embed = vocab * h * (1 if tied else 2)
    return full_layers * attn + linear_layers * delta + layers * 2 * h + mlp + embed + h


_COUNT_ONLY = ("qkv_bias", "gated", "dense_layers", "q_lora", "nope", "v_hd", "attn_gate", "linear")


def row(name, arch, layers, hidden, inter, heads, kv, hd, vocab, maxpos, params, aliases=(), **kw):
    """One table row: (ModelShape, aliases). See the module docstring for the fields."""
    vision = kw.pop("vision", 0.0)
    quant, bits = kw.pop("quant", None), kw.pop("bits", None)
    extra = {key: kw.pop(key) for key in _COUNT_ONLY if key in kw}
    args = dict(
        tied=bool(kw.get("tie_word_embeddings")), qkv_bias=extra.get("qkv_bias", False),
        gated=extra.get("gated", True), experts=kw.get("num_experts") or 0,
        moe_inter=kw.get("moe_intermediate_size") or 0, shared=kw.get("num_shared_experts") or 0,
        shared_inter=kw.get("shared_expert_intermediate_size") or 0,
        dense_layers=extra.get("dense_layers", 0), q_lora=extra.get("q_lora", 0),
        kv_lora=kw.get("kv_lora_rank") or 0, nope=extra.get("nope", 0),
        rope=kw.get("qk_rope_head_dim") or 0, v_hd=extra.get("v_hd", 0),
        attn_gate=extra.get("attn_gate", False),
        linear_layers=layers - kw["kv_layers"] if extra.get("linear") else 0,
        linear=extra.get("linear", (0, 0, 0, 0, 0)),
    )  # fmt: skip
    COUNT_ARGS[name] = dict(
        args, shape=(layers, hidden, inter, heads, kv, hd, vocab), vision=vision
    )
    if params is None:
        COMPUTED_PARAMS.add(name)
        count = count_params(layers, hidden, inter, heads, kv, hd, vocab, **args)
    else:
        count = round(params * 1e9)
    if quant:
        CHECKPOINT_QUANT[name] = (quant, bits)
    shape = ModelShape(
        name=name, architecture=arch, num_layers=layers, hidden_size=hidden,
        intermediate_size=inter, num_attention_heads=heads, num_kv_heads=kv, head_dim=hd,
        vocab_size=vocab, dtype="bfloat16", max_position_embeddings=maxpos, quantization=None,
        rope_scaling=kw.pop("rope_scaling", None), num_experts=kw.pop("num_experts", None),
        param_count=count + round(vision * 1e9), weight_bytes=None, source="built-in table", **kw,
    )  # fmt: skip
    return shape, tuple(aliases)


# Architectures most rows share.
L, Q2, Q3, Q3M = "LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM"
MS, MX = "MistralForCausalLM", "MixtralForCausalLM"
TIED = {"tie_word_embeddings": True}
QB = {"qkv_bias": True}  # Qwen1.5/2/2.5 attention carries q/k/v biases
