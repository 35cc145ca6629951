"""Rules for command-line refusals found by the source walk (probes/vllm_catalog/limits.py):
a --gpu-memory-utilization above 1, and two features a release cannot run together.

- "GPU memory utilization must be less than 1.0. Got 90.0." (0.2.7-0.11.0): the flag is a
  fraction; a number above 1 read as a percentage gives the fraction meant, else vLLM's
  long-time default 0.9. Lowering is the only way (0.32+ refuses it in pydantic: le=1).
- Two features one release refuses together (chunked prefill with a sliding window, with LoRA,
  with prefix caching, with multi-step or speculative decoding; prefix caching with an fp8 KV
  cache): drop one of them or take a release that runs both. No memory knob is the fix, and
  which feature to keep is the user's choice, so the finding turns none.
- An fp8 KV cache the model's head size or a kernel refuses: --kv-cache-dtype auto (step 5).
- A CUDA-graph mode the model or backend lacks: eager for 0.9's Mamba layers and Qwen's
  dual-chunk attention; piecewise graphs (a compilation setting, no knob here) for full graphs
  on a backend without them; FA3's 992-token capture limit is the release's default to fix.
- The batch token budget not a multiple of the KV block (V0 chunked prefill with prefix
  caching, 0.6.4-0.6.6): raise --max-num-batched-tokens to the next multiple of it.
- Speculative decoding's draft slots take the whole batch budget (0.17+): raise
  --max-num-batched-tokens by what the message says is missing (or fewer sequences / draft
  tokens).
- A quantization method the release does not know, a model layout it cannot run: upgrade, no
  knob (the method's name may also be misspelt: the message lists the ones it knows).
- A LoRA adapter above --max-lora-rank, or a rank the release's kernels lack: the smallest
  rank the release allows at or above the adapter's.
- A request for a model name the server does not serve (vLLM's 404): --served-model-name.
"""

from __future__ import annotations

import math

from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import parse_version

_DEFAULT_UTILIZATION = 0.9  # vLLM's default from 0.1 to 0.11


def utilization_out_of_range(ctx) -> list[Finding]:
    events = ctx.of("utilization_out_of_range")
    if not events:
        return []
    event = events[0]
    try:
        given = float(event.fields.get("utilization"))
    except (TypeError, ValueError):
        given = None
    value = _DEFAULT_UTILIZATION
    why = "--gpu-memory-utilization is the fraction of GPU memory vLLM may use (0.9 = 90%)"
    if given is not None and 1 < given <= 100 and given / 100 < 1:
        value = round(given / 100, 2)
        why += f": {given:g} reads as {given:g}%, i.e. {value}"
    act = Action("gpu_memory_utilization", "lower", value, why, "none: the value was not valid")
    title = "--gpu-memory-utilization is above 1 (it is a fraction)"
    return [Finding("utilization-out-of-range", 4, "error", title, (event.line.strip(),), (act,))]


def feature_combination_unsupported(ctx) -> list[Finding]:
    events = ctx.of("feature_combination_unsupported")
    if not events:
        return []
    evidence = (
        events[0].line.strip()[:400],
        "this release refuses the two features together: drop one of them (the message names "
        "the flag where vLLM gives one), or take a release that runs both; no memory knob",
    )
    title = "This vLLM release cannot run two of the requested features together"
    return [Finding("feature-combination-unsupported", None, "error", title, evidence, ())]


def kv_cache_dtype_refused(ctx) -> list[Finding]:
    """An fp8 KV cache this model's head size (fp8 keys need head_size % 16 == 0) or kernel
    (0.11's TRTLLM FP8 attention with sinks) refuses: --kv-cache-dtype auto, step 5 undone."""
    events = ctx.of("kv_cache_dtype_refused")
    if not events:
        return []
    event = events[0]
    head = event.fields.get("head_size")
    why = "vLLM refuses an fp8 KV cache here" + (
        f": head_size {head} is not a multiple of 16" if head else ""
    )
    act = Action(
        "kv_cache_dtype", "set", "auto", why, "the KV cache takes twice the bytes per token"
    )
    title = "An fp8 KV cache cannot run with this model or kernel"
    return [Finding("kv-cache-dtype-refused", 5, "error", title, (event.line.strip(),), (act,))]


