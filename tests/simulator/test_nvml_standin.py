"""The pynvml stand-in: pynvml's names, shapes and errors over the simulator's state file,
read back by Headroom's own NVML and topology probes."""

from __future__ import annotations

import asyncio
import os
import types

import pytest

from headroom.simulator import nvml_standin as nv
from headroom.simulator.hardware import GIB, Machine, gpu_model
from headroom.simulator.state import build_state, write_state
from headroom.simulator.topo import topo_m_text


def _bind(tmp_path, machine: Machine, used: dict[int, int], busy: float = 0.5):
    path = tmp_path / "state.json"
    write_state(path, build_state(machine, 4242, used, busy, "serving", topo_m_text(machine)))
    nv.bind(path)
    nv.nvmlInit()
    return path


def test_calls_and_units(tmp_path) -> None:
    machine = Machine(gpu_model("H100-SXM"), gpus_per_node=4, other_process_bytes={2: 3 * GIB})
    _bind(tmp_path, machine, {0: 70 * GIB, 1: 70 * GIB})
    try:
        assert nv.nvmlDeviceGetCount() == 4
        h0 = nv.nvmlDeviceGetHandleByIndex(0)
        assert nv.nvmlDeviceGetName(h0) == "NVIDIA H100 80GB HBM3"
        mem = nv.nvmlDeviceGetMemoryInfo(h0)
        assert mem.total == 81559 * 1024**2 and mem.used + mem.free == mem.total
        v2 = nv.nvmlDeviceGetMemoryInfo(h0, version=nv.nvmlMemory_v2)
        assert v2.reserved > 0
        assert nv.nvmlDeviceGetUtilizationRates(h0).gpu == 50
        assert nv.nvmlDeviceGetPowerUsage(h0) > nv.nvmlDeviceGetPowerUsage(
            nv.nvmlDeviceGetHandleByIndex(3)
        )  # milliwatts; the idle GPU draws less
        assert nv.nvmlDeviceGetEnforcedPowerLimit(h0) == 700_000
        procs = nv.nvmlDeviceGetComputeRunningProcesses(nv.nvmlDeviceGetHandleByIndex(2))
        assert [(p.pid, p.usedGpuMemory) for p in procs] == [(40002, 3 * GIB)]
        assert nv.nvmlDeviceGetNvLinkState(h0, 0) == nv.NVML_FEATURE_ENABLED
        assert nv.nvmlDeviceGetNvLinkRemoteDeviceType(h0, 0) == nv.NVML_NVLINK_DEVICE_TYPE_SWITCH
        h1 = nv.nvmlDeviceGetHandleByIndex(1)
        assert nv.nvmlDeviceGetP2PStatus(h0, h1, nv.NVML_P2P_CAPS_INDEX_NVLINK) == 0
        assert nv.nvmlDeviceGetTopologyCommonAncestor(h0, h1) == nv.NVML_TOPOLOGY_NODE
        assert nv.nvmlSystemGetDriverVersion() == "570.133.20"
        assert nv.nvmlSystemGetCudaDriverVersion() == 12080
        assert nv.nvmlDeviceGetCurrentClocksEventReasons(nv.nvmlDeviceGetHandleByIndex(3)) & 0x1
    finally:
        nv.nvmlShutdown()


def test_errors_are_pynvml_shaped(tmp_path) -> None:
    _bind(tmp_path, Machine(gpu_model("RTX4090"), gpus_per_node=2, interconnect="pcie"), {})
    try:
        h = nv.nvmlDeviceGetHandleByIndex(0)
        with pytest.raises(nv.NVMLError_NotSupported) as info:
            nv.nvmlDeviceGetEccMode(h)  # GeForce has no ECC
        assert info.value.value == 3 and str(info.value) == "Not Supported"
        assert isinstance(nv.NVMLError(3), nv.NVMLError_NotSupported)
        with pytest.raises(nv.NVMLError_NotSupported):
            nv.nvmlDeviceGetNvLinkState(h, 0)  # a 4090 has no NVLink
        assert nv.nvmlDeviceGetP2PStatus(h, nv.nvmlDeviceGetHandleByIndex(1), 0) == 2  # GNS
        with pytest.raises(nv.NVMLError_InvalidArgument):
            nv.nvmlDeviceGetHandleByIndex(7)
    finally:
        nv.nvmlShutdown()
    nv.bind(tmp_path / "missing.json")
    with pytest.raises(nv.NVMLError_DriverNotLoaded):
        nv.nvmlInit()


