"""`nvidia-smi topo -m` text for a simulated machine, in the real tab-separated layout
(header, GPU rows with CPU/NUMA affinity and GPU NUMA ID, NIC rows, legend, NIC legend;
see tests/fixtures/topo/ and gpu-facts.md §1)."""

from __future__ import annotations

from headroom.simulator.hardware import Machine

LEGEND = """Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks"""


def _numa(machine: Machine, gpu: int) -> int:
    return 0 if machine.gpus_per_node <= 2 else gpu // max(1, machine.gpus_per_node // 2)


def _cpu_affinity(machine: Machine, gpu: int) -> str:
    if machine.gpus_per_node <= 2:
        return "0-31"
    return "0-47,96-143" if _numa(machine, gpu) == 0 else "48-95,144-191"


def _nic_code(machine: Machine, gpu: int, nic: int) -> str:
    if gpu == nic:
        return "PIX"
    return "NODE" if _numa(machine, gpu) == _numa(machine, nic) else "SYS"


def topo_m_text(machine: Machine) -> str:
    """The matrix of one node (nvidia-smi shows the local node only)."""
    n = machine.gpus_per_node
    nics = n if machine.nodes > 1 else 0
    cols = [f"GPU{i}" for i in range(n)] + [f"NIC{i}" for i in range(nics)]
    lines = ["\t" + "\t".join(cols + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for a in range(n):
        cells = [" X " if a == b else machine.link_code(a, b) for b in range(n)]
        cells += [_nic_code(machine, a, k) for k in range(nics)]
        cells += [_cpu_affinity(machine, a), str(_numa(machine, a)), "", "N/A"]
        lines.append(f"GPU{a}\t" + "\t".join(cells))
    for k in range(nics):
        cells = [_nic_code(machine, g, k) for g in range(n)]
        cells += [" X " if k == j else _nic_code(machine, k, j) for j in range(nics)]
        lines.append(f"NIC{k}\t" + "\t".join(cells))
    text = "\n".join(lines) + "\n\n" + LEGEND + "\n"
    if nics:
        text += "\nNIC Legend:\n\n" + "\n".join(f"  NIC{k}: mlx5_{k}" for k in range(nics)) + "\n"
    return text
