"""The DCGM reader over real exporter captures (tests/fixtures/dcgm/) and hostile text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from support.fixtures import read_fixture

from headroom.probes.dcgm import gpus_from_samples, instance_host, parse_dcgm_text


def test_full_gpu_operator_scrape() -> None:
    (gpu,) = parse_dcgm_text(read_fixture("dcgm", "k8s-gpu-operator-rtx4000ada-1gpu-full.prom"))
    assert gpu.host == "lke529760-766837-0a634ab30000"
    assert gpu.uuid == "GPU-a8394b51-c086-568a-9f1a-c1e1c934c44c"
    assert gpu.name == "NVIDIA RTX 4000 Ada Generation"
    assert gpu.power_w == 40.979 and gpu.temperature_c == 48 and gpu.sm_clock_mhz == 2310
    assert (gpu.fb_used_mib, gpu.fb_free_mib, gpu.fb_reserved_mib) == (1, 20015, 457)
    assert gpu.memory_total_mib == 1 + 20015 + 457
    assert gpu.xid == 0 and gpu.xid_message is None  # "No Error" is not an error
    assert gpu.pod == "cuda-75454ffb9f-8ljq7" and gpu.namespace == "default"
    assert gpu.throttle is None  # no *_VIOLATION counters in a default scrape: unknown


def test_lowercase_hostname_and_mig_slice() -> None:
    gpus = parse_dcgm_text(read_fixture("dcgm", "mixed-models-mig-lowercase-hostname-partial.prom"))
    assert {g.host for g in gpus} == {"dcgm-exporter-wwwjh"}
    mig = next(g for g in gpus if g.mig_profile)
    assert mig.index == "2/3" and mig.mig_profile == "1g.6gb" and mig.name == "NVIDIA A30"
    assert mig.pod == "triton-server-f7cb5d77-95xcf"


def test_every_gpu_of_a_partial_scrape_is_listed() -> None:
    gpus = parse_dcgm_text(read_fixture("dcgm", "bare-metal-v100-4gpu-no-pci-bus-id-partial.prom"))
    assert [g.index for g in gpus] == ["0", "1", "2", "3"]
    assert all(g.pci_bus_id is None and g.host == "r6i3n0" for g in gpus)
    assert [g.power_limit_w for g in gpus] == [None, None, 300.0, 300.0]
    pod_gpus = parse_dcgm_text(
        read_fixture("dcgm", "k8s-h100-8gpu-pod-label-on-one-gpu-partial.prom")
    )
    assert [g.pod for g in pod_gpus] == ["dcgmproftester2", None, None]


def test_without_a_hostname_label_the_instance_host_is_used() -> None:
    labels = {"gpu": "0", "UUID": "GPU-1", "instance": "10.0.0.7:9400"}
    (gpu,) = gpus_from_samples([("DCGM_FI_DEV_GPU_UTIL", labels, 55.0)])
    assert gpu.host == "10.0.0.7" and gpu.util_pct == 55.0
    assert instance_host("[::1]:9400") == "::1"


def test_sentinels_are_missing_values() -> None:
    text = (
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-x"} 9223372036854775794\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-x"} 12\n'
    )
    (gpu,) = parse_dcgm_text(text)
    assert gpu.temperature_c is None and gpu.util_pct == 12


def test_mig_utilisation_falls_back_to_the_engine_activity_ratio() -> None:
    labels = {"gpu": "0", "UUID": "GPU-1", "GPU_I_ID": "1", "Hostname": "h"}
    (gpu,) = gpus_from_samples([("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, 0.25)])
    assert gpu.util_pct == 25.0


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_any_text_never_raises(text: str) -> None:
    for gpu in parse_dcgm_text(text):
        assert gpu.index is not None
