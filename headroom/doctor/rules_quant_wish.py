"""A quantized version asked for in words, so the model runs on the GPUs at hand: step 1.

"FP16 version is impossible to run on local GPU, I hope there will be GPTQ and AWQ versions"
(QwenLM/Qwen3-VL#719: answered with a community AWQ checkpoint), "Would be nice to have AWQ
quantization, so we can run on vLLM with a lower end GPU" (rubra-ai/rubra#119: the maintainer
published an AWQ checkpoint, "Worked!"), "[Feature]: Support awq quantization on Window?"
(SystemPanic/vllm-windows#16: `--quantization awq_marlin`). The words (probes.symptom_quant_wish)
name the fix themselves: weights in 4 or 8 bits, a half or a quarter of bf16's, from a
quantized checkpoint (vLLM reads AWQ / GPTQ / compressed-tensors from its config) or
--quantization fp8 on the fly on a GPU that has FP8. That is step 1's knob for weights that
do not fit (oom_weights offers the same action when nothing sizes the model).

Silent when the model or the command is quantized already (candidates.is_quantized), beside
any error line (a failure's own rule answers), and when the words ask for no quantized
version. The action carries no value: which checkpoint or method depends on the model's
published checkpoints and the GPU.
"""

from __future__ import annotations

from headroom.doctor.candidates import is_quantized
from headroom.doctor.findings import Action, Finding
from headroom.probes.symptom_quant_wish import quantized_wanted

ID = "words-quantized-wanted"
_NEUTRAL_KINDS = frozenset({"version", "model", "non_default_args", "max_model_len"})


def quantized_version_wanted(ctx) -> list[Finding]:
    """The words ask for a quantized version (module doc)."""
    said = next((line.strip() for line in ctx.prose_lines if quantized_wanted(line)), None)
    if said is None:
        return []
    if any(e.kind not in _NEUTRAL_KINDS for e in ctx.events):
        return []
    if is_quantized(ctx.model_read, ctx.knobs):
        return []
    act = Action(
        "quantization",
        "set",
        None,
        "a quantized checkpoint (AWQ, GPTQ, FP8) holds the weights in a half or a quarter of "
        "bf16's memory; --quantization fp8 quantizes on the fly on a GPU with FP8",
        "some quality loss; a quantized checkpoint of this model must exist for AWQ/GPTQ",
        step=1,
    )
    evidence = (
        said[:400],
        "the words ask for a quantized version: weights that fit the GPUs at hand",
    )
    title = "A quantized checkpoint asked for: the weights in 4 or 8 bits"
    return [Finding(ID, 1, "warning", title, evidence, (act,))]


RULES = (quantized_version_wanted,)
