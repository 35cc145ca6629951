"""The model and the GPUs a person's words name, as the memory model's inputs.

When the log is only words ("vllm not support Yi-34B-Chat", "Llama-3.2-11B-Vision gives OOM
error on 96GB H100", "cannot load llama 3.2 3b on a 16gb gpu") and neither the command line
nor --gpus says what runs where, the words are the only description of the setup. This module
turns probes.symptom_setup's candidates into what the rules size with: a ModelShape from the
built-in table (model_table.find_model) and a GpuSpec (gpu_spec.parse_gpu_spec).

Conservative: a model only when every candidate the table knows is the same model (a title
comparing two models names neither); a GPU only when one kind or one size is named, and its
count only from the words ("2x4090", "8卡", "8*a100 40g"), else the command line's TP x PP
(vLLM runs on that many), else one for a desktop card or one said ("a 3060", "单卡"); a
datacenter GPU named without a count ("OOM on A100") gives no spec: such servers hold 4 or 8. Context.model_read and
Context.gpu consult these only after every other input (the command, the log, --gpus, NVML).
"""

from __future__ import annotations

import re

from headroom.doctor.gpu_spec import GpuSpec, GpuSpecError, parse_gpu_spec
from headroom.doctor.gpu_table import find_gpu
from headroom.doctor.model_table import find_model
from headroom.probes.model import ModelShape
from headroom.probes.symptom_facts import WordFacts

__all__ = ["gpu_from_words", "model_from_words", "setup_notes"]

# "qwen-1.5-72B" is the table's "Qwen1.5-72B", "glm4-9b" its "glm-4-9b": the family word
# and its version written apart or together.
_FAMILY_DASH_VERSION = re.compile(r"^([A-Za-z]+)[-_ ](\d)")
_FAMILY_VERSION = re.compile(r"^([A-Za-z]+)(\d)")
_MAX_GPUS = 1024
ASSUMED_NODE = 8  # GPUs of a datacenter node, when the words name the GPU but not the count
# A parameter count in a name ("72B", "1.5b", "8x7B" counts its "7"): two of them, two models.
_SIZE = re.compile(r"(?<![A-Za-z])(\d+(?:\.\d+)?)[bB](?![A-Za-z])")


def _variants(name: str) -> list[str]:
    last = name.rstrip("/").split("/")[-1]
    out = [name, last]
    out.append(_FAMILY_DASH_VERSION.sub(r"\1\2", last))
    out.append(_FAMILY_VERSION.sub(r"\1-\2", last))
    return list(dict.fromkeys(out))


def _identity(shape: ModelShape) -> tuple:
    """What makes two table rows the same model (the name differs by decoration only)."""
    return (
        shape.architecture,
        shape.num_layers,
        shape.hidden_size,
        shape.num_attention_heads,
        shape.num_kv_heads,
        shape.vocab_size,
        shape.quantization,
    )


def _sizes(names) -> set[str]:
    return {m.group(1) for n in names for m in _SIZE.finditer(n)}


def model_from_words(words: WordFacts | None) -> ModelShape | None:
    """The one model the words name that the built-in table knows, else None (also when
    the names carry two different sizes: "Qwen-QwQ-32b ... qwen2.5-vl-7b" names two models,
    whether the table knows both or not)."""
    if words is None or not words.model_names:
        return None
    if len(_sizes(words.model_names)) > 1:
        return None
    found: dict[tuple, ModelShape] = {}
    for name in words.model_names:
        for variant in _variants(name):
            try:
                shape = find_model(variant)
            except (ValueError, TypeError):
                shape = None
            if shape is not None:
                found.setdefault(_identity(shape), shape)
                break
    return next(iter(found.values())) if len(found) == 1 else None


# "a 3060", "an A100", "my 4090", "one H100": one GPU said with an article.
_ONE_NAMED = re.compile(r"\b(?:a|an|one|my|single)\s+(?:NVIDIA\s+)?(?:Tesla\s+|GeForce\s+)?[A-Z]*\d",
                        re.IGNORECASE | re.ASCII)  # fmt: skip


def _count(words: WordFacts, tp: int, pp: int, datacenter: bool) -> int | None:
    if words.gpu_counts:
        count = max(words.gpu_counts)
        return count if 0 < count <= _MAX_GPUS else None
    if tp * pp > 1:
        return tp * pp  # vLLM ran on that many: the machine has at least those
    if words.several_gpus:
        return None  # "multi-gpu" without a count
    if datacenter and not (words.one_gpu_in_use or _ONE_NAMED.search(words.text)):
        # "OOM on A100": such servers hold several; a full node of 8 is assumed (as rules_oom
        # does for an OOM message of unknown count) and said (setup_notes)
        return ASSUMED_NODE
    return 1  # a desktop card (one to a machine, mostly), or one said


def gpu_from_words(words: WordFacts | None, tp: int = 1, pp: int = 1) -> GpuSpec | None:
    """The GPUs the words describe (see the module doc), else None."""
    if words is None or not (words.gpu_names or words.gpu_memory_gib):
        return None
    kinds = {g.name for g in (find_gpu(n) for n in words.gpu_names) if g is not None}
    if len(kinds) > 1:
        return None  # two kinds named: which one failed is not said
    name = next(iter(kinds)) if kinds else "GPU"
    known = find_gpu(name) if kinds else None
    datacenter = bool(known is not None and known.datacenter)
    count = _count(words, max(int(tp or 1), 1), max(int(pp or 1), 1), datacenter)
    if count is None:
        return None
    memory = words.gpu_memory_gib
    if (
        known is not None
        and memory is not None
        and not (0.3 * known.memory_gib <= memory <= 1.25 * known.memory_gib)
    ):
        memory = None  # "4xL4 (96GB VRAM)": a total of the GPUs, not one GPU's memory
    if name == "GPU" and memory is None:
        return None
    spec = f"{count}x{name}" + (f":{memory:g}" if memory is not None else "")
    try:
        return parse_gpu_spec(spec)
    except GpuSpecError:
        return None


def setup_notes(ctx) -> list[str]:
    """What the doctor took from the words instead of the inputs, for `lacking`: the model,
    the GPUs, and a GPU count it assumed."""
    words = getattr(ctx, "words", None)
    if words is None or not words.names_setup:
        return []
    out = []
    inputs = ctx.inputs
    cmd = inputs.command
    named = (getattr(cmd, "model", None) if cmd is not None else None) or getattr(
        ctx.facts, "model", None
    )
    shape = ctx.model_read
    if inputs.model is None and not named and shape is not None:
        out.append(f"model read from the words: {shape.name} (the built-in table's shape)")
    spec_given = inputs.gpu_spec or inputs.gpus or inputs.gpu_count
    if not spec_given and ctx.gpu is not None:
        line = f"GPUs read from the words: {ctx.gpu.describe()}"
        if (
            not words.gpu_counts
            and ctx.knobs.tp * ctx.knobs.pp <= 1
            and ctx.gpu.count == ASSUMED_NODE
        ):
            line += f" (the count is not said: a node of {ASSUMED_NODE} is assumed; --gpus says it)"
        out.append(line)
    return out
