"""The built-in model shapes (data for headroom.doctor.model_table), each read from the model's
public config.json; sources in docs/model_shapes_sources.md. The rows live in one module a
family (model_shapes_<family>.py), written as headroom.doctor.model_rows describes.
Multimodal rows size the language model (text_config) and add the vision tower's parameters
(`vision=`, billions, computed from vision_config) to the count: vLLM loads both.
"""

from __future__ import annotations

from headroom.doctor.model_rows import CHECKPOINT_QUANT, COMPUTED_PARAMS, COUNT_ARGS, shape_params
from headroom.doctor.model_shapes_gemma_phi import GEMMA_PHI
from headroom.doctor.model_shapes_llama import LLAMA
from headroom.doctor.model_shapes_mistral import MISTRAL
from headroom.doctor.model_shapes_moe import MOE
from headroom.doctor.model_shapes_others import OTHERS
from headroom.doctor.model_shapes_qwen import QWEN
from headroom.doctor.model_shapes_qwen_next import QWEN_NEXT

ALL = LLAMA + QWEN + QWEN_NEXT + GEMMA_PHI + MISTRAL + MOE + OTHERS

__all__ = ["ALL", "CHECKPOINT_QUANT", "COMPUTED_PARAMS", "COUNT_ARGS", "shape_params"]
