"""Configurations side by side: the one comparison table behind `headroom runs` and
`headroom bench --compare`.

One row per journaled run. A benched run is measured at its bench: peak output throughput and
its ratio to the single-GPU baseline, the knee, latency at the operating point (the knee
step, else the peak-throughput step), ITL at concurrency 1 (where TP's all-reduce cost shows
most plainly) and peak GPU memory. A run without a bench (`headroom runs` lists those too)
shows what the supervisor measured while it served live traffic; that traffic is unknown, so
it gets no ratio. The baseline (TP=1, PP=1, the earliest such benched run) comes first, the
other benched runs follow by GPU count, then the unbenched ones by time.
Runs are comparable only when model, request distribution, ramp and step hold match the
baseline's; when they do not, the row says why, and no ratio is given when the model or
distribution differ, because that ratio would mean nothing.
The rows as text, Markdown, JSON and CSV: compare_table.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from headroom.vllm_cmd import parse_command


@dataclass(frozen=True)
class ComparisonRow:
    """One configuration, with figures relative to the baseline."""

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
    benched: bool = True  # False: figures from live traffic, seen by the supervisor
    outcome: str | None = None
    started: float | None = None  # the run's start (epoch seconds)
    gpu_names: str | None = None  # "2x H100 80GB HBM3"
    flags_that_differ: tuple[str, ...] = ()  # flags (and env) not the same in every row


def _get(record: object, name: str):
    if isinstance(record, Mapping):
        return record.get(name)
    return getattr(record, name, None)


def _num(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number == number and abs(number) != float("inf") else None


def _mapping(value: object) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def _int(value: object) -> int | None:
    number = _num(value)
    return int(number) if number is not None else None


# Engine args that say nothing about the configuration under comparison.
_NOISE = {"port", "host", "api_key", "served_model_name", "model", "tensor_parallel_size"}
_NOISE |= {"pipeline_parallel_size", "disable_log_requests", "uvicorn_log_level"}


def _parse(flags: Sequence[str] | None, command: Sequence[str] | None):
    """(TP, PP, other engine args) from the journaled flags, else the full command;
    (None, None, {}) when the run has neither (a server Headroom did not start)."""
    argv = list(flags) if flags else list(command) if command else None
    if argv is None:
        return None, None, {}
    try:
        cmd = parse_command([str(t) for t in argv])
        tp = cmd.get("tensor_parallel_size", 1)
        pp = cmd.get("pipeline_parallel_size", 1)
        args = {k: v for k, v in cmd.engine_args().items() if k not in _NOISE}
        return _whole(tp), _whole(pp), args
    except (ValueError, TypeError):
        return None, None, {}


def _whole(value: object) -> int:
    """A parallel size from the command line (absent = 1); TypeError when it is not a number."""
    if value is None:
        return 1
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"not a size: {value!r}")


def _configuration(tp: int | None, pp: int | None, label: str | None) -> str:
    if label:
        return str(label)
    if tp is None:
        return "unknown configuration"
    return f"TP={tp}" if pp in (None, 1) else f"TP={tp} PP={pp}"


def _key(workload: Mapping) -> dict[str, object]:
    dist = workload.get("distribution") or {}
    dist = dist if isinstance(dist, Mapping) else {"name": str(dist)}
    ramp = workload.get("ramp")
    return {
        "model": workload.get("model"),
        # Clamping to a smaller max_model_len changes the traffic, so it is part of the key.
        "distribution": (
            dist.get("fingerprint") or dist.get("name"),
            dist.get("clamped_to_tokens"),
        ),
        "ramp": tuple(ramp) if isinstance(ramp, list | tuple) else ramp,
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
# vLLM's log-line prefix: "(EngineCore pid=1) ERROR 11-29 12:55:37 [core.py:1510] "
_LOG_PREFIX = re.compile(
    r"^(\(\w+ pid=\d+\) )?(ERROR|WARNING|INFO|DEBUG) [\d-]+ [\d:]+ \[[^\]]*\] "
)


def _operating_step(steps: Sequence[Mapping], knee: Mapping) -> Mapping | None:
    if not steps:
        return None
    idx = knee.get("step")
    if isinstance(idx, int) and 0 <= idx < len(steps):
        return steps[idx]
    with_thr = [s for s in steps if _num(s.get("output_tokens_per_s")) is not None]
    return max(with_thr, key=lambda s: s["output_tokens_per_s"]) if with_thr else steps[-1]


def _gpu_names(gpus: object) -> str | None:
    if not isinstance(gpus, list) or not gpus:
        return None
    names = [str(g.get("name") or "GPU") if isinstance(g, Mapping) else "GPU" for g in gpus]
    names = [n.removeprefix("NVIDIA ") for n in names]
    return f"{len(names)}x {names[0]}" if len(set(names)) == 1 else ", ".join(names)


def _run_notes(record: object) -> list[str]:
    """Why the run started and ended, what changed, the doctor's first finding."""
    notes = [str(_get(record, "notes") or "")]
    if _get(record, "trigger"):
        notes.append(str(_get(record, "trigger")))
    if _get(record, "reason"):
        notes.append(_LOG_PREFIX.sub("", str(_get(record, "reason"))))
    changes = _get(record, "changes")
    if isinstance(changes, Mapping) and changes:
        notes.append("changed " + ", ".join(f"{k}={v}" for k, v in changes.items()))
    findings = _get(record, "findings")
    if isinstance(findings, list) and findings:
        first = findings[0]
        title = first.get("title", first) if isinstance(first, Mapping) else first
        notes.append(f"doctor: {title}")
    return [n for n in notes if n]


