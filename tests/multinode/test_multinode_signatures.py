"""Every multi-node failure signature of fleet-facts.md section 4, with its verbatim text
(as the public thread printed it, prefixes included), through the log reader and the doctor:
the finding and the change that fixes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from headroom.doctor import DoctorInputs, diagnose
from headroom.probes.vllm_log import digest_text
from headroom.vllm_cmd import parse_command

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# (fleet-facts row, log text, finding id, (knob, direction, value) of its first action or None)
SIGNATURES = [
    (
        "1 IP pin",
        "(autoscaler +13s) Error: No available node types can fulfill resource request "
        "{'node:111.6.168.225': 0.001, 'GPU': 1.0}. Add suitable node types to this cluster to "
        "resolve this issue.\nINFO 03-03 22:56:16 ray_utils.py:221] Waiting for creating a placement "
        "group of specs for 10 seconds. specs=[{'node:111.6.168.225': 0.001, 'GPU': 1.0}, {'GPU': 1.0}]. "
        "Check `ray status` to see if you have enough resources.",
        "ray-placement-ip-mismatch",
        ("VLLM_HOST_IP", "set", None),
    ),
    (
        "2 too few GPUs",
        (FIXTURES / "ray" / "vllm-log-waiting-for-placement-group-gpustack-5509.log").read_text(),
        "ray-placement-failed",
        ("tensor_parallel_size", "lower", None),
    ),
    (
        "3 TP spread over nodes",
        "WARNING 02-22 21:02:44 ray_utils.py:180] tensor_parallel_size=2 is bigger than a reserved "
        "number of GPUs (1 GPUs) in a node c797…. Tensor parallel workers can be spread out to 2+ "
        "nodes which can degrade the performance unless you have fast interconnect across nodes, "
        "like Infiniband.",
        "tp-across-nodes",
        ("tensor_parallel_size", "lower", 1),
    ),
    (
        "4 no GPU on this node",
        "(EngineCore_DP0 pid=5919) ValueError: Current node has no GPU available. "
        "current_node_resource={'node:192.168.200.13_group_0_e904…",
        "ray-node-without-gpu",
        None,
    ),
    (
        "5 Gloo on loopback",
        "[rank9]:[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) "
        "address. Using the loopback address as fallback. Manually set the network interface to "
        "bind to with GLOO_SOCKET_IFNAME.\n[rank8]:[E ProcessGroupGloo.cpp:144] Gloo connectFullMesh "
        "failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:144] no error",
        "gloo-wrong-interface",
        ("GLOO_SOCKET_IFNAME", "set", None),
    ),
    (
        "6 NCCL over bridges",
        "NCCL INFO NET/Socket : Using [0]eno3:169.229.48.108<0> [1]lxcbr0:10.0.3.1<0> "
        "[2]tailscale0:100.72.221.35<0>",
        "nccl-bridge-interfaces",
        ("NCCL_SOCKET_IFNAME", "set", "eno3"),
    ),
    (
        "7 no socket interface",
        "NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^lo,docker,veth\n"
        "bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found",
        "nccl-no-socket-interface",
        ("NCCL_SOCKET_IFNAME", "set", None),
    ),
    (
        "9 node marked dead",
        "(raylet) The node with node id: 0f21… and address: 10.0.0.51 and node name: 10.0.0.51 has "
        "been marked dead because the detector has missed too many heartbeats from it.",
        "ray-node-dead",
        None,
    ),
    (
        "10 local_world_size",
        "AssertionError: local_world_size (16) must be less than or equal to the number of visible "
        "devices (8).",
        # under Ray (the command below) this text is vLLM's own bug, fixed by PR #28873: no knob;
        # without Ray test_tp_spread_pairs_tp_with_pp keeps TP inside a node, PP across
        "local-world-size-ray-bug",
        None,
    ),
    (
        "11 engine ready timeout",
        "TimeoutError: Timed out waiting for engine core processes to start. This is often caused by "
        "slow weight loading for large models. Waited 600s (configured by VLLM_ENGINE_READY_TIMEOUT_S)…",
        "engine-start-timeout",
        ("VLLM_ENGINE_READY_TIMEOUT_S", "set", 1200),
    ),
    (
        "11 headless handshake",
        "RuntimeError: Did not receive response from front-end process within 5 minutes",
        "headless-handshake-timeout",
        None,
    ),
]


@pytest.mark.parametrize(
    ("row", "text", "finding", "action"), SIGNATURES, ids=[s[0] for s in SIGNATURES]
)
def test_signature_names_the_cause_and_the_fix(row, text, finding, action):
    command = parse_command(
        ["vllm", "serve", "M", "-tp", "16", "--distributed-executor-backend", "ray"]
    )
    diag = diagnose(DoctorInputs(log=digest_text(text), command=command))
    found = {f.id: f for f in diag.findings}
    assert finding in found, (row, list(found))
    f = found[finding]
    assert f.evidence
    if action is None:
        assert not f.actions
    else:
        first = f.actions[0]
        assert (first.knob, first.direction, first.value) == action


def test_tp_spread_pairs_tp_with_pp():
    text = SIGNATURES[8][1]  # local_world_size (16) on nodes of 8
    command = parse_command(["vllm", "serve", "M", "-tp", "16"])
    f = next(
        f
        for f in diagnose(DoctorInputs(log=digest_text(text), command=command)).findings
        if f.id == "tp-across-nodes"
    )
    assert dict(f.actions[0].also) == {"pipeline_parallel_size": 2}
    assert f.step == 3
