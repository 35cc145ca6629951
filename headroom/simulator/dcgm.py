"""The simulated GPUs in NVIDIA dcgm-exporter's text format, served at `/dcgm-metrics`.

Format (fleet-facts.md section 1, internal/pkg/rendermetrics/render_metrics.go): one family
per counter with `# HELP`/`# TYPE`, labels in the exporter's order
`gpu, UUID, pci_bus_id, device, modelName, Hostname` then the sorted extras
(`DCGM_FI_DRIVER_VERSION`, and `err_code`/`err_msg` on the XID line); doubles printed with
`%f`. HELP texts and types are the rows of dcgm-exporter's etc/default-counters.csv
(NVIDIA/dcgm-exporter @ 00d6d34). The two `*_VIOLATION` counters are commented out in that
file; the simulator serves them as an exporter with those rows enabled does, so throttling
can be shown. Values come from the same state dict the NVML stand-in reads.

Environment (read once at start):
- HEADROOM_SIM_HOSTNAME: the `Hostname` label value (default: this machine's host name).
- HEADROOM_SIM_DCGM_HOSTNAME_LABEL: `Hostname` (exporter 4.5.3 and older, default) or
  `hostname` (renamed in dcgm-exporter d5e5f51, 2026-05-12).
- HEADROOM_SIM_GPU_FAULTS: e.g. `2:xid=79,5:thermal,6:power`: GPU 2 reports XID 79, GPU 5
  is held at its thermal limit and GPU 6 at its power limit (their violation time grows
  one second per second).
"""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field

MIB = 1024 * 1024

# XID codes the simulator can raise, with the text NVIDIA's driver gives them
# (open-gpu-kernel-modules src/common/sdk/nvidia/inc/nverror.h). Code 0 reads "No Error" in
# 2025 builds (fixture k8s-gpu-operator-rtx4000ada-1gpu-full.prom).
XID_MESSAGES = {0: "No Error", 79: "GPU has fallen off the bus"}

# (field, type, HELP) in the order of etc/default-counters.csv.
FAMILIES = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    (
        "DCGM_FI_DEV_POWER_VIOLATION",
        "counter",
        "Throttling duration due to power constraints (in us).",
    ),
    (
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        "counter",
        "Throttling duration due to thermal constraints (in us).",
    ),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB)."),
)


@dataclass
class GpuFaults:
    """Faults injected per GPU index, parsed from HEADROOM_SIM_GPU_FAULTS."""

    xid: dict[int, int] = field(default_factory=dict)
    thermal: set[int] = field(default_factory=set)
    power: set[int] = field(default_factory=set)


def parse_faults(text: str) -> GpuFaults:
    """`2:xid=79,5:thermal` -> GpuFaults. Raises ValueError with the bad item named."""
    faults = GpuFaults()
    for item in (p.strip() for p in (text or "").split(",")):
        if not item:
            continue
        index_text, _, what = item.partition(":")
        try:
            index = int(index_text)
        except ValueError:
            raise ValueError(f"HEADROOM_SIM_GPU_FAULTS: {item!r} needs GPU:fault") from None
        if what.startswith("xid="):
            code = int(what[4:]) if what[4:].isdigit() else -1
            if code not in XID_MESSAGES:
                known = ", ".join(str(k) for k in sorted(XID_MESSAGES))
                raise ValueError(f"HEADROOM_SIM_GPU_FAULTS: XID in {item!r} must be one of {known}")
            faults.xid[index] = code
        elif what in ("thermal", "power"):
            getattr(faults, what).add(index)
        else:
            raise ValueError(f"HEADROOM_SIM_GPU_FAULTS: unknown fault in {item!r}")
    return faults


class DcgmRenderer:
    """Renders one state dict (headroom.simulator.state.build_state) as an exporter page."""

    def __init__(
        self,
        hostname: str | None = None,
        hostname_label: str = "Hostname",
        faults: GpuFaults | None = None,
        clock=time.monotonic,
    ) -> None:
        self.hostname = hostname or socket.gethostname()
        self.hostname_label = (
            hostname_label if hostname_label in ("Hostname", "hostname") else "Hostname"
        )
        self.faults = faults or GpuFaults()
        self._clock = clock
        self._started = clock()

    @classmethod
    def from_env(cls) -> DcgmRenderer:
        return cls(
            os.environ.get("HEADROOM_SIM_HOSTNAME") or None,
            os.environ.get("HEADROOM_SIM_DCGM_HOSTNAME_LABEL") or "Hostname",
            parse_faults(os.environ.get("HEADROOM_SIM_GPU_FAULTS", "")),
        )

    def render(self, state: dict) -> str:
        driver = str(state.get("driver_version") or "")
        throttled_us = int((self._clock() - self._started) * 1e6)
        gpus = state.get("gpus") or []
        lines: list[str] = []
        for name, kind, help_text in FAMILIES:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            for gpu in gpus:
                index = int(gpu.get("index", 0))
                extra = ""
                if name == "DCGM_FI_DEV_XID_ERRORS":
                    code = self.faults.xid.get(index, 0)
                    extra = f',err_code="{code}",err_msg="{XID_MESSAGES[code]}"'
                value = self._value(name, gpu, index, throttled_us)
                lines.append(f"{name}{{{self._labels(gpu, driver)}{extra}}} {value}")
        return "\n".join(lines) + "\n"

    def _labels(self, gpu: dict, driver: str) -> str:
        index = int(gpu.get("index", 0))
        return (
            f'gpu="{index}",UUID="{gpu.get("uuid", "")}",pci_bus_id="{gpu.get("pci_bus_id", "")}",'
            f'device="nvidia{index}",modelName="{gpu.get("name", "")}",'
            f'{self.hostname_label}="{self.hostname}",DCGM_FI_DRIVER_VERSION="{driver}"'
        )

    def _value(self, name: str, gpu: dict, index: int, throttled_us: int) -> str:
        reserved = int(gpu.get("memory_reserved") or 0)
        values: dict[str, object] = {
            "DCGM_FI_DEV_SM_CLOCK": int(gpu.get("sm_clock_mhz") or 0),
            "DCGM_FI_DEV_MEM_CLOCK": int(gpu.get("mem_clock_mhz") or 0),
            "DCGM_FI_DEV_GPU_TEMP": int(gpu.get("temperature_c") or 0),
            "DCGM_FI_DEV_POWER_USAGE": float(gpu.get("power_mw") or 0) / 1000.0,
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0,
            "DCGM_FI_DEV_GPU_UTIL": int(gpu.get("util_gpu") or 0),
            "DCGM_FI_DEV_MEM_COPY_UTIL": int(gpu.get("util_memory") or 0),
            "DCGM_FI_DEV_ENC_UTIL": 0,
            "DCGM_FI_DEV_DEC_UTIL": 0,
            "DCGM_FI_DEV_XID_ERRORS": self.faults.xid.get(index, 0),
            "DCGM_FI_DEV_POWER_VIOLATION": throttled_us if index in self.faults.power else 0,
            "DCGM_FI_DEV_THERMAL_VIOLATION": throttled_us if index in self.faults.thermal else 0,
            # NVML's v2 "used" holds the reserved part; the exporter reports it apart.
            "DCGM_FI_DEV_FB_FREE": int(gpu.get("memory_free") or 0) // MIB,
            "DCGM_FI_DEV_FB_USED": max(0, int(gpu.get("memory_used") or 0) - reserved) // MIB,
            "DCGM_FI_DEV_FB_RESERVED": reserved // MIB,
        }
        value = values[name]
        return f"{value:f}" if isinstance(value, float) else str(value)
