"""A hang or a memory leak while serving, said in words, in a release that ships V0 beside V1.

From 0.8.0 vLLM runs its V1 engine by default and still ships V0 until 0.10.x (V0 removed in
0.11.0; vllm/envs.py VLLM_USE_V1). The 0.8.x-0.10.x threads that report the serving engine
hanging or its memory growing, with no error line, are answered with the switch back: "V1 has
been turned on by default. If you encounter problems, please set VLLM_USE_V1=0 environment
variable to continue to use the old V0 behavior" (vLLM maintainer, vllm-project/vllm#15092);
"setting export VLLM_USE_V1=0 works" for a hang on 0.8.5.post1 (EleutherAI/lm-evaluation-
harness#2904, the V1 data-parallel hang vllm#16588); the V1 memory leak with image requests
that V0 does not have (vllm#15294); "the most effective solution in terms of stability was
setting VLLM_USE_V1=0" for GPU memory clogging up on 0.10 (zai-org/GLM-V#165). The switch
tells V1's own fault from the model's or the workload's.

Only when the release is known to be 0.8.0-0.10.x (the input, the log, or the words), the
words report a hang (probes.symptom_hang: not a timeout alone, not a multi-GPU or NCCL hang,
which rules_hang answers, not a download, load or compile) or memory growing while serving
(probes.symptom_growth), the log holds no error or other cause (its rules answer), and
VLLM_USE_V1=0 is not already in the text. Before 0.8.0 V1 was not the default; from 0.11.0
there is no V0 to switch to: nothing then.
"""

from __future__ import annotations

import re

from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import parse_version
from headroom.probes.symptom_growth import memory_grows
from headroom.probes.symptom_hang import hang_words

ID = "v1-words-hang-or-leak"
_V1_DEFAULT_FROM = (0, 8, 0)
_NO_V0_FROM = (0, 11, 0)
# A hang said with a hang's own word: a timeout alone is a deadline (Ray, torch.distributed,
# a client's), not the engine stopping.
_HANG_VERB = re.compile(
    r"\b(?:stuck|hangs?|hanging|hung|freez(?:e|es|ing)|frozen|deadlock(?:s|ed)?|unresponsive|"
    r"no\s+response|stops?\s+(?:all\s+)?(?:processing|responding|generating))\b|卡住|卡死|无响应",
    re.IGNORECASE,
)
_ALREADY_V0 = re.compile(r"VLLM_USE_V1\s*=\s*0")
# Lines beside the words that say nothing of a failure: start-up facts, periodic stats.
_NEUTRAL_KINDS = frozenset(
    {
        "version",
        "model",
        "non_default_args",
        "max_model_len",
        "weights_loaded",
        "kv_memory_available",
        "kv_cache_tokens",
        "max_concurrency",
        "kv_cache_blocks",
        "server_starting",
        "startup_complete",
        "stats",
        "resolved_architecture",
        "kv_cache_dtype",
    }
)


def _said(ctx) -> tuple[str, str] | None:
    """(what the words report, the text) for a hang or a leak while serving, else None."""
    lines = ctx.prose_lines
    hang = hang_words(lines, ctx.events)
    if hang is not None and not (hang.multi_gpu or hang.other_stage):
        if _HANG_VERB.search(hang.text):
            return "a hang", hang.text
    for line in lines:
        if memory_grows(line):
            return "memory growing while it serves", line.strip()
    return None


def v1_words_hang_or_leak(ctx) -> list[Finding]:
    """A hang or a leak said in words on 0.8.0-0.10.x: try V0 (module doc)."""
    release = parse_version(ctx.version) if ctx.version else None
    if release is None or not (_V1_DEFAULT_FROM <= release < _NO_V0_FROM):
        return []
    if any(e.kind not in _NEUTRAL_KINDS for e in ctx.events):
        return []  # an error or a cause in the log: its own rule answers
    if any(_ALREADY_V0.search(line) for line in ctx.raw_lines[:5000]):
        return []
    said = _said(ctx)
    if said is None:
        return []
    what, text = said
    evidence = (
        text[:400],
        f"vLLM {ctx.version}: V1 is the default and the V0 engine still ships (0.8.0-0.10.x)",
        f"the words report {what} and the log holds no error: VLLM_USE_V1=0 tells V1's own "
        "fault from the model's or the workload's",
    )
    act = Action(
        "VLLM_USE_V1",
        "set",
        "0",
        f"{what} on the V1 engine with no cause in the log: run the same command on V0",
        "V0 lacks V1's scheduler and speed-ups; V0 is gone from 0.11.0",
    )
    title = f"{what[0].upper()}{what[1:]} on V1 (vLLM {ctx.version}): try the V0 engine"
    return [Finding(ID, None, "warning", title, evidence, (act,))]


RULES = (v1_words_hang_or_leak,)
