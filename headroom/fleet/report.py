"""FleetSnapshot -> JSON (`--json`), CSV (`--csv`) and the plain text table (`--once`).

JSON keys are listed in the README's fleet section; the CSV has one row per server with the
same scalar keys and the GPU columns summarised.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from headroom.doctor.findings import finding_to_json
from headroom.fleet.model import FleetFinding, FleetServer, FleetSnapshot
from headroom.probes.dcgm import DcgmGpu
from headroom.probes.safe_text import safe_text

SERVER_KEYS = (
    "instance",
    "url",
    "job",
    "host",
    "state",
    "message",
    "model",
    "model_root",
    "max_model_len",
    "vllm_version",
    "engines",
    "block_size",
    "num_gpu_blocks",
    "cache_dtype",
    "gpu_memory_utilization",
    "kv_cache_usage",
    "kv_capacity_tokens",
    "kv_free_tokens",
    "headroom_requests",
    "requests_running",
    "requests_waiting",
    "preemptions_total",
    "preemptions_per_s",
    "ttft_p50_s",
    "ttft_p95_s",
    "itl_p50_s",
    "itl_p95_s",
    "prompt_tokens_per_s",
    "generation_tokens_per_s",
    "trouble",
)
CSV_GPU_KEYS = (
    "gpu_count",
    "gpu_util_pct_mean",
    "gpu_memory_used_mib",
    "gpu_power_w",
    "gpu_xid",
    "gpu_throttled",
)


def server_row(s: FleetServer) -> dict[str, Any]:
    t = s.total
    info = s.info
    row = {
        "instance": s.instance,
        "url": s.url,
        "job": s.job,
        "host": s.host,
        "state": s.state,
        "message": s.metrics.message,
        "model": s.model,
        "model_root": info.model_root if info else None,
        "max_model_len": info.max_model_len if info else None,
        "vllm_version": info.version if info else None,
        "engines": s.engine_count,
        "block_size": t.block_size,
        "num_gpu_blocks": t.num_gpu_blocks,
        "cache_dtype": t.cache_dtype,
        "gpu_memory_utilization": t.gpu_memory_utilization,
        "kv_cache_usage": t.kv_cache_usage,
        "kv_capacity_tokens": t.kv_capacity_tokens,
        "kv_free_tokens": t.kv_free_tokens,
        "headroom_requests": t.headroom_requests,
        "requests_running": t.requests_running,
        "requests_waiting": t.requests_waiting,
        "preemptions_total": t.preemptions_total,
        "preemptions_per_s": t.preemptions_per_s,
        "ttft_p50_s": t.ttft.p50,
        "ttft_p95_s": t.ttft.p95,
        "itl_p50_s": t.itl.p50,
        "itl_p95_s": t.itl.p95,
        "prompt_tokens_per_s": t.prompt_tokens_per_s,
        "generation_tokens_per_s": t.generation_tokens_per_s,
        "trouble": s.trouble,
    }
    return {k: _clean(v) for k, v in row.items()}


def gpu_row(g: DcgmGpu) -> dict[str, Any]:
    row = {
        "host": g.host,
        "instance": g.instance,
        "index": g.index,
        "uuid": g.uuid,
        "name": g.name,
        "pci_bus_id": g.pci_bus_id,
        "mig_profile": g.mig_profile,
        "pod": g.pod,
        "util_pct": g.util_pct,
        "memory_used_mib": g.fb_used_mib,
        "memory_free_mib": g.fb_free_mib,
        "memory_total_mib": g.memory_total_mib,
        "power_w": g.power_w,
        "power_limit_w": g.power_limit_w,
        "temperature_c": g.temperature_c,
        "sm_clock_mhz": g.sm_clock_mhz,
        "xid": g.xid,
        "xid_message": g.xid_message,
        "throttle": list(g.throttle) if g.throttle is not None else None,
    }
    return {k: _clean(v) for k, v in row.items()}


def finding_row(f: FleetFinding) -> dict[str, Any]:
    return {**finding_to_json(f.finding), "servers": list(f.servers)}


def snapshot_to_json(snap: FleetSnapshot) -> dict[str, Any]:
    servers = []
    for s in snap.sorted_servers():
        row = server_row(s)
        row["gpus"] = [gpu_row(g) for g in s.gpus]
        row["findings"] = [finding_row(f) for f in s.findings]
        servers.append(row)
    return {
        "source": snap.source,
        "taken_at": snap.taken_at,
        "servers": servers,
        "unmatched_gpus": [gpu_row(g) for g in snap.unmatched_gpus],
        "targets": [
            {
                "job": t.job,
                "instance": t.instance,
                "kind": t.kind,
                "health": t.health,
                "last_error": t.last_error,
            }
            for t in snap.targets
        ],
        "findings": [finding_row(f) for f in snap.findings],
        "warnings": list(snap.warnings),
        "requests_made": snap.requests_made,
    }


def snapshot_to_csv(snap: FleetSnapshot) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*SERVER_KEYS, *CSV_GPU_KEYS, "findings"])
    for s in snap.sorted_servers():
        row = server_row(s)
        utils = [g.util_pct for g in s.gpus if g.util_pct is not None]
        used = [g.fb_used_mib for g in s.gpus if g.fb_used_mib is not None]
        power = [g.power_w for g in s.gpus if g.power_w is not None]
        gpu_cells = [
            len(s.gpus),
            _fmt_csv(sum(utils) / len(utils) if utils else None),
            _fmt_csv(sum(used) if used else None),
            _fmt_csv(sum(power) if power else None),
            safe_text(" ".join(f"{g.index}:{g.xid}" for g in s.gpus if g.xid)),
            " ".join(f"{g.index}:{'/'.join(g.throttle or ())}" for g in s.gpus if g.throttle),
        ]
        ids = " ".join(sorted({f.finding.id for f in s.findings}))
        writer.writerow([_fmt_csv(row[k]) for k in SERVER_KEYS] + gpu_cells + [ids])
    return out.getvalue()


COLUMNS = (
    "SERVER",
    "MODEL",
    "STATE",
    "KV",
    "HEADROOM",
    "RUN/WAIT",
    "PREEMPT/s",
    "TTFT95",
    "ITL95",
    "TOK/s",
    "GPUS util/mem/power",
    "GPU FAULTS",
    "FINDINGS",
)


def table_rows(snap: FleetSnapshot) -> list[tuple[str, ...]]:
    return [server_cells(s) for s in snap.sorted_servers()]


def server_cells(s: FleetServer) -> tuple[str, ...]:
    t = s.total
    return (
        s.instance,
        _short(s.model or "?", 28),
        s.state,
        _pct(t.kv_cache_usage),
        _num(t.headroom_requests, "req"),
        f"{_num(t.requests_running)}/{_num(t.requests_waiting)}",
        _num(t.preemptions_per_s, digits=2),
        _secs(t.ttft.p95),
        _secs(t.itl.p95),
        _num(t.generation_tokens_per_s),
        gpu_summary(s.gpus),
        gpu_faults(s.gpus),
        " ".join(sorted({f.finding.id for f in s.findings})) or "-",
    )


def gpu_summary(gpus: tuple[DcgmGpu, ...]) -> str:
    if not gpus:
        return "-"
    utils = [g.util_pct for g in gpus if g.util_pct is not None]
    used = sum(g.fb_used_mib or 0 for g in gpus) / 1024
    total = sum(g.memory_total_mib or 0 for g in gpus) / 1024
    power = sum(g.power_w or 0 for g in gpus)
    util = f"{sum(utils) / len(utils):.0f}%" if utils else "?"
    return f"{len(gpus)}x {util} {used:.0f}/{total:.0f}G {power:.0f}W"


def gpu_faults(gpus: tuple[DcgmGpu, ...]) -> str:
    parts = [f"XID{g.xid}@{g.index}" for g in gpus if g.xid]
    parts += [f"{'/'.join(g.throttle or ())}@{g.index}" for g in gpus if g.throttle]
    return " ".join(parts) or "-"


def render_text(snap: FleetSnapshot) -> str:
    rows = [COLUMNS, *table_rows(snap)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]
    up = sum(1 for s in snap.servers if s.state == "up")
    gpus = sum(len(s.gpus) for s in snap.servers) + len(snap.unmatched_gpus)
    head = f"fleet via {snap.source}: {up}/{len(snap.servers)} servers up, {gpus} GPUs"
    out = [head, "", *lines]
    out = [safe_text(line) for line in out]  # server strings reach a terminal: no escapes
    if snap.findings:
        out += ["", "fleet findings:"]
        out += [
            safe_text(f"  [{f.finding.severity}] {f.finding.id}: {f.finding.title}")
            for f in snap.findings
        ]
    if snap.warnings:
        out += ["", "warnings:"] + [safe_text(f"  {w}") for w in snap.warnings]
    return "\n".join(out) + "\n"


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _fmt_csv(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return safe_text(value)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _num(value: float | None, unit: str = "", digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}{(' ' + unit) if unit else ''}"


def _secs(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f}ms" if value < 1 else f"{value:.2f}s"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]
