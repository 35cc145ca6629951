"""Logs screen: filters, search, follow/pause, live appends."""

from __future__ import annotations

from textual.widgets import RichLog
from tui_helpers import screen_text, settle


async def open_logs(app, pilot):
    await settle(app, pilot)
    await pilot.press("5")
    await settle(app, pilot)
    return app.screen


async def test_errors_filter_shows_only_warnings_and_errors(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_logs(app, pilot)
        total = len(screen.entries)
        assert total > 100
        await pilot.press("e")
        await pilot.pause()
        view = screen.query_one("#log-view", RichLog)
        assert 0 < len(view.lines) < total
        text = screen_text(app)
        assert "filter: errors & warnings" in text
        body = [line for line in text.splitlines()[1:] if "pid=" in line]
        assert body and all("WARNING" in line or "ERROR" in line for line in body)
        await pilot.press("e")  # the same key again returns to all lines
        await pilot.pause()
        assert len(view.lines) == total


async def test_startup_and_nccl_filters_and_all(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_logs(app, pilot)
        view = screen.query_one("#log-view", RichLog)
        await pilot.press("s")
        await pilot.pause()
        assert screen.filter_name == "startup"
        startup_lines = len(view.lines)
        assert startup_lines < len(screen.entries)
        await pilot.press("n")
        await pilot.pause()
        assert screen.filter_name == "nccl"
        assert "filter: NCCL" in screen_text(app)
        await pilot.press("a")
        await pilot.pause()
        assert len(view.lines) == len(screen.entries)


async def test_search_narrows_and_escape_clears(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_logs(app, pilot)
        view = screen.query_one("#log-view", RichLog)
        await pilot.press("slash")
        await pilot.press(*"KV cache size")
        await pilot.press("enter")
        await pilot.pause()
        assert screen.query_text == "KV cache size"
        assert len(view.lines) == sum(
            1 for e in screen.entries if "kv cache size" in e.line.lower()
        )
        assert len(view.lines) >= 1
        await pilot.press("escape")
        await pilot.pause()
        assert screen.query_text == ""
        assert len(view.lines) == len(screen.entries)


async def test_follow_pause_toggles_and_new_lines_still_arrive(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_logs(app, pilot)
        assert screen.follow
        await pilot.press("f")
        await pilot.pause()
        assert not screen.follow
        assert "paused" in screen_text(app)
        before = len(screen.entries)
        app.store.add_log_lines(["(EngineCore pid=1) ERROR 11-29 11:30:00 [core.py:1] boom"])
        from headroom.tui.messages import LogLinesPending

        app.post_message(LogLinesPending())
        await pilot.pause()
        assert len(screen.entries) == before + 1
        assert screen.entries[-1].severity == "error"
        await pilot.press("f")
        await pilot.pause()
        assert screen.follow and "following" in screen_text(app)
