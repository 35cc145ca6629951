"""Start-up and request refusals about lengths that one engine argument answers: a prompt
longer than the scheduler's limit, a request above the server's maximum context length, a
max_model_len above what the model's config derives, max_num_batched_tokens below
max_model_len, and a multimodal item larger than one batch.

Split from rules_compat.py (which runs these rules in its RULES, in the same order); the
patterns below are the texts vLLM prints, with the source and public threads beside each.
"""

from __future__ import annotations

import re

from headroom.doctor.findings import Action, Finding
from headroom.doctor.refusal_match import catalog_event, first_match
from headroom.doctor.versions import has_chunked_prefill, parse_version

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
    r"placeholders",
    re.IGNORECASE,  # a title retypes the message in lower case as often as it copies it
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
# vllm/config/vllm.py VllmConfig (0.20.0, 0.25.1): a hybrid (Mamba) model with prefix caching
# keeps its state per block ("align" mode), its attention block size raised to the state's page
# (thousands of tokens), and "In Mamba cache align mode, block_size (2096) must be <=
# max_num_batched_tokens (2048)." (vllm#36734: the default 2048 below a 2096-token block).
# Align mode comes with prefix caching only (0.25.1 model_executor/models/config.py
# MambaModelConfig: "none" when prefix caching is disabled).
_MAMBA_ALIGN = re.compile(
    r"In Mamba cache align mode, block_size \((?P<block_size>\d+)\) must be <=\s*"
    r"max_num_batched_tokens \((?P<max_num_batched_tokens>\d+)\)"
)
# max_num_batched_tokens defaults that became prompt limits: 2560 (0.1.x), 2048 (chunked
# prefill's default when max_model_len > 32K, 0.4-0.7).
_BATCHED_DEFAULTS = (2560, 2048)


def prompt_too_long(ctx) -> list[Finding]:
    # only V0/V1's scheduler text: the other prompt_too_long texts are a client's request
    # (NOT_CONFIG in the catalog), answered without a knob
    found = catalog_event(
        ctx, "prompt_too_long", "v0_prompt_exceeds_limit", needs=("prompt_tokens", "limit")
    ) or first_match(ctx, _PROMPT_TOO_LONG)
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
    found = first_match(ctx, _CONTEXT_LENGTH)
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
    found = first_match(ctx, _ABOVE_DERIVED)
    if found is None:
        return []
    fields, line = found
    # With VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (0.5.4+) vLLM only warns ("<msg> <warning>") and
    # starts: not a cause. The error says the same caution after "To allow overriding this
    # maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1." (config.py 0.5.4-0.33.0).
    refused = "To allow overriding this maximum" in line
    text = " ".join(ctx.raw_lines[-400:]).replace(
        "set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1", ""
    )
    if not refused and ("WARNING" in line or "extreme caution" in line):
        return []
    if "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in text:
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
    found = catalog_event(
        ctx, "batched_tokens_too_small", "batched_tokens_below_max_len", needs=needs
    ) or first_match(ctx, _BATCHED_BELOW_LEN)
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
        *_chunked_instead(ctx),
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


def _chunked_instead(ctx) -> tuple[Action, ...]:
    """The check holds only with chunked prefill off (config.py SchedulerConfig._verify_args,
    0.5.4-0.7.3: `... and not self.chunked_prefill_enabled`): turning it on keeps both
    numbers. Not before 0.4.0, which has no such flag (versions.RELEASE_TABLE)."""
    version = parse_version(ctx.version)
    if version is not None and not has_chunked_prefill(version):
        return ()
    return (
        Action(
            "enable_chunked_prefill",
            "set",
            True,
            "the check holds only without chunked prefill: with it a prompt is split over steps",
            "prompts prefill in chunks: a little slower to the first token",
        ),
    )


def multimodal_item_above_batch(ctx) -> list[Finding]:
    found = (
        catalog_event(
            ctx,
            "batched_tokens_too_small",
            "mm_item_over_batched_tokens",
            needs=("mm_item_tokens",),
        )
        or first_match(ctx, _MM_ITEM_ABOVE_BATCH)
        or first_match(ctx, _MM_PLACEHOLDERS)
        # the message cut before its numbers (a paste's first line): the kind alone
        or catalog_event(ctx, "batched_tokens_too_small", "mm_item_over_batched_tokens")
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


def mamba_align_block_above_batch(ctx) -> list[Finding]:
    """A hybrid model's align-mode block (prefix caching) larger than one scheduler step:
    max_num_batched_tokens up to the block size (rounded up to 256), or prefix caching off
    (then the Mamba cache needs no aligned blocks)."""
    found = first_match(ctx, _MAMBA_ALIGN)
    if found is None:
        return []
    fields, line = found
    block, batched = int(fields["block_size"]), int(fields["max_num_batched_tokens"])
    value = -(-block // 256) * 256
    acts = (
        Action(
            "max_num_batched_tokens",
            "raise",
            value,
            f"a step must hold one whole {block:,}-token block of the Mamba state in align "
            f"mode; {batched:,} cannot",
            "a larger activation peak per step (profiled at start-up)",
        ),
        Action(
            "enable_prefix_caching",
            "set",
            False,
            "align mode is prefix caching's layout of the Mamba state: without it the "
            "block size no longer binds the step",
            "no prefix caching: repeated prompt prefixes are computed again",
        ),
    )
    return [
        Finding(
            "mamba-align-block-above-batch",
            4,
            "error",
            f"The hybrid model's {block:,}-token align-mode block is larger than "
            f"max_num_batched_tokens {batched:,}",
            (line[:400],),
            acts,
        )
    ]
