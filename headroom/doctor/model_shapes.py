"""The built-in model shapes (data for headroom.doctor.model_table), each read from the model's
public config.json. Where each row's numbers came from: docs/model_shapes_sources.md.

A row: name, architecture, layers, hidden, intermediate, attention heads, KV heads, head_dim,
vocab, max_position_embeddings, parameters in billions (None: computed from the shape by
`shape_params`, because no model card or safetensors total was at hand), aliases, extras.
Multimodal rows size the language model (text_config) and add the vision tower's parameters
(`vision=`, billions, computed from vision_config) to the count: vLLM loads both.
"""

from __future__ import annotations

from headroom.probes.model import ModelShape

# Rows whose parameter count is computed from the shape (no card or safetensors total read).
COMPUTED_PARAMS: set[str] = set()


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
    attn = hidden * heads * head_dim * 2 + hidden * kv * head_dim * 2
    attn += (heads + 2 * kv) * head_dim if qkv_bias else 0
    mlp = (3 if gated else 2) * hidden * inter
    embed = vocab * hidden * (1 if tied else 2)
    return layers * (attn + mlp + 2 * hidden) + embed + hidden


def _m(name, arch, layers, hidden, inter, heads, kv, hd, vocab, maxpos, params, aliases=(), **kw):
    vision = kw.pop("vision", 0.0)
    qkv_bias, gated = kw.pop("qkv_bias", False), kw.pop("gated", True)
    if params is None:
        COMPUTED_PARAMS.add(name)
        tied = bool(kw.get("tie_word_embeddings"))
        count = shape_params(layers, hidden, inter, heads, kv, hd, vocab, tied, qkv_bias, gated)
    else:
        count = round(params * 1e9)
    shape = ModelShape(
        name=name, architecture=arch, num_layers=layers, hidden_size=hidden,
        intermediate_size=inter, num_attention_heads=heads, num_kv_heads=kv, head_dim=hd,
        vocab_size=vocab, dtype="bfloat16", max_position_embeddings=maxpos, quantization=None,
        rope_scaling=None, num_experts=kw.pop("num_experts", None),
        param_count=count + round(vision * 1e9), weight_bytes=None, source="built-in table", **kw,
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
_G, _G3, _G3V, _QVL = (
    "GemmaForCausalLM",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Qwen2_5_VLForConditionalGeneration",
)
_TIED = {"tie_word_embeddings": True}
_QB = {"qkv_bias": True}  # Qwen2-family attention carries q/k/v biases
# Gemma 3's SigLIP tower (vision_config: 27 layers, hidden 1152, MLP 4304, patch 14, image 896)
# plus its projection into the text width: computed, about 0.42 B on every size.
_G3_VISION = 0.42

# fmt: off
LLAMA = (
    _m("Llama-3.1-8B", _L, 32, 4096, 14336, 32, 8, 128, 128256, 131072, 8.03,
       ["llama-3-8b", "meta-llama-3-8b", "llama-3.1-8b", "meta-llama-3.1-8b", "llama3.1-8b",
        "deepseek-r1-distill-llama-8b", "llama3-8b"]),
    _m("Llama-3.1-70B", _L, 80, 8192, 28672, 64, 8, 128, 128256, 131072, 70.55,
       ["llama-3-70b", "meta-llama-3-70b", "meta-llama-3.1-70b", "llama-3.3-70b", "llama3.1-70b",
        "deepseek-r1-distill-llama-70b", "llama3-70b", "llama-3.1-nemotron-70b"]),
    _m("Llama-3.1-405B", _L, 126, 16384, 53248, 128, 8, 128, 128256, 131072, 405.85,
       ["meta-llama-3.1-405b", "llama3.1-405b"]),
    _m("Llama-3.2-1B", _L, 16, 2048, 8192, 32, 8, 64, 128256, 131072, 1.24, ["llama3.2-1b"], **_TIED),
    _m("Llama-3.2-3B", _L, 28, 3072, 8192, 24, 8, 128, 128256, 131072, 3.21, ["llama3.2-3b"], **_TIED),
    # Llama 2: the release configs say max_position_embeddings 4096 (an early copy said 2048).
    _m("Llama-2-7B", _L, 32, 4096, 11008, 32, 32, 128, 32000, 4096, None,
       ["llama2-7b", "vicuna-7b-v1.5"]),
    _m("Llama-2-13B", _L, 40, 5120, 13824, 40, 40, 128, 32000, 4096, None,
       ["llama2-13b", "vicuna-13b-v1.5"]),
    _m("Llama-2-70B", _L, 80, 8192, 28672, 64, 8, 128, 32000, 4096, None, ["llama2-70b"]),
    _m("CodeLlama-7B", _L, 32, 4096, 11008, 32, 32, 128, 32016, 16384, None,
       ["codellama-7b-instruct", "codellama-7b-python"]),
    _m("CodeLlama-13B", _L, 40, 5120, 13824, 40, 40, 128, 32016, 16384, None,
       ["codellama-13b-instruct", "codellama-13b-python"]),
    _m("CodeLlama-34B", _L, 48, 8192, 22016, 64, 8, 128, 32000, 16384, None,
       ["codellama-34b-instruct", "codellama-34b-python"]),
    _m("TinyLlama-1.1B", _L, 22, 2048, 5632, 32, 4, 64, 32000, 2048, None,
       ["tinyllama-1.1b-chat-v1.0", "tinyllama-1.1b-chat"]),
    # Llama 3.2 11B Vision: 40 text layers (8 of them cross-attention) and a 0.82 B vision
    # tower (32 + 8 layers of 1280, projector 7680 -> 4096), computed from vision_config.
    _m("Llama-3.2-11B-Vision", "MllamaForConditionalGeneration", 40, 4096, 14336, 32, 8, 128,
       128256, 131072, None, vision=0.82),
    _m("Llama-3.2-90B-Vision", "MllamaForConditionalGeneration", 100, 8192, 28672, 64, 8, 128,
       128256, 131072, None, vision=0.85),
    # Llama 4 Maverick: MoE on every second layer (128 experts + a shared one of 8192), dense
    # MLP 16384 between; 400.71 B computed (text; this config copy omits vision_config).
    _m("Llama-4-Maverick-17B-128E", "Llama4ForConditionalGeneration", 48, 5120, 8192, 40, 8, 128,
       202048, 1048576, 400.71, ["llama-4-maverick", "llama-4-maverick-17b-128e-instruct"],
       num_experts=128, moe_intermediate_size=8192, num_experts_per_token=1,
       num_shared_experts=1, shared_expert_intermediate_size=8192),
    # Yi: the Llama architecture with its own shape.
    _m("Yi-34B", _L, 60, 7168, 20480, 56, 8, 128, 64000, 4096, None),
    # Llama 4 Scout: every layer MoE (16 experts, top-1, plus one shared expert of 8192); the
    # count is the text model's, computed (this config copy omits vision_config).
    _m("Llama-4-Scout-17B-16E", "Llama4ForConditionalGeneration", 48, 5120, 8192, 40, 8, 128,
       202048, 10485760, 107.77, ["llama-4-scout", "llama-4-scout-17b-16e-instruct"],
       num_experts=16, moe_intermediate_size=8192, num_experts_per_token=1,
       num_shared_experts=1, shared_expert_intermediate_size=8192),
)

QWEN = (
    _m("Qwen1.5-7B", _Q2, 32, 4096, 11008, 32, 32, 128, 151936, 32768, 7.72, ["qwen1.5-7b-chat"]),
    _m("Qwen2.5-7B", _Q2, 28, 3584, 18944, 28, 4, 128, 152064, 32768, 7.62,
       ["qwen2-7b", "deepseek-r1-distill-qwen-7b", "qwen2.5-coder-7b"]),
    # Qwen2.5-14B/32B: the Instruct checkpoints people serve say 32768 positions (the bases
    # 131072); the R1 distills and QwQ built on them keep 131072.
    _m("Qwen2.5-14B", _Q2, 48, 5120, 13824, 40, 8, 128, 152064, 32768, 14.77),
    _m("DeepSeek-R1-Distill-Qwen-14B", _Q2, 48, 5120, 13824, 40, 8, 128, 152064, 131072, 14.77),
    _m("Qwen2.5-32B", _Q2, 64, 5120, 27648, 40, 8, 128, 152064, 32768, 32.76,
       ["qwen2.5-coder-32b"]),
    _m("QwQ-32B", _Q2, 64, 5120, 27648, 40, 8, 128, 152064, 131072, 32.76,
       ["deepseek-r1-distill-qwen-32b"]),
    _m("Qwen2.5-72B", _Q2, 80, 8192, 29568, 64, 8, 128, 152064, 32768, 72.71, ["qwen2-72b"]),
    _m("Qwen2.5-0.5B", _Q2, 24, 896, 4864, 14, 2, 64, 151936, 32768, None, ["qwen2-0.5b"],
       **_TIED, **_QB),
    _m("Qwen2.5-1.5B", _Q2, 28, 1536, 8960, 12, 2, 128, 151936, 32768, None, ["qwen2-1.5b"],
       **_TIED, **_QB),
    _m("Qwen2.5-3B", _Q2, 36, 2048, 11008, 16, 2, 128, 151936, 32768, None, **_TIED, **_QB),
    _m("Qwen3-0.6B", _Q3, 28, 1024, 3072, 16, 8, 128, 151936, 40960, None, **_TIED),
    _m("Qwen3-1.7B", _Q3, 28, 2048, 6144, 16, 8, 128, 151936, 40960, None, **_TIED),
    _m("Qwen3-4B", _Q3, 36, 2560, 9728, 32, 8, 128, 151936, 40960, None, **_TIED),
    # The 2507 Instruct/Thinking releases: same shapes, 262144 positions.
    _m("Qwen3-4B-2507", _Q3, 36, 2560, 9728, 32, 8, 128, 151936, 262144, None, **_TIED),
    _m("Qwen3-8B", _Q3, 36, 4096, 12288, 32, 8, 128, 151936, 40960, 8.19),
    _m("Qwen3-14B", _Q3, 40, 5120, 17408, 40, 8, 128, 151936, 40960, 14.77),
    _m("Qwen3-32B", _Q3, 64, 5120, 25600, 64, 8, 128, 151936, 40960, 32.76),
    _m("Qwen3-30B-A3B", _Q3M, 48, 2048, 6144, 32, 4, 128, 151936, 40960, 30.53, ["qwen3-coder-30b-a3b"],
       num_experts=128, moe_intermediate_size=768, num_experts_per_token=8),
    _m("Qwen3-235B-A22B", _Q3M, 94, 4096, 12288, 64, 4, 128, 151936, 40960, 235.09,
       num_experts=128, moe_intermediate_size=1536, num_experts_per_token=8),
    _m("Qwen3-Coder-480B-A35B", _Q3M, 62, 6144, 8192, 96, 8, 128, 151936, 262144, 480.15,
       num_experts=160, moe_intermediate_size=2560, num_experts_per_token=8),
    # Qwen3-VL: vision tower 27 blocks of 1152 (MLP 4304), a merger and 3 deepstack mergers,
    # computed: 0.58 / 0.60 / 0.54 B.
    _m("Qwen3-VL-8B", "Qwen3VLForConditionalGeneration", 36, 4096, 12288, 32, 8, 128, 151936,
       262144, None, vision=0.58),
    _m("Qwen3-VL-32B", "Qwen3VLForConditionalGeneration", 64, 5120, 25600, 64, 8, 128, 151936,
       262144, None, vision=0.60),
    _m("Qwen3-VL-30B-A3B", "Qwen3VLMoeForConditionalGeneration", 48, 2048, 6144, 32, 4, 128,
       151936, 262144, 31.07, num_experts=128, moe_intermediate_size=768, num_experts_per_token=8),
    _m("Qwen3-30B-A3B-2507", _Q3M, 48, 2048, 6144, 32, 4, 128, 151936, 262144, 30.53,
       num_experts=128, moe_intermediate_size=768, num_experts_per_token=8),
    _m("Qwen3-235B-A22B-2507", _Q3M, 94, 4096, 12288, 64, 4, 128, 151936, 262144, 235.09,
       num_experts=128, moe_intermediate_size=1536, num_experts_per_token=8),
    # Qwen2.5-VL-7B: the vision tower (32 blocks of 1280, gated MLP 3420, merger) is 0.68 B.
    _m("Qwen2.5-VL-7B", _QVL, 28, 3584, 18944, 28, 4, 128, 152064, 128000, None, **_QB,
       vision=0.68),
    # Qwen1.5-14B: one transcription (genz) only; its count, 14.2 B computed, fits the name.
    _m("Qwen1.5-14B", _Q2, 40, 5120, 13696, 40, 40, 128, 152064, 32768, None, **_QB),
    _m("Qwen1.5-72B", _Q2, 80, 8192, 24576, 64, 64, 128, 152064, 32768, None, **_QB),
    _m("Qwen1.5-32B", _Q2, 64, 5120, 27648, 40, 8, 128, 152064, 32768, None, **_QB),
    # Qwen2-VL-7B: Qwen2-7B's text shape; vision tower 32 blocks of 1280 (MLP 5120) and the
    # merger, 0.68 B computed.
    _m("Qwen2-VL-7B", "Qwen2VLForConditionalGeneration", 28, 3584, 18944, 28, 4, 128, 152064,
       32768, None, **_QB, vision=0.68),
    # MiniCPM-V 2.6: SigLIP-400M + Qwen2-7B, "a total of 8B parameters" (the model card).
    _m("MiniCPM-V-2.6", "MiniCPMV", 28, 3584, 18944, 28, 4, 128, 152064, 32768, 8.0),
    # The 3B copy gives no tie_word_embeddings: counted untied, as transformers' default.
    _m("Qwen2.5-VL-3B", _QVL, 36, 2048, 11008, 16, 2, 128, 151936, 128000, None, **_QB,
       vision=0.67),
)

GEMMA_PHI = (
    _m("Gemma-2B", _G, 18, 2048, 16384, 8, 1, 256, 256000, 8192, None, **_TIED),
    _m("Gemma-7B", _G, 28, 3072, 24576, 16, 16, 256, 256000, 8192, None, ["codegemma-7b"], **_TIED),
    _m("Gemma-2-2B", _G2, 26, 2304, 9216, 8, 4, 256, 256000, 8192, None, **_TIED, sliding_window=4096),
    _m("Gemma-2-9B", _G2, 42, 3584, 14336, 16, 8, 256, 256000, 8192, 9.24, **_TIED),
    _m("Gemma-2-27B", _G2, 46, 4608, 36864, 32, 16, 128, 256000, 8192, 27.23, **_TIED),
    _m("Gemma-3-1B", _G3, 26, 1152, 6912, 4, 1, 256, 262144, 32768, None, **_TIED, sliding_window=512),
    _m("Gemma-3-4B", _G3V, 34, 2560, 10240, 8, 4, 256, 262208, 131072, None, **_TIED,
       sliding_window=1024, vision=_G3_VISION),
    _m("Gemma-3-12B", _G3V, 48, 3840, 15360, 16, 8, 256, 262208, 131072, None, **_TIED,
       sliding_window=1024, vision=_G3_VISION),
    _m("Gemma-3-27B", _G3V, 62, 5376, 21504, 32, 16, 128, 262208, 131072, None, **_TIED,
       sliding_window=1024, vision=_G3_VISION),
    _m("Phi-3-mini", _P3, 32, 3072, 8192, 32, 32, 96, 32064, 131072, 3.82,
       ["phi-3-mini-128k", "phi-3-mini-4k", "phi-3.5-mini"]),
    _m("Phi-4", _P3, 40, 5120, 17920, 40, 10, 128, 100352, 16384, 14.66),
    # Phi-3-medium-4k and Phi-3.5-MoE: genz's transcriptions, checked against the cards' counts
    # (14 B; 41.9 B total with 6.6 B active: the shape gives 41.87 B and 6.63 B).
    _m("Phi-3-medium-4k", _P3, 40, 5120, 17920, 40, 10, 128, 32064, 4096, None),
    _m("Phi-3.5-MoE", "PhiMoEForCausalLM", 32, 4096, 6400, 32, 8, 128, 32064, 131072, 41.9,
       num_experts=16, moe_intermediate_size=6400, num_experts_per_token=2),
    _m("Phi-4-reasoning", _P3, 40, 5120, 17920, 40, 10, 128, 100352, 32768, None,
       ["phi-4-reasoning-plus"]),
    _m("Phi-4-mini", _P3, 32, 3072, 8192, 24, 8, 128, 200064, 131072, None, **_TIED),
)

OTHERS = (
    _m("Mistral-7B", _MS, 32, 4096, 14336, 32, 8, 128, 32768, 32768, 7.25,
       ["mistral-7b-v0.3", "mistral-7b-v0.1", "mistral-7b-v0.2", "mathstral-7b"]),
    _m("Mistral-Small-24B", _MS, 40, 5120, 32768, 32, 8, 128, 131072, 32768, 23.57,
       ["mistral-small-3.1-24b", "mistral-small-24b-2501"]),
    _m("Mixtral-8x7B", _MX, 32, 4096, 14336, 32, 8, 128, 32000, 32768, 46.7,
       num_experts=8, moe_intermediate_size=14336, num_experts_per_token=2),
    _m("Mixtral-8x22B", _MX, 56, 6144, 16384, 48, 8, 128, 32768, 65536, 140.6, ["wizardlm-2-8x22b"],
       num_experts=8, moe_intermediate_size=16384, num_experts_per_token=2),
    # openai/gpt-oss: MXFP4 experts (model_table's _CHECKPOINT_QUANT), half the layers
    # sliding-window; 20b's count computed from the shape (experts and attention with biases).
    _m("gpt-oss-120b", "GptOssForCausalLM", 36, 2880, 2880, 64, 8, 64, 201088, 131072, 116.83,
       num_experts=128, moe_intermediate_size=2880, num_experts_per_token=4, sliding_window=128),
    _m("gpt-oss-20b", "GptOssForCausalLM", 24, 2880, 2880, 64, 8, 64, 201088, 131072, 20.91,
       num_experts=32, moe_intermediate_size=2880, num_experts_per_token=4, sliding_window=128),
    _m("DeepSeek-V3", "DeepseekV3ForCausalLM", 61, 7168, 18432, 128, 128, 128, 129280, 163840, 671.0,
       ["deepseek-r1", "deepseek-v3-0324", "deepseek-r1-0528"],
       num_experts=256, moe_intermediate_size=2048, num_experts_per_token=8, kv_lora_rank=512, qk_rope_head_dim=64),
    # Kimi K2: the DeepSeek-V3 layout with 384 experts and 64 heads; 1026.4 B computed.
    _m("Kimi-K2", "DeepseekV3ForCausalLM", 61, 7168, 18432, 64, 64, 128, 163840, 131072, 1026.41,
       num_experts=384, moe_intermediate_size=2048, num_experts_per_token=8, kv_lora_rank=512,
       qk_rope_head_dim=64, num_shared_experts=1, shared_expert_intermediate_size=2048),
    # MiniMax-M2.5 (M2 and M2.1 copies give the same shape): 256 experts of 1536, no shared
    # one; 228.69 B computed; an fp8 checkpoint.
    _m("MiniMax-M2.5", "MiniMaxM2ForCausalLM", 62, 3072, 1536, 48, 8, 128, 200064, 196608,
       228.69, ["minimax-m2", "minimax-m2.1"],
       num_experts=256, moe_intermediate_size=1536, num_experts_per_token=8),
    # DeepSeek-V2-Lite: MLA (no q LoRA), first layer dense, 64 routed + 2 shared experts;
    # 15.71 B computed from the shape. DeepSeek-Coder-V2-Lite is further pre-training of a
    # DeepSeek-V2 checkpoint (its card; 27 layers, 6 experts a token, 16 B): the same shape.
    _m("DeepSeek-V2-Lite", "DeepseekV2ForCausalLM", 27, 2048, 10944, 16, 16, 128, 102400, 163840,
       15.71, num_experts=64, moe_intermediate_size=1408, num_experts_per_token=6,
       kv_lora_rank=512, qk_rope_head_dim=64, num_shared_experts=2,
       shared_expert_intermediate_size=1408, aliases=["deepseek-coder-v2-lite"]),
    _m("InternLM2.5-7B", "InternLM2ForCausalLM", 32, 4096, 14336, 32, 8, 128, 92544, 32768, None,
       ["internlm2-7b", "internlm2-chat-7b", "internlm2.5-7b-chat"]),
    # InternVL2.5-8B: InternViT-300M + internlm2_5-7b-chat; vision and projector 0.34 B computed.
    _m("InternVL2.5-8B", "InternVLChatModel", 32, 4096, 14336, 32, 8, 128, 92544, 32768, None,
       vision=0.34),
    _m("Baichuan2-13B", "BaichuanForCausalLM", 40, 5120, 13696, 40, 40, 128, 125696, 4096, None),
    # THUDM/glm-4-9b-chat as transformers exports it (GlmForCausalLM; the THUDM original names
    # the same shape in the ChatGLM dialect).
    _m("GLM-4-9B", "GlmForCausalLM", 40, 4096, 13696, 32, 2, 128, 151552, 131072, None),
    # Ministral-8B-Instruct-2410: genz's transcription; 8.02 B computed fits the name.
    _m("Ministral-8B", _MS, 36, 4096, 12288, 32, 8, 128, 131072, 32768, None,
       ["ministral-8b-instruct-2410"]),
    _m("Mistral-Large-123B", _MS, 88, 12288, 28672, 96, 8, 128, 32768, 131072, None,
       ["mistral-large-instruct-2407", "mistral-large-instruct-2411", "mistral-large-2407"]),
    _m("Mistral-Nemo-12B", _MS, 40, 5120, 14336, 32, 8, 128, 131072, 1024000, None,
       ["mistral-nemo", "mistral-nemo-instruct-2407", "mistral-nemo-base-2407"]),
    # THUDM/chatglm3-6b: ChatGLM dialect (num_layers, ffn_hidden_size, multi_query_group_num 2,
    # kv_channels 128, padded_vocab_size, seq_length).
    _m("ChatGLM3-6B", "ChatGLMModel", 28, 4096, 13696, 32, 2, 128, 65024, 8192, None),
    # Falcon: a plain (ungated) GELU MLP; 7B is multi-query (one KV head), 40B has 8 groups.
    _m("Falcon-7B", "FalconForCausalLM", 32, 4544, 18176, 71, 1, 64, 65024, 2048, None,
       gated=False, **_TIED),
    _m("Falcon-40B", "FalconForCausalLM", 60, 8192, 32768, 128, 8, 64, 65024, 2048, None,
       gated=False, **_TIED),
    _m("OLMo-2-7B", "Olmo2ForCausalLM", 32, 4096, 11008, 32, 32, 128, 100352, 4096, None,
       ["olmo-2-1124-7b"]),
    _m("OLMo-2-13B", "Olmo2ForCausalLM", 40, 5120, 13824, 40, 40, 128, 100352, 4096, None,
       ["olmo-2-1124-13b"]),
)
# fmt: on

ALL = LLAMA + QWEN + GEMMA_PHI + OTHERS
