"""Host facts that decide whether NCCL and vLLM can work: /dev/shm, NCCL environment,
container or VM, CPUs, memory, open-file limit.

Why these: NCCL stages intra-node traffic through /dev/shm when P2P is off, and Docker's
default 64 MB /dev/shm makes it fail ("No space left on device", gpu-facts.md section 4.2);
NCCL_* variables silently change transports; VMs hide NVSwitches and flatten PCIe paths;
a low RLIMIT_NOFILE breaks a busy API server. Every reading may be None; nothing raises.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HostFacts", "read_host", "host_warnings", "TRANSPORT_VARS"]

# NCCL variables that change which transport carries the traffic (NCCL env docs, gpu-facts §4).
TRANSPORT_VARS: dict[str, str] = {
    "NCCL_P2P_DISABLE": "GPU peer-to-peer off: traffic goes through host shared memory",
    "NCCL_P2P_LEVEL": "limits how far apart two GPUs may be and still use P2P",
    "NCCL_SHM_DISABLE": "shared-memory transport off: traffic falls back to sockets",
    "NCCL_IB_DISABLE": "InfiniBand/RoCE off: inter-node traffic uses TCP sockets",
    "NCCL_SOCKET_IFNAME": "which network interface NCCL sockets use",
    "NCCL_IB_HCA": "which InfiniBand adapters NCCL uses",
    "NCCL_NET_GDR_LEVEL": "how close a NIC must be for GPUDirect RDMA",
    "NCCL_NET": "forces the network plugin (IB or Socket)",
    "NCCL_CUMEM_ENABLE": "cuMem-based buffers for P2P (0 = legacy CUDA IPC)",
    "NCCL_IGNORE_DISABLED_P2P": "proceeds even when NVML says P2P is disabled",
}
_CONTAINER_CGROUP = re.compile(r"docker|kubepods|containerd|libpod|lxc|crio", re.I)
_VM_PRODUCTS = re.compile(
    r"KVM|QEMU|VirtualBox|VMware|Virtual Machine|HVM domU|Xen|Google Compute Engine|OpenStack|Bochs",
    re.I,
)
SHM_WARN_BYTES = 1024**3  # below 1 GiB NCCL's SHM transport can run out during TP start-up
NOFILE_WARN = 65536
_UNLIMITED = 2**63 - 1


@dataclass(frozen=True)
class HostFacts:
    """What the host offers NCCL and vLLM. None = could not be read here."""

    taken_at: float
    shm_total_bytes: int | None
    shm_free_bytes: int | None
    nccl_env: Mapping[str, str]  # every NCCL_* variable of the environment examined
    in_container: bool | None
    in_vm: bool | None
    cpu_count: int | None
    mem_total_bytes: int | None
    nofile_soft: int | None  # RLIM_INFINITY is reported as 2**63 - 1
    nofile_hard: int | None
    # Added beyond the contract:
    container_hint: str | None = None  # what gave the container away
    vm_hint: str | None = None
    cpus_usable: int | None = None  # CPUs this process may run on (cgroup/taskset)
    cgroup_memory_limit_bytes: int | None = None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _shm(root: Path) -> tuple[int | None, int | None]:
    try:
        st = os.statvfs(root / "dev" / "shm")
    except OSError:
        return None, None
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def _container(root: Path, env: Mapping[str, str]) -> tuple[bool | None, str | None]:
    if (root / ".dockerenv").exists():
        return True, "/.dockerenv"
    if (root / "run" / ".containerenv").exists():
        return True, "/run/.containerenv (podman)"
    if env.get("KUBERNETES_SERVICE_HOST"):
        return True, "KUBERNETES_SERVICE_HOST is set (Kubernetes pod)"
    if env.get("container"):
        return True, f"container={env['container']}"
    cgroup = _read(root / "proc" / "1" / "cgroup")
    if cgroup is not None:
        match = _CONTAINER_CGROUP.search(cgroup)
        if match:
            return True, f"cgroup mentions {match.group(0)}"
        return False, None
    return None, None


def _systemd_detect_virt() -> str | None:
    exe = shutil.which("systemd-detect-virt")
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, "--vm"], capture_output=True, text=True, timeout=3, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def _vm(root: Path, detect_virt) -> tuple[bool | None, str | None]:
    verdict = detect_virt() if detect_virt else None
    if verdict:
        return (verdict != "none"), (
            None if verdict == "none" else f"systemd-detect-virt: {verdict}"
        )
    product = _read(root / "sys" / "class" / "dmi" / "id" / "product_name")
    if product and _VM_PRODUCTS.search(product):
        return True, f"DMI product name: {product.strip()}"
    cpuinfo = _read(root / "proc" / "cpuinfo")
    if cpuinfo is not None:
        if re.search(r"^flags\s*:.*\bhypervisor\b", cpuinfo, re.M):
            return True, "CPU flag: hypervisor"
        return False, None
    return (False, None) if product is not None else (None, None)


def _meminfo_total(root: Path) -> int | None:
    text = _read(root / "proc" / "meminfo")
    match = re.search(r"^MemTotal:\s+(\d+)\s*kB", text or "", re.M)
    return int(match.group(1)) * 1024 if match else None


def _cgroup_memory_limit(root: Path) -> int | None:
    for rel in ("sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"):
        text = (_read(root / rel) or "").strip()
        if text.isdigit() and int(text) < 2**60:  # cgroup v1 prints a huge number for "none"
            return int(text)
    return None


def _nofile() -> tuple[int | None, int | None]:
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None, None

    def norm(v: int) -> int:
        return _UNLIMITED if v == resource.RLIM_INFINITY or v < 0 else v

    return norm(soft), norm(hard)


def read_host(
    env: Mapping[str, str] | None = None,
    *,
    root: Path | str = "/",
    detect_virt=_systemd_detect_virt,
) -> HostFacts:
    """Read the host. `env` is the environment vLLM runs with (default: ours); `root` and
    `detect_virt` exist so tests can point at a fake file system."""
    env = dict(os.environ if env is None else env)
    root = Path(root)
    shm_total, shm_free = _shm(root)
    in_container, container_hint = _container(root, env)
    in_vm, vm_hint = _vm(root, detect_virt)
    soft, hard = _nofile()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return HostFacts(
        taken_at=time.monotonic(),
        shm_total_bytes=shm_total,
        shm_free_bytes=shm_free,
        nccl_env={k: v for k, v in sorted(env.items()) if k.startswith("NCCL_")},
        in_container=in_container,
        in_vm=in_vm,
        cpu_count=os.cpu_count(),
        mem_total_bytes=_meminfo_total(root),
        nofile_soft=soft,
        nofile_hard=hard,
        container_hint=container_hint,
        vm_hint=vm_hint,
        cpus_usable=usable,
        cgroup_memory_limit_bytes=_cgroup_memory_limit(root),
    )


def host_warnings(facts: HostFacts) -> list[str]:
    """Plain-language warnings for `headroom doctor`/the TUI; the doctor owns the verdicts."""
    out: list[str] = []
    if facts.shm_total_bytes is not None and facts.shm_total_bytes < SHM_WARN_BYTES:
        mib = facts.shm_total_bytes // 1024**2
        out.append(
            f"/dev/shm is only {mib} MiB: NCCL's shared-memory transport can fail with 'No space "
            "left on device'; run the container with --shm-size=16g or --ipc=host"
        )
    for name, value in facts.nccl_env.items():
        if name in TRANSPORT_VARS:
            out.append(f"{name}={value}: {TRANSPORT_VARS[name]}")
    if facts.nofile_soft is not None and facts.nofile_soft < NOFILE_WARN:
        out.append(
            f"open-file limit is {facts.nofile_soft}: a busy API server can run out of "
            f"sockets; raise it with ulimit -n {NOFILE_WARN}"
        )
    if facts.in_vm:
        out.append(
            f"running in a VM ({facts.vm_hint}): NVSwitches may be hidden and PCIe paths "
            "flattened, so `nvidia-smi topo -m` can look worse or better than the hardware"
        )
    return out
