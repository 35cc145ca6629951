"""A stand-in for `pynvml`, driven by the simulator's state file (HEADROOM_SIM_STATE).

Same function names, return shapes, units, constants and error classes as nvidia-ml-py
(see gpu-facts.md §3): errors are `NVMLError` subclasses with `.value`, and `NVMLError(3)`
builds an `NVMLError_NotSupported`. Consumer GPUs answer NotSupported where real GeForce
boards do (ECC, remapped rows, MIG). `bind(path)` selects the state file;
`nvidia_smi_topo_m()` returns the machine's `nvidia-smi topo -m` text.
"""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace

from headroom.simulator import nvml_defs as _defs
from headroom.simulator.nvml_defs import (
    NVML_CLOCK_MEM,
    NVML_FEATURE_DISABLED,
    NVML_FEATURE_ENABLED,
    NVML_NVLINK_DEVICE_TYPE_GPU,
    NVML_NVLINK_DEVICE_TYPE_SWITCH,
    NVML_P2P_CAPS_INDEX_NVLINK,
    NVML_P2P_STATUS_GPU_NOT_SUPPORTED,
    NVML_P2P_STATUS_NOT_SUPPORTED,
    NVML_P2P_STATUS_OK,
    NVML_PCIE_UTIL_RX_BYTES,
    NVML_TEMPERATURE_GPU,
    NVML_TOPOLOGY_INTERNAL,
    NVML_TOPOLOGY_SYSTEM,
    NVMLError,
    nvmlMemory_v2,
)

# Everything pynvml exposes at module level (constants, NVMLError_* classes) is here too.
globals().update({k: v for k, v in vars(_defs).items() if k.startswith(("NVML", "nvml"))})

# A probe sample makes a few hundred calls within milliseconds; asking the file system whether
# the state changed cost a system call on every one of them. The state file is looked at again
# only once this long has passed since the last look (one look per sample at a 1 s interval).
RECHECK_S = 0.2

_state_path: str | None = None
_cache: tuple[float, dict] | None = None
_checked_at = 0.0  # time.monotonic() of the last successful look at the state file
_initialized = 0


def bind(path: str | os.PathLike) -> None:
    """Point the stand-in at a simulator's state file."""
    global _state_path, _cache
    _state_path, _cache = os.fspath(path), None


def _state() -> dict:
    global _cache, _checked_at
    if not _state_path:
        raise NVMLError(12)
    now = time.monotonic()
    if _cache is not None and now - _checked_at < RECHECK_S:
        return _cache[1]
    try:
        mtime = os.stat(_state_path).st_mtime
        if _cache is None or _cache[0] != mtime:
            with open(_state_path, encoding="utf-8") as fh:
                _cache = (mtime, json.load(fh))
        _checked_at = now
        return _cache[1]
    except (OSError, ValueError):
        raise NVMLError(9) from None  # no state yet: as if the driver were not loaded


class _Handle:
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __repr__(self) -> str:
        return f"<c_nvmlDevice_t sim {self.index}>"


def _gpu(handle) -> dict:
    if not _initialized:
        raise NVMLError(1)
    if not isinstance(handle, _Handle):
        raise NVMLError(2)
    gpus = _state()["gpus"]
    if not 0 <= handle.index < len(gpus):
        raise NVMLError(15)
    return gpus[handle.index]


def _datacenter_only(g: dict) -> None:
    if not g.get("ecc_supported", True):
        raise NVMLError(3)


# --- init and system ------------------------------------------------------------------------
def nvmlInit() -> None:
    global _initialized
    _state()
    _initialized += 1


def nvmlInitWithFlags(flags: int) -> None:
    nvmlInit()


def nvmlShutdown() -> None:
    global _initialized
    if not _initialized:
        raise NVMLError(1)
    _initialized -= 1


def nvmlSystemGetDriverVersion() -> str:
    return str(_state()["driver_version"])


def nvmlSystemGetCudaDriverVersion() -> int:
    return int(_state()["cuda_driver_version"])


nvmlSystemGetCudaDriverVersion_v2 = nvmlSystemGetCudaDriverVersion


def nvmlSystemGetNVMLVersion() -> str:
    return "12." + str(_state()["driver_version"])


# --- devices --------------------------------------------------------------------------------
def nvmlDeviceGetCount() -> int:
    if not _initialized:
        raise NVMLError(1)
    return len(_state()["gpus"])


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:
    if not 0 <= index < nvmlDeviceGetCount():
        raise NVMLError(2)
    return _Handle(index)


def nvmlDeviceGetHandleByUUID(uuid: str) -> _Handle:
    for g in _state()["gpus"]:
        if g["uuid"] == uuid:
            return _Handle(g["index"])
    raise NVMLError(6)


