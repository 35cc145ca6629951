"""The sweep's table: one row per configuration under the same load, the single-GPU
baseline first with ratios to it, the configuration that serves the goal marked with why
and what the runner-up would cost. Text, JSON, CSV and Markdown from the same rows.

Latency is judged where one user feels it, the end-to-end p95 at concurrency 1 (a pipeline
bubble or a slow all-reduce shows there first); throughput is the peak output tokens/s
over the ramp. The memory figures are the per-GPU peak seen while the ramp ran.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

__all__ = [
    "HEADERS",
    "SweepRow",
    "choose",
    "render_csv",
    "render_json",
    "render_markdown",
    "render_text",
    "table_cells",
]

DEFAULT_MEMORY_MARGIN = 0.05


@dataclass(frozen=True)
class SweepRow:
    label: str
    gpus: int
    outcome: str  # "done" | "skipped" | "failed" | "stopped"
    run_id: str | None = None
    throughput_tok_s: float | None = None
    p95_e2e_c1_s: float | None = None  # end-to-end p95 at concurrency 1
    p95_e2e_s: float | None = None  # at the operating point (knee, else peak step)
    ttft_p95_s: float | None = None
    itl_p95_s: float | None = None
    knee_concurrency: int | None = None
    kv_capacity_tokens: int | None = None
    memory_peak_gib: float | None = None  # the fullest GPU's peak
    memory_total_gib: float | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def memory_margin(self) -> float | None:
        if self.memory_peak_gib is None or not self.memory_total_gib:
            return None
        return 1.0 - self.memory_peak_gib / self.memory_total_gib


@dataclass(frozen=True)
class Choice:
    label: str | None
    why: str
    runner_up: str | None


def baseline_of(rows: Sequence[SweepRow]) -> SweepRow | None:
    done = [r for r in rows if r.outcome == "done" and r.throughput_tok_s]
    single = [r for r in done if r.gpus == 1]
    candidates = single or done
    return candidates[0] if candidates else None


def ratio(row: SweepRow, base: SweepRow | None) -> float | None:
    if base is None or not base.throughput_tok_s or row.throughput_tok_s is None:
        return None
    return row.throughput_tok_s / base.throughput_tok_s


def choose(rows: Sequence[SweepRow], goal: str) -> Choice:
    """The configuration that serves the goal best, why, and the runner-up's cost."""
    done = [r for r in rows if r.outcome == "done"]
    if goal == "throughput":
        ranked = sorted(
            (r for r in done if r.throughput_tok_s), key=lambda r: -(r.throughput_tok_s or 0.0)
        )
        if not ranked:
            return Choice(None, "no configuration finished its ramp", None)
        best = ranked[0]
        why = f"highest throughput: {best.throughput_tok_s:,.0f} tok/s"
        if len(ranked) > 1:
            second = ranked[1]
            loss = 1 - (second.throughput_tok_s or 0.0) / (best.throughput_tok_s or 1.0)
            return Choice(best.label, why, f"{second.label}: {loss:.0%} less throughput")
        return Choice(best.label, why, None)
    ranked = sorted((r for r in done if r.p95_e2e_c1_s), key=lambda r: r.p95_e2e_c1_s or 0.0)
    if not ranked:
        return Choice(None, "no configuration measured concurrency 1", None)
    best = ranked[0]
    why = f"lowest end-to-end p95 at concurrency 1: {best.p95_e2e_c1_s:.2f} s"
    if len(ranked) > 1:
        second = ranked[1]
        more = (second.p95_e2e_c1_s or 0.0) / (best.p95_e2e_c1_s or 1.0) - 1
        return Choice(best.label, why, f"{second.label}: {more:.0%} slower at concurrency 1")
    return Choice(best.label, why, None)


def _num(value: float | None, fmt: str) -> str:
    return "N/A" if value is None else format(value, fmt)


