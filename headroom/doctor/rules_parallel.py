"""TP/PP configuration errors from the log: heads that TP does not divide (step 2), TP spread
over nodes and models without PP support (step 3). More GPUs than the node has, data-parallel
and expert-parallel sizes: rules_parallel_sizes.py; divide() assertions: rules_parallel_split.py."""

from __future__ import annotations

import math
import os
import re
from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.candidate_actions import fix_actions
from headroom.doctor.findings import Action, Finding
from headroom.doctor.memory_model import account, heads_valid
from headroom.doctor.model_bytes import weights_gib_per_gpu
from headroom.doctor.pp_support import NEWEST_READ, PP_SINCE
from headroom.doctor.rules_parallel_split import (
    divide_finding,
    other_part_finding,
    vision_heads_before_start,
)
from headroom.doctor.tp_nodes_note import note_reason
from headroom.doctor.versions import parse_version


def heads_not_divisible(ctx) -> list[Finding]:
    events = ctx.of("heads_not_divisible", "kv_heads_not_divisible")
    if events:
        event = events[0]
        found = event.fields  # heads_not_divisible: heads, tp (the KV-heads event has none)
        nums = (found["heads"], found["tp"]) if "heads" in found and "tp" in found else None
        if nums is None and found.get("numerator") and found.get("denominator"):
            # vLLM's divide() assertion (vllm/distributed/utils.py): a size split after the
            # heads check passed (KV heads, a vision encoder's heads, a layer's width).
            return divide_finding(ctx, event)
        lm_passes = ctx.model is not None and heads_valid(ctx.model, ctx.knobs.tp)
        if nums is None and (ctx.model is None or lm_passes):
            # a bare assertion: a vision encoder the model or traceback names, or (when the
            # language model's heads pass) another part's heads
            found = other_part_finding(ctx, event)
            if found or lm_passes:
                return found or [_other_part(ctx, event)]
        evidence = [event.line.strip()]
    elif ctx.model is not None and not heads_valid(ctx.model, ctx.knobs.tp):
        # No log yet: the command line alone would be refused at start-up (a check before
        # launch must not exit 0 beside a failed step 2).
        nums = (ctx.model.num_attention_heads, ctx.knobs.tp)
        evidence = [
            f"TP {ctx.knobs.tp} does not divide {ctx.model.num_attention_heads} heads and "
            f"{ctx.model.num_kv_heads} KV heads: vLLM refuses this command line at start-up"
        ]
    else:
        return []
    tp = nums[1] if nums else ctx.knobs.tp
    if ctx.model is not None:
        evidence.append(
            f"{ctx.model.num_attention_heads} attention heads, {ctx.model.num_kv_heads} KV heads; "
            "TP must divide both, or be a multiple of the KV heads (vLLM then replicates them)"
        )
    # With the model and the GPUs known, the TP is searched: it must divide the heads AND
    # hold the weights and one request (TP 2 divides 52 heads, but the weights may need 4).
    why = "the smallest TP that divides the heads and holds the weights and one request"
    searched, checked = fix_actions(
        ctx, why, allow=frozenset({"tensor_parallel_size", "pipeline_parallel_size",
                                   "gpu_memory_utilization", "max_model_len"}), step=2,
    )  # fmt: skip
    if searched:
        return [
            Finding(
                "tp-heads-not-divisible",
                2,
                "error",
                f"Tensor parallel size {tp} does not divide the model's heads",
                tuple(evidence + checked),
                tuple(searched),
            )
        ]
    value = _nearest_tp(ctx, tp, nums[0] if nums else None)
    direction = "set" if value is None else ("lower" if value < tp else "raise")
    acts = [
        Action(
            "tensor_parallel_size",
            direction,
            value,
            "the nearest TP that divides the heads",
            "a different number of GPUs" if value else "",
            step=2,
        )
    ]
    return [
        Finding(
            "tp-heads-not-divisible",
            2,
            "error",
            f"Tensor parallel size {tp} does not divide the model's heads",
            tuple(evidence),
            tuple(acts),
        )
    ]


