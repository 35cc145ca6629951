"""Server-side readings during a bench step: /metrics (KV, queue, preemptions) and NVML.

The metrics come from the metrics probe (`headroom.probes.metrics.MetricsProbe`). /metrics
is read without the API key: vLLM does not protect it, and the key should travel as little
as possible. GPU readings come from NVML only for a server on this host: NVML reads *this*
machine's GPUs, which say nothing about a remote server.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx

from headroom.bench.stats import ServerSample
from headroom.probes.metrics import MetricsProbe
from headroom.probes.nvml import NvmlProbe

ServerSampler = Callable[[], Awaitable[ServerSample]]


def default_sampler(base_url: str, client: httpx.AsyncClient, read_gpus: bool) -> ServerSampler:
    metrics = _metrics_reader(base_url, client)
    gpus = _gpu_reader() if read_gpus else None

    async def sample() -> ServerSample:
        kv, waiting, running, preempt = await metrics()
        mem = util = None
        if gpus is not None:
            mem, util = await gpus()
        return ServerSample(kv, waiting, running, preempt, mem, util)

    return sample


def _metrics_reader(base_url: str, client: httpx.AsyncClient):
    probe = MetricsProbe(base_url, window_s=30.0, timeout_s=3.0, client=client)

    async def read():
        snap = await probe.scrape()
        if snap.state != "up":
            return None, None, None, None
        t = snap.total
        return t.kv_cache_usage, t.requests_waiting, t.requests_running, t.preemptions_total

    return read


def _gpu_reader():
    try:
        probe = NvmlProbe()
    except Exception:  # no NVML on this host: GPU figures stay None
        return None

    async def read():
        try:
            snap = await probe.sample()
        except Exception:
            return None, None
        if not getattr(snap, "available", False):
            return None, None
        gpus = list(snap.gpus)
        # Prefer the GPUs vLLM runs on; other GPUs on the host would dilute the figures.
        serving = [g for g in gpus if any(p.is_vllm for p in g.processes)]
        gpus = serving or gpus
        used = [g.memory_used for g in gpus if g.memory_used is not None]
        utils = [g.util_gpu for g in gpus if g.util_gpu is not None]
        return (sum(used) if used else None), (sum(utils) / len(utils) if utils else None)

    return read
