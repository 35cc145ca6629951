"""Multi-node failures as the log tells them (fleet-facts.md section 4): Ray's placement
waits and refusals, TP spread over nodes, Gloo and NCCL on the wrong interface, dead nodes,
engine hand-shake timeouts. The texts are catalog entries (probes/vllm_catalog/multinode.py
and failures.py); these rules read their event kinds and numbers, never the sentences. The
cluster's own view (ray status, the state API) is rules_multinode.py.

Environment variables are actions too (UPPER_CASE knobs): VLLM_HOST_IP, GLOO_SOCKET_IFNAME
and NCCL_SOCKET_IFNAME are what fix these, and Ray does not copy GLOO_* to its workers.
"""

from __future__ import annotations

import re

from headroom.doctor.findings import Action, Finding

__all__ = ["RULES"]

_PIN = re.compile(r"'node:(?P<ip>[^'_]+)'")  # bundle 0's pin; `node:<ip>_group_...` is Ray's own
_BRIDGES = re.compile(r"^(?:docker|lxcbr|virbr|veth|br-|tailscale|wg|zt|cni|flannel|cali|tun|tap)")


def _first(ctx, *kinds: str):
    found = ctx.of(*kinds)
    return found[0] if found else None


def _env_action(name: str, value: object | None, why: str, cost: str = "") -> Action:
    return Action(name, "set", value, why, cost)


def placement_from_log(ctx) -> list[Finding]:
    """vLLM's placement-group wait, Ray's "No available node types" and the final refusal:
    an IP pin no node has, else more GPUs than the cluster."""
    event = _first(ctx, "ray_infeasible_request", "ray_placement_wait", "ray_placement_failed")
    if event is None:
        return []
    lines = [
        e.line.strip()
        for e in ctx.of("ray_infeasible_request", "ray_placement_wait", "ray_placement_failed")
    ]
    pins = [m.group("ip") for line in lines for m in _PIN.finditer(line)]
    evidence = tuple(dict.fromkeys(lines))[:3]
    if pins:
        return [
            Finding(
                "ray-placement-ip-mismatch",
                None,
                "error",
                f"Ray waits for node:{pins[0]}: vLLM's IP is not an IP a Ray node registered",
                evidence
                + (
                    "vLLM pins its first bundle to node:<VLLM_HOST_IP, else the IP it guesses>; "
                    "`ray list nodes` shows the IPs Ray knows",
                ),
                (
                    _env_action(
                        "VLLM_HOST_IP",
                        None,
                        "on every node, the --node-ip-address `ray start` used (not a DNS name)",
                        "restart Ray on each node with it set",
                    ),
                ),
            )
        ]
    gpus = event.fields.get("gpus_required")
    return [
        Finding(
            "ray-placement-failed",
            3,
            "error",
            "Ray cannot place the workers: TP x PP asks for more GPUs than the cluster offers"
            + (f" ({gpus})" if gpus else ""),
            evidence
            + (
                "`ray status` shows the GPUs Ray sees (a GPU registered under another name is not one)",
            ),
            (
                Action(
                    "tensor_parallel_size",
                    "lower",
                    None,
                    "TP x PP must fit the GPUs Ray sees, or add nodes",
                    "less memory per replica",
                    step=3,
                ),
            ),
        )
    ]


def _ray_backend(ctx) -> bool:
    return str(ctx.arg("distributed_executor_backend") or "").strip().lower() == "ray"


def _local_world_size_bug(event, tp: int, per_node: int, new_pp: int) -> Finding:
    """The worker's local_world_size check with Ray: local_world_size comes from --nnodes,
    which only the "mp" backend sets, so under Ray it is the whole TP and the check fires on
    every cross-node TP (vLLM PR #28873; 0.32 skips the check for Ray). A vLLM bug, not the
    layout: Ray runs TP across nodes. TP in a node with PP across is the table's step 3 and
    also starts on such a release, so it stays in the evidence, not as the fix."""
    return Finding(
        "local-world-size-ray-bug",
        None,
        "error",
        "vLLM counted the whole TP against one node's GPUs under Ray (a vLLM bug: upgrade)",
        (
            event.line.strip()[:400],
            f"not a configuration problem: with Ray, TP {tp} over nodes of {per_node} GPUs is "
            "allowed; releases that set local_world_size from --nnodes refuse it (fixed in "
            "vLLM, 0.32 skips the check for Ray)",
            f"on this release, TP {per_node} x PP {new_pp} starts too (TP inside a node, PP "
            "across the nodes)",
        ),
        (),
    )