def _other_part(ctx, event) -> Finding:
    """The language model's heads pass TP, yet a heads assertion failed: a part the table does
    not know (a vision encoder, a draft model) has heads TP does not divide."""
    model, tp = ctx.model, ctx.knobs.tp
    evidence = (
        event.line.strip(),
        f"the language model's {model.num_attention_heads} heads / {model.num_kv_heads} KV heads "
        f"pass TP {tp}: another part of the checkpoint (a vision encoder, a draft model) has "
        "heads TP does not divide; the traceback's model file names it",
    )
    action = Action(
        "tensor_parallel_size",
        "set",
        None,
        "a TP that divides that part's heads too (its config's num_attention_heads / num_heads)",
        "a different number of GPUs",
        step=2,
    )
    title = f"Tensor parallel size {tp} does not divide the heads of a part of the model"
    return Finding("tp-heads-not-divisible", 2, "error", title, evidence, (action,))


def _nearest_tp(ctx, tp: int, heads: int | None) -> int | None:
    model, limit = ctx.model, (ctx.gpu_count or max(tp, 8))
    if model is not None:
        candidates = A.valid_tps(model, limit)
    elif heads:
        floor = _tp_floor_from_name(ctx)
        if floor is not None and floor > 1:
            # Weights sized from the name: the TP that divides the heads must also hold
            # them (52 heads, TP 3, a 33B model on 32 GiB GPUs: TP 2 cannot, TP 4 can),
            # even when that means more GPUs than the node has.
            above = _kv_safe([t for t in range(floor, heads + 1) if heads % t == 0])
            if above:
                return min(above, key=lambda t: (abs(t - tp), t))
        candidates = _kv_safe([t for t in range(1, limit + 1) if heads % t == 0])
    else:
        return None
    fitting = [t for t in candidates if _fits(ctx, t)] or candidates
    # Nearest; on a tie the smaller TP (the GPUs for it surely exist), unless the GPUs'
    # memory is unknown and the smaller TP puts more of the model's weights on each GPU
    # than a 24 GiB card (the commonest of the field's multi-GPU boxes) holds beside its
    # cache: TP 3 of Yi-34B (68 GB) fails its 56 heads, and TP 2 would need 34 GB a GPU
    # where TP 4 needs 17 (lm-sys/FastChat#2771: 'For 24gb gpus, you need 4 of them').
    upward = model is not None and ctx.gpu is None and _heavy_below(model, tp, fitting)
    return min(fitting, key=lambda t: (abs(t - tp), -t if upward else t)) if fitting else None


_WEIGHTS_A_SMALL_GPU_HOLDS_GIB = 24 * 0.9 - 4  # a 24 GiB card at 0.9, a few GiB kept for the rest


def _heavy_below(model, tp: int, candidates: list[int]) -> bool:
    below = [t for t in candidates if t < tp]
    if not below:
        return False
    try:
        return weights_gib_per_gpu(model, max(below), 1) > _WEIGHTS_A_SMALL_GPU_HOLDS_GIB
    except (ArithmeticError, AttributeError, TypeError, ValueError):
        return False


def _kv_safe(tps: list[int]) -> list[int]:
    """With the KV heads unknown, the powers of two among `tps` when there are any: nearly
    every GQA model's KV heads are a power of two (1, 2, 4, 8, 16), which a power-of-two TP
    divides or is a multiple of; 40 heads at TP 6 was answered TP 5, which fails the 8 KV
    heads of Qwen2.5-14B/32B and Qwen1.5-32B (TP 4 passes)."""
    return [t for t in tps if t & (t - 1) == 0] or tps


# "Qwen1.5-72B-Chat", "LLaMA-33B", "Mixtral-8x7B": the parameter count a name carries.
_PARAMS_IN_NAME = re.compile(r"(?<![\w.])(?:(\d+)x)?(\d+(?:\.\d+)?)[bB](?![a-zA-Z])")
_FOUR_BIT = re.compile(r"awq|gptq|int4|4bit|4-bit|nf4|w4a16", re.IGNORECASE)
_EIGHT_BIT = re.compile(r"fp8|int8|8bit|8-bit|w8a8", re.IGNORECASE)


def params_b_from_name(name: str) -> float | None:
    """Billions of parameters the model's name carries ("Llama-2-70b-hf": 70), or None."""
    match = _PARAMS_IN_NAME.search(os.path.basename(str(name).rstrip("/")))
    if match is None:
        return None
    return float(match.group(2)) * (int(match.group(1)) if match.group(1) else 1)


