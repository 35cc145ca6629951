"""The app starts in the dashboard's mode (Textual's DEFAULT_MODE): no blank default screen
is built, mounted and switched away from before the first frame (benchmarks/startup.py)."""

from __future__ import annotations

from textual.screen import Screen
from tui_helpers import settle

from headroom.tui.app import HeadroomApp
from headroom.tui.screens import SCREEN_TITLES
from headroom.tui.screens.dashboard import DashboardScreen


def test_the_default_mode_is_the_dashboards_and_a_real_mode() -> None:
    # A DEFAULT_MODE missing from MODES would silently start on Textual's blank screen again.
    assert HeadroomApp.DEFAULT_MODE == next(iter(SCREEN_TITLES)) == "dashboard"
    assert HeadroomApp.DEFAULT_MODE in HeadroomApp.MODES


async def test_no_blank_default_screen_is_built(recorded_app, monkeypatch) -> None:
    built: list[Screen] = []
    original = HeadroomApp.get_default_screen

    def recording(self: HeadroomApp) -> Screen:
        screen = original(self)
        built.append(screen)
        return screen

    monkeypatch.setattr(HeadroomApp, "get_default_screen", recording)
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.current_mode == "dashboard"
        assert [type(s) for s in app.screen_stack] == [DashboardScreen]
    assert built == []
