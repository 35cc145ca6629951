"""Multi-node bring-up through Ray: why a placement group waits, nodes that died, TP spread
over nodes (fleet-facts.md §3.1 and §4).

vLLM asks Ray for `[{GPU: 1}] * world_size` with PACK, pinning bundle 0 to the driver's IP
(`node:<VLLM_HOST_IP or get_ip()>: 0.001`), and waits up to 1800 s. A wait has three known
causes, told apart by the cluster as `ray status` and the state API show it: a pin no node
carries (IP mismatch), fewer GPUs in the cluster than the group asks for, or GPUs that
exist but are held by another placement group (a second vLLM on the same cluster).
"""

from __future__ import annotations

import ipaddress
import re

from headroom.doctor.findings import Action, Finding
from headroom.probes.ray_cluster import RayCluster
from headroom.probes.ray_status import PendingDemand

__all__ = ["RULES", "ray_cluster_findings"]


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _fmt(gpus: float) -> str:
    return f"{gpus:g}"


def _pending(cluster: RayCluster) -> list[tuple[tuple[dict[str, float], ...], str | None, str]]:
    """(bundles, strategy, how it was seen) of every waiting placement group."""
    found: list[tuple[tuple[dict[str, float], ...], str | None, str]] = []
    text_demands = cluster.status.pending_placement_groups if cluster.status is not None else ()
    for group in cluster.placement_groups or ():
        if group.state in ("PENDING", "RESCHEDULING") and group.bundles:
            label = f"placement group {group.name or group.pg_id[:12]} ({group.state}"
            label += f", {group.scheduling_state})" if group.scheduling_state else ")"
            # the state API leaves the strategy out; `ray status` prints it beside the bundles
            strategy = group.strategy or next(
                (d.strategy for d in text_demands if d.gpus == group.gpus), None
            )
            found.append((tuple(dict(b) for b in group.bundles), strategy, label))
    if not found and cluster.status is not None:
        for demand in cluster.status.pending_placement_groups:
            found.append((tuple(dict(b) for b in demand.bundles), demand.strategy, demand.text))
    return found


def _pins(bundles: tuple[dict[str, float], ...]) -> tuple[str, ...]:
    return PendingDemand(bundles=bundles, strategy=None, placement_group=True, text="").pinned_nodes


def _wait_cause(cluster: RayCluster, bundles, strategy, seen: str) -> Finding | None:
    wanted = sum(b.get("GPU", 0.0) for b in bundles)
    status = cluster.status
    total = status.gpus_total if status is not None else None
    used = status.gpus_used if status is not None else None
    per_node = cluster.gpus_per_node
    if total is None and per_node:
        total = sum(per_node)
    pins = _pins(bundles)
    ips = cluster.node_ips
    evidence = [f"waiting: {seen}"]
    named = [p for p in pins if not _is_ip(p)]
    if pins and ((ips and not set(pins) & set(ips)) or named):
        head = next((n.ip for n in cluster.alive_nodes if n.is_head and n.ip), None)
        if ips and not set(pins) & set(ips):
            evidence.append(
                f"bundle 0 is pinned to node:{pins[0]}, but the Ray nodes registered "
                f"{', '.join(ips)}: vLLM's IP is not the IP Ray registered"
            )
        else:  # Ray registers nodes by IP address, so a name never matches (vllm #12670)
            evidence.append(
                f"bundle 0 is pinned to node:{named[0]}, a host name: Ray names its nodes by "
                "IP address, so no node can ever match it"
            )
        return Finding(
            "ray-placement-ip-mismatch",
            None,
            "error",
            f"The placement group waits for node:{pins[0]}, which no Ray node has",
            tuple(evidence),
            (
                Action(
                    "VLLM_HOST_IP",
                    "set",
                    head,
                    "on every node, VLLM_HOST_IP = the --node-ip-address that `ray start` used",
                    "restart ray on each node with it set",
                ),
            ),
        )
    if total is not None and wanted > total:
        evidence.append(f"it needs {_fmt(wanted)} GPUs; the cluster has {_fmt(total)} in all")
        return Finding(
            "ray-too-few-gpus",
            3,
            "error",
            f"The placement group needs {_fmt(wanted)} GPUs and the Ray cluster has {_fmt(total)}",
            tuple(evidence),
            (
                Action(
                    "tensor_parallel_size",
                    "lower",
                    None,
                    f"TP x PP must fit the {_fmt(total)} GPUs Ray sees (or add nodes / fix a "
                    "GPU that registered under another resource name)",
                    "less memory per replica",
                    step=3,
                ),
            ),
        )
    if strategy in ("STRICT_PACK",) and per_node and wanted > max(per_node):
        evidence.append(
            f"{strategy} puts all {_fmt(wanted)} GPUs on one node; the largest node has "
            f"{_fmt(max(per_node))}"
        )
        return Finding(
            "ray-bundle-exceeds-node",
            3,
            "error",
            f"The placement group asks one node for {_fmt(wanted)} GPUs; no node has that many",
            tuple(evidence),
            (
                Action(
                    "tensor_parallel_size",
                    "set",
                    int(max(per_node)),
                    "TP inside a node, PP across nodes",
                    "pipeline bubbles",
                    step=3,
                ),
            ),
        )
    if total is not None and used is not None and wanted > total - used:
        evidence.append(
            f"{_fmt(used)} of {_fmt(total)} GPUs are in use: another placement group or "
            "server holds them"
        )
        evidence.append(
            "fix: stop the other vLLM on this Ray cluster, or give each server its own Ray cluster"
        )
        return Finding(
            "ray-gpus-held",
            None,
            "error",
            "The placement group waits for GPUs another Ray job holds",
            tuple(evidence),
            (),
        )
    return None


