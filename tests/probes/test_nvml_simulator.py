"""The NVML probe and topology readers against the simulator's pynvml stand-in.

The simulator writes a state file and `headroom.simulator.nvml_standin` answers pynvml calls
from it; the probe is loaded exactly as in a demo (HEADROOM_NVML_STANDIN). The topology is
read twice, from the stand-in's `topo -m` text and rebuilt from its NVML answers, and the two
must agree.
"""

from __future__ import annotations

import pytest

from headroom.probes.nvml import NvmlProbe, foreign_memory
from headroom.probes.topology import parse_topo_text, read_topology
from headroom.probes.topology_from_nvml import matrix_from_nvml

hardware = pytest.importorskip("headroom.simulator.hardware")
state = pytest.importorskip("headroom.simulator.state")
sim_topo = pytest.importorskip("headroom.simulator.topo")
standin = pytest.importorskip("headroom.simulator.nvml_standin")

GIB = 1024**3
SIM_PID = 424242


def sim_lookup(pid: int):
    if pid == SIM_PID:
        return "python", "python -m headroom.simulator serve meta-llama/Llama-3.1-8B"
    return None, None


def write_machine(tmp_path, monkeypatch, key, interconnect, per_node, others=None):
    machine = hardware.Machine(
        gpu=hardware.GPU_MODELS[key],
        gpus_per_node=per_node,
        interconnect=interconnect,
        other_process_bytes=others or {},
    )
    used = {i: 60 * GIB if hardware.GPU_MODELS[key].memory_bytes > 60 * GIB else 20 * GIB
            for i in range(per_node)}  # fmt: skip
    snap = state.build_state(machine, SIM_PID, used, 0.9, "serving", sim_topo.topo_m_text(machine))
    path = tmp_path / "state.json"
    state.write_state(path, snap)
    monkeypatch.setenv("HEADROOM_NVML_STANDIN", str(path))
    return machine, snap


def test_probe_reads_the_simulated_h100_node(tmp_path, monkeypatch) -> None:
    _, snap = write_machine(tmp_path, monkeypatch, "H100-SXM", "nvswitch", 8, {3: 2 * GIB})
    probe = NvmlProbe(process_lookup=sim_lookup)  # module loaded via HEADROOM_NVML_STANDIN
    reading = probe.read()
    probe.close()
    assert reading.available, reading.reason
    assert reading.driver_version == snap["driver_version"] and reading.cuda_version == "12.8"
    assert len(reading.gpus) == 8
    for got, want in zip(reading.gpus, snap["gpus"], strict=True):
        assert got.name == want["name"] and got.uuid == want["uuid"]
        assert got.memory_used == want["memory_used"] and got.memory_total == want["memory_total"]
        assert got.pci_bus_id == want["pci_bus_id"] and not got.lost
        assert len(got.nvlinks) == 18 and all(link.active for link in got.nvlinks)
    assert all(p.vllm_role == "simulator" for p in reading.gpus[0].processes)
    (foreign,) = foreign_memory(reading)
    assert foreign.gpu_index == 3 and foreign.used_memory_bytes == 2 * GIB and foreign.name is None


@pytest.mark.parametrize(
    ("key", "interconnect", "per_node"),
    [("H100-SXM", "nvswitch", 8), ("A100-80G-SXM", "nvlink-pairs", 8), ("RTX4090", "pcie", 2),
     ("RTX4090", "pcie", 8), ("A100-80G-SXM", "pcie", 4)],
)  # fmt: skip
async def test_nvml_rebuilt_topology_agrees_with_topo_m(
    tmp_path, monkeypatch, key, interconnect, per_node
):
    machine, snap = write_machine(tmp_path, monkeypatch, key, interconnect, per_node)
    from headroom.probes.nvml_calls import load_nvml_module

    module = load_nvml_module()
    from_text = parse_topo_text(snap["topo_m"])
    from_nvml = matrix_from_nvml(module)
    assert from_nvml.confidence == "high", from_nvml.problems
    assert from_nvml.links == from_text.links
    live = await read_topology(module)  # the stand-in's own text wins
    assert live.links == from_text.links and live.source == "nvidia-smi"
