"""The doctor's view of a vLLM log: events (kind, line) and the numbers its rules need.

Events come from engineer 4's classifier (headroom.probes.vllm_log) when it is installed; a
small fallback here recognises only the failure kinds the rules key on, so the doctor still
works on a partial tree. Either way the rules read their numbers from the event's own line
with the patterns below (taken from vLLM's and PyTorch's message formats in
shared/reference/vllm-facts.md section 3), so they do not depend on field names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

GIB_PER = {"GiB": 1.0, "GB": 1.0, "MiB": 1 / 1024, "MB": 1 / 1024, "KiB": 1 / 2**20}


@dataclass(frozen=True)
class Event:
    """Same shape as headroom.probes.vllm_log.LogEvent."""

    kind: str
    severity: str
    line: str
    fields: dict = field(default_factory=dict)
    lineno: int | None = None


# (kind, severity, pattern) for the fallback classifier; first match wins.
_FALLBACK: tuple[tuple[str, str, re.Pattern[str]], ...] = tuple(
    (kind, sev, re.compile(pattern, re.IGNORECASE))
    for kind, sev, pattern in (
        (
            "max_seq_len_exceeds_kv",
            "error",
            r"max seq len \(\d+\).*(KV cache is needed|stored in KV cache)",
        ),
        ("no_cache_memory", "error", r"No available memory for the cache blocks"),
        (
            "free_memory_below_utilization",
            "error",
            r"Free memory on device .* on startup is less than desired GPU memory utilization",
        ),
        ("cuda_oom", "error", r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory"),
        (
            "heads_not_divisible",
            "error",
            r"number of attention heads \(\d+\) must be divisible by tensor parallel size",
        ),
        ("kv_heads_not_divisible", "error", r"AssertionError: \d+ is not divisible by \d+"),
        (
            "world_size_too_large",
            "error",
            r"World size \(\d+\) is larger than the number of available GPUs",
        ),
        ("pp_unsupported", "error", r"Pipeline parallelism is not supported for this model"),
        (
            "shm_full",
            "error",
            r"(/dev/shm|shared memory segment).*(No space left|failed)|posix_fallocate failed.*No space",
        ),
        ("watchdog_timeout", "error", r"Watchdog caught collective operation timeout"),
        ("nccl_error", "error", r"NCCL error"),
        ("custom_allreduce_disabled", "warning", r"Custom ?allreduce is disabled"),
        ("nccl_warn", "warning", r"NCCL WARN"),
        ("unrecognized_arguments", "error", r"unrecognized arguments"),
        (
            "engine_core_failed",
            "error",
            r"EngineCore failed to start|Engine core initialization failed",
        ),
        (
            "engine_dead",
            "error",
            r"EngineCore encountered (a fatal error|an issue)|EngineDeadError",
        ),
        ("worker_died", "error", r"Worker .*died"),
        (
            "weights_loaded",
            "info",
            r"(Model loading took|Loading model weights took) [\d.]+ ?(GiB|GB)",
        ),
        ("kv_memory_available", "info", r"Available KV cache memory: [\d.]+ ?GiB"),
        ("kv_cache_tokens", "info", r"KV cache size: [\d,]+ tokens"),
        ("startup_complete", "info", r"Starting vLLM (API )?server|Application startup complete"),
        ("cuda_graph_memory", "info", r"Graph capturing finished|Estimated CUDA graph memory"),
    )
)


def classify(line: str, lineno: int | None = None) -> Event | None:
    """Engineer 4's classify_line when available, else the fallback patterns above."""
    try:
        from headroom.probes.vllm_log import classify_line
    except ImportError:
        classify_line = None
    if classify_line is not None:
        event = classify_line(line, lineno)
        if event is not None:
            return Event(
                event.kind, event.severity, event.line, dict(event.fields or {}), event.lineno
            )
    for kind, severity, pattern in _FALLBACK:
        if pattern.search(line):
            return Event(kind, severity, line.rstrip("\r\n"), {}, lineno)
    return None


def events_from_text(text: str) -> list[Event]:
    return [e for i, line in enumerate(text.splitlines(), 1) if (e := classify(line, i))]


