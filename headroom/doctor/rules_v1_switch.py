"""The V1 engine refuses a feature (catalog probes/vllm_catalog/engine_switch.py): finding
`v1-engine-unsupported`.

Releases 0.8.0-0.10.x default to V1 and still ship V0 (0.6.4-0.7.x ship V1 as an opt-in,
VLLM_USE_V1=1). When V1 refuses a feature V0 serves, vLLM's own way back is the switch:
VLLM_USE_V1=0 (arg_utils.py `_is_v1_supported_oracle`: with the variable unset it falls back
by itself; set to 1 it raises "VLLM_USE_V1=1 is not supported with X."). From 0.11.0 there is
no V0 engine (vllm/engine/llm_engine.py is V1's LLMEngine) though the text is still printed:
there the answer is to drop the feature or stay on 0.10.x, not the switch.

A memory failure in the same log (a CUDA OOM, no KV cache memory) is the more specific cause
and its rules answer; this rule then stays silent.

`v1-engine-core-failed`: V1's engine-core process failed ("EngineCore failed to start.",
vllm/v1/engine/core.py 0.8.5+) and the log holds no cause, only that echo. In a release that
ships V0 the field's first answer is the switch, VLLM_USE_V1=0, which tells V1's own failure
from the model's or the setting's. The release must be 0.8.0-0.10.x: stated, or read from the
line's form, a `[core.py:N]` logger line with no process tag, as 0.8.x-0.9.x print it (their
core.py tags only data-parallel engine processes; 0.10.x's decorate_logs tags every one
"(EngineCore_DP0 pid=N)"). Ranked below every rule that knows the failure (steps.py).
"""

from __future__ import annotations

import re

from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import parse_version

FINDING_ID = "v1-engine-unsupported"
CORE_FAILED_ID = "v1-engine-core-failed"
_V1_DEFAULT_FROM = (0, 8, 0)
# The failure kinds that say an engine died but not why (as rules_kv_pin._ECHOES).
_ECHOES = frozenset({"engine_core_failed", "engine_dead", "worker_died", "worker_exception",
                     "traceback"})  # fmt: skip
# A 0.8.x-0.9.x engine-core logger line: "ERROR 04-30 10:20:36 [core.py:396] ..." (no tag).
_UNTAGGED_CORE_LINE = re.compile(
    r"^\s*(?:ERROR|WARNING|INFO|CRITICAL) \d\d-\d\d [\d:]+ \[core\.py:\d+\]"
)
_NO_V0_FROM = (0, 11, 0)  # 0.11.0 vllm/engine/llm_engine.py: LLMEngine = V1LLMEngine
_MEMORY_EVENTS = ("cuda_oom", "no_cache_memory", "max_seq_len_exceeds_kv", "prompt_exceeds_kv")


def _feature(event) -> str:
    feature = str(event.fields.get("feature") or "").strip()
    return feature or "this feature"


def v1_engine_unsupported(ctx) -> list[Finding]:
    refusals = ctx.of("v1_unsupported")
    if ctx.of(*_MEMORY_EVENTS):
        return []
    if not refusals:
        return _v0_refused(ctx)
    event = refusals[0]
    feature = _feature(event)
    evidence = [event.line.strip()[:400]]
    evidence += [f.line.strip()[:400] for f in ctx.of("v1_fallback")[:1]]
    release = parse_version(ctx.version) if ctx.version else None
    if release is not None and release >= _NO_V0_FROM:
        evidence.append(
            f"vLLM {ctx.version} has no V0 engine (removed in 0.11.0): VLLM_USE_V1=0 cannot "
            f"bring it back; drop {feature} or run a 0.10.x release"
        )
        title = f"The V1 engine does not support {feature}, and this release has no V0 engine"
        return [Finding(FINDING_ID, None, "error", title, tuple(evidence))]
    evidence.append(
        "releases up to 0.10.x ship the V0 engine beside V1: VLLM_USE_V1=0 selects it "
        "(vllm/envs.py VLLM_USE_V1; arg_utils.py _is_v1_supported_oracle)"
    )
    act = Action(
        "VLLM_USE_V1",
        "set",
        "0",
        f"the V1 engine refuses {feature}; the V0 engine of the same release serves it",
        f"V0 lacks V1's scheduler and speed-ups; or drop {feature} and stay on V1",
    )
    title = f"The V1 engine does not support {feature}: run V0 (VLLM_USE_V1=0)"
    return [Finding(FINDING_ID, None, "error", title, tuple(evidence), (act,))]


def _v0_refused(ctx) -> list[Finding]:
    """V0 refuses what only V1 serves (KV sharing): the switch the other way, VLLM_USE_V1=1."""
    refusals = ctx.of("v0_unsupported")
    release = parse_version(ctx.version) if ctx.version else None
    # 0.10.x and 0.11.0 print the same text from V1's xformers and CPU backends too
    # (vllm/v1/attention/backends/xformers.py, cpu_attn.py), where the switch changes nothing:
    # only 0.9.x (V0 backends alone print it) or a log that shows the fallback to V0.
    on_v0 = bool(ctx.of("v1_fallback")) or (release is not None and release[:2] == (0, 9))
    if not refusals or not on_v0:
        return []
    event = refusals[0]
    feature = _feature(event)
    act = Action(
        "VLLM_USE_V1",
        "set",
        "1",
        f"the V0 engine refuses {feature}; V1 (the default from 0.8.0) serves it",
        "drops what made V0 necessary (a feature V1 refuses), if that was why it was chosen",
    )
    title = f"The V0 engine does not support {feature}: run V1 (VLLM_USE_V1=1)"
    evidence = (event.line.strip()[:400], "VLLM_USE_V1=0 (or a V0 fallback) ran the V0 engine")
    return [Finding(FINDING_ID, None, "error", title, evidence, (act,))]


def _ships_both_engines(ctx, line: str) -> tuple[bool, str]:
    """(whether the release has V1 by default and V0 beside it, how that is known)."""
    release = parse_version(ctx.version) if ctx.version else None
    if release is not None:
        return _V1_DEFAULT_FROM <= release < _NO_V0_FROM, f"vLLM {ctx.version}"
    if _UNTAGGED_CORE_LINE.match(line):
        return True, "the engine-core line has no process tag, as 0.8.x-0.9.x print it"
    return False, ""


def v1_engine_core_failed(ctx) -> list[Finding]:
    failed = [e for e in ctx.of("engine_core_failed") if "EngineCore failed to start" in e.line]
    if not failed or ctx.of(*_MEMORY_EVENTS, "v1_unsupported", "v0_unsupported"):
        return []
    failures = list(getattr(ctx.facts, "failures", ()) or ())
    if any(f.kind not in _ECHOES for f in failures):
        return []  # a cause in the log: its own rule answers
    both, how = _ships_both_engines(ctx, failed[0].line)
    if not both:
        return []
    evidence = (
        failed[0].line.strip()[:400],
        "the log holds no cause beyond the engine core's failure",
        f"{how}: V1 is the default and the V0 engine still ships (0.8.0-0.10.x); "
        "VLLM_USE_V1=0 tells V1's own failure from the model's or the setting's",
    )
    act = Action(
        "VLLM_USE_V1",
        "set",
        "0",
        "V1's engine core failed to start without a cause in the log: run the same command on V0",
        "V0 lacks V1's scheduler and speed-ups; the full traceback may still name the cause",
    )
    title = "V1's engine core failed to start: try the V0 engine (VLLM_USE_V1=0)"
    return [Finding(CORE_FAILED_ID, None, "error", title, evidence, (act,))]


RULES = (v1_engine_unsupported, v1_engine_core_failed)
