"""`nvidia-smi topo -m` parsing against every real fixture, golden files, and the TP verdicts.

Golden files live in tests/fixtures/topo-golden/<fixture>.json. After a deliberate parser
change, regenerate them with HEADROOM_REGEN_GOLDEN=1 and read every diff before committing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from headroom.probes.topology import (
    matrix_to_json,
    parse_topo_text,
    tp_verdicts,
    verdict_to_json,
)
from headroom.probes.topology_verdict import best_subset, default_tp_sizes, link_rank

FIXTURES = Path(__file__).parents[1] / "fixtures"
TOPO = FIXTURES / "topo"
GOLDEN = FIXTURES / "topo-golden"
ALL_FILES = sorted(p.name for p in TOPO.glob("*.txt"))


def parse(name: str):
    return parse_topo_text(TOPO.joinpath(name).read_text(encoding="utf-8"))


def golden_payload(name: str) -> dict:
    matrix = parse(name)
    payload = matrix_to_json(matrix)
    payload["verdicts"] = [verdict_to_json(v) for v in tp_verdicts(matrix)]
    return payload


def test_there_are_fixtures_to_parse() -> None:
    assert len(ALL_FILES) >= 17


@pytest.mark.parametrize("name", ALL_FILES)
def test_fixture_matches_golden(name: str) -> None:
    payload = golden_payload(name)
    path = GOLDEN / name.replace(".txt", ".json")
    if os.environ.get("HEADROOM_REGEN_GOLDEN"):
        path.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    assert path.exists(), f"no golden file for {name}; run with HEADROOM_REGEN_GOLDEN=1"
    assert payload == json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", [n for n in ALL_FILES if not n.startswith("p2p-")])
def test_every_topo_m_fixture_parses_with_high_confidence(name: str) -> None:
    matrix = parse(name)
    assert matrix.confidence == "high", matrix.problems
    n = len(matrix.gpus)
    assert n >= 1
    assert all(len(row) == n for row in matrix.links)
    assert all(matrix.links[i][i] == "X" for i in range(n))
    assert all(matrix.links[i][j] == matrix.links[j][i] for i in range(n) for j in range(n))
    assert all(len(row) == len(matrix.nics) for row in matrix.gpu_nic_links)
    assert len(matrix.cpu_affinity) == len(matrix.numa_affinity) == n


def test_h100_nvswitch_node_reads_every_pair_as_nv18_and_all_tp_good() -> None:
    matrix = parse("h100-sxm-8gpu-nv18-8nic.txt")
    assert matrix.gpus == tuple(f"GPU{i}" for i in range(8))
    assert {matrix.links[i][j] for i in range(8) for j in range(8) if i != j} == {"NV18"}
    assert matrix.nics == tuple(f"NIC{i}" for i in range(8))
    assert matrix.nic_names["NIC7"] == "mlx5_7"
    assert matrix.gpu_nic_links[0][0] == "PIX" and matrix.gpu_nic_links[4][0] == "SYS"
    assert matrix.cpu_affinity[4] == "48-95,144-191" and matrix.numa_affinity[4] == "1"
    verdicts = tp_verdicts(matrix, [2, 4, 8])
    assert [v.level for v in verdicts] == ["good", "good", "good"]
    assert verdicts[2].gpus == tuple(range(8)) and verdicts[2].weakest_link == "NV18"
    assert any("450 GB/s" in r for r in verdicts[2].reasons)


def test_rtx4090_all_sys_box_is_poor_beyond_tp2() -> None:
    matrix = parse("rtx4090-8gpu-all-sys-2nic-no-legend.txt")
    by_tp = {v.tp: v for v in tp_verdicts(matrix, [2, 4, 8])}
    assert by_tp[2].level == "tolerable"
    assert by_tp[4].level == "poor" and by_tp[8].level == "poor"
    assert by_tp[4].weakest_link == "SYS"
    assert any("pipeline-parallel-size 2" in r for r in by_tp[4].reasons)
    assert matrix.nic_names == {}  # no legend: NIC columns stay unnamed


def test_a100_bridge_pairs_tp2_on_a_pair_is_good_tp4_across_pairs_is_not() -> None:
    name = "a100-pcie-8gpu-nv12-bridge-pairs-empty-cpu-affinity-truncated.txt"
    matrix = parse(name)
    tp2, tp4 = tp_verdicts(matrix, [2, 4])
    assert tp2.level == "good" and tp2.weakest_link == "NV12"
    assert matrix.links[tp2.gpus[0]][tp2.gpus[1]] == "NV12"
    assert tp4.level == "poor" and tp4.weakest_link == "NODE"
    assert any("linked pair" in r for r in tp4.reasons)
    # cgroup-restricted job: CPU affinity empty for GPU4-7, NUMA still read.
    assert matrix.cpu_affinity[4:] == (None, None, None, None)
    assert matrix.numa_affinity[4:] == ("1", "1", "1", "1")


def test_tp2_picks_the_linked_pair_even_when_it_is_not_gpu0() -> None:
    text = (
        "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\n"
        "GPU0\t X \tSYS\tSYS\t0-7\t0\n"
        "GPU1\tSYS\t X \tNV4\t0-7\t0\n"
        "GPU2\tSYS\tNV4\t X \t0-7\t0\n"
    )
    (verdict,) = tp_verdicts(parse_topo_text(text), [2])
    assert verdict.gpus == (1, 2) and verdict.level == "good"


def test_tp_larger_than_the_box_is_impossible() -> None:
    (verdict,) = tp_verdicts(parse("rtx3090-2gpu-phb.txt"), [4])
    assert verdict.level == "impossible" and verdict.gpus == ()


def test_pix_pairs_tolerable_at_tp2_and_phb_poor_at_tp4() -> None:
    by_tp = {v.tp: v for v in tp_verdicts(parse("v100-pcie-4gpu-pix-phb.txt"))}
    assert by_tp[2].weakest_link == "PIX" and by_tp[2].level == "tolerable"
    assert by_tp[4].weakest_link == "PHB" and by_tp[4].level == "poor"


def test_old_column_names_and_truncation_are_noted_not_fatal() -> None:
    matrix = parse("dgx-a100-8gpu-no-nvlink-shown-mlx5-cols-numa-range-truncated.txt")
    assert matrix.nics[0] == "mlx5_0" and len(matrix.nics) == 12
    assert matrix.numa_affinity[0] == "6-7"
    assert any("truncated" in p for p in matrix.problems)
    names = ["NVIDIA A100-SXM4-40GB"] * 8
    (tp8,) = tp_verdicts(matrix, [8], gpu_names=names)
    assert any("fabricmanager" in r for r in tp8.reasons)


def test_p2p_matrix_is_recognised_and_not_judged() -> None:
    matrix = parse("p2p-rw-matrix-rtx5090-2gpu-gns.txt")
    assert matrix.kind == "p2p" and matrix.confidence == "low"
    assert "topo -p2p" in matrix.problems[0]
    assert {v.level for v in tp_verdicts(matrix)} == {"unknown"}


def test_legacy_soc_legend_is_understood() -> None:
    text = (
        "\tGPU0\tGPU1\tmlx4_0\tCPU Affinity\n"
        "GPU0\t X \tSOC\tPHB\t0-7\n"
        "GPU1\tSOC\t X \tSOC\t8-15\n"
        "mlx4_0\tPHB\tSOC\t X \t\n"
        "\nLegend:\n\n  X   = Self\n"
        "  SOC  = Connection traversing PCIe as well as the SMP link between CPU sockets(e.g. QPI)\n"
    )
    matrix = parse_topo_text(text)
    assert matrix.confidence == "high" and matrix.links[0][1] == "SOC"
    assert matrix.cpu_affinity == ("0-7", "8-15") and matrix.numa_affinity == (None, None)
    (tp2,) = tp_verdicts(matrix, [2])
    assert tp2.level == "tolerable" and tp2.weakest_link == "SOC"


def test_lost_tabs_merge_tokens_and_are_split_back() -> None:
    text = (
        "\tGPU0\tGPU1\tGPU2\tNIC8NIC9\tCPU Affinity\n"
        "GPU0\t X \tNODENODE\tPXB\tSYS\t0-7\n"
        "GPU1\tNODE\t X \tNODEPXB\tPXB\t0-7\n"
        "GPU2\tPXB\tNODE\t X \tSYS\tSYS\t0-7\n"
    )
    matrix = parse_topo_text(text)
    assert matrix.nics == ("NIC8", "NIC9")
    assert matrix.links[0] == ("X", "NODE", "NODE")
    assert matrix.links[1] == ("NODE", "X", "NODE")
    assert matrix.gpu_nic_links[1] == ("PXB", "PXB")
    assert any("merged" in p for p in matrix.problems)


def test_asymmetric_or_unknown_cells_lower_confidence() -> None:
    text = "\tGPU0\tGPU1\nGPU0\t X \tNV12\nGPU1\tPHB\t X \n"
    matrix = parse_topo_text(text)
    assert matrix.confidence == "low"
    assert any("GPU0-GPU1 is NV12 but GPU1-GPU0 is PHB" in p for p in matrix.problems)
    garbled = parse_topo_text("\tGPU0\tGPU1\nGPU0\t X \tQQ\nGPU1\tQQ\t X \n")
    assert garbled.confidence == "low"
    assert {v.level for v in tp_verdicts(garbled, [2])} == {"unknown"}


def test_missing_gpu_row_is_low_and_no_matrix_is_unreadable() -> None:
    missing = parse_topo_text("\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV1\tNV1\nGPU1\tNV1\t X \tNV1\n")
    assert missing.confidence == "low" and any("GPU2" in p for p in missing.problems)
    assert missing.links[2] == ("NV1", "NV1", "X")  # rebuilt from the GPU2 column
    assert missing.cpu_affinity == (None, None, None)
    (tp3,) = tp_verdicts(missing, [3])
    assert tp3.level == "good" and any("low confidence" in r for r in tp3.reasons)
    assert parse_topo_text("").confidence == "unreadable"
    assert parse_topo_text("command not found: nvidia-smi\n").confidence == "unreadable"


def test_wrapped_row_is_rejoined() -> None:
    text = (
        "        GPU0    GPU1    GPU2    CPU Affinity    NUMA Affinity\n"
        "GPU0     X      NV2     NV2\n"
        "        0-7     0\n"
        "GPU1    NV2      X      NV2     0-7     0\n"
        "GPU2    NV2     NV2      X      0-7     0\n"
    )
    matrix = parse_topo_text(text)
    assert matrix.confidence == "high"
    assert matrix.links[0] == ("X", "NV2", "NV2") and matrix.cpu_affinity[0] == "0-7"


def test_link_rank_orders_nvlink_above_pcie_paths() -> None:
    order = ["NV18", "NV4", "PIX", "PXB", "PHB", "NODE", "SYS"]
    ranks = [link_rank(c) for c in order]
    assert ranks == sorted(ranks, reverse=True) and link_rank("SOC") == link_rank("SYS")
    assert link_rank("bogus") == 0


def test_default_tp_sizes_and_subset_choice() -> None:
    assert default_tp_sizes(8) == [1, 2, 4, 8] and default_tp_sizes(5) == [1, 2, 4]
    matrix = parse("consumer-5gpu-2numa-sys-phb-node.txt")
    assert best_subset(matrix, 2) == (1, 2)  # the PHB pair beats every SYS/NODE pair


def test_judge_the_gpus_a_server_actually_uses() -> None:
    from headroom.probes.topology_verdict import judge_gpu_set

    matrix = parse("a100-pcie-8gpu-nv12-bridge-pairs-empty-cpu-affinity-truncated.txt")
    across = judge_gpu_set(matrix, [1, 2])
    assert across.gpus == (1, 2) and across.level == "tolerable" and across.weakest_link == "NODE"
    assert any("CUDA_VISIBLE_DEVICES=0,1" in r for r in across.reasons)
    paired = judge_gpu_set(matrix, [7, 6])
    assert paired.gpus == (6, 7) and paired.level == "good"
    assert not any("better connected" in r for r in paired.reasons)
    assert judge_gpu_set(matrix, [3, 9]).level == "unknown"


def test_closest_nic_per_gpu_and_gpudirect() -> None:
    from headroom.probes.topology_verdict import gpu_nic_paths

    full = gpu_nic_paths(parse("h100-sxm-8gpu-nv18-8nic.txt"))
    assert [(p.nic, p.name, p.link, p.gpudirect_rdma) for p in full[:2]] == [
        ("NIC0", "mlx5_0", "PIX", True),
        ("NIC1", "mlx5_1", "PIX", True),
    ]
    odd = gpu_nic_paths(parse("h100-sxm-8gpu-nv18-8nic-nic-pairs-on-even-gpus.txt"))
    assert odd[1].link == "NODE" and odd[1].gpudirect_rdma is False
    assert gpu_nic_paths(parse("rtx3090-2gpu-phb.txt"))[0].nic is None


def test_uneven_nvlink_counts_are_called_out() -> None:
    text = (
        "\tGPU0\tGPU1\tGPU2\tGPU3\n"
        "GPU0\t X \tNV2\tNV1\tNV1\n"
        "GPU1\tNV2\t X \tNV1\tNV2\n"
        "GPU2\tNV1\tNV1\t X \tNV2\n"
        "GPU3\tNV1\tNV2\tNV2\t X \n"
    )
    (tp4,) = tp_verdicts(parse_topo_text(text), [4])
    assert tp4.level == "good" and tp4.weakest_link == "NV1"
    assert any("uneven" in r and "nvlink -s" in r for r in tp4.reasons)


def test_no_header_infers_columns_but_is_low_confidence() -> None:
    text = "GPU0\t X \tNV4\t0-15\t0\nGPU1\tNV4\t X \t0-15\t0\n"
    matrix = parse_topo_text(text)
    assert matrix.gpus == ("GPU0", "GPU1") and matrix.links[0][1] == "NV4"
    assert matrix.confidence == "low" and any("no header" in p for p in matrix.problems)


def test_wrapped_header_and_collapsed_affinity_spacing() -> None:
    text = (
        "        GPU0    GPU1    NIC0\n"
        "        CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
        "GPU0     X      SYS     PIX     0-55,112-167 0N/A\n"
        "GPU1    SYS      X      SYS     56-111,168-223  1       N/A\n"
        "NIC0    PIX     SYS      X\n"
    )
    matrix = parse_topo_text(text)
    assert matrix.confidence == "high" and matrix.nics == ("NIC0",)
    assert matrix.cpu_affinity == ("0-55,112-167", "56-111,168-223")
    assert matrix.numa_affinity == ("0", "1")
    assert any("header was wrapped" in p for p in matrix.problems)


def test_wide_box_uses_the_fast_island_even_on_the_greedy_path() -> None:
    n = 16  # two 8-GPU NVLink islands joined by SYS; C(16, 8) is too many to try them all
    header = "\t" + "\t".join(f"GPU{i}" for i in range(n)) + "\n"
    rows = "".join(
        f"GPU{i}\t"
        + "\t".join(" X " if i == j else ("NV18" if i // 8 == j // 8 else "SYS") for j in range(n))
        + "\n"
        for i in range(n)
    )
    by_tp = {v.tp: v for v in tp_verdicts(parse_topo_text(header + rows))}
    assert by_tp[8].level == "good" and by_tp[8].gpus == tuple(range(8))
    assert by_tp[16].level == "poor" and by_tp[16].weakest_link == "SYS"


def test_truncated_last_gpu_row_is_rebuilt_from_its_column() -> None:
    full = parse("h100-4gpu-nv6-4nic-no-nvswitch-no-legend.txt")
    text = TOPO.joinpath("h100-4gpu-nv6-4nic-no-nvswitch-no-legend.txt").read_text()
    cut = "\n".join(line for line in text.split("\n") if not line.startswith("GPU3"))
    matrix = parse_topo_text(cut)
    assert matrix.links == full.links and matrix.gpu_nic_links == full.gpu_nic_links
    assert matrix.confidence == "low" and matrix.cpu_affinity[3] is None
