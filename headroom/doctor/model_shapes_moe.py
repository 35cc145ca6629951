"""Built-in model shapes: large MoE models: DeepSeek V2/V3, Kimi, MiniMax, gpt-oss.

Each row is read from the model's public config.json; where each number came from:
docs/model_shapes_sources.md. The row format: headroom.doctor.model_rows.
"""

from __future__ import annotations

from headroom.doctor.model_rows import row

# fmt: off
MOE = (
    # openai/gpt-oss: MXFP4 experts (the checkpoint's quant), half the layers
    # sliding-window; 20b's count computed from the shape (experts and attention with biases).
    row("gpt-oss-120b", "GptOssForCausalLM", 36, 2880, 2880, 64, 8, 64, 201088, 131072, 116.83,
       num_experts=128, moe_intermediate_size=2880, num_experts_per_token=4, sliding_window=128,
       quant="mxfp4", bits=4),
    row("gpt-oss-20b", "GptOssForCausalLM", 24, 2880, 2880, 64, 8, 64, 201088, 131072, 20.91,
       num_experts=32, moe_intermediate_size=2880, num_experts_per_token=4, sliding_window=128,
       quant="mxfp4", bits=4),
    row("DeepSeek-V3", "DeepseekV3ForCausalLM", 61, 7168, 18432, 128, 128, 128, 129280, 163840, 671.0,
       ["deepseek-r1", "deepseek-v3-0324", "deepseek-r1-0528", "deepseek-v3.1",
        "deepseek-v3.1-terminus"],
       num_experts=256, moe_intermediate_size=2048, num_experts_per_token=8, kv_lora_rank=512,
       qk_rope_head_dim=64, num_shared_experts=1, shared_expert_intermediate_size=2048,
       dense_layers=3, q_lora=1536, nope=128, v_hd=128, quant="fp8", bits=8),
    # Kimi K2: the DeepSeek-V3 layout with 384 experts and 64 heads; 1026.4 B computed.
    row("Kimi-K2", "DeepseekV3ForCausalLM", 61, 7168, 18432, 64, 64, 128, 163840, 131072, 1026.41,
       num_experts=384, moe_intermediate_size=2048, num_experts_per_token=8, kv_lora_rank=512,
       qk_rope_head_dim=64, num_shared_experts=1, shared_expert_intermediate_size=2048,
       dense_layers=1, q_lora=1536, nope=128, v_hd=128, quant="fp8", bits=8),
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
       shared_expert_intermediate_size=1408, dense_layers=1, nope=128, v_hd=128,
       aliases=["deepseek-coder-v2-lite"]),
    # DeepSeek-V3.2 (-Exp): the V3 shape and its DSA indexer (64 heads of 128 over the
    # latent, a small K cache of its own per layer that the row does not add); fp8.
    row("DeepSeek-V3.2", "DeepseekV32ForCausalLM", 61, 7168, 18432, 128, 128, 128, 129280,
       163840, None, ["deepseek-v3.2-exp"], num_experts=256, moe_intermediate_size=2048,
       num_experts_per_token=8, kv_lora_rank=512, qk_rope_head_dim=64, num_shared_experts=1,
       shared_expert_intermediate_size=2048, dense_layers=3, q_lora=1536, nope=128, v_hd=128,
       quant="fp8", bits=8),
    # DeepSeek-V2 (236B; V2-Chat, V2.5 and Coder-V2 share it): MLA with a q LoRA, 160 routed
    # + 2 shared experts of 1536, the first layer dense.
    row("DeepSeek-V2", "DeepseekV2ForCausalLM", 60, 5120, 12288, 128, 128, 128, 102400, 163840,
       None, ["deepseek-v2.5", "deepseek-v2-chat", "deepseek-coder-v2", "deepseek-v2.5-1210"],
       num_experts=160, moe_intermediate_size=1536, num_experts_per_token=6, kv_lora_rank=512,
       qk_rope_head_dim=64, num_shared_experts=2, shared_expert_intermediate_size=1536,
       dense_layers=1, q_lora=1536, nope=128, v_hd=128),
    # DeepSeek-MoE-16B: multi-head attention (16 KV heads), 64 routed + 2 shared experts.
    row("DeepSeek-MoE-16B", "DeepseekForCausalLM", 28, 2048, 10944, 16, 16, 128, 102400, 4096,
       None, num_experts=64, moe_intermediate_size=1408, num_experts_per_token=6,
       num_shared_experts=2, shared_expert_intermediate_size=1408, dense_layers=1),
    # Kimi K2.5: the Kimi K2 text model with 262144 positions (yarn 64 x 4096), a MoonViT
    # tower (27 x 1152, MLP 4304) and patch merger into 7168 (0.46 B computed); the routed
    # experts int4 (compressed-tensors, group 32), the rest 16-bit.
    row("Kimi-K2.5", "KimiK25ForConditionalGeneration", 61, 7168, 18432, 64, 64, 128, 163840,
       262144, None, num_experts=384, moe_intermediate_size=2048, num_experts_per_token=8,
       kv_lora_rank=512, qk_rope_head_dim=64, num_shared_experts=1,
       shared_expert_intermediate_size=2048, dense_layers=1, q_lora=1536, nope=128, v_hd=128,
       vision=0.46, quant="compressed-tensors", bits=4),
    # MiniMax-M2.7: the M2.5 shape with 204800 positions; fp8.
    row("MiniMax-M2.7", "MiniMaxM2ForCausalLM", 62, 3072, 1536, 48, 8, 128, 200064, 204800, None,
       num_experts=256, moe_intermediate_size=1536, num_experts_per_token=8, quant="fp8", bits=8),
    # GLM-5 / 5.1 (GlmMoeDsaForCausalLM): MLA (q LoRA 2048, nope 192, rope 64, v 256) with a
    # DSA indexer, 256 experts of 2048 + 1 shared, the first 3 layers dense; GLM-5.2 the same
    # with 1048576 positions.
    row("GLM-5", "GlmMoeDsaForCausalLM", 78, 6144, 12288, 64, 64, 256, 154880, 202752, None,
       ["glm-5.1"], num_experts=256, moe_intermediate_size=2048, num_experts_per_token=8,
       kv_lora_rank=512, qk_rope_head_dim=64, num_shared_experts=1,
       shared_expert_intermediate_size=2048, dense_layers=3, q_lora=2048, nope=192, v_hd=256),
    row("GLM-5.2", "GlmMoeDsaForCausalLM", 78, 6144, 12288, 64, 64, 256, 154880, 1048576, None,
       num_experts=256, moe_intermediate_size=2048, num_experts_per_token=8, kv_lora_rank=512,
       qk_rope_head_dim=64, num_shared_experts=1, shared_expert_intermediate_size=2048,
       dense_layers=3, q_lora=2048, nope=192, v_hd=256),
    # GLM-4.5 (355B-A32B) / GLM-4.5-Air (106B-A12B): Glm4MoeForCausalLM, q/k/v biases, 160
    # / 128 experts of 1536 / 1408 and a shared one, the first 3 / 1 layers dense.
    row("GLM-4.5", "Glm4MoeForCausalLM", 92, 5120, 12288, 96, 8, 128, 151552, 131072, None,
       num_experts=160, moe_intermediate_size=1536, num_experts_per_token=8,
       num_shared_experts=1, shared_expert_intermediate_size=1536, dense_layers=3, qkv_bias=True),
    row("GLM-4.5-Air", "Glm4MoeForCausalLM", 46, 4096, 10944, 96, 8, 128, 151552, 131072, None,
       num_experts=128, moe_intermediate_size=1408, num_experts_per_token=8,
       num_shared_experts=1, shared_expert_intermediate_size=1408, dense_layers=1, qkv_bias=True),
    # MiniMax-M1: lightning (linear) attention in 70 of 80 layers, softmax attention in every
    # eighth (attn_type_list), which alone caches K/V; 32 experts of 9216, top 2. Count:
    # 456 B computed layer by layer (a lightning layer's q/k/v, gate and output of 64 x 128),
    # the card's 456B.
    row("MiniMax-M1", "MiniMaxM1ForCausalLM", 80, 6144, 9216, 64, 8, 128, 200064, 10240000, 456.0,
       ["minimax-m1-40k", "minimax-m1-80k"], kv_layers=10, num_experts=32,
       moe_intermediate_size=9216, num_experts_per_token=2),
)
# fmt: on
