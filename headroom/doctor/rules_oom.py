"""CUDA out-of-memory and the start-up memory gate.

An OOM is the opposite case of a KV shortage: another process's memory, CUDA-graph capture or
the activation peak want a LOWER utilization, --enforce-eager or fewer batched tokens; an OOM
while loading weights wants more GPUs (TP) or a quantized checkpoint. Free memory below the
utilization at start-up means others hold memory: lower the utilization to what is free
(that start-up gate is rules_memory_gate.py's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from headroom.doctor import actions as A
from headroom.doctor.findings import Action, Finding, compact_actions
from headroom.doctor.oom_capture import CAPTURE_CLOSES, capture_open_at_oom
from headroom.doctor.oom_lengths import length_in_force
from headroom.doctor.oom_numbers import foreign_gib, own_memory, parse_oom, too_little_left
from headroom.doctor.oom_sizes import idle_gpus
from headroom.doctor.oom_weights import no_kv_room, weights_do_not_fit, weights_finding
from headroom.doctor.release_defaults import V0_MAX_NUM_SEQS
from headroom.doctor.rules_long_context import long_context
from headroom.doctor.versions import is_v1, parse_version
from headroom.probes.vllm_log import LogEvent

# One tensor of a whole-prompt prefill: 32,768 tokens x a 7B model's MLP (2 x 14,336 x 2 bytes)
# is 1.75 GiB (vllm#2666: "Tried to allocate 1.75 GiB" in activation.py forward, 0.2.7).
_WHOLE_PROMPT_TENSOR_GIB = 1.0


def _number(fields: Mapping[str, object], key: str) -> float | None:
    value = fields.get(key)
    return float(value) if isinstance(value, int | float) else None


# CUDA graphs named in a person's words ("CUDA graph", "cudagraphs", "graph capture")
_GRAPHS_IN_WORDS = re.compile(r"\bcuda[ _-]?graphs?\b|\bgraph[ _-]captur", re.IGNORECASE | re.ASCII)

# Frames of a model forward pass in a traceback, in every release read: a layer's forward
# (model_executor/layers/*.py, "in forward"), V0's profile_run / execute_model /
# determine_num_available_blocks, V1's _dummy_run / determine_available_memory.
_FORWARD_FRAMES = (
    ", in forward",
    "in profile_run",
    "in execute_model",
    "in determine_num_available_blocks",
    "in _dummy_run",
    "in determine_available_memory",
)


# vLLM's weight-loading progress bar (model_loader/weight_utils.py _BAR_FORMAT, the same in
# 0.6.0 through 0.33.0: "{desc}: {percentage:3.0f}% Completed | {n}/{total} [...]", desc
# "Loading safetensors checkpoint shards", "Loading pt checkpoint shards", ...). Its own words
# say "load": a bar that finished says the weights were read, not that the OOM hit there.
_SHARD_BAR = re.compile(
    r"(?:multi-thread )?loading (?:safetensors|pt|np_cache) checkpoint shards:\s*"
    r"\d+% completed \| (\d+)/(\d+)[^\]]*\]?",
    re.IGNORECASE,
)


def _without_finished_bars(around: str) -> str:
    """The text before an OOM with the shard bars taken out when the last one finished."""
    bars = list(_SHARD_BAR.finditer(around))
    if bars and bars[-1].group(1) == bars[-1].group(2):
        return _SHARD_BAR.sub(" ", around)
    return around


# Lines before an OOM that say nothing about where the start-up was: the server's version
# line, printed before the engine exists ("vLLM API server version %s", api_server.py
# 0.4.3-0.17.1; "vLLM server version %s, serving model %s", entrypoints/common/startup.py
# 0.33.0), the catalog's server_version.
_NO_PHASE = frozenset({"server_version"})


def _paragraph(ctx, event: LogEvent) -> str:
    """The event's line with the lines of its paragraph before it (no blank line between):
    a person's sentence wrapped at 80 columns names its cause a line or two above the OOM."""
    lines = ctx.lines_before(event, 4) or [event.line]
    kept: list[str] = []
    for line in reversed(lines):
        if not line.strip():
            break
        kept.insert(0, line.strip())
    return " ".join(kept) or event.line


