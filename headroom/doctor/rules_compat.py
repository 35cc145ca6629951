"""Start-up refusals that one engine argument answers: a dtype or fp8 format the GPU cannot
run, a quantization method below the GPU's capability, more sequences than a hybrid model's
state blocks; RULES also runs the refusals about lengths (prompts longer than the
scheduler's limit and the like), which live in rules_lengths.py.

Each rule reads the log reader's event of the catalog's kind (headroom/probes/vllm_catalog)
and its fields. The patterns below stay for what the reader cannot give as one event: a text
the catalog has no entry for (a quantization dtype, compressed-tensors' scheme check, Mamba
blocks, multimodal placeholders) and a message wrapped over lines by a terminal or a paste.
Their groups carry the catalog's field names, so both paths give the rule the same numbers.
Every pattern is the text vLLM prints (the source file and the public threads it was read
from are named beside it; tests/fixtures/incidents has the threads).
"""

from __future__ import annotations

import re

from headroom.doctor.findings import Action, Finding
from headroom.doctor.refusal_match import catalog_event, first_match
from headroom.doctor.rules_lengths import (
    batched_tokens_below_max_model_len,
    context_length_exceeded,
    max_model_len_above_derived,
    multimodal_item_above_batch,
    prompt_too_long,
)

# vllm/worker/worker.py `_check_if_gpu_supports_dtype` (V0, 0.1-0.10; later in
# vllm/platforms/cuda.py): "Bfloat16 is only supported on GPUs with compute capability of at
# least 8.0. Your Tesla T4 GPU has compute capability 7.5." (vllm#946, vllm#1157, vllm#1400).
_BF16_CAPABILITY = re.compile(
    r"Bfloat16 is only supported on GPUs with compute capability of at least (?P<need>[\d.]+)\."
    r"(?: Your (?P<gpu>.+?) GPU has compute capability (?P<capability>\d+(?:\.\d+)?))?"
)
# vLLM's quantization dtype check (0.2-0.5: model_loader; later config.py):
# "torch.bfloat16 is not supported for quantization method awq. Supported dtypes:
# [torch.float16]" (vllm#1823, vllm#1941).
_QUANT_DTYPE = re.compile(
    r"(?:torch\.)?(?P<dtype>\w+) is not supported for quantization method (?P<method>\w+)\."
    r"\s*Supported dtypes: \[(?P<supported>[^\]]*)\]"
)
# Triton's fp8 e4m3 ("fp8e4nv") on GPUs before sm_89, raised by vLLM's fp8 KV-cache kernels:
# "type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15',
# 'fp8e5')" and (older Triton) "fp8e4nv data type is not supported on CUDA arch < 89"
# (vllm#7714, vllm#26431, 1CatAI/1Cat-vLLM#27).
_FP8_E4M3_ARCH = re.compile(
    r"type fp8e4nv not supported in this architecture|fp8e4nv data type is not supported on CUDA arch"
)
# vllm/model_executor/layers/quantization (0.4+): "The quantization method fp8 is not supported
# for the current GPU. Minimum capability: 90. Current capability: 86." (vllm#4327).
# compressed-tensors' `_check_scheme_supported` (0.6+) says the same of a scheme, as a
# RuntimeError whose arguments print as a tuple: "('Quantization scheme is not supported for ',
# 'the current GPU. Min capability: 75. ', 'Current capability: 70.')" (vllm#14040).
_QUANT_CAPABILITY = re.compile(
    r"(?:The quantization method (?P<method>\S+)|Quantization scheme) is not supported for"
    r"[ ',]*the current GPU\. (?:Minimum|Min|Required) capability: (?P<min_capability>\d+)\.[ ',]*"
    r"Current capability: (?P<capability>\d+)"
)
# vllm/config/compilation.py (hybrid Mamba/linear-attention models, 0.17+): "max_num_seqs
# (1024) exceeds available Mamba cache blocks (856). Each decode sequence requires one Mamba
# cache block, ..." (vllm#49064, vllm-project/recipes#551, kaito-project/kaito#2319).
_MAMBA_BLOCKS = re.compile(
    r"(?:max_num_seqs \((?P<seqs>\d+)\) )?exceeds available Mamba cache blocks \((?P<blocks>\d+)\)"
)


# GPUs before Ampere (compute capability < 8.0) have no bfloat16: float32 is their other
# choice when float16 is refused.
_PRE_AMPERE = re.compile(
    r"V100|\bT4\b|P100|P40|\bP4\b|K80|M60|RTX ?20\d\d|GTX|Quadro RTX|TITAN (?:V|RTX|Xp?)\b", re.I
)


def _float16_required(ctx) -> list[Finding]:
    """compressed-tensors' MoE kernels of 0.7.3-0.8.5 assert float16 ("float16 is required for
    MoE compressed models. Set dtype=torch.float16", vllm#17579): the fix is vLLM's own."""
    found = catalog_event(ctx, "dtype_unsupported", "moe_compressed_float16")
    if found is None:
        return []
    why = "compressed-tensors' MoE kernels of this release take float16 only"
    act = Action("dtype", "set", "float16", why, "fp16 range: rare overflow on bf16-trained models")
    title = "The model's MoE kernels need float16: use it"
    return [Finding("dtype-unsupported", None, "error", title, (found[1][:400],), (act,))]