def cuda_graph_unsupported(ctx) -> list[Finding]:
    """A CUDA-graph mode the model (0.9's Mamba layers) or the attention backend (full graphs)
    lacks: eager mode for the first; piecewise graphs, a compilation setting, for the second."""
    events = ctx.of("cuda_graph_unsupported")
    if not events:
        return []
    event = events[0]
    eager_only = {
        "mamba_cuda_graph": ("Mamba layers", "This model's Mamba layers cannot run in CUDA graphs"),
        "dual_chunk_cuda_graph": (
            "dual-chunk attention",
            "Dual-chunk flash attention cannot run in CUDA graphs",
        ),
    }
    if event.signature in eager_only:
        what, title = eager_only[event.signature]
        act = Action(
            "enforce_eager",
            "set",
            True,
            f"this release runs {what} only without CUDA graphs",
            "no CUDA graphs: slower decoding",
        )
        return [Finding("cuda-graph-unsupported", 4, "error", title, (event.line.strip(),), (act,))]
    if event.signature == "fa3_full_graph_capture_size":
        evidence = (
            event.line.strip()[:400],
            "FlashAttention 3 captures full CUDA graphs up to 992 tokens and this release's "
            "capture sizes go higher: a bug of the release's defaults (vllm#25508 lowered them); "
            "upgrade, or cap the compilation config's max_capture_size at 992",
        )
        title = "This release's CUDA-graph sizes exceed what FlashAttention 3 captures"
        return [Finding("cuda-graph-unsupported", None, "error", title, evidence, ())]
    evidence = (
        event.line.strip()[:400],
        "full CUDA graphs need an attention backend that supports them: set the compilation "
        "config's cudagraph_mode to PIECEWISE (or full_cuda_graph off), or another backend; "
        "--enforce-eager also starts, without any CUDA graphs",
    )
    title = "Full CUDA graphs are not supported by this attention backend"
    return [Finding("cuda-graph-unsupported", None, "error", title, evidence, ())]


def _int(fields, name: str) -> int | None:
    try:
        return int(fields[name])
    except (KeyError, TypeError, ValueError):
        return None


def batched_tokens_below_block_size(ctx) -> list[Finding]:
    """V0's chunked prefill with prefix caching (0.6.4-0.6.6) schedules whole blocks: the chunk,
    max_num_batched_tokens, must be a multiple of the block size. (The same kind's align-mode
    text of hybrid Mamba models, 0.17-0.25, is rules_lengths.mamba_align_block_above_batch's.)"""
    events = [
        e for e in ctx.of("batched_tokens_block_size") if e.signature == "chunk_not_block_multiple"
    ]
    if not events:
        return []
    event = events[0]
    block = _int(event.fields, "block_size")
    batch = _int(event.fields, "max_num_batched_tokens") or ctx.knobs.max_num_batched_tokens
    value = math.ceil(batch / block) * block if block and batch else None
    why = "chunked prefill with prefix caching schedules whole KV blocks: the chunk must be a multiple"
    if value:
        why += f" of block_size {block} ({value})"
    act = Action(
        "max_num_batched_tokens",
        "raise",
        value,
        why,
        "a larger prefill batch takes a little more activation memory",
    )
    title = "The batch token budget is not a multiple of the KV block size"
    return [
        Finding("batched-tokens-below-block-size", 4, "error", title, (event.line.strip(),), (act,))
    ]


def _round_up(value: int, unit: int = 256) -> int:
    return math.ceil(value / unit) * unit


def spec_decode_batch_too_small(ctx) -> list[Finding]:
    """Speculative decoding reserves draft slots per sequence out of max_num_batched_tokens
    (max_num_scheduled_tokens = batch - slots x max_num_seqs, 0.20+); at or below zero nothing
    can be scheduled. vllm#50708: DFlash, 16 draft tokens, default batch: "-1792"."""
    events = ctx.of("spec_decode_batch_too_small")
    if not events:
        return []
    event = events[0]
    f = event.fields
    batch = _int(f, "max_num_batched_tokens") or ctx.knobs.max_num_batched_tokens
    scheduled, lookahead = _int(f, "max_num_scheduled_tokens"), _int(f, "num_lookahead_tokens")
    delta = _int(f, "scheduled_token_delta")
    needed = None
    if scheduled is not None and scheduled <= 0 and batch:
        needed = batch - scheduled + 1
    elif lookahead is not None:
        needed = lookahead + 1
    elif delta is not None and batch:
        needed = batch + delta
    value = _round_up(needed) if needed else None
    evidence = [event.line.strip()[:400]]
    if needed:
        evidence.append(
            f"at least {needed} batched tokens start it; vLLM warns below 8192 schedulable tokens "
            "that speculative decoding is slowed"
        )
    acts = (
        Action(
            "max_num_batched_tokens",
            "raise",
            value,
            "the draft tokens of every sequence are reserved out of the batch token budget",
            "more activation memory per step",
        ),
        Action(
            "max_num_seqs",
            "lower",
            None,
            "each running sequence reserves its draft slots (or fewer num_speculative_tokens)",
            "fewer requests at once",
        ),
    )
    title = "Speculative decoding's draft slots leave no batch budget to schedule"
    return [Finding("spec-decode-batch-too-small", 4, "error", title, tuple(evidence), acts)]