def _draft(record: object) -> dict:
    bench = _mapping(_get(record, "bench"))
    steps = [s for s in bench.get("steps") or () if isinstance(s, Mapping)]
    workload = _mapping(bench.get("workload"))
    knee = _mapping(bench.get("knee"))
    summary = _mapping(_get(record, "summary"))
    tp, pp, args = _parse(_get(record, "flags"), _get(record, "command"))
    env = _get(record, "env")
    if isinstance(env, Mapping):
        args.update({f"env {k}": v for k, v in env.items() if k != "PYTHONUNBUFFERED"})
    gpus = _get(record, "gpus")
    notes = []
    if steps:
        thr = [t for t in (_num(s.get("output_tokens_per_s")) for s in steps) if t is not None]
        mems = [m for m in (_int(s.get("gpu_memory_peak_bytes")) for s in steps) if m is not None]
        op = _operating_step(steps, knee) or {}
        c1 = next((s for s in steps if s.get("concurrency") == 1), None)
        figures = {
            "peak_tok_s": max(thr) if thr else None,
            "knee_concurrency": _int(knee.get("concurrency")),
            "operating_concurrency": _int(op.get("concurrency")),
            "e2e_p95_s": _num(op.get("e2e_p95")),
            "ttft_p95_s": _num(op.get("ttft_p95")),
            "itl_p95_s": _num(op.get("itl_p95")),
            "itl_c1_s": _num(c1.get("itl_mean") or c1.get("itl_p50")) if c1 else None,
            "peak_gpu_memory_bytes": max(mems) if mems else None,
        }
        if bench.get("stopped_reason"):
            notes.append(f"stopped early: {bench['stopped_reason']}")
    else:
        figures = {
            "peak_tok_s": _num(summary.get("throughput_tok_s")),
            "e2e_p95_s": _num(summary.get("e2e_p95_s")),
            "ttft_p95_s": _num(summary.get("ttft_p95_s")),
            "itl_p95_s": _num(summary.get("itl_p95_s")),
        }
    if figures.get("peak_gpu_memory_bytes") is None:
        figures["peak_gpu_memory_bytes"] = _int(summary.get("peak_gpu_memory_bytes"))
    topology = _get(record, "topology")
    return {
        **figures,
        "run_id": str(_get(record, "run_id")) if _get(record, "run_id") is not None else None,
        "configuration": _configuration(tp, pp, workload.get("label")),
        "tp": tp,
        "pp": pp,
        "gpus": len(gpus) if isinstance(gpus, list) and gpus else (tp * pp if tp and pp else None),
        "gpu_names": _gpu_names(gpus),
        "topology": str(topology) if topology else None,
        "model": str(workload.get("model") or _get(record, "model") or "") or None,
        "outcome": str(_get(record, "outcome")) if _get(record, "outcome") else None,
        "started": _num(_get(record, "time")),
        "benched": bool(steps),
        "notes": notes + _run_notes(record),
        "_args": args,
        "_key": _key(workload),
        "_time": _num(_get(record, "time")) or _num(bench.get("started_at")) or 0.0,
    }


