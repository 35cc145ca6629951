"""V0's start-up profile is one whole prompt: which knob that leaves for a KV shortage.

V0 without chunked prefill (every V0 release read, 0.2.7-0.7.3: vllm/config.py
SchedulerConfig) sets max_num_batched_tokens = max(max_model_len, 2048), and its profile run
(worker/model_runner.py profile_run) pushes that many tokens through the model at once: the
activation peak grows with max_model_len, and what is left of total x utilization after it
is the KV cache. So for a KV shortage on V0 (versions.RELEASE_TABLE 0.4.0 and 0.5.4 rows):
- a shorter max_model_len shrinks the peak AND the one request the KV cache must hold;
- --enable-chunked-prefill (0.4.0+) shrinks the profile to 512 tokens (2048 from 0.7.0)
  and keeps the context; V0 turns it on by itself only above 32768 tokens ("This is to avoid
  OOM errors in the initial memory profiling phase", arg_utils.py 0.5.4-0.7.3);
- CUDA graphs are captured after the KV cache is sized (worker.py warm_up_model): eager
  mode frees nothing for it.
With the model and the GPU the memory model sizes each; without them chunked prefill is
offered unsized, after the table's knobs.

When the release is not known and vLLM found no KV memory at all, the two engines' accounts
are compared: if the newest rules (V1: the profile runs max_num_batched_tokens) leave KV
memory where V0's whole-prompt profile leaves none, only V0 explains what the log says, and
its rules decide the knob.
"""

from __future__ import annotations

from dataclasses import replace

from headroom.doctor.findings import Action
from headroom.doctor.log_memory import activation_from_log
from headroom.doctor.memory_model import account
from headroom.doctor.model_bytes import GIB
from headroom.doctor.model_family import model_family
from headroom.doctor.versions import (
    batch_defaults,
    effective_version,
    format_version,
    has_chunked_prefill,
    has_null_block,
    is_v1,
    parse_version,
    profile_follows_length,
)

# The release V0 wording is reasoned with (context.py's V0 markers): the last release where
# V0 was the default engine.
V0_RULES = "0.7.3"
# The estimate's error (actions.MARGIN x a GPU is about 0.8 GiB; issue 13's measurements):
# an account within this of zero agrees with "no KV memory" either way.
_AGREES_GIB = 0.5
# Flags V0 did not combine chunked prefill with (the 0.5.4 default's own exclusions).
_EXCLUSIVE = ("enable_lora", "enable_prefix_caching", "speculative_model", "enable_prompt_adapter")
COST = (
    "prompts prefill in chunks: a little slower to the first token; V0's chunked prefill "
    "does not combine with LoRA, prefix caching or speculative decoding in every release"
)


def chunk_tokens(ctx, version: tuple[int, int, int]) -> int:
    """max_num_batched_tokens with chunked prefill on: V0's chunk (config.py: 512 in
    0.4.0-0.6.x, 2048 from 0.7.0); V1's default for the GPU (versions.batch_defaults; 2048
    when the GPU is not known)."""
    if not is_v1(version):
        return 2048 if version >= (0, 7, 0) else 512
    gpu = ctx.gpu
    if gpu is None:
        return 2048
    return batch_defaults(version, gpu.min_usable_gib, gpu.name, _length(ctx) or 2048)[0]


def whole_prompt_tokens(ctx, version_text: str | None = None) -> int | None:
    """The tokens the start-up profile ran at once when that was one whole prompt: V0
    without chunked prefill (max(max_model_len, 2048)), or chunked prefill turned off where
    the release honours it (V1 0.12+: max(max_model_len, the default); the newest rules when
    the release is not known), no --max-num-batched-tokens. None otherwise."""
    chunked = ctx.knobs.chunked_prefill
    version = parse_version(version_text or ctx.version)
    if version is None and chunked is False:
        version = effective_version(None)
    length = _length(ctx)
    if version is None or not length:
        return None
    batched_set = ctx.knobs.max_num_batched_tokens is not None
    if not profile_follows_length(version, length, batched_set, chunked):
        return None
    return max(length, chunk_tokens(ctx, version) if is_v1(version) else 2048)


