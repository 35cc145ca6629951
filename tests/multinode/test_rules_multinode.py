"""Why a placement group waits, told from the cluster as Ray shows it."""

from __future__ import annotations

import json
from pathlib import Path

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.ray_cluster import (
    RayCluster,
    RayNode,
    nodes_from_state_api,
    placement_groups_from_state_api,
)
from headroom.probes.ray_status import parse_ray_status
from headroom.vllm_cmd import parse_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ray"


def cluster(status_file=None, nodes=None, groups=None) -> RayCluster:
    return RayCluster(
        taken_at=0.0,
        address=None,
        status=parse_ray_status((FIXTURES / status_file).read_text()) if status_file else None,
        nodes=nodes,
        placement_groups=groups,
    )


def ids(inputs):
    return [f.id for f in diagnose(inputs).findings]


def test_pin_to_a_name_no_node_registered_is_an_ip_mismatch():
    nodes = (
        RayNode("a" * 40, "172.31.0.10", "ALIVE", True, 8.0),
        RayNode("b" * 40, "172.31.0.11", "ALIVE", False, 8.0),
    )
    c = cluster("status-2025-02-old-format-pending-pg-2x8xH100-vllm-12670.txt", nodes=nodes)
    diag = diagnose(DoctorInputs(ray_cluster=c))
    top = diag.findings[0]
    assert top.id == "ray-placement-ip-mismatch"
    assert top.actions[0].knob == "VLLM_HOST_IP" and top.actions[0].value == "172.31.0.10"


def test_too_few_gpus_in_the_cluster():
    c = cluster("status-2026-new-format-pending-pg-2node-gpustack-5509.txt")
    diag = diagnose(DoctorInputs(ray_cluster=c))
    top = diag.findings[0]
    assert top.id == "ray-too-few-gpus" and top.step == 3
    assert "needs 2 GPUs" in top.title and "has 1" in top.title


def test_strict_pack_larger_than_any_node():
    status = "status-2026-ray-2.60.0-verbose-strict-pack-pending-2x2gpu-loopback.txt"
    nodes = nodes_from_state_api(
        json.loads((FIXTURES / "state-api-nodes-2node-loopback.json").read_text())
    )
    groups = placement_groups_from_state_api(
        json.loads((FIXTURES / "state-api-placement-groups-pending.json").read_text())
    )
    c = cluster(status, nodes=nodes, groups=groups)
    # the state API has no strategy; the status text says STRICT_PACK
    c_text_only = cluster(status)
    assert ids(DoctorInputs(ray_cluster=c_text_only))[0] == "ray-bundle-exceeds-node"
    top = diagnose(DoctorInputs(ray_cluster=c)).findings[0]
    assert top.id == "ray-bundle-exceeds-node"
    assert "INFEASIBLE" in top.evidence[0] and "largest node has 2" in top.evidence[1]
    assert top.actions[0].knob == "tensor_parallel_size" and top.actions[0].value == 2


def test_gpus_held_by_another_group():
    text = (FIXTURES / "status-2026-new-format-pending-pg-2node-gpustack-5509.txt").read_text()
    text = text.replace("0.0/1.0 GPU", "7.0/8.0 GPU")
    c = RayCluster(0.0, None, parse_ray_status(text), None, None)
    assert ids(DoctorInputs(ray_cluster=c))[0] == "ray-gpus-held"


def test_dead_node_and_tp_larger_than_a_node():
    nodes = (
        RayNode("a" * 40, "10.0.0.1", "ALIVE", True, 8.0),
        RayNode("b" * 40, "10.0.0.2", "DEAD", False, 8.0, "raylet marked dead"),
    )
    c = RayCluster(0.0, None, None, nodes, ())
    cmd = parse_command(
        ["vllm", "serve", "M", "-tp", "16", "--distributed-executor-backend", "ray"]
    )
    found = {f.id: f for f in diagnose(DoctorInputs(command=cmd, ray_cluster=c)).findings}
    assert "ray-node-dead" in found and "raylet marked dead" in found["ray-node-dead"].evidence[0]
    spans = found["ray-tp-spans-nodes"]
    assert (
        spans.actions[0].value == 8 and dict(spans.actions[0].also)["pipeline_parallel_size"] == 2
    )


def test_idle_cluster_says_nothing():
    c = cluster("status-2025-05-old-format-idle-2x8gpu-gpustack-2077.txt")
    assert not [i for i in ids(DoctorInputs(ray_cluster=c)) if i.startswith("ray-")]


def test_preflight_before_a_ray_start():
    from headroom.doctor.rules_multinode import ray_preflight

    nodes = (
        RayNode("a" * 40, "10.0.0.1", "ALIVE", True, 8.0),
        RayNode("b" * 40, "10.0.0.2", "ALIVE", False, 8.0),
    )
    idle = cluster("status-2025-05-old-format-idle-2x8gpu-gpustack-2077.txt", nodes=nodes)
    assert ray_preflight(idle, tp=8, pp=2, host_ip="10.0.0.1") == ([], [])
    failures, _ = ray_preflight(idle, tp=16, pp=1, host_ip="10.0.0.1")
    assert failures and "use TP 8 x PP 2" in failures[0]
    failures, _ = ray_preflight(idle, tp=8, pp=4, host_ip="10.0.0.1")
    assert "needs 32 GPUs" in failures[0]
    failures, _ = ray_preflight(idle, tp=8, pp=2, host_ip="192.168.1.5")
    assert "not a Ray node IP" in failures[0]
    held = (FIXTURES / "status-2025-05-old-format-idle-2x8gpu-gpustack-2077.txt").read_text()
    held_cluster = RayCluster(
        0.0, None, parse_ray_status(held.replace("0.0/16.0 GPU", "8.0/16.0 GPU")), nodes, ()
    )
    failures, _ = ray_preflight(held_cluster, tp=8, pp=2, host_ip="10.0.0.1")
    assert "8 of 16 Ray GPUs are held" in failures[0]
    assert ray_preflight(None, tp=8, pp=2, host_ip=None)[1][0].startswith("Ray cluster not read")


def test_a_pin_to_a_host_name_is_a_mismatch_from_ray_status_alone():
    c = cluster("status-2025-02-old-format-pending-pg-2x8xH100-vllm-12670.txt")
    top = diagnose(DoctorInputs(ray_cluster=c)).findings[0]
    assert top.id == "ray-placement-ip-mismatch"
    assert "a host name" in top.evidence[1] and top.actions[0].knob == "VLLM_HOST_IP"