def _float16_refused(ctx) -> list[Finding]:
    """vLLM 0.9.2+ refuses float16 for models it found unstable in it (gemma2/3, glm4,
    plamo2...: "Numerical instability. Please use bfloat16 or float32 instead.")."""
    found = catalog_event(ctx, "dtype_unsupported", "float16_unsupported_model")
    if found is None:
        return []
    fields, line = found
    name = getattr(ctx.gpu, "name", None) or ""
    no_bf16 = bool(_PRE_AMPERE.search(name)) or any(
        e.signature == "bf16_unsupported" for e in ctx.of("dtype_unsupported")
    )
    value = "float32" if no_bf16 else "bfloat16"
    model = fields.get("model_type") or "this model"
    why = f"vLLM refuses float16 for {model}: its activations overflow in fp16"
    cost = (
        "twice the weight memory of bf16/fp16 (this GPU has no bfloat16)"
        if no_bf16
        else "needs a GPU with bfloat16 (compute capability 8.0+; else float32)"
    )
    title = f"The model cannot run in float16: use {value}"
    act = Action("dtype", "set", value, why, cost)
    return [Finding("dtype-unsupported", None, "error", title, (line[:400],), (act,))]


def dtype_unsupported(ctx) -> list[Finding]:
    refused = _float16_refused(ctx) or _float16_required(ctx)
    if refused:
        return refused
    found = (
        catalog_event(ctx, "dtype_unsupported", "bf16_unsupported")
        or first_match(ctx, _BF16_CAPABILITY)
        or first_match(ctx, _QUANT_DTYPE)
    )
    if found is None:
        return []
    fields, line = found
    value, cost = "half", "fp16 range: rare overflow on bf16-trained models"
    if fields.get("pattern") is _QUANT_DTYPE:
        supported = fields["supported"].lower()
        why = f"{fields['method']} kernels take {fields['supported']} only"
        if "float16" not in supported.replace("bfloat16", "") and "half" not in supported:
            # "torch.float16 is not supported for quantization method mxfp4. Supported
            # dtypes: [torch.bfloat16]": these kernels want bf16, not fp16.
            value, cost = "bfloat16", "needs a GPU with bf16 (compute capability 8.0+)"
    else:
        gpu = fields.get("gpu") or "this GPU"
        # the catalog's text always says "at least 8.0"; a raw match reads it
        why = f"bfloat16 needs compute capability {fields.get('need', '8.0')}; {gpu} has less"
    return [
        Finding(
            "dtype-unsupported",
            None,
            "error",
            f"The model's dtype cannot run here: use {value}",
            (line[:400],),
            (Action("dtype", "set", value, why, cost),),
        )
    ]


def fp8_kv_unsupported(ctx) -> list[Finding]:
    found = catalog_event(ctx, "kv_cache_dtype_unsupported", "triton_fp8e4nv_arch") or first_match(
        ctx, _FP8_E4M3_ARCH
    )
    if found is None:
        return []
    _, line = found
    kv = (ctx.knobs.kv_cache_dtype or "").lower()
    acts: tuple[Action, ...] = ()
    if ctx.inputs.command is None or kv.startswith("fp8") and kv != "fp8_e5m2":
        acts = (
            Action(
                "kv_cache_dtype",
                "set",
                "fp8_e5m2",
                "this GPU has no fp8 e4m3 (sm_89+); e5m2 needs no hardware fp8 and no scales",
                "e5m2 keeps fewer mantissa bits than e4m3: check output quality",
            ),
        )
    return [
        Finding(
            "fp8-e4m3-unsupported",
            5,
            "error",
            "fp8 e4m3 is not available on this GPU",
            (line[:400],),
            acts,
        )
    ]


def quantization_unsupported(ctx) -> list[Finding]:
    found = catalog_event(
        ctx, "quantization_unsupported", needs=("min_capability", "capability")
    ) or first_match(ctx, _QUANT_CAPABILITY)
    if found is None:
        return []
    fields, line = found
    need, have = fields["min_capability"], fields["capability"]
    method = fields.get("method") or "this quantization scheme"
    why = (
        f"{method} needs compute capability {int(need) / 10:.1f}, this GPU has "
        f"{int(have) / 10:.1f}: a checkpoint in a method it runs (AWQ/GPTQ, or unquantized)"
    )
    return [
        Finding(
            "quantization-unsupported-gpu",
            1,
            "error",
            f"Quantization {method} is not supported on this GPU",
            (line[:400],),
            (Action("quantization", "set", None, why, "another checkpoint, or a newer GPU"),),
        )
    ]


def mamba_blocks_below_max_num_seqs(ctx) -> list[Finding]:
    found = first_match(ctx, _MAMBA_BLOCKS)
    if found is None:
        return []
    fields, line = found
    blocks = int(fields["blocks"])
    # A pasted line may have lost its start: the command line's max_num_seqs, else "more".
    seqs = fields.get("seqs") or ctx.knobs.max_num_seqs or "more"
    acts = (
        Action(
            "max_num_seqs",
            "lower",
            blocks,
            f"a hybrid model keeps one state block per running sequence: {blocks} fit, "
            f"{seqs} were asked for",
            "fewer sequences decoded at once",
        ),
    )
    evidence = (line[:400], f"max_num_seqs {seqs} > {blocks} Mamba cache blocks")
    return [
        Finding(
            "mamba-blocks-below-max-num-seqs",
            4,
            "error",
            "More sequences than the hybrid model's state blocks",
            evidence,
            acts,
        )
    ]


# One tuple in the order diagnose has always run them (the length rules live in
# rules_lengths.py).
RULES = (
    dtype_unsupported,
    context_length_exceeded,
    max_model_len_above_derived,
    batched_tokens_below_max_model_len,
    multimodal_item_above_batch,
    fp8_kv_unsupported,
    quantization_unsupported,
    mamba_blocks_below_max_num_seqs,
    prompt_too_long,
)
