"""Which tensor a CUDA OOM failed to allocate, from its size: the knob that sizes it goes first.

PyTorch's OOM message names the one allocation that failed ("Tried to allocate X"), rounded
up to the caching allocator's 2 MiB (c10/cuda/CUDACachingAllocator.cpp, get_allocation_size:
kRoundLarge for blocks of 10 MiB and more) and printed to two decimals of MiB or GiB. When
nothing around the OOM says where it happened, that size is the evidence: vLLM's start-up
profile and every step allocate a few large tensors whose size a knob sets, read in vLLM's
source (/tmp/vllm-src, 0.2.7 .. 0.33.0):

- the sampler's logits: one row per sequence, vocab_size columns, cast to fp32 and sorted
  (int64 indices) by top-k/top-p. V1's profile_run and compile_or_warm_up_model run
  _dummy_sampler_run over min(max_num_seqs, max_num_tokens) dummy requests
  (v1/worker/gpu_model_runner.py _dummy_run: num_reqs = min(num_tokens, max_num_reqs));
  V0's profile_run samples max_num_seqs dummy sequences (worker/model_runner.py) ->
  max_num_seqs;
- the MLP of a prefill: gate_up_proj's [tokens, 2 x intermediate / TP] output and the
  activation's [tokens, intermediate / TP] (layers/activation.py SiluAndMul; a MoE's fused
  experts the same per routed expert), over the tokens of one step: max_num_batched_tokens
  (V1 profiles _dummy_run(max_num_tokens)), which V0 without chunked prefill sets to
  max(max_model_len, 2048) (config.py SchedulerConfig) -> max_num_batched_tokens, or
  max_model_len when that is what sets the step.

A size that matches exactly one knob's tensor answers with that knob lowered, then the
table's lower utilization. No match, or matches that name different knobs, leave the table's
OOM order (rules_oom): a size is evidence only when it is unambiguous.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from headroom.doctor import actions as A
from headroom.doctor.findings import Finding, compact_actions
from headroom.doctor.oom_numbers import foreign_gib, parse_oom
from headroom.doctor.oom_weights import weights_do_not_fit
from headroom.doctor.release_defaults import LARGE_GPU_GIB, SMALL_GPU_GIB
from headroom.doctor.rules_oom import foreign_matters, oom_phase
from headroom.doctor.versions import batch_defaults, is_v1, parse_version

MIB = 1 / 1024  # GiB
# The smallest failed allocation read as one knob-sized tensor: below it, a tensor of a few
# hundred MiB at most is the last straw, not what filled the GPU.
MIN_TRIED_GIB = 0.25
# Releases whose batch defaults stand for an unknown one: V0 (0.5.5, 0.7.3), V1 (0.8.5,
# 0.10.2, 0.33.0: 2048 / 8192 / 16384 tokens, 256 / 1024 sequences).
_RELEASES = ((0, 5, 5), (0, 7, 3), (0, 8, 5), (0, 10, 2), (0, 33, 0))
# Phases other rules answer on their own evidence (rules_oom): the sampler warm-up's own
# message already says max_num_seqs.
_PHASES = ("unknown", "activation", "runtime")


@dataclass(frozen=True)
class SizedTensor:
    what: str  # "the sampler's fp32 logits"
    knob: str  # the knob that sets its rows
    rows: int
    row_bytes: int
    formula: str

    @property
    def gib(self) -> float:
        return self.rows * self.row_bytes / 2**30


def _allocated_gib(nbytes: float) -> float:
    """What PyTorch asks the driver for: rounded up to 2 MiB (blocks of 10 MiB and more)."""
    return math.ceil(nbytes / 2**21) * 2 / 1024


def _shown_equal(candidate_bytes: float, tried_gib: float) -> bool:
    """The size PyTorch prints: two decimals of GiB above 1 GiB, of MiB below."""
    got = _allocated_gib(candidate_bytes)
    tolerance = 0.0051 if tried_gib > 1.0 else 0.006 * MIB
    return abs(got - tried_gib) <= tolerance


def _gpu_sizes(ctx, total: float | None) -> list[float]:
    """The GPU memory the batch defaults follow (0.8.5+): the described GPU's, the OOM's
    total, else a small and a large one (release_defaults.possible_defaults' two tiers)."""
    if ctx.gpu is not None:
        return [ctx.gpu.min_usable_gib]
    return [total] if total else [SMALL_GPU_GIB, LARGE_GPU_GIB]


def _chunked_on(ctx) -> bool:
    """--enable-chunked-prefill given (a bare flag or a true value)."""
    value = ctx.arg("enable_chunked_prefill")
    return value is not None and str(value).lower() in {"true", "1", "yes", ""}


def _row_sources(ctx, total: float | None) -> tuple[list, list]:
    """(token counts, sequence counts) a step could have had, each with its knob and how it
    was set: the command's, else the release's defaults (every release when not known)."""
    knobs = ctx.knobs
    shape = ctx.model_read
    length = knobs.max_model_len or (shape.max_position_embeddings if shape else None)
    version = parse_version(ctx.version)
    releases = [version] if version else list(_RELEASES)
    name = ctx.gpu.name if ctx.gpu is not None else ""
    tokens: list[tuple[int, str, str]] = []
    seqs: list[tuple[int, str, str]] = []
    if knobs.max_num_batched_tokens:
        tokens.append((knobs.max_num_batched_tokens, "max_num_batched_tokens", "as set"))
    for release in releases:
        for gib in _gpu_sizes(ctx, total):
            default_tokens, default_seqs = batch_defaults(release, gib, name, length or 2048)
            if not is_v1(release) and _chunked_on(ctx):
                default_tokens = 2048 if release >= (0, 7, 0) else 512  # V0's chunked default
            if not knobs.max_num_batched_tokens:
                # V0 without chunked prefill: a step is one whole max_model_len prompt
                whole = not is_v1(release) and length is not None and default_tokens == length
                knob = "max_model_len" if whole else "max_num_batched_tokens"
                tokens.append((default_tokens, knob, "the release's default"))
            rows = knobs.max_num_seqs or default_seqs
            said = "as set" if knobs.max_num_seqs else "the release's default"
            step = tokens[-1][0]
            seqs.append((min(rows, step) if is_v1(release) else rows, "max_num_seqs", said))
            seqs.append((rows, "max_num_seqs", said))
    return tokens, seqs


def _row_widths(ctx) -> tuple[list, list]:
    """Bytes per token of a prefill's MLP tensors, bytes per sequence of the sampler's."""
    shape = ctx.model_read
    if shape is None:
        return [], []
    tp = max(ctx.knobs.tp, 1)
    dtype = str(ctx.arg("dtype") or shape.dtype or "").lower()
    b = 4 if dtype in {"float32", "float"} else 2
    per_token: list[tuple[int, str, int | None]] = []
    inter = shape.intermediate_size
    # a MoE model's config names intermediate_size even where no layer is dense (Mixtral,
    # Qwen3-MoE): only the experts' widths are sure of a MoE
    if inter and inter % tp == 0 and not shape.num_experts:
        per_token += [(2 * inter // tp * b, "gate_up_proj's output", None),
                      (inter // tp * b, "the MLP activation's output", None)]  # fmt: skip
    moe, topk = getattr(shape, "moe_intermediate_size", None), shape.num_experts_per_token
    if shape.num_experts and moe and topk and moe % tp == 0:
        # fused_moe works in chunks of VLLM_FUSED_MOE_CHUNK_SIZE tokens (envs.py: 65536 in
        # 0.5.x, 32768 from 0.6): a step longer than that does not size these
        version = parse_version(ctx.version)
        chunk = 65536 if version is not None and version < (0, 6, 0) else 32768
        per_token += [(topk * 2 * moe // tp * b, "the fused experts' gate_up output", chunk),
                      (topk * moe // tp * b, "the fused experts' activation", chunk)]  # fmt: skip
    per_seq: list[tuple[int, str, int | None]] = []
    if shape.vocab_size:
        vocab = shape.vocab_size
        per_seq = [(vocab * 4, "the sampler's fp32 logits", None),
                   (vocab * 8, "the sampler's sort indices", None),
                   (vocab * b, "the logits", None)]  # fmt: skip
    return per_token, per_seq


def sized_tensor(ctx, tried_gib: float | None, total_gib: float | None) -> SizedTensor | None:
    """The one knob-sized tensor whose allocation has the failed size; None when none or when
    tensors of different knobs have it."""
    if not tried_gib or tried_gib < MIN_TRIED_GIB:
        return None
    per_token, per_seq = _row_widths(ctx)
    tokens, seqs = _row_sources(ctx, total_gib)
    found: dict[str, SizedTensor] = {}
    for rows_list, widths, unit in ((tokens, per_token, "tokens"), (seqs, per_seq, "sequences")):
        for rows, knob, said in rows_list:
            for width, what, most in widths:
                if 0 < rows <= (most or rows) and _shown_equal(rows * width, tried_gib):
                    flag = "--" + knob.replace("_", "-")
                    formula = f"{rows:,} {unit} ({flag}, {said}) x {width:,} bytes"
                    found.setdefault(knob, SizedTensor(what, knob, rows, width, formula))
    return next(iter(found.values())) if len(found) == 1 else None


def _actions(ctx, tensor: SizedTensor):
    why = f"{tensor.what} scale with it: the failed allocation is that tensor"
    if tensor.knob == "max_num_seqs":
        first = A.lower_max_num_seqs(tensor.rows, None, why)
    elif tensor.knob == "max_model_len":
        first = A.lower_max_model_len(tensor.rows // 2, why)
    else:
        first = A.lower_batched_tokens(tensor.rows, why)
    return [first, A.lower_kv_memory(ctx, None, "leaves room above the profiled peak")]


def _size(gib: float) -> str:
    return f"{gib:.2f} GiB" if gib >= 1.0 else f"{gib * 1024:.2f} MiB"


def oom_allocation(ctx) -> list[Finding]:
    events = ctx.of("cuda_oom")
    if not events:
        return []
    event = events[0]
    if event.fields.get("from_words") or oom_phase(ctx, event) not in _PHASES:
        return []
    numbers = parse_oom(event.line)
    if weights_do_not_fit(ctx) or foreign_matters(ctx, foreign_gib(event.line), numbers.total):
        return []  # rules_oom's answer: the weights, or another process's memory
    tensor = sized_tensor(ctx, numbers.tried, numbers.total)
    if tensor is None or numbers.tried is None:
        return []
    evidence = (
        event.line.strip()[:400],
        f"the failed {_size(numbers.tried)} is {tensor.what}: {tensor.formula} = "
        f"{_size(tensor.gib)} (PyTorch rounds an allocation up to 2 MiB)",
    )
    title = f"Out of GPU memory allocating {tensor.what} ({tensor.knob} sets its size)"
    acts = compact_actions(_actions(ctx, tensor))
    return [Finding("cuda-oom-allocation", 4, "error", title, evidence, acts)]


RULES = (oom_allocation,)
