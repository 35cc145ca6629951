"""Quantized weights a tensor-parallel size splits off their groups or tiles (step 2).

A quantized matrix is stored in groups (GPTQ/AWQ group_size, 128 mostly), blocks (fp8's
weight_block_size, [128, 128]) or kernel tiles (Marlin's min_thread_n 64 / min_thread_k 128):
each GPU's shard must hold whole ones. vLLM refuses a TP that cuts one, in its words:
- "Weight input_size_per_partition = N is not divisible by group_size = M" / "min_thread_k",
  "output_size_per_partition ... min_thread_n" (marlin_utils.verify_marlin_supports_shape,
  0.4.3-0.25.1: "Consider reducing tensor_parallel_size or running with --quantization gptq");
- "Weight output_partition_size = N is not divisible by weight quantization block_n = M" (fp8
  block, fp8_utils / fp8.py); "The output_size of gate's and up's weight = N ... block_n" and
  "The input_size of down's weight = N ... block_k" (fp8.py's MoE, 0.6.6-0.25.1);
- "... the MoE intermediate size per tensor-parallel partition (N) to be divisible by
  group_size (M) ... use a compatible TP size or enable expert parallelism"
  (compressed_tensors_moe_wna16[_marlin].py, 0.25.1); "MXFP8 MoE requires
  intermediate_size_per_partition divisible by 32, got N" (modelopt.py, 0.20.0+);
- AWQ/GPTQ's "The input size is not aligned with the quantized weight shape. This can be caused
  by too large tensor parallel size." (awq.py/gptq.py, 0.2.7-0.25.1), without numbers.
The full size is the shard times the TP; it holds G = full / M groups, and a TP loads only when
it divides G. A larger TP never helps (it only cuts smaller shards), so the answer is the
largest smaller TP that divides both G and the TP in use (whose heads passed vLLM's check),
with PP keeping the GPUs that held the weights; with the model and GPUs the layout is searched
(candidates.py, G as one more size TP must divide). A MoE's experts can instead go whole to
each GPU: --enable-expert-parallel (0.8+; absent from 0.7.3's arg_utils.py, present in 0.8.5)
keeps the TP and splits the experts, not their width. When no TP at all divides the shape
(full % M != 0), only another kernel (vLLM's own "--quantization gptq") or checkpoint loads.
"""

from __future__ import annotations

import re

from headroom.doctor import actions as A
from headroom.doctor.candidate_actions import fix_actions
from headroom.doctor.findings import Action, Finding
from headroom.doctor.known_knobs import known
from headroom.doctor.memory_model import heads_valid
from headroom.doctor.versions import parse_version

