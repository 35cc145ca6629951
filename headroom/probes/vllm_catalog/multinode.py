"""Catalog entries: bringing a model up across nodes (Ray placement, Gloo and NCCL sockets,
dead nodes, engine hand-shakes). The texts and their causes are fleet-facts.md section 4
(verbatim lines from public threads); vLLM's own texts are also read from its wheels (see
provenance.py). In match order, before the generic NCCL warning and Python exception rules."""

from __future__ import annotations

from headroom.probes.vllm_catalog.signature import NOT_CONFIG
from headroom.probes.vllm_catalog.signature import Signature as S

ENTRIES: tuple[S, ...] = (
    S("ray_no_node_type", "ray_infeasible_request", "error", ("No available node types can fulfill resource request",),
      r"resource request (?:defaultdict\(<class 'float'>, )?(?P<request>\{.*?\})", origin="ray",
      library="Ray autoscaler (printed to the driver as `(autoscaler +Ns) Error:`)", fields=("request",),
      feeds="ray-placement-ip-mismatch when the request pins node:<ip> (VLLM_HOST_IP = the IP Ray registered); "
            "else too few GPUs for TP x PP",
      examples=("(autoscaler +13s) Error: No available node types can fulfill resource request {'node:111.6.168.225': "
                "0.001, 'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue.",
                # this project's own Ray 2.60.0 cluster, a 3-GPU STRICT_PACK group on 2-GPU nodes
                "(autoscaler +5s) Error: No available node types can fulfill resource request defaultdict(<class "
                "'float'>, {'GPU': 3.0}). Add suitable node types to this cluster to resolve this issue.")),
    S("ray_tp_spread_nodes", "tp_spread_nodes", "warning", ("is bigger than a reserved number of",),
      r"tensor_parallel_size=(?P<tp>\d+) is bigger than a reserved number of \w+s \((?P<gpus_per_node>\d+) \w+s\)",
      probe=("is bigger than a reserved number of",), fields=("tp", "gpus_per_node"),
      feeds="tp-spread-nodes: TP = the GPUs of one node, PP across the nodes",
      examples=("tensor_parallel_size=2 is bigger than a reserved number of GPUs (1 GPUs) in a node c797…. Tensor "
                "parallel workers can be spread out to 2+ nodes which can degrade the performance unless you have "
                "fast interconnect across nodes, like Infiniband.",)),
    S("ray_no_gpu_on_node", "ray_node_without_gpu", "error", ("Current node has no GPU available",),
      r"current_node_resource=(?P<resources>\{.*?\})", require_match=False, origin="raise",
      probe=("Current node has no ",), fields=("resources",),
      feeds="ray-node-without-gpu: another vLLM's placement group holds this Ray cluster's GPUs",
      examples=("ValueError: Current node has no GPU available. current_node_resource={'node:192.168.200.13_group_0_"
                "e904…",)),
    S("gloo_loopback", "gloo_loopback", "warning", ("Using the loopback address as fallback",), origin="torch",
      library="PyTorch ProcessGroupGloo", feeds="gloo-loopback: GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) on every node",
      examples=("[rank9]:[W ProcessGroupGloo.cpp:721] Warning: Unable to resolve hostname to a (local) address. Using "
                "the loopback address as fallback. Manually set the network interface to bind to with "
                "GLOO_SOCKET_IFNAME.",)),
    S("nccl_no_socket_interface", "nccl_no_socket_interface", "error", ("no socket interface found",),
      origin="nccl", library="NCCL (bootstrap.cc)",
      feeds="nccl-no-socket-interface: NCCL_SOCKET_IFNAME excluded every interface; name one",
      examples=("bootstrap.cc:45 NCCL WARN Bootstrap : no socket interface found",)),
    S("nccl_socket_interfaces", "nccl_socket_interfaces", "info", ("NET/Socket : Using",),
      r"NET/Socket : Using (?P<interfaces>(?:\[\d+\]\S+\s*)+)", origin="nccl", library="NCCL_DEBUG=INFO",
      fields=("interfaces",), feeds="nccl-socket-interfaces: bridges/VPNs among NCCL's NICs: pin NCCL_SOCKET_IFNAME",
      examples=("NCCL INFO NET/Socket : Using [0]eno3:169.229.48.108<0> [1]lxcbr0:10.0.3.1<0> "
                "[2]tailscale0:100.72.221.35<0>",)),
    S("ray_node_marked_dead", "ray_node_dead", "error", ("has been marked dead because the detector has missed",),
      r"node id: (?P<node_id>\S+) and address: (?P<address>\S+) and node name", origin="ray",
      library="Ray raylet/GCS (printed to the driver as `(raylet)`)", fields=("node_id", "address"),
      feeds="ray-node-dead: a raylet crashed or its heartbeats stalled (OOM, network)",
      examples=("(raylet) The node with node id: 0f21… and address: 10.0.0.51 and node name: 10.0.0.51 has been "
                "marked dead because the detector has missed too many heartbeats from it.",
                # this project's own Ray 2.60.0 cluster after a kill -9 of the second raylet
                "(raylet) The node with node id: e8013585f5e8cca88e6e483fef77e6930fc9cb3888074ad6f86327f9 and address: "
                "192.0.2.2 and node name: 192.0.2.2 has been marked dead because the detector has missed too many "
                "heartbeats from it. This can happen when a \t(1) raylet crashes unexpectedly (OOM, etc.) ")),
    S("local_world_size_exceeds", "local_world_size_exceeds", "error",
      ("exceeds assigned_physical_gpu_ids count", "must be less than or equal to the number of visible devices"),
      r"local_world_size \((?P<local_world_size>\d+)\)(?: must be less than or equal to the number of visible "
      r"devices| exceeds assigned_physical_gpu_ids count) \((?P<visible>\d+)\)", origin="assert",
      probe=("exceeds assigned_physical_gpu_ids count",), fields=("local_world_size", "visible"),
      feeds="local-world-size-exceeds: TP = GPUs per node, PP = nodes (TP spanning nodes with Ray, vllm PR #28873)",
      examples=("AssertionError: local_world_size (16) must be less than or equal to the number of visible devices "
                "(8).",)),
    S("engine_ready_timeout", "engine_start_timeout", "error", ("Timed out waiting for engine core processes to start",),
      r"Waited (?P<waited_s>\d+)s", require_match=False, origin="raise",
      probe=("Timed out waiting for engine core processes to ",), fields=("waited_s",),
      feeds="engine-start-timeout: slow weight loading (raise VLLM_ENGINE_READY_TIMEOUT_S) or remote engines "
            "the head cannot reach",
      examples=("TimeoutError: Timed out waiting for engine core processes to start. This is often caused by slow "
                "weight loading for large models. Waited 600s (configured by VLLM_ENGINE_READY_TIMEOUT_S)…",)),
    S("headless_handshake_timeout", "headless_handshake_timeout", "error",
      ("Did not receive response from front-end",), r"within (?P<minutes>\d+) minutes", require_match=False,
      origin="raise", probe=("Did not receive response from front-end ",), fields=("minutes",),
      feeds=NOT_CONFIG + ": a headless node waited for a head it could not reach (address, port, start order)",
      examples=("RuntimeError: Did not receive response from front-end process within 5 minutes",)),
)  # fmt: skip
