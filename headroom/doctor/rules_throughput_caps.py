"""A throughput or concurrency limit said in words, beside a batch cap the command line set.

vLLM runs at most max_num_seqs sequences per step and at most max_num_batched_tokens tokens
per step (V0 scheduler.py and V1 core/sched/scheduler.py both stop filling a step at either
budget): below them a request waits in the queue whatever the GPU could do. When the words
say the throughput is low or regressed, the GPU's compute idles, or more concurrency is
wanted (probes.symptom_throughput), and the command line itself caps the batch below what
the release would have used, the cap is the evidence; the field's answer is to raise it:

- max_num_seqs set below the release's default (256 in V0 and V1's smaller tier, 1024 on a
  large GPU from 0.8; versions.batch_defaults): "Restore max_num_seqs to 32 to fix throughput
  regression" (vllm-project/vllm-omni#5071, 8 -> 32), vllm-project/recipes#573 (2 -> 16,
  "improves concurrency"), joryirving/home-ops#10027 (4 -> 6). Raised to twice the value,
  at most the default: each step is a restart to measure, and more sequences share the same
  KV cache (more preemption when it is full).
- chunked prefill in force (the flag, or V1 where it is always on) with max_num_batched_tokens
  set below 8192: vLLM's tuning guide says "For optimal throughput, we recommend setting
  max_num_batched_tokens > 8192" (docs/configuration/optimization.md, V1; the 0.4-0.6 guide:
  "the default value ... is optimized for ITL, and it may have lower throughput than the
  default scheduler. We recommend you set max_num_batched_tokens > 2048 for throughput");
  vllm#7604's maintainer: as large as the inter-token latency permits. Raised to 8192 or
  twice the value, never above a max_model_len the command set (no chunk is longer).

Silent without a cap on the command line (the defaults say nothing about this workload: a
client that sends one request at a time is the other common answer), beside any failure, a
KV shortage or preemption (raising either cap there is the wrong way: a full KV cache wants
fewer sequences), and when the words name no throughput limit. Never lowers anything.
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import batch_defaults, effective_version, is_v1
from headroom.probes.symptom_hang import hang_words
from headroom.probes.symptom_throughput import throughput_limited

ID = "words-throughput-capped"
# The tuning guide's floor for throughput with chunked prefill (V1 optimization.md).
THROUGHPUT_BATCHED_TOKENS = 8192
# Lines of the log that may sit beside the words: start-up facts and the periodic stats
# (rules_eager_speed reads the same set).
NEUTRAL_KINDS = frozenset(
    {
        "version",
        "model",
        "non_default_args",
        "max_model_len",
        "weights_loaded",
        "encoder_profile",
        "kv_memory_available",
        "kv_memory_reserved",
        "kv_cache_tokens",
        "max_concurrency",
        "cuda_graph_memory",
        "memory_summary",
        "kv_cache_blocks",
        "server_starting",
        "startup_complete",
        "stats",
        "resolved_architecture",
        "kv_cache_dtype",
        "distributed_init",
        "distributed_ready",
        "long_context_warning",
    }
)
_FULL_KV = 0.9  # a stats line at this KV-cache usage or more: the cache, not the cap, limits


def _words_say_limit(ctx) -> str | None:
    """The first line of the log's words that says the throughput is limited."""
    for line in ctx.prose_lines:
        if throughput_limited(line):
            return line.strip()
    return None


def _kv_bound(ctx) -> bool:
    """The log or the words show the KV cache as the limit: a preemption, a full cache."""
    if ctx.of("preemption", "no_cache_memory", "cuda_oom", "swap_space_exhausted"):
        return True
    for event in ctx.of("stats"):
        usage = event.fields.get("kv_cache_usage")
        swapped = event.fields.get("swapped")
        preempted = event.fields.get("preemptions")
        if isinstance(usage, int | float) and usage >= _FULL_KV:
            return True
        if (isinstance(swapped, int) and swapped > 0) or (
            isinstance(preempted, int) and preempted > 0
        ):
            return True
    words = ctx.words
    return bool(words is not None and words.memory_short)


def _default_seqs(ctx, version: tuple[int, int, int]) -> int:
    """The smallest max_num_seqs the release picks where the GPU is not known (the smaller
    tier), the GPU's own tier when it is."""
    gpu = ctx.gpu
    usable = gpu.usable_gib if gpu is not None else 0.0
    name = gpu.name if gpu is not None else ""
    length = ctx.knobs.max_model_len or 8192
    return batch_defaults(version, usable, name, length)[1]


def _chunked(ctx, version: tuple[int, int, int]) -> bool:
    flag = ctx.knobs.chunked_prefill
    if flag is not None:
        return bool(flag) or (is_v1(version) and version < (0, 12, 0))  # V1 before 0.12: on
    return is_v1(version)


def _seqs_action(ctx, version: tuple[int, int, int]) -> Action | None:
    seqs = ctx.knobs.max_num_seqs
    if not seqs or ctx.knob_state("max_num_seqs") != "set":
        return None
    default = _default_seqs(ctx, version)
    if seqs >= default:
        return None
    target = min(default, max(2 * seqs, seqs + 1))
    return Action(
        "max_num_seqs",
        "raise",
        target,
        f"max_num_seqs {seqs} caps each step at {seqs} sequences (the release's default is "
        f"{default}): requests beyond it wait in the queue",
        "more sequences share the KV cache: watch for preemption; a higher inter-token latency",
    )


def _tokens_action(ctx, version: tuple[int, int, int]) -> Action | None:
    tokens = ctx.knobs.max_num_batched_tokens
    if not tokens or ctx.knob_state("max_num_batched_tokens") != "set":
        return None
    if not _chunked(ctx, version) or tokens >= THROUGHPUT_BATCHED_TOKENS:
        return None
    target = max(THROUGHPUT_BATCHED_TOKENS, 2 * tokens)
    length = ctx.knobs.max_model_len if ctx.knob_state("max_model_len") == "set" else None
    if length:
        if tokens >= length:
            return None  # every prompt fits one step already: nothing is chunked
        target = min(target, length)
    return Action(
        "max_num_batched_tokens",
        "raise",
        target,
        f"with chunked prefill each step takes {tokens} tokens at most: vLLM's tuning guide "
        f"recommends more than {THROUGHPUT_BATCHED_TOKENS} for throughput",
        "a larger activation peak per step (profiled at start-up); a higher inter-token latency",
    )


def throughput_capped(ctx) -> list[Finding]:
    """A throughput limit said in words beside a batch cap the command set (module doc)."""
    said = _words_say_limit(ctx)
    if said is None:
        return []
    if any(e.kind not in NEUTRAL_KINDS for e in ctx.events) or _kv_bound(ctx):
        return []  # a failure or a full KV cache: their rules answer, and never with a raise
    if hang_words(ctx.raw_lines[:200], ctx.events) is not None:
        return []  # a GPU idle because the server hangs: rules_hang's, not the cap's
    version = effective_version(ctx.version)
    acts = [a for a in (_seqs_action(ctx, version), _tokens_action(ctx, version)) if a]
    if not acts:
        return []
    evidence = (
        said[:400],
        "vLLM schedules at most max_num_seqs sequences and max_num_batched_tokens tokens per "
        "step: the command line caps the batch below what the release would use",
    )
    return [
        Finding(
            ID,
            4,
            "warning",
            "Throughput said to be limited: the command line caps the batch",
            evidence,
            tuple(acts),
        )
    ]


RULES = (throughput_capped,)
