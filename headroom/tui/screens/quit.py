"""Asked on quit when Headroom launched the server: stop it, or leave it running (detach)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class QuitDialog(ModalScreen[str | None]):
    """`s` stops the server and quits, `d` leaves it running and quits, escape stays."""

    BINDINGS = [
        Binding("s", "choose('stop')", "Stop server"),
        Binding("d", "choose('detach')", "Leave running"),
        Binding("escape", "choose('')", "Stay"),
        Binding("q", "choose('stop')", "Stop server", show=False),
    ]

    DEFAULT_CSS = """
    QuitDialog { align: center middle; }
    QuitDialog > Vertical {
        width: 64; height: auto; border: round $warning; background: $surface; padding: 0 1;
    }
    """

    def __init__(self, pid: int | None) -> None:
        super().__init__()
        self.pid = pid

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Quit Headroom"
            pid = f" (pid {self.pid})" if self.pid else ""
            yield Static(
                f"The vLLM server{pid} was started by Headroom.\n\n"
                "[$accent]s[/] stop the server and quit\n"
                "[$accent]d[/] leave it running and quit (headroom serve re-adopts it)\n"
                "[$accent]escape[/] stay"
            )

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice or None)
