"""The NVML probe against a pynvml stand-in shaped like real machines.

The stand-in (tests/probes/nvml_standin) keeps pynvml's names, signatures, error classes and
structures; the probe code that calls it is the code under test.
"""

from __future__ import annotations

import inspect
import sys
import types

import pynvml
import pytest
from nvml_standin import FakeNvml
from nvml_standin.machines import (
    MIB,
    VLLM_PIDS,
    a100_mig,
    falling_off_bus,
    h100_sxm_8,
    no_driver,
    rtx4090_2,
)

from headroom.probes import nvml_calls
from headroom.probes.nvml import NvmlProbe, foreign_memory

FOREIGN_PID = 5555


def lookup(pid: int) -> tuple[str | None, str | None]:
    """Process names as psutil would give them on the H100 node."""
    if pid in VLLM_PIDS:
        return "VLLM::Worker_TP", f"VLLM::Worker_TP{VLLM_PIDS.index(pid)}"
    if pid == FOREIGN_PID:
        return "python", "python train.py --epochs 3"
    if pid in (7001, 7002):
        return (
            "vllm",
            "/usr/bin/python3 /usr/local/bin/vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2",
        )
    return None, None  # a host PID this container cannot see


def probe_for(machine) -> tuple[NvmlProbe, FakeNvml]:
    fake = FakeNvml(machine)
    return NvmlProbe(fake, process_lookup=lookup), fake


def test_standin_has_pynvml_names_and_signatures() -> None:
    checked = 0
    for name, member in inspect.getmembers(FakeNvml, inspect.isfunction):
        if not name.startswith("nvml"):
            continue
        real = getattr(pynvml, name)
        fake_params = list(inspect.signature(member).parameters)[1:]  # drop self
        assert fake_params == list(inspect.signature(real).parameters), name
        checked += 1
    assert checked >= 35


def test_h100_node_reads_every_field() -> None:
    probe, _ = probe_for(h100_sxm_8())
    snap = probe.read()
    assert snap.available and snap.reason is None
    assert snap.driver_version == "570.133.20" and snap.cuda_version == "12.8"
    assert len(snap.gpus) == 8 and snap.unsupported == ()
    gpu = snap.gpus[4]
    assert gpu.name == "NVIDIA H100 80GB HBM3" and gpu.pci_bus_id == "00000000:9A:00.0"
    assert gpu.memory_total == 81_559 * MIB and gpu.memory_used == 74_000 * MIB
    assert gpu.memory_reserved == 510 * MIB
    assert gpu.memory_free == gpu.memory_total - gpu.memory_used
    assert (gpu.util_gpu, gpu.util_memory) == (97.0, 61.0)
    assert gpu.power_w == 612.0 and gpu.power_limit_w == 700.0
    assert (gpu.sm_clock_mhz, gpu.sm_clock_max_mhz) == (1980, 1980)
    assert gpu.throttle_reasons == ()
    assert (gpu.pcie_gen, gpu.pcie_gen_max, gpu.pcie_width, gpu.pcie_width_max) == (5, 5, 16, 16)
    assert gpu.pcie_tx_kbps == 1200.0 and gpu.pcie_rx_kbps == 3400.0
    assert len(gpu.nvlinks) == 18 and all(link.active for link in gpu.nvlinks)
    assert gpu.nvlinks[1].remote_bus_id == "00000000:06:00.0"  # an NVSwitch, not a GPU
    assert (gpu.ecc_corrected, gpu.ecc_uncorrected) == (0, 0)
    assert gpu.remapped_rows_pending is False and gpu.remapped_rows_failure is False
    assert gpu.mig_enabled is False and gpu.numa_node == 1 and not gpu.lost
    (proc,) = gpu.processes
    assert proc.is_vllm and proc.vllm_role == "Worker_TP4" and proc.pid == VLLM_PIDS[4]


def test_foreign_memory_on_a_vllm_gpu_is_called_out() -> None:
    probe, _ = probe_for(h100_sxm_8())
    snap = probe.read()
    (foreign,) = foreign_memory(snap)
    assert (foreign.gpu_index, foreign.pid, foreign.name) == (3, FOREIGN_PID, "python")
    assert foreign.used_memory_bytes == 2 * 1024 * MIB
    assert foreign_memory(snap, gpu_indices=(0, 1)) == []


