"""Rebuild the GPU part of `nvidia-smi topo -m` from NVML when nvidia-smi is not installed.

* NVLink: `nvmlDeviceGetP2PStatus(a, b, NVML_P2P_CAPS_INDEX_NVLINK)` says whether the pair talks
  over NVLink (vLLM's own check). The `#` of NV# is the number of active links whose remote
  end is the peer's PCI bus id; on NVSwitch systems every link ends at a switch, and
  nvidia-smi then prints the GPU's full link count for every pair, so we do the same.
* PCIe: `nvmlDeviceGetTopologyCommonAncestor` levels map one-to-one onto the printed codes
  (gpu-facts.md section 2.2): 10 PIX, 20 PXB, 30 PHB, 40 NODE, 50 SYS; 0 = same board.
* NVML cannot see NICs, so the NIC columns stay empty.
"""

from __future__ import annotations

import os
from typing import Any

from headroom.probes.nvml_calls import GpuLost, NvmlCaller, init_failure_reason, to_str
from headroom.probes.topology_types import TopologyMatrix, unreadable

_ANCESTOR_CODE = {0: "PIX", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
_P2P_CAPS_INDEX_NVLINK = 2  # NVML_P2P_CAPS_INDEX_NVLINK (READ is the tuple (0,) in pynvml!)
_P2P_STATUS_OK = 0
_REMOTE_SWITCH = 2  # NVML_NVLINK_DEVICE_TYPE_SWITCH
_MAX_LINKS = 36  # NVML_NVLINK_MAX_LINKS in 13.x; the loop stops at the first unknown link


def cpu_mask_to_ranges(words: Any) -> str | None:
    """[0xFFFF, ...] (64 CPUs per word, word 0 = CPUs 0-63) -> '0-15,64-79'."""
    if not isinstance(words, list | tuple):
        return None
    cpus = [
        w * 64 + b
        for w, word in enumerate(words)
        if isinstance(word, int)
        for b in range(64)
        if word >> b & 1
    ]
    if not cpus:
        return None
    ranges, start, prev = [], cpus[0], cpus[0]
    for cpu in cpus[1:] + [None]:
        if cpu is not None and cpu == prev + 1:
            prev = cpu
            continue
        ranges.append(f"{start}-{prev}" if prev != start else str(start))
        if cpu is not None:
            start = prev = cpu
    return ",".join(ranges)


def _bus(pci: Any) -> str | None:
    bus = to_str(getattr(pci, "busId", None)) if pci is not None else None
    return bus.lower()[-12:] if bus else None


def _nvlink_code(caller: NvmlCaller, i: int, hi: Any, j: int, bus_j: str | None) -> str | None:
    """NV# for the pair (i, j) as nvidia-smi would print it, from GPU i's side."""
    direct = active = 0
    via_switch = False
    for link in range(_MAX_LINKS):
        state = caller.call("nvmlDeviceGetNvLinkState", hi, link, gpu=i)
        if state is None:
            break
        if not state:
            continue
        active += 1
        remote = _bus(caller.call("nvmlDeviceGetNvLinkRemotePciInfo", hi, link, gpu=i))
        if bus_j is not None and remote == bus_j:
            direct += 1
        elif caller.call("nvmlDeviceGetNvLinkRemoteDeviceType", hi, link, gpu=i) == _REMOTE_SWITCH:
            via_switch = True
    if direct:
        return f"NV{direct}"
    if via_switch and active:
        return f"NV{active}"
    return None


def matrix_from_nvml(nvml: Any) -> TopologyMatrix:
    """The GPU x GPU matrix from NVML (source "nvml"). Never raises."""
    caller = NvmlCaller(nvml)
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no driver is a state
        return unreadable(init_failure_reason(exc), source="nvml")
    try:
        return _build(caller)
    except GpuLost:
        return unreadable("a GPU fell off the bus while reading the topology", source="nvml")
    finally:
        caller.call("nvmlShutdown")


def _build(caller: NvmlCaller) -> TopologyMatrix:
    count = caller.call("nvmlDeviceGetCount")
    if not isinstance(count, int) or count < 1:
        return unreadable("NVML found no GPUs", source="nvml")
    handles = [caller.call("nvmlDeviceGetHandleByIndex", i, gpu=i) for i in range(count)]
    buses = [_bus(caller.call("nvmlDeviceGetPciInfo", h, gpu=i)) for i, h in enumerate(handles)]
    words = max(1, ((os.cpu_count() or 64) + 63) // 64)
    links = [["X" if i == j else "?" for j in range(count)] for i in range(count)]
    problems: list[str] = []
    for i in range(count):
        for j in range(i + 1, count):
            hi, hj = handles[i], handles[j]
            code = None
            if hi is not None and hj is not None:
                status = caller.call(
                    "nvmlDeviceGetP2PStatus", hi, hj, _P2P_CAPS_INDEX_NVLINK, gpu=i, peer=j
                )
                if status == _P2P_STATUS_OK:
                    code = _nvlink_code(caller, i, hi, j, buses[j]) or "NV1"
                else:
                    level = caller.call(
                        "nvmlDeviceGetTopologyCommonAncestor", hi, hj, gpu=i, peer=j
                    )
                    code = _ANCESTOR_CODE.get(level) if isinstance(level, int) else None
            if code is None:
                problems.append(f"NVML could not say how GPU{i} and GPU{j} are connected")
                code = "?"
            links[i][j] = links[j][i] = code
    cpu = tuple(
        cpu_mask_to_ranges(caller.call("nvmlDeviceGetCpuAffinity", h, words, gpu=i)) if h else None
        for i, h in enumerate(handles)
    )
    numa = []
    for i, h in enumerate(handles):
        node = caller.call("nvmlDeviceGetNumaNodeId", h, gpu=i) if h is not None else None
        numa.append(str(node) if isinstance(node, int) and node >= 0 else None)
    confidence = "low" if problems else "high"
    problems.append("built from NVML (nvidia-smi not found): NIC columns are not available")
    return TopologyMatrix(
        gpus=tuple(f"GPU{i}" for i in range(count)),
        links=tuple(tuple(row) for row in links),
        nics=(),
        gpu_nic_links=tuple(() for _ in range(count)),
        cpu_affinity=cpu,
        numa_affinity=tuple(numa),
        nic_names={},
        confidence=confidence,
        problems=tuple(problems),
        source="nvml",
    )
