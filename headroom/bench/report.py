"""Bench results as text: the step table, terminal plots, CSV and Markdown.

Plain strings only (no Textual), so the CLI prints them and the Bench screen reuses the same
plot cells with theme styles. Missing figures print as "N/A", never as 0.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from headroom.bench.stats import StepResult

NA = "N/A"
_BLOCKS = " ▁▂▃▄▅▆▇█"

# (header, StepResult attribute, formatter kind); the order of the table, CSV and Markdown.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("conc", "concurrency", "int"),
    ("req/s", "requests_per_s", "rate"),
    ("out tok/s", "output_tokens_per_s", "rate0"),
    ("TTFT p50", "ttft_p50", "ms"),
    ("TTFT p95", "ttft_p95", "ms"),
    ("ITL p50", "itl_p50", "ms"),
    ("ITL p95", "itl_p95", "ms"),
    ("e2e p95", "e2e_p95", "s"),
    ("ok", "requests", "int"),
    ("err", "errors", "int"),
    ("KV peak", "kv_usage_peak", "pct"),
    ("preempt", "preemptions", "int"),
    ("wait peak", "waiting_peak", "int"),
    ("GPU mem", "gpu_memory_peak_bytes", "gib"),
    ("GPU util", "gpu_util_mean", "util"),
)


def fmt(value: object, kind: str) -> str:
    if value is None:
        return NA
    v = float(value)  # type: ignore[arg-type]
    if kind == "int":
        return f"{v:.0f}"
    if kind == "rate":
        return f"{v:.2f}"
    if kind == "rate0":
        return f"{v:.0f}" if v >= 100 else f"{v:.1f}"
    if kind == "ms":
        return f"{v * 1000:.0f} ms" if v >= 0.01 else f"{v * 1000:.1f} ms"
    if kind == "s":
        return f"{v:.2f} s"
    if kind == "pct":
        return f"{v * 100:.0f}%"
    if kind == "gib":
        return f"{v / 2**30:.1f} GiB"
    if kind == "util":
        return f"{v:.0f}%"
    return str(value)


def step_rows(steps: Sequence[StepResult]) -> list[list[str]]:
    return [[fmt(getattr(s, attr), kind) for _, attr, kind in COLUMNS] for s in steps]


def text_table(steps: Sequence[StepResult], knee_concurrency: int | None = None) -> str:
    headers = [h for h, _, _ in COLUMNS]
    rows = step_rows(steps)
    for row, step in zip(rows, steps, strict=True):
        if step.concurrency == knee_concurrency:
            row[0] = row[0] + "*"
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def to_csv(steps: Sequence[StepResult]) -> str:
    """Raw numbers (seconds, bytes, fractions), one row per step; empty cell = not measured."""
    out = io.StringIO()
    fields = list(StepResult.__dataclass_fields__)
    fields.remove("error_examples")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(fields)
    for step in steps:
        writer.writerow(["" if getattr(step, f) is None else getattr(step, f) for f in fields])
    return out.getvalue()


def to_markdown(result) -> str:
    """The whole result (workload, knee, steps) as a Markdown section."""
    w = result.workload
    dist = w.get("distribution") or {}
    lines = [
        f"## Bench: {w.get('label') or w.get('model')}",
        "",
        f"- model: `{w.get('model')}` at {w.get('url')} ({w.get('endpoint')})",
        f"- distribution: {dist.get('name')} (fingerprint {dist.get('fingerprint')})",
        f"- ramp: {', '.join(str(c) for c in w.get('ramp') or [])}; " + _hold_text(w),
        f"- knee: {_knee_text(result.knee)}",
    ]
    if result.stopped_reason:
        lines.append(f"- stopped early: {result.stopped_reason}")
    headers = [h for h, _, _ in COLUMNS]
    lines += ["", "| " + " | ".join(headers) + " |", "|" + "---:|" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in step_rows(result.steps)]
    return "\n".join(lines) + "\n"


def _hold_text(w: dict) -> str:
    if w.get("step_requests"):
        return f"{w['step_requests']} requests per step, warm-up {w.get('warmup_s')} s"
    return f"{w.get('step_duration_s')} s per step, warm-up {w.get('warmup_s')} s"


def _knee_text(knee) -> str:
    if knee.concurrency is None:
        return knee.reason
    return f"concurrency {knee.concurrency}: {knee.reason}"


def bar_chart(
    labels: Sequence[str],
    values: Sequence[float | None],
    *,
    height: int = 6,
    title: str = "",
    unit_fmt=lambda v: f"{v:.0f}",
    mark: int | None = None,
) -> list[str]:
    """A column chart, one column per step, with eighth-block resolution.

    A missing value draws an empty column labelled as usual; `mark` puts a ^ under one step
    (the knee). Returns lines of equal width.
    """
    present = [v for v in values if v is not None]
    top = max(present) if present else 0.0
    col = max(3, *(len(label) + 1 for label in labels)) if labels else 3
    axis_w = max(len(unit_fmt(top)), len(unit_fmt(0.0)))
    lines = [title] if title else []
    for row in range(height, 0, -1):
        cells = []
        for v in values:
            cells.append(_cell(v, top, row, height).rjust(col - 1).ljust(col))
        label = unit_fmt(top) if row == height else ""
        lines.append(f"{label.rjust(axis_w)} ┤" + "".join(cells))
    lines.append(unit_fmt(0.0).rjust(axis_w) + " └" + "─" * (col * len(values)))
    lines.append(" " * (axis_w + 2) + "".join(label.rjust(col - 1).ljust(col) for label in labels))
    if mark is not None and 0 <= mark < len(values):
        pointer = [" " * col] * len(values)
        pointer[mark] = "^".rjust(col - 1).ljust(col)
        lines.append(" " * (axis_w + 2) + "".join(pointer) + " knee")
    width = max(len(line) for line in lines)
    return [line.ljust(width) for line in lines]


def column_cells(values: Sequence[float | None], height: int) -> tuple[float, list[list[str]]]:
    """(top value, rows top to bottom of 2-character cells, one per value): the chart body,
    for renderers that colour each column themselves (the Bench screen)."""
    present = [v for v in values if v is not None]
    top = max(present) if present else 0.0
    rows = [[_cell(v, top, row, height) for v in values] for row in range(height, 0, -1)]
    return top, rows


def _cell(value: float | None, top: float, row: int, height: int) -> str:
    if value is None or top <= 0:
        return "  "
    eighths = round(value / top * height * 8)
    filled = eighths - (row - 1) * 8
    if filled >= 8:
        return _BLOCKS[8] * 2
    if filled <= 0:
        return "  "
    return _BLOCKS[filled] * 2


def latency_series(steps: Sequence[StepResult]) -> tuple[str, str]:
    """End-to-end p95 when every step has one; else TTFT p95, which every step with a first
    token has (requests longer than a step never finish inside it, so e2e can be missing),
    and which shows queueing just as plainly."""
    if steps and all(s.e2e_p95 is not None for s in steps):
        return "e2e", "e2e_p95"
    return "TTFT", "ttft_p95"


def plots(steps: Sequence[StepResult], knee_index: int | None = None, height: int = 6) -> str:
    labels = [str(s.concurrency) for s in steps]
    thr = bar_chart(
        labels,
        [s.output_tokens_per_s for s in steps],
        height=height,
        title="output tok/s vs concurrency",
        mark=knee_index,
    )
    name, attr = latency_series(steps)
    lat = bar_chart(
        labels,
        [getattr(s, attr) for s in steps],
        height=height,
        title=f"{name} p95 (s) vs concurrency",
        unit_fmt=lambda v: f"{v:.2f}",
        mark=knee_index,
    )
    rows = max(len(thr), len(lat))
    thr += [" " * len(thr[0])] * (rows - len(thr))
    lat += [" " * len(lat[0])] * (rows - len(lat))
    return "\n".join(f"{a}    {b}".rstrip() for a, b in zip(thr, lat, strict=True))


def summary_text(result) -> str:
    """What `headroom bench` prints at the end on a terminal."""
    parts = [
        f"model {result.workload.get('model')}  distribution "
        f"{(result.workload.get('distribution') or {}).get('name')}",
        "",
        text_table(result.steps, result.knee.concurrency),
        "",
        plots(result.steps, result.knee.step_index),
        "",
        "knee: " + _knee_text(result.knee),
    ]
    if result.stopped_reason:
        parts.append("stopped early: " + result.stopped_reason)
    return "\n".join(parts)
