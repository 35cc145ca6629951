"""Memory failures whose cause is a release's DEFAULT or the model family's profile, not a flag.

When the user did not set max_num_seqs, vLLM picks it (versions.RELEASE_TABLE, read from each
release's arg_utils.py): 256 in V0; 1024 on every GPU in V1 0.8.0-0.8.4 (vllm PR #16158
put it back to 256 below 70 GiB after OOM reports); from 0.8.5 1024 only on GPUs of 70 GiB
and more. The start-up profile sizes its dummy batch by it: V1 warms the sampler over
max_num_seqs requests; a multimodal model's encoder runs over up to max_num_seqs x items per
prompt dummy items; an encoder-decoder model (mllama, Llama-3.2-Vision) gives EACH of
max_num_seqs dummy sequences a whole encoder input in V0 (enc_dec_model_runner.profile_run).

So a memory failure at start-up (a CUDA OOM, or no memory left for the KV cache) with
max_num_seqs unset is answered with max_num_seqs first, lowered to what the table justifies,
when: the model is encoder-decoder or multimodal (config, name, or a traceback frame in its
vLLM module), or the release's default is large for the GPU (1024 below 70 GiB), or the text
says it worked on an older release whose default was lower ("ok in 0.7.2"). Lowering
max_num_seqs lowers memory: the same direction as the OOM's (lower utilization, eager, fewer
batched tokens); for a KV shortage it is the table's "fewer sequences", and the KV budget
raise stays the next action.
"""

from __future__ import annotations

import re

from headroom.doctor import actions as A
from headroom.doctor.findings import Finding, compact_actions
from headroom.doctor.model_family import ModelFamily, model_family
from headroom.doctor.multimodal_models import ENCODER_DECODER_MODULES, runs_encoder_decoder_on_v0
from headroom.doctor.oom_numbers import foreign_gib
from headroom.doctor.refusal_match import hard_wrap_joined
from headroom.doctor.release_defaults import (
    ENCODER_DECODER_MAX_NUM_SEQS,
    V0_MAX_NUM_SEQS,
    ReleaseDefaults,
    changed_defaults,
    possible_defaults,
    seqs_target,
    seqs_text,
)
from headroom.doctor.rules_oom import (
    foreign_matters,
    oom_phase,
    v0_whole_prompt_profile,
    weights_do_not_fit,
)
from headroom.doctor.version_claims import Regression, stated_regression
from headroom.doctor.versions import (
    default_utilization,
    effective_version,
    format_version,
    parse_version,
)
from headroom.probes.vllm_log import LogEvent

FINDING_ID = "release-default-max-num-seqs"
LARGE_TIER_GIB = 70.0  # arg_utils: device_memory >= 70 GiB gets the large defaults
# OOM phases other rules answer on their own evidence (the weights, sleep mode, the KV
# allocation, CUDA-graph capture, the sampler warm-up that already says max_num_seqs) and an
# OOM while serving (the start-up profile passed).
_OTHER_PHASES = {"weights", "sleep-wake", "kv-alloc", "graphs", "sampler", "runtime"}


def memory_failure(ctx) -> tuple[str, LogEvent] | None:
    """("oom" | "kv", event) for a start-up memory failure this rule may explain."""
    ooms = ctx.of("cuda_oom")
    if ooms:
        event = ooms[0]
        if oom_phase(ctx, event) in _OTHER_PHASES or weights_do_not_fit(ctx):
            return None
        total = _gib(event.fields, "total_gib")
        if foreign_matters(ctx, foreign_gib(event.line), total):
            return None
        held = _gib(event.fields, "process_gib")
        if total and held and held > total * ctx.utilization:
            # The process already holds more than its budget: the KV cache was allocated, so
            # this is not the start-up profile (that runs before the KV cache exists).
            return None
        return "oom", event
    kv = ctx.of("no_cache_memory")
    return ("kv", kv[0]) if kv else None


def _gib(fields, key: str) -> float | None:
    value = fields.get(key)
    return float(value) if isinstance(value, int | float) else None


