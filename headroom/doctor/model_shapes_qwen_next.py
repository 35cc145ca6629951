"""Built-in model shapes: Qwen3-Next, Qwen3.5 and Qwen3.6 (hybrid Gated DeltaNet / gated
attention: three linear-attention layers to every full-attention one, which alone caches K/V
per token: `kv_layers`), and the Qwen3-VL sizes beyond 8B/32B/30B-A3B.

Each row is read from the model's public config.json; where each number came from:
docs/model_shapes_sources.md. The row format: headroom.doctor.model_rows. The counts are
computed (linear-attention layers counted as such; the one MTP layer, loaded only for
speculative decoding, left out); vision towers computed from vision_config.
"""

from __future__ import annotations

from headroom.doctor.model_rows import TIED, row

_Q35, _Q35M = "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"
_Q3VL, _Q3VLM = "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration"
# Gated DeltaNet (key heads, key dim, value heads, value dim, conv kernel), and the gated
# attention's doubled q projection.
_DELTA_48 = {"linear": (16, 128, 48, 128, 4), "attn_gate": True}
_DELTA_32 = {"linear": (16, 128, 32, 128, 4), "attn_gate": True}
_DELTA_64 = {"linear": (16, 128, 64, 128, 4), "attn_gate": True}
# Qwen3.5's vision tower (27 blocks of 1152, MLP 4304, patch 16, a merger into the text
# width, no deepstack mergers): 0.45-0.46 B computed.

# fmt: off
QWEN_NEXT = (
    # Qwen3.6 27B / 35B-A3B: the Qwen3.5 shapes (nvidia's NVFP4 copies of their configs).
    row("Qwen3.5-27B", _Q35, 64, 5120, 17408, 24, 4, 256, 248320, 262144, None, ["qwen3.6-27b"],
       kv_layers=16, vision=0.46, **_DELTA_48),
    row("Qwen3.5-9B", _Q35, 32, 4096, 12288, 16, 4, 256, 248320, 262144, None, kv_layers=8,
       vision=0.46, **_DELTA_32),
    row("Qwen3.5-35B-A3B", _Q35M, 40, 2048, 512, 16, 2, 256, 248320, 262144, None,
       ["qwen3.6-35b-a3b"], kv_layers=10, vision=0.45, num_experts=256, moe_intermediate_size=512,
       num_experts_per_token=8, num_shared_experts=1, shared_expert_intermediate_size=512,
       **_DELTA_32),
    row("Qwen3.5-122B-A10B", _Q35M, 48, 3072, 1024, 32, 2, 256, 248320, 262144, None,
       kv_layers=12, vision=0.45, num_experts=256, moe_intermediate_size=1024,
       num_experts_per_token=8, num_shared_experts=1, shared_expert_intermediate_size=1024,
       **_DELTA_64),
    row("Qwen3.5-397B-A17B", _Q35M, 60, 4096, 1024, 32, 2, 256, 248320, 262144, None,
       kv_layers=15, vision=0.46, num_experts=512, moe_intermediate_size=1024,
       num_experts_per_token=10, num_shared_experts=1, shared_expert_intermediate_size=1024,
       **_DELTA_64),
    row("Qwen3-Next-80B-A3B", "Qwen3NextForCausalLM", 48, 2048, 5120, 16, 2, 256, 151936, 262144,
       None, kv_layers=12, num_experts=512, moe_intermediate_size=512, num_experts_per_token=10,
       num_shared_experts=1, shared_expert_intermediate_size=512, **_DELTA_32),
    # Qwen3-VL 2B / 4B: tied, vision tower 24 blocks of 1024 (MLP 4096) with 3 deepstack
    # mergers, 0.41 / 0.42 B computed; 235B-A22B: the 27 x 1152 tower, 0.58 B.
    row("Qwen3-VL-2B", _Q3VL, 28, 2048, 6144, 16, 8, 128, 151936, 262144, None, **TIED,
       vision=0.41),
    row("Qwen3-VL-4B", _Q3VL, 36, 2560, 9728, 32, 8, 128, 151936, 262144, None, **TIED,
       vision=0.42),
    row("Qwen3-VL-235B-A22B", _Q3VLM, 94, 4096, 12288, 64, 4, 128, 151936, 262144, None,
       vision=0.58, num_experts=128, moe_intermediate_size=1536, num_experts_per_token=8),
)
# fmt: on
