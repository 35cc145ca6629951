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

from headroom.doctor.findings import Action, Finding
from headroom.probes.ray_cluster import RayCluster
from headroom.probes.ray_status import pinned_nodes

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


def _wait_cause(cluster: RayCluster, bundles, strategy, seen: str) -> Finding | None:
    wanted = sum(b.get("GPU", 0.0) for b in bundles)
    status = cluster.status
    total = status.gpus_total if status is not None else None
    used = status.gpus_used if status is not None else None
    per_node = cluster.gpus_per_node
    if total is None and per_node:
        total = sum(per_node)
    pins = pinned_nodes(bundles)
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


RULES = (ray_cluster_rule,)
