"""Built-in model shapes: Mistral/Mixtral, gpt-oss, DeepSeek, Kimi, MiniMax, InternLM/VL, Baichuan, GLM, Falcon, OLMo.

Each row is read from the model's public config.json; where each number came from:
docs/model_shapes_sources.md. The row format: headroom.doctor.model_rows.
"""

from __future__ import annotations

from headroom.doctor.model_rows import MS, MX, TIED, row

# fmt: off
OTHERS = (
    row("Mistral-7B", MS, 32, 4096, 14336, 32, 8, 128, 32768, 32768, 7.25,
       ["mistral-7b-v0.3", "mistral-7b-v0.1", "mistral-7b-v0.2", "mathstral-7b"]),
    row("Mistral-Small-24B", MS, 40, 5120, 32768, 32, 8, 128, 131072, 32768, 23.57,
       ["mistral-small-3.1-24b", "mistral-small-24b-2501"]),
    row("Mixtral-8x7B", MX, 32, 4096, 14336, 32, 8, 128, 32000, 32768, 46.7,
       num_experts=8, moe_intermediate_size=14336, num_experts_per_token=2),
    row("Mixtral-8x22B", MX, 56, 6144, 16384, 48, 8, 128, 32768, 65536, 140.6, ["wizardlm-2-8x22b"],
       num_experts=8, moe_intermediate_size=16384, num_experts_per_token=2),
    # openai/gpt-oss: MXFP4 experts (the checkpoint's quant), half the layers
    # sliding-window; 20b's count computed from the shape (experts and attention with biases).
    row("gpt-oss-120b", "GptOssForCausalLM", 36, 2880, 2880, 64, 8, 64, 201088, 131072, 116.83,
       num_experts=128, moe_intermediate_size=2880, num_experts_per_token=4, sliding_window=128,
       quant="mxfp4", bits=4),
    row("gpt-oss-20b", "GptOssForCausalLM", 24, 2880, 2880, 64, 8, 64, 201088, 131072, 20.91,
       num_experts=32, moe_intermediate_size=2880, num_experts_per_token=4, sliding_window=128,
       quant="mxfp4", bits=4),
    row("DeepSeek-V3", "DeepseekV3ForCausalLM", 61, 7168, 18432, 128, 128, 128, 129280, 163840, 671.0,
       ["deepseek-r1", "deepseek-v3-0324", "deepseek-r1-0528"],
       num_experts=256, moe_intermediate_size=2048, num_experts_per_token=8, kv_lora_rank=512, qk_rope_head_dim=64, quant="fp8", bits=8),
    # Kimi K2: the DeepSeek-V3 layout with 384 experts and 64 heads; 1026.4 B computed.
    row("Kimi-K2", "DeepseekV3ForCausalLM", 61, 7168, 18432, 64, 64, 128, 163840, 131072, 1026.41,
       num_experts=384, moe_intermediate_size=2048, num_experts_per_token=8, kv_lora_rank=512,
       qk_rope_head_dim=64, num_shared_experts=1, shared_expert_intermediate_size=2048,
       quant="fp8", bits=8),
    # MiniMax-M2.5 (M2 and M2.1 copies give the same shape): 256 experts of 1536, no shared
    # one; 228.69 B computed; an fp8 checkpoint.
    row("MiniMax-M2.5", "MiniMaxM2ForCausalLM", 62, 3072, 1536, 48, 8, 128, 200064, 196608,
       228.69, ["minimax-m2", "minimax-m2.1"],
       num_experts=256, moe_intermediate_size=1536, num_experts_per_token=8, quant="fp8", bits=8),
    # DeepSeek-V2-Lite: MLA (no q LoRA), first layer dense, 64 routed + 2 shared experts;
    # 15.71 B computed from the shape. DeepSeek-Coder-V2-Lite is further pre-training of a
    # DeepSeek-V2 checkpoint (its card; 27 layers, 6 experts a token, 16 B): the same shape.
    row("DeepSeek-V2-Lite", "DeepseekV2ForCausalLM", 27, 2048, 10944, 16, 16, 128, 102400, 163840,
       15.71, num_experts=64, moe_intermediate_size=1408, num_experts_per_token=6,
       kv_lora_rank=512, qk_rope_head_dim=64, num_shared_experts=2,
       shared_expert_intermediate_size=1408, aliases=["deepseek-coder-v2-lite"]),
    row("InternLM2.5-7B", "InternLM2ForCausalLM", 32, 4096, 14336, 32, 8, 128, 92544, 32768, None,
       ["internlm2-7b", "internlm2-chat-7b", "internlm2.5-7b-chat"]),
    # InternVL2.5-8B: InternViT-300M + internlm2_5-7b-chat; vision and projector 0.34 B computed.
    row("InternVL2.5-8B", "InternVLChatModel", 32, 4096, 14336, 32, 8, 128, 92544, 32768, None,
       vision=0.34),
    row("Baichuan2-13B", "BaichuanForCausalLM", 40, 5120, 13696, 40, 40, 128, 125696, 4096, None),
    # THUDM/glm-4-9b-chat as transformers exports it (GlmForCausalLM; the THUDM original names
    # the same shape in the ChatGLM dialect).
    row("GLM-4-9B", "GlmForCausalLM", 40, 4096, 13696, 32, 2, 128, 151552, 131072, None),
    # Ministral-8B-Instruct-2410: genz's transcription; 8.02 B computed fits the name.
    row("Ministral-8B", MS, 36, 4096, 12288, 32, 8, 128, 131072, 32768, None,
       ["ministral-8b-instruct-2410"]),
    row("Mistral-Large-123B", MS, 88, 12288, 28672, 96, 8, 128, 32768, 131072, None,
       ["mistral-large-instruct-2407", "mistral-large-instruct-2411", "mistral-large-2407"]),
    row("Mistral-Nemo-12B", MS, 40, 5120, 14336, 32, 8, 128, 131072, 1024000, None,
       ["mistral-nemo", "mistral-nemo-instruct-2407", "mistral-nemo-base-2407"]),
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
