"""Built-in model shapes: Gemma 1/2/3 and Phi 3/3.5/4.

Each row is read from the model's public config.json; where each number came from:
docs/model_shapes_sources.md. The row format: headroom.doctor.model_rows.
"""

from __future__ import annotations

from headroom.doctor.model_rows import TIED, row

_G2 = "Gemma2ForCausalLM"
_P3 = "Phi3ForCausalLM"
_G = "GemmaForCausalLM"
_G3V = "Gemma3ForConditionalGeneration"
_G3 = "Gemma3ForCausalLM"
_G4 = "Gemma4ForConditionalGeneration"
# Gemma 3's SigLIP tower (vision_config: 27 layers, hidden 1152, MLP 4304, patch 14, image 896)
# plus its projection into the text width: computed, about 0.42 B on every size.
_G3_VISION = 0.42

# fmt: off
GEMMA_PHI = (
    row("Gemma-2B", _G, 18, 2048, 16384, 8, 1, 256, 256000, 8192, None, **TIED),
    row("Gemma-7B", _G, 28, 3072, 24576, 16, 16, 256, 256000, 8192, None, ["codegemma-7b"], **TIED),
    row("Gemma-2-2B", _G2, 26, 2304, 9216, 8, 4, 256, 256000, 8192, None, **TIED, sliding_window=4096),
    row("Gemma-2-9B", _G2, 42, 3584, 14336, 16, 8, 256, 256000, 8192, 9.24, **TIED),
    row("Gemma-2-27B", _G2, 46, 4608, 36864, 32, 16, 128, 256000, 8192, 27.23, **TIED),
    row("Gemma-3-1B", _G3, 26, 1152, 6912, 4, 1, 256, 262144, 32768, None, **TIED, sliding_window=512),
    row("Gemma-3-4B", _G3V, 34, 2560, 10240, 8, 4, 256, 262208, 131072, None, **TIED,
       sliding_window=1024, vision=_G3_VISION),
    row("Gemma-3-12B", _G3V, 48, 3840, 15360, 16, 8, 256, 262208, 131072, None, **TIED,
       sliding_window=1024, vision=_G3_VISION),
    row("Gemma-3-27B", _G3V, 62, 5376, 21504, 32, 16, 128, 262208, 131072, None, **TIED,
       sliding_window=1024, vision=_G3_VISION),
    # Phi-3-mini: the 128k and 3.5 releases say 131072 (longrope), the 4k one 4096 with a
    # 2047-token sliding window.
    row("Phi-3-mini", _P3, 32, 3072, 8192, 32, 32, 96, 32064, 131072, 3.82,
       ["phi-3-mini-128k", "phi-3.5-mini"]),
    row("Phi-3-mini-4k", _P3, 32, 3072, 8192, 32, 32, 96, 32064, 4096, 3.82, sliding_window=2047),
    # Phi-3.5-vision: the Phi-3.5-mini text model and a CLIP ViT-L/14 tower with its
    # projection (0.32 B computed); the card's 4.2B.
    row("Phi-3.5-vision", "Phi3VForCausalLM", 32, 3072, 8192, 32, 32, 96, 32064, 131072, 3.82,
       vision=0.32),
    # Phi-2: a GELU up/down MLP, biases, 2048 positions; the card's 2.7B.
    row("Phi-2", "PhiForCausalLM", 32, 2560, 10240, 32, 32, 80, 51200, 2048, None, gated=False),
    row("Phi-4", _P3, 40, 5120, 17920, 40, 10, 128, 100352, 16384, 14.66),
    # Phi-3-medium-4k and Phi-3.5-MoE: genz's transcriptions, checked against the cards' counts
    # (14 B; 41.9 B total with 6.6 B active: the shape gives 41.87 B and 6.63 B).
    row("Phi-3-medium-4k", _P3, 40, 5120, 17920, 40, 10, 128, 32064, 4096, None),
    row("Phi-3.5-MoE", "PhiMoEForCausalLM", 32, 4096, 6400, 32, 8, 128, 32064, 131072, 41.9,
       num_experts=16, moe_intermediate_size=6400, num_experts_per_token=2),
    row("Phi-4-reasoning", _P3, 40, 5120, 17920, 40, 10, 128, 100352, 32768, None,
       ["phi-4-reasoning-plus"]),
    row("Phi-4-mini", _P3, 32, 3072, 8192, 24, 8, 128, 200064, 131072, None, ["phi-4-mini-reasoning"],
       **TIED),
    # Gemma 4 (26B-A4B MoE; the 31B is held back, see the sources): five sliding-window layers (1024) to every full one;
    # the full layers have their own K/V heads (4 / 2) and head_dim 512 with K = V. The row
    # gives the sliding layers' heads (most layers; KV per token within 10 % of the per-layer
    # sum). Counts computed layer by layer (full layers' attention apart; 26B-A4B: a dense
    # MLP of 2112 beside 128 experts of 704 in every layer); SigLIP-style tower 0.42 B.
    row("Gemma-4-26B-A4B", _G4, 30, 2816, 2112, 16, 8, 256, 262144, 262144, 25.23, **TIED,
       sliding_window=1024, vision=_G3_VISION, num_experts=128, moe_intermediate_size=704,
       num_experts_per_token=8),
)
# fmt: on
