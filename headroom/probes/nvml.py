"""Per-GPU readings through NVML (nvidia-ml-py), one frozen `GpuSnapshot` per sample.

Every call goes through `NvmlCaller` (nvml_calls.py): a field NVML cannot give is None, a GPU
that falls off the bus is `lost=True` while the others keep reporting, and a machine without
driver, library or GPU gives `available=False` with one reason instead of an exception.

Static facts (name, UUID, bus id, maxima, NVLink count) are read once per GPU and cached, so
a steady-state sample costs roughly twenty NVML calls per GPU.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Any

from headroom.probes.gpu_processes import (
    ForeignUse,
    GpuProcess,
    ProcessLookup,
    describe_process,
    foreign_memory,
    ordering_caveat,
    psutil_lookup,
    visible_gpus,
)
from headroom.probes.nvml_calls import (
    GpuLost,
    NvmlCaller,
    init_failure_reason,
    load_nvml_module,
    to_str,
)

__all__ = [
    "ForeignUse",
    "GpuProcess",
    "GpuReading",
    "GpuSnapshot",
    "NvLink",
    "NvmlProbe",
    "THROTTLE_REASON_BITS",
    "foreign_memory",
    "load_nvml_module",
    "ordering_caveat",
    "visible_gpus",
]

# nvmlClocksEventReason* bits (pynvml.py 13.615.71); names are Headroom's stable strings.
THROTTLE_REASON_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}

_NVLINK_MAX_LINKS = 18  # NVML_NVLINK_MAX_LINKS is 18 in older bindings, 36 in 13.x
_TEMPERATURE_GPU = 0
_CLOCK_SM, _CLOCK_MEM = 1, 2
_PCIE_TX, _PCIE_RX = 0, 1
_ECC_CORRECTED, _ECC_UNCORRECTED, _ECC_VOLATILE = 0, 1, 0


@dataclass(frozen=True)
class NvLink:
    """One NVLink of a GPU: whether it is up and which PCI device is on the other end."""

    link: int
    active: bool | None
    remote_bus_id: str | None  # a peer GPU, or an NVSwitch on switched systems


@dataclass(frozen=True)
class GpuReading:
    """Everything NVML told us about one GPU in one sample; None = NVML could not say."""

    index: int
    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    lost: bool
    memory_total: int | None
    memory_used: int | None
    memory_reserved: int | None
    memory_free: int | None
    util_gpu: float | None
    util_memory: float | None
    temperature_c: float | None
    power_w: float | None
    power_limit_w: float | None
    sm_clock_mhz: int | None
    sm_clock_max_mhz: int | None
    mem_clock_mhz: int | None
    mem_clock_max_mhz: int | None
    throttle_reasons: tuple[str, ...] | None
    pcie_gen: int | None
    pcie_gen_max: int | None
    pcie_width: int | None
    pcie_width_max: int | None
    pcie_tx_kbps: float | None
    pcie_rx_kbps: float | None
    nvlinks: tuple[NvLink, ...]
    ecc_corrected: int | None
    ecc_uncorrected: int | None
    remapped_rows_pending: bool | None
    remapped_rows_failure: bool | None
    mig_enabled: bool | None
    processes: tuple[GpuProcess, ...]
    # Added beyond the contract (defaults keep hand-built readings in tests valid):
    mig_uuids: tuple[str, ...] = ()
    numa_node: int | None = None


@dataclass(frozen=True)
class GpuSnapshot:
    """All GPUs at one moment, or why there are none (`available=False`, `reason`)."""

    taken_at: float
    available: bool
    reason: str | None
    driver_version: str | None
    cuda_version: str | None
    gpus: tuple[GpuReading, ...]
    unsupported: tuple[str, ...]


def lost_reading(index: int, static: dict[str, Any] | None = None) -> GpuReading:
    """A reading for a GPU that stopped answering: identity from the cache, nothing else."""
    static = static or {}
    return GpuReading(
        index=index,
        name=static.get("name"),
        uuid=static.get("uuid"),
        pci_bus_id=static.get("pci_bus_id"),
        lost=True,
        memory_total=static.get("memory_total"),
        memory_used=None,
        memory_reserved=None,
        memory_free=None,
        util_gpu=None,
        util_memory=None,
        temperature_c=None,
        power_w=None,
        power_limit_w=None,
        sm_clock_mhz=None,
        sm_clock_max_mhz=static.get("sm_clock_max_mhz"),
        mem_clock_mhz=None,
        mem_clock_max_mhz=static.get("mem_clock_max_mhz"),
        throttle_reasons=None,
        pcie_gen=None,
        pcie_gen_max=static.get("pcie_gen_max"),
        pcie_width=None,
        pcie_width_max=static.get("pcie_width_max"),
        pcie_tx_kbps=None,
        pcie_rx_kbps=None,
        nvlinks=(),
        ecc_corrected=None,
        ecc_uncorrected=None,
        remapped_rows_pending=None,
        remapped_rows_failure=None,
        mig_enabled=None,
        processes=(),
    )


def _cuda_version(raw: Any) -> str | None:
    """nvmlSystemGetCudaDriverVersion gives 12080 for CUDA 12.8."""
    if not isinstance(raw, int) or raw <= 0:
        return None
    return f"{raw // 1000}.{(raw % 1000) // 10}"


def _throttle_names(mask: Any) -> tuple[str, ...] | None:
    if not isinstance(mask, int):
        return None
    return tuple(name for bit, name in THROTTLE_REASON_BITS.items() if mask & bit)


def _attr(obj: Any, name: str) -> Any:
    return getattr(obj, name, None) if obj is not None else None


def _num(value: Any, scale: float = 1.0) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value / scale
    return None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


class NvmlProbe:
    """Reads all GPUs through a pynvml-like module; `read()` never raises.

    One probe keeps NVML initialised between samples (`close()` shuts it down). Reads are
    serialised with a lock so a slow sample never overlaps the next one.
    """

    def __init__(self, nvml: Any = None, *, process_lookup: ProcessLookup = psutil_lookup) -> None:
        self._nvml = nvml
        self._lookup = process_lookup
        self._caller: NvmlCaller | None = None
        self._failure: str | None = None
        self._started = False
        self._lock = threading.Lock()
        self._handles: dict[int, Any] = {}
        self._static: dict[int, dict[str, Any]] = {}

    @property
    def nvml(self) -> Any:
        """The pynvml-like module in use (None until the first read, or when none loaded)."""
        return self._nvml if self._caller is not None else None

    # -- life cycle -------------------------------------------------------------------------
    def _start(self) -> NvmlCaller | None:
        if self._started:
            return self._caller
        self._started = True
        try:
            nvml = self._nvml if self._nvml is not None else load_nvml_module()
            nvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - no driver / no library is a state, not a crash
            self._failure = init_failure_reason(exc)
            return None
        self._nvml = nvml
        self._caller = NvmlCaller(nvml)
        return self._caller

    def close(self) -> None:
        """Shut NVML down if this probe started it."""
        with self._lock:
            if self._caller is not None:
                self._caller.call("nvmlShutdown")
            self._caller = None
            self._started = False
            self._handles.clear()

    # -- sampling ---------------------------------------------------------------------------
    def read(self) -> GpuSnapshot:
        """One sample of every GPU. Blocking; never raises."""
        with self._lock:
            try:
                return self._read()
            except Exception as exc:  # noqa: BLE001 - last line of defence for a monitor
                return self._unavailable(f"NVML read failed: {exc}")

    async def sample(self) -> GpuSnapshot:
        """`read()` in a worker thread, for asyncio callers."""
        return await asyncio.to_thread(self.read)

    def _unavailable(self, reason: str) -> GpuSnapshot:
        return GpuSnapshot(time.monotonic(), False, reason, None, None, (), ())

    def _read(self) -> GpuSnapshot:
        caller = self._start()
        if caller is None:
            return self._unavailable(self._failure or "NVML unavailable")
        count = _int(caller.call("nvmlDeviceGetCount"))
        if not count:
            return GpuSnapshot(
                time.monotonic(),
                False,
                "NVML found no GPUs",
                to_str(caller.call("nvmlSystemGetDriverVersion")),
                self._cuda(caller),
                (),
                tuple(caller.unsupported),
            )
        readings = tuple(self._read_gpu(caller, i) for i in range(count))
        return GpuSnapshot(
            taken_at=time.monotonic(),
            available=True,
            reason=None,
            driver_version=to_str(caller.call("nvmlSystemGetDriverVersion")),
            cuda_version=self._cuda(caller),
            gpus=readings,
            unsupported=tuple(caller.unsupported),
        )

    def _cuda(self, caller: NvmlCaller) -> str | None:
        raw = caller.call("nvmlSystemGetCudaDriverVersion_v2")
        if raw is None:
            raw = caller.call("nvmlSystemGetCudaDriverVersion")
        return _cuda_version(raw)

    def _read_gpu(self, caller: NvmlCaller, index: int) -> GpuReading:
        try:
            handle = self._handles.get(index)
            if handle is None:
                handle = caller.call("nvmlDeviceGetHandleByIndex", index, gpu=index)
                if handle is None:
                    return lost_reading(index, self._static.get(index))
                self._handles[index] = handle
            return self._read_handle(caller, index, handle)
        except GpuLost:
            # Forget the handle: if the GPU is reset and comes back, the next sample retries.
            self._handles.pop(index, None)
            caller.forget_gpu(index)
            return lost_reading(index, self._static.get(index))

    def _static_facts(self, caller: NvmlCaller, index: int, h: Any) -> dict[str, Any]:
        static = self._static.get(index)
        if static is not None:
            return static

        def c(name: str, *args: Any) -> Any:
            return caller.call(name, h, *args, gpu=index)

        pci = c("nvmlDeviceGetPciInfo")
        static = {
            "name": to_str(c("nvmlDeviceGetName")),
            "uuid": to_str(c("nvmlDeviceGetUUID")),
            "pci_bus_id": to_str(_attr(pci, "busId")),
            "sm_clock_max_mhz": _int(c("nvmlDeviceGetMaxClockInfo", _CLOCK_SM)),
            "mem_clock_max_mhz": _int(c("nvmlDeviceGetMaxClockInfo", _CLOCK_MEM)),
            "pcie_gen_max": _int(c("nvmlDeviceGetMaxPcieLinkGeneration")),
            "pcie_width_max": _int(c("nvmlDeviceGetMaxPcieLinkWidth")),
            "numa_node": _int(c("nvmlDeviceGetNumaNodeId")),
        }
        # NVLink count: probe links until the first one NVML does not know.
        links = 0
        while links < _NVLINK_MAX_LINKS and c("nvmlDeviceGetNvLinkState", links) is not None:
            links += 1
        static["nvlink_count"] = links
        self._static[index] = static
        return static

    def _read_handle(self, caller: NvmlCaller, index: int, h: Any) -> GpuReading:
        def c(name: str, *args: Any, **kwargs: Any) -> Any:
            return caller.call(name, h, *args, gpu=index, **kwargs)

        static = self._static_facts(caller, index, h)
        total = used = reserved = free = None
        v2 = getattr(caller.nvml, "nvmlMemory_v2", None)
        mem = c("nvmlDeviceGetMemoryInfo", version=v2) if v2 is not None else None
        if mem is None:
            mem = c("nvmlDeviceGetMemoryInfo")
        if mem is not None:
            total, used, free = _int(mem.total), _int(mem.used), _int(mem.free)
            reserved = _int(getattr(mem, "reserved", None))
        util = c("nvmlDeviceGetUtilizationRates")
        limit = c("nvmlDeviceGetEnforcedPowerLimit")
        if limit is None:
            limit = c("nvmlDeviceGetPowerManagementLimit")
        reasons = c("nvmlDeviceGetCurrentClocksEventReasons")
        if reasons is None:
            reasons = c("nvmlDeviceGetCurrentClocksThrottleReasons")
        nvlinks = []
        for link in range(static["nvlink_count"]):
            state = c("nvmlDeviceGetNvLinkState", link)
            active = None if state is None else bool(state)
            remote = c("nvmlDeviceGetNvLinkRemotePciInfo", link) if active else None
            nvlinks.append(NvLink(link, active, to_str(_attr(remote, "busId"))))
        ecc_mode = c("nvmlDeviceGetEccMode")
        ecc_on = bool(ecc_mode[0]) if isinstance(ecc_mode, list | tuple) and ecc_mode else False
        rows = c("nvmlDeviceGetRemappedRows")
        rows_ok = isinstance(rows, list | tuple) and len(rows) >= 4
        mig_mode = c("nvmlDeviceGetMigMode")
        mig_on = bool(mig_mode[0]) if isinstance(mig_mode, list | tuple) and mig_mode else None
        return GpuReading(
            index=index,
            name=static["name"],
            uuid=static["uuid"],
            pci_bus_id=static["pci_bus_id"],
            lost=False,
            memory_total=total,
            memory_used=used,
            memory_reserved=reserved,
            memory_free=free,
            util_gpu=_num(_attr(util, "gpu")),
            util_memory=_num(_attr(util, "memory")),
            temperature_c=_num(c("nvmlDeviceGetTemperature", _TEMPERATURE_GPU)),
            power_w=_num(c("nvmlDeviceGetPowerUsage"), 1000.0),
            power_limit_w=_num(limit, 1000.0),
            sm_clock_mhz=_int(c("nvmlDeviceGetClockInfo", _CLOCK_SM)),
            sm_clock_max_mhz=static["sm_clock_max_mhz"],
            mem_clock_mhz=_int(c("nvmlDeviceGetClockInfo", _CLOCK_MEM)),
            mem_clock_max_mhz=static["mem_clock_max_mhz"],
            throttle_reasons=_throttle_names(reasons),
            pcie_gen=_int(c("nvmlDeviceGetCurrPcieLinkGeneration")),
            pcie_gen_max=static["pcie_gen_max"],
            pcie_width=_int(c("nvmlDeviceGetCurrPcieLinkWidth")),
            pcie_width_max=static["pcie_width_max"],
            pcie_tx_kbps=_num(c("nvmlDeviceGetPcieThroughput", _PCIE_TX)),
            pcie_rx_kbps=_num(c("nvmlDeviceGetPcieThroughput", _PCIE_RX)),
            nvlinks=tuple(nvlinks),
            ecc_corrected=_int(c("nvmlDeviceGetTotalEccErrors", _ECC_CORRECTED, _ECC_VOLATILE))
            if ecc_on
            else None,
            ecc_uncorrected=_int(c("nvmlDeviceGetTotalEccErrors", _ECC_UNCORRECTED, _ECC_VOLATILE))
            if ecc_on
            else None,
            remapped_rows_pending=bool(rows[2]) if rows_ok else None,
            remapped_rows_failure=bool(rows[3]) if rows_ok else None,
            mig_enabled=mig_on,
            processes=self._processes(caller, index, h),
            mig_uuids=self._mig_uuids(caller, index, h) if mig_on else (),
            numa_node=static["numa_node"],
        )

    def _processes(self, caller: NvmlCaller, index: int, h: Any) -> tuple[GpuProcess, ...]:
        raw = caller.call("nvmlDeviceGetComputeRunningProcesses", h, gpu=index)
        if raw is None:  # e.g. NVMLLibraryMismatchError: the driver lacks the _v3 symbol
            raw = caller.call("nvmlDeviceGetComputeRunningProcesses_v2", h, gpu=index)
        procs = []
        for entry in raw or ():
            pid = _int(_attr(entry, "pid"))
            if pid is None:
                continue
            procs.append(describe_process(pid, _int(_attr(entry, "usedGpuMemory")), self._lookup))
        return tuple(procs)

    def _mig_uuids(self, caller: NvmlCaller, index: int, h: Any) -> tuple[str, ...]:
        count = _int(caller.call("nvmlDeviceGetMaxMigDeviceCount", h, gpu=index)) or 0
        uuids = []
        for slot in range(count):
            mig = caller.call("nvmlDeviceGetMigDeviceHandleByIndex", h, slot, gpu=index)
            if mig is None:
                continue
            uuid = to_str(caller.call("nvmlDeviceGetUUID", mig, gpu=index, peer=-1 - slot))
            if uuid:
                uuids.append(uuid)
        return tuple(uuids)
