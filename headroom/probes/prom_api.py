"""A reader of the Prometheus HTTP API: instant and range queries, and the target list.

    async with PrometheusClient("http://prom:9090") as prom:
        answer = await prom.query('vllm:num_requests_running')   # PromAnswer, never raises
        for labels, value in answer.vector(): ...
        targets = await prom.targets()                          # TargetList, never raises

Shapes follow fleet-facts.md section 2 (docs/querying/api.md at v2.42.0 and v3.14.0): the
envelope `{"status","data","errorType","error","warnings","infos"}`; values are strings
(`"NaN"`, `"+Inf"` included); vector order is not guaranteed. Only parameters that 2.42 knows
are sent (`query`, `time`, `timeout`; `start`, `end`, `step` for ranges), form-encoded by
POST so long queries do not hit URL limits. A proxy that answers with no envelope, a
timeout or a refused connection all come back as a PromAnswer with `ok=False` and a message.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx

from headroom.probes.metrics import normalize_base_url
from headroom.probes.untrusted_json import UntrustedJsonError, loads_bounded

_LOOPBACK = ("127.0.0.1", "localhost", "::1")
MAX_BODY_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class PromAnswer:
    """One API answer. `result` is the raw `data.result` (list for vector/matrix)."""

    ok: bool
    result_type: str | None = None
    result: Any = None
    warnings: tuple[str, ...] = ()
    error_type: str | None = None
    error: str | None = None
    http_status: int | None = None

    def vector(self) -> list[tuple[Mapping[str, str], float | None]]:
        """(labels, value) per series of a vector answer; unreadable values are None."""
        if not self.ok or self.result_type != "vector" or not isinstance(self.result, list):
            return []
        out: list[tuple[Mapping[str, str], float | None]] = []
        for item in self.result:
            if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
                continue
            out.append((_labels(item["metric"]), _sample_value(item.get("value"))))
        return out

    def matrix(self) -> list[tuple[Mapping[str, str], list[tuple[float, float | None]]]]:
        """(labels, [(t, value), ...]) per series of a matrix answer."""
        if not self.ok or self.result_type != "matrix" or not isinstance(self.result, list):
            return []
        out: list[tuple[Mapping[str, str], list[tuple[float, float | None]]]] = []
        for item in self.result:
            if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
                continue
            points = []
            for pair in item.get("values") or ():
                t = _number(pair[0]) if isinstance(pair, list) and len(pair) == 2 else None
                if t is not None:
                    points.append((t, _sample_value(pair)))
            out.append((_labels(item["metric"]), points))
        return out

    def describe(self) -> str:
        if self.ok:
            return "ok"
        kind = f"{self.error_type}: " if self.error_type else ""
        return f"{kind}{self.error or 'unknown error'}"


@dataclass(frozen=True)
class Target:
    """One active scrape target as /api/v1/targets describes it."""

    scrape_pool: str
    scrape_url: str
    labels: Mapping[str, str]
    health: str  # "up" | "down" | "unknown"
    last_error: str
    last_scrape_duration_s: float | None
    scrape_interval_s: float | None

    @property
    def instance(self) -> str:
        return self.labels.get("instance", "")

    @property
    def job(self) -> str:
        return self.labels.get("job", self.scrape_pool)


@dataclass(frozen=True)
class TargetList:
    ok: bool
    targets: tuple[Target, ...] = ()
    error: str | None = None
    warnings: tuple[str, ...] = field(default_factory=tuple)


def parse_answer(status_code: int, body: bytes | str) -> PromAnswer:
    """The envelope of one API answer, whatever came back. Never raises."""
    try:
        data = loads_bounded(body, max_bytes=MAX_BODY_BYTES, what="Prometheus answer")
    except UntrustedJsonError:
        head = (body[:120] if isinstance(body, str) else body[:120].decode("latin-1")).strip()
        return PromAnswer(
            False,
            error=f"HTTP {status_code}, not a Prometheus API answer: {head!r}",
            http_status=status_code,
        )
    if not isinstance(data, dict) or data.get("status") not in ("success", "error"):
        return PromAnswer(
            False, error=f"HTTP {status_code}: no Prometheus envelope", http_status=status_code
        )
    warnings = tuple(str(w) for w in data.get("warnings") or () if w)
    if data["status"] == "error":
        return PromAnswer(
            False,
            warnings=warnings,
            error_type=str(data.get("errorType") or "") or None,
            error=str(data.get("error") or "") or f"HTTP {status_code}",
            http_status=status_code,
        )
    payload = data.get("data")
    if not isinstance(payload, dict):
        return PromAnswer(True, None, payload, warnings, http_status=status_code)
    return PromAnswer(
        True,
        str(payload.get("resultType")) if payload.get("resultType") else None,
        payload.get("result", payload),
        warnings,
        http_status=status_code,
    )


def parse_targets(answer: PromAnswer) -> TargetList:
    """`data.activeTargets` of a /api/v1/targets answer."""
    if not answer.ok:
        return TargetList(False, error=answer.describe(), warnings=answer.warnings)
    data = answer.result if isinstance(answer.result, dict) else {}
    out = []
    for item in data.get("activeTargets") or ():
        if not isinstance(item, dict):
            continue
        raw_labels = item.get("labels")
        labels = _labels(raw_labels if isinstance(raw_labels, dict) else {})
        out.append(
            Target(
                scrape_pool=str(item.get("scrapePool") or ""),
                scrape_url=str(item.get("scrapeUrl") or ""),
                labels=labels,
                health=str(item.get("health") or "unknown"),
                last_error=str(item.get("lastError") or ""),
                last_scrape_duration_s=_number(item.get("lastScrapeDuration")),
                scrape_interval_s=parse_duration(str(item.get("scrapeInterval") or "")),
            )
        )
    return TargetList(True, tuple(out), warnings=answer.warnings)


def parse_duration(text: str) -> float | None:
    """Prometheus durations: `15s`, `1m30s`, `500ms`, `2h`. None when unreadable."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
    total, number, i = 0.0, "", 0
    text = text.strip()
    if not text:
        return None
    while i < len(text):
        char = text[i]
        if char.isdigit() or char == ".":
            number += char
            i += 1
            continue
        unit = "ms" if text.startswith("ms", i) else char
        if unit not in units or not number:
            return None
        try:
            total += float(number) * units[unit]
        except ValueError:
            return None
        number, i = "", i + len(unit)
    return None if number else total