def gpu_of(ctx) -> tuple[float | None, str]:
    if ctx.gpu is not None:
        return ctx.gpu.min_usable_gib, ctx.gpu.name
    total = ctx.gpu_total
    return (total[0] if total else None), ""


def max_len_of(ctx) -> int | None:
    shape = ctx.model_read
    return ctx.knobs.max_model_len or getattr(shape, "max_position_embeddings", None)


def _regression_changes(
    regression: Regression | None, now: list[ReleaseDefaults], gib, name, tokens_known, **kw
) -> tuple[list[str], bool]:
    """The defaults that changed from the release that worked to this one (per GPU tier when
    the GPU is not known and the tiers differ), and whether max_num_seqs went up."""
    if regression is None or regression.good is None:
        return [], False
    before = possible_defaults(regression.good, gib, name, **kw)
    # One entry per GPU tier; a release whose defaults do not depend on the GPU has one.
    tiers = max(len(before), len(now))
    pairs = [(before[min(i, len(before) - 1)], now[min(i, len(now) - 1)]) for i in range(tiers)]
    per_tier = [changed_defaults(old, new, tokens_known) for old, new in pairs]
    raised = any(new.max_num_seqs > old.max_num_seqs for old, new in pairs)
    if all(lines == per_tier[0] for lines in per_tier):
        return per_tier[0], raised
    lines = []
    for (old, new), found in zip(pairs, per_tier, strict=True):
        gib_text = f"{max(old.gpu_gib, new.gpu_gib):.0f}"
        lines += [f"{line} (on a {gib_text} GiB GPU)" for line in found]
    return lines, raised


def _large_for_gpu(defaults: list[ReleaseDefaults]) -> ReleaseDefaults | None:
    """The default that is above V0's 256 on a GPU under 70 GiB (0.8.0-0.8.4's 1024)."""
    for d in defaults:
        if d.max_num_seqs > V0_MAX_NUM_SEQS and d.gpu_gib < LARGE_TIER_GIB:
            return d
    return None


def _encoder_items(ctx, now: list[ReleaseDefaults]):
    """(action or None, evidence) from V1's encoder-profile line: M dummy items is
    min(encoder budget / tokens per item, max_num_seqs x items per prompt); fewer than
    max_num_seqs items means the budget (max_num_batched_tokens, at least one item) bound it,
    and fewer batched tokens profile fewer items."""
    events = ctx.of("encoder_profile")
    if not events:
        return None
    fields = events[0].fields
    items, budget = fields.get("mm_items"), fields.get("encoder_budget")
    if not isinstance(items, int) or not isinstance(budget, int):
        return None
    seqs = min(d.max_num_seqs for d in now)
    line = (
        f"the encoder was profiled with {items} dummy {fields.get('modality', '')} items "
        f"(budget {budget:,} tokens)"
    )
    if items <= 1 or items >= seqs:
        return None, line + ": max_num_seqs x items per prompt or one item bound it"
    batched = ctx.knobs.max_num_batched_tokens or budget
    act = A.lower_batched_tokens(batched, f"the encoder budget ({budget:,} tokens) set the "
                                          f"{items} dummy items")  # fmt: skip
    return act, line + ": the batched-token budget bound it, not max_num_seqs"


def _kv_blocks(ctx) -> int | None:
    """KV blocks per the memory account (model and GPU known), None otherwise or when the
    estimate has none (then it bounds nothing)."""
    acc = ctx.account
    if acc is None or acc.kv_capacity_tokens <= 0:
        return None
    return acc.kv_capacity_tokens // max(acc.block_size, 1)


def _family_lines(family: ModelFamily, enc_dec: bool) -> list[str]:
    if enc_dec:
        return [
            f"encoder-decoder multimodal model ({family.how})",
            "its start-up profile gives EACH of max_num_seqs dummy sequences a whole encoder "
            "input (V0 enc_dec_model_runner.profile_run): the vision encoder runs over "
            "max_num_seqs images; vLLM's vision example runs mllama with max_num_seqs=16 and "
            "enforce_eager=True",
        ]
    return [
        f"multimodal model ({family.how})",
        "its start-up profile runs the encoder over up to max_num_seqs x items per prompt "
        "dummy items and (V1) the sampler over max_num_seqs requests; vLLM's vision example "
        "warns that the default max_num_seqs may OOM on lower-end GPUs",
    ]


