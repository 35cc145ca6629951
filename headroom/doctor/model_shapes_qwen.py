"""Built-in model shapes: Qwen 1.5/2/2.5/3 and their VL/Coder/MoE variants, QwQ and the R1 Qwen distills.

Each row is read from the model's public config.json; where each number came from:
docs/model_shapes_sources.md. The row format: headroom.doctor.model_rows.
"""

from __future__ import annotations

from headroom.doctor.model_rows import Q2, Q3, Q3M, QB, TIED, row

_QVL = "Qwen2_5_VLForConditionalGeneration"

# fmt: off
QWEN = (
    row("Qwen1.5-7B", Q2, 32, 4096, 11008, 32, 32, 128, 151936, 32768, 7.72, ["qwen1.5-7b-chat"]),
    row("Qwen2.5-7B", Q2, 28, 3584, 18944, 28, 4, 128, 152064, 32768, 7.62,
       ["qwen2-7b", "qwen2.5-coder-7b"]),
    # The R1 distills are built on Qwen2.5-Math (1.5B untied, unlike Qwen2.5-1.5B) and keep
    # 131072 positions.
    row("DeepSeek-R1-Distill-Qwen-7B", Q2, 28, 3584, 18944, 28, 4, 128, 152064, 131072, None, **QB),
    row("DeepSeek-R1-Distill-Qwen-1.5B", Q2, 28, 1536, 8960, 12, 2, 128, 151936, 131072, None,
       **QB),
    # Qwen2.5-14B/32B: the Instruct checkpoints people serve say 32768 positions (the bases
    # 131072); the R1 distills and QwQ built on them keep 131072.
    row("Qwen2.5-14B", Q2, 48, 5120, 13824, 40, 8, 128, 152064, 32768, 14.77),
    row("DeepSeek-R1-Distill-Qwen-14B", Q2, 48, 5120, 13824, 40, 8, 128, 152064, 131072, 14.77),
    row("Qwen2.5-32B", Q2, 64, 5120, 27648, 40, 8, 128, 152064, 32768, 32.76,
       ["qwen2.5-coder-32b"]),
    row("QwQ-32B", Q2, 64, 5120, 27648, 40, 8, 128, 152064, 131072, 32.76,
       ["deepseek-r1-distill-qwen-32b"]),
    row("Qwen2.5-72B", Q2, 80, 8192, 29568, 64, 8, 128, 152064, 32768, 72.71, ["qwen2-72b"]),
    row("Qwen2.5-0.5B", Q2, 24, 896, 4864, 14, 2, 64, 151936, 32768, None, ["qwen2-0.5b"],
       **TIED, **QB),
    row("Qwen2.5-1.5B", Q2, 28, 1536, 8960, 12, 2, 128, 151936, 32768, None, ["qwen2-1.5b"],
       **TIED, **QB),
    row("Qwen2.5-3B", Q2, 36, 2048, 11008, 16, 2, 128, 151936, 32768, None, **TIED, **QB),
    row("Qwen3-0.6B", Q3, 28, 1024, 3072, 16, 8, 128, 151936, 40960, None, **TIED),
    row("Qwen3-1.7B", Q3, 28, 2048, 6144, 16, 8, 128, 151936, 40960, None, **TIED),
    row("Qwen3-4B", Q3, 36, 2560, 9728, 32, 8, 128, 151936, 40960, None, **TIED),
    # The 2507 Instruct/Thinking releases: same shapes, 262144 positions.
    row("Qwen3-4B-2507", Q3, 36, 2560, 9728, 32, 8, 128, 151936, 262144, None, **TIED),
    row("Qwen3-8B", Q3, 36, 4096, 12288, 32, 8, 128, 151936, 40960, 8.19),
    row("Qwen3-14B", Q3, 40, 5120, 17408, 40, 8, 128, 151936, 40960, 14.77),
    row("Qwen3-32B", Q3, 64, 5120, 25600, 64, 8, 128, 151936, 40960, 32.76),
    row("Qwen3-30B-A3B", Q3M, 48, 2048, 6144, 32, 4, 128, 151936, 40960, 30.53,
       num_experts=128, moe_intermediate_size=768, num_experts_per_token=8),
    row("Qwen3-235B-A22B", Q3M, 94, 4096, 12288, 64, 4, 128, 151936, 40960, 235.09,
       num_experts=128, moe_intermediate_size=1536, num_experts_per_token=8),
    row("Qwen3-Coder-480B-A35B", Q3M, 62, 6144, 8192, 96, 8, 128, 151936, 262144, 480.15,
       num_experts=160, moe_intermediate_size=2560, num_experts_per_token=8),
    # Qwen3-VL: vision tower 27 blocks of 1152 (MLP 4304), a merger and 3 deepstack mergers,
    # computed: 0.58 / 0.60 / 0.54 B.
    row("Qwen3-VL-8B", "Qwen3VLForConditionalGeneration", 36, 4096, 12288, 32, 8, 128, 151936,
       262144, None, vision=0.58),
    row("Qwen3-VL-32B", "Qwen3VLForConditionalGeneration", 64, 5120, 25600, 64, 8, 128, 151936,
       262144, None, vision=0.60),
    row("Qwen3-VL-30B-A3B", "Qwen3VLMoeForConditionalGeneration", 48, 2048, 6144, 32, 4, 128,
       151936, 262144, 30.53, num_experts=128, moe_intermediate_size=768, num_experts_per_token=8,
       vision=0.54),
    # Qwen3-Coder-30B-A3B is this shape with 262144 positions too (its FP8 copy's vLLM log:
    # "max seq len (262144)").
    row("Qwen3-30B-A3B-2507", Q3M, 48, 2048, 6144, 32, 4, 128, 151936, 262144, 30.53,
       ["qwen3-coder-30b-a3b"],
       num_experts=128, moe_intermediate_size=768, num_experts_per_token=8),
    row("Qwen3-235B-A22B-2507", Q3M, 94, 4096, 12288, 64, 4, 128, 151936, 262144, 235.09,
       num_experts=128, moe_intermediate_size=1536, num_experts_per_token=8),
    # Qwen2.5-VL-7B: the vision tower (32 blocks of 1280, gated MLP 3420, merger) is 0.68 B.
    row("Qwen2.5-VL-7B", _QVL, 28, 3584, 18944, 28, 4, 128, 152064, 128000, None, **QB,
       vision=0.68),
    # Qwen1.5-14B: one transcription (genz) only; its count, 14.2 B computed, fits the name.
    row("Qwen1.5-14B", Q2, 40, 5120, 13696, 40, 40, 128, 152064, 32768, None, **QB),
    row("Qwen1.5-72B", Q2, 80, 8192, 24576, 64, 64, 128, 152064, 32768, None, **QB),
    row("Qwen1.5-32B", Q2, 64, 5120, 27648, 40, 8, 128, 152064, 32768, None, **QB),
    # Qwen2-VL-7B: Qwen2-7B's text shape; vision tower 32 blocks of 1280 (MLP 5120) and the
    # merger, 0.68 B computed.
    row("Qwen2-VL-7B", "Qwen2VLForConditionalGeneration", 28, 3584, 18944, 28, 4, 128, 152064,
       32768, None, **QB, vision=0.68),
    # MiniCPM-V 2.6: SigLIP-400M (and its resampler, 0.43 B) + Qwen2-7B: 8.05 B computed, "a
    # total of 8B parameters" (the model card).
    row("MiniCPM-V-2.6", "MiniCPMV", 28, 3584, 18944, 28, 4, 128, 152064, 32768, None, **QB,
       vision=0.43),
    # The 3B copy gives no tie_word_embeddings; its text model is Qwen2.5-3B's, which ties
    # (untied, the count would be 4.07 B, a third past the name's 3B): counted tied, 3.76 B.
    row("Qwen2.5-VL-3B", _QVL, 36, 2048, 11008, 16, 2, 128, 151936, 128000, None, **QB, **TIED,
       vision=0.67),
)
# fmt: on
