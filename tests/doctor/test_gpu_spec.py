"""--gpus parsing: the table, unknown cards with memory, and bad input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from headroom.doctor.gpu_spec import GpuSpecError, parse_gpu_spec
from headroom.doctor.gpu_table import find_gpu


def test_known_cards_carry_nvml_and_cuda_memory():
    h100 = parse_gpu_spec("8xH100")
    assert (h100.count, h100.name, h100.nvlink) == (8, "H100", True)
    assert h100.memory_gib == pytest.approx(79.65, abs=0.01)  # 81559 MiB as NVML reports it
    assert h100.usable_gib == pytest.approx(79.11, abs=0.01)  # as PyTorch reported it (vllm #27508)
    rtx = parse_gpu_spec("2xRTX3090")
    assert rtx.usable_gib == pytest.approx(23.58) and rtx.count == 2
    assert parse_gpu_spec("4xRTX4090").nvlink is False


def test_memory_override_and_unknown_card():
    a100 = parse_gpu_spec("4xA100:40")
    assert a100.memory_gib == 40 and 39 < a100.usable_gib < 40
    generic = parse_gpu_spec("2xGPU:16")
    assert (generic.count, generic.memory_gib, generic.known) == (2, 16.0, False)


def test_mixed_box_takes_the_tightest_card():
    mixed = parse_gpu_spec("1xRTX5080+1xRTX5090")
    assert mixed.count == 2 and mixed.min_usable_gib < 16


def test_nvml_names_resolve():
    assert find_gpu("NVIDIA H100 80GB HBM3").name == "H100"
    assert find_gpu("NVIDIA GeForce RTX 4090").name == "RTX4090"
    assert find_gpu("NVIDIA A100-SXM4-80GB").name == "A100"


@pytest.mark.parametrize(
    "bad", ["", "8x", "0xH100", "2xFoo", "3xH100:-4", "H100:abc", "2xGPU:99999"]
)
def test_bad_specs_say_what_is_expected(bad):
    with pytest.raises(GpuSpecError) as info:
        parse_gpu_spec(bad)
    assert str(info.value)


@given(st.text(max_size=40))
def test_any_text_parses_or_raises_a_clear_error(text):
    try:
        spec = parse_gpu_spec(text)
    except GpuSpecError as exc:
        assert str(exc)
    else:
        assert spec.count >= 1 and spec.usable_gib > 0
