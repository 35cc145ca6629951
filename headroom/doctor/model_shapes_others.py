"""Built-in model shapes: InternLM/InternVL, Baichuan, GLM/ChatGLM, Falcon, OLMo and other families.

Each row is read from the model's public config.json; where each number came from:
docs/model_shapes_sources.md. The row format: headroom.doctor.model_rows.
"""

from __future__ import annotations

from headroom.doctor.model_rows import TIED, row

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
)
# fmt: on
