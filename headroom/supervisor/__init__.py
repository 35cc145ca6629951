"""Act: launch and supervise vLLM, restart with adjusted knobs, roll back, journal runs, drive load ramps.

Public names (imported lazily so `headroom.supervisor.journal` users do not pay for the rest):
ServerState, SupervisorEvent, RestartOutcome, RestartPreview, LAUNCHERS, Supervisor,
SupervisorSettings, PreflightError, Journal, RunRecord.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ServerState": "headroom.supervisor.states",
    "SupervisorEvent": "headroom.supervisor.states",
    "RestartOutcome": "headroom.supervisor.states",
    "FlagChangeView": "headroom.supervisor.states",
    "LAUNCHERS": "headroom.supervisor.launcher",
    "Supervisor": "headroom.supervisor.supervisor",
    "SupervisorSettings": "headroom.supervisor.settings",
    "RestartPreview": "headroom.supervisor.restart",
    "PreflightError": "headroom.supervisor.states",
    "Journal": "headroom.supervisor.journal",
    "RunRecord": "headroom.supervisor.journal",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'headroom.supervisor' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