def test_geforce_notsupported_fields_are_none_and_cached() -> None:
    probe, fake = probe_for(rtx4090_2())
    snap = probe.read()
    assert snap.available and len(snap.gpus) == 2
    for gpu in snap.gpus:
        assert gpu.ecc_corrected is None and gpu.ecc_uncorrected is None
        assert gpu.remapped_rows_pending is None and gpu.mig_enabled is None
        assert gpu.throttle_reasons is None and gpu.nvlinks == ()
        assert gpu.memory_total == 24_564 * MIB and gpu.memory_reserved is None  # v1 fallback
        assert gpu.util_gpu == 88.0 and gpu.power_limit_w == 450.0
    assert snap.gpus[1].pcie_width == 8 and snap.gpus[1].pcie_width_max == 16
    for name in ("nvmlDeviceGetEccMode", "nvmlDeviceGetRemappedRows", "nvmlDeviceGetMigMode",
                 "nvmlDeviceGetNvLinkState", "nvmlDeviceGetCurrentClocksEventReasons"):  # fmt: skip
        assert snap.unsupported.count(name) == 1, name
    assert "nvmlDeviceGetMemoryInfo" not in snap.unsupported  # v2 missing, v1 answered
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" not in snap.unsupported
    ecc_calls = fake.calls["nvmlDeviceGetEccMode"]
    again = probe.read()
    assert fake.calls["nvmlDeviceGetEccMode"] == ecc_calls  # NotSupported is not asked twice
    assert again.unsupported == snap.unsupported
    assert all(p.vllm_role == "api_server" for g in again.gpus for p in g.processes)


def test_a100_with_mig_has_no_utilisation_but_lists_mig_devices() -> None:
    probe, _ = probe_for(a100_mig())
    (gpu,) = probe.read().gpus
    assert gpu.mig_enabled is True and gpu.util_gpu is None and gpu.util_memory is None
    assert gpu.remapped_rows_pending is None
    assert gpu.mig_uuids == (
        "MIG-4f1b2c3d-1111-5a6b-8c9d-0e1f2a3b4c5d",
        "MIG-7e8f9a0b-2222-5c6d-8e9f-1a2b3c4d5e6f",
    )
    assert len(gpu.nvlinks) == 12 and not any(link.active for link in gpu.nvlinks)
    assert all(link.remote_bus_id is None for link in gpu.nvlinks)
    (proc,) = gpu.processes
    assert proc.used_memory_bytes is None and proc.name is None and not proc.is_vllm


def test_gpu_falling_off_the_bus_mid_run_marks_only_that_gpu_lost() -> None:
    machine = falling_off_bus(after_calls=10_000)
    probe, fake = probe_for(machine)
    first = probe.read()
    assert [g.lost for g in first.gpus] == [False, False]
    machine.gpus[1].lost_after_calls = fake._per_gpu[1] + 5  # dies part-way through a sample
    second = probe.read()
    assert second.available
    assert second.gpus[0].lost is False and second.gpus[0].memory_used == 74_000 * MIB
    lost = second.gpus[1]
    assert lost.lost and lost.memory_used is None and lost.processes == ()
    assert lost.name == "NVIDIA H100 80GB HBM3"  # identity kept from before it was lost
    third = probe.read()
    assert third.gpus[1].lost and not third.gpus[0].lost


def test_gpu_lost_from_the_start_is_reported_not_raised() -> None:
    machine = falling_off_bus(after_calls=0)
    probe, _ = probe_for(machine)
    snap = probe.read()
    assert snap.gpus[1].lost and snap.gpus[1].name is None
    assert snap.gpus[0].name == "NVIDIA H100 80GB HBM3"


def test_no_driver_says_so_once() -> None:
    probe, fake = probe_for(no_driver())
    first, second = probe.read(), probe.read()
    assert not first.available and first.gpus == ()
    assert "NVML library not found" in (first.reason or "")
    assert second.reason == first.reason and fake.calls["nvmlInit"] == 1