_EP_SINCE = (0, 8, 0)
_MOE_TEXT = re.compile(r"gate's and up's weight|down's weight|MoE intermediate size|MXFP8 MoE")
_ALLOW = frozenset(
    {"tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "max_model_len"}
)
_WHY = "each GPU's shard of a quantized matrix must hold whole quantization groups/blocks"


def _first(ctx, kind: str):
    found = ctx.of(kind)
    return found[0] if found else None


def _int(fields, name: str) -> int | None:
    try:
        value = int(fields.get(name))
    except (TypeError, ValueError):
        return None
    return value if value > 0 else None


def _groups_from_model(model, moe: bool) -> tuple[int | None, str]:
    """(groups, how) from the config when the text carries no numbers: the MLP width over the
    checkpoint's group size (quantization_config.group_size)."""
    config = getattr(model, "quantization_config", None) or {}
    group = config.get("group_size") if hasattr(config, "get") else None
    width = getattr(model, "moe_intermediate_size", None) if moe else None
    width = width or getattr(model, "intermediate_size", None)
    if not isinstance(group, int) or group <= 0 or not width or width % group:
        return None, ""
    return width // group, f"the MLP width {width:,} / group_size {group} = {width // group} groups"


def _kernel_fallback(ctx, line: str, partition: int | None, limit: str) -> str | None:
    """The kernel vLLM's own text offers instead of Marlin, for this checkpoint's method. It
    drops Marlin's tiles (min_thread_n/k), so not when the config's group_size does not divide
    the shard either; a group split it loads only for act-order checkpoints (gptq.py keeps
    their scales whole when the input is sharded), so not when the config says desc_act is off."""
    if "--quantization gptq" not in line:
        return None
    config = getattr(ctx.model_read, "quantization_config", None) or {}
    config = config if hasattr(config, "get") else {}
    group = config.get("group_size")
    if limit == "group_size" and config.get("desc_act") is False:
        return None
    if limit != "group_size" and isinstance(group, int) and group > 0 and partition:
        if partition % group:
            return None
    method = str(getattr(ctx.model_read, "quantization", None) or "").lower()
    name = str(getattr(ctx.inputs.command, "model", None) or "").lower()
    return "awq" if method == "awq" or (not method and "awq" in name) else "gptq"


def quantized_tp_split(ctx) -> list[Finding]:
    event = _first(ctx, "quantized_tp_split")
    if event is None:
        return []
    partition, divisor = _int(event.fields, "partition"), _int(event.fields, "divisor")
    tp = ctx.knobs.tp
    moe = bool(_MOE_TEXT.search(event.line))
    evidence = [event.line.strip()[:400]]
    groups, shape_fits = None, True
    if partition and divisor and tp > 1:
        full = partition * tp
        shape_fits = full % divisor == 0
        if shape_fits:
            groups = full // divisor
            tps = [str(t) for t in range(1, tp + 1) if groups % t == 0]
            which = f"only TP {tps[0]} does" if len(tps) == 1 else f"TP {', '.join(tps)} do"
            evidence.append(
                f"TP {tp} gives each GPU {partition:,} of {full:,} = {groups} groups of "
                f"{divisor}: a TP must divide the {groups} groups ({which})"
            )
        else:
            evidence.append(
                f"{full:,} (the shard x TP {tp}) is not a multiple of {divisor} at any TP: this "
                "kernel cannot run the checkpoint's shape, whatever the TP"
            )
    elif tp > 1 and ctx.model is not None:
        groups, how = _groups_from_model(ctx.model, moe)
        if groups:
            evidence.append(f"{how}: a TP must divide them")
    acts: list[Action] = []
    # No command line nor engine-config line: the TP in force is not known, but vLLM raises
    # these texts only for a shard TP cut ("This can be caused by too large tensor parallel
    # size", awq.py/gptq.py 0.2.7-0.25.1; the MoE texts name the per-partition size)
    tp_unknown = tp <= 1 and not known(ctx, "tensor_parallel_size")
    if tp > 1 and shape_fits:
        acts = lower_tp(ctx, tp, (groups,) if groups else (), evidence)
    elif tp_unknown and not moe and partition is None:  # a shard's numbers: its own reading
        acts = [
            Action(
                "tensor_parallel_size",
                "lower",
                None,
                "vLLM's text: too large a tensor parallel size cuts the quantized weight off its "
                "groups; a smaller TP whose shards hold whole groups loads (the command line "
                "would say which)",
                "fewer GPUs share the weights: more memory per GPU (pipeline parallel keeps them)",
            )
        ]
    elif tp <= 1:
        evidence.append(
            "a tensor-parallel size whose shards the quantization's groups/blocks divide "
            "loads (vLLM's advice: a smaller TP); the command line names the TP to start from"
        )
    if moe and (tp > 1 or tp_unknown) and _has_ep(ctx.version) and not _ep_on(ctx):
        kept = f"TP {tp}" if tp > 1 else "the TP"
        ep = Action(
            "enable_expert_parallel",
            "set",
            True,
            f"the experts go whole to the GPUs ({kept} kept for attention): each expert's "
            "width is no longer split, so its groups/blocks stay whole",
            "all-to-all traffic between the GPUs for the experts",
        )
        only_tp_one = not acts or acts[0].value == 1
        acts = [ep, *acts] if only_tp_one else [*acts, ep]
    kernel = _kernel_fallback(ctx, event.line, partition, str(event.fields.get("divisor_name")))
    if kernel and (acts or not shape_fits):
        acts.append(
            Action(
                "quantization",
                "set",
                kernel,
                f"vLLM's text: the plain {kernel.upper()} kernel has no Marlin tile limits (each GPU "
                "still needs whole quantization groups)",
                f"slower than {kernel.upper()}-Marlin",
            )
        )
    title = "Tensor parallelism splits a quantized weight across its quantization groups"
    return [Finding("quantized-tp-split", 2, "error", title, tuple(evidence), tuple(acts))]


def lower_tp(ctx, tp: int, groups: tuple[int, ...], evidence: list[str]) -> list[Action]:
    """The layout search when model and GPUs are known, else the largest safe TP (half the
    TP when the group counts are unknown) with PP over the GPUs it gives up."""
    if groups and ctx.model is not None and ctx.gpu is not None:
        searched, checked = fix_actions(
            ctx, _WHY + ", and hold the weights", allow=_ALLOW, step=2, tp_divides=groups
        )
        if searched and all(a.value is not None for a in searched):
            evidence.extend(checked)
            # the TP the split sets first (step 2), the PP and budget that go with it after
            return sorted(searched, key=lambda a: a.knob != "tensor_parallel_size")
    fits = [t for t in range(1, tp) if tp % t == 0 and all(g % t == 0 for g in groups)]
    if not groups:
        fits = [t for t in fits if t <= tp // 2]
    if ctx.model is not None:
        fits = [t for t in fits if heads_valid(ctx.model, t)]
    if not fits:
        return []
    return A.lower_tp_keeping_gpus(ctx, tp, max(fits), _WHY)


def _has_ep(version: str | None) -> bool:
    found = parse_version(version)
    return found is None or found >= _EP_SINCE


def _ep_on(ctx) -> bool:
    value = ctx.arg("enable_expert_parallel")
    return value is True or str(value).lower() in ("true", "1")


RULES = (quantized_tp_split,)