def bytes_per_param_from_name(name: str) -> float | None:
    """Bytes per weight the name says (4-bit 0.55, 8-bit 1.0), None when it says none."""
    return 0.55 if _FOUR_BIT.search(name) else 1.0 if _EIGHT_BIT.search(name) else None


def weights_gib_from_name(name: str) -> float | None:
    """All the weights in GiB, from the parameter count a model's name carries and the
    bits its name says (None when the name carries no count). Coarse by design: for when
    no config is at hand."""
    params_b = params_b_from_name(name)
    if params_b is None:
        return None
    per_param = bytes_per_param_from_name(name) or 2.0
    return params_b * 1e9 * per_param / 2**30


def _tp_floor_from_name(ctx) -> int | None:
    """The least TP whose share of the weights fits one GPU, sized from the parameter count
    in the model's name when no config is at hand (None when the name or the GPU memory
    says nothing). Deliberately coarse: it only decides on which side of the current TP
    a divisor of the heads must lie, never the KV budget."""
    cmd, gpu = ctx.inputs.command, ctx.gpu
    weights_gib = weights_gib_from_name(getattr(cmd, "model", None) or "")
    if weights_gib is None or gpu is None or not gpu.usable_gib:
        return None
    budget = gpu.min_usable_gib * (ctx.knobs.gpu_memory_utilization or 0.9)
    return max(1, math.ceil(weights_gib / budget)) if budget > 0 else None


def _fits(ctx, tp: int) -> bool:
    if ctx.model is None or ctx.gpu is None:
        return True
    from dataclasses import replace

    acc = account(ctx.model, ctx.gpu, replace(ctx.knobs, tp=tp), ctx.version)
    return acc.fits


def gpus_per_node(ctx, nodes: int) -> tuple[int | None, str]:
    """GPUs in one node and where that number comes from: --gpus / NVML describe one node;
    else vLLM's --nnodes splits the world size evenly over the nodes."""
    if ctx.gpu_count:
        return ctx.gpu_count, "the GPU description"
    world = ctx.knobs.tp * ctx.knobs.pp * (_int(ctx.arg("data_parallel_size")) or 1)
    if nodes > 1 and world % nodes == 0:
        return world // nodes, f"world size {world} over {nodes} nodes"
    return None, ""


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def tp_across_nodes(ctx) -> list[Finding]:
    """TP larger than one node: every layer's all-reduce crosses the network between nodes.
    Step 3's answer: TP = GPUs per node inside each node, PP across the nodes."""
    nodes = ctx.nodes
    tp, pp = ctx.knobs.tp, ctx.knobs.pp
    if nodes < 2 or ctx.of("world_size_too_large"):
        return []
    per_node, source = gpus_per_node(ctx, nodes)
    if not per_node or tp <= per_node:
        return []
    valid = A.valid_tps(ctx.model, per_node) if ctx.model is not None else [per_node]
    new_tp = max([t for t in valid if t <= per_node and (tp * pp) % t == 0] or [0])
    if not new_tp:
        return []
    new_pp = tp * pp // new_tp
    evidence = [
        f"TP {tp} > {per_node} GPUs per node ({source}): TP {tp} spans "
        f"{-(-tp // per_node)} nodes, so every layer's all-reduce crosses the network",
        f"TP {new_tp} x PP {new_pp} = {new_tp * new_pp} GPUs, the same as TP {tp} x PP {pp}: "
        f"TP stays inside each node, PP moves one activation per step between the {nodes} nodes",
    ]
    evidence += [e.line.strip() for e in ctx.of("non_default_args")[:1]]
    acts = (
        Action(
            "tensor_parallel_size",
            "lower",
            new_tp,
            f"TP inside a node: {new_tp} GPUs over the node's fast links",
            "pipeline bubbles at low concurrency",
            also=(("pipeline_parallel_size", new_pp),),
        ),
        Action(
            "pipeline_parallel_size",
            "raise",
            new_pp,
            f"PP across the {nodes} nodes takes the GPUs TP gives up",
            "pipeline bubbles at low concurrency",
            also=(("tensor_parallel_size", new_tp),),
        ),
    )
    reason = note_reason(ctx, per_node)
    if reason is not None:
        # The layout is said without a knob that claims to fix it (tp_nodes_note).
        evidence.append(reason)
        return [Finding("tp-across-nodes", 3, "info",
                        f"Tensor parallel size {tp} spans nodes of {per_node} GPUs (speed)",
                        tuple(evidence))]  # fmt: skip
    return [
        Finding(
            "tp-across-nodes",
            3,
            "warning",
            f"Tensor parallel size {tp} spans nodes of {per_node} GPUs",
            tuple(evidence),
            acts,
        )
    ]