def test_headroom_probes_read_the_standin(tmp_path, monkeypatch) -> None:
    machine = Machine(gpu_model("A100-80G-SXM"), gpus_per_node=8, interconnect="nvlink-pairs")
    path = _bind(tmp_path, machine, {0: 60 * GIB})
    nv.nvmlShutdown()
    monkeypatch.setenv("HEADROOM_NVML_STANDIN", str(path))
    from headroom.probes.nvml import NvmlProbe
    from headroom.probes.topology import parse_topo_text, read_topology

    snap = NvmlProbe().read()
    assert snap.available and len(snap.gpus) == 8
    assert snap.gpus[0].memory_used >= 60 * GIB and snap.gpus[0].processes[0].pid == 4242
    matrix = asyncio.run(read_topology())
    assert matrix.confidence == "high"
    assert matrix.links[0][1] == "NV12" and matrix.links[0][2] in ("NODE", "SYS")
    again = parse_topo_text(topo_m_text(Machine(gpu_model("RTX3090"), 2, "pcie")))
    assert again.links == (("X", "PHB"), ("PHB", "X"))


def test_state_file_is_looked_at_once_per_read_cycle(tmp_path, monkeypatch) -> None:
    """A probe sample makes hundreds of calls; the state file is stat'ed at most once per
    `RECHECK_S`, and a change is seen as soon as that much time has passed."""
    from headroom.probes.nvml import NvmlProbe

    clock = [1000.0]
    monkeypatch.setattr(nv, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    machine = Machine(gpu_model("H100-SXM"), gpus_per_node=8)
    path = _bind(tmp_path, machine, {0: 70 * GIB})
    nv.nvmlShutdown()
    looked: list[str] = []
    real_stat = os.stat

    def counting_stat(p, *args, **kwargs):
        if os.fspath(p) == os.fspath(path):
            looked.append(os.fspath(p))
        return real_stat(p, *args, **kwargs)

    monkeypatch.setattr(nv.os, "stat", counting_stat)
    probe = NvmlProbe(nv, process_lookup=lambda pid: (None, None))
    try:
        first = probe.read()
        assert first.available and len(first.gpus) == 8
        assert len(looked) <= 1  # the whole sample, init included, cost one look at most
        looks = len(looked)
        write_state(path, build_state(machine, 4242, {0: 20 * GIB}, 0.5, "serving", "topo"))
        os.utime(path, (1.0, 1.0))  # a different mtime whatever the file system's resolution
        clock[0] += nv.RECHECK_S / 2
        same_cycle = probe.read()  # still inside the cycle: the state read before is kept
        assert same_cycle.gpus[0].memory_used == first.gpus[0].memory_used
        assert len(looked) == looks
        clock[0] += nv.RECHECK_S
        later = probe.read()
        assert len(looked) == looks + 1  # one more look, and it saw the change
        assert later.gpus[0].memory_used < first.gpus[0].memory_used
        monkeypatch.setattr(nv, "RECHECK_S", 0.0)  # looking on every call gives the same answers
        assert [g.memory_used for g in probe.read().gpus] == [g.memory_used for g in later.gpus]
        assert len(looked) > 8
        path.unlink()
        clock[0] += 1.0
        with pytest.raises(nv.NVMLError_DriverNotLoaded):
            nv.nvmlDeviceGetCount()  # the state file went away: as before, no driver
    finally:
        probe.close()
