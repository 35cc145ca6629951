"""Host facts against fake file-system roots (and once against this machine)."""

from __future__ import annotations

from pathlib import Path

from headroom.probes.host import HostFacts, host_warnings, read_host


def fake_root(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def no_virt():
    return None


def test_this_machine_reads_without_raising() -> None:
    facts = read_host()
    assert facts.cpu_count and facts.cpu_count >= 1
    assert facts.mem_total_bytes and facts.mem_total_bytes > 100 * 1024**2
    assert facts.shm_total_bytes is None or facts.shm_total_bytes > 0
    assert facts.nofile_soft and facts.nofile_hard and facts.nofile_soft <= facts.nofile_hard


def test_docker_container_with_small_shm_and_nccl_overrides(tmp_path) -> None:
    root = fake_root(
        tmp_path,
        {
            ".dockerenv": "",
            "proc/1/cgroup": "0::/\n",
            "proc/meminfo": "MemTotal:       263842068 kB\nMemFree: 1 kB\n",
            "proc/cpuinfo": "processor : 0\nflags : fpu vme de pse\n",
            "sys/fs/cgroup/memory.max": "68719476736\n",
        },
    )
    env = {"NCCL_P2P_DISABLE": "1", "NCCL_DEBUG": "INFO", "PATH": "/bin", "HF_TOKEN": "hf_x"}
    facts = read_host(env, root=root, detect_virt=no_virt)
    assert facts.in_container is True and facts.container_hint == "/.dockerenv"
    assert facts.in_vm is False
    assert facts.nccl_env == {"NCCL_DEBUG": "INFO", "NCCL_P2P_DISABLE": "1"}
    assert facts.mem_total_bytes == 263842068 * 1024
    assert facts.cgroup_memory_limit_bytes == 64 * 1024**3
    assert facts.shm_total_bytes is None  # the fake root has no /dev/shm


def test_kubernetes_and_cgroup_detection(tmp_path) -> None:
    pod = read_host({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, root=tmp_path, detect_virt=no_virt)
    assert pod.in_container is True and "Kubernetes" in (pod.container_hint or "")
    root = fake_root(tmp_path / "c", {"proc/1/cgroup": "12:memory:/kubepods/burstable/pod1\n"})
    assert read_host({}, root=root, detect_virt=no_virt).in_container is True
    bare = fake_root(tmp_path / "b", {"proc/1/cgroup": "0::/init.scope\n"})
    assert read_host({}, root=bare, detect_virt=no_virt).in_container is False
    assert read_host({}, root=tmp_path / "nothing", detect_virt=no_virt).in_container is None


def test_vm_detection_sources(tmp_path) -> None:
    kvm = read_host({}, root=tmp_path, detect_virt=lambda: "kvm")
    assert kvm.in_vm is True and "kvm" in (kvm.vm_hint or "")
    assert read_host({}, root=tmp_path, detect_virt=lambda: "none").in_vm is False
    dmi = fake_root(tmp_path / "d", {"sys/class/dmi/id/product_name": "KVM Virtual Machine\n"})
    assert read_host({}, root=dmi, detect_virt=no_virt).in_vm is True
    flag = fake_root(tmp_path / "f", {"proc/cpuinfo": "flags\t\t: fpu sse2 hypervisor avx\n"})
    assert read_host({}, root=flag, detect_virt=no_virt).vm_hint == "CPU flag: hypervisor"
    assert read_host({}, root=tmp_path / "none", detect_virt=no_virt).in_vm is None


def test_warnings_name_the_fix() -> None:
    facts = HostFacts(
        taken_at=0.0, shm_total_bytes=64 * 1024**2, shm_free_bytes=60 * 1024**2,
        nccl_env={"NCCL_SHM_DISABLE": "1", "NCCL_DEBUG": "INFO"}, in_container=True,
        in_vm=True, cpu_count=8, mem_total_bytes=None, nofile_soft=1024, nofile_hard=4096,
        vm_hint="systemd-detect-virt: kvm",
    )  # fmt: skip
    text = "\n".join(host_warnings(facts))
    assert "64 MiB" in text and "--shm-size" in text
    assert "NCCL_SHM_DISABLE=1" in text and "NCCL_DEBUG" not in text
    assert "ulimit -n" in text and "kvm" in text
    healthy = HostFacts(
        0.0, 32 * 1024**3, 32 * 1024**3, {}, False, False, 64, None, 1 << 20, 1 << 20
    )
    assert host_warnings(healthy) == []
