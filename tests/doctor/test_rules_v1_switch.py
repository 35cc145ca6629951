"""The V1 engine refuses a feature (rules_v1_switch, finding `v1-engine-unsupported`).

Every text is vLLM's own: "VLLM_USE_V1=1 is not supported with {feature_name}." and
"{feature_name} is not supported by the V1 Engine. Falling back to V0. We recommend to remove
..." are the f-strings of vllm/engine/arg_utils.py `_raise_or_fallback` (0.8.5 lines
1649-1658, the same in 0.9.2, 0.10.2 and 0.11.0), filled with the feature names its
`_is_v1_supported_oracle` passes ("--preemption-mode", 0.8.5 line 1312; "Compute Capability <
8.0", line 1354); "V1 does not support priority yet." is 0.8.5 vllm/v1/engine/processor.py:212.
The CUDA OOM line is tests/fixtures/gpu-startup-logs/a100-80gb-wizardlm2-8x22b-oom.log's first.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose
from headroom.doctor.context import Context
from headroom.doctor.rules_v1_switch import v1_engine_unsupported
from headroom.probes.vllm_log import digest_text

FIXTURES = Path(__file__).parents[1] / "fixtures"
REFUSED = "NotImplementedError: VLLM_USE_V1=1 is not supported with --preemption-mode."
CAPABILITY = "NotImplementedError: VLLM_USE_V1=1 is not supported with Compute Capability < 8.0."
PRIORITY = "ERROR 05-01 10:00:00 [core.py:396] ValueError: V1 does not support priority yet."
FALLBACK = ("WARNING 04-30 12:00:00 [arg_utils.py:1658] --preemption-mode is not supported by the V1 "
            "Engine. Falling back to V0. We recommend to remove --preemption-mode from your config "
            "in favor of the V1 Engine.")  # fmt: skip
TORCH_OOM = (FIXTURES / "gpu-startup-logs" / "a100-80gb-wizardlm2-8x22b-oom.log").read_text()
TORCH_OOM = TORCH_OOM.splitlines()[0]


def _findings(log: str, version: str | None = None):
    return diagnose(DoctorInputs(log=digest_text(log), vllm_version=version)).findings


def _turns(finding) -> list[tuple[str, str, object]]:
    return [(a.knob, a.direction, a.value) for a in finding.actions]


def test_the_refusal_under_vllm_use_v1_1_turns_the_switch_to_v0():
    top = _findings(REFUSED, "0.8.5")[0]
    assert top.id == "v1-engine-unsupported" and top.step is None
    assert _turns(top) == [("VLLM_USE_V1", "set", "0")]
    assert "--preemption-mode" in top.title


def test_a_request_feature_v1_refuses_turns_the_switch_too():
    top = _findings(PRIORITY, "0.9.2")[0]
    assert top.id == "v1-engine-unsupported"
    assert _turns(top) == [("VLLM_USE_V1", "set", "0")]
    assert "priority" in top.title


def test_a_release_without_v0_gets_no_switch():
    """0.11.0 still prints the text, but its LLMEngine is V1's: no VLLM_USE_V1=0 there."""
    (found,) = [f for f in _findings(CAPABILITY, "0.11.0") if f.id == "v1-engine-unsupported"]
    assert found.actions == ()
    assert any("no V0 engine" in line for line in found.evidence)


def test_an_unknown_release_gets_the_switch():
    """The text is in 0.8.5-0.11.0; all but the last ship V0."""
    assert _turns(_findings(CAPABILITY)[0]) == [("VLLM_USE_V1", "set", "0")]


def test_the_fallback_warning_alone_is_no_failure():
    assert not [f for f in _findings(FALLBACK) if f.id == "v1-engine-unsupported"]


def test_the_fallback_warning_is_evidence_beside_a_refusal():
    (found,) = [f for f in _findings(FALLBACK + "\n" + REFUSED) if f.id == "v1-engine-unsupported"]
    assert any("Falling back to V0" in line for line in found.evidence)


