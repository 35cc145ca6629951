"""The comparison rows (compare.py) as the one table: plain text for the terminal, Markdown,
JSON and CSV, with one set of columns for text, Markdown and CSV.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from dataclasses import asdict

from headroom.bench.compare import ComparisonRow
from headroom.bench.report import NA, fmt

# A link of nvidia-smi's topology matrix as the journal holds it: "GPU0-GPU1 NV18"; the
# journal joins pairs with ", ".
_LINK = re.compile(r"GPU\d+-GPU\d+ ([^\s,]+)")

# The table: one set of columns for text, Markdown and CSV.
COMPARISON_HEADERS = (
    "configuration",
    "GPUs",
    "tok/s",
    "vs base",
    "p95 latency",
    "TTFT p95",
    "memory peak",
    "outcome",
    "notes",
)
_NOTES_LIMIT = 300


def _topology_short(topology: str | None) -> str | None:
    """'GPU0-GPU1 NV18, GPU0-GPU2 SYS' -> 'NV18/SYS'; other text as it is."""
    if not topology:
        return None
    links = list(dict.fromkeys(_LINK.findall(topology)))
    return "/".join(links) if links else topology


def _configuration_cell(r: ComparisonRow) -> str:
    topology = _topology_short(r.topology)
    parts = [r.configuration + (f" ({topology})" if topology else ""), *r.flags_that_differ]
    return " ".join(parts)


def comparison_cells(rows: Sequence[ComparisonRow]) -> list[list[str]]:
    out = []
    for r in rows:
        ratio = "baseline" if r.is_baseline else (f"{r.ratio:.2f}x" if r.ratio is not None else NA)
        gpus = r.gpu_names or (str(r.gpus) if r.gpus is not None else NA)
        out.append(
            [
                _configuration_cell(r),
                gpus,
                fmt(r.peak_tok_s, "rate0"),
                ratio,
                fmt(r.e2e_p95_s, "s"),
                fmt(r.ttft_p95_s, "ms"),
                fmt(r.peak_gpu_memory_bytes, "gib"),
                r.outcome or NA,
                "; ".join(r.notes)[:_NOTES_LIMIT],
            ]
        )
    return out


def render_comparison(rows: Sequence[ComparisonRow], *, empty: str | None = None) -> str:
    """The plain-text table (`headroom runs`, `headroom bench --compare`)."""
    if not rows:
        return empty or "no benched runs in the journal (run `headroom bench URL --journal`)"
    cells = comparison_cells(rows)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(COMPARISON_HEADERS)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(COMPARISON_HEADERS, widths, strict=True))]
    for row in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    if not any(r.is_baseline for r in rows):
        lines.append("(no benched runs: `headroom bench URL --journal` adds the ratio column)")
    return "\n".join(line.rstrip() for line in lines)


def comparison_markdown(rows: Sequence[ComparisonRow]) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(COMPARISON_HEADERS) + " |", "|" + "---|" * len(COMPARISON_HEADERS)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in comparison_cells(rows)]
    return "\n".join(lines) + "\n"


def comparison_to_json(rows: Sequence[ComparisonRow]) -> list[dict]:
    return [
        {**asdict(r), "notes": list(r.notes), "flags_that_differ": list(r.flags_that_differ)}
        for r in rows
    ]


CSV_COLUMNS = (
    "run_id", "started", "model", "configuration", "flags_that_differ", "gpus", "gpu_names",
    "topology", "throughput_tok_s", "ratio", "p95_latency_s", "ttft_p95_s", "itl_p95_s",
    "itl_c1_s", "knee_concurrency", "memory_peak_gib", "outcome", "benched", "comparable",
    "is_baseline", "notes",
)  # fmt: skip


def comparison_csv(rows: Sequence[ComparisonRow]) -> str:
    """The same rows as raw numbers (seconds, tok/s, GiB), one run per line."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        mem = r.peak_gpu_memory_bytes
        data = {
            **asdict(r),
            "flags_that_differ": " ".join(r.flags_that_differ),
            "throughput_tok_s": r.peak_tok_s,
            "p95_latency_s": r.e2e_p95_s,
            "memory_peak_gib": round(mem / 2**30, 2) if mem is not None else None,
            "notes": "; ".join(r.notes),
        }
        writer.writerow({k: "" if data.get(k) is None else data[k] for k in CSV_COLUMNS})
    return buffer.getvalue()
