"""vLLM's bare divide() assertion ("AssertionError: 12 is not divisible by 8"): a size split
over the tensor-parallel ranks after the heads check passed (step 2).

vLLM checks the language model's attention heads against TP before it builds anything
(`ModelConfig.verify_with_parallel_config`, config.py in every release from 0.2.7 to 0.25.1:
"Total number of attention heads (N) must be divisible by tensor parallel size (M)"). So when
`divide()` (vllm/distributed/utils.py, `ensure_divisibility`) fails while the model is built,
the count is not those heads but something split later:
- the KV heads, in QKVParallelLinear: `divide(total_num_kv_heads, tp_size)` when TP is at
  most their number ("8 is not divisible by 6"), else `divide(tp_size, total_num_kv_heads)`,
  the replication ("6 is not divisible by 4": TP first);
- a vision encoder's heads (vision_towers.py: GLM-4.xV's 12 over TP 8, vllm#24004);
- a layer's width (an MLP's intermediate size, ColumnParallelLinear).
Whatever it is, the TP in use divides the model's heads (the check passed), so every divisor
of the TP in use that also divides the count passes both: the largest is the answer when
nothing else is known, with PP taking the GPUs TP gives up (the same GPUs hold the weights).
With the model and GPUs known the layout is searched (candidates.py) with the count as one
more size TP must divide.
"""

from __future__ import annotations

from headroom.doctor import actions as A
from headroom.doctor.candidate_actions import fix_actions
from headroom.doctor.findings import Action, Finding
from headroom.doctor.memory_model import heads_valid
from headroom.doctor.versions import format_version
from headroom.doctor.vision_towers import TOWERS, VisionTower, data_mode_available, tower_for

_ALLOW = frozenset(
    {"tensor_parallel_size", "pipeline_parallel_size", "gpu_memory_utilization", "max_model_len"}
)


def split_counts(ctx, numerator: int, denominator: int) -> tuple[int, int, bool]:
    """(count, TP, replication): which number of "N is not divisible by M" is the TP. The
    replication's divide(tp, kv) puts the TP first; the command line's TP tells them apart
    (without one, the TP is the second number, as in every other divide())."""
    tp = ctx.knobs.tp
    if tp > 1 and tp == numerator and tp != denominator:
        return denominator, numerator, True
    return numerator, (tp if tp > 1 else denominator), False


def safe_tps(count: int, tp: int, replication: bool) -> list[int]:
    """The TPs below `tp` known to pass both the heads check and this split without the
    model: divisors of the TP in use (the heads divide by it), that divide the count (or,
    for the replication, that the KV heads divide or are divided by)."""
    out = []
    for t in range(1, tp):
        if tp % t:
            continue
        if (count % t == 0 or t % count == 0) if replication else count % t == 0:
            out.append(t)
    return out


def divide_finding(ctx, event) -> list[Finding]:
    found = event.fields
    count, tp, replication = split_counts(ctx, int(found["numerator"]), int(found["denominator"]))
    model = ctx.model_read
    name = getattr(ctx.inputs.command, "model", None) or getattr(model, "name", None)
    frames = "\n".join(ctx.lines_before(event, 40))
    tower = None
    if not replication and not _is_language_kv(model, count):
        tower = tower_for(count, model_name=name, architecture=getattr(model, "architecture", None),
                          frames=frames)  # fmt: skip
    return split_finding(ctx, count, tp, replication, tower, [event.line.strip()[:300]])


def other_part_finding(ctx, event) -> list[Finding] | None:
    """A bare heads assertion ("assert self.total_num_heads % tp_size == 0", no numbers) when
    the language model's heads pass TP: the heads are a vision encoder's the model's
    architecture or name names (vision_towers.py), split like a divide() count; None when no
    encoder is known (the caller says what it can)."""
    model = ctx.model_read
    name = getattr(ctx.inputs.command, "model", None) or getattr(model, "name", None)
    frames = "\n".join(ctx.lines_before(event, 40))
    arch = getattr(model, "architecture", None)
    for heads in sorted({t.heads for t in TOWERS}):
        tower = tower_for(heads, model_name=name, architecture=arch, frames=frames, guess=False)
        if tower is not None:
            if ctx.knobs.tp % tower.heads == 0 or tower.heads % ctx.knobs.tp == 0:
                continue  # this encoder's heads pass the TP in use: not the one refused
            evidence = [event.line.strip()[:300]]
            return split_finding(ctx, tower.heads, ctx.knobs.tp, False, tower, evidence)
    return None


