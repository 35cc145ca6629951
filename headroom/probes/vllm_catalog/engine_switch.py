"""Catalog entries: the texts vLLM prints when its V1 engine refuses a feature or falls back to
V0 for it, in the releases that ship both engines (VLLM_USE_V1, vllm/envs.py).

From 0.8.0 V1 is the default; V0 is still shipped through 0.10.x and removed in 0.11.0 (whose
vllm/engine/llm_engine.py is V1's LLMEngine), though 0.11.0's arg_utils.py still prints the
same texts. vllm/engine/arg_utils.py `_is_v1_supported_oracle` calls `_raise_or_fallback`:
with VLLM_USE_V1=1 set it raises "VLLM_USE_V1=1 is not supported with X." (the way back is
VLLM_USE_V1=0, or dropping X); unset, it warns "X is not supported by the V1 Engine. Falling
back to V0." and the run goes on on V0 (no failure). vllm/v1/engine/processor.py refuses a
request's priority, tracing or prompt adapter on V1 (V0 serves them). The other way: V0's
attention backends refuse KV sharing across layers (0.9.2+, the models that share KV, e.g.
Gemma 3n), which only V1 serves: VLLM_USE_V1=1 (0.10.x-0.11.0 print it from V1's xformers and
CPU backends as well: there the switch is no answer).
In match order before `failures` (the generic exception entries come later).
"""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import Signature as S

ENTRIES: tuple[S, ...] = (
    S("v1_refuses_feature", "v1_unsupported", "error", ("is not supported with",),
      r"VLLM_USE_V1=1 is not supported with (?P<feature>.+?)\.?\s*$", origin="raise",
      probe=("VLLM_USE_V1=1 is not supported with ",), fields=("feature",),
      feeds="v1-engine-unsupported: VLLM_USE_V1=0 (0.8.0-0.10.x; 0.11+ has no V0: drop the feature)",
      # arg_utils.py's f-string with feature names the oracle passes (0.8.5 lines 1312, 1354)
      examples=("NotImplementedError: VLLM_USE_V1=1 is not supported with --preemption-mode.",
                "NotImplementedError: VLLM_USE_V1=1 is not supported with Compute Capability < 8.0.")),
    S("v1_falls_back_to_v0", "v1_fallback", "warning", ("is not supported by the V1 Engine",),
      r"(?P<feature>.+?) is not supported by the V1 Engine\. Falling back to V0\.",
      probe=("is not supported by the V1 Engine. ",), fields=("feature",),
      feeds="v1-engine-unsupported (evidence only: the run continues on V0)",
      examples=("--preemption-mode is not supported by the V1 Engine. Falling back to V0. We recommend to "
                "remove --preemption-mode from your config in favor of the V1 Engine.",
                "Compute Capability < 8.0 is not supported by the V1 Engine. Falling back to V0. ")),
    S("v1_refuses_request_feature", "v1_unsupported", "error",
      ("V1 does not support priority", "V1 does not support tracing yet", "V1 does not support prompt_adapter_request"),
      r"V1 does not support (?P<feature>priority|tracing|prompt_adapter_request)", origin="raise",
      probe=("V1 does not support priority", "V1 does not support tracing yet",
             "V1 does not support prompt_adapter_request"), fields=("feature",),
      feeds="v1-engine-unsupported: VLLM_USE_V1=0 (0.8.0-0.10.x; 0.11+ has no V0: drop the feature)",
      examples=("ValueError: V1 does not support priority yet.", "ValueError: V1 does not support tracing yet.",
                "ValueError: V1 does not support prompt_adapter_request.")),
    S("v0_refuses_kv_sharing", "v0_unsupported", "error", ("KV sharing is not supported in V0", "KV sharing not supported in V0"),
      r"(?P<feature>KV sharing) (?:is )?not supported in V0", origin="raise",
      probe=("KV sharing is not supported in V0", "KV sharing not supported in V0"), fields=("feature",),
      feeds="v1-engine-unsupported: VLLM_USE_V1=1 (only V1 shares KV across layers)",
      # 0.10.2 vllm/attention/backends/flash_attn.py:550, mla/common.py:928
      examples=("NotImplementedError: KV sharing is not supported in V0 FLASH_ATTN backend.",
                "NotImplementedError: KV sharing not supported in V0.")),
)  # fmt: skip
