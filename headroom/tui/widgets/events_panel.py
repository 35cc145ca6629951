"""Recent log events on the dashboard: the lines of the vLLM log that mean something
(known events such as the KV cache size or a preemption, every warning and error), newest
at the bottom, as many as the panel's height allows."""

from __future__ import annotations

from collections.abc import Sequence

from textual.widgets import Static

from headroom.tui import format as fmt
from headroom.tui.format import escape_markup as escape
from headroom.tui.log_classes import LogEntry
from headroom.tui.widgets.cheap_update import set_markup

SEVERITY_VARIABLE = {"error": "$error", "warning": "$warning"}
# Periodic stats lines repeat what the panels above show; the start-up banner is ASCII art.
SKIP_KINDS = {"stats"}


def worth_showing(entry: LogEntry) -> bool:
    return entry.kind not in SKIP_KINDS and "█" not in entry.line


class EventsPanel(Static):
    """The last classified log lines; fills whatever height the dashboard has left."""

    DEFAULT_CSS = """
    EventsPanel { height: 1fr; min-height: 3; }
    """

    _last: tuple[Sequence[LogEntry], bool] | None = None  # drawn again at the real size

    def on_mount(self) -> None:
        self.border_title = "Recent log events  (5: full log)"

    def show(self, events: Sequence[LogEntry], has_logs: bool) -> None:
        self._last = (events, has_logs)
        rows = max(1, (self.content_region.height or self.size.height or 3))
        width = max(20, (self.content_region.width or 78))
        shown = [e for e in events if worth_showing(e)]
        if not shown:
            text = "no log events yet" if has_logs else "no log to read (attach --log-from FILE)"
            set_markup(self, f"[$text-muted]{text}[/]")
            return
        # Tensor-parallel workers each log the same line ("Model loading took ..." x 8):
        # one row with a count says it without pushing everything else off the panel.
        merged: list[tuple[LogEntry, str, int]] = []  # (entry, message, count)
        for entry in shown[-(rows * 16) :]:
            label = entry.kind or entry.severity
            message = fmt.short_message(entry.line, max(10, width - len(label) - 8)) or ""
            if merged and merged[-1][0].kind == entry.kind and merged[-1][1] == message:
                merged[-1] = (merged[-1][0], message, merged[-1][2] + 1)
            else:
                merged.append((entry, message, 1))
        lines = []
        for entry, message, count in merged[-rows:]:
            label = entry.kind or entry.severity
            colour = SEVERITY_VARIABLE.get(
                entry.severity,
                "$accent" if (entry.kind or "").startswith("headroom") else "$primary",
            )
            times = f" [$text-muted]×{count}[/]" if count > 1 else ""
            lines.append(f"[{colour}]{escape(label)}[/] {escape(message)}{times}")
        set_markup(self, "\n".join(lines))

    def on_resize(self) -> None:
        # How many events fit is known only after layout: draw again at the real size.
        if self._last is not None:
            self.show(*self._last)
