"""Per-GPU readings through NVML (nvidia-ml-py), one frozen `GpuSnapshot` per sample.

Every call goes through `NvmlCaller` (nvml_calls.py): a field NVML cannot give is None, a GPU
that falls off the bus is `lost=True` while the others keep reporting, and a machine without
driver, library or GPU gives `available=False` with one reason instead of an exception.

Fixed facts (name, UUID, bus id, power limit, maxima, MIG and ECC mode, NVLink count and
peers, driver and CUDA versions) are read once per GPU handle and cached: a GPU that was lost
and came back, or NVML started again, gets a new handle and so a fresh read. A steady-state
sample then costs only the live readings, about twenty NVML calls per GPU on an NVLink node.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
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
from headroom.probes.nvml_types import (
    THROTTLE_REASON_BITS,
    GpuReading,
    GpuSnapshot,
    NvLink,
    as_float,
    as_int,
    attr_or_none,
    cuda_version_text,
    lost_reading,
    snapshot_to_json,
    throttle_names,
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
    "lost_reading",
    "snapshot_to_json",
    "load_nvml_module",
    "ordering_caveat",
    "visible_gpus",
]

_NVLINK_MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS in 13.x; probing stops at the first unknown link
_TEMPERATURE_GPU = 0
_CLOCK_SM, _CLOCK_MEM = 1, 2
_PCIE_TX, _PCIE_RX = 0, 1
_ECC_CORRECTED, _ECC_UNCORRECTED, _ECC_VOLATILE = 0, 1, 0


class NvmlProbe:
    """Reads all GPUs through a pynvml-like module; `read()` never raises.

    One probe keeps NVML initialised between samples (`close()` shuts it down). Reads are
    serialised with a lock so a slow sample never overlaps the next one.
    """

    def __init__(
        self,
        nvml: Any = None,
        *,
        process_lookup: ProcessLookup = psutil_lookup,
        retry_init_s: float = 15.0,
    ) -> None:
        self._nvml = nvml
        self._lookup = process_lookup
        self._caller: NvmlCaller | None = None
        self._failure: str | None = None
        self._started = False
        self._failed_at = 0.0
        self.retry_init_s = retry_init_s
        self._lock = threading.Lock()
        self._handles: dict[int, Any] = {}
        self._static: dict[int, dict[str, Any]] = {}
        # index -> the handle its fixed facts were read through (kept past a loss, for identity)
        self._static_handle: dict[int, Any] = {}
        # system-wide facts (driver/CUDA version) of the current NVML session
        self._system: dict[str, Any] = {}
        # pid -> (name, cmdline): a process keeps its title for life, so psutil is asked once
        # per pid; entries for pids gone from every GPU are dropped after each sample.
        self._names: dict[int, tuple[str | None, str | None]] = {}
        self._seen: set[int] = set()

    @property
    def nvml(self) -> Any:
        """The pynvml-like module in use (None until the first read, or when none loaded)."""
        return self._nvml if self._caller is not None else None

    # -- life cycle -------------------------------------------------------------------------
    def _start(self) -> NvmlCaller | None:
        if self._caller is not None:
            return self._caller
        now = time.monotonic()
        if self._started and now - self._failed_at < self.retry_init_s:
            return None  # said so already; ask the driver again only now and then
        self._started, self._failed_at = True, now
        try:
            nvml = self._nvml if self._nvml is not None else load_nvml_module()
            nvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - no driver / no library is a state, not a crash
            # A driver can come up after us (or a simulator's state file appear): retry later.
            self._failure = init_failure_reason(exc)
            return None
        self._nvml = nvml
        self._caller = NvmlCaller(nvml)
        self._system.clear()
        return self._caller

    def close(self) -> None:
        """Shut NVML down if this probe started it."""
        with self._lock:
            if self._caller is not None:
                self._caller.call("nvmlShutdown")
            self._caller = None
            self._started = False
            self._handles.clear()
            self._system.clear()

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
        count = as_int(caller.call("nvmlDeviceGetCount"))
        if not count:
            return GpuSnapshot(
                time.monotonic(),
                False,
                "NVML found no GPUs" if count == 0 else "NVML could not count the GPUs",
                self._driver(caller),
                self._cuda(caller),
                (),
                tuple(caller.unsupported),
            )
        self._seen = set()
        readings = tuple(self._read_gpu(caller, i) for i in range(count))
        self._names = {pid: v for pid, v in self._names.items() if pid in self._seen}
        return GpuSnapshot(
            taken_at=time.monotonic(),
            available=True,
            reason=None,
            driver_version=self._driver(caller),
            cuda_version=self._cuda(caller),
            gpus=readings,
            unsupported=tuple(caller.unsupported),
        )

    def _driver(self, caller: NvmlCaller) -> str | None:
        # Fixed while NVML is up (a driver upgrade needs a re-init); None is asked again.
        return _sticky(
            self._system, "driver", lambda: to_str(caller.call("nvmlSystemGetDriverVersion"))
        )

    def _cuda(self, caller: NvmlCaller) -> str | None:
        def read() -> str | None:
            raw = caller.first_of(
                [
                    ("nvmlSystemGetCudaDriverVersion_v2", (), {}),
                    ("nvmlSystemGetCudaDriverVersion", (), {}),
                ]
            )
            return cuda_version_text(raw)

        return _sticky(self._system, "cuda", read)

    def _read_gpu(self, caller: NvmlCaller, index: int) -> GpuReading:
        try:
            handle = self._handles.get(index)
            if handle is None:
                handle = caller.call("nvmlDeviceGetHandleByIndex", index, gpu=index)
                if handle is None:  # e.g. NoPermission: counted by NVML but not ours to read
                    return lost_reading(index, self._static.get(index), lost=False)
                self._handles[index] = handle
            return self._read_handle(caller, index, handle)
        except GpuLost:
            # Forget the handle: if the GPU is reset and comes back, the next sample retries.
            self._handles.pop(index, None)
            caller.forget_gpu(index)
            return lost_reading(index, self._static.get(index))
        except Exception:  # noqa: BLE001 - nonsense from one GPU must not hide the others
            return lost_reading(index, self._static.get(index), lost=False)

    def _static_facts(self, caller: NvmlCaller, index: int, h: Any) -> dict[str, Any]:
        static = self._static.get(index)
        if static is not None and self._static_handle.get(index) is h:
            return static

        def c(name: str, *args: Any) -> Any:
            return caller.call(name, h, *args, gpu=index)

        pci = c("nvmlDeviceGetPciInfo")
        static = {
            "name": to_str(c("nvmlDeviceGetName")),
            "uuid": to_str(c("nvmlDeviceGetUUID")),
            "pci_bus_id": to_str(attr_or_none(pci, "busId")),
            "sm_clock_max_mhz": as_int(c("nvmlDeviceGetMaxClockInfo", _CLOCK_SM)),
            "mem_clock_max_mhz": as_int(c("nvmlDeviceGetMaxClockInfo", _CLOCK_MEM)),
            "pcie_gen_max": as_int(c("nvmlDeviceGetMaxPcieLinkGeneration")),
            "pcie_width_max": as_int(c("nvmlDeviceGetMaxPcieLinkWidth")),
            "numa_node": as_int(c("nvmlDeviceGetNumaNodeId")),
        }
        # NVLink count: probe links until the first one NVML does not know.
        links = 0
        while links < _NVLINK_MAX_LINKS and c("nvmlDeviceGetNvLinkState", links) is not None:
            links += 1
        static["nvlink_count"] = links
        self._static[index] = static
        self._static_handle[index] = h
        return static

    def _read_handle(self, caller: NvmlCaller, index: int, h: Any) -> GpuReading:
        def c(name: str, *args: Any, **kwargs: Any) -> Any:
            return caller.call(name, h, *args, gpu=index, **kwargs)

        static = self._static_facts(caller, index, h)
        total = used = reserved = free = None
        v2 = getattr(caller.nvml, "nvmlMemory_v2", None)
        mem = caller.first_of(
            [("nvmlDeviceGetMemoryInfo", (h,), {"version": v2})] * (v2 is not None)
            + [("nvmlDeviceGetMemoryInfo", (h,), {})],
            gpu=index,
        )
        if mem is not None:
            total, used = as_int(attr_or_none(mem, "total")), as_int(attr_or_none(mem, "used"))
            free = as_int(attr_or_none(mem, "free"))
            reserved = as_int(attr_or_none(mem, "reserved"))
        util = c("nvmlDeviceGetUtilizationRates")
        # Fixed facts read on the first sample through this handle (see `_sticky`): the power
        # limit, and the MIG and ECC modes, which change only through a GPU reset or reboot.
        limit = _sticky(static, "power_limit", lambda: caller.first_of(
            [("nvmlDeviceGetEnforcedPowerLimit", (h,), {}),
             ("nvmlDeviceGetPowerManagementLimit", (h,), {})],
            gpu=index,
        ))  # fmt: skip
        # The ...ThrottleReasons names are deprecated (removed in CUDA 14) but older drivers
        # only have them.
        reasons = caller.first_of(
            [("nvmlDeviceGetCurrentClocksEventReasons", (h,), {}),
             ("nvmlDeviceGetCurrentClocksThrottleReasons", (h,), {})],
            gpu=index,
        )  # fmt: skip
        nvlinks = []
        remotes: dict[int, str | None] = static.setdefault("nvlink_remote", {})
        for link in range(static["nvlink_count"]):
            state = c("nvmlDeviceGetNvLinkState", link)
            active = None if state is None else bool(state)
            if active and link not in remotes:  # the far end of a link does not move: ask once
                remote = c("nvmlDeviceGetNvLinkRemotePciInfo", link)
                remotes[link] = to_str(attr_or_none(remote, "busId"))
            nvlinks.append(NvLink(link, active, remotes.get(link) if active else None))
        ecc_mode = _sticky(static, "ecc_mode", lambda: c("nvmlDeviceGetEccMode"))
        ecc_on = bool(ecc_mode[0]) if isinstance(ecc_mode, list | tuple) and ecc_mode else False
        rows = c("nvmlDeviceGetRemappedRows")
        rows_ok = isinstance(rows, list | tuple) and len(rows) >= 4
        mig_mode = _sticky(static, "mig_mode", lambda: c("nvmlDeviceGetMigMode"))
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
            util_gpu=as_float(attr_or_none(util, "gpu")),
            util_memory=as_float(attr_or_none(util, "memory")),
            temperature_c=as_float(c("nvmlDeviceGetTemperature", _TEMPERATURE_GPU)),
            power_w=as_float(c("nvmlDeviceGetPowerUsage"), 1000.0),
            power_limit_w=as_float(limit, 1000.0),
            sm_clock_mhz=as_int(c("nvmlDeviceGetClockInfo", _CLOCK_SM)),
            sm_clock_max_mhz=static["sm_clock_max_mhz"],
            mem_clock_mhz=as_int(c("nvmlDeviceGetClockInfo", _CLOCK_MEM)),
            mem_clock_max_mhz=static["mem_clock_max_mhz"],
            throttle_reasons=throttle_names(reasons),
            pcie_gen=as_int(c("nvmlDeviceGetCurrPcieLinkGeneration")),
            pcie_gen_max=static["pcie_gen_max"],
            pcie_width=as_int(c("nvmlDeviceGetCurrPcieLinkWidth")),
            pcie_width_max=static["pcie_width_max"],
            pcie_tx_kbps=as_float(c("nvmlDeviceGetPcieThroughput", _PCIE_TX)),
            pcie_rx_kbps=as_float(c("nvmlDeviceGetPcieThroughput", _PCIE_RX)),
            nvlinks=tuple(nvlinks),
            ecc_corrected=as_int(c("nvmlDeviceGetTotalEccErrors", _ECC_CORRECTED, _ECC_VOLATILE))
            if ecc_on
            else None,
            ecc_uncorrected=as_int(
                c("nvmlDeviceGetTotalEccErrors", _ECC_UNCORRECTED, _ECC_VOLATILE)
            )
            if ecc_on
            else None,
            remapped_rows_pending=bool(rows[2]) if rows_ok else None,
            remapped_rows_failure=bool(rows[3]) if rows_ok else None,
            mig_enabled=mig_on,
            processes=self._processes(caller, index, h),
            mig_uuids=self._mig_uuids(caller, index, h, static) if mig_on else (),
            numa_node=static["numa_node"],
        )

    def _processes(self, caller: NvmlCaller, index: int, h: Any) -> tuple[GpuProcess, ...]:
        # NVMLLibraryMismatchError when the driver lacks the _v3 symbol: fall back to _v2.
        raw = caller.first_of(
            [("nvmlDeviceGetComputeRunningProcesses", (h,), {}),
             ("nvmlDeviceGetComputeRunningProcesses_v2", (h,), {})],
            gpu=index,
        )  # fmt: skip
        procs = []
        for entry in raw or ():
            pid = as_int(attr_or_none(entry, "pid"))
            if pid is None:
                continue
            procs.append(
                describe_process(pid, as_int(attr_or_none(entry, "usedGpuMemory")), self._name_of)
            )
        return tuple(procs)

    def _name_of(self, pid: int) -> tuple[str | None, str | None]:
        self._seen.add(pid)
        hit = self._names.get(pid)
        if hit is None:
            hit = self._lookup(pid)
            if hit != (None, None):  # unknown may be a race with process start: ask again
                self._names[pid] = hit
        return hit

    def _mig_uuids(
        self, caller: NvmlCaller, index: int, h: Any, static: dict[str, Any]
    ) -> tuple[str, ...]:
        # The slot count is fixed by the board; which slots hold instances is live.
        slots = _sticky(
            static, "mig_slots", lambda: caller.call("nvmlDeviceGetMaxMigDeviceCount", h, gpu=index)
        )
        count = as_int(slots) or 0
        uuids = []
        for slot in range(count):
            mig = caller.call("nvmlDeviceGetMigDeviceHandleByIndex", h, slot, gpu=index)
            if mig is None:
                continue
            uuid = to_str(caller.call("nvmlDeviceGetUUID", mig, gpu=index, peer=-1 - slot))
            if uuid:
                uuids.append(uuid)
        return tuple(uuids)


def _sticky(cache: dict[str, Any], key: str, read: Callable[[], Any]) -> Any:
    """`read()` once and keep the answer; a None answer is asked again on the next sample.

    A None may be a transient failure, so it is not kept; a NotSupported answer costs nothing
    to repeat because `NvmlCaller` remembers it without calling NVML again.
    """
    value = cache.get(key)
    if value is None:
        value = read()
        cache[key] = value
    return value
