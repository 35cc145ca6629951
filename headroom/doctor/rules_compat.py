"""Start-up refusals that one engine argument answers: a dtype or fp8 format the GPU cannot
run, a quantization method below the GPU's capability, more sequences than a hybrid model's
state blocks, and prompts longer than the scheduler's limit.

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
# The scheduler (V0 vllm/core/scheduler.py, V1 vllm/v1/core/sched/scheduler.py): "Input
# prompt (%d tokens) is too long and exceeds limit of %d". V0's limit is max_model_len, or
# min(max_model_len, max_num_batched_tokens) without chunked prefill; V1 also caps it at the
# KV cache's capacity (vllm#525, vllm#765, vllm#13370, vllm#10440).
_PROMPT_TOO_LONG = re.compile(
    r"Input prompt \((?P<prompt_tokens>\d+) tokens\) is too long and exceeds limit of (?P<limit>\d+)"
)
# vllm/config.py SchedulerConfig (V0 0.2-0.10 `_verify_args`; V1 a pydantic ValidationError):
# "max_num_batched_tokens (8192) is smaller than max_model_len (131072). This effectively
# limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer
# sequences. Please increase max_num_batched_tokens or decrease max_model_len." Raised when
# chunked prefill is off (verl-project/verl#7632, vllm#28981).
_BATCHED_BELOW_LEN = re.compile(
    r"max_num_batched_tokens \((?P<max_num_batched_tokens>\d+)\) is smaller than max_model_len "
    r"\((?P<max_model_len>\d+)\)"
)
# Multimodal items that must fit one batch: "Chunked MM input disabled but
# max_tokens_per_mm_item (2496) is larger than max_num_batched_tokens (512)" (V1 scheduler
# config) and V0's merge of image embeddings cut by a small chunked-prefill budget: "Attempted
# to assign 7 x 256 = 1792 multimodal tokens to 506 placeholders" (vllm#7996).
_MM_ITEM_ABOVE_BATCH = re.compile(
    r"max_tokens_per_mm_item \((?P<mm_item_tokens>\d+)\) is larger than\s+max_num_batched_tokens "
    r"\((?P<max_num_batched_tokens>\d+)\)"
)
_MM_PLACEHOLDERS = re.compile(
    r"Attempted to assign (?:\d+ x \d+ = )?(?P<mm_item_tokens>\d+) multimodal tokens to (?P<slots>\d+) "
    r"placeholders"
)
# The OpenAI server's refusal of one request (vllm/entrypoints/openai/serving_engine.py, every
# release since 0.2): "This model's maximum context length is 1 tokens. However, you requested
# 28 tokens ...". Its limit is max_model_len.
_CONTEXT_LENGTH = re.compile(
    r"maximum context length is (?P<limit>\d+) tokens\. However, you requested "
    r"(?P<tokens>\d+) tokens"
)
# vllm/config.py _get_and_verify_max_len (0.2 onward): "User-specified max_model_len (8192) is
# greater than the derived max_model_len (max_position_embeddings=4096 or
# model_max_length=None in model's config.json)."
_ABOVE_DERIVED = re.compile(
    r"User-specified max_model_len \((?P<len>\d+)\) is greater than the derived "
    r"max_model_len(?: \((?P<key>\w+)=(?P<derived>[\d.]+))?"
)
# max_num_batched_tokens defaults that became prompt limits: 2560 (0.1.x), 2048 (chunked
# prefill's default when max_model_len > 32K, 0.4-0.7).
_BATCHED_DEFAULTS = (2560, 2048)


def _first(ctx, pattern: re.Pattern[str]) -> tuple[dict, str] | None:
    """The pattern's groups and the line, on the raw lines (one at a time, then joined)."""
    for line in ctx.raw_lines:
        match = pattern.search(line)
        if match:
            return _groups(match), line.strip()
    # A message wrapped over lines by a terminal or a pasted block: read the lines joined.
    joined = " ".join(line.strip() for line in ctx.raw_lines[-400:])
    match = pattern.search(joined)
    if match:
        return _groups(match), joined[max(match.start() - 40, 0) : match.end() + 40]
    return None