# --max-lora-rank's allowed values (LoRAConfig: possible_max_ranks, 0.14+ a Literal), by the
# first release read that has them: (release, ranks).
_LORA_RANKS: tuple[tuple[tuple[int, int, int], tuple[int, ...]], ...] = (
    ((0, 3, 3), (8, 16, 32, 64)),
    ((0, 5, 5), (8, 16, 32, 64, 128, 256)),
    ((0, 8, 5), (8, 16, 32, 64, 128, 256, 320, 512)),
    ((0, 14, 1), (1, 8, 16, 32, 64, 128, 256, 320, 512)),
)


def _lora_ranks(ctx, allowed: str | None) -> tuple[int, ...]:
    if allowed:
        found = tuple(int(x) for x in allowed.replace(" ", "").split(",") if x.isdigit())
        if found:
            return found
    release = parse_version(ctx.version) if ctx.version else None
    ranks: tuple[int, ...] = _LORA_RANKS[-1][1]
    if release is not None:
        for since, values in _LORA_RANKS:
            if release >= since:
                ranks = values
    return ranks


def lora_rank_unsupported(ctx) -> list[Finding]:
    """An adapter of rank r above --max-lora-rank (default 16), or a --max-lora-rank the
    release's kernels do not have: the smallest allowed rank at or above r. Above the largest
    the release allows, a newer release allows more."""
    events = ctx.of("lora_rank_unsupported")
    if not events:
        return []
    event = events[0]
    wanted = _int(event.fields, "rank") or _int(event.fields, "max_lora_rank")
    ranks = _lora_ranks(ctx, event.fields.get("allowed"))
    value = next((r for r in sorted(ranks) if wanted is not None and r >= wanted), None)
    evidence = [event.line.strip()[:400]]
    if wanted is not None and value is None:
        evidence.append(
            f"this release allows max_lora_rank up to {max(ranks)}: a rank-{wanted} adapter needs "
            "a newer release (0.8+ allows 512)"
        )
    act = Action(
        "max_lora_rank",
        "raise" if event.signature == "lora_rank_above_max" else "set",
        value,
        "the LoRA buffers are sized for max_lora_rank: an adapter of a larger rank does not load"
        + (f" (allowed: {', '.join(map(str, ranks))})" if ranks else ""),
        "more GPU memory for the LoRA buffers (rank x max_loras x layers)",
    )
    title = (
        f"The LoRA adapter's rank {wanted} is above --max-lora-rank"
        if event.signature == "lora_rank_above_max"
        else f"--max-lora-rank {wanted} is not a rank this release supports"
    )
    return [Finding("lora-rank-unsupported", None, "error", title, tuple(evidence), (act,))]


def model_not_served(ctx) -> list[Finding]:
    """A request named a model the server does not serve (vLLM's 404, "The model `X` does not
    exist."): the server answers to --served-model-name, else to --model as given (often a
    local path). Setting --served-model-name to the name clients send fixes every client."""
    events = ctx.of("model_not_served")
    if not events:
        return []
    event = events[0]
    asked = event.fields.get("model")
    served = ctx.arg("served_model_name") or ctx.arg("model") or getattr(ctx.facts, "model", None)
    if isinstance(served, (list, tuple)):
        served = ", ".join(map(str, served))
    evidence = [event.line.strip()[:400]]
    if served:
        evidence.append(f"this server answers to {served!s}")
    act = Action(
        "served_model_name",
        "set",
        asked,
        "the server answers only to the names it was started with (--served-model-name, else "
        "--model as given, a local path included)",
        "clients that use the old name must change it (several names may be given)",
    )
    title = f"Requests name model `{asked}`, which this server does not serve"
    return [Finding("model-not-served", None, "error", title, tuple(evidence), (act,))]


def quantization_unknown(ctx) -> list[Finding]:
    events = ctx.of("quantization_unknown")
    if not events:
        return []
    event = events[0]
    method = event.fields.get("method") or "this method"
    known = event.fields.get("supported")
    version = f" {ctx.version}" if ctx.version else ""
    evidence = [
        event.line.strip()[:400],
        "not a configuration problem: a release that knows the method loads it (check the "
        "name too" + (f"; this one knows {known}" if known else "") + ")",
    ]
    title = f"This vLLM{version} does not know quantization method {method}: upgrade vLLM"
    return [Finding("quantization-unknown", None, "error", title, tuple(evidence), ())]


def release_lacks_feature(ctx) -> list[Finding]:
    events = ctx.of("release_lacks_feature")
    if not events:
        return []
    evidence = (
        events[0].line.strip()[:400],
        "not a configuration problem: the model's layout needs a release that runs it "
        "(a sliding window on some layers only: vLLM PR #17772)",
    )
    title = "This vLLM release cannot run the model's layout: upgrade vLLM"
    return [Finding("release-lacks-feature", None, "error", title, evidence, ())]


RULES = (
    utilization_out_of_range,
    feature_combination_unsupported,
    kv_cache_dtype_refused,
    cuda_graph_unsupported,
    batched_tokens_below_block_size,
    spec_decode_batch_too_small,
    quantization_unknown,
    release_lacks_feature,
    lora_rank_unsupported,
    model_not_served,
)