def nvmlDeviceGetHandleByPciBusId(bus_id: str) -> _Handle:
    for g in _state()["gpus"]:
        if g["pci_bus_id"].lower().endswith(bus_id.lower()[-12:]):
            return _Handle(g["index"])
    raise NVMLError(6)


def nvmlDeviceGetIndex(handle) -> int:
    return int(_gpu(handle)["index"])


def nvmlDeviceGetName(handle) -> str:
    return str(_gpu(handle)["name"])


def nvmlDeviceGetUUID(handle) -> str:
    return str(_gpu(handle)["uuid"])


def nvmlDeviceGetPciInfo(handle) -> SimpleNamespace:
    bus_id = _gpu(handle)["pci_bus_id"]
    bus = int(bus_id.split(":")[1], 16)
    return SimpleNamespace(
        busId=bus_id,
        busIdLegacy=bus_id[4:],
        domain=0,
        bus=bus,
        device=0,
        pciDeviceId=0x233010DE,
        pciSubSystemId=0x16C110DE,
    )


nvmlDeviceGetPciInfo_v3 = nvmlDeviceGetPciInfo


def nvmlDeviceGetMemoryInfo(handle, version: int | None = None) -> SimpleNamespace:
    g = _gpu(handle)
    if version == nvmlMemory_v2:
        return SimpleNamespace(
            version=version,
            total=g["memory_total"],
            reserved=g["memory_reserved"],
            free=g["memory_free"],
            used=g["memory_used"],
        )
    # v1 counts reserved memory as used too, like the real v1 call.
    return SimpleNamespace(total=g["memory_total"], free=g["memory_free"], used=g["memory_used"])


def nvmlDeviceGetUtilizationRates(handle) -> SimpleNamespace:
    g = _gpu(handle)
    return SimpleNamespace(gpu=g["util_gpu"], memory=g["util_memory"])


def nvmlDeviceGetTemperature(handle, sensor: int = NVML_TEMPERATURE_GPU) -> int:
    return int(_gpu(handle)["temperature_c"])


def nvmlDeviceGetPowerUsage(handle) -> int:
    return int(_gpu(handle)["power_mw"])


def nvmlDeviceGetEnforcedPowerLimit(handle) -> int:
    return int(_gpu(handle)["power_limit_mw"])


nvmlDeviceGetPowerManagementLimit = nvmlDeviceGetEnforcedPowerLimit


def nvmlDeviceGetClockInfo(handle, clock_type: int) -> int:
    g = _gpu(handle)
    return int(g["mem_clock_mhz"] if clock_type == NVML_CLOCK_MEM else g["sm_clock_mhz"])


def nvmlDeviceGetMaxClockInfo(handle, clock_type: int) -> int:
    g = _gpu(handle)
    return int(g["mem_clock_max_mhz"] if clock_type == NVML_CLOCK_MEM else g["sm_clock_max_mhz"])


def nvmlDeviceGetCurrentClocksEventReasons(handle) -> int:
    return int(_gpu(handle)["clocks_event_reasons"])


nvmlDeviceGetCurrentClocksThrottleReasons = nvmlDeviceGetCurrentClocksEventReasons


def nvmlDeviceGetCurrPcieLinkGeneration(handle) -> int:
    return int(_gpu(handle)["pcie_gen"])


def nvmlDeviceGetMaxPcieLinkGeneration(handle) -> int:
    return int(_gpu(handle)["pcie_gen_max"])


nvmlDeviceGetGpuMaxPcieLinkGeneration = nvmlDeviceGetMaxPcieLinkGeneration


def nvmlDeviceGetCurrPcieLinkWidth(handle) -> int:
    return int(_gpu(handle)["pcie_width"])


def nvmlDeviceGetMaxPcieLinkWidth(handle) -> int:
    return int(_gpu(handle)["pcie_width_max"])


def nvmlDeviceGetPcieThroughput(handle, counter: int) -> int:
    g = _gpu(handle)
    return int(g["pcie_rx_kbps"] if counter == NVML_PCIE_UTIL_RX_BYTES else g["pcie_tx_kbps"])


def _links(handle) -> list[bool]:
    links = _gpu(handle).get("nvlinks")
    if links is None:
        raise NVMLError(3)
    return links


def nvmlDeviceGetNvLinkState(handle, link: int) -> int:
    links = _links(handle)
    if not 0 <= link < len(links):
        raise NVMLError(2)
    return NVML_FEATURE_ENABLED if links[link] else NVML_FEATURE_DISABLED


def _peer_of(handle) -> int | None:
    """The GPU at the other end of this GPU's NVLinks, or None when they go to NVSwitches."""
    state = _state()
    if state["machine"]["interconnect"] != "nvlink-pairs":
        return None
    peer = handle.index ^ 1
    return peer if peer < len(state["gpus"]) else None


