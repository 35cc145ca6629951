"""Where the TUI's data comes from.

`DataSources` is the one interface the app talks to: a method per probe, each async and
each allowed to return `None` ("this source has no such data"). The app runs every method in
its own worker loop and turns results into messages, so a slow or broken probe only marks its
own panel unavailable.

- `LiveSources`: the real probes (metrics over HTTP, NVML, topology, a log file, the doctor),
  optionally with a `Supervisor` for state, logs and restarts.
- `headroom.tui.recorded.RecordedSources`: fixed data and a fixed clock, for snapshot tests.

Probe modules are imported lazily: a missing or broken one becomes "unavailable: why" on
its panel instead of stopping the app.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from headroom.tui.log_tail import CommandTail, FileTail
from headroom.tui.store import ServerInfo, Store

ProgressCallback = Callable[[str, str, str | None], None]

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

    def clock(self) -> float:
        return time.monotonic()

    def server_info(self) -> ServerInfo:
        return ServerInfo()

    def on_supervisor_event(self, callback: Callable[[Any], None]) -> None:
        """Call `callback(event)` for each supervisor event (restart, rollback, crash...)."""

    def prime(self, store: Store) -> None:
        """Fill the store before the first draw (recorded histories); live sources do nothing."""

    async def start(self) -> None:
        """Called once when the app starts (e.g. launch a supervised server)."""

    async def scrape_metrics(self) -> Any:
        return None

    async def sample_gpus(self) -> Any:
        return None

    async def read_topology(self) -> tuple[Any, list[Any]] | None:
        return None

    async def read_log_lines(self) -> list[str]:
        return []

    async def read_server_state(self) -> tuple[str, str | None] | None:
        """(state, detail) of a supervised server; None when not supervised."""
        return None

    def diagnose(self, store: Store) -> Any:
        return None

    async def read_runs(self) -> list[Any] | None:
        return None

    async def restart(
        self, changes: dict[str, object], progress: ProgressCallback
    ) -> tuple[bool, bool, str | None]:
        """Restart with `changes` applied; report steps through `progress`.
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


