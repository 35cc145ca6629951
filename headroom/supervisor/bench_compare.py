"""Configurations side by side: the rows `headroom runs` shows for benched runs.

One row per journaled run that carries a bench: its configuration (TP/PP from the journaled
flags, or the bench label), peak output throughput and its ratio to the single-GPU baseline,
the knee, latency at the operating point (the knee step, else the peak-throughput step),
ITL at concurrency 1 (where TP's all-reduce cost shows most plainly) and peak GPU memory.
The baseline (TP=1, PP=1, the earliest such run) comes first; the others follow by GPU count.
Runs are comparable only when model, request distribution, ramp and step hold match the
baseline's; when they do not, the row says why, and no ratio is given when the model or
distribution differ, because that ratio would mean nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from headroom.supervisor.bench_report import NA, fmt


@dataclass(frozen=True)
class ComparisonRow:
    """One benched configuration, with figures relative to the baseline."""

    run_id: str | None
    configuration: str  # "TP=2", "TP=1 PP=2", or the bench label
    tp: int | None
    pp: int | None
    gpus: int | None
    topology: str | None
    model: str | None
    peak_tok_s: float | None
    ratio: float | None  # peak_tok_s / baseline's; None when not comparable
    knee_concurrency: int | None
    operating_concurrency: int | None
    e2e_p95_s: float | None
    ttft_p95_s: float | None
    itl_p95_s: float | None
    itl_c1_s: float | None  # mean ITL at concurrency 1 (p50 when no mean was recorded)
    peak_gpu_memory_bytes: int | None
    is_baseline: bool
    comparable: bool
    notes: tuple[str, ...]


def _get(record: object, name: str):
    if isinstance(record, Mapping):
        return record.get(name)
    return getattr(record, name, None)


def _parallelism(flags: Sequence[str] | None, command: Sequence[str] | None):
    """(TP, PP) from the journaled flags, else the full command; (None, None) when the run
    has neither (a server Headroom did not start: its configuration is unknown)."""
    argv = list(flags) if flags else list(command) if command else None
    if argv is None:
        return None, None
    try:
        from headroom.cmdline import parse_command

        cmd = parse_command(argv)
        tp = cmd.get("tensor_parallel_size", 1)
        pp = cmd.get("pipeline_parallel_size", 1)
        return (int(tp) if tp is not None else 1), (int(pp) if pp is not None else 1)
    except (ValueError, TypeError, ImportError):
        return None, None


def _configuration(tp: int | None, pp: int | None, label: str | None) -> str:
    if label:
        return label
    if tp is None:
        return "unknown configuration"
    return f"TP={tp}" if pp in (None, 1) else f"TP={tp} PP={pp}"


def _key(workload: Mapping) -> dict[str, object]:
    dist = workload.get("distribution") or {}
    return {
        "model": workload.get("model"),
        # Clamping to a smaller max_model_len changes the traffic, so it is part of the key.
        "distribution": (
            dist.get("fingerprint") or dist.get("name"),
            dist.get("clamped_to_tokens"),
        ),
        "ramp": tuple(workload.get("ramp") or ()),
        "hold": (workload.get("step_duration_s"), workload.get("step_requests")),
        "endpoint": workload.get("endpoint"),
    }


_DIFF_WORDS = {
    "model": "different model",
    "distribution": "different request distribution",
    "ramp": "different ramp",
    "hold": "different step hold",
    "endpoint": "different endpoint",
}
_RATIO_BREAKERS = {"model", "distribution", "endpoint"}


def _operating_step(steps: Sequence[Mapping], knee: Mapping) -> Mapping | None:
    if not steps:
        return None
    idx = knee.get("step")
    if isinstance(idx, int) and 0 <= idx < len(steps):
        return steps[idx]
    with_thr = [s for s in steps if s.get("output_tokens_per_s") is not None]
    return max(with_thr, key=lambda s: s["output_tokens_per_s"]) if with_thr else steps[-1]


def _draft(record: object) -> dict | None:
    bench = _get(record, "bench")
    if not isinstance(bench, Mapping) or not bench.get("steps"):
        return None
    workload = bench.get("workload") or {}
    steps = list(bench.get("steps") or ())
    knee = bench.get("knee") or {}
    tp, pp = _parallelism(_get(record, "flags"), _get(record, "command"))
    thr = [s["output_tokens_per_s"] for s in steps if s.get("output_tokens_per_s") is not None]
    mems = [s["gpu_memory_peak_bytes"] for s in steps if s.get("gpu_memory_peak_bytes") is not None]
    summary = _get(record, "summary") or {}
    mem = max(mems) if mems else summary.get("peak_gpu_memory_bytes")
    op = _operating_step(steps, knee) or {}
    c1 = next((s for s in steps if s.get("concurrency") == 1), None)
    gpus = _get(record, "gpus")
    notes = []
    if bench.get("stopped_reason"):
        notes.append(f"stopped early: {bench['stopped_reason']}")
    return {
        "run_id": _get(record, "run_id"),
        "configuration": _configuration(tp, pp, workload.get("label")),
        "tp": tp,
        "pp": pp,
        "gpus": len(gpus) if isinstance(gpus, list) and gpus else (tp * pp if tp and pp else None),
        "topology": _get(record, "topology"),
        "model": workload.get("model") or _get(record, "model"),
        "peak_tok_s": max(thr) if thr else None,
        "knee_concurrency": knee.get("concurrency"),
        "operating_concurrency": op.get("concurrency"),
        "e2e_p95_s": op.get("e2e_p95"),
        "ttft_p95_s": op.get("ttft_p95"),
        "itl_p95_s": op.get("itl_p95"),
        "itl_c1_s": (c1.get("itl_mean") or c1.get("itl_p50")) if c1 else None,
        "peak_gpu_memory_bytes": mem,
        "notes": notes,
        "_key": _key(workload),
        "_time": _get(record, "time") or bench.get("started_at") or 0.0,
    }


def compare_runs(records: Iterable[object]) -> list[ComparisonRow]:
    """Rows for every record (RunRecord or its JSON dict) that carries a bench result."""
    drafts = [d for d in (_draft(r) for r in records) if d is not None]
    if not drafts:
        return []
    singles = [d for d in drafts if d["tp"] == 1 and d["pp"] == 1]
    baseline = min(singles or drafts, key=lambda d: d["_time"])
    if not singles:
        baseline["notes"].append("no single-GPU (TP=1, PP=1) run benched: ratios are to this row")
    rest = sorted(
        (d for d in drafts if d is not baseline),
        key=lambda d: (d["gpus"] or 0, d["tp"] or 0, d["pp"] or 0, d["_time"]),
    )
    rows = []
    for d in [baseline, *rest]:
        diffs = [k for k in _DIFF_WORDS if d["_key"][k] != baseline["_key"][k]]
        comparable = not diffs
        ratio = None
        base_thr = baseline["peak_tok_s"]
        if not (set(diffs) & _RATIO_BREAKERS) and d["peak_tok_s"] is not None and base_thr:
            ratio = d["peak_tok_s"] / base_thr
        notes = list(d["notes"])
        if diffs:
            why = ", ".join(_DIFF_WORDS[k] for k in diffs)
            notes.insert(0, f"not comparable to the baseline: {why}")
        fields = {k: v for k, v in d.items() if not k.startswith("_") and k != "notes"}
        rows.append(
            ComparisonRow(
                **fields,
                ratio=ratio,
                is_baseline=d is baseline,
                comparable=comparable,
                notes=tuple(notes),
            )
        )
    return rows


COMPARISON_HEADERS = (
    "configuration",
    "GPUs",
    "peak tok/s",
    "vs base",
    "knee",
    "e2e p95",
    "TTFT p95",
    "ITL p95",
    "ITL@1",
    "memory peak",
    "notes",
)


def comparison_cells(rows: Sequence[ComparisonRow]) -> list[list[str]]:
    out = []
    for r in rows:
        ratio = "baseline" if r.is_baseline else (f"{r.ratio:.2f}x" if r.ratio is not None else NA)
        out.append(
            [
                r.configuration + (f" ({r.topology})" if r.topology else ""),
                str(r.gpus) if r.gpus is not None else NA,
                fmt(r.peak_tok_s, "rate0"),
                ratio,
                str(r.knee_concurrency) if r.knee_concurrency is not None else NA,
                fmt(r.e2e_p95_s, "s"),
                fmt(r.ttft_p95_s, "ms"),
                fmt(r.itl_p95_s, "ms"),
                fmt(r.itl_c1_s, "ms"),
                fmt(r.peak_gpu_memory_bytes, "gib"),
                "; ".join(r.notes),
            ]
        )
    return out


def render_comparison(rows: Sequence[ComparisonRow]) -> str:
    """A plain-text table (for `headroom runs` or `headroom bench --compare`)."""
    if not rows:
        return "no benched runs in the journal (run `headroom bench URL --journal`)"
    cells = comparison_cells(rows)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(COMPARISON_HEADERS)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(COMPARISON_HEADERS, widths, strict=True))]
    for row in cells:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return "\n".join(lines)


def comparison_markdown(rows: Sequence[ComparisonRow]) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(COMPARISON_HEADERS) + " |", "|" + "---|" * len(COMPARISON_HEADERS)]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in comparison_cells(rows)]
    return "\n".join(lines) + "\n"


def comparison_to_json(rows: Sequence[ComparisonRow]) -> list[dict]:
    from dataclasses import asdict

    return [{**asdict(r), "notes": list(r.notes)} for r in rows]
