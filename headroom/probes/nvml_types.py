"""The NVML probe's frozen snapshot types, their JSON form, and small value converters.

Kept apart from nvml.py (which re-exports everything here) so the probe module stays about
reading NVML, and so consumers that only need the types do not load the probe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from headroom.probes.errors import SourceMissing

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


@dataclass(frozen=True)
class GpuProcess:
    """One compute process on a GPU, named where the OS lets us see it."""

    pid: int
    used_memory_bytes: int | None
    name: str | None
    cmdline: str | None
    vllm_role: str | None  # "EngineCore", "Worker_TP0", "api_server", ... ; None = not vLLM
    is_vllm: bool


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

    @property
    def failure(self) -> SourceMissing | None:
        """Why there are no GPUs to show, in the probes' error tree; None when readable."""
        return None if self.available else SourceMissing(self.reason or "GPUs unreadable")


def lost_reading(
    index: int, static: dict[str, Any] | None = None, *, lost: bool = True
) -> GpuReading:
    """A reading for a GPU that stopped answering: identity from the cache, nothing else.

    `lost=False` gives the same empty reading for a GPU whose answers made no sense.
    """
    static = static or {}
    return GpuReading(
        index=index,
        name=static.get("name"),
        uuid=static.get("uuid"),
        pci_bus_id=static.get("pci_bus_id"),
        lost=lost,
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


def cuda_version_text(raw: Any) -> str | None:
    """nvmlSystemGetCudaDriverVersion gives 12080 for CUDA 12.8."""
    if not isinstance(raw, int) or raw <= 0:
        return None
    return f"{raw // 1000}.{(raw % 1000) // 10}"


def throttle_names(mask: Any) -> tuple[str, ...] | None:
    if not isinstance(mask, int):
        return None
    return tuple(name for bit, name in THROTTLE_REASON_BITS.items() if mask & bit)


def attr_or_none(obj: Any, name: str) -> Any:
    """obj.name (or obj[name] for a mapping), None when absent: NVML structs vary by version
    and stand-ins may answer with dicts."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001 - a struct field that cannot be decoded is just missing
        return None


def as_float(value: Any, scale: float = 1.0) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value / scale
    return None


def as_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def snapshot_to_json(snapshot: GpuSnapshot) -> dict[str, Any]:
    """A GpuSnapshot as plain JSON-able data (tuples become lists), for --json outputs."""
    return asdict(snapshot)
