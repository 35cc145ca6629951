"""The vLLM log reader: classify lines as they arrive and sum a start-up up into facts.

`classify_line` (in vllm_log_patterns) says what one line means; `LogDigest` is fed lines
one at a time (from a file follower, a pipe, a container's log) and keeps what the doctor
and the TUI need: the recognised events, a bounded tail of every line (normalised: see
vllm_log_normalize), and `facts()`, the start-up summary (version, weights, KV memory and
tokens, concurrency, the failure that most likely explains a crash first). A message that a
terminal or a paste wrapped over several lines is read whole (vllm_log_wrap).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from headroom.probes.memory_ledger import LedgerBuilder, MemoryLedger
from headroom.probes.vllm_log_patterns import (
    KINDS,
    LogEvent,
    classify_line,
    classify_normalized,
    normalize_line,
)
from headroom.probes.vllm_log_wrap import Paragraph

__all__ = [
    "KINDS",
    "LogDigest",
    "LogEvent",
    "MemoryLedger",
    "StartupFacts",
    "classify_line",
    "digest_lines",
    "digest_text",
]

# Root causes first, then their echoes: a crash log shows the specific error, then a
# generic exception line, "EngineCore failed to start", worker death and tracebacks.
_FAILURE_RANK = {
    kind: rank
    for rank, kind in enumerate(
        [
            "unrecognized_arguments", "heads_not_divisible", "kv_heads_not_divisible",
            "world_size_too_large", "ray_placement_failed", "pp_unsupported",
            "pp_layers_not_divisible", "batched_tokens_too_small", "quantization_mismatch",
            "model_unsupported",
            "dtype_unsupported", "kv_cache_dtype_unsupported", "quantization_unsupported",
            "free_memory_below_utilization", "memory_profiling_error", "max_seq_len_exceeds_kv",
            "no_cache_memory", "host_oom", "cuda_oom", "shm_full", "nccl_error", "gloo_error",
            "graph_capture_failed", "cuda_illegal_memory", "watchdog_timeout", "config_error",
            "environment_problem", "exception",
            "engine_core_failed", "engine_dead", "worker_died", "worker_exception", "traceback",
        ]
    )
}  # fmt: skip


_START_KINDS = ("version", "non_default_args")
# A logging system's timestamp at the start of a raw line ("2024-06-25 16:32:00,563 ...",
# xorbitsai/inference#1715): the line is a record of its own, never a wrap's continuation.
# Where a vLLM record starts in the middle of a line: whitespace, then the logger's prefix
# ("(EngineCore_DP0 pid=1) ERROR 09-28 15:47:24 [core.py:718] ", V0's "INFO 08-07 07:36:04
# gpu_executor.py:103] "): a paste that lost its newlines (a comment without a code fence,
# a log viewer's copy), as vllm-project/vllm#13067 and opea-project/GenAIExamples#2068 show.
_RECORD_HEAD = (
    r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
    r"\[?[\w./-]+\.py:\d+\[?\] "
)
_GLUED = re.compile(r"(?<=\S)\s+(?=`?(?:\([^()]{1,60}? pid=\d+\) )?" + _RECORD_HEAD + ")")
# a process tag alone: the level after it was that record's own, not a glued one
_TAG_ONLY = re.compile(r"\s*`?\([^()]{1,60}? pid=\d+\)\s*")
_STAMPED = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d")
_MAX_LEDGERS = 16


@dataclass(frozen=True)
class StartupFacts:
    """What a vLLM start-up log says about the server, None where the log does not say."""

    vllm_version: str | None = None
    model: str | None = None
    non_default_args: Mapping[str, object] = field(default_factory=dict)
    max_model_len: int | None = None
    weights_gib: float | None = None
    kv_available_gib: float | None = None  # profiled budget, or the size reserved by flag/env
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens: int | None = None  # the per-request length the concurrency is for
    cuda_graph_gib: float | None = None
    ready: bool = False  # uvicorn said "Application startup complete"
    engine_dead: bool = False  # the engine died (at start-up or later)
    failures: tuple[LogEvent, ...] = ()  # error events, deduplicated, most likely cause first
    # Added beyond the contract:
    device: str | None = None  # "GPU", "CPU", ... from the KV cache size line
    server_url: str | None = None  # from "Starting vLLM server on ..."
    tensor_parallel_size: int | None = None  # from the engine config line
    pipeline_parallel_size: int | None = None  # from the engine config line (0.5+)
    last_stats: Mapping[str, object] | None = None  # fields of the latest periodic stats line
    warnings: tuple[LogEvent, ...] = ()  # warning events, deduplicated, in order
    shut_down: bool = False  # the server logged a (graceful) shutdown
    # NCCL transports seen (NCCL_DEBUG=INFO): p2p, shm, net_socket, net_ib
    nccl_paths: tuple[str, ...] = ()
    # Every memory number of the latest start, whatever line gave it (probes/memory_ledger)
    ledger: MemoryLedger = field(default_factory=MemoryLedger)


class LogDigest:
    """Incremental reader of one vLLM run's log: `feed()` each line as it arrives.

    Memory is bounded: `lines` keeps the last `max_lines` raw lines, `events` the recognised
    ones (when over `max_events`, the oldest info events such as stats lines are dropped
    first; warnings and errors are kept).
    """

    def __init__(self, *, max_lines: int = 5000, max_events: int = 5000) -> None:
        self.events: list[LogEvent] = []
        self.lines: deque[str] = deque(maxlen=max_lines)
        self.line_count = 0
        self._max_events = max_events
        self._facts: dict[str, object] = {}
        self._seen_failures: dict[tuple, LogEvent] = {}
        self._seen_warnings: dict[tuple, LogEvent] = {}
        self._ledgers: list[LedgerBuilder] = [LedgerBuilder()]
        self._ledger_has_memory = False
        self._paragraph = Paragraph(classify_normalized)
        self._from_source: LogEvent | None = None

    def feed(self, line: str) -> LogEvent | None:
        """Read one line (a trailing newline is fine); returns its event, if any. A line that
        holds several of vLLM's records (a paste whose newlines were lost) is read record by
        record; the last event found is returned."""
        self.line_count += 1  # a line of the file, as an editor numbers them
        if line.count("] ") > 1 and _GLUED.search(line, 1) is not None:
            records: list[str] = []
            for piece in _GLUED.split(line):
                if records and _TAG_ONLY.fullmatch(records[-1]):
                    records[-1] += " " + piece
                else:
                    records.append(piece)
            if len(records) > 1:
                found = None
                for record in records:
                    found = self._feed_one(record) or found
                return found
        return self._feed_one(line)

    def _feed_one(self, line: str) -> LogEvent | None:
        clean = normalize_line(line)
        self.lines.append(clean)
        event = classify_normalized(clean, self.line_count)
        stamped = line[:1].isdigit() and _STAMPED.match(line) is not None
        joined = self._paragraph.add(clean, self.line_count, event, record=stamped)
        if joined is None:
            return None if event is None else self._record_one(event)
        # The line continues a wrapped message and the whole says more than its parts: the
        # whole replaces what the start alone gave, and this line's own reading when that is
        # the same failure or only "some exception".
        replaced = joined.replaces
        if replaced is not None and replaced.kind in (
            joined.event.kind,
            "exception",
            "config_error",
        ):
            self._retract(replaced)
        if event is not None and event.kind not in (joined.event.kind, "exception", "traceback"):
            self._record_one(event)
        self._paragraph.event = joined.event
        return self._record_one(joined.event)

    def _record_one(self, event: LogEvent) -> LogEvent:
        # A raise statement's literal stands for its error until the error's own line comes
        source = self._from_source
        if event.from_source:
            self._from_source = event
        elif source is not None and event.kind == source.kind:
            self._retract(source)
            self._from_source = None
        self._record(event)
        if event.kind == "kv_cache_tokens" and "concurrency" in event.fields:
            # 0.32+ says both on one line; give consumers the max_concurrency event too.
            self._record(LogEvent("max_concurrency", "info", event.line, {
                "per_request_tokens": event.fields.get("per_request_tokens"),
                "concurrency": event.fields["concurrency"]}, event.lineno))  # fmt: skip
        return event

    def _retract(self, event: LogEvent) -> None:
        """Forget an event a longer reading of the same message replaces."""
        for i in range(len(self.events) - 1, max(-1, len(self.events) - 8), -1):
            if self.events[i] is event:
                del self.events[i]
                break
        for seen in (self._seen_failures, self._seen_warnings):
            key = _identity(event)
            if seen.get(key) is event:
                del seen[key]

    def feed_many(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.feed(line)

    def _record(self, event: LogEvent) -> None:
        self.events.append(event)
        if len(self.events) > self._max_events:
            self._trim()
        self._update_facts(event)
        self._update_ledger(event)

    def _update_ledger(self, event: LogEvent) -> None:
        # A new start (the version banner or the flags line) after memory numbers were read
        # opens a new ledger: one per start, the latest one in facts().
        if event.kind in _START_KINDS:
            if self._ledger_has_memory:
                self._ledgers.append(LedgerBuilder())
                del self._ledgers[:-_MAX_LEDGERS]
                self._ledger_has_memory = False
        elif event.kind not in ("max_model_len", "stats"):
            self._ledger_has_memory = True
        self._ledgers[-1].update(event)

    def ledgers(self) -> tuple[MemoryLedger, ...]:
        """One memory ledger per start seen (the last few), oldest first."""
        return tuple(b.ledger() for b in self._ledgers if b.has_numbers)

    def _trim(self) -> None:
        keep_info = self._max_events // 2
        infos = [i for i, e in enumerate(self.events) if e.severity == "info"]
        drop = set(infos[: max(0, len(infos) - keep_info)])
        if not drop:  # only warnings and errors: keep the newest
            drop = set(range(len(self.events) - self._max_events))
        self.events = [e for i, e in enumerate(self.events) if i not in drop]

    def _update_facts(self, event: LogEvent) -> None:
        f, kind, facts = event.fields, event.kind, self._facts
        if kind == "version":
            _set(facts, "vllm_version", f.get("version"))
            _set(facts, "model", f.get("model"), keep=True)
            _set(facts, "tensor_parallel_size", f.get("tensor_parallel_size"))
            _set(facts, "pipeline_parallel_size", f.get("pipeline_parallel_size"))
            _set(facts, "max_model_len", f.get("max_seq_len"), keep=True)
        elif kind == "model":
            _set(facts, "model", f.get("model"))
        elif kind == "non_default_args":
            args = f.get("args")
            facts["non_default_args"] = dict(args) if isinstance(args, Mapping) else {}
            if isinstance(args, Mapping):
                _set(facts, "model", args.get("model"), keep=True)
        elif kind == "max_model_len":
            _set(facts, "max_model_len", f.get("max_model_len") or f.get("full"))
        elif kind == "long_context_warning":  # V0 names the derived length it warns about
            _set(facts, "max_model_len", f.get("context_length"), keep=True)
        elif kind == "weights_loaded":
            _set(facts, "weights_gib", f.get("weights_gib"))
        elif kind in ("kv_memory_available", "kv_memory_reserved"):
            _set(facts, "kv_available_gib", f.get("kv_gib"))
        elif kind == "kv_cache_tokens":
            _set(facts, "kv_cache_tokens", f.get("tokens"))
            _set(facts, "device", f.get("device"))
        elif kind == "max_concurrency":
            _set(facts, "max_concurrency", f.get("concurrency"))
            _set(facts, "max_concurrency_tokens", f.get("per_request_tokens"))
        elif kind == "cuda_graph_memory":
            _set(facts, "cuda_graph_gib", f.get("graph_gib"))
            _set(facts, "cuda_graph_gib", f.get("estimated_gib"), keep=True)
        elif kind == "memory_summary":
            _set(facts, "cuda_graph_gib", f.get("graph_gib"))
            _set(facts, "kv_available_gib", f.get("kv_gib"), keep=True)
            _set(facts, "weights_gib", f.get("weights_gib"), keep=True)
        elif kind == "server_starting":
            _set(facts, "server_url", f.get("url"))
        elif kind == "startup_complete":
            facts["ready"] = True
        elif kind == "shutdown":
            facts["shut_down"] = True
        elif kind == "stats":
            facts["last_stats"] = dict(f)
        elif kind in ("engine_dead", "engine_core_failed"):
            facts["engine_dead"] = True
        elif kind == "nccl_transport":
            paths = facts.setdefault("nccl_paths", ())
            if f.get("path") not in paths:  # type: ignore[operator]
                facts["nccl_paths"] = (*paths, f.get("path"))  # type: ignore[misc]
        if event.severity == "error":
            self._seen_failures.setdefault(_identity(event), event)
        elif event.severity == "warning":
            self._seen_warnings.setdefault(_identity(event), event)

    def facts(self) -> StartupFacts:
        """The start-up summary so far (call any time; cheap)."""
        failures = sorted(
            self._seen_failures.values(),
            key=lambda e: (_FAILURE_RANK.get(e.kind, len(_FAILURE_RANK) - 2), e.lineno or 0),
        )
        return StartupFacts(
            **self._facts,  # type: ignore[arg-type]
            failures=tuple(failures),
            warnings=tuple(self._seen_warnings.values()),
            ledger=self._ledgers[-1].ledger(),
        )

    def of_kind(self, *kinds: str) -> list[LogEvent]:
        """The recorded events of these kinds, in order."""
        return [e for e in self.events if e.kind in kinds]


def _set(facts: dict[str, object], key: str, value: object, *, keep: bool = False) -> None:
    """Store a fact; `keep` only fills it when nothing better was read before."""
    if value is None or (keep and facts.get(key) is not None):
        return
    facts[key] = value


def _identity(event: LogEvent) -> tuple:
    """Same kind and same numbers = the same failure (vLLM prints a root cause up to 3 times)."""
    message = event.fields.get("message")
    items = tuple(sorted((k, repr(v)) for k, v in event.fields.items() if k != "message"))
    return (event.kind, items, message if isinstance(message, str) else None)


def digest_lines(lines: Iterable[str]) -> LogDigest:
    digest = LogDigest()
    digest.feed_many(lines)
    return digest


def digest_text(text: str) -> LogDigest:
    """Read a whole log at once (a file, a paste, a captured output)."""
    return digest_lines(text.splitlines())