def release_default_max_num_seqs(ctx) -> list[Finding]:
    if ctx.knobs.max_num_seqs is not None:
        return []  # the user chose it: not a default
    failure = memory_failure(ctx)
    if failure is None:
        return []
    kind, event = failure
    regression = stated_regression(ctx.raw_lines)
    stated = parse_version(ctx.version) or (regression.bad if regression else None)
    version = stated or effective_version(None)
    util = ctx.knobs.gpu_memory_utilization
    if util is not None and util > default_utilization(version) + 1e-9:
        return []  # a utilization the user raised is the first suspect (rules_oom says so)
    family = model_family(ctx)
    enc_dec = bool(
        family and family.encoder_decoder and runs_encoder_decoder_on_v0(family.name, version)
    )
    gib, name = gpu_of(ctx)
    max_len = max_len_of(ctx)
    throughput = str(ctx.arg("performance_mode") or "").lower() == "throughput"
    kw = {"max_model_len": max_len or 8192, "encoder_decoder": enc_dec, "throughput": throughput}
    now = possible_defaults(version, gib, name, **kw)
    changes, raised = _regression_changes(regression, now, gib, name, max_len is not None, **kw)
    large = _large_for_gpu(now) if stated else None
    # A decoder-only multimodal model on V0 with the default batch budget profiles one whole
    # max_model_len prefill first (rules_oom's answer: max_model_len); not so an encoder-decoder.
    multimodal = bool(family and (enc_dec or (kind == "oom" and not v0_whole_prompt_profile(ctx))))
    if not (multimodal or large or raised):
        return []
    current = max(d.max_num_seqs for d in now)
    if enc_dec:
        target = seqs_target(now[0], encoder_decoder=True)
    elif large or raised:
        target = V0_MAX_NUM_SEQS
    else:
        target = min(seqs_target(d, encoder_decoder=False) for d in now)
    blocks = _kv_blocks(ctx)
    if blocks is not None and blocks < target:
        target = max(blocks, 1)  # every running sequence holds at least one KV block
    ver_text = format_version(version)
    applies = f"applies {seqs_text(now)} (versions.RELEASE_TABLE, from its arg_utils.py)"
    # Without a command line nothing says max_num_seqs was left unset (known_knobs): the
    # finding is a condition on it, and an upgrade said to have broken it is what decides.
    unset = ("max_num_seqs was not set" if ctx.known("max_num_seqs") else
             "max_num_seqs in force is not known (no command line); if it was left unset")  # fmt: skip
    if enc_dec and now[0].engine == "V0" and version >= (0, 8, 0):
        where = f"vLLM {ver_text}" if stated else "a release that is not known"
        said = f"{unset}: {where} runs encoder-decoder models on V0, which {applies}"
    elif stated:
        said = f"{unset}: vLLM {ver_text} {applies}"
    else:
        said = f"{unset}: the release is not known; the newest, {ver_text}, {applies}"
    evidence = [event.line.strip()[:300], said]
    if raised and not ctx.known("max_num_seqs"):
        evidence.append(
            "an upgrade alone changes only what the release chooses: a max_num_seqs the "
            "command line set would be the same on both releases"
        )
    if blocks is not None and blocks <= target:
        evidence.append(f"the KV cache holds about {blocks:,} blocks: no more sequences can run")
    if family is not None:
        evidence += _family_lines(family, enc_dec)
    if large is not None and throughput and version >= (0, 32, 0):
        evidence.append(
            f"--performance-mode throughput doubled the default to {large.max_num_seqs} on a GPU "
            "under 70 GiB (arg_utils.py, 0.32.0+)"
        )
    elif large is not None:
        evidence.append(
            f"{large.max_num_seqs} sequences is V1's default on every GPU in 0.8.0-0.8.4; "
            "vLLM put it back to 256 below 70 GiB (PR #16158) after OOM reports"
        )
    if regression is not None and changes:
        good = format_version(regression.good) if regression.good else "?"
        evidence.append(f"stated: worked on {good} ({regression.line[:120]})")
        evidence.append(f"defaults that changed since {good}: " + "; ".join(changes))
    why = (
        f"the release's default max_num_seqs ({current}) sizes the start-up profile's dummy "
        f"batch; {target} is what the table justifies"
    )
    if not ctx.known("max_num_seqs"):
        why = f"if left unset, {why}"
    acts = [A.lower_max_num_seqs(current, target, why)]
    encoder = _encoder_items(ctx, now)
    if encoder is not None:
        evidence.append(encoder[1])
    graphs = any(d.cuda_graphs for d in now) and not ctx.knobs.enforce_eager
    if kind == "oom":
        if graphs:
            acts.append(A.enforce_eager("no CUDA-graph pools (captured up to batch "
                                        f"{max(d.largest_graph_batch for d in now)})"))  # fmt: skip
        if encoder is not None and encoder[0] is not None:
            acts.append(encoder[0])
        acts.append(A.lower_utilization(ctx, None, "more room outside vLLM's budget"))
        title = f"Out of GPU memory with the release's default max_num_seqs ({current})"
        if not ctx.known("max_num_seqs"):
            title = (
                f"Out of GPU memory, if max_num_seqs was left at the release's default ({current})"
            )
    else:
        if enc_dec and graphs:
            acts.append(A.enforce_eager("CUDA graphs do not suit the cross-attention layers"))
        acts.append(A.raise_kv_budget(ctx, None, "more memory for the KV cache"))
        title = (
            f"No memory left for the KV cache with the release's default max_num_seqs ({current})"
        )
        if not ctx.known("max_num_seqs"):
            title = (
                "No memory left for the KV cache, if max_num_seqs was left at the release's "
                f"default ({current})"
            )
    return [Finding(FINDING_ID, 4, "error", title, tuple(evidence), compact_actions(acts))]


