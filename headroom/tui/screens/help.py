"""The help screen (`?`): every key, and what each screen shows."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from headroom.tui.screens import SCREEN_TITLES

WHAT = {
    "dashboard": "KV cache, queue, latency, tokens/s, GPUs, top finding",
    "gpus": "every NVML reading, processes, utilization history",
    "topology": "topo -m matrix by link class, TP verdict",
    "doctor": "five steps, evidence; enter on an action: restart",
    "logs": "e errors s startup n NCCL / find f follow p polls w wrap",
    "runs": "the run journal, one row per launch",
    "bench": "concurrency ramp: throughput, latency, knee",
}

GLOBAL_KEYS = (
    ("1-7", "switch screen"),
    ("?", "this help"),
    ("ctrl+p", "command palette (themes, screens)"),
    ("t", "next theme"),
    ("q", "quit"),
    ("escape", "close a dialog"),
)


def help_text() -> str:
    lines = ["[b]Screens[/b]"]
    for number, (mode, title) in enumerate(SCREEN_TITLES.items(), start=1):
        lines.append(f"  [$accent]{number}[/] [b]{title:<10}[/b] {WHAT[mode]}")
    lines += ["", "[b]Keys everywhere[/b]"]
    lines += [f"  [$accent]{key:<7}[/] {what}" for key, what in GLOBAL_KEYS]
    lines += [
        "",
        "[b]Restart dialog[/b]  [$accent]y[/]/[$accent]enter[/] confirm, "
        "[$accent]n[/]/[$accent]escape[/] cancel",
        "",
        "Numbers that say N/A were not readable; panels that say 'unavailable' say why.",
    ]
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    """Keys and screens; any of escape, q or ? closes it."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("question_mark", "dismiss", "Close", show=False),
        Binding("q", "dismiss", "Close", show=False),
    ]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 96%; max-width: 100; height: auto; max-height: 96%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll() as scroll:
            scroll.border_title = "Headroom help"
            yield Static(help_text())

    def action_dismiss(self, result: None = None) -> None:  # type: ignore[override]
        self.dismiss(None)
