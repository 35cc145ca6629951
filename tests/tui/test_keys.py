"""Every global key binding, driven with Pilot over recorded data."""

from __future__ import annotations

import pytest
from tui_helpers import screen_text, settle

from headroom.themes import THEMES
from headroom.tui.screens import SCREEN_TITLES
from headroom.tui.screens.help import HelpScreen


@pytest.mark.parametrize("number,mode", list(enumerate(SCREEN_TITLES, start=1)))
async def test_number_keys_switch_screens(recorded_app, number, mode):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press(str(number))
        await settle(app, pilot)
        assert app.current_mode == mode
        assert f"{number} {SCREEN_TITLES[mode]}" in screen_text(app).splitlines()[0]


async def test_switching_back_keeps_dashboard(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for key in "234561":
            await pilot.press(key)
        await settle(app, pilot)
        assert app.current_mode == "dashboard"
        assert "KV cache" in screen_text(app)


async def test_question_mark_opens_and_closes_help(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "command palette" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)


async def test_t_cycles_through_headroom_themes(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        seen = [app.theme]
        for _ in THEMES:
            await pilot.press("t")
            seen.append(app.theme)
        assert set(seen) == set(THEMES)
        assert seen[-1] == seen[0]


async def test_theme_argument_selects_theme(recorded_app):
    app = recorded_app(theme="light")
    async with app.run_test(size=(80, 24)):
        assert app.theme == "headroom-light"


async def test_palette_offers_theme_and_screen_commands(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        titles = [command.title for command in app.get_system_commands(app.screen)]
        assert "Theme: headroom-high-contrast" in titles
        assert "Screen: Doctor" in titles
        command = next(
            c for c in app.get_system_commands(app.screen) if c.title == "Theme: headroom-light"
        )
        command.callback()
        await pilot.pause()
        assert app.theme == "headroom-light"
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert "CommandPalette" in type(app.screen).__name__


async def test_q_quits(recorded_app):
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code in (0, None)
    assert not app.is_running
