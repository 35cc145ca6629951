"""The words ask what GPUs a model needs: the answer is a layout (more TP or PP), not a smaller
request.

Length need. The words ask what GPUs a context length needs (step 1): the length is the requirement.

"请问一下需要多少显存才能跑支持max_model_len为1M的大模型" (zai-org/GLM-4#149, answered: 8 H100),
"开启1M上下文，至少需要多少显存" (MiniMax-AI/MiniMax-M1#2, answered: 8x141 GB), "the minimum VRAM
needed to use entire context length" (vllm-project/vllm#8188): probes.symptom_layout
reads the length. A shorter max_model_len, the answer to a KV shortage nobody asked a length
for, is no answer here; step 1 is: the lowest TP (x PP) whose GPUs hold the weights and one
request of that length, searched with the memory model on up to 8 GPUs of the kind given
(the person asks how many; the given count is what fails). Without the model's shape or the
GPUs' size, TP is raised without a value and the evidence says which one is missing.

Placement words. Hugging Face's layer placement named for vLLM (step 1): device_map / max_memory
do not
exist in vLLM, which splits a model over GPUs with tensor_parallel_size, or
pipeline_parallel_size where the GPU count does not divide the heads (probes.symptom_layout
names the threads: vllm#196, #1752, #6601, ms-swift#3363).

Only while the TP in force is 1 or not known (a TP above 1 already splits the model), never
beside a failure the log records (its own rules answer it). With the GPU count and the model
known, TP is the largest count of those GPUs that divides the heads and PP takes the rest
(vllm#6601: three 4090s, PP 3); else TP is raised without a value.
"""

from __future__ import annotations

from dataclasses import replace

from headroom.doctor import actions as A
from headroom.doctor.candidate_actions import fix_actions
from headroom.doctor.findings import Action, Finding, compact_actions

__all__ = []


# --- length need ----------------------------------------------------------------------------------

_WHY = "the weights and one request of the length asked for must fit the GPUs' KV cache"

_COST = "more GPUs, and an all-reduce on every layer: fast over NVLink, slow over PCIe"

_SEARCH_GPUS = 8  # one node of the kind given: the question is how many

_ALLOW = frozenset({"tensor_parallel_size", "pipeline_parallel_size"})


class _Sized:
    """The context with the GPUs and the knobs of the question (its length, more GPUs)."""

    def __init__(self, ctx, gpu, knobs) -> None:
        self._ctx, self.gpu, self.knobs = ctx, gpu, knobs
        self.gpu_count = gpu.count

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def _more_of(gpu, count: int):
    groups = ((count, gpu.name, gpu.usable_gib),) if len(gpu.groups) <= 1 else gpu.groups
    return replace(gpu, count=count, groups=groups) if len(gpu.groups) <= 1 else gpu


def _as_advice(action: Action, have: int) -> Action:
    """A layout on more GPUs than the input gives is advice (no value to apply): the GPUs
    to get, named in its reason."""
    if action.knob not in _ALLOW or not isinstance(action.value, int):
        return action
    sizes = {"tensor_parallel_size": 1, "pipeline_parallel_size": 1, **dict(action.also)}
    sizes[action.knob] = action.value
    tp, pp = int(str(sizes["tensor_parallel_size"])), int(str(sizes["pipeline_parallel_size"]))
    if tp * pp <= have:
        return action
    return replace(action, value=None, also=(),
                   why=f"{action.why}: TP {tp} x PP {pp} on {tp * pp} GPUs of this kind "
                   f"({have} given)")  # fmt: skip


def length_needs_gpus(ctx) -> list[Finding]:
    words = getattr(ctx, "words", None)
    if words is None or words.length_wanted is None:
        return []
    model, gpu = ctx.model, ctx.gpu
    length = words.length_wanted or getattr(model, "max_position_embeddings", None)
    evidence = [words.text[:400]]
    said = f"{length:,} tokens" if length else "the model's full context length"
    evidence.append(f"the words ask what {said} of context need: the length is the requirement")
    acts: list[Action] = []
    if model is not None and gpu is not None and length:
        count = max(gpu.count, _SEARCH_GPUS)
        view = _Sized(ctx, _more_of(gpu, count), replace(ctx.knobs, max_model_len=length))
        acts, checked = fix_actions(view, _WHY, want_tokens=length, allow=_ALLOW, step=1)
        evidence += checked
        evidence.append(f"searched on up to {count} GPUs of {gpu.usable_gib:.2f} GiB")
        acts = [_as_advice(a, gpu.count) for a in acts
                if (a.knob, a.direction) != ("max_model_len", "lower")]  # fmt: skip
    else:
        missing = [
            n for n, v in (("the model's shape", model), ("the GPUs' memory", gpu)) if v is None
        ]
        evidence.append(f"{' and '.join(missing) or 'the length'} not given: no GPU count computed")
    if not acts:
        acts = [Action("tensor_parallel_size", "raise", None, f"{_WHY}: TP splits both over more GPUs",
                       _COST, step=1)]  # fmt: skip
    return [Finding("words-length-needs-gpus", 1, "warning",
                    f"The GPUs {said} of context need, not a shorter length",
                    tuple(evidence), compact_actions(acts))]  # fmt: skip


# --- placement words ------------------------------------------------------------------------------

_PLACEMENT_WORDS_WHY = (
    "vLLM has no device_map or max_memory: it splits a model over GPUs with TP (or PP)"
)

_PLACEMENT_WORDS_COST = "an all-reduce on every layer: fast over NVLink, slow over PCIe"


def placement_named(ctx) -> list[Finding]:
    words = getattr(ctx, "words", None)
    if words is None or not words.placement_named:
        return []
    if ctx.known("tensor_parallel_size") and ctx.knobs.tp > 1:
        return []
    evidence = [words.text[:400], "no vLLM release has a device_map or max_memory engine arg "
                "(arg_utils.py); Hugging Face Accelerate's placement does not reach vLLM"]  # fmt: skip
    gpus = ctx.gpu_count or words.gpus_at_hand
    acts: list[Action | None] = []
    if gpus and gpus > 1 and ctx.model is not None:
        tp = max(t for t in A.valid_tps(ctx.model, gpus) if gpus % t == 0)
        if tp > 1:
            acts.append(Action("tensor_parallel_size", "raise", tp, f"{_PLACEMENT_WORDS_WHY}: TP {tp} over "
                               f"{tp} of the {gpus} GPUs", _PLACEMENT_WORDS_COST, step=1))  # fmt: skip
        if gpus // tp > 1:
            acts.append(A.raise_pp(ctx, gpus // tp, f"{_PLACEMENT_WORDS_WHY}: PP {gpus // tp} takes the GPUs "
                                   "whose count does not divide the heads"))  # fmt: skip
    if not [a for a in acts if a is not None]:
        acts = [Action("tensor_parallel_size", "raise", gpus if gpus and gpus > 1 else None,
                       f"{_PLACEMENT_WORDS_WHY}: TP over the GPUs at hand", _PLACEMENT_WORDS_COST, step=1)]  # fmt: skip
    return [Finding("words-hf-placement", 1, "warning",
                    "device_map / max_memory are Hugging Face's: vLLM splits with TP",
                    tuple(evidence), compact_actions(acts))]  # fmt: skip


RULES = (
    length_needs_gpus,
    placement_named,
)