def _length(ctx) -> int | None:
    """max_model_len as set, else as the log says it (the ledger: a refusal's "max seq len",
    the engine's config line), else the model's own limit."""
    ledger = getattr(ctx.facts, "ledger", None)
    shape = ctx.model_read
    return (
        ctx.knobs.max_model_len
        or getattr(ledger, "max_model_len", None)
        or getattr(shape, "max_position_embeddings", None)
        or None
    )


def chunked_prefill_action(ctx, why: str, version_text: str | None = None) -> Action | None:
    """--enable-chunked-prefill for a whole-prompt profile: V0 0.4.0+ (unless the command
    uses a feature V0 did not chunk with, or the model is one V0 kept off it), or V1 with
    chunked prefill turned off (vLLM's own default there)."""
    tokens = whole_prompt_tokens(ctx, version_text)
    version = parse_version(version_text or ctx.version) or effective_version(None)
    if tokens is None or not has_chunked_prefill(version):
        return None
    v1 = is_v1(version)
    if not v1 and (any(ctx.arg(flag) for flag in _EXCLUSIVE) or _not_chunked_in_v0(ctx)):
        return None
    chunk = chunk_tokens(ctx, version)
    how = "with chunked prefill turned off " if v1 else ""
    return Action(
        "enable_chunked_prefill",
        "set",
        True,
        f"{why}: {'V1' if v1 else 'V0'} {format_version(version)} {how}profiles one whole "
        f"{tokens:,}-token prompt; chunked prefill profiles {chunk:,} tokens and keeps "
        "max_model_len",
        COST,
    )


def _not_chunked_in_v0(ctx) -> bool:
    """Models V0 kept off chunked prefill: multimodal ones (off by default in V0, 0.7.3
    arg_utils.py: "For multimodal models, chunked prefill is disabled by default in V0") and
    MLA ones (0.7.3 config.py: "MLA is enabled; forcing chunked prefill and prefix caching
    to be disabled")."""
    family = model_family(ctx)
    if family is not None and family.multimodal:
        return True
    return bool(getattr(ctx.model_read, "kv_lora_rank", None))


def chunked_gain_gib(ctx, version_text: str | None = None) -> float | None:
    """KV GiB per GPU chunked prefill gives back: the memory model's activation peak at the
    whole prompt less at one chunk (the same account otherwise). None without model and GPU
    or where the profile is not one whole prompt."""
    tokens = whole_prompt_tokens(ctx, version_text)
    version = parse_version(version_text or ctx.version) or effective_version(None)
    if tokens is None or ctx.model is None or ctx.gpu is None:
        return None
    rules = format_version(version)
    try:
        whole = account(
            ctx.model, ctx.gpu, replace(ctx.knobs, max_num_batched_tokens=tokens), rules
        )
        chunked = account(ctx.model, ctx.gpu, replace(ctx.knobs, chunked_prefill=True,
                                                      max_num_batched_tokens=None), rules)  # fmt: skip
    except (ArithmeticError, AttributeError, TypeError, ValueError):
        return None
    return max(whole.activation_gib - chunked.activation_gib, 0.0)


