"""Cross-check: the simulator prints `nvidia-smi topo -m` for its machines independently of
the parser; every simulated box must parse back to the simulator's own link codes."""

from __future__ import annotations

import itertools

import pytest

from headroom.probes.topology import parse_topo_text, tp_verdicts

hardware = pytest.importorskip("headroom.simulator.hardware")
sim_topo = pytest.importorskip("headroom.simulator.topo")

CASES = [
    (key, interconnect, per_node, nodes)
    for key, interconnect, per_node, nodes in itertools.product(
        sorted(hardware.GPU_MODELS), hardware.INTERCONNECTS, (1, 2, 8), (1, 2)
    )
]


@pytest.mark.parametrize(("key", "interconnect", "per_node", "nodes"), CASES)
def test_simulated_topology_parses_to_the_simulators_links(key, interconnect, per_node, nodes):
    machine = hardware.Machine(
        gpu=hardware.GPU_MODELS[key], gpus_per_node=per_node, interconnect=interconnect, nodes=nodes
    )
    matrix = parse_topo_text(sim_topo.topo_m_text(machine), source="nvidia-smi")
    assert matrix.confidence == "high", matrix.problems
    assert matrix.gpus == tuple(f"GPU{i}" for i in range(per_node))
    expected = tuple(
        tuple(machine.link_code(a, b) for b in range(per_node)) for a in range(per_node)
    )
    assert matrix.links == expected
    for verdict in tp_verdicts(matrix):
        if all(c.startswith("NV") for row in expected for c in row if c != "X"):
            assert verdict.level == "good"
        assert verdict.level != "unknown"
