"""GPUs as NVIDIA's dcgm-exporter reports them: from its text page or from Prometheus series.

    probe = DcgmProbe("http://gpu-host:9400")       # direct: scrapes /metrics
    scrape = await probe.scrape()                     # DcgmScrape, never raises
    gpus = gpus_from_samples(samples)                 # the same from (name, labels, value)

Facts (fleet-facts.md section 1, fixtures in tests/fixtures/dcgm/): labels
`gpu, UUID|uuid, pci_bus_id, device, modelName, Hostname|hostname[, GPU_I_PROFILE, GPU_I_ID]`
and sorted extras (`pod`, `namespace`, `err_code`, `err_msg`...). `Hostname` became
`hostname` in 2026, so both are read. Values >= 9223372036854775792 are DCGM's "blank /
not supported" sentinels from exporters before 4.0.0: treated as missing. FB_* are MiB;
POWER_USAGE is W; XID_ERRORS is the *last* XID (0 = none); the two `*_VIOLATION` counters
(microseconds spent throttled, off by default) tell power and thermal throttling when they
grow.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

import httpx

from headroom.probes.bounded_http import BoundedReadError, bounded_get
from headroom.probes.metrics_parse import parse_exposition

SENTINEL_MIN = 9223372036854775792.0
MAX_BODY_BYTES = 32 * 1024 * 1024  # 8 GPUs x 25 families is ~100 KB; MIG hosts a few times that
FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": "util_pct",
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
    "DCGM_FI_DEV_FB_FREE": "fb_free_mib",
    "DCGM_FI_DEV_FB_RESERVED": "fb_reserved_mib",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_GPU_TEMP": "temperature_c",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz",
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": "power_limit_w",  # not a default counter
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "pcie_replays",
    "DCGM_FI_DEV_XID_ERRORS": "xid",
    "DCGM_FI_DEV_POWER_VIOLATION": "power_violation_us",
    "DCGM_FI_DEV_THERMAL_VIOLATION": "thermal_violation_us",
    # On MIG slices DEV_GPU_UTIL is absent; the maintainers point to this ratio (issue #430).
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gr_engine_active",
}
GAUGE_NAMES = tuple(FIELDS)
VIOLATION_NAMES = ("DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION")


@dataclass(frozen=True)
class DcgmGpu:
    """One GPU (or MIG slice) on one host. Any value the exporter did not give is None."""

    host: str | None  # Hostname/hostname label, else the scrape target's host
    instance: str | None  # the exporter's address (Prometheus `instance`, or URL host:port)
    index: str
    uuid: str | None
    name: str | None
    pci_bus_id: str | None
    mig_profile: str | None
    pod: str | None
    namespace: str | None
    util_pct: float | None
    fb_used_mib: float | None
    fb_free_mib: float | None
    fb_reserved_mib: float | None
    power_w: float | None
    power_limit_w: float | None
    temperature_c: float | None
    sm_clock_mhz: float | None
    xid: int | None  # last XID, 0 = none
    xid_message: str | None
    power_violation_us: float | None  # cumulative counters (direct mode's deltas use them)
    thermal_violation_us: float | None
    throttle: tuple[str, ...] | None = None  # ("power", "thermal") seen throttling; None = unknown

    @property
    def memory_total_mib(self) -> float | None:
        parts = (self.fb_used_mib, self.fb_free_mib)
        if any(p is None for p in parts):
            return None
        return sum(parts) + (self.fb_reserved_mib or 0.0)  # type: ignore[arg-type]

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.host or self.instance or "", self.uuid or "", self.index)


def host_of(labels: Mapping[str, str]) -> str | None:
    """The exporter's host name label (either spelling); None when `--no-hostname`."""
    return labels.get("Hostname") or labels.get("hostname") or None


def instance_host(instance: str | None) -> str | None:
    """`gpu-a:9400` -> `gpu-a`; `[::1]:9400` -> `::1`; `http://h:1/x` -> `h`."""
    if not instance:
        return None
    text = instance if "://" in instance else "//" + instance
    try:
        return urlsplit(text).hostname
    except ValueError:
        return None


