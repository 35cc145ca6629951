"""Before any log: a TP that would split a quantized checkpoint's groups or blocks (step 2).

The refusals rules_quant_tp.py reads from a log follow from the checkpoint's config alone:
vLLM cuts each MLP width over TP (ColumnParallelLinear / RowParallelLinear for the dense MLP
and the shared experts; FusedMoE for the experts, unless --enable-expert-parallel keeps them
whole), and every shard must hold whole quantization groups:
- GPTQ/AWQ `group_size` (marlin_utils.verify_marlin_supports_shape, awq.py/gptq.py: "The input
  size is not aligned with the quantized weight shape"), compressed-tensors'
  `config_groups.*.weights.group_size` (strategy "group");
- fp8's `weight_block_size` [block_n, block_k] (fp8_utils / fp8.py: "... is not divisible by
  weight quantization block_n"; the MoE's "gate's and up's weight").
Only a config read from the checkpoint says its group sizes and widths (a quantized
checkpoint may pad its MLP: Qwen2.5-72B-Instruct-AWQ's is 29696 where the 16-bit model's is
29568), so nothing is said for a shape from the built-in table.
"""

from __future__ import annotations

from collections.abc import Mapping

from headroom.doctor.findings import Finding
from headroom.doctor.rules_quant_tp import lower_tp


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def checkpoint_blocks(config) -> tuple[int, ...]:
    """The sizes a shard of this quantization_config must be a multiple of (() if unknown)."""
    if not isinstance(config, Mapping):
        return ()
    block = config.get("weight_block_size")
    if isinstance(block, list | tuple) and block and all(_int(b) for b in block):
        return tuple(dict.fromkeys(int(b) for b in block))
    group = _int(config.get("group_size"))
    if group:
        return (group,)
    found = []
    for spec in (config.get("config_groups") or {}).values():
        weights = spec.get("weights") if isinstance(spec, Mapping) else None
        if isinstance(weights, Mapping) and weights.get("strategy") == "group":
            size = _int(weights.get("group_size"))
            if size:
                found.append(size)
    return tuple(dict.fromkeys(found))


def _ep_on(ctx) -> bool:
    value = ctx.arg("enable_expert_parallel")
    return value is True or str(value).lower() in ("true", "1")


def quantized_split_before_start(ctx) -> list[Finding]:
    model, tp = ctx.model_read, ctx.knobs.tp
    if model is None or tp <= 1 or ctx.events or model.source == "built-in table":
        return []
    blocks = checkpoint_blocks(model.quantization_config)
    if not blocks:
        return []
    widths = [("intermediate_size", model.intermediate_size),
              ("shared_expert_intermediate_size", model.shared_expert_intermediate_size)]  # fmt: skip
    if not _ep_on(ctx):
        widths.append(("moe_intermediate_size", model.moe_intermediate_size))
    broken, groups = [], []
    for name, width in widths:
        if not _int(width):
            continue
        for block in blocks:
            if width % block:
                continue  # the checkpoint itself is not in whole groups: not TP's doing
            groups.append(width // block)
            if (width // block) % tp:
                broken.append(
                    f"{name} {width:,} / TP {tp} = {width / tp:,.1f}, not a multiple of {block}"
                )
    if not broken:
        return []
    evidence = [
        f"config.json of {model.name}: " + "; ".join(broken),
        "vLLM refuses a TP that splits a quantized weight off its groups or blocks at load "
        '("... is not divisible by group_size", "... not aligned with the quantized weight '
        'shape", "... weight quantization block_n")',
    ]
    acts = lower_tp(ctx, tp, tuple(dict.fromkeys(groups)), evidence)
    title = "This TP would split the checkpoint's quantization groups"
    return [Finding("quantized-tp-split", 2, "error", title, tuple(evidence), tuple(acts))]


RULES = (quantized_split_before_start,)
