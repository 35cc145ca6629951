"""A pynvml stand-in for tests: pynvml's function names, signatures, error classes and
return structures, answering from a described machine instead of a driver.

Errors are real `pynvml.NVMLError` instances (so `.value` and the subclasses are exactly
what the probe meets on hardware); memory, utilisation and PCI info are the real ctypes
structures. Machines shaped like real ones live in `machines.py`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml

NVMLError = pynvml.NVMLError
nvmlMemory_v2 = pynvml.nvmlMemory_v2
NVML_P2P_CAPS_INDEX_READ = pynvml.NVML_P2P_CAPS_INDEX_READ  # the (0,) tuple, as in pynvml
NVML_P2P_CAPS_INDEX_NVLINK = pynvml.NVML_P2P_CAPS_INDEX_NVLINK


@dataclass
class FakeGpu:
    """One GPU's readings. A field set to None answers NotSupported, like GeForce does."""

    name: str
    uuid: str
    bus_id: str
    memory_total: int
    memory_used: int
    memory_reserved: int | None = 0
    utilization: tuple[int, int] | None = (0, 0)
    temperature: int | None = 35
    power_mw: int | None = 70_000
    power_limit_mw: int | None = 700_000
    clocks: dict[int, int] = field(default_factory=lambda: {1: 1980, 2: 2619})
    max_clocks: dict[int, int] = field(default_factory=lambda: {1: 1980, 2: 2619})
    clock_event_reasons: int | None = 0x1
    pcie: tuple[int, int, int, int] | None = (5, 5, 16, 16)  # gen, gen max, width, width max
    pcie_throughput_kbps: tuple[int, int] | None = (1200, 3400)
    nvlinks: list[tuple[bool, str, int]] | None = None  # (active, remote bus id, remote type)
    ecc_mode: tuple[int, int] | None = (1, 1)
    ecc_errors: tuple[int, int] = (0, 0)  # corrected, uncorrected (volatile)
    remapped_rows: tuple[int, int, int, int] | None = (0, 0, 0, 0)
    mig_mode: tuple[int, int] | None = (0, 0)
    mig_uuids: list[str] = field(default_factory=list)
    processes: list[tuple[int, int | None]] = field(default_factory=list)
    numa_node: int | None = 0
    cpu_mask: list[int] = field(default_factory=lambda: [0xFFFF])
    lost_after_calls: int | None = None  # GpuIsLost once this GPU has answered this many calls


@dataclass
class FakeMachine:
    gpus: list[FakeGpu]
    driver: str = "570.133.20"
    cuda: int = 12080
    nvlink_pairs: set[frozenset[int]] = field(default_factory=set)  # P2P NVLink status OK
    ancestor: dict[frozenset[int], int] = field(default_factory=dict)  # common ancestor level
    init_error: int | None = None  # e.g. 12 LibraryNotFound


class _Handle:
    def __init__(self, index: int, mig_slot: int | None = None) -> None:
        self.index = index
        self.mig_slot = mig_slot


def _fail(code: int) -> None:
    raise NVMLError(code)