def events_from_digest(digest) -> list[Event]:
    """Events of a LogDigest (engineer 4), or of anything with an .events list."""
    out: list[Event] = []
    for event in getattr(digest, "events", None) or ():
        out.append(
            Event(
                event.kind,
                event.severity,
                event.line,
                dict(getattr(event, "fields", {}) or {}),
                getattr(event, "lineno", None),
            )
        )
    return out


def lines_of(events: Iterable[Event], *kinds: str) -> list[Event]:
    return [e for e in events if e.kind in kinds]


def _float(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:  # "." or "," alone: a mangled paste
        return None


def gib(value: str, unit: str) -> float | None:
    number = _float(value)
    return None if number is None else number * GIB_PER.get(unit, 1.0)


_NUM = r"([\d.,]+)\s*(GiB|GB|MiB|MB)"


def oom_numbers(line: str) -> dict[str, float]:
    """PyTorch's OOM text: tried to allocate, total capacity, free, this process, processes."""
    out: dict[str, float] = {}
    patterns = {
        "tried_gib": r"Tried to allocate " + _NUM,
        "total_gib": r"total capacity of " + _NUM,
        "free_gib": r"of which " + _NUM + r" is free",
        "this_process_gib": r"this process has " + _NUM,
        "graph_pools_gib": _NUM + r" allocated in private pools",
    }
    for name, pattern in patterns.items():
        match = re.search(pattern, line)
        if match and (value := gib(match.group(1), match.group(2))) is not None:
            out[name] = value
    found = re.findall(r"Process \d+ has " + _NUM + " memory in use", line)
    procs = [g for v, u in found if (g := gib(v, u)) is not None]
    if procs:
        out["process_count"] = float(len(procs))
        out["largest_process_gib"] = max(procs)
    return out


def max_seq_len_numbers(line: str) -> dict[str, float]:
    """V1: max seq len, needed GiB, available GiB, vLLM's estimated maximum model length.
    V0: max seq len and the token capacity of the KV cache."""
    out: dict[str, float] = {}
    match = re.search(r"max seq len \((\d+)\)", line)
    if match:
        out["max_model_len"] = float(match.group(1))
    match = re.search(r"\(?([\d.]+) ?GiB KV cache is needed", line)
    if match and _float(match.group(1)) is not None:
        out["needed_gib"] = _float(match.group(1))
    match = re.search(r"available KV cache memory \(([\d.]+) ?GiB\)", line)
    if match and _float(match.group(1)) is not None:
        out["available_gib"] = _float(match.group(1))
    match = re.search(r"estimated maximum model length is (\d+)", line)
    if match:
        out["estimated_max_len"] = float(match.group(1))
    match = re.search(r"stored in KV cache \((\d+)\)", line)
    if match:
        out["kv_tokens"] = float(match.group(1))
    return out


def free_memory_numbers(line: str) -> dict[str, float]:
    out: dict[str, float] = {}
    match = re.search(
        r"\(([\d.]+)/([\d.]+) GiB\) on startup is less than desired GPU memory utilization \(([\d.]+), ([\d.]+) GiB\)",
        line,
    )
    if match:
        values = [_float(match.group(i)) for i in range(1, 5)]
        if None not in values and values[1]:
            keys = ("free_gib", "total_gib", "utilization", "requested_gib")
            out = dict(zip(keys, values, strict=True))
    return out


def two_ints(line: str, pattern: str) -> tuple[int, int] | None:
    match = re.search(pattern, line)
    return (int(match.group(1)), int(match.group(2))) if match else None


def weights_gib(line: str) -> float | None:
    match = re.search(r"(?:Model loading took|Loading model weights took) ([\d.]+) ?(GiB|GB)", line)
    return _float(match.group(1)) if match else None


def kv_available_gib(line: str) -> float | None:
    match = re.search(r"Available KV cache memory: ([\d.]+) ?GiB", line)
    return _float(match.group(1)) if match else None


def kv_tokens(line: str) -> int | None:
    match = re.search(r"KV cache size: ([\d,]+) tokens", line)
    return int(match.group(1).replace(",", "")) if match else None


def non_default_args(line: str) -> dict | None:
    """The dict printed after "non-default args:" (a Python literal), or None."""
    import ast

    text = line.split("non-default args:", 1)[-1].strip()
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, dict) else None
