"""Classify vLLM log lines for the Logs screen, with the log reader's `classify_line`, and a
plain severity guess for the lines the reader does not know."""

from __future__ import annotations

import re
from typing import NamedTuple

from headroom.probes.vllm_log import classify_line

# vLLM lines look like "(EngineCore pid=1) ERROR 11-29 11:26:25 [file.py:1] message".
_LEVEL = re.compile(r"\b(ERROR|CRITICAL|WARNING|INFO|DEBUG)\b")
STARTUP_KINDS = frozenset(
    {
        "version",
        "non_default_args",
        "max_model_len",
        "weights_loaded",
        "kv_memory_available",
        "kv_memory_reserved",
        "kv_cache_tokens",
        "max_concurrency",
        "cuda_graph_memory",
        "memory_summary",
        "server_starting",
        "startup_complete",
    }
)
NCCL_KINDS = frozenset(
    {"nccl_error", "nccl_warn", "shm_full", "watchdog_timeout", "custom_allreduce_disabled"}
)
_NCCL_WORDS = re.compile(r"NCCL|nccl|pynccl|all.?reduce|/dev/shm", re.I)
# uvicorn access lines for what Headroom itself polls (metrics scrape, supervisor health
# check, the doctor's version read): one or two a second, they would bury everything else.
# Other access lines (completions, ...) are kept, and so is a poll that failed (not 2xx).
_OWN_POLL = re.compile(r'"GET /(?:metrics|health|version)/?(?:\?\S*)? HTTP/[\d.]+" 2\d\d')


class LogEntry(NamedTuple):
    """One log line and what it means; kind None = a line the reader does not know."""

    lineno: int
    line: str
    kind: str | None
    severity: str  # info | warning | error
    own_poll: bool = False  # an access line of Headroom's own polling (hidden by default)


def classify(line: str, lineno: int) -> LogEntry:
    kind: str | None = None
    severity: str | None = None
    try:
        event = classify_line(line, lineno)
    except Exception:  # the reader's bug must not cost the user the line
        event = None
    if event is not None:
        kind, severity = event.kind, event.severity
    if severity is None:
        match = _LEVEL.search(line[:120])
        level = match.group(1) if match else ""
        severity = {"ERROR": "error", "CRITICAL": "error", "WARNING": "warning"}.get(level, "info")
        if line.startswith("Traceback") or re.match(r"^\w+(Error|Exception):", line):
            severity = "error"
    own_poll = kind is None and severity == "info" and bool(_OWN_POLL.search(line))
    return LogEntry(lineno, line, kind, severity, own_poll)


def matches_filter(entry: LogEntry, name: str) -> bool:
    if name == "errors":
        return entry.severity in {"error", "warning"}
    if name == "startup":
        return entry.kind in STARTUP_KINDS or (entry.severity == "error" and entry.kind is not None)
    if name == "nccl":
        return entry.kind in NCCL_KINDS or bool(_NCCL_WORDS.search(entry.line))
    return True
