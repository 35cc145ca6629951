"""headroom/doctor/rules_sm12x.py: FlashInfer's CUTLASS grouped GEMM failing on SM12x gets
the NVFP4 MoE on Marlin, by the switch the release has; silent off SM12x.

The texts are the field's: the forum post's container log (NVIDIA developer forum 365119, the
incident forum-nvidia--365119: "[Autotuner]: Skipping tactic … due to failure while profiling:"
/ "[TensorRT-LLM][ERROR] Failed to initialize cutlass TMA WS grouped gemm") and a DGX Spark
build journal's autotuner line naming the sm120 kernel file (found by the code search:
"flashinfer.jit: [Autotuner]: Skipping tactic <MoERunner> 14, due to failure:" ... "Error:
Error Internal (cutlass_kernel_file_gemm_grouped_sm120_M128_BS_group2.generated.cu:60)").
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor import DoctorInputs, diagnose, parse_gpu_spec
from headroom.probes.vllm_log import digest_text

_FORUM = (
    "[Autotuner]: Skipping tactic … due to failure while profiling:\n"
    "[TensorRT-LLM][ERROR] Failed to initialize cutlass TMA WS grouped gemm\n"
)
_JOURNAL = (
    "flashinfer.jit: [Autotuner]: Skipping tactic <MoERunner> 14, due to failure:\n"
    "[TensorRT-LLM][ERROR] Assertion failed: Failed to initialize cutlass TMA WS grouped gemm.\n"
    "Error: Error Internal (cutlass_kernel_file_gemm_grouped_sm120_M128_BS_group2.generated.cu:60)\n"
)


def _turns(log: str, gpus: str | None = None, version: str | None = None):
    inputs = DoctorInputs(
        log=digest_text(log),
        gpu_spec=parse_gpu_spec(gpus) if gpus else None,
        vllm_version=version,
    )
    found = [f for f in diagnose(inputs).findings if f.id == "nvfp4-moe-grouped-gemm-sm12x"]
    return [[(a.knob, a.value) for a in f.actions] for f in found]


def test_the_release_s_own_switch_forces_marlin():
    assert _turns(_FORUM, "1xGB10:128", "0.20.2") == [[("moe_backend", "marlin")]]
    assert _turns(_FORUM, "1xRTX5090", "0.16.0") == [[("VLLM_TEST_FORCE_FP8_MARLIN", "1")]]
    # the release unknown: the variable an older release ignores comes before the flag it refuses
    assert _turns(_FORUM, "1xGB10:128") == [
        [("VLLM_TEST_FORCE_FP8_MARLIN", "1"), ("moe_backend", "marlin")]
    ]
    # before 0.14.1 nothing forces Marlin for NVFP4 MoE: named without a knob
    assert _turns(_FORUM, "1xRTX5090", "0.12.0") == [[]]


def test_the_kernel_file_names_the_architecture_when_no_gpu_is_given():
    assert _turns(_JOURNAL, None, "0.20.2") == [[("moe_backend", "marlin")]]


def test_a_cutlass_moe_backend_with_garbage_output_is_the_same_family():
    """discuss.vllm.ai 2536 (RTX PRO 6000, the incident discuss-vllm--2536): '**vLLM native
    CUTLASS MoE backend** (`VLLM_CUTLASS`): ~5 tok/s with garbage output'."""
    said = "**vLLM native CUTLASS MoE backend** (`VLLM_CUTLASS`): ~5 tok/s with garbage output"
    assert _turns(said, "4xRTX PRO 6000", "0.20.2") == [[("moe_backend", "marlin")]]
    assert _turns(said, "4xH100", "0.20.2") == []
    fast = "**vLLM native CUTLASS MoE backend** (`VLLM_CUTLASS`): ~5 tok/s"
    assert _turns(fast, "4xRTX PRO 6000", "0.20.2") == []


def test_silent_off_sm12x_and_without_the_text():
    assert _turns(_FORUM, "1xH100", "0.20.2") == []
    assert _turns(_FORUM, None, "0.20.2") == []
    assert (
        _turns("[Autotuner]: Skipping tactic … due to failure while profiling:", "1xGB10:128") == []
    )


@given(st.text(max_size=300))
def test_any_text_beside_the_failure_never_raises(noise):
    found = _turns(_FORUM + noise, "1xGB10:128", "0.20.2")
    assert found == [[("moe_backend", "marlin")]]
