"""Server-side readings during a bench step: /metrics (KV, queue, preemptions) and NVML.

The metrics come from the metrics probe (`headroom.probes.metrics.MetricsProbe`) when it is
available; otherwise from a minimal read of the four vLLM gauges/counters the bench needs,
so a bench still works against a build without it. /metrics is read without the API key:
vLLM does not protect it, and the key should travel as little as possible.
GPU readings come from NVML only for a server on this host: NVML reads *this* machine's
GPUs, which say nothing about a remote server.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable

import httpx

from headroom.supervisor.bench_stats import ServerSample

ServerSampler = Callable[[], Awaitable[ServerSample]]

# Metric names as vLLM exposes them (reference/vllm-facts.md §1.2).
_KV = "vllm:kv_cache_usage_perc"
_WAITING = "vllm:num_requests_waiting"
_RUNNING = "vllm:num_requests_running"
_PREEMPT = "vllm:num_preemptions_total"


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
    try:
        module = importlib.import_module("headroom.probes.metrics")
        probe_cls = module.MetricsProbe
    except (ImportError, AttributeError):
        probe_cls = None
    if probe_cls is not None:
        probe = probe_cls(base_url, window_s=30.0, timeout_s=3.0, client=client)

        async def via_probe():
            snap = await probe.scrape()
            if getattr(snap, "state", None) != "up":
                return None, None, None, None
            t = snap.total
            return t.kv_cache_usage, t.requests_waiting, t.requests_running, t.preemptions_total

        return via_probe

    async def direct():
        return await read_vllm_gauges(client, base_url + "/metrics")

    return direct


async def read_vllm_gauges(client: httpx.AsyncClient, url: str):
    """(kv usage max over engines, waiting sum, running sum, preemptions sum); Nones when
    the page cannot be read or lacks the metric."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        response = await client.get(url, timeout=3.0)
        if response.status_code != 200:
            return None, None, None, None
        families = list(text_string_to_metric_families(response.text))
    except (httpx.HTTPError, ValueError):
        return None, None, None, None
    values: dict[str, list[float]] = {}
    for family in families:
        for sample in family.samples:
            if sample.name in (_KV, _WAITING, _RUNNING, _PREEMPT):
                values.setdefault(sample.name, []).append(float(sample.value))

    def total(name: str) -> float | None:
        return sum(values[name]) if name in values else None

    kv = max(values[_KV]) if _KV in values else None
    return kv, total(_WAITING), total(_RUNNING), total(_PREEMPT)


def _gpu_reader():
    try:
        module = importlib.import_module("headroom.probes.nvml")
        probe = module.NvmlProbe()
    except Exception:  # no probe module or no NVML: GPU figures stay None
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