def test_a_cuda_oom_in_the_same_log_is_the_more_specific_cause():
    findings = _findings(REFUSED + "\n" + TORCH_OOM, "0.8.5")
    assert not [f for f in findings if f.id == "v1-engine-unsupported"]


@given(st.text(max_size=80))
def test_any_feature_text_after_the_refusal_never_raises(feature):
    log = "NotImplementedError: VLLM_USE_V1=1 is not supported with " + feature
    for finding in v1_engine_unsupported(Context(DoctorInputs(log=digest_text(log)))):
        assert finding.id == "v1-engine-unsupported"


# 0.8.5 vllm/v1/engine/core.py:396 logger.exception, in 0.8.x's untagged prefix form
# (signature.PREFIX_FORMS "v1_plain"); 0.10.2 core.py:718 behind the tag decorate_logs adds.
CORE_FAILED_08 = "ERROR 04-30 10:20:36 [core.py:396] EngineCore failed to start."
CORE_FAILED_010 = (
    "(EngineCore_DP0 pid=8884) ERROR 11-29 11:24:21 [core.py:718] EngineCore failed to start."
)


def _core_failed(log: str, version: str | None = None):
    return [f for f in _findings(log, version) if f.id == "v1-engine-core-failed"]


def test_an_untagged_engine_core_failure_without_cause_tries_v0():
    top = _findings(CORE_FAILED_08)[0]
    assert top.id == "v1-engine-core-failed"
    assert _turns(top) == [("VLLM_USE_V1", "set", "0")]
    assert any("no process tag" in line for line in top.evidence)


def test_a_tagged_line_of_an_unknown_release_gets_no_switch():
    """0.10.x tags the line, and so do the releases without V0: the form proves nothing."""
    assert not _core_failed(CORE_FAILED_010)


def test_a_stated_release_decides_over_the_line_form():
    assert _core_failed(CORE_FAILED_010, "0.10.2")
    assert not _core_failed(CORE_FAILED_08, "0.11.0")
    assert not _core_failed(CORE_FAILED_08, "0.7.3")


def test_a_cause_in_the_log_wins_over_the_switch():
    assert not _core_failed(TORCH_OOM + "\n" + CORE_FAILED_08, "0.8.5")
    # the catalog's no_module_for_weight example (probes/vllm_catalog/loading.py)
    weights = "ValueError: There is no module or parameter named 'embed_tokens' in Qwen3ForCausalLM"
    assert not _core_failed(weights + "\n" + CORE_FAILED_08, "0.8.5")
    (top,) = [f for f in _findings(REFUSED + "\n" + CORE_FAILED_08) if f.id.startswith("v1-")]
    assert top.id == "v1-engine-unsupported"


# 0.10.2 vllm/attention/backends/flash_attn.py:550 (V0's backend; 0.9.2+)
KV_SHARING_V0 = "NotImplementedError: KV sharing is not supported in V0 FLASH_ATTN backend."


def test_v0_refusing_kv_sharing_turns_the_switch_to_v1():
    top = _findings(KV_SHARING_V0 + "\n" + CORE_FAILED_08, "0.9.2")[0]
    assert top.id == "v1-engine-unsupported"
    assert _turns(top) == [("VLLM_USE_V1", "set", "1")]


def test_the_kv_sharing_text_of_a_release_where_v1_prints_it_too_gets_no_switch():
    """0.10.2 vllm/v1/attention/backends/xformers.py:289 prints it on V1 as well."""
    found = [f for f in _findings(KV_SHARING_V0, "0.10.2") if f.id == "v1-engine-unsupported"]
    assert not found
    with_fallback = _findings(FALLBACK + "\n" + KV_SHARING_V0, "0.10.2")[0]
    assert _turns(with_fallback) == [("VLLM_USE_V1", "set", "1")]