def _groups(match: re.Match[str]) -> dict:
    out: dict = {"pattern": match.re}
    for name, value in match.groupdict().items():
        if value is not None:
            out[name] = int(value) if value.isdigit() else value
    return out


def _event(ctx, kind: str, *signatures: str, needs: tuple[str, ...] = ()):
    """The fields and line of the first event of the catalog's `kind` (from `signatures`)
    that carries every field in `needs`."""
    for event in ctx.of(kind):
        if signatures and event.signature not in signatures:
            continue
        if all(event.fields.get(name) is not None for name in needs):
            return dict(event.fields), event.line.strip()
    return None


def dtype_unsupported(ctx) -> list[Finding]:
    found = (
        _event(ctx, "dtype_unsupported", "bf16_unsupported")
        or _first(ctx, _BF16_CAPABILITY)
        or _first(ctx, _QUANT_DTYPE)
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
    found = _event(ctx, "kv_cache_dtype_unsupported", "triton_fp8e4nv_arch") or _first(
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
    found = _event(
        ctx, "quantization_unsupported", needs=("min_capability", "capability")
    ) or _first(ctx, _QUANT_CAPABILITY)
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
    found = _first(ctx, _MAMBA_BLOCKS)
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


def prompt_too_long(ctx) -> list[Finding]:
    # only V0/V1's scheduler text: the other prompt_too_long texts are a client's request
    # (NOT_CONFIG in the catalog), answered without a knob
    found = _event(
        ctx, "prompt_too_long", "v0_prompt_exceeds_limit", needs=("prompt_tokens", "limit")
    ) or _first(ctx, _PROMPT_TOO_LONG)
    if found is None:
        return []
    fields, line = found
    tokens, limit = int(fields["prompt_tokens"]), int(fields["limit"])
    knobs = ctx.knobs
    max_len = knobs.max_model_len
    batched = knobs.max_num_batched_tokens
    raise_len = Action(
        "max_model_len",
        "raise",
        tokens,
        f"the limit is max_model_len ({limit}); the model may allow more",
        "more KV cache per request; not beyond the model's trained context",
    )
    raise_batched = Action(
        "max_num_batched_tokens",
        "raise",
        max(tokens, max_len or 0) or tokens,
        f"the scheduler's limit ({limit}) is max_num_batched_tokens, not the model's length",
        "a larger activation peak per step",
    )
    # Which knob is the limit: the one the command line sets to it; else a default
    # max_num_batched_tokens when max_model_len is known (or presumed) to be larger.
    if batched == limit or (max_len and max_len > limit and batched in (None, limit)):
        acts = (raise_batched, raise_len)
    elif max_len == limit:
        acts = (raise_len, raise_batched)
    elif limit in _BATCHED_DEFAULTS and limit == 2560:
        acts = (raise_batched, raise_len)
    else:
        acts = (raise_len, raise_batched)
    return [
        Finding(
            "prompt-too-long",
            4,
            "warning",
            f"Prompts of {tokens:,} tokens are dropped: the limit is {limit:,}",
            (line[:400],),
            acts,
        )
    ]


def context_length_exceeded(ctx) -> list[Finding]:
    """A request above max_model_len: a knob only when the command line set max_model_len to
    that limit (below what the model allows); else the model's own length, the client's to
    respect."""
    found = _first(ctx, _CONTEXT_LENGTH)
    if found is None:
        return []
    fields, line = found
    tokens, limit = int(fields["tokens"]), int(fields["limit"])
    if ctx.knobs.max_model_len != limit:
        return []
    act = Action(
        "max_model_len",
        "raise",
        max(tokens, 16),
        f"--max-model-len {limit} is the limit the request hit",
        "more KV cache per request; not beyond the model's trained context",
    )
    return [
        Finding(
            "context-length-exceeded",
            4,
            "warning",
            f"Requests of {tokens:,} tokens are refused: --max-model-len is {limit:,}",
            (line[:400],),
            (act,),
        )
    ]


def max_model_len_above_derived(ctx) -> list[Finding]:
    found = _first(ctx, _ABOVE_DERIVED)
    if found is None:
        return []
    fields, line = found
    text = " ".join(ctx.raw_lines[-400:])
    if "WARNING" in line or "extreme caution" in line or "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in text:
        # With VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (0.5.4+) vLLM only warns and starts: not a cause.
        return []
    asked = int(fields["len"])
    derived = fields.get("derived")
    value = int(float(derived)) if derived is not None and float(derived) < asked else None
    act = Action(
        "max_model_len",
        "lower",
        value,
        "the model's config allows no more "
        + (f"({fields.get('key')}={derived})" if derived is not None else "than it derives"),
        "requests longer than this are rejected",
    )
    return [
        Finding(
            "max-model-len-above-derived",
            4,
            "error",
            f"max_model_len {asked:,} is above the model's own length",
            (line[:400],),
            (act,),
        )
    ]


def batched_tokens_below_max_model_len(ctx) -> list[Finding]:
    needs = ("max_num_batched_tokens", "max_model_len")
    found = _event(
        ctx, "batched_tokens_too_small", "batched_tokens_below_max_len", needs=needs
    ) or _first(ctx, _BATCHED_BELOW_LEN)
    if found is None:
        return []
    fields, line = found
    batched, length = int(fields["max_num_batched_tokens"]), int(fields["max_model_len"])
    acts = (
        Action(
            "max_num_batched_tokens",
            "raise",
            length,
            f"without chunked prefill one step must hold a whole prompt of max_model_len "
            f"({length:,}); {batched:,} cannot",
            "a larger activation peak per step (profiled at start-up)",
        ),
        Action(
            "max_model_len",
            "lower",
            batched,
            f"or accept prompts of at most {batched:,} tokens",
            "longer requests are rejected",
        ),
    )
    return [
        Finding(
            "batched-tokens-below-max-model-len",
            4,
            "error",
            "max_num_batched_tokens is smaller than max_model_len",
            (line[:400],),
            acts,
        )
    ]


def multimodal_item_above_batch(ctx) -> list[Finding]:
    found = (
        _event(
            ctx,
            "batched_tokens_too_small",
            "mm_item_over_batched_tokens",
            needs=("mm_item_tokens",),
        )
        or _first(ctx, _MM_ITEM_ABOVE_BATCH)
        or _first(ctx, _MM_PLACEHOLDERS)
        # the message cut before its numbers (a paste's first line): the kind alone
        or _event(ctx, "batched_tokens_too_small", "mm_item_over_batched_tokens")
    )
    if found is None:
        return []
    fields, line = found
    batched = ctx.knobs.max_num_batched_tokens
    if fields.get("mm_item_tokens") is None:
        return _mm_item_without_numbers(batched, line)
    item = int(fields["mm_item_tokens"])
    value = max(item, batched or 0) if batched is None or item > batched else batched * 2
    value = -(-value // 256) * 256  # whole 256-token chunks
    return [
        Finding(
            "multimodal-item-above-batch",
            4,
            "error",
            "A multimodal item does not fit one scheduler step",
            (line[:400],),
            (
                Action(
                    "max_num_batched_tokens",
                    "raise",
                    value,
                    f"one image/video item needs {item:,} tokens in a single step",
                    "a larger activation peak per step",
                ),
            ),
        )
    ]


def _mm_item_without_numbers(batched: int | None, line: str) -> list[Finding]:
    """The item's size is unknown: double a known batch budget, else advice without a value."""
    value = -(-batched * 2 // 256) * 256 if batched else None
    return [
        Finding(
            "multimodal-item-above-batch",
            4,
            "error",
            "A multimodal item does not fit one scheduler step",
            (line[:400], "the message does not say the item's size here"),
            (
                Action(
                    "max_num_batched_tokens",
                    "raise",
                    value,
                    "one image/video item must fit a single step",
                    "a larger activation peak per step",
                ),
            ),
        )
    ]


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