def nvmlDeviceGetNvLinkRemoteDeviceType(handle, link: int) -> int:
    nvmlDeviceGetNvLinkState(handle, link)
    return (
        NVML_NVLINK_DEVICE_TYPE_GPU
        if _peer_of(handle) is not None
        else (NVML_NVLINK_DEVICE_TYPE_SWITCH)
    )


def nvmlDeviceGetNvLinkRemotePciInfo(handle, link: int) -> SimpleNamespace:
    nvmlDeviceGetNvLinkState(handle, link)
    peer = _peer_of(handle)
    if peer is not None:
        return nvmlDeviceGetPciInfo(_Handle(peer))
    switch = f"00000000:{0xC0 + link % 4:02X}:00.0"
    return SimpleNamespace(
        busId=switch,
        busIdLegacy=switch[4:],
        domain=0,
        bus=0xC0 + link % 4,
        device=0,
        pciDeviceId=0x22A310DE,
        pciSubSystemId=0,
    )


def nvmlDeviceGetComputeRunningProcesses(handle) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(
            pid=p["pid"],
            usedGpuMemory=p["used_memory"],
            gpuInstanceId=0xFFFFFFFF,
            computeInstanceId=0xFFFFFFFF,
        )
        for p in _gpu(handle)["processes"]
    ]


nvmlDeviceGetComputeRunningProcesses_v2 = nvmlDeviceGetComputeRunningProcesses
nvmlDeviceGetComputeRunningProcesses_v3 = nvmlDeviceGetComputeRunningProcesses


def nvmlDeviceGetGraphicsRunningProcesses(handle) -> list:
    _gpu(handle)
    return []


def nvmlDeviceGetP2PStatus(handle1, handle2, index: int) -> int:
    g1, g2 = _gpu(handle1), _gpu(handle2)
    code = _state()["links"][g1["index"]][g2["index"]]
    if code.startswith("NV"):
        return NVML_P2P_STATUS_OK
    if not g1.get("ecc_supported", True):  # GeForce: no P2P over PCIe ("GNS")
        return NVML_P2P_STATUS_GPU_NOT_SUPPORTED
    if index == NVML_P2P_CAPS_INDEX_NVLINK:
        return NVML_P2P_STATUS_NOT_SUPPORTED
    return NVML_P2P_STATUS_OK


_LEVELS = {"PIX": 10, "PXB": 20, "PHB": 30, "NODE": 40, "SYS": 50}


def nvmlDeviceGetTopologyCommonAncestor(handle1, handle2) -> int:
    g1, g2 = _gpu(handle1), _gpu(handle2)
    if g1["index"] == g2["index"]:
        return NVML_TOPOLOGY_INTERNAL
    return _LEVELS.get(_state()["pcie_links"][g1["index"]][g2["index"]], NVML_TOPOLOGY_SYSTEM)


def nvmlDeviceGetNumaNodeId(handle) -> int:
    g = _gpu(handle)
    n = len(_state()["gpus"])
    return 0 if n <= 2 else g["index"] // max(1, n // 2)


def nvmlDeviceGetCpuAffinity(handle, cpu_set_size: int) -> list[int]:
    node = nvmlDeviceGetNumaNodeId(handle)
    return [0xFFFFFFFF << (32 * node) & 0xFFFFFFFFFFFFFFFF] + [0] * max(0, cpu_set_size - 1)


def nvmlDeviceGetEccMode(handle) -> list[int]:
    _datacenter_only(_gpu(handle))
    return [1, 1]


def nvmlDeviceGetTotalEccErrors(handle, error_type: int, counter_type: int) -> int:
    _datacenter_only(_gpu(handle))
    return 0


def nvmlDeviceGetRemappedRows(handle) -> tuple[int, int, int, int]:
    _datacenter_only(_gpu(handle))
    return (0, 0, 0, 0)


def nvmlDeviceGetMigMode(handle) -> list[int]:
    _datacenter_only(_gpu(handle))
    return [0, 0]


def nvmlDeviceGetMaxMigDeviceCount(handle) -> int:
    _datacenter_only(_gpu(handle))
    return 7


def nvmlDeviceGetMigDeviceHandleByIndex(handle, index: int):
    raise NVMLError(6)


def nvmlDeviceGetFanSpeed(handle) -> int:
    g = _gpu(handle)
    if g.get("ecc_supported", True):
        raise NVMLError(3)  # passively cooled datacenter boards have no fan reading
    return 30 + g["util_gpu"] // 2


def nvidia_smi_topo_m() -> str:
    """`nvidia-smi topo -m` as the simulated machine would print it."""
    return str(_state()["topo_m"])