class LiveSources(DataSources):
    """The real probes. `url` is the server's base URL; `log_path` a vLLM log file to follow;
    `supervisor` a `headroom.supervisor.Supervisor` (state, log, restarts, journal)."""

    def __init__(
        self,
        url: str | None = None,
        *,
        log_path: str | None = None,
        log_cmd: list[str] | None = None,
        supervisor: Any = None,
        window_s: float = 60.0,
        stop_on_exit: bool = False,
    ) -> None:
        self.supervisor = supervisor
        self.stop_on_exit = stop_on_exit
        self.url = url or getattr(supervisor, "url", None)
        self.window_s = window_s
        self.gpus_local = supervisor is not None or url_is_local(self.url)
        if not self.gpus_local:
            host = urlsplit(self.url if "//" in self.url else f"http://{self.url}").hostname
            self.gpus_remote_reason = (
                f"GPUs not local: the server runs on {host}; this machine's GPUs are not its GPUs"
            )
        self.can_restart = supervisor is not None
        self.has_logs = supervisor is not None or bool(log_path) or bool(log_cmd)
        self._command_tail: CommandTail | None = CommandTail(log_cmd) if log_cmd else None
        self._command_end_reported = False
        self._log_path = log_path
        self._tail: FileTail | None = FileTail(log_path) if log_path else None
        self._digest: Any = None
        self._metrics_probe: Any = None
        self.reported: Any = None  # /v1/models and /version, read once the server is up
        self._reported_at: float | None = None
        self._nvml_probe: Any = None
        self._start_error: str | None = None
        self._event_listeners: list[Callable[[Any], None]] = []
        self._supervisor_lines: list[str] = []
        self._log_subscribed = False
        if supervisor is not None:
            self._chain_events(supervisor)

    def _chain_events(self, supervisor: Any) -> None:
        """Listen to the supervisor's events without displacing a listener it already has."""
        previous = getattr(supervisor, "on_event", None)
        listeners = self._event_listeners

        def fan_out(event: Any) -> None:
            if previous is not None:
                previous(event)
            for listener in list(listeners):
                listener(event)

        supervisor.on_event = fan_out

    def on_supervisor_event(self, callback: Callable[[Any], None]) -> None:
        if self.supervisor is not None:
            self._event_listeners.append(callback)

    # -- server -----------------------------------------------------------------------
    def server_info(self) -> ServerInfo:
        sup = self.supervisor
        command = getattr(sup, "command", None)
        model = getattr(command, "model", None)
        # A supervised server is being launched from the first frame on ("unknown" reads as
        # if something were wrong); its real state follows within half a second.
        state = "starting" if sup is not None else "unknown"
        return ServerInfo(
            url=self.url, model=model, command=command, supervised=sup is not None, state=state
        )

    async def start(self) -> None:
        if self._command_tail is not None:
            await self._command_tail.start()
        sup = self.supervisor
        if sup is not None and hasattr(sup, "start"):
            process = getattr(sup, "process", None)
            alive = process is not None and process.alive()
            # A re-adopted server is running already; its start() only begins watching.
            if not alive or getattr(sup, "adopted", False):
                try:
                    await self.supervisor.start()
                except Exception as exc:  # preflight/launch errors: shown as the failure
                    self._start_error = f"{type(exc).__name__}: {exc}"
                    raise

    async def read_server_state(self) -> tuple[str, str | None] | None:
        if self.supervisor is None:
            return None
        state = getattr(self.supervisor, "state", None)
        value = getattr(state, "value", state)
        detail = getattr(self.supervisor, "failure_reason", None)
        state_text = str(value).lower() if value is not None else "unknown"
        if state_text == "stopped" and self._start_error:
            return "failed", self._start_error
        return state_text, detail

    # -- metrics ------------------------------------------------------------------------
    async def scrape_metrics(self) -> Any:
        if not self.url:
            return None
        if self._metrics_probe is None:
            from headroom.probes.metrics import MetricsProbe

            self._metrics_probe = MetricsProbe(self.url, window_s=self.window_s)
        snapshot = await self._metrics_probe.scrape()
        if snapshot.state == "up":
            await self._read_reported()
        return snapshot

    async def _read_reported(self) -> None:
        """What the server says about itself: once it answers, then again only every 60 s
        while it does not (an API key on /v1, a proxy)."""
        now = time.monotonic()
        if self.reported is not None or (
            self._reported_at is not None and now - self._reported_at < 60
        ):
            return
        from headroom.probes.server_info import read_server_info

        self._reported_at = now
        info = await read_server_info(self.url, timeout_s=2.0)
        if info.model_ids or info.version:
            self.reported = info

    # -- GPUs ---------------------------------------------------------------------------
    async def sample_gpus(self) -> Any:
        if not self.gpus_local:
            return None
        if self._nvml_probe is None:
            from headroom.probes.nvml import NvmlProbe

            try:
                # Retry a failed init soon: a simulator writes its GPU state a moment after
                # launch, and a driver being loaded should show up quickly too.
                self._nvml_probe = NvmlProbe(retry_init_s=2.0)
            except TypeError:
                self._nvml_probe = NvmlProbe()
        return await self._nvml_probe.sample()

    async def read_topology(self) -> tuple[Any, list[Any]] | None:
        if not self.gpus_local:
            return None
        from headroom.probes.topology import read_topology

        nvml = getattr(self._nvml_probe, "nvml", None)
        matrix = await read_topology(nvml)
        try:
            from headroom.probes.topology_verdict import tp_verdicts
        except ImportError:
            try:
                from headroom.probes.topology import tp_verdicts
            except ImportError:
                return matrix, []
        tp = self._tp_size()
        verdicts = tp_verdicts(matrix, [tp] if tp else None)
        return matrix, list(verdicts)

    def _tp_size(self) -> int | None:
        command = getattr(self.supervisor, "command", None)
        if command is None:
            return None
        try:
            value = command.get("tensor_parallel_size", 1)
            return int(value) if value else 1
        except (TypeError, ValueError):
            return None

    # -- logs ---------------------------------------------------------------------------
    async def read_log_lines(self) -> list[str]:
        sup = self.supervisor
        if sup is not None and hasattr(sup, "subscribe_log"):
            if not self._log_subscribed:
                # Lines the supervisor already read, then every new batch as it reads them.
                self._supervisor_lines.extend(getattr(sup, "log_lines", ()) or ())
                sup.subscribe_log(self._supervisor_lines.extend)
                self._log_subscribed = True
            lines, self._supervisor_lines[:] = list(self._supervisor_lines), []
            return lines
        if self._command_tail is not None:
            lines = self._command_tail.read_new()
            if lines:
                self._feed_digest(lines)
            elif self._command_tail.ended and not self._command_end_reported:
                self._command_end_reported = True
                raise RuntimeError(self._command_tail.ended)  # shown on the Logs screen
            return lines
        if self._tail is None and sup is not None:
            path = getattr(sup, "log_path", None)
            if path:
                self._tail = FileTail(path)
        if self._tail is None:
            return []
        lines = await asyncio.to_thread(self._tail.read_new)
        if lines and self.supervisor is None:
            self._feed_digest(lines)
        return lines

    def _feed_digest(self, lines: list[str]) -> None:
        if self._digest is None:
            from headroom.probes.vllm_log import LogDigest

            self._digest = LogDigest()
        for line in lines:
            self._digest.feed(line)

    # -- doctor -------------------------------------------------------------------------
    def diagnose(self, store: Store) -> Any:
        from headroom.doctor import DoctorInputs, diagnose

        digest = getattr(self.supervisor, "digest", None) or self._digest
        inputs = DoctorInputs(
            command=getattr(self.supervisor, "command", None),
            log=digest,
            metrics_history=tuple(store.metrics_history)[-60:],
            gpus=store.gpus if self.gpus_local else None,
            topology=store.topology,
            vllm_version=getattr(self.reported, "version", None),
            extra={"server_info": self.reported} if self.reported is not None else {},
        )
        return diagnose(inputs)

    # -- journal ------------------------------------------------------------------------
    async def read_runs(self) -> list[Any] | None:
        journal = getattr(self.supervisor, "journal", None)
        if journal is None:
            from headroom.supervisor import Journal

            journal = Journal()
        return await asyncio.to_thread(journal.records)

    # -- restart ------------------------------------------------------------------------
    async def restart(
        self, changes: dict[str, object], progress: ProgressCallback
    ) -> tuple[bool, bool, str | None]:
        if self.supervisor is None:
            return await super().restart(changes, progress)
        from headroom.tui.restart_driver import drive_restart

        return await drive_restart(self.supervisor, changes, progress, self._event_listeners)

    def server_running(self) -> tuple[bool, int | None]:
        """(is a server Headroom launched still running, its pid)."""
        process = getattr(self.supervisor, "process", None)
        alive = process is not None and process.alive()
        return alive, getattr(self.supervisor, "pid", None)

    async def stop_server(self) -> None:
        await self.supervisor.stop()

    async def detach_server(self) -> None:
        await self.supervisor.detach()

    async def close(self) -> None:
        if self._command_tail is not None:
            await self._command_tail.stop()
        if self._nvml_probe is not None and hasattr(self._nvml_probe, "close"):
            self._nvml_probe.close()
        probe = self._metrics_probe
        closer = getattr(probe, "aclose", None) or getattr(probe, "close", None)
        if closer is not None:
            result = closer()
            if asyncio.iscoroutine(result):
                await result
        if self.supervisor is not None and self.stop_on_exit:
            await self.supervisor.stop()
