"""Who is on each GPU, and which GPUs a vLLM server actually uses.

NVML gives PIDs and memory; psutil gives names. A vLLM worker is recognised from the process
title vLLM sets (`VLLM::EngineCore`, `VLLM::Worker_TP0`, ...) or from its command line
(`vllm serve`, `python -m vllm.entrypoints.openai.api_server`). Inside a container NVML often
reports host PIDs that psutil cannot see: those processes keep name None (unknown), they do
not crash anything.

`visible_gpus` maps CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER onto NVML indices, following
the CUDA rules: integer ordinals, (abbreviated) GPU UUIDs or MIG identifiers; an invalid entry
hides every later one; an empty string hides all GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from headroom.probes.nvml_types import GpuProcess, GpuSnapshot

# GpuProcess lives with the other snapshot types (nvml_types) and is re-exported here.
__all__ = [
    "GpuProcess",
    "ForeignUse",
    "vllm_role",
    "psutil_lookup",
    "describe_process",
    "foreign_memory",
    "visible_gpus",
    "ordering_caveat",
]


@dataclass(frozen=True)
class ForeignUse:
    """Memory held on a GPU that vLLM uses by a process that is not part of vLLM."""

    gpu_index: int
    pid: int
    name: str | None  # None: PID not visible from here (container, other namespace)
    used_memory_bytes: int | None


# vLLM names its processes with setproctitle: "VLLM::EngineCore", "VLLM::EngineCore_DP0",
# "VLLM::Worker_TP0", "VLLM::Worker_PP1_TP0", "VLLM::APIServer".
_TITLE = re.compile(r"VLLM::(\w+)")
_CMDLINE_ROLES = (
    (re.compile(r"\bvllm\.entrypoints\.openai\.api_server\b"), "api_server"),
    (re.compile(r"(?:^|[\s/])vllm\s+serve\b"), "api_server"),
    # Headroom's own stand-in is launched exactly like vLLM and plays its part in demos.
    (re.compile(r"\bheadroom\.simulator\s+serve\b"), "simulator"),
)


def vllm_role(name: str | None, cmdline: str | None) -> str | None:
    """The vLLM role of a process from its name/title and command line, or None."""
    for text in (cmdline, name):
        if text:
            match = _TITLE.search(text)
            if match:
                return match.group(1)
    if cmdline:
        for pattern, role in _CMDLINE_ROLES:
            if pattern.search(cmdline):
                return role
    return None


ProcessLookup = Callable[[int], tuple[str | None, str | None]]


def psutil_lookup(pid: int) -> tuple[str | None, str | None]:
    """(name, cmdline) of a PID via psutil; (None, None) when it is not visible from here."""
    # psutil is imported where it is used, not here: its import (the Linux tables, ~20 ms)
    # would sit on the path to the first painted dashboard (benchmarks/startup.py), which
    # needs no process lookups.
    import psutil

    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            name = proc.name()
            try:
                argv = proc.cmdline()
            except (psutil.AccessDenied, psutil.ZombieProcess):
                argv = []
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ValueError, OSError):
        return None, None
    cmdline = " ".join(argv) if argv else None
    return name or None, cmdline


def describe_process(
    pid: int, used_memory_bytes: int | None, lookup: ProcessLookup = psutil_lookup
) -> GpuProcess:
    """Name one NVML process entry; never raises."""
    try:
        name, cmdline = lookup(pid)
    except Exception:  # noqa: BLE001 - a broken lookup must not hide the GPU reading
        name, cmdline = None, None
    role = vllm_role(name, cmdline)
    return GpuProcess(
        pid=pid,
        used_memory_bytes=used_memory_bytes,
        name=name,
        cmdline=cmdline,
        vllm_role=role,
        is_vllm=role is not None,
    )


def foreign_memory(
    snapshot: GpuSnapshot, gpu_indices: tuple[int, ...] | None = None
) -> list[ForeignUse]:
    """Processes that are not vLLM but hold memory on a GPU vLLM uses.

    Without `gpu_indices`, "GPUs vLLM uses" are those with at least one vLLM process.
    Each such process shrinks what `--gpu-memory-utilization` can hand to the KV cache.
    """
    found: list[ForeignUse] = []
    for gpu in snapshot.gpus:
        vllm_here = any(p.is_vllm for p in gpu.processes)
        wanted = gpu.index in gpu_indices if gpu_indices is not None else vllm_here
        if not wanted:
            continue
        for proc in gpu.processes:
            if not proc.is_vllm:
                found.append(ForeignUse(gpu.index, proc.pid, proc.name, proc.used_memory_bytes))
    return found


def _pci_order(snapshot: GpuSnapshot) -> list[int]:
    """NVML indices sorted by PCI bus id: the order CUDA uses with CUDA_DEVICE_ORDER=PCI_BUS_ID."""
    gpus = list(snapshot.gpus)
    if all(g.pci_bus_id for g in gpus):
        gpus.sort(key=lambda g: _normal_bus_id(g.pci_bus_id or ""))
    return [g.index for g in gpus]


def _normal_bus_id(bus_id: str) -> str:
    """NVML prints 8-digit domains, lspci and NCCL 4: compare on the last 12 characters."""
    return bus_id.strip().lower()[-12:]


def _match_uuid(entry: str, snapshot: GpuSnapshot) -> int | None:
    """A full or uniquely abbreviated GPU-/MIG- UUID -> the NVML index of its (parent) GPU."""
    entry = entry.strip()
    if entry.startswith("MIG-GPU-"):
        # Legacy MIG syntax: MIG-GPU-<gpu uuid>/<gi>/<ci>.
        entry = entry[len("MIG-") :].split("/", 1)[0]
    candidates: list[int] = []
    lowered = entry.lower()
    for gpu in snapshot.gpus:
        ids = [gpu.uuid or ""] + list(getattr(gpu, "mig_uuids", ()) or ())
        if any(i and i.lower().startswith(lowered) for i in ids):
            candidates.append(gpu.index)
    return candidates[0] if len(candidates) == 1 else None


def visible_gpus(snapshot: GpuSnapshot, env: Mapping[str, str]) -> tuple[int, ...]:
    """NVML indices of the GPUs a process with environment `env` can use, in CUDA order.

    CUDA device i inside vLLM is the i-th entry of the result. Integer ordinals follow
    CUDA_DEVICE_ORDER: with PCI_BUS_ID they are PCI order; with the default FASTEST_FIRST
    CUDA only promises that the fastest GPU comes first, so we assume PCI order (true on
    identical GPUs in practice) and `ordering_caveat` says when that assumption is shaky.
    """
    order = _pci_order(snapshot)
    raw = env.get("CUDA_VISIBLE_DEVICES")
    if raw is None:
        return tuple(order)
    chosen: list[int] = []
    for entry in raw.split(","):
        entry = entry.strip()
        if not entry:
            break
        index: int | None
        if re.fullmatch(r"\d+", entry):
            ordinal = int(entry)
            index = order[ordinal] if ordinal < len(order) else None
        elif entry.startswith(("GPU-", "MIG-")):
            index = _match_uuid(entry, snapshot)
        else:
            index = None
        if index is None or index in chosen:
            break  # CUDA stops at the first invalid (or repeated) entry
        chosen.append(index)
    return tuple(chosen)


def ordering_caveat(snapshot: GpuSnapshot, env: Mapping[str, str]) -> str | None:
    """Why integer CUDA_VISIBLE_DEVICES may not mean what nvidia-smi shows, or None."""
    raw = env.get("CUDA_VISIBLE_DEVICES")
    uses_ordinals = raw is None or any(
        re.fullmatch(r"\d+", e.strip()) for e in raw.split(",") if e.strip()
    )
    if not uses_ordinals or env.get("CUDA_DEVICE_ORDER", "").upper() == "PCI_BUS_ID":
        return None
    names = {g.name for g in snapshot.gpus if g.name}
    if len(names) > 1:
        return (
            "GPUs of different models and CUDA_DEVICE_ORDER is not PCI_BUS_ID: CUDA puts the "
            "fastest GPU first, so CUDA index i may not be nvidia-smi GPU i; "
            "set CUDA_DEVICE_ORDER=PCI_BUS_ID"
        )
    return None
