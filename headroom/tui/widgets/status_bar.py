"""The one-line bar on top of every screen: where you are and how the server is."""

from __future__ import annotations

from textual.widgets import Static

from headroom.tui import format as fmt
from headroom.tui.format import escape_markup as escape
from headroom.tui.store import Store
from headroom.tui.widgets.cheap_update import set_markup

# state -> (theme variable, word). Words, not only colours, so state reads in any theme.
STATE_STYLE = {
    "up": ("$success", "up"),
    "ready": ("$success", "ready"),
    "degraded": ("$warning", "degraded"),
    "starting": ("$warning", "starting"),
    "stopping": ("$warning", "stopping"),
    "slow": ("$warning", "slow"),
    "stopped": ("$text-muted", "stopped"),
    "down": ("$error", "down"),
    "failed": ("$error", "failed"),
    "not_vllm": ("$error", "not vLLM"),
    "metrics_off": ("$warning", "engine metrics off"),
    "error": ("$error", "error"),
}


def state_markup(state: str | None) -> str:
    variable, word = STATE_STYLE.get(state or "", ("$text-muted", state or "unknown"))
    return f"[{variable}]● {escape(word)}[/]"


def uptime(seconds: float) -> str:
    """Seconds only in the first minute, then minutes: the bar on every screen repaints
    once a minute rather than every second (monitoring overhead), and "12m" says enough."""
    text = fmt.duration(seconds)
    return text[:-3] if seconds >= 60 and text.endswith("s") and "m" in text else text


class StatusBar(Static):
    """Screen number and title, server state with uptime, model and URL, on one line."""

    DEFAULT_CSS = """
    StatusBar {
        height: 1;
        width: 1fr;
        background: $panel;
        color: $foreground;
        padding: 0 1;
    }
    """

    def __init__(self, title: str, number: int) -> None:
        super().__init__(f"[b]{number} {escape(title)}[/b]")
        self.title_text = f"[b]{number} {escape(title)}[/b]"

    def update_from(self, store: Store, now: float) -> None:
        server = store.server
        parts = [self.title_text, state_markup(server.state)]
        if server.up_since is not None:
            parts[-1] += f" {uptime(now - server.up_since)}"
        if server.model:
            parts.append(escape(server.model))
        if server.url:
            parts.append(f"[$text-muted]{escape(server.url)}[/]")
        set_markup(self, "  ".join(parts))