def split_finding(ctx, count: int, tp: int, replication: bool, tower, evidence) -> list[Finding]:
    """The finding for `count` split over `tp` (see the module docstring)."""
    model = ctx.model_read
    if tower is not None and not tower.released:
        return [_unreleased_split(ctx, tower, tp, evidence)]
    what = _what(model, count, tp, replication, tower)
    evidence.append(
        f"{what}; vLLM checked the language model's heads against TP {tp} before building "
        f"the model, so a divisor of {tp} that also passes this split passes both"
    )
    why = f"the largest TP that divides {tp} (whose heads pass) and {_short(what)}"
    acts: list[Action] = []
    if ctx.model is not None and ctx.gpu is not None:
        divides = () if replication or _is_language_kv(ctx.model, count) else (count,)
        extra = f" and {_short(what)}" if divides else ""
        searched, checked = fix_actions(
            ctx,
            f"the TP that divides the heads and KV heads{extra}, and holds the weights and "
            "one request",
            allow=_ALLOW,
            step=2,
            tp_divides=divides,
        )
        if searched and all(a.value is not None for a in searched):
            acts, evidence = searched, evidence + checked
    if not acts:
        acts = _unsized(ctx, count, tp, replication, why)
    tp_heads_pass = ctx.model is None or heads_valid(ctx.model, tp)
    if tower is not None and tp_heads_pass and data_mode_available(tower, ctx.version):
        acts.append(_data_mode(tower, tp))
    title = f"Tensor parallel size {tp} does not divide {_short(what)}"
    return [Finding("tp-heads-not-divisible", 2, "error", title, tuple(evidence), tuple(acts))]


def _is_language_kv(model, count: int) -> bool:
    return model is not None and count == getattr(model, "num_kv_heads", None)


def _what(model, count: int, tp: int, replication: bool, tower: VisionTower | None) -> str:
    if replication:
        return (
            f"the model's {count} KV heads: TP {tp} is above them, so vLLM replicates each "
            f"KV head over TP / {count} GPUs, and {count} does not divide {tp}"
        )
    if tower is not None:
        return (
            f"{tower.name}'s {count} attention heads: vLLM splits them over TP ({tower.module}.py)"
        )
    if _is_language_kv(model, count):
        return f"the model's {count} KV heads: QKVParallelLinear splits them over TP"
    if model is not None and count in (model.intermediate_size, model.moe_intermediate_size):
        return f"the model's MLP width {count}: vLLM splits it over TP"
    return (
        f"a size of {count} that vLLM splits over TP after the heads check (KV heads, a "
        "vision encoder's heads or a layer's width)"
    )


def _short(what: str) -> str:
    return what.split(":")[0]


def _unsized(ctx, count: int, tp: int, replication: bool, why: str) -> list[Action]:
    """Without the model and GPUs: the largest safe TP, and PP over the GPUs it gives up
    (on a release with PP) so that the same GPUs hold the weights."""
    fits = safe_tps(count, tp, replication)
    if not fits:
        return []
    return A.lower_tp_keeping_gpus(ctx, tp, max(fits), why)


def _data_mode(tower: VisionTower, tp: int) -> Action:
    return Action(
        "mm_encoder_tp_mode",
        "set",
        "data",
        f"keeps TP {tp} for the language model: each GPU runs {tower.name} whole on its share "
        "of the images instead of splitting its heads",
        "the vision encoder's weights on every GPU",
    )


def _unreleased_split(ctx, tower: VisionTower, tp: int, evidence: list[str]) -> Finding:
    since = format_version(tower.unsplit_since) if tower.unsplit_since else "a later release"
    version = f" (this build: {ctx.version})" if ctx.version else ""
    evidence.append(
        f"not a configuration problem{version}: {tower.name}'s {tower.heads} heads are split "
        f"over TP {tp} only by development builds; vLLM {since} and later run its attention "
        "unsplit when TP does not divide them (vllm#8061, the answer to vllm#8097): install a "
        "release; the TP can stay"
    )
    title = f"This vLLM build splits {tower.name}'s {tower.heads} heads over TP (upgrade)"
    return Finding("vision-heads-split-fixed", None, "error", title, tuple(evidence), ())


def vision_heads_before_start(ctx) -> list[Finding]:
    """No log yet: a vision encoder the model names (vision_towers.py) whose heads the TP does
    not divide, in a release that splits them without a fallback, is refused at load as
    "N is not divisible by TP" (GLM-4.5V's 12 heads at TP 8, vllm#24004), unless
    --mm-encoder-tp-mode data runs the encoder whole."""
    tp = ctx.knobs.tp
    if tp <= 1 or ctx.events or str(ctx.arg("mm_encoder_tp_mode") or "") == "data":
        return []
    model = ctx.model_read
    name = getattr(ctx.inputs.command, "model", None) or getattr(model, "name", None)
    arch = getattr(model, "architecture", None)
    if ctx.model is not None and not heads_valid(ctx.model, tp):
        return []  # the language model's heads fail first (rules_parallel.heads_not_divisible)
    for heads in sorted({t.heads for t in TOWERS}):
        tower = tower_for(heads, model_name=name, architecture=arch, guess=False)
        if tower is None or not tower.released or heads % tp == 0:
            continue
        evidence = [
            f"{tower.name} has {heads} attention heads, which vLLM splits over TP "
            f"({tower.module}.py): TP {tp} is refused at load ('{heads} is not divisible by {tp}')"
        ]
        return split_finding(ctx, heads, tp, False, tower, evidence)
    return []