def _cells(row: SweepRow, base: SweepRow | None, chosen: str | None) -> list[str]:
    r = ratio(row, base)
    margin = row.memory_margin
    memory = "N/A"
    if row.memory_peak_gib is not None:
        memory = f"{row.memory_peak_gib:.1f} GiB"
        if margin is not None:
            memory += f" ({margin:.0%} free)"
    mark = "*" if chosen and row.label == chosen else ""
    return [
        mark + row.label,
        str(row.gpus),
        row.outcome,
        _num(row.throughput_tok_s, ",.0f"),
        "baseline" if base is not None and row is base else (f"{r:.2f}x" if r else "N/A"),
        _num(row.p95_e2e_c1_s, ".2f"),
        _num(row.p95_e2e_s, ".2f"),
        _num(None if row.ttft_p95_s is None else row.ttft_p95_s * 1000, ",.0f"),
        _num(None if row.itl_p95_s is None else row.itl_p95_s * 1000, ".1f"),
        "N/A" if row.knee_concurrency is None else str(row.knee_concurrency),
        _num(row.kv_capacity_tokens, ",") if row.kv_capacity_tokens is not None else "N/A",
        memory,
        "; ".join(row.notes),
    ]


HEADERS = [
    "configuration", "GPUs", "outcome", "tok/s", "vs base", "p95 c=1 s", "p95 s",
    "TTFT p95 ms", "ITL p95 ms", "knee", "KV tokens", "memory peak", "notes",
]  # fmt: skip


def _ordered(rows: Sequence[SweepRow]) -> tuple[list[SweepRow], SweepRow | None]:
    base = baseline_of(rows)
    rest = [r for r in rows if r is not base]
    return ([base] if base is not None else []) + rest, base


def table_cells(rows: Sequence[SweepRow], goal: str) -> tuple[list[list[str]], Choice]:
    """The cells of every row in the table's order (baseline first; the chosen
    configuration's label starts with '*'), and the choice: what the TUI's sweep view shows
    under HEADERS."""
    ordered, base = _ordered(rows)
    choice = choose(rows, goal)
    return [_cells(r, base, choice.label) for r in ordered], choice


def render_text(rows: Sequence[SweepRow], goal: str) -> str:
    ordered, base = _ordered(rows)
    choice = choose(rows, goal)
    table = [HEADERS] + [_cells(r, base, choice.label) for r in ordered]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS) - 1)]
    out = ["  ".join(c.ljust(w) for c, w in zip(line, widths, strict=False)) + "  " + line[-1]
           for line in table]  # fmt: skip
    out.append("")
    if choice.label:
        out.append(f"goal {goal}: {choice.label} ({choice.why})")
        if choice.runner_up:
            out.append(f"  runner-up: {choice.runner_up}")
    else:
        out.append(f"goal {goal}: nothing to choose ({choice.why})")
    return "\n".join(line.rstrip() for line in out)


def render_markdown(rows: Sequence[SweepRow], goal: str) -> str:
    ordered, base = _ordered(rows)
    choice = choose(rows, goal)
    lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    for row in ordered:
        cells = [c.replace("|", "\\|") for c in _cells(row, base, choice.label)]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(f"Goal {goal}: **{choice.label or 'none'}** ({choice.why})")
    if choice.runner_up:
        lines.append(f"Runner-up: {choice.runner_up}")
    return "\n".join(lines)


def row_json(row: SweepRow, base: SweepRow | None) -> dict[str, object]:
    doc = asdict(row)
    doc["notes"] = list(row.notes)
    doc["ratio"] = ratio(row, base)
    doc["memory_margin"] = row.memory_margin
    doc["is_baseline"] = row is base
    return doc


def render_json(rows: Sequence[SweepRow], goal: str, sweep_id: str | None = None) -> str:
    ordered, base = _ordered(rows)
    choice = choose(rows, goal)
    return json.dumps(
        {
            "sweep_id": sweep_id,
            "goal": goal,
            "chosen": choice.label,
            "why": choice.why,
            "runner_up": choice.runner_up,
            "rows": [row_json(r, base) for r in ordered],
        },
        indent=2,
    )


def render_csv(rows: Sequence[SweepRow], goal: str) -> str:
    ordered, base = _ordered(rows)
    choice = choose(rows, goal)
    buffer = io.StringIO()
    fields = list(row_json(ordered[0], base)) + ["chosen"] if ordered else []
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    for row in ordered:
        doc = row_json(row, base)
        doc["notes"] = "; ".join(row.notes)
        doc["chosen"] = row.label == choice.label
        writer.writerow(doc)
    return buffer.getvalue()