def ray_cluster_findings(cluster: RayCluster | None, *, tp: int | None = None) -> list[Finding]:
    """Findings from the cluster alone. Pure: the probe has read it already."""
    if cluster is None or not cluster.readable:
        return []
    findings: list[Finding] = []
    for bundles, strategy, seen in _pending(cluster):
        finding = _wait_cause(cluster, bundles, strategy, seen)
        if finding is not None:
            findings.append(finding)
            break  # one placement group at a time; vLLM makes one
    dead = cluster.dead_nodes
    failures = cluster.status.failures if cluster.status is not None else ()
    if dead or failures:
        evidence = [
            f"node {n.node_id[:12]} ({n.ip or '?'}) is DEAD: {n.state_message or 'no reason given'}"
            for n in dead
        ]
        evidence += [f"recent failure: {f.text}" for f in failures]
        findings.append(
            Finding(
                "ray-node-dead",
                None,
                "error",
                f"{len(dead) or len(failures)} Ray node(s) died",
                tuple(evidence[:8]),
                (),
            )
        )
    per_node = cluster.gpus_per_node
    if tp and per_node and max(per_node) and tp > max(per_node):
        biggest = int(max(per_node))
        findings.append(
            Finding(
                "ray-tp-spans-nodes",
                3,
                "warning",
                f"TP {tp} is larger than the {biggest} GPUs of any Ray node",
                (f"GPUs per node: {', '.join(_fmt(g) for g in per_node)}",),
                (
                    Action(
                        "tensor_parallel_size",
                        "lower",
                        biggest,
                        "TP inside a node, PP across nodes",
                        "pipeline bubbles at low concurrency",
                        also=(("pipeline_parallel_size", -(-tp // biggest)),),
                        step=3,
                    ),
                ),
            )
        )
    return findings


def ray_cluster_rule(ctx) -> list[Finding]:
    cluster = getattr(ctx.inputs, "ray_cluster", None)
    return ray_cluster_findings(cluster, tp=ctx.knobs.tp if ctx.inputs.command else None)


def ray_preflight(
    cluster: RayCluster | None, *, tp: int, pp: int, host_ip: str | None
) -> tuple[list[str], list[str]]:
    """(failures, notes) before a start with --distributed-executor-backend ray: enough GPUs
    per node for TP and in all for TP x PP, the driver's VLLM_HOST_IP among the Ray node IPs,
    and no other placement group holding the GPUs this one needs."""
    failures: list[str] = []
    notes: list[str] = []
    if cluster is None or not cluster.readable:
        why = "; ".join(cluster.problems) if cluster is not None else "no Ray address given"
        return [], [f"Ray cluster not read ({why}): the multi-node checks were skipped"]
    per_node = cluster.gpus_per_node
    status = cluster.status
    total = status.gpus_total if status is not None else (sum(per_node) if per_node else None)
    if per_node and tp > max(per_node):
        failures.append(
            f"TP {tp} needs {tp} GPUs in one node; the largest Ray node has {_fmt(max(per_node))}: "
            f"use TP {int(max(per_node))} x PP {-(-tp * pp // int(max(per_node)))}"
        )
    if total is not None and tp * pp > total:
        failures.append(
            f"TP {tp} x PP {pp} needs {tp * pp} GPUs; the Ray cluster has {_fmt(total)}"
        )
    ips = cluster.node_ips
    if host_ip and ips and host_ip not in ips:
        failures.append(
            f"VLLM_HOST_IP={host_ip} is not a Ray node IP ({', '.join(ips)}): vLLM pins its first "
            "bundle to node:<VLLM_HOST_IP> and would wait forever"
        )
    elif not host_ip and len(set(ips)) > 1:
        notes.append(
            "VLLM_HOST_IP is not set: vLLM guesses this node's IP; set it to the IP `ray start` used"
        )
    used = status.gpus_used if status is not None else None
    if total is not None and used and tp * pp <= total and tp * pp > total - used:
        failures.append(
            f"{_fmt(used)} of {_fmt(total)} Ray GPUs are held (another placement group or "
            f"server): {tp * pp} are needed"
        )
    for demand in status.pending_placement_groups if status is not None else ():
        notes.append(f"a placement group is already waiting: {demand.text}")
    return failures, notes


# --- the log's side of a multi-node start (catalog entries in probes/vllm_catalog) ---------

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


RULES = (
    ray_cluster_rule,
    placement_from_log,
    tp_spread_from_log,
    sockets_from_log,
    cluster_events_from_log,
)
