"""Built-in model shapes: InternLM/InternVL, Baichuan, GLM/ChatGLM, Falcon, OLMo and other families.

Each row is read from the model's public config.json; where each number came from:
docs/model_shapes_sources.md. The row format: headroom.doctor.model_rows.
"""

from __future__ import annotations

from headroom.doctor.model_rows import TIED, L, row

# fmt: off
OTHERS = (
    row("InternLM2.5-7B", "InternLM2ForCausalLM", 32, 4096, 14336, 32, 8, 128, 92544, 32768, None,
       ["internlm2-7b", "internlm2-chat-7b", "internlm2.5-7b-chat"]),
    # InternVL2.5-8B: InternViT-300M + internlm2_5-7b-chat; vision and projector 0.34 B computed.
    row("InternVL2.5-8B", "InternVLChatModel", 32, 4096, 14336, 32, 8, 128, 92544, 32768, None,
       vision=0.34),
    row("Baichuan2-13B", "BaichuanForCausalLM", 40, 5120, 13696, 40, 40, 128, 125696, 4096, None),
    # THUDM/glm-4-9b-chat as transformers exports it (GlmForCausalLM; the THUDM original names
    # the same shape in the ChatGLM dialect).
    row("GLM-4-9B", "GlmForCausalLM", 40, 4096, 13696, 32, 2, 128, 151552, 131072, None),
    # THUDM/chatglm3-6b: ChatGLM dialect (num_layers, ffn_hidden_size, multi_query_group_num 2,
    # kv_channels 128, padded_vocab_size, seq_length).
    row("ChatGLM3-6B", "ChatGLMModel", 28, 4096, 13696, 32, 2, 128, 65024, 8192, None),
    # Falcon: a plain (ungated) GELU MLP; 7B is multi-query (one KV head), 40B has 8 groups.
    row("Falcon-7B", "FalconForCausalLM", 32, 4544, 18176, 71, 1, 64, 65024, 2048, None,
       gated=False, **TIED),
    row("Falcon-40B", "FalconForCausalLM", 60, 8192, 32768, 128, 8, 64, 65024, 2048, None,
       gated=False, **TIED),
    row("OLMo-2-7B", "Olmo2ForCausalLM", 32, 4096, 11008, 32, 32, 128, 100352, 4096, None,
       ["olmo-2-1124-7b"]),
    row("OLMo-2-13B", "Olmo2ForCausalLM", 40, 5120, 13824, 40, 40, 128, 100352, 4096, None,
       ["olmo-2-1124-13b"]),
    # glm-4-9b-chat-1m: the 9B shape with 4 KV groups (not 2) and 1048576 positions.
    row("GLM-4-9B-Chat-1M", "ChatGLMModel", 40, 4096, 13696, 32, 4, 128, 151552, 1048576, None,
       qkv_bias=True),
    # InternLM2 / 2.5 20B (the same shape), InternLM (v1) 7B with biases and 2048 positions.
    row("InternLM2-20B", "InternLM2ForCausalLM", 48, 6144, 16384, 48, 8, 128, 92544, 32768, None,
       ["internlm2.5-20b", "internlm2-chat-20b", "internlm2.5-20b-chat"]),
    row("InternLM-7B", "InternLMForCausalLM", 32, 4096, 11008, 32, 32, 128, 103168, 2048, None,
       ["internlm-chat-7b"], qkv_bias=True),
    row("Baichuan2-7B", "BaichuanForCausalLM", 32, 4096, 11008, 32, 32, 128, 125696, 4096, None),
    row("Falcon-180B", "FalconForCausalLM", 80, 14848, 59392, 232, 8, 64, 65024, 2048, None,
       gated=False, **TIED),
    # Falcon 3 (December 2024): the Llama architecture, head_dim 256, 4 KV heads.
    row("Falcon3-1B", L, 18, 2048, 8192, 8, 4, 256, 131072, 4096, None),
    row("Falcon3-3B", L, 22, 3072, 9216, 12, 4, 256, 131072, 32768, None),
    row("Falcon3-7B", L, 28, 3072, 23040, 12, 4, 256, 131072, 32768, None),
    row("Falcon3-10B", L, 40, 3072, 23040, 12, 4, 256, 131072, 32768, None),
    row("OLMo-1B", "OlmoForCausalLM", 16, 2048, 8192, 16, 16, 128, 50304, 2048, None, **TIED),
    row("OLMo-7B", "OlmoForCausalLM", 32, 4096, 11008, 32, 32, 128, 50304, 2048, None),
    row("OLMo-2-32B", "Olmo2ForCausalLM", 64, 5120, 27648, 40, 8, 128, 100352, 4096, None,
       ["olmo-2-0325-32b"]),
    # StarCoder2-7B: a GELU up/down MLP, 4 KV heads, 4096-token sliding window; tied
    # (Starcoder2Config's default, the copy leaves it out): 7.17 B, the card's count.
    row("StarCoder2-7B", "Starcoder2ForCausalLM", 32, 4608, 18432, 36, 4, 128, 49152, 16384, None,
       gated=False, sliding_window=4096, qkv_bias=True, **TIED),
    # Aya 23 8B: Cohere's architecture (tied embeddings), 8192 positions.
    row("Aya-23-8B", "CohereForCausalLM", 32, 4096, 14336, 32, 8, 128, 256000, 8192, None, **TIED),
)
# fmt: on
