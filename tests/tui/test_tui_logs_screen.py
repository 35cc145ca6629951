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
        total = screen.shown_count  # all lines but Headroom's own polls
        assert total > 100
        await pilot.press("e")
        await pilot.pause()
        assert 0 < screen.shown_count < total
        text = screen_text(app)
        assert "filter: errors & warnings" in text
        body = [line for line in text.splitlines()[1:] if "pid=" in line]
        assert body and all("WARNING" in line or "ERROR" in line for line in body)
        await pilot.press("e")  # the same key again returns to all lines
        await pilot.pause()
        assert screen.shown_count == total


async def test_startup_and_nccl_filters_and_all(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_logs(app, pilot)
        everything = screen.shown_count
        await pilot.press("s")
        await pilot.pause()
        assert screen.filter_name == "startup"
        assert screen.shown_count < everything
        await pilot.press("n")
        await pilot.pause()
        assert screen.filter_name == "nccl"
        assert "filter: NCCL" in screen_text(app)
        await pilot.press("a")
        await pilot.pause()
        assert screen.shown_count == everything


async def test_search_narrows_and_escape_clears(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_logs(app, pilot)
        everything = screen.shown_count
        await pilot.press("slash")
        await pilot.press(*"KV cache size")
        await pilot.press("enter")
        await pilot.pause()
        assert screen.query_text == "KV cache size"
        assert screen.shown_count == sum(
            1 for e in screen.entries if "kv cache size" in e.line.lower()
        )
        assert screen.shown_count >= 1
        await pilot.press("escape")
        await pilot.pause()
        assert screen.query_text == ""
        assert screen.shown_count == everything


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


async def test_own_polls_hidden_by_default_and_p_shows_them(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_logs(app, pilot)
        polls = [e for e in screen.entries if e.own_poll]
        assert polls and all("GET /metrics" in e.line or "GET /health" in e.line for e in polls)
        others = [e for e in screen.entries if "POST /v1/completions" in e.line]
        assert others and not any(e.own_poll for e in others)  # other access lines stay
        hidden = screen.shown_count
        assert hidden == len(screen.entries) - len(polls)
        text = screen_text(app)
        assert f"{len(polls)} Headroom polls hidden (p)" in text
        assert "p Polls" in text and "q Quit" in text  # the footer fits 80 columns
        await pilot.press("p")
        await pilot.pause()
        assert screen.shown_count == len(screen.entries) > hidden
        assert "Headroom polls shown (p)" in screen_text(app)


def test_own_poll_classification():
    from headroom.tui.log_classes import classify

    def poll(line: str) -> bool:
        return classify(line, 1).own_poll

    assert poll('INFO:     127.0.0.1:53502 - "GET /metrics HTTP/1.1" 200 OK')
    assert poll('INFO:     127.0.0.1:53502 - "GET /health HTTP/1.1" 200 OK')
    assert not poll('INFO:     127.0.0.1:53502 - "GET /health HTTP/1.1" 503 Service Unavailable')
    assert not poll('INFO:     127.0.0.1:53502 - "POST /v1/completions HTTP/1.1" 200 OK')
    assert not poll('INFO:     127.0.0.1:53502 - "GET /metricsx HTTP/1.1" 200 OK')


async def test_wrap_toggle(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_logs(app, pilot)
        view = screen.query_one("#log-view", RichLog)
        assert view.wrap  # long vLLM lines are readable at 80 columns
        await pilot.press("w")
        await pilot.pause()
        assert not view.wrap