class FakeNvml:
    """Use as the `nvml` module: `NvmlProbe(FakeNvml(machine))`. `calls` counts every call."""

    NVMLError = NVMLError
    nvmlMemory_v2 = nvmlMemory_v2
    NVML_P2P_CAPS_INDEX_READ = NVML_P2P_CAPS_INDEX_READ
    NVML_P2P_CAPS_INDEX_NVLINK = NVML_P2P_CAPS_INDEX_NVLINK

    def __init__(self, machine: FakeMachine) -> None:
        self.machine = machine
        self.calls: Counter[str] = Counter()
        self._per_gpu: Counter[int] = Counter()
        self.initialised = 0

    # -- plumbing ---------------------------------------------------------------------------
    def _gpu(self, handle: Any, fn: str) -> FakeGpu:
        self.calls[fn] += 1
        if not isinstance(handle, _Handle):
            _fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        gpu = self.machine.gpus[handle.index]
        self._per_gpu[handle.index] += 1
        if gpu.lost_after_calls is not None and self._per_gpu[handle.index] > gpu.lost_after_calls:
            _fail(pynvml.NVML_ERROR_GPU_IS_LOST)
        return gpu

    @staticmethod
    def _need(value: Any) -> Any:
        if value is None:
            _fail(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return value

    # -- system -----------------------------------------------------------------------------
    def nvmlInit(self):
        self.calls["nvmlInit"] += 1
        if self.machine.init_error is not None:
            _fail(self.machine.init_error)
        self.initialised += 1

    def nvmlShutdown(self):
        self.calls["nvmlShutdown"] += 1
        self.initialised -= 1

    def nvmlDeviceGetCount(self):
        self.calls["nvmlDeviceGetCount"] += 1
        return len(self.machine.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        self.calls["nvmlDeviceGetHandleByIndex"] += 1
        if not 0 <= index < len(self.machine.gpus):
            _fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        handle = _Handle(index)
        self._gpu(handle, "nvmlDeviceGetHandleByIndex")
        return handle

    def nvmlSystemGetDriverVersion(self):
        self.calls["nvmlSystemGetDriverVersion"] += 1
        return self.machine.driver

    def nvmlSystemGetCudaDriverVersion(self):
        self.calls["nvmlSystemGetCudaDriverVersion"] += 1
        return self.machine.cuda

    def nvmlSystemGetCudaDriverVersion_v2(self):
        self.calls["nvmlSystemGetCudaDriverVersion_v2"] += 1
        return self.machine.cuda

    # -- identity, memory, load -------------------------------------------------------------
    def nvmlDeviceGetName(self, handle):
        return self._gpu(handle, "nvmlDeviceGetName").name

    def nvmlDeviceGetUUID(self, handle):
        gpu = self._gpu(handle, "nvmlDeviceGetUUID")
        if handle.mig_slot is not None:
            return gpu.mig_uuids[handle.mig_slot]
        return gpu.uuid

    def nvmlDeviceGetPciInfo(self, handle):
        gpu = self._gpu(handle, "nvmlDeviceGetPciInfo")
        info = pynvml.nvmlPciInfo_t()
        info.busId = gpu.bus_id.encode()
        return info

    def nvmlDeviceGetMemoryInfo(self, handle, version=None):
        gpu = self._gpu(handle, "nvmlDeviceGetMemoryInfo")
        free = gpu.memory_total - gpu.memory_used
        if version is None:
            return pynvml.c_nvmlMemory_t(gpu.memory_total, free, gpu.memory_used)
        reserved = self._need(gpu.memory_reserved)
        return pynvml.c_nvmlMemory_v2_t(version, gpu.memory_total, reserved, free, gpu.memory_used)

    def nvmlDeviceGetUtilizationRates(self, handle):
        gpu = self._gpu(handle, "nvmlDeviceGetUtilizationRates")
        util_gpu, util_mem = self._need(gpu.utilization)
        return pynvml.c_nvmlUtilization_t(util_gpu, util_mem)

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return self._need(self._gpu(handle, "nvmlDeviceGetTemperature").temperature)

    def nvmlDeviceGetPowerUsage(self, handle):
        return self._need(self._gpu(handle, "nvmlDeviceGetPowerUsage").power_mw)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return self._need(self._gpu(handle, "nvmlDeviceGetEnforcedPowerLimit").power_limit_mw)

    def nvmlDeviceGetPowerManagementLimit(self, handle):
        return self._need(self._gpu(handle, "nvmlDeviceGetPowerManagementLimit").power_limit_mw)

    def nvmlDeviceGetClockInfo(self, handle, type):  # noqa: A002 - pynvml's parameter name
        return self._need(self._gpu(handle, "nvmlDeviceGetClockInfo").clocks.get(type))

    def nvmlDeviceGetMaxClockInfo(self, handle, type):  # noqa: A002
        return self._need(self._gpu(handle, "nvmlDeviceGetMaxClockInfo").max_clocks.get(type))

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle):
        gpu = self._gpu(handle, "nvmlDeviceGetCurrentClocksEventReasons")
        return self._need(gpu.clock_event_reasons)

    # -- PCIe and NVLink --------------------------------------------------------------------
    def _pcie(self, handle, fn, i):
        return self._need(self._gpu(handle, fn).pcie)[i]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle):
        return self._pcie(handle, "nvmlDeviceGetCurrPcieLinkGeneration", 0)

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle):
        return self._pcie(handle, "nvmlDeviceGetMaxPcieLinkGeneration", 1)

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle):
        return self._pcie(handle, "nvmlDeviceGetCurrPcieLinkWidth", 2)

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle):
        return self._pcie(handle, "nvmlDeviceGetMaxPcieLinkWidth", 3)

    def nvmlDeviceGetPcieThroughput(self, device, counter):
        gpu = self._gpu(device, "nvmlDeviceGetPcieThroughput")
        return self._need(gpu.pcie_throughput_kbps)[counter]

    def _link(self, device, link, fn):
        links = self._need(self._gpu(device, fn).nvlinks)
        if not 0 <= link < len(links):
            _fail(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return links[link]

    def nvmlDeviceGetNvLinkState(self, device, link):
        return int(self._link(device, link, "nvmlDeviceGetNvLinkState")[0])

    def nvmlDeviceGetNvLinkRemotePciInfo(self, device, link):
        info = pynvml.nvmlPciInfo_t()
        info.busId = self._link(device, link, "nvmlDeviceGetNvLinkRemotePciInfo")[1].encode()
        return info

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, handle, link):
        return self._link(handle, link, "nvmlDeviceGetNvLinkRemoteDeviceType")[2]

    def nvmlDeviceGetP2PStatus(self, device1, device2, p2pIndex):
        self._gpu(device1, "nvmlDeviceGetP2PStatus")
        self._gpu(device2, "nvmlDeviceGetP2PStatus")
        if not isinstance(p2pIndex, int):  # the (0,) tuple trap: ctypes would reject it too
            raise TypeError("p2pIndex must be an int")
        pair = frozenset((device1.index, device2.index))
        if p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK:
            return 0 if pair in self.machine.nvlink_pairs else 5  # OK / NOT_SUPPORTED
        return 0 if pair in self.machine.nvlink_pairs else 2  # GPU_NOT_SUPPORTED

    def nvmlDeviceGetTopologyCommonAncestor(self, device1, device2):
        self._gpu(device1, "nvmlDeviceGetTopologyCommonAncestor")
        self._gpu(device2, "nvmlDeviceGetTopologyCommonAncestor")
        return self._need(self.machine.ancestor.get(frozenset((device1.index, device2.index))))

    # -- health, MIG, processes, affinity ----------------------------------------------------
    def nvmlDeviceGetEccMode(self, handle):
        return list(self._need(self._gpu(handle, "nvmlDeviceGetEccMode").ecc_mode))

    def nvmlDeviceGetTotalEccErrors(self, handle, errorType, counterType):
        gpu = self._gpu(handle, "nvmlDeviceGetTotalEccErrors")
        self._need(gpu.ecc_mode)
        return gpu.ecc_errors[errorType]

    def nvmlDeviceGetRemappedRows(self, device):
        return tuple(self._need(self._gpu(device, "nvmlDeviceGetRemappedRows").remapped_rows))

    def nvmlDeviceGetMigMode(self, device):
        return list(self._need(self._gpu(device, "nvmlDeviceGetMigMode").mig_mode))

    def nvmlDeviceGetMaxMigDeviceCount(self, device):
        self._need(self._gpu(device, "nvmlDeviceGetMaxMigDeviceCount").mig_mode)
        return 7

    def nvmlDeviceGetMigDeviceHandleByIndex(self, device, index):
        gpu = self._gpu(device, "nvmlDeviceGetMigDeviceHandleByIndex")
        if index >= len(gpu.mig_uuids):
            _fail(pynvml.NVML_ERROR_NOT_FOUND)
        return _Handle(device.index, index)

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        gpu = self._gpu(handle, "nvmlDeviceGetComputeRunningProcesses")
        return [
            SimpleNamespace(pid=pid, usedGpuMemory=mem, gpuInstanceId=0xFFFFFFFF,
                            computeInstanceId=0xFFFFFFFF)
            for pid, mem in gpu.processes
        ]  # fmt: skip

    def nvmlDeviceGetNumaNodeId(self, handle):
        return self._need(self._gpu(handle, "nvmlDeviceGetNumaNodeId").numa_node)

    def nvmlDeviceGetCpuAffinity(self, handle, cpuSetSize):
        mask = self._gpu(handle, "nvmlDeviceGetCpuAffinity").cpu_mask
        return (mask + [0] * cpuSetSize)[:cpuSetSize]
