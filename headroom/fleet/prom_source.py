"""The fleet read through a Prometheus server: targets first, then seven queries at once.

Per refresh: `/api/v1/targets`, six instant queries (vLLM gauges, vLLM rates, latency
quantiles, GPU identity, DCGM values, DCGM throttling) and one `query_range` (the recent
trend the runtime rules read). The count does not grow with the fleet. A query that fails leaves its part
empty and adds a warning; the rest still shows. `/v1/models` and `/version` are read from
each server directly, once, when its address is reachable (best effort).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from urllib.parse import urlsplit, urlunsplit

import httpx

from headroom.fleet import prom_queries as Q
from headroom.fleet.assemble import ServerParts, assemble
from headroom.fleet.model import FleetSnapshot, TargetHealth
from headroom.fleet.prom_rows import ServerSamples, build_server_metrics
from headroom.probes.dcgm import gpus_from_samples, with_throttle
from headroom.probes.metrics_types import EngineMetrics, ServerMetrics
from headroom.probes.prom_api import PromAnswer, PrometheusClient, Target
from headroom.probes.server_info import ServerInfo, read_server_info

HISTORY_POINTS = 12


class PrometheusSource:
    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 10.0,
        read_info: bool = True,
        client=None,
        bearer_token: str | None = None,
    ) -> None:
        self.prom = PrometheusClient(
            url, timeout_s=timeout_s, client=client, bearer_token=bearer_token
        )
        self.description = f"prometheus {self.prom.url}"
        self.read_info = read_info
        self._info: dict[str, ServerInfo] = {}
        self._interval_s: float | None = None
        # One client for every server's /v1/models (a client each costs an SSL context).
        self._info_clients: dict[bool, httpx.AsyncClient] = {}

    async def aclose(self) -> None:
        await self.prom.aclose()
        for client in self._info_clients.values():
            await client.aclose()
        self._info_clients.clear()

    def _info_client(self, url: str) -> httpx.AsyncClient:
        local = (urlsplit(url).hostname or "") in ("127.0.0.1", "localhost", "::1")
        if local not in self._info_clients:
            self._info_clients[local] = httpx.AsyncClient(timeout=2.0, trust_env=not local)
        return self._info_clients[local]

    async def refresh(self) -> FleetSnapshot:
        before = self.prom.requests_made
        warnings: list[str] = []
        targets = await self.prom.targets()
        if not targets.ok:
            warnings.append(f"targets: {targets.error}")
        warnings.extend(targets.warnings)
        intervals = [t.scrape_interval_s for t in targets.targets if t.scrape_interval_s]
        self._interval_s = min(intervals) if intervals else self._interval_s
        w = Q.window(self._interval_s)
        step = self._interval_s or 15.0
        now = time.time()
        answers = await asyncio.gather(
            self.prom.query(Q.vllm_gauges(), now),
            self.prom.query(Q.vllm_rates(w), now),
            self.prom.query(Q.latency_quantiles(w), now),
            self.prom.query(Q.dcgm_identity(), now),
            self.prom.query(Q.dcgm_gauges(), now),
            self.prom.query(Q.dcgm_throttle(w), now),
            self.prom.query_range(Q.history(), now - step * HISTORY_POINTS, now, step),
        )
        names = (
            "vLLM gauges",
            "vLLM rates",
            "latency quantiles",
            "GPU identity",
            "DCGM",
            "throttling",
            "trend",
        )
        for name, answer in zip(names, answers, strict=True):
            if not answer.ok:
                warnings.append(f"{name} query: {answer.describe()}")
            warnings.extend(f"{name} query: {w}" for w in answer.warnings)
        gauges, rates, quantiles, identity, dcgm, throttle, trend = answers
        samples = _server_samples(gauges, rates, quantiles)
        by_instance = {t.instance: t for t in targets.targets}
        vllm_jobs = {labels.get("job") for s in samples.values() for labels in [s.labels]}
        identity_vector = identity.vector()
        dcgm_jobs = {labels.get("job") for labels, _ in identity_vector}
        vllm_instances = set(samples)
        dcgm_instances = {labels.get("instance") for labels, _ in identity_vector}
        health = tuple(
            TargetHealth(
                t.job,
                t.instance,
                _kind(t, vllm_instances, dcgm_instances, vllm_jobs, dcgm_jobs),
                t.health,
                t.last_error,
            )
            for t in targets.targets
        )
        parts = []
        for instance, server_samples in samples.items():
            target = by_instance.get(instance)
            url = _base_url(target) or f"http://{instance}"
            metrics = build_server_metrics(instance, url, server_samples, time.monotonic())
            parts.append(
                ServerParts(
                    instance, url, server_samples.labels.get("job"), server_samples.labels, metrics
                )
            )
        for t in health:  # vLLM targets that are down have no fresh series: a row each
            if t.kind == "vllm" and t.health == "down" and t.instance not in samples:
                target = by_instance[t.instance]
                url = _base_url(target) or f"http://{t.instance}"
                message = f"Prometheus marks it down: {t.last_error or 'no error given'}"
                down = ServerMetrics(
                    time.monotonic(), url, "down", message, EngineMetrics.empty(), (), ()
                )
                parts.append(ServerParts(t.instance, url, t.job, target.labels, down))
        if self.read_info:
            await self._read_infos(parts)
        gpus = _gpus(identity_vector, dcgm, throttle)
        history = _history(trend)
        parts = [
            p.with_extras(self._info.get(p.instance), history.get(p.instance, ())) for p in parts
        ]
        return assemble(
            self.description,
            parts,
            gpus,
            health,
            tuple(warnings),
            self.prom.requests_made - before,
        )

    async def _read_infos(self, parts: list[ServerParts]) -> None:
        wanted = [p for p in parts if p.metrics.state == "up" and p.instance not in self._info]
        if not wanted:
            return
        infos = await asyncio.gather(
            *(
                read_server_info(p.url, client=self._info_client(p.url), timeout_s=2.0)
                for p in wanted
            )
        )
        for part, info in zip(wanted, infos, strict=True):
            if info.model_ids or info.version:  # unreachable: try again next refresh
                self._info[part.instance] = info


def _server_samples(
    gauges: PromAnswer, rates: PromAnswer, quantiles: PromAnswer
) -> dict[str, ServerSamples]:
    out: dict[str, ServerSamples] = {}
    for labels, value in gauges.vector():
        instance = labels.get("instance")
        if instance:
            out.setdefault(instance, ServerSamples()).add_gauge(
                labels.get("__name__", ""), labels, value
            )
    for answer in (rates, quantiles):
        for labels, value in answer.vector():
            instance = labels.get("instance")
            if instance in out:
                out[instance].add_derived(labels.get(Q.FIELD, ""), labels, value)
    return out


def _gpu_key(labels) -> tuple:
    return (labels.get("instance"), labels.get("gpu"), labels.get("GPU_I_ID"))


def _gpus(identity: list, values: PromAnswer, throttle: PromAnswer):
    """GPU identity (once per GPU) + values (keyed) + throttling (keyed) -> DcgmGpu rows."""
    by_key = {_gpu_key(labels): labels for labels, _ in identity}
    samples = []
    for labels, value in values.vector():
        base = by_key.get(_gpu_key(labels))
        merged = {**base, **labels} if base is not None else labels
        samples.append((labels.get(Q.METRIC, ""), merged, value))
    gpus = gpus_from_samples(samples)
    reasons: dict[tuple, list[str]] = {}
    for labels, value in throttle.vector():
        bucket = reasons.setdefault(_gpu_key(labels), [])
        if value:
            bucket.append(labels.get(Q.FIELD, "?"))

    def key(g) -> tuple:
        head, _, slice_id = g.index.partition("/")
        return (g.instance, head, slice_id or None)

    return tuple(with_throttle(g, reasons[k]) if (k := key(g)) in reasons else g for g in gpus)


def _history(trend: PromAnswer) -> dict[str, tuple[ServerMetrics, ...]]:
    """query_range series -> per instance, one ServerMetrics (totals only) per time step."""
    points: dict[str, dict[float, dict[str, float]]] = {}
    for labels, values in trend.matrix():
        instance, field_name = labels.get("instance"), labels.get(Q.FIELD)
        if not instance or not field_name:
            continue
        for t, value in values:
            if value is not None:
                points.setdefault(instance, {}).setdefault(t, {})[field_name] = value
    out = {}
    for instance, by_time in points.items():
        rows = []
        for t in sorted(by_time):
            v = by_time[t]
            total = EngineMetrics.empty()
            total = _with(total, v)
            rows.append(ServerMetrics(t, instance, "up", None, total, (), ()))
        out[instance] = tuple(rows)
    return out


def _with(total: EngineMetrics, values: Mapping[str, float]) -> EngineMetrics:
    from dataclasses import replace

    return replace(
        total,
        kv_cache_usage=values.get("kv_cache_usage"),
        requests_running=values.get("requests_running"),
        requests_waiting=values.get("requests_waiting"),
        preemptions_total=values.get("preemptions_total"),
    )


def _base_url(target: Target | None) -> str | None:
    if target is None or not target.scrape_url:
        return None
    parts = urlsplit(target.scrape_url)
    path = parts.path[: -len("/metrics")] if parts.path.endswith("/metrics") else ""
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _kind(
    t: Target, vllm_instances: set, dcgm_instances: set, vllm_jobs: set, dcgm_jobs: set
) -> str:
    """What a target is: by the series it serves; for one without fresh series (down), by
    its path and job (a job may mix vLLM and exporters: the path tells them apart)."""
    if t.instance in vllm_instances:
        return "vllm"
    if t.instance in dcgm_instances:
        return "dcgm"
    name = f"{t.job} {t.scrape_pool} {t.scrape_url}".lower()
    if "dcgm" in name or ":9400" in t.scrape_url:  # dcgm-exporter's default port
        return "dcgm"
    if t.job in vllm_jobs or "vllm" in name:
        return "vllm"
    if t.job in dcgm_jobs:
        return "dcgm"
    return "other"
