"""Checks before each start, each failure a clear sentence instead of a vLLM crash two
minutes later: the port is free, and the GPUs are not held by other processes so far that
their free memory stops covering total x gpu_memory_utilization (a holder that leaves enough
free is a note, as vLLM itself would start; with the KV cache sized in bytes, any holder is
a failure, since there is no share to check against). Also the wait for GPU memory to be released
after a stop, so the next start does not trip over the previous one's allocations.

GPU data comes from headroom.probes.nvml (NvmlProbe); when NVML is not there (CPU host,
probe module missing) the GPU checks are skipped with a note, never failed.
"""

from __future__ import annotations

import asyncio
import errno
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from headroom.probes.nvml import GpuSnapshot, NvmlProbe
from headroom.supervisor.statefile import ServerRecord
from headroom.vllm_cmd import VllmCommand

GIB = 1024**3


@dataclass(frozen=True)
class PreflightResult:
    """failures: reasons not to start. notes: things checked loosely or skipped."""

    failures: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failures


def check_port(host: str, port: int) -> str | None:
    """None when the port can be bound, else why not."""
    bind_host = "0.0.0.0" if host in ("", "0.0.0.0") else host  # noqa: S104 - vLLM's own bind
    try:
        family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            # vLLM sets SO_REUSEADDR too, so a port in TIME_WAIT is no reason to refuse.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((bind_host, port))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return (
                f"port {port} is already in use on {bind_host} (another server? "
                f"`ss -ltnp 'sport = :{port}'` shows who); pick another with --port"
            )
        if exc.errno == errno.EACCES:
            return f"port {port} needs privileges to bind; use a port above 1023"
        return f"port {port} on {bind_host} cannot be bound: {exc.strerror}"
    return None


def visible_gpu_indices(env: Mapping[str, str], snapshot) -> list[int] | None:
    """The GPU indices CUDA_VISIBLE_DEVICES selects (indices or UUIDs); None = all."""
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    wanted = [part.strip() for part in value.split(",") if part.strip()]
    out: list[int] = []
    for item in wanted:
        if item.isdigit():
            out.append(int(item))
            continue
        for gpu in getattr(snapshot, "gpus", ()) or ():
            if gpu.uuid and (gpu.uuid == item or gpu.uuid.startswith(item)):
                out.append(gpu.index)
    return out


def check_gpus(
    snapshot,
    *,
    env: Mapping[str, str],
    utilization: float | None,
    own_pids: Iterable[int] = (),
    kv_cache_memory_bytes: int | None = None,
    world_size: int = 1,
) -> PreflightResult:
    """GPU checks against one NVML snapshot (a headroom.probes.nvml.GpuSnapshot)."""
    if snapshot is None or not getattr(snapshot, "available", False):
        reason = getattr(snapshot, "reason", None) or "NVML not available"
        return PreflightResult((), (f"GPU checks skipped: {reason}",))
    indices = visible_gpu_indices(env, snapshot)
    gpus = [g for g in snapshot.gpus if indices is None or g.index in indices]
    if indices is not None and world_size > len(indices) > 0:
        return PreflightResult(
            (
                f"the plan needs {world_size} GPUs but CUDA_VISIBLE_DEVICES="
                f"{env.get('CUDA_VISIBLE_DEVICES')} shows {len(indices)}",
            )
        )
    gpus = gpus[: max(world_size, 1)] if world_size else gpus
    own = set(own_pids)
    failures: list[str] = []
    notes: list[str] = []
    for gpu in gpus:
        if gpu.lost:
            failures.append(f"GPU {gpu.index} is lost (fell off the bus); it cannot be used")
            continue
        others = [p for p in gpu.processes if p.pid not in own]
        held = ", ".join(
            f"pid {p.pid} {p.name or '?'} ({_gib(p.used_memory_bytes)})" for p in others
        )
        util = 0.9 if utilization is None else utilization
        if kv_cache_memory_bytes is not None or gpu.memory_total is None or gpu.memory_free is None:
            # Without a share to check against, another process on the GPU is the risk itself.
            if others:
                failures.append(f"GPU {gpu.index} is held by another process: {held}")
            why = (
                "KV cache sized in bytes"
                if kv_cache_memory_bytes is not None
                else "memory unreadable"
            )
            notes.append(f"GPU {gpu.index}: {why}, utilization check skipped")
            continue
        needed = gpu.memory_total * util
        if gpu.memory_free < needed:
            holder = f" (held by another process: {held})" if others else ""
            failures.append(
                f"GPU {gpu.index} has {_gib(gpu.memory_free)} free{holder} but "
                f"gpu_memory_utilization {util:g} asks for {_gib(needed)} of "
                f"{_gib(gpu.memory_total)}: free the GPU or lower --gpu-memory-utilization "
                f"to at most {max(gpu.memory_free / gpu.memory_total - 0.01, 0):.2f}"
            )
        elif others:
            notes.append(
                f"GPU {gpu.index} is shared with another process ({held}); enough is free "
                f"for utilization {util:g}, but if it grows vLLM can run out of memory"
            )
    return PreflightResult(tuple(failures), tuple(notes))


