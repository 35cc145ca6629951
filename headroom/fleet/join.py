"""Which GPUs belong to which server: by host name, else by the scrape target's host.

vLLM's /metrics carries no host label (fleet-facts.md 3.4); dcgm-exporter's carries
`Hostname` or `hostname` (1). So a server's host is a host label its target was given
(`hostname`, `Hostname`, `host`, `node`, `nodename`), else the host part of its address; a
GPU's hosts are its exporter's host label and the host part of the exporter's address.
When both sides carry a `pod` label and some GPUs of the host name that pod, the server
gets only those GPUs (GPU Operator pod mapping).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from headroom.probes.dcgm import DcgmGpu, instance_host

HOST_LABELS = ("hostname", "Hostname", "host", "node", "nodename", "kubernetes_node")


def server_host(labels: Mapping[str, str], instance: str | None) -> tuple[str | None, bool]:
    """(host, explicit): a host label when there is one, else the address's host."""
    for name in HOST_LABELS:
        if labels.get(name):
            return labels[name], True
    return instance_host(instance), False


def gpu_hosts(gpu: DcgmGpu) -> set[str]:
    hosts = {h for h in (gpu.host, instance_host(gpu.instance)) if h}
    return hosts


def join_gpus(
    servers: Sequence[tuple[str, str | None, str | None]], gpus: Iterable[DcgmGpu]
) -> tuple[dict[str, tuple[DcgmGpu, ...]], tuple[DcgmGpu, ...]]:
    """`servers`: (instance, host, pod). Returns GPUs per instance, and the GPUs no server
    claimed (a host with GPUs but no vLLM, or names that do not line up)."""
    gpu_list = list(gpus)
    by_host: dict[str, list[int]] = {}  # each GPU's hosts worked out once, not per server
    for i, gpu in enumerate(gpu_list):
        for gpu_host in gpu_hosts(gpu):
            by_host.setdefault(gpu_host, []).append(i)
    claimed: set[int] = set()
    out: dict[str, tuple[DcgmGpu, ...]] = {}
    for instance, host, pod in servers:
        on_host = by_host.get(host, []) if host else []
        if pod:
            mine = [i for i in on_host if gpu_list[i].pod == pod]
            on_host = mine or on_host
        claimed.update(on_host)
        out[instance] = tuple(gpu_list[i] for i in on_host)
    unmatched = tuple(g for i, g in enumerate(gpu_list) if i not in claimed)
    return out, unmatched
