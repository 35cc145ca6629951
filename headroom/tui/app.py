"""The Headroom Textual app and its entry points.

`HeadroomApp` owns the `Store`; data arrives only through messages posted by worker loops
(one per probe), so widgets never block and a failing probe only greys out its own panel.
Each loop waits for its previous read to finish before sleeping for the interval, so scrapes
never overlap. Screens are Textual modes switched with the number keys; only the visible
screen redraws when data arrives, and a screen draws itself fully from the store when shown.

Entry points used by the CLI: `run_attach` (headroom attach), `run_serve` (headroom serve),
and `HeadroomApp` itself (headroom demo, tests).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Iterable

from textual import on, work
from textual.app import SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.message import Message
from textual.screen import Screen

from headroom.doctor.findings import Action
from headroom.probes.safe_text import safe_optional
from headroom.supervisor.restart import RestartPreview
from headroom.supervisor.states import SupervisorEvent
from headroom.themes import THEMES, resolve_theme_name
from headroom.tui import messages as msg
from headroom.tui.live_sources import LiveSources
from headroom.tui.log_classes import LogEntry
from headroom.tui.modes import make_modes
from headroom.tui.probe_loops import ProbeLoops
from headroom.tui.screens import SCREEN_TITLES
from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.screens.help import HelpScreen
from headroom.tui.screens.logs import LogsScreen
from headroom.tui.screens.quit import QuitDialog
from headroom.tui.screens.restart import RestartDialog, restart_plan
from headroom.tui.sources import DataSources
from headroom.tui.store import Store
from headroom.tui.supervised import SupervisedServer
from headroom.tui.themed_app import ThemedApp

# Supervisor events worth a line among the dashboard's recent events.
NOTICE_KINDS = {"restart", "rollback", "crash_backoff", "preflight", "memory", "notice", "launch"}


class HeadroomApp(ProbeLoops, ThemedApp[int]):
    """Watches one vLLM server: dashboard, GPUs, topology, doctor, logs, runs, bench."""

    CSS_PATH = "app.tcss"
    TITLE = "Headroom"
    MODES = make_modes()  # type: ignore[assignment]  # Textual's own type is wider (str too)
    # Start in the dashboard's mode: without it Textual first builds and mounts a blank
    # default screen, then on_mount's switch_mode builds the dashboard and refreshes the CSS
    # of the whole app once more, all before the first frame (benchmarks/startup.py).
    DEFAULT_MODE = "dashboard"
    BINDINGS = [
        *[
            Binding(str(number), f"show('{mode}')", title, show=False)
            for number, (mode, title) in enumerate(SCREEN_TITLES.items(), start=1)
        ],
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        Binding("t", "next_theme", "Theme", show=False),
    ]

    def __init__(
        self,
        sources: DataSources,
        *,
        interval: float = 1.0,
        theme: str | None = None,
        start_screen: str = "dashboard",
    ) -> None:
        super().__init__()
        self.sources = sources
        self.interval = max(0.1, float(interval))
        self.store = Store(server=sources.server_info())
        sources.prime(self.store)
        self._start_screen = start_screen
        self.use_themes(theme)
        self._data_version = 0  # bumps when doctor inputs change
        self._diagnosed_version = -1
        self.restart_in_progress = False

    # -- start-up -----------------------------------------------------------------------
    def on_mount(self) -> None:
        # Table cells carry colours resolved from the theme: redraw them when it changes.
        self.theme_changed_signal.subscribe(self, lambda _theme: self._redraw("theme"))
        self.sources.on_supervisor_event(self._supervisor_event)
        self.switch_mode(self._start_screen)  # nothing to do when it is DEFAULT_MODE
        if self.sources.stop_on_exit:
            # A closed terminal or SSH session (SIGHUP) must still stop the server the demo
            # launched: exit through on_unmount, which closes the sources (seen: an orphaned
            # simulator after tmux kill-session).
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop = asyncio.get_running_loop()
                for number in (signal.SIGHUP, signal.SIGTERM):
                    loop.add_signal_handler(number, self.exit)
        # The probes' first reads (NVML init, a scrape) start once the first frame is painted.
        self.call_after_refresh(self._start_loops)

    # -- message handlers: update the store, redraw what is visible -----------------------
    def _redraw(self, what: str) -> None:
        """Redraw what changed on the visible screens (hidden screens draw when shown).
        (Coalescing the metrics and GPU redraws of one interval into one pass was tried; the
        overhead benchmark showed no difference within its noise, so it was left out.)"""
        self._redraw_now(what)

    def _redraw_now(self, what: str) -> None:
        for screen in self.screen_stack[-2:]:  # the visible screen and the one under a modal
            if isinstance(screen, HeadroomScreen) and screen.is_mounted:
                try:
                    screen.show(self.store, what)
                except NoMatches:  # a screen still composing or already torn down
                    pass

    @on(msg.MetricsScraped)
    def _on_metrics(self, message: msg.MetricsScraped) -> None:
        self.store.record_metrics(message.snapshot, self.sources.clock())
        reported = self.sources.reported
        if reported is not None:
            self.store.server.reported = reported
        self._data_version += 1
        self._redraw("metrics")

    @on(msg.GpusSampled)
    def _on_gpus(self, message: msg.GpusSampled) -> None:
        self.store.record_gpus(message.snapshot)
        self._data_version += 1
        self._redraw("gpus")

    @on(msg.RayRead)
    def _on_ray(self, message: msg.RayRead) -> None:
        self.store.ray = message.reading
        self.store.unavailable.pop("ray", None)
        self._redraw("ray")

    @on(msg.TopologyRead)
    def _on_topology(self, message: msg.TopologyRead) -> None:
        self.store.topology, self.store.verdicts = message.matrix, message.verdicts
        self.store.unavailable.pop("topology", None)
        self._redraw("topology")

    @on(msg.LogLinesPending)
    def _on_log_lines(self, message: msg.LogLinesPending) -> None:
        new = self.store.take_log_lines()
        self._data_version += 1
        if any(entry.severity == "error" for entry in new):
            self.wake_doctor()
        self._redraw_logs(new)
        self._redraw("logs")

    def _redraw_logs(self, new: list[LogEntry]) -> None:
        for screen in self.screen_stack[-2:]:
            if isinstance(screen, LogsScreen) and screen.is_mounted:
                try:
                    screen.append_log_lines(new)
                except NoMatches:  # still composing; it draws everything when mounted
                    pass

    @on(msg.DiagnosisMade)
    def _on_diagnosis(self, message: msg.DiagnosisMade) -> None:
        self.store.diagnosis = message.diagnosis
        self.store.unavailable.pop("doctor", None)
        self._redraw("doctor")

    @on(msg.ServerStateChanged)
    def _on_server_state(self, message: msg.ServerStateChanged) -> None:
        server = self.store.server
        if message.state in {"ready", "degraded"} and server.state not in {"ready", "degraded"}:
            server.up_since = self.sources.clock()
        elif message.state not in {"ready", "degraded"}:
            server.up_since = None
        server.state, server.detail = message.state, safe_optional(message.detail)
        command = self.sources.current_command()
        if command is not None:  # a restart changes the command; show the one running
            server.command = command
            server.model = command.model or server.model
        self._data_version += 1
        self.wake_doctor()
        self._redraw("server")

    def _supervisor_event(self, event: SupervisorEvent) -> None:
        # Called by the supervisor (same event loop); state changes arrive via the state loop.
        if event.kind in NOTICE_KINDS:
            self.post_message(msg.SupervisorNoticed(event.kind, event.message))

    @on(msg.SupervisorNoticed)
    def _on_supervisor_notice(self, message: msg.SupervisorNoticed) -> None:
        self.store.add_notice(message.kind, message.message)
        self._redraw("logs")

    @on(msg.RunsLoaded)
    def _on_runs(self, message: msg.RunsLoaded) -> None:
        self.store.runs = message.records
        self.store.unavailable.pop("runs", None)
        self._redraw("runs")

    @on(msg.ProbeFailed)
    def _on_probe_failed(self, message: msg.ProbeFailed) -> None:
        self.store.unavailable[message.probe] = message.reason
        self._redraw(message.probe)

    # -- actions ---------------------------------------------------------------------------
    def action_show(self, mode: str) -> None:
        if mode != self.current_mode:
            self.switch_mode(mode)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        """Quit; when Headroom launched the server, first ask: stop it or leave it running."""
        alive, pid = self.sources.server_running()
        if not alive:
            self.exit(0)
            return
        if self.sources.stop_on_exit:
            self._finish_quit("stop")
            return
        if not isinstance(self.screen, QuitDialog):
            self.push_screen(QuitDialog(pid), self._on_quit_choice)

    def _on_quit_choice(self, choice: str | None) -> None:
        self._finish_quit(choice)

    @work(exclusive=True, group="quit", exit_on_error=False)
    async def _finish_quit(self, choice: str | None) -> None:
        if not choice:
            return
        self.notify("stopping the server…" if choice == "stop" else "leaving the server running…")
        try:
            if choice == "stop":
                await self.sources.stop_server()
            else:
                await self.sources.detach_server()
        except Exception as exc:
            self.notify(f"could not {choice}: {exc}", severity="error")
        self.sources.stop_on_exit = False  # done; close() must not stop it again
        self.exit(0)

    def action_next_theme(self) -> None:
        names = list(THEMES)
        current = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(current + 1) % len(names)]

    def propose_action(self, action: Action) -> None:
        """Open the restart dialog for a doctor action (called by the Doctor screen)."""
        plan = restart_plan(action, self.sources.preview_restart)
        self.push_screen(
            RestartDialog(plan, can_restart=self.sources.can_restart), self._after_restart_dialog
        )

    def _after_restart_dialog(self, restarted: bool | None) -> None:
        # After a good restart, the dashboard is where the server is seen coming up and serving.
        if restarted:
            self.action_show("dashboard")

    @work(exclusive=True, group="restart", exit_on_error=False)
    async def run_restart(
        self, changes: dict[str, object], preview: RestartPreview | None = None
    ) -> None:
        """Called by the restart dialog once the user confirmed `preview`."""
        self.restart_in_progress = True

        def progress(step: str, status: str, detail: str | None = None) -> None:
            self.post_message_to_dialog(msg.RestartProgressed(step, status, detail))

        try:
            ok, rolled_back, detail = await self.sources.restart(changes, progress, preview)
        except Exception as exc:
            ok, rolled_back, detail = False, False, f"{type(exc).__name__}: {exc}"
        finally:
            self.restart_in_progress = False
        self.post_message_to_dialog(msg.RestartFinished(ok, rolled_back, detail))
        self._data_version += 1
        self.reload_runs()

    def reload_runs(self) -> None:
        """Read the journal again (after a restart, or on `r` in the Runs screen)."""
        self._runs_once()

    def post_message_to_dialog(self, message: Message) -> None:
        for screen in reversed(self.screen_stack):
            if isinstance(screen, RestartDialog):
                screen.post_message(message)
                return

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for name in THEMES:
            yield SystemCommand(
                f"Theme: {name}", f"switch to the {name} theme", lambda n=name: self._set_theme(n)
            )
        for number, (mode, title) in enumerate(SCREEN_TITLES.items(), start=1):
            yield SystemCommand(
                f"Screen: {title}",
                f"show the {title} screen (key {number})",
                lambda m=mode: self.action_show(m),
            )

    def _set_theme(self, name: str) -> None:
        self.theme = name

    async def on_unmount(self) -> None:
        try:
            await self.sources.close()
        except Exception:  # closing must never turn a clean quit into a traceback
            pass


def _theme_or_message(theme: str | None, command: str) -> str | None:
    """None when `theme` is usable; else prints why (with the choices) and returns it."""
    try:
        resolve_theme_name(theme)
    except ValueError as exc:
        print(f"headroom {command}: {exc}", file=sys.stderr)
        return str(exc)
    return None


def run_attach(
    url: str,
    interval: float = 1.0,
    theme: str | None = None,
    log_from: str | os.PathLike[str] | None = None,
    log_cmd: list[str] | None = None,
    supervisor: SupervisedServer | None = None,
) -> int:
    """`headroom attach URL`: the dashboard for a server Headroom does not manage.
    `log_from`: the server's log file; `log_cmd`: a command whose output is the log (e.g.
    `["docker", "logs", "-f", "vllm"]`, run without a shell). Either feeds the Logs screen
    and the doctor. `supervisor`: from `attach --launched-with` (supervisor.attached), so
    the restart dialog can restart the server; without it the dialog shows the command."""
    if _theme_or_message(theme, "attach"):
        return 2
    sources = LiveSources(
        url,
        log_path=str(log_from) if log_from else None,
        log_cmd=log_cmd,
        supervisor=supervisor,
        metrics_max_age_s=interval,
    )
    app = HeadroomApp(sources, interval=interval, theme=theme)
    result = app.run()
    return int(result or 0)


def run_serve(
    supervisor: SupervisedServer,
    interval: float = 1.0,
    theme: str | None = None,
    *,
    stop_on_exit: bool = False,
) -> int:
    """`headroom serve` / `headroom demo`: the dashboard over a `Supervisor`. Starts the
    server inside the app's event loop (or only starts watching a re-adopted one). On quit it
    asks whether to stop the server or leave it running; with `stop_on_exit` it just stops it
    (the demo's simulated server has no reason to outlive the demo)."""
    if _theme_or_message(theme, "serve"):
        return 2
    sources = LiveSources(
        supervisor=supervisor, stop_on_exit=stop_on_exit, metrics_max_age_s=interval
    )
    app = HeadroomApp(sources, interval=interval, theme=theme)
    result = app.run()
    return int(result or 0)
