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
"""

from __future__ import annotations

from headroom.doctor.findings import Action, Finding
from headroom.doctor.versions import parse_version

FINDING_ID = "v1-engine-unsupported"
_NO_V0_FROM = (0, 11, 0)  # 0.11.0 vllm/engine/llm_engine.py: LLMEngine = V1LLMEngine
_MEMORY_EVENTS = ("cuda_oom", "no_cache_memory", "max_seq_len_exceeds_kv", "prompt_exceeds_kv")


def _feature(event) -> str:
    feature = str(event.fields.get("feature") or "").strip()
    return feature or "this feature"


def v1_engine_unsupported(ctx) -> list[Finding]:
    refusals = ctx.of("v1_unsupported")
    if not refusals or ctx.of(*_MEMORY_EVENTS):
        return []
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


RULES = (v1_engine_unsupported,)