def chunked_closes(
    ctx, kv_tokens: int, max_len: int, version_text: str | None = None
) -> tuple[bool, str | None]:
    """(whether the KV the log says there is, kv_tokens, plus what chunked prefill gives
    back holds one request of max_len, plus the null block where the release has one; the
    arithmetic in words, or None when it cannot be sized). The log's own numbers first: its
    profile's activation peak and its KV GiB over its KV tokens; else the memory model's."""
    if not kv_tokens:
        return False, None
    sized = _gain_from_log(ctx, kv_tokens, version_text) or _gain_from_model(ctx, version_text)
    if sized is None:
        return False, None
    gain, per_token, block, null_block, source = sized
    more = int(gain * GIB // (per_token * block)) * block
    need = max_len + (block if null_block else 0)
    closes = kv_tokens + more >= need
    line = (
        f"chunked prefill gives back about {gain:.2f} GiB of the profile's activation "
        f"({source}): {kv_tokens:,} + {more:,} KV tokens {'>=' if closes else '<'} one request "
        f"of {max_len:,}"
    )
    return closes, line


def chunked_closes_gib(ctx, gap_gib: float | None) -> tuple[bool, str | None]:
    """The same for a refusal in GiB (V1: "X GiB KV cache is needed, which is larger than the
    available KV cache memory (Y GiB)"): does what chunked prefill gives back cover X - Y?"""
    if not gap_gib or gap_gib <= 0:
        return False, None
    gain = _log_activation_gain(ctx)
    source = "the log's activation peak"
    if gain is None:
        gain, source = chunked_gain_gib(ctx), "estimate"
    if gain is None:
        return False, None
    closes = gain >= gap_gib
    line = (
        f"chunked prefill gives back about {gain:.2f} GiB of the profile's activation "
        f"({source}), {'more' if closes else 'less'} than the {gap_gib:.2f} GiB short"
    )
    return closes, line


def _log_activation_gain(ctx, version_text: str | None = None) -> float | None:
    tokens = whole_prompt_tokens(ctx, version_text)
    version = parse_version(version_text or ctx.version) or effective_version(None)
    activation = activation_from_log(ctx.events, getattr(ctx.facts, "ledger", None))
    if tokens is None or activation is None:
        return None
    return activation * (1.0 - chunk_tokens(ctx, version) / tokens) * (1.0 - _FIXED_SHARE)


# The part of the profile's peak that does not scale with its tokens (the sampler's logits
# for max_num_seqs sequences, a few hundred MiB at most): a tenth of the peak is kept for it.
_FIXED_SHARE = 0.1


def _gain_from_log(ctx, kv_tokens: int, version_text: str | None):
    """(GiB back, KV bytes per token, block, null block, source) from the log's numbers: the
    activation of a whole-prompt profile scales with its tokens, so a chunk of c keeps about
    c / tokens of it."""
    version = parse_version(version_text or ctx.version) or effective_version(None)
    ledger = getattr(ctx.facts, "ledger", None)
    gain = _log_activation_gain(ctx, version_text)
    kv_gib = getattr(ledger, "kv_gib", None)
    if gain is None or not kv_gib or kv_gib <= 0:
        return None
    block = getattr(ledger, "block_size", None) or max(ctx.knobs.block_size, 1)
    per_token = kv_gib * GIB / kv_tokens
    return gain, per_token, block, has_null_block(version), "the log's activation peak"


def _gain_from_model(ctx, version_text: str | None):
    gain = chunked_gain_gib(ctx, version_text)
    acc = ctx.account
    if gain is None or acc is None or not acc.kv_bytes_per_token:
        return None
    return gain, acc.kv_bytes_per_token, max(acc.block_size, 1), acc.null_block, "estimate"


# Only V1's engine prints from these files (vllm/v1/engine/core.py, v1/worker/gpu_worker.py and
# gpu_model_runner.py, v1/core/kv_cache_utils.py; 0.7.3-0.33.0) or names its engine process so.
_V1_MARKERS = ("EngineCore", "core.py:", "gpu_model_runner.py", "kv_cache_utils.py", "/v1/",
               "gpu_worker.py")  # fmt: skip


def _v1_log(lines) -> bool:
    return any(marker in line for line in lines[:5000] for marker in _V1_MARKERS)


def v0_explains_no_kv(ctx) -> tuple[str, str] | None:
    """(the V0 release to reason with, the evidence line) when the release is not known and
    only V0's whole-prompt profile explains a start with no KV memory: the newest rules'
    account leaves KV memory, V0's leaves none."""
    if ctx.version is not None or ctx.model is None or ctx.gpu is None:
        return None
    if whole_prompt_tokens(ctx, V0_RULES) is None or _v1_log(ctx.raw_lines):
        return None
    try:
        newest = account(ctx.model, ctx.gpu, ctx.knobs, None)
        old = account(ctx.model, ctx.gpu, ctx.knobs, V0_RULES)
    except (ArithmeticError, AttributeError, TypeError, ValueError):
        return None
    if newest.kv_cache_gib <= _AGREES_GIB or old.kv_cache_gib > 0:
        return None
    newest_name = format_version(effective_version(None))
    line = (
        f"the release is not given: by vLLM {newest_name}'s rules the KV cache would get "
        f"{newest.kv_cache_gib:.2f} GiB, by V0's ({V0_RULES}: one whole "
        f"{old.batched_tokens:,}-token prompt profiled, activation {old.activation_gib:.2f} "
        f"GiB) {old.kv_cache_gib:.2f} GiB; only V0 explains no KV memory, so its rules decide"
    )
    return V0_RULES, line
