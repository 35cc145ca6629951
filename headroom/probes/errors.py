"""How a probe reports that it could not read something: one small tree of exceptions.

A probe that is polled (metrics, NVML, topology) never raises: it returns its snapshot, and
the snapshot's `failure` property is one of these exceptions (not raised) or None. A probe
read on request for an input the user named (`load_model_shape("path/or/name")`) raises one.
Either way a caller can tell the kinds apart with `isinstance`, as with httpx's exceptions:

    ProbeError                  could not read; str() is the message shown to the user
    ├── SourceMissing           nothing to read here: no NVIDIA driver, no nvidia-smi, no GPU
    ├── SourceUnreachable       the server does not answer (refused, DNS, connect timeout)
    ├── SourceTimeout           it answers, too slowly
    ├── UnexpectedSource        it answers, but is not what Headroom reads (not vLLM)
    │   └── MetricsDisabled     vLLM with its /metrics turned off
    └── UnreadableInput         what was read cannot be understood (an HTTP error page, a
        │                       `topo -m` text without a matrix, a page that breaks off)
        └── ModelConfigError    a model's config.json cannot be found or understood (raised;
                                also a ValueError, as before)

How the snapshots' own fields map onto it (the fields stay as they were; `failure` is the
one typed view of them):

    ServerMetrics.state  "down" -> SourceUnreachable, "slow" -> SourceTimeout,
                         "not_vllm" -> UnexpectedSource, "metrics_off" -> MetricsDisabled,
                         "error" -> UnreadableInput, "up" -> None; message = .message
    GpuSnapshot          available=False -> SourceMissing(reason)
    TopologyMatrix       confidence "unreadable" -> SourceMissing (nvidia-smi / NVML had no
                         matrix to give) or UnreadableInput (a text given as a file)
"""

from __future__ import annotations

__all__ = [
    "MetricsDisabled",
    "ProbeError",
    "SourceMissing",
    "SourceTimeout",
    "SourceUnreachable",
    "UnexpectedSource",
    "UnreadableInput",
    "metrics_failure",
]


class ProbeError(Exception):
    """A probe could not read what it was asked for; `str(error)` says why, for the user."""


class SourceMissing(ProbeError):
    """There is nothing to read on this machine (no driver, no tool, no GPU)."""


class SourceUnreachable(ProbeError):
    """The server does not answer at all."""


class SourceTimeout(ProbeError):
    """The server answers too slowly."""


class UnexpectedSource(ProbeError):
    """Something answers, but not what Headroom reads."""


class MetricsDisabled(UnexpectedSource):
    """A vLLM server whose /metrics endpoint is turned off."""


class UnreadableInput(ProbeError):
    """What was read cannot be understood."""


_BY_STATE: dict[str, type[ProbeError]] = {
    "down": SourceUnreachable,
    "slow": SourceTimeout,
    "not_vllm": UnexpectedSource,
    "metrics_off": MetricsDisabled,
    "error": UnreadableInput,
}


def metrics_failure(state: str, message: str | None) -> ProbeError | None:
    """The error for a metrics scrape's state ("up" and unknown states: None)."""
    kind = _BY_STATE.get(state)
    return kind(message or f"server {state}") if kind is not None else None
