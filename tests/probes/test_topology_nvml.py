"""Building the topology matrix from NVML when nvidia-smi is missing, and read_topology's
fallback order (stand-in text, nvidia-smi, NVML, unreadable)."""

from __future__ import annotations

from nvml_standin import FakeNvml
from nvml_standin.machines import a100_mig, h100_sxm_8, no_driver, rtx4090_2

from headroom.probes import topology
from headroom.probes.topology import read_topology, tp_verdicts
from headroom.probes.topology_from_nvml import cpu_mask_to_ranges, matrix_from_nvml


def test_cpu_mask_to_ranges() -> None:
    assert cpu_mask_to_ranges([0xFFFF]) == "0-15"
    assert cpu_mask_to_ranges([0b1011]) == "0-1,3"
    assert cpu_mask_to_ranges([0, 0xFF]) == "64-71"
    assert cpu_mask_to_ranges([0xFFFF_0000_0000_0000, 0xFFFF_FFFF]) == "48-95"
    assert cpu_mask_to_ranges([]) is None and cpu_mask_to_ranges(None) is None


def test_nvswitch_node_from_nvml_is_nv18_everywhere() -> None:
    fake = FakeNvml(h100_sxm_8())
    matrix = matrix_from_nvml(fake)
    assert matrix.source == "nvml" and matrix.confidence == "high"
    assert matrix.gpus == tuple(f"GPU{i}" for i in range(8))
    assert {matrix.links[i][j] for i in range(8) for j in range(8) if i != j} == {"NV18"}
    assert all(matrix.links[i][i] == "X" for i in range(8))
    assert matrix.numa_affinity[:5] == ("0", "0", "0", "0", "1")
    assert matrix.cpu_affinity[0] == "0-47" and matrix.nics == ()
    assert any("NIC" in p for p in matrix.problems)
    assert fake.initialised == 0  # init/shutdown balanced
    assert [v.level for v in tp_verdicts(matrix, [2, 4, 8])] == ["good"] * 3


def test_pcie_pair_from_common_ancestor() -> None:
    matrix = matrix_from_nvml(FakeNvml(rtx4090_2()))
    assert matrix.links == (("X", "PHB"), ("PHB", "X"))
    assert matrix.numa_affinity == (None, None)
    (tp2,) = tp_verdicts(matrix, [2])
    assert tp2.level == "tolerable" and tp2.weakest_link == "PHB"


def test_direct_nvlink_bridge_counts_links_to_the_peer() -> None:
    machine = rtx4090_2()
    bus0, bus1 = machine.gpus[0].bus_id, machine.gpus[1].bus_id
    machine.gpus[0].nvlinks = [(True, bus1, 0)] * 4
    machine.gpus[1].nvlinks = [(True, bus0, 0)] * 4
    machine.nvlink_pairs = {frozenset((0, 1))}
    matrix = matrix_from_nvml(FakeNvml(machine))
    assert matrix.links[0][1] == "NV4" == matrix.links[1][0]


def test_unknown_pair_lowers_confidence() -> None:
    machine = rtx4090_2()
    machine.ancestor = {}
    matrix = matrix_from_nvml(FakeNvml(machine))
    assert matrix.confidence == "low" and matrix.links[0][1] == "?"
    assert {v.level for v in tp_verdicts(matrix, [2])} == {"unknown"}


def test_single_gpu_and_no_driver() -> None:
    assert matrix_from_nvml(FakeNvml(a100_mig())).links == (("X",),)
    dead = matrix_from_nvml(FakeNvml(no_driver()))
    assert dead.confidence == "unreadable" and "library not found" in dead.problems[0].lower()


async def test_read_topology_falls_back_to_nvml_without_nvidia_smi(monkeypatch) -> None:
    monkeypatch.setattr(topology, "run_nvidia_smi_topo", lambda timeout_s=10.0: None)
    matrix = await read_topology(FakeNvml(h100_sxm_8()))
    assert matrix.source == "nvml" and matrix.links[0][1] == "NV18"


async def test_read_topology_prefers_nvidia_smi_text(monkeypatch, fixtures_dir) -> None:
    text = (fixtures_dir / "topo" / "rtx5090-2gpu-phb.txt").read_text()
    monkeypatch.setattr(topology, "run_nvidia_smi_topo", lambda timeout_s=10.0: text)
    matrix = await read_topology(FakeNvml(h100_sxm_8()))
    assert matrix.source == "nvidia-smi" and matrix.links[0][1] == "PHB"


async def test_read_topology_uses_the_standin_text(fixtures_dir) -> None:
    fake = FakeNvml(h100_sxm_8())
    text = (fixtures_dir / "topo" / "h20-8gpu-nv18-8nic.txt").read_text()
    fake.nvidia_smi_topo_m = lambda: text
    matrix = await read_topology(fake)
    assert matrix.nic_names["NIC0"] == "mlx5_1"


async def test_read_topology_with_nothing_says_why(monkeypatch) -> None:
    monkeypatch.setattr(topology, "run_nvidia_smi_topo", lambda timeout_s=10.0: None)
    matrix = await read_topology(FakeNvml(no_driver()))
    assert matrix.confidence == "unreadable"
    assert "nvidia-smi not found" in matrix.problems[0]