def gpus_from_samples(
    samples: Iterable[tuple[str, Mapping[str, str], float | None]],
    default_instance: str | None = None,
) -> tuple[DcgmGpu, ...]:
    """Group exporter samples (metric name, labels, value) into one DcgmGpu per GPU."""
    values: dict[tuple, dict[str, object]] = {}
    heads: dict[tuple, Mapping[str, str]] = {}
    for name, labels, value in samples:
        attr = FIELDS.get(name)
        if attr is None or "gpu" not in labels:
            continue
        instance = labels.get("instance") or default_instance
        host = host_of(labels) or instance_host(instance)
        key = (host, instance, labels.get("gpu"), labels.get("GPU_I_ID"), _uuid(labels))
        heads.setdefault(key, labels)
        clean = _clean(value)
        row = values.setdefault(key, {})
        row[attr] = clean
        if attr == "xid" and clean:
            row["xid_message"] = labels.get("err_msg") or None
    out = []
    for key, row in values.items():
        labels = heads[key]
        host, instance, index, slice_id, uuid = key
        util = row.get("util_pct")
        if util is None and row.get("gr_engine_active") is not None:
            util = 100.0 * float(row["gr_engine_active"])  # type: ignore[arg-type]
        xid = row.get("xid")
        out.append(
            DcgmGpu(
                host=host,
                instance=instance,
                index=str(index) + (f"/{slice_id}" if slice_id else ""),
                uuid=uuid,
                name=labels.get("modelName") or None,
                pci_bus_id=labels.get("pci_bus_id") or None,
                mig_profile=labels.get("GPU_I_PROFILE") or None,
                pod=labels.get("pod") or labels.get("pod_name") or None,
                namespace=labels.get("namespace") or labels.get("pod_namespace") or None,
                util_pct=util,  # type: ignore[arg-type]
                fb_used_mib=row.get("fb_used_mib"),  # type: ignore[arg-type]
                fb_free_mib=row.get("fb_free_mib"),  # type: ignore[arg-type]
                fb_reserved_mib=row.get("fb_reserved_mib"),  # type: ignore[arg-type]
                power_w=row.get("power_w"),  # type: ignore[arg-type]
                power_limit_w=row.get("power_limit_w"),  # type: ignore[arg-type]
                temperature_c=row.get("temperature_c"),  # type: ignore[arg-type]
                sm_clock_mhz=row.get("sm_clock_mhz"),  # type: ignore[arg-type]
                xid=int(xid) if isinstance(xid, float) else None,
                xid_message=row.get("xid_message"),  # type: ignore[arg-type]
                power_violation_us=row.get("power_violation_us"),  # type: ignore[arg-type]
                thermal_violation_us=row.get("thermal_violation_us"),  # type: ignore[arg-type]
            )
        )
    out.sort(key=lambda g: (g.host or "", g.instance or "", _index_order(g.index)))
    return tuple(out)


def parse_dcgm_text(text: str, instance: str | None = None) -> tuple[DcgmGpu, ...]:
    """An exporter's /metrics page -> its GPUs. Never raises; unreadable lines are skipped."""
    parsed = parse_exposition(text, FIELDS, prefix="DCGM_")
    return gpus_from_samples(((s.name, s.labels, s.value) for s in parsed.samples), instance)


def with_throttle(gpu: DcgmGpu, reasons: Iterable[str] | None) -> DcgmGpu:
    return replace(gpu, throttle=None if reasons is None else tuple(sorted(set(reasons))))


@dataclass(frozen=True)
class DcgmScrape:
    taken_at: float
    url: str
    ok: bool
    message: str | None
    gpus: tuple[DcgmGpu, ...]


class DcgmProbe:
    """Scrapes one exporter; throttling is known from the second scrape on (counter growth)."""

    def __init__(
        self, url: str, *, timeout_s: float = 5.0, client: httpx.AsyncClient | None = None
    ) -> None:
        text = url.strip()
        if "://" not in text:
            text = "http://" + text
        parts = urlsplit(text)
        self.url = text if parts.path not in ("", "/") else text.rstrip("/") + "/metrics"
        self.instance = parts.netloc
        self.timeout_s = timeout_s
        self._client = client
        self._previous: dict[tuple[str, str, str], DcgmGpu] = {}

    async def scrape(self) -> DcgmScrape:
        now = time.monotonic()
        chunks: list[str] = []
        try:
            if self._client is None:
                local = (urlsplit(self.url).hostname or "") in ("127.0.0.1", "localhost", "::1")
                self._client = httpx.AsyncClient(timeout=self.timeout_s, trust_env=not local)
            answer = await bounded_get(
                self._client,
                self.url,
                deadline_s=self.timeout_s,
                max_bytes=MAX_BODY_BYTES,
                sink=chunks.append,
            )
        except BoundedReadError as error:
            return DcgmScrape(now, self.url, False, str(error), ())
        except httpx.HTTPError as error:
            reason = str(error).strip() or type(error).__name__
            return DcgmScrape(now, self.url, False, f"cannot reach {self.url}: {reason}", ())
        if answer.status != 200:
            message = f"{self.url} answered HTTP {answer.status}"
            return DcgmScrape(now, self.url, False, message, ())
        gpus = parse_dcgm_text("".join(chunks), self.instance)
        if not gpus:
            return DcgmScrape(now, self.url, False, f"{self.url} has no DCGM GPU series", ())
        marked = tuple(self._throttle(g) for g in gpus)
        self._previous = {g.key: g for g in gpus}
        return DcgmScrape(now, self.url, True, None, marked)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def _throttle(self, gpu: DcgmGpu) -> DcgmGpu:
        before = self._previous.get(gpu.key)
        if before is None or (gpu.power_violation_us is None and gpu.thermal_violation_us is None):
            return gpu
        reasons = []
        for reason, now_value, then_value in (
            ("power", gpu.power_violation_us, before.power_violation_us),
            ("thermal", gpu.thermal_violation_us, before.thermal_violation_us),
        ):
            if now_value is not None and then_value is not None and now_value > then_value:
                reasons.append(reason)
        return with_throttle(gpu, reasons)


def _uuid(labels: Mapping[str, str]) -> str | None:
    return labels.get("UUID") or labels.get("uuid") or None


def _clean(value: float | None) -> float | None:
    if value is None or not math.isfinite(value) or value >= SENTINEL_MIN:
        return None
    return value


def _index_order(index: str) -> tuple[int, str]:
    head = index.split("/", 1)[0]
    return (int(head), index) if head.isdigit() else (1 << 30, index)