class PrometheusClient:
    """Talks to one Prometheus server. Counts its requests (`requests_made`) for benchmarks."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 10.0,
        client: httpx.AsyncClient | None = None,
        bearer_token: str | None = None,
    ) -> None:
        base = normalize_base_url(url)
        parts = urlsplit(base)
        # user:password@ in the URL becomes Basic auth; the URL Headroom shows has none.
        self._auth = (
            httpx.BasicAuth(unquote(parts.username or ""), unquote(parts.password or ""))
            if parts.username or parts.password
            else None
        )
        host = parts.netloc.rsplit("@", 1)[-1]
        self.url = urlunsplit((parts.scheme, host, parts.path, "", ""))
        self._headers = {"Authorization": f"Bearer {bearer_token}"} if bearer_token else {}
        self.timeout_s = timeout_s
        self._client = client
        self._owns_client = client is None
        self.requests_made = 0

    async def query(self, expr: str, at: float | None = None) -> PromAnswer:
        form = {"query": expr, "timeout": f"{self.timeout_s:g}s"}
        if at is not None:
            form["time"] = f"{at:.3f}"
        return await self._post("/api/v1/query", form)

    async def query_range(self, expr: str, start: float, end: float, step_s: float) -> PromAnswer:
        if step_s <= 0 or end < start:
            return PromAnswer(False, error_type="bad_data", error="bad range or step")
        form = {
            "query": expr,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step_s:g}",
            "timeout": f"{self.timeout_s:g}s",
        }
        return await self._post("/api/v1/query_range", form)

    async def targets(self) -> TargetList:
        return parse_targets(await self._get("/api/v1/targets", {"state": "active"}))

    async def aclose(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> PrometheusClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _post(self, path: str, form: dict[str, str]) -> PromAnswer:
        return await self._request("POST", path, data=form)

    async def _get(self, path: str, params: dict[str, str]) -> PromAnswer:
        return await self._request("GET", path, params=params)

    async def _request(self, method: str, path: str, **kwargs: Any) -> PromAnswer:
        """One API call, its body read up to MAX_BODY_BYTES within the timeout. Error answers
        (400, 422, 503...) carry the envelope that says why, so their bodies are read too."""
        self.requests_made += 1
        url = self.url + path
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.timeout_s + 5):
                stream = self._get_client().stream(
                    method, url, headers=self._headers, auth=self._auth, **kwargs
                )
                async with stream as response:
                    async for chunk in response.aiter_bytes():
                        size += len(chunk)
                        if size > MAX_BODY_BYTES:
                            return PromAnswer(
                                False, error=f"{url} answered over {MAX_BODY_BYTES:,} bytes"
                            )
                        chunks.append(chunk)
                    status = response.status_code
        except TimeoutError:
            return PromAnswer(False, error=f"{self.url} did not answer within {self.timeout_s:g} s")
        except httpx.TimeoutException:
            return PromAnswer(False, error=f"{self.url} did not answer within {self.timeout_s:g} s")
        except httpx.HTTPError as error:
            reason = str(error).strip() or type(error).__name__
            return PromAnswer(False, error=f"cannot reach Prometheus at {self.url}: {reason}")
        return parse_answer(status, b"".join(chunks))

    def _get_client(self) -> httpx.AsyncClient:
        if self._client is None:
            local = (urlsplit(self.url).hostname or "") in _LOOPBACK
            self._client = httpx.AsyncClient(timeout=self.timeout_s + 5, trust_env=not local)
        return self._client


def now() -> float:
    return time.time()


def _labels(raw: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in raw.items()}


def _sample_value(pair: Any) -> float | None:
    """`[t, "v"]` -> float(v); NaN and +-Inf (no answer, or an empty histogram) -> None."""
    if not isinstance(pair, list) or len(pair) != 2:
        return None
    value = _number(pair[1])
    return value if value is not None and math.isfinite(value) else None


def _number(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str):
        try:
            return float(raw)
        except ValueError:
            return None
    return None
