"""The simulated machine's live state, written atomically to HEADROOM_SIM_STATE each tick.

`nvml_standin` reads this file with pynvml's function names, so Headroom's NVML probe runs
unchanged against the simulator. Units follow NVML: bytes, percent, milliwatts, MHz, KB/s.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from headroom.simulator.hardware import Machine

DRIVER_VERSION = "570.133.20"
CUDA_DRIVER_VERSION = 12080
IDLE_SM_MHZ = 345
IDLE_MEM_MHZ = 405


def gpu_uuid(index: int, gpu_key: str) -> str:
    seed = sum(ord(c) for c in gpu_key) * 7919 + index * 104729
    hexs = f"{seed:032x}"[-32:]
    return f"GPU-{hexs[:8]}-{hexs[8:12]}-{hexs[12:16]}-{hexs[16:20]}-{hexs[20:32]}"


def pci_bus_id(index: int) -> str:
    buses = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB]
    bus = buses[index] if index < len(buses) else 0xE0 + index
    return f"00000000:{bus:02X}:00.0"


def build_state(
    machine: Machine,
    vllm_pid: int | None,
    used_by_vllm: dict[int, int],
    busy: float,
    phase: str,
    topo_text: str,
) -> dict:
    """One snapshot. `used_by_vllm`: GPU index -> bytes vLLM holds; `busy`: 0..1 of the last
    tick spent running steps."""
    gpu = machine.gpu
    pcie = replace(machine, interconnect="pcie")
    gpus = []
    for i in range(machine.gpus_per_node):
        mine = used_by_vllm.get(i, 0)
        others = machine.other_process_bytes.get(i, 0)
        active = busy if mine else 0.0
        reserved = 512 * 1024**2  # driver-reserved memory NVML v2 reports separately
        used = min(gpu.memory_bytes, mine + others + reserved)
        power = gpu.idle_power_w + (gpu.power_limit_w - gpu.idle_power_w) * 0.85 * active
        procs = []
        if mine and vllm_pid:
            procs.append({"pid": vllm_pid, "used_memory": mine})
        if others:
            procs.append({"pid": 40000 + i, "used_memory": others})
        gpus.append(
            {
                "index": i,
                "name": gpu.name,
                "uuid": gpu_uuid(i, gpu.key),
                "pci_bus_id": pci_bus_id(i),
                "memory_total": gpu.memory_bytes,
                "memory_used": used,
                "memory_reserved": reserved,
                "memory_free": gpu.memory_bytes - used,
                "util_gpu": round(100 * active),
                "util_memory": round(70 * active),
                "temperature_c": round(32 + 38 * active),
                "power_mw": round(power * 1000),
                "power_limit_mw": gpu.power_limit_w * 1000,
                "sm_clock_mhz": gpu.sm_clock_max_mhz if active else IDLE_SM_MHZ,
                "sm_clock_max_mhz": gpu.sm_clock_max_mhz,
                "mem_clock_mhz": gpu.mem_clock_max_mhz if active else IDLE_MEM_MHZ,
                "mem_clock_max_mhz": gpu.mem_clock_max_mhz,
                "clocks_event_reasons": 0 if active else 0x1,  # GpuIdle when nothing runs
                "pcie_gen": gpu.pcie_gen if active else 1,  # links downshift when idle
                "pcie_gen_max": gpu.pcie_gen,
                "pcie_width": 16,
                "pcie_width_max": 16,
                "pcie_tx_kbps": round(20000 * active),
                "pcie_rx_kbps": round(35000 * active),
                "nvlinks": _nvlinks(machine, i),
                "ecc_supported": not gpu.consumer,
                "processes": procs,
            }
        )
    return {
        "version": 1,
        "written_at": time.time(),
        "phase": phase,
        "driver_version": DRIVER_VERSION,
        "cuda_driver_version": CUDA_DRIVER_VERSION,
        "machine": {
            "gpu": gpu.key,
            "gpus_per_node": machine.gpus_per_node,
            "interconnect": machine.interconnect,
            "nodes": machine.nodes,
        },
        "links": [
            [machine.link_code(a, b) for b in range(machine.gpus_per_node)]
            for a in range(machine.gpus_per_node)
        ],
        # The PCIe path between GPUs, whatever NVLink adds (NVML's topology levels).
        "pcie_links": [
            [pcie.link_code(a, b) for b in range(machine.gpus_per_node)]
            for a in range(machine.gpus_per_node)
        ],
        "topo_m": topo_text,
        "gpus": gpus,
    }


def _nvlinks(machine: Machine, index: int) -> list[bool] | None:
    """Per-link active flags, or None when the GPU has no NVLink (NVML says NotSupported)."""
    if not machine.gpu.nvlink_count:
        return None
    if machine.interconnect == "pcie":
        return [False] * machine.gpu.nvlink_count
    if machine.interconnect == "nvlink-pairs" and (index ^ 1) >= machine.gpus_per_node:
        return [False] * machine.gpu.nvlink_count
    return [True] * machine.gpu.nvlink_count


def write_state(path: str | os.PathLike, state: dict) -> None:
    """Write JSON atomically: a temp file in the same directory, then rename over."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".sim-state-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
