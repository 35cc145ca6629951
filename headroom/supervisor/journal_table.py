"""The run journal as the configuration comparison table operators keep by hand:
configuration, GPUs/topology, throughput, p95 latency, TTFT, memory peak, notes.
Plain text, CSV, JSON and Markdown.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
from collections.abc import Sequence

from headroom.supervisor.journal import RunRecord

COLUMNS = (
    "run",
    "started",
    "model",
    "configuration",
    "gpus",
    "topology",
    "outcome",
    "ready_s",
    "kv_tokens",
    "throughput_tok_s",
    "p95_latency_s",
    "ttft_p95_s",
    "itl_p95_s",
    "memory_peak_gib",
    "notes",
)
# vLLM's log-line prefix: "(EngineCore pid=1) ERROR 11-29 12:55:37 [core.py:1510] "
_LOG_PREFIX = re.compile(
    r"^(\(\w+ pid=\d+\) )?(ERROR|WARNING|INFO|DEBUG) [\d-]+ [\d:]+ \[[^\]]*\] "
)
# Flags that say nothing about the configuration under comparison.
_NOISE = {"--port", "--host", "--api-key", "--served-model-name", "--model"}


def configuration(record: RunRecord) -> str:
    """The flags that define the configuration, without port/host/secrets."""
    out: list[str] = []
    skip = False
    for token in record.flags or []:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0]
        if name in _NOISE:
            skip = "=" not in token
            continue
        out.append(token)
    env = [f"{k}={v}" for k, v in sorted((record.env or {}).items()) if k != "PYTHONUNBUFFERED"]
    return " ".join(out + env) or "(defaults)"


def _gpus(record: RunRecord) -> str:
    if not record.gpus:
        return ""
    names = [str(g.get("name") or "GPU") for g in record.gpus]
    if len(set(names)) == 1:
        return f"{len(names)}x {names[0]}"
    return ", ".join(names)


# journal summary key -> key of a bench step (headroom bench's StepResult)
_BENCH_KEYS = {
    "throughput_tok_s": "output_tokens_per_s",
    "e2e_p95_s": "e2e_p95",
    "ttft_p95_s": "ttft_p95",
    "itl_p95_s": "itl_p95",
    "peak_gpu_memory_bytes": "gpu_memory_peak_bytes",
}


def _operating_step(record: RunRecord) -> dict:
    """The bench's knee step, else its peak-throughput step ({} without a bench)."""
    bench = record.bench if isinstance(record.bench, dict) else {}
    steps = [s for s in bench.get("steps") or () if isinstance(s, dict)]
    if not steps:
        return {}
    knee = bench.get("knee") if isinstance(bench.get("knee"), dict) else {}
    idx = knee.get("step")
    if isinstance(idx, int) and 0 <= idx < len(steps):
        return steps[idx]
    rated = [s for s in steps if isinstance(s.get("output_tokens_per_s"), int | float)]
    return max(rated, key=lambda s: s["output_tokens_per_s"]) if rated else steps[-1]


def _measured(record: RunRecord, key: str) -> float | None:
    """A bench's operating-point value when there is one (comparable load), else what the
    supervisor saw while the run served."""
    value = _operating_step(record).get(_BENCH_KEYS[key])
    if isinstance(value, int | float):
        return float(value)
    value = (record.summary or {}).get(key)
    return float(value) if isinstance(value, int | float) else None


def row(record: RunRecord) -> dict[str, object]:
    """One table row; a record this version cannot read still gets a row saying so."""
    try:
        return _row(record)
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError, OSError):
        out: dict[str, object] = dict.fromkeys(COLUMNS)
        out["run"] = str(record.run_id)
        out["model"] = str(record.model)
        out["notes"] = "unreadable record (written by another Headroom version?)"
        return out


def _row(record: RunRecord) -> dict[str, object]:
    peak = _measured(record, "peak_gpu_memory_bytes")
    notes = [record.notes or ""]
    if record.trigger:
        notes.append(record.trigger)
    if record.reason:
        notes.append(_LOG_PREFIX.sub("", record.reason))
    if record.changes:
        notes.append("changed " + ", ".join(f"{k}={v}" for k, v in record.changes.items()))
    if record.findings:
        notes.append("doctor: " + str(record.findings[0].get("title", record.findings[0])))
    return {
        "run": record.run_id,
        "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(record.time)),
        "model": record.model,
        "configuration": configuration(record),
        "gpus": _gpus(record),
        "topology": record.topology or "",
        "outcome": record.outcome,
        "ready_s": record.time_to_ready_s,
        "kv_tokens": record.kv_cache_tokens,
        "throughput_tok_s": _measured(record, "throughput_tok_s"),
        "p95_latency_s": _measured(record, "e2e_p95_s"),
        "ttft_p95_s": _measured(record, "ttft_p95_s"),
        "itl_p95_s": _measured(record, "itl_p95_s"),
        "memory_peak_gib": round(peak / 2**30, 2) if peak is not None else None,
        "notes": "; ".join(n for n in notes if n)[:300],
    }


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def to_text(records: Sequence[RunRecord], *, width: int = 48) -> str:
    if not records:
        return "no runs in the journal yet (headroom serve records each run)"
    rows = [row(r) for r in records]
    cols = [c for c in COLUMNS if c != "run"]
    limit = {"configuration": 2 * width, "notes": 2 * width}
    cells = [[_cell(r[c])[: limit.get(c, width)] for c in cols] for r in rows]
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(cols)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip()]
    for line in cells:
        lines.append("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
    return "\n".join(lines)


def to_csv(records: Sequence[RunRecord]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: "" if v is None else v for k, v in row(record).items()})
    return buffer.getvalue()


def to_json(records: Sequence[RunRecord]) -> str:
    return json.dumps(
        [{"row": row(r), "record": r.to_json()} for r in records], indent=1, default=str
    )


def to_markdown(records: Sequence[RunRecord]) -> str:
    def esc(value: object) -> str:
        return _cell(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for record in records:
        r = row(record)
        lines.append("| " + " | ".join(esc(r[c]) for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"
