"""Server states, supervisor events and restart outcomes: the vocabulary the TUI and the
headless printer share with the supervisor."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path


class ServerState(StrEnum):
    """Where a supervised vLLM server is in its life.

    starting -> ready (first /health 200) -> degraded (health failing or engine dead) ->
    stopping -> stopped, or failed (start-up error, ready timeout, unexpected exit).
    """

    STARTING = "starting"
    READY = "ready"
    DEGRADED = "degraded"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


# Event kinds on_event receives (stable strings; the headless printer and TUI key on them).
EVENT_KINDS = (
    "state",  # the server changed state (fields: old, new, reason)
    "launch",  # a process was started (fields: pid, argv, log_path)
    "preflight",  # a preflight check failed (fields: check)
    "failure",  # a known start-up / runtime failure was read from the log (fields: event kind)
    "finding",  # a doctor finding after a failure (fields: id, title, actions)
    "restart",  # a restart with changed knobs begins (fields: diff)
    "rollback",  # the new configuration failed, the last good one is being restored
    "crash_backoff",  # a crashed server will be restarted after a pause (fields: delay_s)
    "memory",  # waiting for / done waiting for GPU memory release
    "notice",  # anything else worth a line
)


@dataclass(frozen=True)
class SupervisorEvent:
    """One thing that happened, for on_event listeners (TUI, headless printer)."""

    kind: str
    message: str
    state: ServerState
    fields: Mapping[str, object] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, object]:
        return {
            "time": self.at,
            "kind": self.kind,
            "state": str(self.state),
            "message": self.message,
            **{k: _jsonable(v) for k, v in self.fields.items()},
        }


@dataclass(frozen=True)
class FlagChangeView:
    """A flag or environment change in a restart diff, already rendered for humans/JSON."""

    name: str
    old: object | None
    new: object | None

    def __str__(self) -> str:
        if self.old is None:
            return f"+ {self.name} {_show(self.new)}"
        if self.new is None:
            return f"- {self.name} {_show(self.old)}"
        return f"~ {self.name} {_show(self.old)} -> {_show(self.new)}"


@dataclass(frozen=True)
class RestartOutcome:
    """What a restart with changed knobs came to.

    ok: the new configuration reached ready. rolled_back: it did not, and the last good
    configuration was started again (rollback_ok says whether that one reached ready).
    failed_log_path keeps the failed run's log for the user.
    """

    ok: bool
    reason: str
    diff: tuple[FlagChangeView, ...] = ()
    rolled_back: bool = False
    rollback_ok: bool | None = None
    failed_log_path: Path | None = None
    run_id: str | None = None


def _show(value: object) -> str:
    if value is True:
        return "(on)"
    if value is False:
        return "(off)"
    return str(value)


def _jsonable(value: object) -> object:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return str(value)


# Environment variables that change how vLLM runs: kept, diffed and journaled.
RELEVANT_ENV = re.compile(r"^(CUDA_VISIBLE_DEVICES|VLLM_\w+|NCCL_\w+|HF_\w+|PYTORCH_\w+|OMP_\w+)$")
# Log events that end a start-up: vLLM exits (or hangs) after one of these.
STARTUP_FAILURES = frozenset(
    {
        "cuda_oom",
        "no_cache_memory",
        "max_seq_len_exceeds_kv",
        "free_memory_below_utilization",
        "heads_not_divisible",
        "kv_heads_not_divisible",
        "world_size_too_large",
        "pp_unsupported",
        "unrecognized_arguments",
        "config_error",
        "engine_core_failed",
        "nccl_error",
        "shm_full",
    }
)
# Log events that mean the engine died under a running API server. A watchdog / shm-broadcast
# timeout is not here: on a loaded host it is a symptom of slowness, and /health judges it.
ENGINE_DEATH = frozenset({"engine_dead", "engine_core_failed", "worker_died"})
TERMINAL = frozenset({ServerState.STOPPED, ServerState.FAILED})


class PreflightError(RuntimeError):
    """A start was refused before launching; .failures holds each reason."""

    def __init__(self, failures: tuple[str, ...]) -> None:
        super().__init__("; ".join(failures))
        self.failures = failures