def oom_phase(ctx, event: LogEvent) -> str:
    """Where the OOM happened, from the lines around it: weights, sampler, graphs, runtime."""
    index = ctx.events.index(event)
    before = ctx.events[:index]
    if event.fields.get("from_words"):
        # A person's words (probes.symptom_text) are a line of unknown phase: "OOM when
        # loading the model" in a title means the start-up, not the weight loader's frame.
        # Only the log's own lines may place it (after start-up: the runtime), or the words
        # themselves when they put the memory on CUDA graphs ("CUDA graph generation is on
        # by default, which takes up to 3 Gio of VRAM ... I trigger an Out Of Memory error",
        # bentoml/OpenLLM#1003): the memory vLLM's own hint says graphs take beside the
        # budget ("CUDA graphs can take additional 1~3 GiB memory per GPU", V0 model_runner).
        started = any(e.kind in ("startup_complete", "stats") for e in before)
        if started:
            return "runtime"
        return "graphs" if _GRAPHS_IN_WORDS.search(_paragraph(ctx, event)) else "unknown"
    around = " ".join(
        ctx.lines_before(event) or [e.line for e in ctx.events[max(0, index - 6) : index + 1]]
    )
    around = around.lower()
    nums = event.fields  # tried/total/free GiB, process_count, largest_process_gib, ...
    if "cumem_allocator" in around or "wake_up" in around:
        # Sleep mode (csrc/cumem_allocator.cpp, vLLM 0.7+): the engine re-maps the memory it
        # released, weights and KV pool, while the trainer beside it still holds its own.
        return "sleep-wake"
    if "failed to load model" in around or "load_weights" in around:
        return "weights"
    if "allocate_kv_cache" in around or "initialize_kv_cache" in around or "cache_engine" in around:
        return "kv-alloc"
    if "sampler" in around or "warming up sampler" in around:
        return "sampler"
    serving = any(e.kind in ("startup_complete", "stats") for e in before)
    # "Graph capturing finished" closes a capture: after it the OOM is not in one
    if "captur" in around.replace(CAPTURE_CLOSES, ""):
        return "graphs"
    if (_number(nums, "graph_pools_gib") or 0.0) > 1.0 and not serving:
        # PyTorch's "allocated in private pools (e.g., CUDA Graphs)": graphs exist, so the
        # start-up reached capture. Once the engine serves the pools stay for replay
        # (every release): then they say nothing about where the OOM was.
        return "graphs"
    if capture_open_at_oom(ctx, event):
        # the start-up's order places it: a capture opened and never closed (oom_capture.py)
        return "graphs"
    if serving:
        return "runtime"
    if any(frame in around for frame in _FORWARD_FRAMES):
        # The traceback runs through the model's forward (the start-up profile or a step):
        # an activation, not a weight being loaded.
        return "activation"
    if not any(e.kind in ("weights_loaded",) for e in before):
        total, process = _number(nums, "total_gib"), _number(nums, "largest_process_gib")
        if (
            total
            and process
            and process > 0.9 * total
            and ctx.knobs.gpu_memory_utilization
            and ctx.knobs.gpu_memory_utilization < 0.8
        ):
            return "weights"  # the process filled the GPU before any KV cache existed
        words = _without_finished_bars(around)
        if "load" in words or "weight" in words:
            return "weights"
        if not [e for e in before if e.signature not in _NO_PHASE]:
            # A bare OOM line: nothing says where. The table's order for a CUDA OOM applies
            # (lower utilization, eager, fewer batched tokens); TP only when the memory
            # model says the weights alone do not fit (weights_alone, below).
            return "unknown"
    return "activation"