def tp_spread_from_log(ctx) -> list[Finding]:
    event = _first(ctx, "tp_spread_nodes", "local_world_size_exceeds")
    if event is None:
        return []
    if event.kind == "tp_spread_nodes":
        tp, per_node = event.fields.get("tp"), event.fields.get("gpus_per_node")
    else:
        tp, per_node = event.fields.get("local_world_size"), event.fields.get("visible")
    try:
        tp_i, per_i = int(tp), int(per_node)
    except (TypeError, ValueError):
        tp_i = per_i = 0
    if not (tp_i and per_i and tp_i > per_i):
        return []
    new_pp = -(-tp_i * ctx.knobs.pp // per_i)
    if event.kind == "local_world_size_exceeds" and _ray_backend(ctx):
        return [_local_world_size_bug(event, tp_i, per_i, new_pp)]
    return [
        Finding(
            "tp-across-nodes",
            3,
            "error" if event.kind == "local_world_size_exceeds" else "warning",
            f"Tensor parallel size {tp_i} spans nodes of {per_i} GPUs",
            (
                event.line.strip(),
                f"TP {per_i} x PP {new_pp}: TP inside each node, PP across the nodes",
            ),
            (
                Action(
                    "tensor_parallel_size",
                    "lower",
                    per_i,
                    f"TP inside a node: {per_i} GPUs over the node's fast links",
                    "pipeline bubbles at low concurrency",
                    also=(("pipeline_parallel_size", new_pp),),
                    step=3,
                ),
                Action(
                    "pipeline_parallel_size",
                    "raise",
                    new_pp,
                    "PP across the nodes takes the GPUs TP gives up",
                    "pipeline bubbles at low concurrency",
                    also=(("tensor_parallel_size", per_i),),
                ),
            ),
        )
    ]


def sockets_from_log(ctx) -> list[Finding]:
    """Gloo on loopback, NCCL with no interface left, NCCL spread over bridges and VPNs."""
    findings: list[Finding] = []
    gloo = ctx.of("gloo_loopback", "gloo_error")
    if gloo:
        findings.append(
            Finding(
                "gloo-wrong-interface",
                None,
                "error" if any(e.kind == "gloo_error" for e in gloo) else "warning",
                "Gloo (vLLM's CPU group) bound to loopback or the wrong NIC",
                tuple(dict.fromkeys(e.line.strip() for e in gloo))[:3],
                (
                    _env_action(
                        "GLOO_SOCKET_IFNAME",
                        None,
                        "the NIC the nodes reach each other on, on every node (Ray does not copy GLOO_*)",
                    ),
                    _env_action("NCCL_SOCKET_IFNAME", None, "the same NIC for NCCL"),
                ),
            )
        )
    none_left = _first(ctx, "nccl_no_socket_interface")
    if none_left is not None:
        findings.append(
            Finding(
                "nccl-no-socket-interface",
                None,
                "error",
                "NCCL found no network interface to use",
                (none_left.line.strip(), "an exclusion list like ^lo,docker,veth can leave none"),
                (
                    _env_action(
                        "NCCL_SOCKET_IFNAME", None, "name the interface explicitly (e.g. eth0)"
                    ),
                ),
            )
        )
    for event in ctx.of("nccl_socket_interfaces")[:1]:
        names = re.findall(
            r"\[\d+\](\w[\w.-]*):", str(event.fields.get("interfaces") or event.line)
        )
        odd = [n for n in names if _BRIDGES.match(n)]
        physical = [n for n in names if not _BRIDGES.match(n)]
        if odd and len(names) > 1:
            findings.append(
                Finding(
                    "nccl-bridge-interfaces",
                    None,
                    "warning",
                    f"NCCL spreads sockets over {', '.join(odd)} besides the real NIC",
                    (event.line.strip(),),
                    (
                        _env_action(
                            "NCCL_SOCKET_IFNAME",
                            physical[0] if physical else None,
                            "pin NCCL to the interface the nodes share",
                        ),
                    ),
                )
            )
    return findings


def cluster_events_from_log(ctx) -> list[Finding]:
    findings: list[Finding] = []
    dead = ctx.of("ray_node_dead")
    if dead:
        findings.append(
            Finding(
                "ray-node-dead",
                None,
                "error",
                "A Ray node was marked dead (its raylet crashed or its heartbeats stalled)",
                tuple(dict.fromkeys(e.line.strip() for e in dead))[:3]
                + ("look at that node's raylet.out and dmesg (OOM killer)",),
                (),
            )
        )
    no_gpu = _first(ctx, "ray_node_without_gpu")
    if no_gpu is not None:
        findings.append(
            Finding(
                "ray-node-without-gpu",
                None,
                "error",
                "The Ray cluster's GPUs are held by another placement group (a second vLLM?)",
                (
                    no_gpu.line.strip(),
                    "fix: stop the other server, or give each server its own Ray cluster",
                ),
                (),
            )
        )
    timeout = _first(ctx, "engine_start_timeout")
    if timeout is not None:
        waited = timeout.fields.get("waited_s")
        try:
            longer = int(waited) * 2 if waited is not None else None
        except (TypeError, ValueError):
            longer = None
        findings.append(
            Finding(
                "engine-start-timeout",
                None,
                "error",
                "The engine processes did not report ready in time",
                (
                    timeout.line.strip(),
                    "slow weight loading, or remote engines the head cannot reach",
                ),
                (
                    _env_action(
                        "VLLM_ENGINE_READY_TIMEOUT_S",
                        longer,
                        "give slow weight loading more time",
                        "a real hang is noticed later",
                    ),
                ),
            )
        )
    handshake = _first(ctx, "headless_handshake_timeout")
    if handshake is not None:
        findings.append(
            Finding(
                "headless-handshake-timeout",
                None,
                "error",
                "A headless node never heard from the head",
                (
                    handshake.line.strip(),
                    "check --data-parallel-address/--master-addr and the port from this node; "
                    "start the head first",
                ),
                (),
            )
        )
    return findings


RULES = (placement_from_log, tp_spread_from_log, sockets_from_log, cluster_events_from_log)