def test_missing_bindings_are_a_state(monkeypatch) -> None:
    def broken():
        raise ImportError("No module named 'pynvml'")

    monkeypatch.setattr("headroom.probes.nvml.load_nvml_module", broken)
    snap = NvmlProbe().read()
    assert not snap.available and "pynvml" in (snap.reason or "")


def test_zero_gpus_is_unavailable_with_reason() -> None:
    machine = h100_sxm_8()
    machine.gpus = []
    snap = NvmlProbe(FakeNvml(machine)).read()
    assert not snap.available and snap.reason == "NVML found no GPUs"
    assert snap.driver_version == "570.133.20"


def test_a_broken_process_lookup_leaves_names_unknown() -> None:
    def explode(pid):
        raise RuntimeError("proc is gone")

    snap = NvmlProbe(FakeNvml(h100_sxm_8()), process_lookup=explode).read()
    assert all(p.name is None and not p.is_vllm for g in snap.gpus for p in g.processes)


async def test_sample_runs_in_a_thread() -> None:
    probe, _ = probe_for(rtx4090_2())
    snap = await probe.sample()
    assert snap.available and len(snap.gpus) == 2


def test_close_shuts_nvml_down() -> None:
    probe, fake = probe_for(rtx4090_2())
    assert probe.nvml is None  # nothing loaded before the first read
    probe.read()
    assert probe.nvml is fake  # the TUI hands this module to read_topology
    probe.close()
    assert fake.initialised == 0 and fake.calls["nvmlShutdown"] == 1


def test_standin_env_binds_the_simulator_module(monkeypatch, tmp_path) -> None:
    bound: list[str] = []
    module = types.ModuleType("headroom.simulator.nvml_standin")
    module.bind = bound.append
    monkeypatch.setitem(sys.modules, "headroom.simulator.nvml_standin", module)
    monkeypatch.setenv("HEADROOM_NVML_STANDIN", str(tmp_path / "state.json"))
    assert nvml_calls.load_nvml_module() is module
    assert bound == [str(tmp_path / "state.json")]


def test_without_standin_env_the_real_bindings_load(monkeypatch) -> None:
    monkeypatch.delenv("HEADROOM_NVML_STANDIN", raising=False)
    assert nvml_calls.load_nvml_module() is pynvml


@pytest.mark.parametrize(
    ("code", "words"),
    [(12, "library not found"), (9, "driver not loaded"), (18, "versions differ")],
)
def test_init_failure_reasons(code: int, words: str) -> None:
    assert words in nvml_calls.init_failure_reason(pynvml.NVMLError(code)).lower()


def test_static_facts_and_process_names_are_not_asked_every_sample() -> None:
    asked: list[int] = []

    def counting(pid):
        asked.append(pid)
        return lookup(pid)

    fake = FakeNvml(h100_sxm_8())
    probe = NvmlProbe(fake, process_lookup=counting)
    probe.read()
    remote_calls = fake.calls["nvmlDeviceGetNvLinkRemotePciInfo"]
    assert remote_calls == 8 * 18 and fake.calls["nvmlDeviceGetName"] == 8
    second = probe.read()
    assert fake.calls["nvmlDeviceGetNvLinkRemotePciInfo"] == remote_calls
    assert fake.calls["nvmlDeviceGetName"] == 8
    assert fake.calls["nvmlDeviceGetNvLinkState"] > 8 * 18  # link state is live
    assert sorted(asked) == sorted([*VLLM_PIDS, FOREIGN_PID])  # each pid named once
    assert second.gpus[3].processes[1].name == "python"


def test_a_new_process_on_a_reused_pid_slot_is_named_afresh() -> None:
    machine = h100_sxm_8(foreign=None)
    names = {4101: ("VLLM::EngineCor", "VLLM::EngineCore")}
    probe = NvmlProbe(FakeNvml(machine), process_lookup=lambda pid: names.get(pid, (None, None)))
    assert probe.read().gpus[0].processes[0].vllm_role == "EngineCore"
    machine.gpus[0].processes = []
    probe.read()  # pid 4101 gone: its cached name is dropped
    machine.gpus[0].processes = [(4101, 1024)]
    names[4101] = ("python", "python other.py")
    assert probe.read().gpus[0].processes[0].is_vllm is False