_FORWARD_FRAME = re.compile(r'vllm/model_executor/models/(\w+)\.py", line \d+, in forward')


def encoder_frame_without_error(ctx) -> list[Finding]:
    """A paste that ends inside an encoder-decoder model's forward in vLLM's model code, with
    no error line at all (the exception was cut off): a hint, not a diagnosis. In V0 the
    start-up profile runs that encoder over max_num_seqs dummy inputs (a whole image each),
    so IF the lost error is a CUDA OOM, max_num_seqs is the knob; said as a condition."""
    if ctx.knobs.max_num_seqs is not None or any(e.severity == "error" for e in ctx.events):
        return []
    lines = [line for line in ctx.raw_lines if line.strip()]
    tail = lines[-4:]
    # a terminal's hard wrap may cut the frame's path ("vllm/model_\nexecutor/models/...")
    frames = [m.group(1) for m in _FORWARD_FRAME.finditer(hard_wrap_joined(tail))]
    if not frames or frames[-1] not in ENCODER_DECODER_MODULES:
        return []
    module = frames[-1]
    seqs = V0_MAX_NUM_SEQS
    acts = [
        A.lower_max_num_seqs(seqs, ENCODER_DECODER_MAX_NUM_SEQS,
                             "if the lost error is an OOM: fewer dummy encoder inputs at start-up"),
        None if ctx.knobs.enforce_eager else A.enforce_eager(
            "vLLM's vision example runs this family eager (no CUDA-graph pools)"),
    ]  # fmt: skip
    evidence = (
        tail[-1].strip()[:300],
        f"the log ends inside vllm/model_executor/models/{module}.py's forward with no error "
        "line: the exception itself is missing",
        f"{module} is an encoder-decoder model: V0's start-up profile gives each of max_num_seqs "
        f"dummy sequences a whole encoder input ({seqs} by default, when max_num_seqs is not set)",
        "vLLM's vision example runs mllama with max_num_seqs=16 and enforce_eager=True",
    )
    return [
        Finding(
            f"{FINDING_ID}-encoder-trace",
            4,
            "warning",
            f"The log stops inside {module}'s encoder forward: if it ran out of memory, the "
            "start-up profile's max_num_seqs dummy inputs did",
            evidence,
            compact_actions(acts),
        )
    ]


RULES = (release_default_max_num_seqs, encoder_frame_without_error)
