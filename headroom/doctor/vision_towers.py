"""Vision encoders whose attention heads vLLM splits over the tensor-parallel ranks.

vLLM checks only the language model's heads against TP before it builds the model
(`verify_with_parallel_config`, config.py in every release read, 0.2.7-0.25.1). A vision
encoder's heads are split later, by `divide()` in the encoder's attention, whose assertion
carries no name: "AssertionError: 12 is not divisible by 8". Which encoders vLLM splits, and
from which release it runs them unsplit when TP does not divide their heads, differs by
encoder; this table holds what the releases' own model files do (vllm/model_executor/models/,
read in the wheels under /tmp/kvsrc and /tmp/pl: 0.5.4-0.5.5, 0.6.0, 0.6.3, 0.6.6.post1,
0.7.3, 0.8.5, 0.9.1, 0.10.1.1, 0.10.2, 0.12.0, 0.16.0, 0.20.0, 0.25.1):

- InternViT-6B (intern_vit.py; 25 heads, vision_config.num_attention_heads of InternVL-Chat
  V1.2/V1.5, InternVL2-26B/40B/76B, InternVL2.5-26B/38B/78B, InternVL3-38B/78B): 0.5.5 and
  before run its attention unsplit (nn.Linear qkv over all heads); 0.6.0 splits it only when TP
  divides the heads and else falls back to InternSdpaAttention (`_init_attn`: "fallback to
  sdpa attention if tp unavailable"), 0.12.0+ to data parallel. No release splits 25 heads
  over a TP that does not divide them: the assertion came from main-branch builds between the
  two (vllm#8097, fixed by #8061 "automatically disables TP in this case"). Not a setting.
- GLM-4.1V / GLM-4.5V (glm4_1v.py; 12 heads, vision_config.num_heads): split by
  `dist_utils.divide(num_heads, tp_size)` with no fallback in every release that has the file
  (0.10.1.1-0.25.1); `--mm-encoder-tp-mode data` (0.10.2+, `supports_encoder_tp_data`) runs
  the encoder whole on every GPU instead.
- Qwen2-VL / Qwen2.5-VL / Qwen3-VL (qwen2_vl.py, qwen2_5_vl.py, qwen3_vl.py; 16 heads), Llama 4
  (mllama4.py; 16), MiniCPM-V (minicpmv.py, SigLIP; 16), Kimi-VL (kimi_vl.py, MoonViT; 16):
  split without fallback; data mode from 0.10.2 (Qwen2.5-VL, Llama 4, MiniCPM-V, Kimi-VL) or
  from 0.12.0 (Qwen2-VL, Qwen3-VL: absent from 0.10.2's list; 0.11 not read).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from headroom.doctor.versions import parse_version


@dataclass(frozen=True)
class VisionTower:
    name: str  # as a user knows it
    heads: int  # vision_config's attention heads
    architectures: tuple[str, ...]  # config.json architectures that carry it
    names: str  # regex over the model id / path that carries it
    module: str  # vLLM's model file (a traceback frame names it)
    # The first release that runs the encoder unsplit when TP does not divide its heads
    # (None: vLLM always splits it); `data_mode_since`: --mm-encoder-tp-mode data.
    unsplit_since: tuple[int, int, int] | None = None
    data_mode_since: tuple[int, int, int] | None = None
    # Whether any release prints the assertion for this encoder (False: only builds between
    # two releases did, so the answer is an upgrade, not a setting).
    released: bool = True


TOWERS: tuple[VisionTower, ...] = (
    VisionTower(
        "InternViT-6B", 25, ("InternVLChatModel",),
        r"internvl(?:[-_ ]?chat[-_ ]?v1[-_.]?[25]|2[-_ ]?(?:26|40|76|llama3[-_ ]?76)b|"
        r"2[._]5[-_ ]?(?:26|38|78)b|3[-_ ]?(?:38|78)b)", "intern_vit",
        unsplit_since=(0, 6, 0), data_mode_since=(0, 12, 0), released=False,
    ),
    VisionTower(
        "the GLM-4.1V/4.5V vision encoder", 12,
        ("Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration"),
        r"glm-?4(?:\.[156])?v", "glm4_1v", data_mode_since=(0, 10, 2),
    ),
    VisionTower(
        "the Qwen2.5-VL vision encoder", 16, ("Qwen2_5_VLForConditionalGeneration",),
        r"qwen2[._]5-?vl", "qwen2_5_vl", data_mode_since=(0, 10, 2),
    ),
    VisionTower(
        "the Qwen2-VL vision encoder", 16, ("Qwen2VLForConditionalGeneration",),
        r"qwen2-?vl", "qwen2_vl", data_mode_since=(0, 12, 0),
    ),
    VisionTower(
        "the Qwen3-VL vision encoder", 16,
        ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration"),
        r"qwen3-?vl", "qwen3_vl", data_mode_since=(0, 12, 0),
    ),
    VisionTower(
        "the Llama 4 vision encoder", 16, ("Llama4ForConditionalGeneration",),
        r"llama-?4", "mllama4", data_mode_since=(0, 10, 2),
    ),
    VisionTower(
        "MiniCPM-V's SigLIP encoder", 16, ("MiniCPMV",), r"minicpm-?v", "minicpmv",
        data_mode_since=(0, 10, 2),
    ),
    VisionTower(
        "Kimi-VL's MoonViT encoder", 16, ("KimiVLForConditionalGeneration",), r"kimi-?vl",
        "kimi_vl", data_mode_since=(0, 10, 2),
    ),
)  # fmt: skip


def tower_for(
    heads: int,
    *,
    model_name: str | None,
    architecture: str | None,
    frames: str = "",
    guess: bool = True,
) -> VisionTower | None:
    """The vision encoder a divide() assertion over `heads` comes from: the model's
    architecture or name must carry it, or a traceback frame name its module. With nothing
    known of the model, only InternViT-6B's 25 heads name it: no language model vLLM serves
    has 25 KV heads, and 25 attention heads would have failed the heads check first (`guess`
    False: only a named encoder)."""
    name = (model_name or "").lower()
    for tower in TOWERS:
        if tower.heads != heads:
            continue
        if architecture in tower.architectures or re.search(tower.names, name):
            return tower
        if re.search(rf"models[/\\]{tower.module}\.py", frames):
            return tower
    if guess and heads == 25 and not name and architecture is None:
        return TOWERS[0]
    return None


def data_mode_available(tower: VisionTower, version: str | None) -> bool:
    """Whether --mm-encoder-tp-mode data runs this encoder whole in that release (unknown
    release: the newest, which has it)."""
    if tower.data_mode_since is None:
        return False
    found = parse_version(version)
    return found is None or found >= tower.data_mode_since
