"""Where the TUI's data comes from.

`DataSources` is the one interface the app talks to: a method per probe, each async and
each allowed to return `None` ("this source has no such data"). The app runs every method in
its own worker loop and turns results into messages, so a slow or broken probe only marks its
own panel unavailable. Every method returns the probes' own typed snapshots.

- `LiveSources` (live_sources.py): the real probes (metrics over HTTP, NVML, topology, a log file, the doctor),
  optionally with a supervised server (`SupervisedServer`, which `Supervisor` implements)
  for state, logs and restarts.
- `DemoSources` (demo_sources.py): live sources over the simulator, with the demo's load.
- tests/tui/recorded_sources.py: fixed data and a fixed clock, for snapshot tests.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from headroom.doctor.findings import Diagnosis
from headroom.probes.metrics_types import ServerMetrics
from headroom.probes.nvml_types import GpuSnapshot
from headroom.probes.server_info import ServerInfo as ReportedInfo
from headroom.probes.topology_types import TopologyMatrix
from headroom.probes.topology_verdict import TpVerdict
from headroom.supervisor.journal import RunRecord
from headroom.supervisor.restart import RestartPreview
from headroom.tui.store import RayReading, ServerInfo, Store
from headroom.tui.supervised import EventListener
from headroom.vllm_cmd import VllmCommand

ProgressCallback = Callable[[str, str, str | None], None]
TopologyReading = tuple[TopologyMatrix, list[TpVerdict]]

LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]", ""}


def url_is_local(url: str | None) -> bool:
    """True when the server at `url` runs on this machine, so this machine's GPUs are its GPUs."""
    if not url:
        return True
    host = (urlsplit(url if "//" in url else f"http://{url}").hostname or "").lower()
    if host in LOCAL_HOSTS or host.startswith("127."):
        return True
    try:
        names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    except OSError:
        names = set()
    return host in names


class DataSources:
    """Base class: a source with nothing. Subclasses override what they can provide."""

    one_shot = False  # True: each loop runs once (recorded data does not change)
    gpus_local = True
    gpus_remote_reason: str | None = None
    can_restart = False
    has_logs = True  # False: no log to follow, so the app does not poll for one
    topology_retry_s = 10.0  # an unreadable topology is read again this often
    stop_on_exit = False  # True: quitting stops the server Headroom launched, without asking
    reported: ReportedInfo | None = None  # /v1/models and /version, read once the server is up

    def clock(self) -> float:
        return time.monotonic()

    def server_info(self) -> ServerInfo:
        return ServerInfo()

    def current_command(self) -> VllmCommand | None:
        """The command line the supervised server runs now (a restart changes it)."""
        return None

    def on_supervisor_event(self, callback: EventListener) -> None:
        """Call `callback(event)` for each supervisor event (restart, rollback, crash...)."""

    def prime(self, store: Store) -> None:
        """Fill the store before the first draw (recorded histories); live sources do nothing."""

    async def start(self) -> None:
        """Called once when the app starts (e.g. launch a supervised server)."""

    async def scrape_metrics(self) -> ServerMetrics | None:
        return None

    async def sample_gpus(self) -> GpuSnapshot | None:
        return None

    async def read_topology(self) -> TopologyReading | None:
        return None

    @property
    def reads_ray(self) -> bool:
        """True when the server runs on a Ray cluster the app should show (GPUs screen)."""
        return False

    async def read_ray(self) -> RayReading | None:
        return None

    async def read_log_lines(self) -> list[str]:
        return []

    async def read_server_state(self) -> tuple[str, str | None] | None:
        """(state, detail) of a supervised server; None when not supervised."""
        return None

    def diagnose(self, store: Store) -> Diagnosis | None:
        return None

    async def read_runs(self) -> list[RunRecord] | None:
        return None

    def preview_restart(self, changes: dict[str, object]) -> RestartPreview | None:
        """The supervisor's preview of a restart with `changes` (what would launch); None
        when the server's command line is unknown. Raises ValueError for a bad change."""
        return None

    async def restart(
        self,
        changes: dict[str, object],
        progress: ProgressCallback,
        expected: RestartPreview | None = None,
    ) -> tuple[bool, bool, str | None]:
        """Restart with `changes` applied (refused if `expected`, the preview the user saw,
        is no longer what would launch); report steps through `progress`.
        Returns (ok, rolled_back, detail)."""
        return False, False, "this session does not manage the server (attached only)"

    def server_running(self) -> tuple[bool, int | None]:
        """(is a server Headroom launched still running, its pid)."""
        return False, None

    async def stop_server(self) -> None:
        """Stop the server Headroom launched (quit dialog: s)."""

    async def detach_server(self) -> None:
        """Leave the server running and stop watching it (quit dialog: d)."""

    async def close(self) -> None:
        """Release clients and stop what `start` launched."""