_PP_TEXT_SINCE = (0, 6, 4)  # "... implement the `SupportsPP` interface": config.py 0.6.4.post1+


def pp_unsupported(ctx) -> list[Finding]:
    """ "Pipeline parallelism is not supported for this model. Supported models implement the
    `SupportsPP` interface." (config 0.6.4+). vLLM adds PP support model by model
    (doctor/pp_support.py, read from 18 releases: 274 architectures gained it between 0.5.5 and
    0.33.0), and the field's answer is an upgrade (vllm#16231 Llama 4: "rebase to latest main,
    it should be supported"; #45455 MiniMax-M3, #33685 Step3p5: PRs that add SupportsPP;
    #54635: the MTP drafters). So: an architecture a later release runs PP is an upgrade; one
    no release read runs PP gets the layout without PP (the GPUs as TP); an architecture the
    input does not name is an upgrade to look up, with that layout as the way to start now."""
    events = ctx.of("pp_unsupported")
    if not events:
        return []
    total = ctx.knobs.tp * ctx.knobs.pp
    named = ctx.of("resolved_architecture")
    arch = named[0].fields.get("architecture") if named else None
    arch = arch or getattr(ctx.model_read, "architecture", None)
    since = PP_SINCE.get(str(arch)) if arch else None
    version = parse_version(ctx.version)
    evidence = [events[0].line.strip()]
    acts = [
        Action(
            "pipeline_parallel_size",
            "lower",
            1,
            "this model has no pipeline-parallel support",
            "all GPUs must go to tensor parallelism",
        )
    ]
    if ctx.model is None or total in A.valid_tps(ctx.model, total):
        acts[0] = replace(acts[0], also=(("tensor_parallel_size", total),))
        acts.append(
            Action(
                "tensor_parallel_size",
                "raise",
                total,
                "use the same GPUs as tensor parallel",
                "all-reduce on every layer: needs fast links",
            )
        )
    workaround = (
        "to start on this release meanwhile: --pipeline-parallel-size 1"
        + (f" --tensor-parallel-size {total}" if len(acts) > 1 else "")
        + " (the GPUs as TP, where the heads divide)"
    )
    # The text exists from 0.6.4 on: an unknown release is at least that one.
    if since and (version or _PP_TEXT_SINCE) < (parse_version(since) or _PP_TEXT_SINCE):
        evidence.append(
            f"not a configuration problem: vLLM {since} and later run {arch} pipeline "
            f"parallel (the first release read that does): upgrade; {workaround}"
        )
        title = f"This vLLM release cannot run {arch} pipeline parallel (upgrade)"
        return [Finding("pp-unsupported-upgrade", None, "error", title, tuple(evidence), ())]
    if arch is None:
        evidence.append(
            "not a configuration problem: vLLM adds pipeline parallelism model by model, and "
            "releases after the one in use run it for more architectures (an upgrade, or the "
            f"PR that adds SupportsPP to the model); {workaround}"
        )
        title = "This model has no pipeline parallelism in this vLLM (upgrade)"
        return [Finding("pp-unsupported-upgrade", None, "error", title, tuple(evidence), ())]
    if since is None:
        evidence.append(f"no release read (up to {NEWEST_READ}) runs {arch} pipeline parallel")
    else:  # supported by this release: the refusal is about another model (a draft model)
        evidence.append(
            f"{arch} runs PP from vLLM {since}: the model refused is likely another one (a speculative "
            "decoding draft model without SupportsPP, or an architecture other than the one named); "
            "without PP, or without the draft model"
        )
    return [
        Finding(
            "pp-unsupported",
            3,
            "error",
            "This model cannot run pipeline parallel",
            tuple(evidence),
            tuple(acts),
        )
    ]


# world_size_too_large: rules_parallel_sizes.py
RULES = (heads_not_divisible, vision_heads_before_start, tp_across_nodes, pp_unsupported)