def cuda_oom(ctx) -> list[Finding]:
    events = ctx.of("cuda_oom")
    if not events:
        return []
    event = events[0]
    nums = event.fields
    phase = oom_phase(ctx, event)
    evidence = [event.line.strip()[:400]]
    if "total_gib" in nums and "free_gib" in nums:
        evidence.append(
            f"{nums.get('free_gib', 0):.2f} GiB free of {nums['total_gib']:.2f} GiB when "
            f"{nums.get('tried_gib', 0):.2f} GiB more was asked for"
        )
    known = ctx.known("gpu_memory_utilization")
    evidence += own_memory(parse_oom(event.line), ctx.utilization, known)
    foreign = foreign_gib(event.line)
    if foreign is not None and foreign > 0:
        evidence.append(f"other processes hold {foreign:.2f} GiB on this GPU")
    acc = ctx.account
    out: list[Finding] = []
    weights_alone = weights_do_not_fit(ctx)
    if phase == "sleep-wake":
        acts = [
            A.lower_kv_memory(
                ctx,
                None,
                "on wake-up the engine maps back its whole budget (weights + KV cache) while "
                "the other process on this GPU (the trainer) still holds its memory",
            ),
            A.enforce_eager("no CUDA-graph pools to map back on wake-up"),
        ]
        return [
            Finding(
                "cuda-oom-sleep-wake",
                4,
                "error",
                "Out of GPU memory waking the engine from sleep mode",
                tuple(evidence),
                compact_actions(acts),
            )
        ]
    if phase == "weights" or weights_alone:
        out.append(weights_finding(ctx, evidence, weights_alone))
    if foreign_matters(ctx, foreign, total := _number(nums, "total_gib")):
        # vLLM's share must leave the others' memory (and a little slack) on the GPU
        room = (total - foreign) / total - 0.03 if total and foreign else None
        why = "another process's memory is on this GPU too: stop it, or leave it its room"
        acts = [A.lower_kv_memory(ctx, room, why)]
        named = parse_oom(event.line).foreign_named  # an estimate never rules a knob out
        if named and total and foreign and (taken := too_little_left(ctx, total - foreign, total)):
            acts, evidence = [], [*evidence, taken]  # no knob: the GPU must be freed
        out.append(
            Finding(
                "cuda-oom-foreign-process",
                None,
                "error",
                "Out of GPU memory: other processes share this GPU",
                tuple(evidence),
                compact_actions(acts),
            )
        )
    if out:
        return out
    for by_size in (long_context, idle_gpus):
        found = by_size(ctx, event, phase, evidence)
        if found is not None:
            return [found]
    seqs = ctx.knobs.max_num_seqs or (acc.max_num_seqs if acc else 256)
    batched = ctx.knobs.max_num_batched_tokens or (acc.batched_tokens if acc else 2048)
    if phase == "sampler":
        # The message says how many dummy requests were warmed: the max_num_seqs in force. Left
        # unset above V0's 256 it is V1's 1024 default, which vLLM itself put back to 256 below
        # 70 GiB (PR #16158, release_defaults): that value, else half.
        warmed = nums.get("num_reqs")
        seqs = warmed if isinstance(warmed, int) and warmed > 0 else seqs
        back = ctx.knobs.max_num_seqs is None and seqs > V0_MAX_NUM_SEQS
        if back and ctx.known("max_num_seqs"):
            evidence.append(f"max_num_seqs was not set: the release's default {seqs} applied")
        elif back:
            evidence.append(f"the sampler warmed {seqs} dummy requests: the max_num_seqs in force, "
                            "the release's default when it is not set")  # fmt: skip
        acts = [
            A.lower_max_num_seqs(
                seqs,
                V0_MAX_NUM_SEQS if back else None,
                "the sampler warm-up allocates logits for every sequence",
            ),
            A.lower_kv_memory(ctx, None, "leaves room for the sampler's fp32 logits"),
        ]
        title = "Out of GPU memory warming up the sampler (max_num_seqs dummy requests)"
    elif phase == "kv-alloc":
        acts = [
            A.lower_kv_memory(ctx, None, "the KV cache was sized larger than what is free"),
            A.lower_batched_tokens(batched, "a smaller activation peak per step"),
        ]
        title = "Out of GPU memory allocating the KV cache"
    elif phase == "graphs":
        opened = capture_open_at_oom(ctx, event)
        if opened:
            evidence.append(f"the OOM came after vLLM began CUDA-graph capture, which never "
                            f"finished: {opened}")  # fmt: skip
        acts = [
            A.enforce_eager("CUDA-graph capture needs memory outside the KV cache"),
            A.lower_kv_memory(ctx, None, "leaves room for CUDA-graph pools"),
        ]
        version = parse_version(ctx.version)
        if version is None or not is_v1(version):
            # V0 captures one graph per batch size up to max_num_seqs (model_runner.py
            # max_batchsize_to_capture, 0.5-0.10), and its hint says "You can also reduce
            # the `max_num_seqs` as needed to decrease memory usage."
            acts.append(A.lower_max_num_seqs(seqs, None, "V0 captures a graph per batch size "
                                             "up to max_num_seqs: fewer, smaller graphs"))  # fmt: skip
        title = "Out of GPU memory capturing CUDA graphs"
    elif v0_whole_prompt_profile(ctx) and (
        phase != "unknown" or (_number(nums, "tried_gib") or 0.0) >= _WHOLE_PROMPT_TENSOR_GIB
    ):
        # V0 (0.2-0.7) without chunked prefill: max_num_batched_tokens defaults to
        # max(max_model_len, 2048), so the start-up profile runs one whole max_model_len
        # prefill; max_model_len sets the activation peak. A bare OOM line counts as that
        # profile only when the allocation has the size of a whole-prompt tensor: once the KV
        # cache holds the budget, what fails is a small one (tens or hundreds of MiB).
        phase = "activation"
        in_force = length_in_force(ctx)  # the flag, the engine's config line, the model's own
        length = in_force.tokens if in_force is not None else None
        acts = [
            A.lower_max_model_len(length // 2, "V0 profiles one whole max_model_len prefill")
            if length
            else Action(
                "max_model_len",
                "lower",
                None,
                "V0 profiles one whole max_model_len prefill: its activations did not fit",
                "requests longer than this are rejected",
            ),
            A.lower_kv_memory(ctx, None, "leaves room above the profiled activation peak"),
        ]
        title = "Out of GPU memory at the activation peak (a whole max_model_len prefill)"
    elif phase == "unknown":
        # Nothing places the OOM: the memory account decides. When not even the current
        # utilization leaves a KV cache for one request, a lower one is no fix: step 1's
        # search (TP, quantization, a shorter context) answers, never the utilization; the
        # finding's step is its first action's (a shorter context is step 4's knob).
        no_room = no_kv_room(ctx)
        if no_room is not None:
            title = "Out of GPU memory: the weights and activations leave no room for a KV cache"
            why = "the weights and activations leave no KV cache for one request"
            # its own id: a failed allocation the sizes tie to one knob (oom_allocation)
            # says where the OOM was and ranks before it (rank_order)
            return [
                weights_finding(
                    ctx, [*evidence, no_room], None, title, why, finding_id="cuda-oom-no-kv-room"
                )
            ]
        acts = [
            A.lower_kv_memory(ctx, None, "more room outside vLLM's budget for what ran out"),
            A.enforce_eager("no CUDA-graph pools (graph capture needs memory of its own)"),
            A.lower_batched_tokens(batched, "a smaller activation peak per step"),
        ]
        title = "Out of GPU memory (the log does not say where)"
    else:
        acts = [
            A.lower_batched_tokens(batched, "a smaller activation peak per step"),
            A.lower_kv_memory(ctx, None, "leaves room above the profiled activation peak"),
        ]
        title = "Out of GPU memory at the activation peak"
    return [Finding(f"cuda-oom-{phase}", 4, "error", title, tuple(evidence), compact_actions(acts))]


def foreign_matters(ctx, foreign: float | None, total: float | None) -> bool:
    """Others' memory explains the OOM only beyond the share vLLM leaves to the rest of the
    GPU, total x (1 - gpu_memory_utilization); a few hundred MiB of another process's CUDA
    context does not."""
    if not foreign:
        return False
    if total is None:
        return True
    return foreign > total * (1.0 - ctx.utilization)


def v0_whole_prompt_profile(ctx) -> bool:
    """A V0 release (known from the log or the input) whose batch budget was left to default."""
    version = parse_version(ctx.version)
    cmd = ctx.inputs.command
    chunked = cmd.get("enable_chunked_prefill") if cmd is not None else None
    return (
        version is not None
        and not is_v1(version)
        and ctx.knobs.max_num_batched_tokens is None
        and str(chunked).lower() not in {"true", "1", "yes", ""}
    )


RULES = (cuda_oom,)
