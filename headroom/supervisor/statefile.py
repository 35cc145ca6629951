"""The state file of a running server, so `headroom serve` / `headroom attach` can re-adopt it
after an SSH drop. One JSON file per port under the state dir, written atomically.

The command line and environment are stored redacted, like everything else Headroom writes;
the real values a relaunch needs are in the 0600 side file beside it (secret_store.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from headroom.probes.untrusted_json import load_json_file, typed_fields
from headroom.supervisor.paths import private_dir, state_dir


@dataclass(frozen=True)
class ServerRecord:
    """What is needed to find, watch and stop a server Headroom started."""

    pid: int
    pgid: int
    port: int
    url: str
    model: str | None
    argv: list[str]  # redacted
    flags: list[str]  # redacted vLLM flag tokens
    launcher: str
    env: dict[str, str]  # the env that matters, redacted
    log_path: str
    started_at: float  # wall clock
    create_time: float | None  # psutil create_time: tells a reused pid apart
    run_id: str | None = None
    headroom_pid: int | None = None
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> ServerRecord:
        """TypeError/ValueError when a field needed to find the server is missing or wrong;
        an optional field of the wrong type reads as its default."""
        known, _problems = typed_fields(data, _FIELD_KINDS, _OPTIONAL_DEFAULTS)
        names = {f.name for f in dataclasses.fields(cls)}
        # A field added later and not yet listed in _FIELD_KINDS is passed on as it is.
        known.update({k: v for k, v in data.items() if k in names and k not in _FIELD_KINDS})
        for name, (low, high) in _RANGES.items():
            value = known.get(name)
            if value is not None and not low <= value <= high:
                if name not in _OPTIONAL_DEFAULTS:
                    raise ValueError(f"{name} {value} is out of range")
                known[name] = None
        known["extra"] = dict(known.get("extra") or {})  # never the shared default
        return cls(**known)

    def alive(self) -> bool:
        if not isinstance(self.pid, int) or self.pid <= 0:
            return False
        # psutil is imported where it is used, not here: its import (the Linux tables, ~20 ms)
        # would sit on the path to the first painted dashboard (benchmarks/startup.py), which
        # needs no process lookups.
        import psutil

        try:
            p = psutil.Process(self.pid)
            if self.create_time is not None and abs(p.create_time() - self.create_time) > 1.0:
                return False
            return p.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


_FIELD_KINDS = {
    "pid": "int",
    "pgid": "int",
    "port": "int",
    "url": "str",
    "model": "str?",
    "argv": "list[str]",
    "flags": "list[str]",
    "launcher": "str",
    "env": "dict[str,str]",
    "log_path": "str",
    "started_at": "float",
    "create_time": "float?",
    "run_id": "str?",
    "headroom_pid": "int?",
    "extra": "dict",
}
_OPTIONAL_DEFAULTS: dict[str, object] = {
    "create_time": None,
    "run_id": None,
    "headroom_pid": None,
    "extra": {},
}
_RANGES = {
    "pid": (1, 2**31 - 1),
    "pgid": (1, 2**31 - 1),
    "port": (1, 65535),
    "started_at": (0, 1e11),
    "create_time": (0, 1e11),
    "headroom_pid": (1, 2**31 - 1),
}
MAX_STATE_BYTES = 1 << 20  # a record is ~2 KB


def state_path(port: int, base: Path | None = None) -> Path:
    return (base or state_dir()) / f"server-{port}.json"


def write_state(record: ServerRecord, base: Path | None = None) -> Path:
    path = state_path(record.port, base)
    private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, json.dumps(record.to_json(), indent=1).encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def read_state(port: int, base: Path | None = None) -> ServerRecord | None:
    """The record for a port, or None when absent or unreadable."""
    return _read(state_path(port, base))


def _read(path: Path) -> ServerRecord | None:
    try:
        # Bounded: a hostile or corrupt file (huge, deeply nested, 300-digit pid) is
        # "no record", never an exception out of re-adoption.
        data = load_json_file(path, max_bytes=MAX_STATE_BYTES)
        if not isinstance(data, dict):
            return None
        record = ServerRecord.from_json(data)
    except (OSError, ValueError, TypeError, RecursionError, OverflowError):
        return None
    if not isinstance(record.pid, int) or not isinstance(record.port, int):
        return None
    return record


def remove_state(port: int, base: Path | None = None) -> None:
    try:
        state_path(port, base).unlink()
    except FileNotFoundError:
        pass


def list_states(base: Path | None = None, *, live_only: bool = True) -> list[ServerRecord]:
    """Every server Headroom knows of; stale files (process gone) are cleaned up."""
    folder = base or state_dir()
    out = []
    for path in sorted(folder.glob("server-*.json")):
        record = _read(path)
        if record is None:
            continue
        if live_only and not record.alive():
            try:
                path.unlink()
            except OSError:
                pass
            continue
        out.append(record)
    return out
