"""Is the model multimodal, or an encoder-decoder with an image/audio encoder?

Read in this order, the first that answers wins: the model config's architecture (vLLM's own
registry, multimodal_models.py) or its vision_config / is_encoder_decoder keys; the model's
name (command line, the log's "non-default args", a name written in the text); an engine arg
vLLM takes only for a multimodal model (--limit-mm-per-prompt, --mm-processor-kwargs); a
traceback frame in vLLM's model code (vllm/model_executor/models/<module>.py). These models size their
start-up profile by max_num_seqs (encoder inputs per dummy sequence, the encoder budget).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from headroom.doctor.multimodal_models import (
    ENCODER_DECODER_ARCHITECTURES,
    ENCODER_DECODER_MODULES,
    MULTIMODAL_ARCHITECTURES,
    MULTIMODAL_MODULES,
)

# Checkpoint names of vision/audio-language families (as published on the hub), lower case.
# "gemma-3" only in the sizes that carry a vision tower (the 1B is text-only).
_MULTIMODAL_NAME = re.compile(
    # a name starts a word ("provisioning" holds "ovis", "Qwen/Qwen2-VL" starts after "/")
    r"(?<![a-z])(?:llava|pixtral|internvl|intern-?s1|minicpm-?[vo]\b|minicpm-?[vo][-_]|qwen\d?(?:\.\d)?-?vl|"
    r"qwen\d?(?:\.\d)?-omni|qwen2?-audio|idefics|paligemma|phi-?3(?:\.5)?-vision|"
    r"phi-?4-multimodal|molmo|florence-?2|whisper|chameleon|fuyu|blip-?2|deepseek-vl|"
    r"glm-?4(?:\.\d)?v|cogvlm|llama-?3\.2-\d+b-vision|mllama|llama-?4-(?:scout|maverick)|"
    r"kimi-vl|ovis|h2ovl|nvlm|aya-vision|smolvlm|ultravox|voxtral|gemma-?3n?-(?:4|12|27)b|"
    r"(?:vlm|vl)(?![a-z]))|[-_]vision\b|-vision-",
    re.IGNORECASE,
)
_ENCODER_DECODER_NAME = re.compile(
    r"mllama|llama-?3\.2-\d+b-vision|whisper|florence-?2|donut", re.IGNORECASE
)
# A traceback frame in vLLM's model code names the model's module.
_MODEL_FRAME = re.compile(r"vllm/model_executor/models/(\w+)\.py")
# A word of text that may be a model name ("Llama-3.2-11B-Vision", "Qwen/Qwen2-VL-7B").
_NAME_TOKEN = re.compile(r"[\w./-]+")


@dataclass(frozen=True)
class ModelFamily:
    multimodal: bool
    encoder_decoder: bool
    name: str  # what was recognised: an architecture, a checkpoint name, a module
    how: str  # how it is known, in words (evidence)


def _of_name(name: str, how: str) -> ModelFamily | None:
    if not name or not _MULTIMODAL_NAME.search(name):
        return None
    enc_dec = bool(_ENCODER_DECODER_NAME.search(name))
    return ModelFamily(True, enc_dec, name, how)


def _of_config(shape) -> ModelFamily | None:
    arch = getattr(shape, "architecture", None) or ""
    name = getattr(shape, "name", None) or ""
    if arch in MULTIMODAL_ARCHITECTURES:
        enc_dec = arch in ENCODER_DECODER_ARCHITECTURES
        return ModelFamily(True, enc_dec, arch, f"the config's architecture {arch}")
    keys = tuple(getattr(shape, "modality_keys", None) or ())
    if any(key != "is_encoder_decoder" for key in keys):
        enc_dec = "is_encoder_decoder" in keys
        return ModelFamily(True, enc_dec, arch or name, f"the config has {keys[0]}")
    return _of_name(name, f"the model name {name}") if name else None


def _of_frames(lines: list[str]) -> ModelFamily | None:
    for line in lines:
        for module in _MODEL_FRAME.findall(line):
            if module in MULTIMODAL_MODULES:
                return ModelFamily(
                    True,
                    module in ENCODER_DECODER_MODULES,
                    module,
                    f"the traceback runs through vllm/model_executor/models/{module}.py",
                )
    return None


def _of_text(lines: list[str]) -> ModelFamily | None:
    for line in lines:
        for token in _NAME_TOKEN.findall(line[:2000]):
            found = _of_name(token, f"the text names {token}")
            if found is not None:
                return found
    return None


def model_family(ctx) -> ModelFamily | None:
    """The first source that says multimodal (see the module doc), else None (unknown or
    text-only: nothing here says a text model is one)."""
    shape = getattr(ctx, "model_read", None)
    if shape is not None:
        found = _of_config(shape)
        if found is not None:
            return found
    cmd = ctx.inputs.command
    name = getattr(cmd, "model", None) if cmd is not None else None
    name = name or getattr(ctx.facts, "model", None)
    if name:
        found = _of_name(str(name), f"the model name {name}")
        if found is not None:
            return found
    flagged = _of_multimodal_flags(ctx)
    if flagged is not None:
        return flagged
    profiled = _of_encoder_profile(ctx)
    if profiled is not None:
        return profiled
    lines = ctx.raw_lines[:5000]
    return _of_frames(lines) or _of_text(lines)


# Engine args vLLM accepts only for a multimodal model: "`limit_mm_per_prompt` is only
# supported for multimodal models." (0.6.3 config.py _init_multimodal_config; 0.9.2 also
# "`mm_processor_kwargs` is only supported for multimodal models."). A command line that sets
# one names a multimodal model, whatever its name says ("model/AgentCPM-GUI").
_MULTIMODAL_ONLY_ARGS = ("limit_mm_per_prompt", "mm_processor_kwargs")


def _of_multimodal_flags(ctx) -> ModelFamily | None:
    arg = getattr(ctx, "arg", None)
    if not callable(arg):
        return None
    for name in _MULTIMODAL_ONLY_ARGS:
        if arg(name):
            flag = "--" + name.replace("_", "-")
            return ModelFamily(True, False, flag,
                               f"the command line sets {flag}, which vLLM takes only for a "
                               "multimodal model")  # fmt: skip
    return None


def _of_encoder_profile(ctx) -> ModelFamily | None:
    """V1's "Encoder cache will be initialized with a budget of N tokens, and profiled with M
    image items" (gpu_model_runner.profile_run, 0.7.3-0.33.0) is printed only for a
    multimodal model (an encoder-decoder one has no encoder cache there)."""
    of = getattr(ctx, "of", None)
    events = of("encoder_profile") if callable(of) else []
    if not events:
        return None
    modality = events[0].fields.get("modality") or "multimodal"
    return ModelFamily(True, False, str(modality),
                       f"vLLM profiled its {modality} encoder: {events[0].line.strip()[:160]}")  # fmt: skip
