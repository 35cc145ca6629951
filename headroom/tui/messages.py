"""Messages the data workers post to the app, each named for what happened.

Workers never touch widgets: they post one of these, and the app's handlers update the
`Store` and redraw the visible screen. High-rate messages define `can_replace` so a burst
collapses into one redraw; they carry no payload the handler could lose (log lines wait in
the `Store`'s buffer, the message only says "there are new ones").
"""

from __future__ import annotations

from textual.message import Message

from headroom.doctor.findings import Diagnosis
from headroom.probes.metrics_types import ServerMetrics
from headroom.probes.nvml_types import GpuSnapshot
from headroom.probes.topology_types import TopologyMatrix
from headroom.probes.topology_verdict import TpVerdict
from headroom.supervisor.journal import RunRecord
from headroom.tui.store import RayReading


class MetricsScraped(Message):
    """A /metrics scrape finished (successfully or not: see `snapshot.state`)."""

    def __init__(self, snapshot: ServerMetrics) -> None:
        super().__init__()
        self.snapshot = snapshot


class RayRead(Message):
    """The Ray cluster was read (nodes, placement groups, the wait's cause)."""

    bubble = False

    def __init__(self, reading: RayReading) -> None:
        super().__init__()
        self.reading = reading


class GpusSampled(Message):
    """NVML was read. Only the newest sample matters, so a pending one is replaced."""

    bubble = False

    def __init__(self, snapshot: GpuSnapshot) -> None:
        super().__init__()
        self.snapshot = snapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, GpusSampled)


class TopologyRead(Message):
    """The topology matrix was read (once per session; it does not change while running)."""

    def __init__(self, matrix: TopologyMatrix, verdicts: list[TpVerdict]) -> None:
        super().__init__()
        self.matrix = matrix
        self.verdicts = verdicts


class LogLinesPending(Message):
    """New log lines are waiting in the store's buffer."""

    bubble = False

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LogLinesPending)


class DiagnosisMade(Message):
    """The doctor ran over the latest inputs."""

    def __init__(self, diagnosis: Diagnosis) -> None:
        super().__init__()
        self.diagnosis = diagnosis


class ServerStateChanged(Message):
    """The supervised server changed state (starting, ready, failed, ...)."""

    def __init__(self, state: str, detail: str | None = None) -> None:
        super().__init__()
        self.state = state
        self.detail = detail


class RunsLoaded(Message):
    """The run journal was read."""

    def __init__(self, records: list[RunRecord]) -> None:
        super().__init__()
        self.records = records


class ProbeFailed(Message):
    """A probe could not run at all (module missing, unexpected exception). The panel that
    shows its data says why; every other probe keeps going."""

    def __init__(self, probe: str, reason: str) -> None:
        super().__init__()
        self.probe = probe
        self.reason = reason


class RestartProgressed(Message):
    """One step of a restart moved on. `step` is one of stop / memory / start / ready /
    rollback; `status` is running / done / failed / skipped."""

    def __init__(self, step: str, status: str, detail: str | None = None) -> None:
        super().__init__()
        self.step = step
        self.status = status
        self.detail = detail


class RestartFinished(Message):
    """A restart ended: `ok` False means it failed (and `rolled_back` says whether the old
    flags are running again)."""

    def __init__(self, ok: bool, rolled_back: bool, detail: str | None = None) -> None:
        super().__init__()
        self.ok = ok
        self.rolled_back = rolled_back
        self.detail = detail


class SupervisorNoticed(Message):
    """The supervisor reported something (a restart began, a rollback, a crash back-off)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__()
        self.kind = kind
        self.message = message
