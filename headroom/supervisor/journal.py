"""The run journal: one JSON line per vLLM run, under the data dir (runs.jsonl).

Writes survive a kill -9 of Headroom at any instant:
- append() is one os.write() of a whole line on an O_APPEND descriptor, then fsync; a line
  torn by a crash can only be the last one, and the next append starts on a fresh line.
- update() rewrites the file to a temporary sibling, fsyncs it and renames it over the
  journal, so a reader sees the old file or the new one, never a half.
Both take an flock on a lock file so two Headroom processes do not lose each other's lines.
A line that does not parse is skipped with a warning, never fatal.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import secrets
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from headroom.probes.untrusted_json import loads_bounded, typed_fields
from headroom.supervisor.paths import journal_path, private_dir

MAX_LINE_BYTES = 8 << 20  # a run with findings and a bench is ~10 KB


class JournalWarning(UserWarning):
    """A journal line was skipped (corrupt or not an object)."""


@dataclass
class RunRecord:
    """One run of vLLM, as the journal keeps it.

    summary keys: throughput_tok_s, ttft_p95_s, itl_p95_s, peak_gpu_memory_bytes,
    preemptions (each None when never measured). bench is filled by `headroom bench`.
    outcome: "running" | "ready" | "stopped" | "failed" | "crashed" | "detached" | "rolled_back".
    """

    run_id: str = field(default_factory=lambda: new_run_id())
    time: float = field(default_factory=time.time)
    vllm_version: str | None = None
    model: str | None = None
    model_shape: dict | None = None
    command: list[str] = field(default_factory=list)  # redacted, full argv as launched
    flags: list[str] = field(default_factory=list)  # redacted vLLM flag tokens only
    launcher: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # the env that matters, redacted
    gpus: list[dict] = field(default_factory=list)
    topology: str | None = None
    port: int | None = None
    log_path: str | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    time_to_ready_s: float | None = None
    outcome: str = "running"
    reason: str | None = None  # why it failed or ended
    trigger: str | None = None  # why it was started: restart, rollback, auto-fix N/M, crash restart
    parent_run_id: str | None = None
    changes: dict | None = None  # knob changes relative to the parent run
    findings: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    bench: dict | None = None
    notes: str | None = None
    ended_at: float | None = None
    extra: dict = field(default_factory=dict)  # unknown keys read back, kept on rewrite

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        extra = data.pop("extra")
        return {**extra, **data}

    @classmethod
    def from_json(cls, data: Mapping) -> RunRecord:
        """A record from a journal line; a field of the wrong type reads as its default."""
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known, _problems = typed_fields(data, _FIELD_KINDS, {**_defaults(), "time": 0.0})
        # A field added later and not yet listed in _FIELD_KINDS is passed on as it is.
        known.update({k: v for k, v in data.items() if k in names and k not in _FIELD_KINDS})
        for name in ("time", "ended_at", "time_to_ready_s", "max_concurrency"):
            value = known.get(name)
            if isinstance(value, int | float) and not 0 <= value <= _MAX_SECONDS:
                known[name] = None if name != "time" else 0.0  # 1e18 s is no date
        known["summary"] = _numbers_only(known.get("summary"))
        extra = {k: v for k, v in data.items() if k not in names}
        return cls(**known, extra=extra)


_FIELD_KINDS = {
    "run_id": "str",
    "time": "float",
    "vllm_version": "str?",
    "model": "str?",
    "model_shape": "dict?",
    "command": "list[str]",
    "flags": "list[str]",
    "launcher": "str?",
    "env": "dict[str,str]",
    "gpus": "list[dict]",
    "topology": "str?",
    "port": "int?",
    "log_path": "str?",
    "kv_cache_tokens": "int?",
    "max_concurrency": "float?",
    "time_to_ready_s": "float?",
    "outcome": "str",
    "reason": "str?",
    "trigger": "str?",
    "parent_run_id": "str?",
    "changes": "dict?",
    "findings": "list[dict]",
    "summary": "dict",
    "bench": "dict?",
    "notes": "str?",
    "ended_at": "float?",
}
_MAX_SECONDS = 1e11  # year ~5000: past it a time cannot be shown as a date


def _defaults() -> dict[str, object]:
    out: dict[str, object] = {}
    for f in dataclasses.fields(RunRecord):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def _numbers_only(summary: object) -> dict:
    """summary values are measurements: a string or list where a number belongs is dropped."""
    if not isinstance(summary, dict):
        return {}
    return {
        k: v
        for k, v in summary.items()
        if v is None or (isinstance(v, int | float) and not isinstance(v, bool))
    }


def new_run_id() -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime())
    return f"{stamp}-{secrets.token_hex(3)}"


class Journal:
    """The JSON Lines journal; path defaults to the data dir's runs.jsonl."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path is not None else journal_path()
        self.skipped: list[str] = []  # why lines were skipped on the last read

    @property
    def _lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        private_dir(self.path.parent)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def append(self, record: RunRecord) -> None:
        line = json.dumps(record.to_json(), separators=(",", ":"), default=str) + "\n"
        with self._locked():
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                data = line.encode("utf-8")
                if not _ends_with_newline(fd):
                    data = b"\n" + data  # a previous writer died mid-line: isolate its tail
                _write_all(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)

    def records(self) -> list[RunRecord]:
        out: list[RunRecord] = []
        self.skipped = []
        try:
            fh = open(self.path, "rb")  # noqa: SIM115 - closed by the with below
        except FileNotFoundError:
            return out
        with fh:
            for lineno, line in _bounded_lines(fh):
                if line is not None and not line.strip():
                    continue
                try:
                    if line is None:
                        raise ValueError(f"longer than {MAX_LINE_BYTES:,} bytes")
                    # Bounded: one hostile line (deep nesting, 300-digit numbers) is skipped
                    # instead of stopping `headroom runs` or keeping `serve` from being ready.
                    data = loads_bounded(line, max_bytes=MAX_LINE_BYTES, what="the line")
                    if not isinstance(data, dict):
                        raise ValueError("not a JSON object")
                    out.append(RunRecord.from_json(data))
                except (ValueError, TypeError, RecursionError, OverflowError) as exc:
                    why = f"{self.path}:{lineno}: skipped a corrupt journal line ({exc})"
                    self.skipped.append(why)
                    warnings.warn(why, JournalWarning, stacklevel=2)
        return out

    def get(self, run_id: str) -> RunRecord | None:
        for record in self.records():
            if record.run_id == run_id:
                return record
        return None

    def update(self, run_id: str, **fields: object) -> RunRecord | None:
        """Change fields of one record (atomically, by rewrite); None if it is not there."""
        names = {f.name for f in dataclasses.fields(RunRecord)}
        with self._locked(), warnings.catch_warnings():
            warnings.simplefilter("ignore", JournalWarning)
            records = self.records()
            found: RunRecord | None = None
            for record in records:
                if record.run_id == run_id:
                    for key, value in fields.items():
                        if key in names and key != "extra":
                            setattr(record, key, value)
                        else:
                            record.extra[key] = value
                    found = record
            if found is None:
                return None
            self._rewrite(records)
            return found

    def _rewrite(self, records: list[RunRecord]) -> None:
        # Rewrites happen under the lock, so any temporary file here is a killed writer's.
        for stale in self.path.parent.glob(f".{self.path.name}.*.tmp"):
            try:
                stale.unlink()
            except OSError:
                pass
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        body = "".join(
            json.dumps(r.to_json(), separators=(",", ":"), default=str) + "\n" for r in records
        )
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            _write_all(fd, body.encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        _fsync_dir(self.path.parent)


def _bounded_lines(fh: BinaryIO) -> Iterator[tuple[int, bytes | None]]:
    """(line number, line) of a journal; None for a line over MAX_LINE_BYTES, which is
    skipped without ever being held whole (a hostile multi-gigabyte line)."""
    lineno = 0
    while True:
        line = fh.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        lineno += 1
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = fh.readline(1 << 20)
            yield lineno, None
            continue
        yield lineno, line.rstrip(b"\n")


def _ends_with_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    if size == 0:
        return True
    return os.pread(fd, 1, size - 1) == b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; the rename is still atomic
    finally:
        os.close(fd)