async def wait_memory_released(
    probe,
    pids: Sequence[int],
    gpu_indices: Sequence[int] | None,
    *,
    timeout_s: float = 60.0,
    interval_s: float = 0.5,
) -> tuple[bool, str]:
    """Wait until no GPU lists any of the server's pids. Returns (released, message)."""
    if probe is None:
        return True, "GPU memory release not checked (NVML not available)"
    started = time.monotonic()
    wanted = set(pids)
    while True:
        snapshot = await asyncio.to_thread(probe.read)
        if not getattr(snapshot, "available", False):
            return True, "GPU memory release not checked (NVML not available)"
        holders = [
            (gpu.index, p)
            for gpu in snapshot.gpus
            if gpu_indices is None or gpu.index in gpu_indices
            for p in gpu.processes
            if p.pid in wanted
        ]
        elapsed = time.monotonic() - started
        if not holders:
            return True, f"GPU memory released after {elapsed:.1f} s"
        if elapsed >= timeout_s:
            held = ", ".join(
                f"GPU {i}: pid {p.pid} ({_gib(p.used_memory_bytes)})" for i, p in holders
            )
            return False, (
                f"GPU memory still held {timeout_s:.0f} s after the server stopped ({held}); "
                "a process may be stuck in the driver: check nvidia-smi before starting again"
            )
        await asyncio.sleep(interval_s)


def make_nvml_probe() -> NvmlProbe | None:
    """headroom.probes.nvml.NvmlProbe(), or None when NVML cannot be set up."""
    try:
        return NvmlProbe()
    except Exception:  # a probe must never stop a launch
        return None


def _gib(value: float | None) -> str:
    return "? GiB" if value is None else f"{value / GIB:.1f} GiB"


class GpuReader(Protocol):
    async def read(self) -> GpuSnapshot | None: ...

    def forget(self) -> None: ...


async def run_preflight(
    command: VllmCommand,
    port: int,
    env: Mapping[str, str],
    gpus: GpuReader,
    read_state: Callable[[int], ServerRecord | None],
) -> PreflightResult:
    """Every check before a start: the port, then the GPUs (when NVML is there).
    read_state(port): the state file of a server Headroom started there, if any."""
    failures: list[str] = []
    notes: list[str] = []
    port_problem = check_port(str(command.get("host") or "0.0.0.0"), port)  # noqa: S104
    if port_problem:
        live = read_state(port)
        if live is not None and live.alive():
            port_problem += (
                f"; Headroom started pid {live.pid} there ({live.model}): "
                "`headroom serve` re-adopts it, or stop it first"
            )
        failures.append(port_problem)
    snapshot = await gpus.read()
    if snapshot is not None:
        kv_bytes = command.get("kv_cache_memory_bytes")
        result = check_gpus(
            snapshot,
            env=env,
            utilization=_number(command.get("gpu_memory_utilization")),
            kv_cache_memory_bytes=kv_bytes if isinstance(kv_bytes, int) else None,
            # With Ray the workers spread over the cluster's nodes: this node's visible GPUs
            # are all checked, and the count is ray_preflight's (ray_watch) to judge.
            world_size=0 if _ray_backend(command) else world_size(command),
        )
        failures += result.failures
        notes += result.notes
        if not getattr(snapshot, "available", False):
            gpus.forget()  # look again before the next start (a driver may appear)
    return PreflightResult(tuple(failures), tuple(notes))


def _ray_backend(command: VllmCommand) -> bool:
    return str(command.get("distributed_executor_backend") or "").lower() == "ray"


def world_size(command: VllmCommand) -> int:
    size = 1
    for name in ("tensor_parallel_size", "pipeline_parallel_size"):
        value = command.get(name)
        try:
            size *= int(value) if isinstance(value, int | float | str) and value else 1
        except (TypeError, ValueError):
            pass
    return size


def _number(value: object) -> float | None:
    try:
        return float(value) if isinstance(value, int | float | str) else None
    except (TypeError, ValueError):
        return None
