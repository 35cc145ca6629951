"""The fleet scraped directly: every vLLM /metrics and DCGM exporter at once, no Prometheus.

For a handful of servers. Each server keeps its own MetricsProbe (rates and windowed
quantiles need history, so the first refresh has levels only); throttling is known from
the second DCGM scrape. Targets come from `--url`/`--dcgm` or a targets file:

- Prometheus file_sd JSON: `[{"targets": ["h1:8000"], "labels": {"hostname": "h1"}}, ...]`;
  a group whose `job` label names dcgm (or with `kind: dcgm`) lists DCGM exporters.
- or plain text, one target per line: `URL [label=value ...]`, `dcgm URL [...]`; `#` comments.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from headroom.fleet.assemble import ServerParts, assemble
from headroom.fleet.model import FleetSnapshot, TargetHealth
from headroom.probes.dcgm import DcgmProbe
from headroom.probes.metrics import MetricsProbe, normalize_base_url
from headroom.probes.metrics_types import ServerMetrics
from headroom.probes.server_info import ServerInfo, read_server_info
from headroom.probes.untrusted_json import loads_bounded

HISTORY = 12


@dataclass(frozen=True)
class DirectTarget:
    url: str
    kind: str  # "vllm" | "dcgm"
    labels: Mapping[str, str] = field(default_factory=dict)

    @property
    def instance(self) -> str:
        text = self.url if "://" in self.url else "http://" + self.url
        return urlsplit(text).netloc


def parse_targets_text(text: str) -> list[DirectTarget]:
    """Either format above. Raises ValueError naming the bad entry."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            # Bounded nesting and numbers: a deep file is a ValueError, not a RecursionError.
            groups = loads_bounded(stripped, max_bytes=64 << 20, what="the targets file")
        except ValueError as error:
            raise ValueError(f"targets file is not valid JSON: {error}") from None
        return _from_file_sd(groups)
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            words = shlex.split(line)
        except ValueError as error:  # an unclosed quote
            raise ValueError(f"targets file line {lineno}: {error}") from None
        kind = "vllm"
        if words[0] in ("dcgm", "vllm"):
            kind, words = words[0], words[1:]
        if not words:
            raise ValueError(f"targets file line {lineno}: no address")
        labels = {}
        for word in words[1:]:
            key, eq, value = word.partition("=")
            if not eq or not key:
                raise ValueError(f"targets file line {lineno}: {word!r} is not label=value")
            labels[key] = value
        out.append(_target(words[0], kind, labels, f"line {lineno}"))
    return out


def _from_file_sd(groups: object) -> list[DirectTarget]:
    if not isinstance(groups, list):
        raise ValueError("targets file: expected a list of {targets, labels} groups")
    out = []
    for i, group in enumerate(groups):
        if not isinstance(group, dict) or not isinstance(group.get("targets"), list):
            raise ValueError(f"targets file group {i}: needs a 'targets' list")
        labels = group.get("labels") or {}
        if not isinstance(labels, dict):
            raise ValueError(f"targets file group {i}: 'labels' must be an object")
        labels = {str(k): str(v) for k, v in labels.items()}
        kind = (
            "dcgm" if "dcgm" in (labels.get("job", "") + labels.get("kind", "")).lower() else "vllm"
        )
        path = labels.get("__metrics_path__")
        for address in group["targets"]:
            url = str(address)
            if path and "://" not in url:
                url = f"http://{url}{path}"
            out.append(_target(url, kind, labels, f"group {i}"))
    return out


def _target(url: str, kind: str, labels: dict[str, str], where: str) -> DirectTarget:
    try:
        if kind == "vllm":
            normalize_base_url(url)
        elif not urlsplit(url if "://" in url else "http://" + url).hostname:
            raise ValueError(f"no host in {url!r}")
    except ValueError as error:
        raise ValueError(f"targets file {where}: {error}") from None
    return DirectTarget(url, kind, labels)


def load_targets_file(path: str) -> list[DirectTarget]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"cannot read targets file {path}: {error.strerror or error}") from None
    return parse_targets_text(text)


class DirectSource:
    def __init__(self, targets: Sequence[DirectTarget], *, timeout_s: float = 5.0) -> None:
        self.targets = list(targets)
        self.description = "direct"
        self._client = httpx.AsyncClient(timeout=timeout_s, trust_env=False)
        self._probes = {
            t.instance: MetricsProbe(t.url, timeout_s=timeout_s, client=self._client)
            for t in self.targets
            if t.kind == "vllm"
        }
        self._dcgm = [
            (t, DcgmProbe(t.url, timeout_s=timeout_s, client=self._client))
            for t in self.targets
            if t.kind == "dcgm"
        ]
        self._history: dict[str, list[ServerMetrics]] = {}
        self._info: dict[str, ServerInfo] = {}
        self.requests_made = 0

    async def aclose(self) -> None:
        await self._client.aclose()

    async def refresh(self) -> FleetSnapshot:
        before = self.requests_made
        vllm = [t for t in self.targets if t.kind == "vllm"]
        metrics, dcgm = await asyncio.gather(
            asyncio.gather(*(self._probes[t.instance].scrape() for t in vllm)),
            asyncio.gather(*(probe.scrape() for _, probe in self._dcgm)),
        )
        self.requests_made += len(metrics) + len(dcgm)
        await self._read_infos(vllm, metrics)
        parts, health, warnings = [], [], []
        for target, snap in zip(vllm, metrics, strict=True):
            history = tuple(self._history.get(target.instance, ()))
            parts.append(
                ServerParts(
                    target.instance,
                    self._probes[target.instance].url,
                    target.labels.get("job"),
                    target.labels,
                    snap,
                    self._info.get(target.instance),
                    history,
                )
            )
            kept = self._history.setdefault(target.instance, [])
            kept.append(snap)
            del kept[:-HISTORY]
            up = "up" if snap.state in ("up", "metrics_off") else "down"
            health.append(
                TargetHealth(
                    target.labels.get("job", "vllm"),
                    target.instance,
                    "vllm",
                    up,
                    snap.message or "",
                )
            )
        gpus = []
        for (target, _), scrape in zip(self._dcgm, dcgm, strict=True):
            ok = scrape.ok
            health.append(
                TargetHealth(
                    target.labels.get("job", "dcgm"),
                    target.instance,
                    "dcgm",
                    "up" if ok else "down",
                    scrape.message or "",
                )
            )
            if not ok:
                warnings.append(f"DCGM {target.url}: {scrape.message}")
            for gpu in scrape.gpus:
                if target.labels and not gpu.host:
                    host = next(
                        (target.labels[k] for k in ("hostname", "host") if k in target.labels), None
                    )
                    gpu = replace(gpu, host=host) if host else gpu
                gpus.append(gpu)
        return assemble(
            self.description, parts, gpus, health, warnings, self.requests_made - before
        )

    async def _read_infos(self, targets: list[DirectTarget], metrics: list[ServerMetrics]) -> None:
        wanted = [
            (t, self._probes[t.instance].url)
            for t, m in zip(targets, metrics, strict=True)
            if m.state == "up" and t.instance not in self._info
        ]
        if not wanted:
            return
        infos = await asyncio.gather(
            *(read_server_info(url, client=self._client, timeout_s=2.0) for _, url in wanted)
        )
        self.requests_made += 2 * len(wanted)
        for (target, _), info in zip(wanted, infos, strict=True):
            if info.model_ids or info.version:
                self._info[target.instance] = info