def test_snapshot_to_json_round_trips_through_json() -> None:
    import json

    from headroom.probes.nvml import snapshot_to_json

    probe, _ = probe_for(h100_sxm_8())
    data = json.loads(json.dumps(snapshot_to_json(probe.read())))
    assert data["available"] is True and data["gpus"][3]["processes"][1]["pid"] == FOREIGN_PID
    assert data["gpus"][0]["nvlinks"][0]["active"] is True


def test_old_driver_without_v3_process_symbol_falls_back_to_v2() -> None:
    class OldDriver(FakeNvml):
        def nvmlDeviceGetComputeRunningProcesses(self, handle):
            raise pynvml.NVMLLibraryMismatchError("driver lacks _v3")

        def nvmlDeviceGetComputeRunningProcesses_v2(self, handle):
            return FakeNvml.nvmlDeviceGetComputeRunningProcesses(self, handle)

        nvmlSystemGetCudaDriverVersion_v2 = None  # symbol missing in old bindings

    snap = NvmlProbe(OldDriver(rtx4090_2()), process_lookup=lookup).read()
    assert [p.pid for p in snap.gpus[1].processes] == [7002]
    assert snap.cuda_version == "12.4"
    assert not any("Process" in name or "Cuda" in name for name in snap.unsupported)


def test_nvml_that_cannot_count_says_so() -> None:
    class NoCount(FakeNvml):
        def nvmlDeviceGetCount(self):
            raise pynvml.NVMLError(999)

    snap = NvmlProbe(NoCount(h100_sxm_8())).read()
    assert not snap.available and snap.reason == "NVML could not count the GPUs"


def test_odd_answers_from_one_gpu_do_not_hide_the_others() -> None:
    class Odd(FakeNvml):
        def nvmlDeviceGetMemoryInfo(self, handle, version=None):
            gpu = self._gpu(handle, "nvmlDeviceGetMemoryInfo")
            return {"total": gpu.memory_total, "used": gpu.memory_used, "free": 0}

        def nvmlDeviceGetMigMode(self, device):
            if device.index == 1:
                raise RuntimeError("stand-in bug")
            return [0, 0]

        def nvmlDeviceGetEccMode(self, handle):
            if handle.index == 2:
                return object.__new__(type("Weird", (), {"__getitem__": 1}))  # unusable
            return [1, 1]

    snap = NvmlProbe(Odd(h100_sxm_8()), process_lookup=lookup).read()
    assert snap.available and len(snap.gpus) == 8
    assert snap.gpus[0].memory_total == 81_559 * MIB and snap.gpus[0].memory_free == 0
    assert snap.gpus[1].mig_enabled is None and snap.gpus[1].memory_used == 74_000 * MIB
    assert not any(g.lost for g in snap.gpus)


def test_gpu_without_permission_is_empty_not_lost() -> None:
    class Locked(FakeNvml):
        def nvmlDeviceGetHandleByIndex(self, index):
            if index == 1:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)
            return FakeNvml.nvmlDeviceGetHandleByIndex(self, index)

    snap = NvmlProbe(Locked(rtx4090_2()), process_lookup=lookup).read()
    assert snap.gpus[0].name == "NVIDIA GeForce RTX 4090"
    assert snap.gpus[1].name is None and snap.gpus[1].lost is False
    assert "nvmlDeviceGetHandleByIndex" in snap.unsupported


def test_failed_init_is_retried_only_after_a_pause() -> None:
    machine = no_driver()
    fake = FakeNvml(machine)
    probe = NvmlProbe(fake, process_lookup=lookup, retry_init_s=0.0)
    assert not probe.read().available
    machine.init_error = None  # the driver (or the simulator's state file) showed up
    machine.gpus = rtx4090_2().gpus
    assert probe.read().available and fake.calls["nvmlInit"] == 2
    slow_fake = FakeNvml(no_driver())
    slow = NvmlProbe(slow_fake, retry_init_s=3600.0)
    for _ in range(3):
        assert not slow.read().available
    assert slow_fake.calls["nvmlInit"] == 1
