"""The whole multi-node bring-up for a TP x PP layout, for both of vLLM's backends.

Which environment variable goes on which line follows vLLM 0.32's source:
- Ray copies the driver's `VLLM_*`, `NCCL_*`, `HF_*`, `FLASH_ATTENTION_`, `LMCACHE_`, `UCX_`,
  `HUGGING_FACE_*` and `PYTHONHASHSEED` to its workers (`vllm/ray/ray_env.py`
  DEFAULT_ENV_VAR_PREFIXES), so `NCCL_SOCKET_IFNAME` on the `vllm serve` line reaches every
  node;
- `VLLM_HOST_IP` is worker-specific and never copied (`vllm/v1/executor/ray_utils.py`
  WORKER_SPECIFIC_ENV_VARS): each node sets its own before `ray start`, equal to the
  `--node-ip-address` Ray registers, or the placement group waits for a `node:<ip>` no node has;
- `GLOO_*` matches no copied prefix: set `GLOO_SOCKET_IFNAME` on every node before `ray start`
  and name the prefix in `VLLM_RAY_EXTRA_ENV_VAR_PREFIXES_TO_COPY` (docs:
  distributed_troubleshooting.md; vllm #6803).
The `mp` backend (`--nnodes`, `--node-rank`, `--master-addr`, `--headless`) runs one
`vllm serve` per node, so each node's own environment is what counts (fleet-facts.md §3.2).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["BringUp", "NodeLine", "plan_bringup", "render_bringup"]

RAY_PORT = 6379
MASTER_PORT = 29501  # vLLM's default --master-port
CONTAINER_SHM = "10.24g"  # examples/ray_serving/run_cluster.sh


@dataclass(frozen=True)
class NodeLine:
    """One command to run on one node, with the environment it needs."""

    node: str  # "head" or "node N"
    env: Mapping[str, str]
    argv: tuple[str, ...]
    why: str

    def shell(self) -> str:
        """The line as a person types it (never run through a shell by Headroom)."""
        assignments = [f"{k}={shlex.quote(v)}" for k, v in self.env.items()]
        return " ".join([*assignments, shlex.join(self.argv)])


@dataclass(frozen=True)
class BringUp:
    backend: str  # "ray" | "mp"
    lines: tuple[NodeLine, ...]  # in the order to run them
    checks: tuple[str, ...]
    notes: tuple[str, ...]


def _ip(node: int, ips: Sequence[str] | None) -> str:
    if ips and node < len(ips):
        return ips[node]
    return "<HEAD_IP>" if node == 0 else f"<NODE{node}_IP>"


def _serve_argv(model: str, tp: int, pp: int, extra: Sequence[str]) -> list[str]:
    argv = ["vllm", "serve", model, "--tensor-parallel-size", str(tp)]
    if pp > 1:
        argv += ["--pipeline-parallel-size", str(pp)]
    return argv + list(extra)


def plan_bringup(
    model: str,
    *,
    tp: int,
    pp: int,
    nodes: int,
    gpus_per_node: int,
    extra_flags: Sequence[str] = (),
    node_ips: Sequence[str] | None = None,
    interface: str | None = None,
) -> tuple[BringUp, BringUp]:
    """The Ray bring-up and the mp bring-up for `nodes` nodes of `gpus_per_node` GPUs.
    `interface` is the NIC that carries the nodes' traffic (None: a placeholder)."""
    iface = interface or "<IFACE>"
    head = _ip(0, node_ips)
    sockets = {"NCCL_SOCKET_IFNAME": iface, "GLOO_SOCKET_IFNAME": iface}
    ray_lines = [
        NodeLine(
            "head",
            {"VLLM_HOST_IP": head, "GLOO_SOCKET_IFNAME": iface},
            (
                "ray",
                "start",
                "--head",
                f"--node-ip-address={head}",
                f"--port={RAY_PORT}",
                f"--num-gpus={gpus_per_node}",
            ),
            "VLLM_HOST_IP and GLOO_* are not copied to Ray workers: each node sets its own",
        )
    ]
    for n in range(1, nodes):
        ip = _ip(n, node_ips)
        ray_lines.append(
            NodeLine(
                f"node {n}",
                {"VLLM_HOST_IP": ip, "GLOO_SOCKET_IFNAME": iface},
                (
                    "ray",
                    "start",
                    f"--address={head}:{RAY_PORT}",
                    f"--node-ip-address={ip}",
                    f"--num-gpus={gpus_per_node}",
                ),
                "VLLM_HOST_IP must equal the --node-ip-address Ray registers for this node",
            )
        )
    ray_lines.append(
        NodeLine(
            "head",
            {
                "VLLM_HOST_IP": head,
                "NCCL_SOCKET_IFNAME": iface,
                "VLLM_RAY_EXTRA_ENV_VAR_PREFIXES_TO_COPY": "GLOO_",
            },
            tuple(
                _serve_argv(model, tp, pp, [*extra_flags, "--distributed-executor-backend", "ray"])
            ),
            "one vllm serve on the head sees every Ray GPU; NCCL_* is copied to the workers",
        )
    )
    ray = BringUp(
        backend="ray",
        lines=tuple(ray_lines),
        checks=(
            f"ray status: {nodes} active nodes and {nodes * gpus_per_node}.0 GPU in Total Usage",
            "ray list nodes: each node_ip equals that node's VLLM_HOST_IP",
            "after vllm serve: no 'Waiting for creating a placement group' line past 10 s",
        ),
        notes=(
            f"in containers: docker run --network host --shm-size {CONTAINER_SHM} --gpus all "
            "-e VLLM_HOST_IP=<this node's IP> (examples/ray_serving/run_cluster.sh)",
            "on InfiniBand add NCCL_IB_HCA=mlx5 and GLOO_SOCKET_IFNAME=<the Ethernet NIC>",
        ),
    )
    mp_lines = []
    for n in range(nodes):
        argv = _serve_argv(
            model,
            tp,
            pp,
            [*extra_flags, "--nnodes", str(nodes), "--node-rank", str(n), "--master-addr", head],
        )
        if n > 0:
            argv.append("--headless")
        mp_lines.append(
            NodeLine(
                "head" if n == 0 else f"node {n}",
                dict(sockets),
                tuple(argv),
                "serves the API" if n == 0 else "runs its workers only (no HTTP server)",
            )
        )
    mp = BringUp(
        backend="mp",
        lines=tuple(mp_lines),
        checks=(
            f"every node reaches {head}:{MASTER_PORT} (--master-port) before the head times out",
            "node ranks > 0 log 'Launching vLLM ... headless multiproc executor'",
        ),
        notes=(
            "start the head first; the same command line on every node but --node-rank and --headless",
        ),
    )
    return ray, mp


def render_bringup(bringups: Sequence[BringUp]) -> list[str]:
    """Text lines for `headroom plan`."""
    out: list[str] = []
    for bringup in bringups:
        title = (
            "Ray (--distributed-executor-backend ray)"
            if bringup.backend == "ray"
            else "multiprocessing (--nnodes)"
        )
        out.append(f"bring-up with {title}:")
        for line in bringup.lines:
            out.append(f"  [{line.node}] {line.shell()}")
        for check in bringup.checks:
            out.append(f"  check: {check}")
        for note in bringup.notes:
            out.append(f"  note: {note}")
    return out
