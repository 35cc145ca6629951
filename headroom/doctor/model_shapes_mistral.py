"""Built-in model shapes: Mistral 7B / Nemo / Small / Large, Ministral, Mixtral and their fine-tunes.

Each row is read from the model's public config.json; where each number came from:
docs/model_shapes_sources.md. The row format: headroom.doctor.model_rows.
"""

from __future__ import annotations

from headroom.doctor.model_rows import MS, MX, TIED, row

_M3 = "Mistral3ForConditionalGeneration"

# fmt: off
MISTRAL = (
    row("Mistral-7B", MS, 32, 4096, 14336, 32, 8, 128, 32768, 32768, 7.25,
       ["mistral-7b-v0.3", "mistral-7b-v0.1", "mistral-7b-v0.2", "mathstral-7b",
        "zephyr-7b-beta", "zephyr-7b-alpha", "openhermes-2-mistral-7b"]),
    # Mistral Small 3 (2501): text only, 32768 positions; 3.1 (2503) and 3.2 (2506) add a
    # Pixtral vision tower (24 layers of 1024, MLP 4096, and the patch merger: 0.44 B
    # computed) and 131072 positions.
    row("Mistral-Small-24B", MS, 40, 5120, 32768, 32, 8, 128, 131072, 32768, 23.57,
       ["mistral-small-24b-2501", "mistral-small-3-24b"]),
    row("Mistral-Small-3.1-24B", _M3, 40, 5120, 32768, 32, 8, 128, 131072, 131072, 23.57,
       ["mistral-small-3.2-24b", "mistral-small-3.1", "mistral-small-3.2"], vision=0.44),
    # Devstral Small 2 (24B): the Mistral Small 3 shape, yarn 48 x 8192 = 393216 positions,
    # published in FP8 (the vision tower and lm_head left 16-bit).
    row("Devstral-Small-2-24B", _M3, 40, 5120, 32768, 32, 8, 128, 131072, 393216, 23.57,
       vision=0.44, quant="fp8", bits=8),
    # Ministral 3 3B (2512): tied, yarn 16 x 16384 = 262144 positions, the same tower.
    row("Ministral-3-3B", _M3, 26, 3072, 9216, 32, 8, 128, 131072, 262144, None, **TIED,
       vision=0.42),
    row("Mixtral-8x7B", MX, 32, 4096, 14336, 32, 8, 128, 32000, 32768, 46.7,
       num_experts=8, moe_intermediate_size=14336, num_experts_per_token=2),
    row("Mixtral-8x22B", MX, 56, 6144, 16384, 48, 8, 128, 32768, 65536, 140.6, ["wizardlm-2-8x22b"],
       num_experts=8, moe_intermediate_size=16384, num_experts_per_token=2),
    # Ministral-8B-Instruct-2410: genz's transcription; 8.02 B computed fits the name.
    row("Ministral-8B", MS, 36, 4096, 12288, 32, 8, 128, 131072, 32768, None,
       ["ministral-8b-instruct-2410"]),
    row("Mistral-Large-123B", MS, 88, 12288, 28672, 96, 8, 128, 32768, 131072, None,
       ["mistral-large-instruct-2407", "mistral-large-instruct-2411", "mistral-large-2407"]),
    row("Mistral-Nemo-12B", MS, 40, 5120, 14336, 32, 8, 128, 131072, 1024000, None,
       ["mistral-nemo", "mistral-nemo-instruct-2407", "mistral-nemo-base-2407"]),
)
# fmt: on
