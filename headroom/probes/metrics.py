"""The vLLM `/metrics` probe: scrape, classify, and snapshot a server's engine metrics.

    probe = MetricsProbe("http://127.0.0.1:8000")
    snapshot = await probe.scrape()          # never raises, never overlaps
    snapshot_to_json(snapshot)               # the `headroom attach --once --json` keys

Rates and windowed quantiles need history, so keep one probe per server and scrape it
periodically; the first scrape has levels (usage, running...) but no rates yet.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from headroom.probes.bounded_http import (
    BoundedReadError,
    DeadlineExceeded,
    LineFeeder,
    bounded_get,
)
from headroom.probes.metrics_build import build_rows, collect, tracker_inputs
from headroom.probes.metrics_parse import (
    HEAD_CHARS,
    MAX_SAMPLES,
    Exposition,
    ExpositionBuilder,
    looks_like_prometheus,
    parse_exposition,
)
from headroom.probes.metrics_types import STATES, EngineMetrics, ServerMetrics
from headroom.probes.metrics_window import Latency, WindowTracker
from headroom.probes.tls import tls_context_for

__all__ = [
    "STATES",
    "EngineMetrics",
    "Latency",
    "MetricsProbe",
    "ServerMetrics",
    "normalize_base_url",
    "snapshot_to_json",
]

METRICS_OFF_MESSAGE = "engine metrics off (--disable-log-stats?)"
_LOOPBACK = ("127.0.0.1", "localhost", "::1", "0.0.0.0")
MAX_BODY_BYTES = 32 * 1024 * 1024  # a real page is ~100 KB; anything this big is not vLLM
MAX_LINE_CHARS = 64 * 1024  # one sample line; cache_config_info, the longest, is ~1 KB


def normalize_base_url(url: str) -> str:
    """`host:8000`, `http://h:8000/`, `http://h:8000/metrics` -> `http://h:8000`.

    Raises ValueError with a clear message for something that cannot be a server address.
    """
    text = (url or "").strip()
    if not text:
        raise ValueError("no server URL given (e.g. http://127.0.0.1:8000)")
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"unsupported URL scheme {parts.scheme!r} in {url!r}: use http or https")
    try:
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError as error:
        raise ValueError(f"bad port in {url!r}: {error}") from None
    if not parts.hostname:
        raise ValueError(f"no host in {url!r} (e.g. http://127.0.0.1:8000)")
    path = parts.path.rstrip("/")
    if path.endswith("/metrics"):
        path = path[: -len("/metrics")]
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


class MetricsProbe:
    """Scrapes one server's `/metrics` and keeps the history rates and quantiles need.

    `scrape()` never raises and never runs twice at once: a call made while a scrape is in
    flight waits for that scrape and returns the same snapshot. `ingest()` is the same
    pipeline without HTTP, for replayed pages and tests.
    """

    def __init__(
        self,
        url: str,
        *,
        window_s: float = 60.0,
        timeout_s: float = 5.0,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = normalize_base_url(url)
        self.metrics_url = self.url + "/metrics"
        self.window_s = window_s
        self.timeout_s = timeout_s
        self._clock = clock
        self._client = client
        self._owns_client = client is None
        self._tracker = WindowTracker(window_s)
        self._inflight: asyncio.Task[ServerMetrics] | None = None
        self.last: ServerMetrics | None = None

    async def scrape(self) -> ServerMetrics:
        if self._inflight is None or self._inflight.done():
            self._inflight = asyncio.ensure_future(self._scrape_once())
        # shield: one impatient caller being cancelled must not cancel the shared scrape
        return await asyncio.shield(self._inflight)

    async def aclose(self) -> None:
        if self._inflight is not None and not self._inflight.done():
            self._inflight.cancel()
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> MetricsProbe:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def ingest(self, text: str, *, now: float | None = None) -> ServerMetrics:
        """Classify and snapshot one page of exposition text (updates rate/window history)."""
        now = self._clock() if now is None else now
        try:
            parsed = parse_exposition(text)
        except Exception as error:  # a probe reports; it never raises
            return self._keep(self._empty(now, "error", f"could not read metrics: {error!r}"))
        return self._from_exposition(parsed, text[: HEAD_CHARS + 1], now)

    def _from_exposition(self, parsed: Exposition, head: str, now: float) -> ServerMetrics:
        try:
            if parsed.too_many_samples:
                message = (
                    f"{self.metrics_url} answered over {MAX_SAMPLES:,} vLLM samples: "
                    "not read (a real page has a few hundred)"
                )
                return self._keep(self._empty(now, "error", message))
            if not parsed.samples:
                if parsed.vllm_lines == 0 and parsed.looks_like_prometheus:
                    return self._keep(self._empty(now, "metrics_off", METRICS_OFF_MESSAGE))
                if parsed.vllm_lines == 0:
                    what = "an empty page" if not head.strip() else _describe(head)
                    message = f"{self.metrics_url} answered {what}, not Prometheus metrics"
                    return self._keep(self._empty(now, "not_vllm", message))
            scrape = collect(parsed)
            counters, histograms = tracker_inputs(scrape)
            self._tracker.update(now, counters, histograms)
            if not scrape.series:
                message = "vllm: metrics present but none Headroom reads (renamed?)"
                return self._keep(self._empty(now, "up", message))
            total, engines, models = build_rows(scrape, self._tracker)
        except Exception as error:  # a probe reports; it never raises
            return self._keep(self._empty(now, "error", f"could not read metrics: {error!r}"))
        return self._keep(ServerMetrics(now, self.url, "up", None, total, engines, models))

    async def _scrape_once(self) -> ServerMetrics:
        builder = ExpositionBuilder()
        feeder = LineFeeder(builder.add_lines, max_line=MAX_LINE_CHARS, head_chars=HEAD_CHARS + 1)
        try:
            client = self._get_client()
            # One deadline for the whole scrape and a byte cap, streamed: a huge or endless
            # body costs at most the cap and the deadline, never the whole body.
            answer = await bounded_get(
                client,
                self.metrics_url,
                deadline_s=self.timeout_s,
                max_bytes=MAX_BODY_BYTES,
                sink=feeder.feed,
            )
        except DeadlineExceeded as error:
            return self._failed("error" if error.headers_seen else "slow", str(error))
        except BoundedReadError as error:
            return self._failed("error", str(error))
        except httpx.ConnectTimeout:
            return self._failed("down", f"cannot reach {self.url} (connect timed out)")
        except httpx.TimeoutException:
            return self._failed("slow", f"{self.url} did not answer within {self.timeout_s:g} s")
        except httpx.ConnectError as error:
            return self._failed("down", f"cannot reach {self.url}: {_reason(error)}")
        except (httpx.RemoteProtocolError, httpx.ReadError) as error:
            # It accepted the connection, then hung up: restarting, crashing, or not HTTP.
            return self._failed("error", f"{self.url} closed the connection: {_reason(error)}")
        except Exception as error:
            return self._failed("error", f"scrape of {self.metrics_url} failed: {error!r}")
        if answer.status == 404:
            return self._failed("not_vllm", f"{self.metrics_url} is 404: not a vLLM server?")
        if answer.status != 200:
            return self._failed("error", f"{self.metrics_url} answered HTTP {answer.status}")
        feeder.finish()
        parsed = builder.result
        head = feeder.head
        parsed.looks_like_prometheus = looks_like_prometheus(head)
        return self._from_exposition(parsed, head, self._clock())

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            # A GPU box's HTTP(S)_PROXY must not swallow scrapes of its own loopback server.
            local = (urlsplit(self.url).hostname or "") in _LOOPBACK
            self._client = httpx.AsyncClient(
                timeout=self.timeout_s,
                follow_redirects=False,
                trust_env=not local,
                verify=tls_context_for(self.url, trust_env=not local),
            )
        return self._client

    def _failed(self, state: str, message: str) -> ServerMetrics:
        return self._keep(self._empty(self._clock(), state, message))

    def _empty(self, now: float, state: str, message: str | None) -> ServerMetrics:
        return ServerMetrics(now, self.url, state, message, EngineMetrics.empty(), (), ())

    def _keep(self, snapshot: ServerMetrics) -> ServerMetrics:
        self.last = snapshot
        return snapshot


def _describe(text: str) -> str:
    head = text.lstrip()[:200].lower()
    if head.startswith(("<!doctype html", "<html")) or "<html" in head:
        return "an HTML page"
    if head.startswith(("{", "[")):
        return "JSON"
    return "text"


def _reason(error: Exception) -> str:
    text = str(error).strip()
    return text or type(error).__name__


# --- JSON ------------------------------------------------------------------------------

_ROW_KEYS = (
    ("kv_cache_usage", "kv_cache_usage"),
    ("kv_capacity_tokens", "kv_capacity_tokens"),
    ("kv_free_tokens", "kv_free_tokens"),
    ("headroom_requests", "headroom_requests"),
    ("avg_request_tokens", "avg_request_tokens"),
    ("requests_running", "requests_running"),
    ("requests_waiting", "requests_waiting"),
    ("preemptions_total", "preemptions_total"),
    ("preemptions_per_s", "preemptions_per_s"),
    ("prompt_tokens_per_s", "prompt_tokens_per_s"),
    ("generation_tokens_per_s", "generation_tokens_per_s"),
    ("finished_requests_per_s", "finished_requests_per_s"),
    ("prefix_cache_hit_rate", "prefix_cache_hit_rate"),
    ("block_size", "block_size"),
    ("num_gpu_blocks", "num_gpu_blocks"),
    ("cache_dtype", "cache_dtype"),
    ("gpu_memory_utilization", "gpu_memory_utilization"),
    ("kv_cache_memory_bytes", "kv_cache_memory_bytes"),
)
_LATENCIES = (("ttft", "ttft"), ("itl", "itl"), ("e2e", "e2e"), ("queue", "queue"))


def row_to_json(row: EngineMetrics) -> dict[str, Any]:
    """The flat keys of one row: `<field>` plus `<latency>_p50_s/_p95_s/_p99_s/_mean_s`."""
    out: dict[str, Any] = {key: _json_value(getattr(row, attr)) for key, attr in _ROW_KEYS}
    for prefix, attr in _LATENCIES:
        latency: Latency = getattr(row, attr)
        out[f"{prefix}_p50_s"] = _json_value(latency.p50)
        out[f"{prefix}_p95_s"] = _json_value(latency.p95)
        out[f"{prefix}_p99_s"] = _json_value(latency.p99)
        out[f"{prefix}_mean_s"] = _json_value(latency.mean)
        out[f"{prefix}_count"] = latency.count
        out[f"{prefix}_below_first_bucket"] = latency.below_first_bucket
        out[f"{prefix}_first_bucket_s"] = _json_value(latency.first_bucket_s)
    return out


def snapshot_to_json(m: ServerMetrics) -> dict[str, Any]:
    """Plain JSON-safe dict (NaN/Inf -> null) with the totals at top level, plus
    "engines" and "models" lists of the same keys with "model_name"/"engine"."""
    out: dict[str, Any] = {"url": m.url, "state": m.state, "message": m.message}
    out["model_name"] = m.total.model_name
    out.update(row_to_json(m.total))
    out["engines"] = [
        {"model_name": e.model_name, "engine": e.engine, **row_to_json(e)} for e in m.engines
    ]
    out["models"] = [{"model_name": r.model_name, **row_to_json(r)} for r in m.models]
    return out


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
