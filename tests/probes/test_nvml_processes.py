"""Process naming, vLLM recognition and CUDA_VISIBLE_DEVICES -> NVML index mapping."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st
from nvml_standin import FakeNvml
from nvml_standin.machines import a100_mig, h100_sxm_8, rtx4090_2

from headroom.probes.gpu_processes import (
    describe_process,
    ordering_caveat,
    psutil_lookup,
    visible_gpus,
    vllm_role,
)
from headroom.probes.nvml import NvmlProbe


@pytest.fixture(scope="module")
def h100():
    return NvmlProbe(FakeNvml(h100_sxm_8()), process_lookup=lambda pid: (None, None)).read()


@pytest.mark.parametrize(
    ("name", "cmdline", "role"),
    [
        ("VLLM::EngineCor", "VLLM::EngineCore", "EngineCore"),
        ("VLLM::EngineCor", "VLLM::EngineCore_DP1", "EngineCore_DP1"),
        ("VLLM::Worker_TP", "VLLM::Worker_TP0", "Worker_TP0"),
        ("VLLM::Worker_PP", "VLLM::Worker_PP1_TP3", "Worker_PP1_TP3"),
        (
            "vllm",
            "/opt/venv/bin/python3 /opt/venv/bin/vllm serve meta-llama/Llama-3.1-8B",
            "api_server",
        ),
        ("python3", "python3 -m vllm.entrypoints.openai.api_server --model x", "api_server"),
        ("python", "python -m headroom.simulator serve Qwen/Qwen3-8B", "simulator"),
        ("python", "python train.py --vllm-serve-like-flag", None),
        ("python", "python -m sglang.launch_server --model x", None),
        (None, None, None),
    ],
)
def test_vllm_role(name, cmdline, role) -> None:
    assert vllm_role(name, cmdline) == role


def test_psutil_lookup_names_a_live_process_and_not_a_missing_one() -> None:
    name, cmdline = psutil_lookup(os.getpid())
    assert name and cmdline and "python" in cmdline.lower()
    assert psutil_lookup(2**22 + 12345) == (None, None)  # above pid_max: never a live process


def test_describe_process_of_an_invisible_pid() -> None:
    proc = describe_process(4242, 10, lookup=lambda pid: (None, None))
    assert proc.name is None and proc.cmdline is None and not proc.is_vllm


def test_cuda_visible_devices_unset_means_all_in_pci_order(h100) -> None:
    assert visible_gpus(h100, {}) == tuple(range(8))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2,0", (2, 0)),
        ("0,2,-1,1", (0, 2)),  # an invalid entry hides every later one
        ("", ()),
        ("3, 5", (3, 5)),
        ("1,1", (1,)),
        ("9", ()),
        ("GPU-00000103", (3,)),  # abbreviated UUID
        ("GPU-0000010", ()),  # ambiguous prefix: invalid
        ("0,GPU-00000107-1f2e", (0, 7)),
        ("banana,0", ()),
    ],
)
def test_cuda_visible_devices_forms(h100, value, expected) -> None:
    assert visible_gpus(h100, {"CUDA_VISIBLE_DEVICES": value}) == expected


def test_ordinals_follow_pci_order_not_nvml_order(h100) -> None:
    shuffled = replace(h100, gpus=(h100.gpus[5], *h100.gpus[:5], *h100.gpus[6:]))
    shuffled = replace(
        shuffled, gpus=tuple(replace(g, index=i) for i, g in enumerate(shuffled.gpus))
    )
    # NVML index 0 now holds the GPU at bus 0xAB (6th in PCI order).
    assert visible_gpus(shuffled, {"CUDA_VISIBLE_DEVICES": "0"}) == (1,)
    assert visible_gpus(shuffled, {"CUDA_VISIBLE_DEVICES": "5"}) == (0,)


def test_mig_identifiers_map_to_the_parent_gpu() -> None:
    snap = NvmlProbe(FakeNvml(a100_mig()), process_lookup=lambda pid: (None, None)).read()
    assert visible_gpus(snap, {"CUDA_VISIBLE_DEVICES": "MIG-7e8f9a0b"}) == (0,)
    legacy = f"MIG-{snap.gpus[0].uuid}/1/0"
    assert visible_gpus(snap, {"CUDA_VISIBLE_DEVICES": legacy}) == (0,)
    assert visible_gpus(snap, {"CUDA_VISIBLE_DEVICES": "MIG-ffffffff"}) == ()


def test_ordering_caveat_only_for_mixed_gpus_without_pci_order(h100) -> None:
    assert ordering_caveat(h100, {}) is None  # identical GPUs
    mixed = replace(
        h100, gpus=(replace(h100.gpus[0], name="NVIDIA A100-SXM4-80GB"), *h100.gpus[1:])
    )
    assert "PCI_BUS_ID" in (ordering_caveat(mixed, {"CUDA_VISIBLE_DEVICES": "0,1"}) or "")
    assert ordering_caveat(mixed, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}) is None
    assert ordering_caveat(mixed, {"CUDA_VISIBLE_DEVICES": "GPU-00000100"}) is None


@given(st.text(alphabet="0123456789,-GPUMIabcdef ", max_size=30))
def test_visible_gpus_never_raises_and_stays_in_range(value) -> None:
    snap = NvmlProbe(FakeNvml(rtx4090_2()), process_lookup=lambda pid: (None, None)).read()
    chosen = visible_gpus(snap, {"CUDA_VISIBLE_DEVICES": value})
    assert len(set(chosen)) == len(chosen) and set(chosen) <= {0, 1}