def _unreadable(record: object) -> dict:
    run_id = _get(record, "run_id")
    return {
        "run_id": str(run_id) if run_id is not None else None,
        "configuration": "unknown configuration",
        "model": str(_get(record, "model")) if _get(record, "model") else None,
        "benched": False,
        "notes": ["unreadable record (written by another Headroom version?)"],
        "_args": {},
        "_key": {},
        "_time": 0.0,
    }


def _flag_text(name: str, value: object) -> str:
    if name.startswith("env "):
        return f"{name[4:]}={value}"
    flag = "--" + name.replace("_", "-")
    if value is True:
        return flag
    if isinstance(value, Mapping):
        return f"{flag} {json.dumps(value, separators=(',', ':'))}"
    return f"{flag} {value}"


def _differing(drafts: Sequence[dict]) -> None:
    """Give each draft the flags whose value is not the same in every row."""
    known = [d for d in drafts if d["_args"] or d.get("tp") is not None]
    names = sorted({k for d in known for k in d["_args"]})
    varying = [n for n in names if len({repr(d["_args"].get(n)) for d in known}) > 1]
    for d in drafts:
        d["flags_that_differ"] = tuple(
            _flag_text(n, d["_args"][n]) for n in varying if n in d["_args"]
        )


def _safe_draft(record: object) -> dict:
    try:
        return _draft(record)
    except (TypeError, ValueError, AttributeError, KeyError, OverflowError):
        return _unreadable(record)


def compare_runs(records: Iterable[object], *, benched_only: bool = True) -> list[ComparisonRow]:
    """Rows for every record (RunRecord or its JSON dict) that carries a bench result, or for
    every record with benched_only=False (`headroom runs`)."""
    drafts = [_safe_draft(r) for r in records]
    if benched_only:
        drafts = [d for d in drafts if d["benched"]]
    benched = [d for d in drafts if d["benched"]]
    singles = [d for d in benched if d["tp"] == 1 and d["pp"] == 1]
    baseline = min(singles or benched, key=lambda d: d["_time"]) if benched else None
    if baseline is not None and not singles:
        baseline["notes"].insert(
            0, "no single-GPU (TP=1, PP=1) run benched: ratios are to this row"
        )
    others = sorted(
        (d for d in benched if d is not baseline),
        key=lambda d: (d["gpus"] or 0, d["pp"] or 0, d["tp"] or 0, d["_time"]),
    )
    unbenched = sorted((d for d in drafts if not d["benched"]), key=lambda d: d["_time"])
    ordered = ([baseline] if baseline else []) + others + unbenched
    _differing(ordered)
    fields = set(ComparisonRow.__dataclass_fields__)
    rows = []
    for d in ordered:
        notes = list(d["notes"])
        ratio, comparable = None, False
        if d["benched"] and baseline is not None:
            diffs = [k for k in _DIFF_WORDS if d["_key"][k] != baseline["_key"][k]]
            comparable = not diffs
            base_thr = baseline["peak_tok_s"]
            if not (set(diffs) & _RATIO_BREAKERS) and d["peak_tok_s"] is not None and base_thr:
                ratio = d["peak_tok_s"] / base_thr
            if diffs:
                why = ", ".join(_DIFF_WORDS[k] for k in diffs)
                notes.insert(0, f"not comparable to the baseline: {why}")
        elif baseline is not None:
            notes.insert(0, "not benched: figures from live traffic, no ratio")
        values = {k: v for k, v in d.items() if k in fields and k != "notes"}
        values = {k: values.get(k) for k in fields - {"notes", "ratio", "is_baseline"}} | values
        values["comparable"] = comparable
        values.setdefault("flags_that_differ", ())
        values["benched"] = bool(d["benched"])
        rows.append(
            ComparisonRow(**values, ratio=ratio, is_baseline=d is baseline, notes=tuple(notes))
        )
    return rows
