"""A line under the flags that explains a server that is not serving, and what to do."""

from __future__ import annotations

from textual.widgets import Static

from headroom.tui import format as fmt
from headroom.tui.format import escape_markup as escape
from headroom.tui.store import Store
from headroom.tui.widgets.cheap_update import set_markup

MESSAGES = {
    "failed": ("$error", "start-up failed", "press 4: the doctor names the cause and the fix"),
    "starting": ("$warning", "starting", "loading weights and sizing the KV cache"),
    "stopping": ("$warning", "stopping", ""),
    "degraded": ("$warning", "degraded", "health checks failing; see 5 Logs"),
    "down": ("$error", "server down", "nothing answers at the URL"),
    "not_vllm": ("$error", "not vLLM", "the URL answers, but not with vLLM's /metrics"),
    "metrics_off": ("$warning", "engine metrics off", "started with --disable-log-stats?"),
}


class ServerNotice(Static):
    """Hidden while the server serves; otherwise one line saying what is wrong and where to
    look next."""

    DEFAULT_CSS = """
    ServerNotice { height: auto; padding: 0 1; display: none; }
    ServerNotice.-shown { display: block; }
    """

    def show(self, store: Store) -> None:
        server = store.server
        entry = MESSAGES.get(server.state)
        self.set_class(entry is not None, "-shown")
        if entry is None:
            return
        colour, head, hint = entry
        short = fmt.short_message(server.detail, 200)
        detail = f": {escape(short)}" if short else ""
        hint_text = f"  [$text-muted]{hint}[/]" if hint else ""
        set_markup(self, f"[{colour}][b]{head}[/b]{detail}[/]{hint_text}")
