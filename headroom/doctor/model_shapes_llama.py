"""Built-in model shapes: Llama 1/2/3/4, CodeLlama, TinyLlama, Yi and other Llama-architecture shapes.

Each row is read from the model's public config.json; where each number came from:
docs/model_shapes_sources.md. The row format: headroom.doctor.model_rows.
"""

from __future__ import annotations

from headroom.doctor.model_rows import TIED, L, row

# fmt: off
LLAMA = (
    row("Llama-3.1-8B", L, 32, 4096, 14336, 32, 8, 128, 128256, 131072, 8.03,
       ["llama-3.1-8b", "llama3.1-8b", "deepseek-r1-distill-llama-8b"]),
    row("Llama-3.1-70B", L, 80, 8192, 28672, 64, 8, 128, 128256, 131072, 70.55,
       ["llama-3.3-70b", "llama3.1-70b", "deepseek-r1-distill-llama-70b",
        "llama-3.1-nemotron-70b"]),
    row("Llama-3.1-405B", L, 126, 16384, 53248, 128, 8, 128, 128256, 131072, 405.85,
       ["llama3.1-405b"]),
    # Llama 3 (April 2024): the 3.1 shapes with 8192 positions and no rope scaling.
    row("Llama-3-8B", L, 32, 4096, 14336, 32, 8, 128, 128256, 8192, 8.03),
    row("Llama-3-70B", L, 80, 8192, 28672, 64, 8, 128, 128256, 8192, 70.55),
    row("Llama-3.2-1B", L, 16, 2048, 8192, 32, 8, 64, 128256, 131072, 1.24, ["llama3.2-1b"], **TIED),
    row("Llama-3.2-3B", L, 28, 3072, 8192, 24, 8, 128, 128256, 131072, 3.21, ["llama3.2-3b"], **TIED),
    # Llama 2: the release configs say max_position_embeddings 4096 (an early copy said 2048).
    row("Llama-2-7B", L, 32, 4096, 11008, 32, 32, 128, 32000, 4096, None,
       ["vicuna-7b-v1.5", "dolphin-llama2-7b"]),
    row("Llama-2-13B", L, 40, 5120, 13824, 40, 40, 128, 32000, 4096, None,
       ["vicuna-13b-v1.5", "nous-hermes-llama2-13b"]),
    row("Llama-2-70B", L, 80, 8192, 28672, 64, 8, 128, 32000, 4096, None),
    # LLaMA (February 2023): multi-head attention, 2048 positions; Vicuna v1.3 is LLaMA
    # fine-tuned (its card), the same shapes.
    row("LLaMA-7B", L, 32, 4096, 11008, 32, 32, 128, 32000, 2048, None, ["vicuna-7b-v1.3"]),
    row("LLaMA-13B", L, 40, 5120, 13824, 40, 40, 128, 32000, 2048, None, ["vicuna-13b-v1.3"]),
    row("LLaMA-30B", L, 60, 6656, 17920, 52, 52, 128, 32000, 2048, None, ["vicuna-33b-v1.3"]),
    row("LLaMA-65B", L, 80, 8192, 22016, 64, 64, 128, 32000, 2048, None),
    row("CodeLlama-7B", L, 32, 4096, 11008, 32, 32, 128, 32016, 16384, None,
       ["codellama-7b-instruct", "codellama-7b-python"]),
    row("CodeLlama-13B", L, 40, 5120, 13824, 40, 40, 128, 32016, 16384, None,
       ["codellama-13b-instruct", "codellama-13b-python"]),
    row("CodeLlama-34B", L, 48, 8192, 22016, 64, 8, 128, 32000, 16384, None,
       ["codellama-34b-instruct", "codellama-34b-python", "phind-codellama-34b-v2"]),
    row("CodeLlama-70B", L, 80, 8192, 28672, 64, 8, 128, 32016, 16384, None,
       ["codellama-70b-instruct", "codellama-70b-python"]),
    row("TinyLlama-1.1B", L, 22, 2048, 5632, 32, 4, 64, 32000, 2048, None,
       ["tinyllama-1.1b-chat-v1.0", "tinyllama-1.1b-chat"]),
    # Llama 3.2 11B Vision: 40 text layers (8 of them cross-attention) and a 0.82 B vision
    # tower (32 + 8 layers of 1280, projector 7680 -> 4096), computed from vision_config.
    row("Llama-3.2-11B-Vision", "MllamaForConditionalGeneration", 40, 4096, 14336, 32, 8, 128,
       128256, 131072, None, vision=0.82),
    row("Llama-3.2-90B-Vision", "MllamaForConditionalGeneration", 100, 8192, 28672, 64, 8, 128,
       128256, 131072, None, vision=0.85),
    # Llama 4 Maverick: MoE on every second layer (128 experts + a shared one of 8192), dense
    # MLP 16384 between; 400.71 B computed (text; this config copy omits vision_config).
    row("Llama-4-Maverick-17B-128E", "Llama4ForConditionalGeneration", 48, 5120, 16384, 40, 8,
       128, 202048, 1048576, 400.71, ["llama-4-maverick", "llama-4-maverick-17b-128e-instruct"],
       num_experts=128, moe_intermediate_size=8192, num_experts_per_token=1,
       num_shared_experts=1, shared_expert_intermediate_size=8192, dense_layers=24),
    # Yi: the Llama architecture with its own shape.
    row("Yi-34B", L, 60, 7168, 20480, 56, 8, 128, 64000, 4096, None),
    # Llama 4 Scout: every layer MoE (16 experts, top-1, plus one shared expert of 8192); the
    # count is the text model's, computed (this config copy omits vision_config).
    row("Llama-4-Scout-17B-16E", "Llama4ForConditionalGeneration", 48, 5120, 8192, 40, 8, 128,
       202048, 10485760, 107.77, ["llama-4-scout", "llama-4-scout-17b-16e-instruct"],
       num_experts=16, moe_intermediate_size=8192, num_experts_per_token=1,
       num_shared_experts=1, shared_expert_intermediate_size=8192),
)
# fmt: on
