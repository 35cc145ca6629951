"""Screen 5, logs: the live vLLM log with classified lines highlighted; filters (errors,
start-up, NCCL), search, and follow/pause. The access lines of Headroom's own polling
(GET /metrics, /health every second) are hidden unless `p` shows them; long lines wrap
unless `w` turns wrapping off (then the log scrolls sideways)."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, RichLog, Static

from headroom.tui.format import escape_markup as escape
from headroom.tui.log_classes import LogEntry, matches_filter
from headroom.tui.screens.base import HeadroomScreen
from headroom.tui.store import LOG_KEEP, Store

FILTERS = {"all": "all lines", "errors": "errors & warnings", "startup": "start-up", "nccl": "NCCL"}
SEVERITY_VARIABLE = {"error": "error", "warning": "warning"}


class LogsScreen(HeadroomScreen):
    """Live log. Keys: e/s/n filters, a all, / search, f follow or pause, p Headroom's own
    polls shown or hidden, w wrap long lines."""

    MODE = "logs"
    BINDINGS = [
        Binding("e", "filter('errors')", "Errors"),
        Binding("s", "filter('startup')", "Start-up"),
        Binding("n", "filter('nccl')", "NCCL"),
        Binding("a", "filter('all')", "All", show=False),  # or the filter's key again
        Binding("slash", "search", "Search", key_display="/"),
        Binding("f", "toggle_follow", "Follow"),
        Binding("p", "toggle_polls", "Polls"),
        Binding("w", "toggle_wrap", "Wrap"),
        Binding("escape", "clear_search", "Clear", show=False),
    ]

    def compose_body(self) -> ComposeResult:
        yield RichLog(id="log-view", max_lines=LOG_KEEP, wrap=True, markup=False, auto_scroll=True)
        yield Static(id="log-status")
        yield Input(placeholder="search (enter to apply, escape to clear)", id="log-search")

    @property
    def entries(self):
        """The classified log lines (kept by the app's store)."""
        return self.store.log_entries

    def on_mount(self) -> None:
        self.filter_name = "all"
        self.query_text = ""
        self.follow = True
        self.show_polls = False  # Headroom's own GET /metrics and /health access lines
        self._shown = self._polls = 0  # counted as lines are drawn (not per status update)
        self.query_one("#log-search", Input).display = False
        super().on_mount()
        self.query_one("#log-view").focus()

    # -- data ----------------------------------------------------------------------------
    def show_body(self, store: Store, what: str) -> None:
        if what == "all":
            self._catch_up(store)
        elif what == "logs":
            self._update_status(store)

    def _catch_up(self, store: Store) -> None:
        """Redraw from the store's classified lines (some may have arrived while hidden)."""
        self._redraw_log()

    @property
    def shown_count(self) -> int:
        """How many kept lines pass the filter, search and polls setting."""
        return min(self._shown, len(self.entries))

    def append_log_lines(self, entries: list[LogEntry]) -> None:
        view = self.query_one("#log-view", RichLog)
        for entry in entries:
            self._polls += entry.own_poll
            if self._visible(entry):
                self._shown += 1
                view.write(self._line_text(entry), scroll_end=self.follow)
        self._update_status(self.store)

    # -- drawing -------------------------------------------------------------------------
    def _visible(self, entry: LogEntry) -> bool:
        if entry.own_poll and not self.show_polls:
            return False
        if not matches_filter(entry, self.filter_name):
            return False
        return not self.query_text or self.query_text.lower() in entry.line.lower()

    def _line_text(self, entry: LogEntry) -> Text:
        text = Text(entry.line)
        variable = SEVERITY_VARIABLE.get(entry.severity)
        if variable:
            text.stylize(self._style(variable, bold=entry.kind is not None))
        elif entry.kind is not None:
            text.stylize(self._style("primary"))
        if self.query_text:
            text.highlight_words(
                [self.query_text], style=self._style("accent", reverse=True), case_sensitive=False
            )
        return text

    def _style(self, variable: str, *, bold: bool = False, reverse: bool = False) -> str:
        colour = self.app.theme_variables.get(variable, "")
        parts = [colour] if colour else []
        parts += ["bold"] if bold else []
        parts += ["reverse"] if reverse else []
        return " ".join(parts) or "none"

    def _redraw_log(self) -> None:
        view = self.query_one("#log-view", RichLog)
        view.clear()
        self._shown = self._polls = 0
        for entry in self.entries:
            self._polls += entry.own_poll
            if self._visible(entry):
                self._shown += 1
                view.write(self._line_text(entry), scroll_end=False)
        if self.follow:
            view.scroll_end(animate=False)
        self._update_status(self.store)

    def _update_status(self, store: Store) -> None:
        total = len(self.entries)
        shown = min(self._shown, total)
        polls = min(self._polls, total)
        follow = "[$success]following[/]" if self.follow else "[$warning]paused[/]"
        search = f"  search: [b]{escape(self.query_text)}[/b]" if self.query_text else ""
        if polls and not self.show_polls:
            hidden = f"  [$text-muted]{polls} Headroom polls hidden (p)[/]"
        elif polls:
            hidden = "  [$text-muted]Headroom polls shown (p)[/]"
        else:
            hidden = ""
        source = (
            ""
            if store.log_total or self.entries
            else "  [$text-muted]no log lines yet (attach with --log-from FILE to follow a log)[/]"
        )
        self.query_one("#log-status", Static).update(
            f"filter: [b]{FILTERS[self.filter_name]}[/b]  {follow}  {shown}/{total} lines"
            f"{search}{hidden}{source}"
        )

    # -- actions -------------------------------------------------------------------------
    def action_filter(self, name: str) -> None:
        self.filter_name = "all" if self.filter_name == name else name
        self._redraw_log()

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        view = self.query_one("#log-view", RichLog)
        view.auto_scroll = self.follow
        if self.follow:
            view.scroll_end(animate=False)
        self._update_status(self.store)

    def action_toggle_polls(self) -> None:
        self.show_polls = not self.show_polls
        self._redraw_log()

    def action_toggle_wrap(self) -> None:
        view = self.query_one("#log-view", RichLog)
        view.wrap = not view.wrap
        self._redraw_log()

    def action_search(self) -> None:
        search = self.query_one("#log-search", Input)
        search.display = True
        search.focus()

    def action_clear_search(self) -> None:
        search = self.query_one("#log-search", Input)
        search.value = ""
        search.display = False
        if self.query_text:
            self.query_text = ""
            self._redraw_log()
        self.query_one("#log-view").focus()

    @on(Input.Submitted, "#log-search")
    def _apply_search(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        event.input.display = bool(self.query_text)
        self.query_one("#log-view").focus()
        self._redraw_log()
